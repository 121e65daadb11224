"""Output paths of the viewer commands are checked like every other command's: before any
work, one line, exit 2, nothing created (``beliefgate.console.check_output_path``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _run(args, cwd, timeout=60):
    # a subprocess with a timeout: if the check were missing, `play` would start a server
    return subprocess.run([sys.executable, "-m", "beliefgate.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("args", [
    ["play", "--log", "{tmp}/missing/dir/x.jsonl", "--port", "0"],
    ["play", "--log", "{tmp}/a-file/", "--port", "0"],
    ["report", "{tmp}/log.jsonl", "-o", "{tmp}/missing/dir/x.html"],
    ["report", "{tmp}/log.jsonl", "-o", "{tmp}"],
    pytest.param(["play", "--log", "/proc/playx", "--port", "0"],  # a folder nothing can be created in
                 marks=pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")),
])
def test_viewer_output_paths_are_refused_before_any_work(tmp_path, args):
    (tmp_path / "a-file").write_text("not a folder\n")
    (tmp_path / "log.jsonl").write_text("{}\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = _run(args, tmp_path)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(lines) == 1 and lines[0].startswith("error:") and "--" in lines[0], lines
    assert not (tmp_path / "missing").exists()
    assert not any(Path(tmp_path).glob("*.html"))
