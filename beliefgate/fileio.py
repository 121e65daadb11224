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


class LockHeldError(OSError):
    """A non-blocking :class:`FileLock` found the lock held by another process."""


class FileLock:
    """An exclusive ``fcntl.flock`` on ``path`` (created with ``mode`` if missing).

    ``blocking=True`` waits for another holder to let go; ``blocking=False`` raises
    :class:`LockHeldError` at once. Use as a context manager or call :meth:`acquire` /
    :meth:`release` (the lock is held until released or the process exits; the kernel
    drops it with the descriptor, so a killed holder never leaves a stale lock).
    Acquiring twice is a no-op.
    """

    def __init__(self, path: str | Path, blocking: bool = True, mode: int = 0o600, make_parents: bool = True):
        self.path = Path(path)
        self.blocking = blocking
        self.mode = mode
        self.make_parents = make_parents
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> "FileLock":
        import fcntl

        if self._fd is not None:
            return self
        if self.make_parents:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, self.mode)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if self.blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LockHeldError(f"{self.path} is locked by another process") from None
        except BaseException:
            os.close(fd)
            raise
        os.chmod(self.path, self.mode)
        self._fd = fd
        return self

    def release(self) -> None:
        import fcntl

        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> "FileLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
