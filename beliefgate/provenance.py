"""Where a result came from: the commit of the running code (for run records and reports)."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Optional


@lru_cache(maxsize=1)
def git_commit() -> Optional[str]:
    """The short commit of the running code if it is a git checkout, with ``+dirty`` when its
    tracked files differ from that commit; ``None`` outside a checkout (an installed wheel)."""
    root = Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        if out.returncode != 0 or not out.stdout.strip():
            return None
        dirty = subprocess.run(["git", "-C", str(root), "diff", "--quiet", "HEAD", "--", "."],
                               capture_output=True, timeout=10).returncode == 1
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() + ("+dirty" if dirty else "")


__all__ = ["git_commit"]
