"""Small file helpers shared across beliefgate."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Hashable, Optional

#: builds the exception a reader raises (an error class of the caller's module, taking the message)
ErrorFactory = Callable[[str], Exception]


def _label(path: Path, what: str) -> str:
    return f"{what} {path}" if what else str(path)


def require_file(path: str | Path, error: Optional[ErrorFactory] = None, what: str = "") -> Path:
    """``path`` if it names an existing regular file, else ``error(message)`` naming it
    (``what`` describes it: ``"partner file"``): missing, a directory, or not a regular file.
    ``error`` defaults to :class:`~beliefgate.errors.InputError`."""
    from beliefgate.errors import InputError

    path = Path(path)
    error = error or InputError
    if path.is_dir():
        raise error(f"{_label(path, what)} is a directory, not a file")
    if not path.exists():
        raise error(f"cannot read {_label(path, what)}: no such file")
    if not path.is_file():
        raise error(f"{_label(path, what)} is not a regular file")
    return path


#: the folder the package's source tree sits in (a checkout or an editable install): where the shipped
#: examples (``docs/examples/...``) live
SOURCE_ROOT = Path(__file__).resolve().parents[1]


def shipped_path(path: str | Path) -> Path:
    """``path`` itself when it exists or is absolute; else, for a relative path such as
    ``docs/examples/grid_small.yaml``, the shipped file under :data:`SOURCE_ROOT` when there is one
    (so the tour's commands work from any directory); else ``path`` unchanged (the caller's own
    "not found" names it as given)."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path
    shipped = SOURCE_ROOT / path
    return shipped if shipped.is_file() else path


def read_text(path: str | Path, error: Optional[ErrorFactory] = None, what: str = "") -> str:
    """The UTF-8 text of the file ``path``, or ``error(message)`` naming it: missing, a
    directory, unreadable, or not UTF-8 text (``PATH: not UTF-8 text (invalid start byte at byte 1)``).
    The one reader of the text files a user names (partner, grid, policy-tree, parameter files)."""
    from beliefgate.errors import InputError

    path = require_file(path, error, what)
    error = error or InputError
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{_label(path, what)}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise error(f"cannot read {_label(path, what)}: {exc.strerror or exc}") from None


def output_path_problem(path: str | Path, folder: bool = False) -> Optional[str]:
    """Why ``path`` cannot be written (``None`` when it can), checked before any work.

    A file path (``folder=False``) must not be a directory, and its parent folder must exist
    (no directory tree is created from a typo in a file name). A folder path must not be a
    file; a missing folder is created by the command, parents included (``--out runs/small``
    on a fresh checkout), so its nearest existing ancestor is what must be a folder. The
    folder a file would be created in is tried for real with a temporary file, removed at
    once, since permission bits say nothing to root and nothing about ``/proc`` or a
    read-only mount. Nothing is left behind.
    """
    path = Path(path)
    if folder:
        if path.exists() and not path.is_dir():
            return "exists and is not a directory"
    elif path.is_dir():
        return f"is a directory; give a file path such as {path / ('out' + (path.suffix or '.json'))}"
    parent = path.parent if str(path.parent) else Path(".")
    if folder:
        probe_in = path
        while not probe_in.exists() and probe_in != probe_in.parent:
            probe_in = probe_in.parent if str(probe_in.parent) else Path(".")
    else:
        probe_in = parent
    if not probe_in.exists():
        return f"the folder {probe_in} does not exist (create it first)"
    if not probe_in.is_dir():
        return f"{probe_in} is not a folder"
    try:
        fd, tmp = tempfile.mkstemp(dir=probe_in, prefix=".beliefgate-write-check.")
    except OSError as exc:
        return f"cannot create files in {probe_in} ({exc.strerror or exc})"
    os.close(fd)
    os.unlink(tmp)
    if not folder and path.exists() and not os.access(path, os.W_OK):
        return "exists and is not writable"
    return None


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
    """A non-blocking :class:`FileLock` found the lock held by another process; ``holder_pid`` is
    the holder's process id when the lock records it (``record_pid=True``), else None."""

    holder_pid: Optional[int] = None


class FileLock:
    """An exclusive ``fcntl.flock`` on ``path`` (created with ``mode`` if missing).

    ``blocking=True`` waits for another holder to let go; ``blocking=False`` raises
    :class:`LockHeldError` at once. Use as a context manager or call :meth:`acquire` /
    :meth:`release` (the lock is held until released or the process exits; the kernel
    drops it with the descriptor, so a killed holder never leaves a stale lock).
    Acquiring twice is a no-op. ``record_pid=True`` writes the holder's process id into the file
    once the lock is taken, so that a refused process can name the holder
    (:attr:`LockHeldError.holder_pid`); the file stays after release (a stale pid in it means
    nothing: only the kernel's lock counts).
    """

    def __init__(self, path: str | Path, blocking: bool = True, mode: int = 0o600, make_parents: bool = True,
                 record_pid: bool = False):
        self.path = Path(path)
        self.blocking = blocking
        self.mode = mode
        self.make_parents = make_parents
        self.record_pid = record_pid
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
            error = LockHeldError(f"{self.path} is locked by another process")
            error.holder_pid = self._recorded_pid() if self.record_pid else None
            raise error from None
        except BaseException:
            os.close(fd)
            raise
        os.chmod(self.path, self.mode)
        if self.record_pid:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def _recorded_pid(self) -> Optional[int]:
        try:
            text = self.path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return None
        return int(text) if text.isdigit() else None  # None: the holder has not written it yet

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


__all__ = ["atomic_write", "FileLock", "LockHeldError", "require_file", "read_text", "output_path_problem",
           "finite_or_none", "json_safe", "DataSyntaxError", "parse_data", "duplicate_json_key"]


def finite_or_none(value):
    """A value for strict JSON: a non-finite float (NaN, ±inf) is ``None``, a NumPy scalar its
    Python value, anything else unchanged."""
    import math

    import numpy as np

    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def json_safe(obj):
    """``obj`` with every non-finite float replaced by ``None`` (dicts, lists and tuples walked),
    so that ``json.dumps(..., allow_nan=False)`` writes valid JSON."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return finite_or_none(obj)


class DataSyntaxError(ValueError):
    """Text that is not valid JSON/YAML, or that repeats a key in one mapping (where the parsers
    would silently keep the last value)."""


def _pairs_without_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise DataSyntaxError(f"key {key!r} is given twice in one object")
        out[key] = value
    return out


def _parser_gave_up(exc: BaseException) -> DataSyntaxError:
    """One line for what Python's JSON/YAML parsers raise beyond their syntax errors: nesting deeper
    than the interpreter's recursion limit (``RecursionError``) and an integer of more digits than
    ``int()`` converts (``ValueError: Exceeds the limit (4300 digits)...``)."""
    import sys

    if isinstance(exc, RecursionError):
        from beliefgate.limits import MAX_DATA_DEPTH

        return DataSyntaxError("nested too deeply (lists or mappings inside each other more than "
                               f"{MAX_DATA_DEPTH} levels)")
    if "integer string conversion" in str(exc):
        return DataSyntaxError(f"an integer has more than {sys.get_int_max_str_digits()} digits")
    return DataSyntaxError(str(exc).replace("\n", "; "))


def _too_deep(data, limit: int) -> bool:
    """Whether lists and mappings nest deeper than ``limit`` in ``data`` (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def parse_data(text: str, fmt: str, duplicates: bool = True):
    """Parse ``text`` as ``"json"`` or ``"yaml"`` (safe loader), refusing a key repeated within
    one mapping (JSON: unless ``duplicates=False``, which parses at C speed: trajectory logs); any
    failure is a :class:`DataSyntaxError` with one line: the parser's message, or "nested too
    deeply" / "an integer has more than 4300 digits" where the parser gives up, and "nested too
    deeply" for data nested deeper than :data:`~beliefgate.limits.MAX_DATA_DEPTH` whatever the
    interpreter's recursion limit. The one guard of every JSON/YAML file a user names (partner,
    grid, kappa data, log files)."""
    from beliefgate.limits import MAX_DATA_DEPTH

    data = _parse(text, fmt, duplicates)
    if _too_deep(data, MAX_DATA_DEPTH):
        raise DataSyntaxError(f"nested too deeply (lists or mappings inside each other more than {MAX_DATA_DEPTH} "
                              "levels)")
    return data


def _parse(text: str, fmt: str, duplicates: bool):
    import json

    if fmt == "json":
        try:
            if not duplicates:
                return json.loads(text)
            return json.loads(text, object_pairs_hook=_pairs_without_duplicates)
        except DataSyntaxError:
            raise
        except (ValueError, RecursionError) as exc:  # also an integer of > 4300 digits, nesting too deep
            if isinstance(exc, json.JSONDecodeError):
                raise DataSyntaxError(str(exc)) from None
            raise _parser_gave_up(exc) from None
    import yaml

    class _Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: the parent flattens it
                    continue
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, Hashable):  # the parent class refuses it in its own words
                    continue
                if key in seen:
                    raise DataSyntaxError(f"key {key!r} is given twice in one mapping (line {key_node.start_mark.line + 1})")
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader subclass)
    except DataSyntaxError:
        raise
    except yaml.YAMLError as exc:
        raise DataSyntaxError(str(exc)) from None
    except (ValueError, RecursionError) as exc:  # an integer of > 4300 digits, nesting too deep, a bad date
        raise _parser_gave_up(exc) from None


def duplicate_json_key(text) -> Optional[str]:
    """The first key ``text`` (JSON) repeats within one object, or ``None`` (also for text that is
    not JSON: the caller's own parser reports that)."""
    import json

    try:
        json.loads(text, object_pairs_hook=_pairs_without_duplicates)
    except DataSyntaxError as exc:
        return str(exc)
    except (json.JSONDecodeError, TypeError, UnicodeDecodeError):
        return None
    return None
