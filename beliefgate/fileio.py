"""Small file helpers shared across beliefgate."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | Path, data: bytes, mode: int = 0o644, make_parents: bool = True) -> None:
    """Replace ``path`` by ``data`` atomically and durably.

    Writes a uniquely named temporary file in the same directory, fsyncs it, sets
    ``mode``, renames it over ``path`` and fsyncs the directory; readers see the old
    or the new file, never a partial one, and a failure leaves no temporary file.
    With ``make_parents=False`` a missing directory is an error (``OSError``).
    """
    path = Path(path)
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)  # make the rename itself durable
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
