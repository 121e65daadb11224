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
