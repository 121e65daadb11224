"""The shared file helpers: atomic writes and the one flock helper (blocking and not)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from beliefgate.fileio import FileLock, LockHeldError, atomic_write

HOLD = """
import sys, time
from beliefgate.fileio import FileLock
lock = FileLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _holder(path, seconds):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_non_blocking_lock_is_refused_while_another_process_holds_it(tmp_path):
    path = tmp_path / "x.lock"
    proc = _holder(path, 30)
    try:
        with pytest.raises(LockHeldError, match="x.lock"):
            FileLock(path, blocking=False).acquire()
    finally:
        proc.kill()
        proc.wait()
    # the kernel dropped the killed holder's lock: no stale lock is left behind
    with FileLock(path, blocking=False) as lock:
        assert lock.held
    assert not lock.held
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)


def test_blocking_lock_waits_for_the_holder(tmp_path):
    path = tmp_path / "sub" / "y.lock"
    proc = _holder(path, 1.0)
    try:
        t0 = time.monotonic()
        with FileLock(path, blocking=True):
            waited = time.monotonic() - t0
        assert waited > 0.3  # it could only get the lock once the holder exited
    finally:
        proc.kill()
        proc.wait()


def test_acquire_twice_is_a_no_op_and_release_is_idempotent(tmp_path):
    lock = FileLock(tmp_path / "z.lock", blocking=False)
    assert lock.acquire() is lock.acquire()
    lock.release()
    lock.release()
    assert not lock.held


def test_atomic_write_leaves_old_or_new_and_no_temporary(tmp_path):
    path = tmp_path / "f.bin"
    atomic_write(path, b"old")
    atomic_write(path, b"new", mode=0o600)
    assert path.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]
    with pytest.raises(OSError):
        atomic_write(tmp_path / "missing" / "g.bin", b"x", make_parents=False)


# ----------------------------------------------------------------------------- reading and output checks
def test_read_text_names_the_file_and_the_problem(tmp_path):
    from beliefgate.errors import InputError
    from beliefgate.fileio import read_text

    class MyError(InputError):
        pass

    (tmp_path / "ok.txt").write_text("héllo\n", encoding="utf-8")
    (tmp_path / "bin.json").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    (tmp_path / "adir").mkdir()
    assert read_text(tmp_path / "ok.txt") == "héllo\n"
    for name, words in (("bin.json", "bin.json: not UTF-8 text"), ("adir", "adir is a directory"),
                        ("missing.json", "missing.json: no such file")):
        with pytest.raises(MyError) as info:
            read_text(tmp_path / name, MyError, "thing file")
        assert words in str(info.value) and "thing file" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(InputError):  # the default error class
        read_text(tmp_path / "bin.json")


def test_output_path_problem_tries_the_folder_and_leaves_nothing(tmp_path):
    from beliefgate.fileio import output_path_problem

    (tmp_path / "afile").write_text("x")
    assert output_path_problem(tmp_path / "new.json") is None
    assert output_path_problem(tmp_path / "newdir", folder=True) is None
    assert output_path_problem(tmp_path, folder=True) is None
    assert "is a directory" in output_path_problem(tmp_path)
    assert "not a directory" in output_path_problem(tmp_path / "afile", folder=True)
    assert "does not exist" in output_path_problem(tmp_path / "missing" / "x.json")
    # an output folder is created with its parents (`--out runs/small` on a fresh checkout);
    # only its nearest existing ancestor is checked, and nothing is created by the check
    assert output_path_problem(tmp_path / "missing" / "sub", folder=True) is None
    assert "not a folder" in output_path_problem(tmp_path / "afile" / "sub" / "deeper", folder=True)
    assert "not a folder" in output_path_problem(tmp_path / "afile" / "x.json")
    if os.path.isdir("/proc"):  # permission bits say nothing there (nor to root): the check tries it
        assert "cannot create files in /proc" in output_path_problem("/proc/x.json")
        assert "cannot create files in /proc" in output_path_problem("/proc/x", folder=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # the probes left nothing behind
