"""Sessions of the gate service: one :class:`~beliefgate.beliefs.gate.Gate` each (kind
``logprobs`` or ``overcooked``), or one :class:`~beliefgate.beliefs.kappa.Kappa` (kind ``kappa``,
held in the same ``gate`` slot: limits, expiry and snapshots are shared).

The store lives on the server's event loop; every mutation of a session runs
under that session's :class:`asyncio.Lock` (FIFO), so concurrent requests on one
session are applied one at a time, in the order they reached the lock, and a
request that fails leaves the gate and the session's book-keeping as they were.

Expiry
    A session idle (no successful request) for ``ttl_s`` seconds is removed, lazily
    when it is next looked up and by :meth:`SessionStore.sweep`, which the app calls
    periodically. ``ttl_s=None`` disables expiry.

Committed states and rollback
    After each successful mutation the session keeps ``committed = (version, state,
    log)``: the gate's (or kappa's) immutable :attr:`state` and, for kappa sessions, the
    evidence applied so far as plain tuples. A change that cannot be made durable is
    undone with the public ``gate.restore(state)`` (no pickling of live objects).

Snapshots (optional, ``snapshot_path``)
    The handler waits in :meth:`SessionStore.commit` until a snapshot containing its
    change has been written: the file is rewritten atomically (temporary file in the
    same directory, ``fsync``, ``os.replace``, directory ``fsync``) by one writer task
    that batches every change made since its last write (group commit). A response is
    therefore sent only once its effect is on disk, and a restart from the file loses
    nothing that was acknowledged. If the write fails the mutation is rolled back and
    the request fails with 503. The file holds plain data built from the committed
    states (params JSON, names, prior counts, domain, state, kappa evidence), each
    session packed once per committed version (incremental). It is a pickle, created
    with mode 0600 and read by a restricted unpickler (only NumPy arrays and beliefgate's own
    classes; nothing a file names is called otherwise).

    One server per snapshot file: :meth:`SessionStore.open` takes an exclusive
    ``flock`` on the sidecar ``.<name>.lock`` (a second server refuses with
    :class:`SnapshotLockedError`) and then removes the temporaries
    (``.<name>.*.tmp``) a killed writer left behind, counting them in the log.
"""

from __future__ import annotations
from beliefgate.errors import BeliefgateError, RuntimeFailure

import asyncio
import io
import logging
import os
import pickle
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Optional, Union

import numpy as np

from beliefgate.fileio import FileLock, LockHeldError, atomic_write as _atomic_write
from beliefgate.beliefs.gate import Gate, GateParams
from beliefgate.beliefs.kappa import Kappa, KappaParams

log = logging.getLogger("beliefgate.serve")

SNAPSHOT_FORMAT = "beliefgate-serve-snapshot"
#: 3: plain committed states, kappa evidence as the kappa's own records; 2: the same with the
#: evidence as plain tuples; 1: pickled Gate/Kappa objects (2 and 1 are still read)
SNAPSHOT_VERSION = 3
READ_VERSIONS = (1, 2, 3)


class SessionError(BeliefgateError):
    """A request about sessions that cannot be served (mapped to an HTTP status by the app)."""

    status_code = 400
    kind = "session_error"


class SessionNotFoundError(SessionError, LookupError):
    """No live session has this id (never created, deleted or expired)."""

    status_code = 404
    kind = "session_not_found"

    @classmethod
    def of(cls, session_id: str) -> "SessionNotFoundError":
        return cls(f"no session {session_id!r} (never created, deleted or expired)")


class SessionLimitError(SessionError):
    """The store holds ``max_sessions`` sessions already."""

    status_code = 429
    kind = "session_limit"


class WrongSessionKindError(SessionError):
    """The operation needs another kind of session (e.g. ``observe`` on a generic gate)."""

    status_code = 409
    kind = "wrong_session_kind"


class SnapshotError(RuntimeFailure):
    """A snapshot file cannot be read (corrupt, foreign) or written."""


class SnapshotWriteError(SnapshotError):
    """Writing the snapshot failed; the change that waited for it was rolled back."""


class SnapshotLockedError(SnapshotError):
    """Another server holds the snapshot file (its sidecar lock is taken)."""


def new_session_id() -> str:
    """128 random bits, URL-safe base64 (22 characters): unguessable."""
    return secrets.token_urlsafe(16)


@dataclass(eq=False)
class Session:
    """One gate plus the service's book-keeping about it.

    ``version`` counts acknowledged state changes; ``last_used`` is on the
    monotonic clock; ``committed`` is ``(version, state, log)`` as of the last
    successful change (``log``: the kappa evidence as plain tuples, ``()`` for gates);
    ``log`` is the kappa evidence applied to the live object.
    """

    id: str
    gate: Gate
    kind: str
    layout: Optional[str] = None
    partner: Optional[int] = None
    prior_counts: Optional[np.ndarray] = None
    created_at: float = 0.0
    last_used: float = 0.0
    version: int = 0
    closed: bool = False
    committed: Optional[tuple] = None
    log: tuple = ()
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    _observer: object = field(default=None, repr=False)
    _packed: Optional[tuple] = field(default=None, repr=False)  # (version, bytes) of the snapshot record
    _config: Optional[dict] = field(default=None, repr=False)

    @property
    def observer(self):
        """The Overcooked observer of this session (partner index kept by the service)."""
        if self.kind != "overcooked":
            raise WrongSessionKindError(
                f"session {self.id} is a generic gate; observe needs a session created with a layout")
        if self._observer is None:  # a restored session: the gate rebuilds its own from its domain options
            self._observer = self.gate.observer
        return self._observer

    def apply_kappa(self, evidence: Optional[list]) -> "Session":
        """Condition the kappa on ``evidence`` (all or nothing), or reset it (``None``),
        keeping the service's plain log of what was applied (for snapshots)."""
        if evidence is None:
            self.gate.reset()
        else:
            self.gate.update_many(evidence)
        self.log = self.gate.log
        return self

    def commit_state(self) -> None:
        """Record the live state as committed (after a successful change)."""
        self.committed = (self.version, self.gate.state, self.log)

    def roll_back(self) -> None:
        """Put the committed state back with the public ``restore``."""
        version, state, log = self.committed
        if self.kind == "kappa" and state.t > self.gate.state.t:
            # a reset emptied the kappa's log, which restore can only cut back: replay it
            self.gate = Kappa.from_log(self.gate.branches, self.gate.params, log, state)
        else:
            self.gate.restore(state)
        self.version, self.log = version, log

    def config_record(self) -> dict:
        """What does not change over the session's life (plain data)."""
        if self.kind == "kappa":
            return {"params": self.gate.params.to_json(indent=None), "names": list(self.gate.branches)}
        config = self.gate.config
        return {"params": self.gate.params.to_json(indent=None), "names": list(config.names),
                "prior_counts": np.asarray(config.prior_counts, dtype=np.float64).tolist(),
                "domain": self.gate.domain}

    def packed(self) -> bytes:
        """The snapshot record of the committed state, pickled once per committed version."""
        version, state, log = self.committed
        if self._packed is None or self._packed[0] != version:
            if self._config is None:
                self._config = self.config_record()
            config = self._config
            rec = {"id": self.id, "kind": self.kind, "layout": self.layout, "partner": self.partner,
                   "prior_counts": None if self.prior_counts is None else self.prior_counts.tolist(),
                   "created_at": self.created_at, "version": version, "config": config,
                   "state": state, "log": log}
            self._packed = (version, pickle.dumps(rec, protocol=pickle.HIGHEST_PROTOCOL))
        return self._packed[1]


#: the only non-beliefgate globals a snapshot may name: NumPy's array and scalar rebuilders
#: and the copyreg helpers that rebuild plain objects (pydantic parameters in version 1)
_SNAPSHOT_GLOBALS = frozenset({
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.dtypes", "Float64DType"), ("numpy.dtypes", "Int64DType"),
    ("numpy.dtypes", "BoolDType"), ("copyreg", "_reconstructor"), ("builtins", "object"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "complex"),
})


#: the packages whose classes a snapshot may hold: the domain-free core only (nothing there
#: starts a process or touches files when constructed)
_SNAPSHOT_PACKAGES = ("beliefgate.beliefs.", "beliefgate.models.")


class _SnapshotUnpickler(pickle.Unpickler):
    """Unpickles a snapshot without running anything it names: a global resolves only if it
    is one of :data:`_SNAPSHOT_GLOBALS` or a *class* defined in the core packages (:data:`_SNAPSHOT_PACKAGES`) (no
    dotted names, no functions), so a foreign or crafted pickle fails before any call."""

    def find_class(self, module: str, name: str):
        if (module, name) in _SNAPSHOT_GLOBALS:
            return super().find_class(module, name)
        if module.startswith(_SNAPSHOT_PACKAGES) and name.isidentifier():
            obj = getattr(sys.modules.get(module), name, None)
            if isinstance(obj, type) and obj.__module__ == module:
                return obj
        raise pickle.UnpicklingError(f"global '{module}.{name}' is not allowed in a snapshot")


def _unpickle(data: bytes):
    return _SnapshotUnpickler(io.BytesIO(data)).load()


def _record(e) -> dict:
    """A kappa evidence record of a snapshot: the kappa's own record (:func:`evidence_record`),
    or the plain tuple version-2 snapshots before it stored (``("judgment", left, right, y)``,
    ``("rollout", branch, depth, score)``, ``("round", ((branch, depth, score), ...))``)."""
    if isinstance(e, dict):
        return e
    if e[0] == "judgment":
        return {"left": e[1], "right": e[2], "y": e[3]}
    if e[0] == "rollout":
        return {"branch": e[1], "depth": e[2], "score": e[3]}
    return {"round": [{"branch": b, "depth": d, "score": sc} for b, d, sc in e[1]]}


def _rebuild(rec: dict):
    """A Gate or Kappa from a version-2 snapshot record: built from its plain config, the
    kappa evidence replayed, then the committed state put back with ``restore``."""
    config = rec["config"]
    if rec["kind"] == "kappa":
        return Kappa.from_log(config["names"], KappaParams.from_json(config["params"]),
                              [_record(e) for e in rec["log"]], rec["state"])
    domain = config["domain"]
    gate = Gate(len(config["names"]), GateParams.from_json(config["params"]), config["names"],
                config["prior_counts"], domain=None if domain is None else (domain[0], dict(domain[1])))
    gate.restore(rec["state"])
    return gate


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically and durably (mode 0600)."""
    _atomic_write(path, data, mode=0o600, make_parents=False)


class SessionStore:
    """Live sessions, their expiry and (optionally) their snapshot file."""

    def __init__(
        self,
        max_sessions: int = 1000,
        ttl_s: Optional[float] = 3600.0,
        snapshot_path: Union[str, Path, None] = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        writer: Callable[[Path, bytes], None] = atomic_write,
    ):
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
        if ttl_s is not None and not ttl_s > 0:
            raise ValueError(f"ttl_s must be > 0 or None, got {ttl_s}")
        self.max_sessions = int(max_sessions)
        self.ttl_s = None if ttl_s is None else float(ttl_s)
        self.snapshot_path = None if snapshot_path is None else Path(snapshot_path)
        self._clock = clock
        self._wall = wall_clock
        self._writer = writer
        self._sessions: Dict[str, Session] = {}
        # group commit
        self._seq = 0
        self._durable = 0
        self._dirty: Optional[asyncio.Event] = None
        self._waiters: list = []
        self._writes = 0
        self._lock: Optional[FileLock] = None
        self._stale_removed = 0

    # ----------------------------------------------------------------- lookup

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def persistent(self) -> bool:
        return self.snapshot_path is not None

    @property
    def writes(self) -> int:
        """Snapshot files written so far."""
        return self._writes

    def now(self) -> float:
        return self._clock()

    def idle(self, session: Session) -> float:
        return max(0.0, self._clock() - session.last_used)

    def expires_in(self, session: Session) -> Optional[float]:
        return None if self.ttl_s is None else max(0.0, self.ttl_s - self.idle(session))

    def _expired(self, session: Session, now: float) -> bool:
        return self.ttl_s is not None and now - session.last_used > self.ttl_s and not session.lock.locked()

    def get(self, session_id: str) -> Session:
        """The live session ``session_id``; raises :class:`SessionNotFoundError`."""
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFoundError.of(session_id)
        if self._expired(session, self._clock()):
            self._drop(session)
            raise SessionNotFoundError.of(session_id)
        return session

    def touch(self, session: Session) -> None:
        session.last_used = self._clock()

    def check_capacity(self) -> None:
        if len(self._sessions) >= self.max_sessions:
            self.sweep()
        if len(self._sessions) >= self.max_sessions:
            raise SessionLimitError(
                f"the service holds its maximum of {self.max_sessions} sessions; delete one or wait for expiry")

    # ----------------------------------------------------------------- changes

    def add(self, gate: Gate, kind: str, layout: Optional[str] = None, partner: Optional[int] = None,
            prior_counts=None, observer=None) -> Session:
        """Register a new session (raises :class:`SessionLimitError` when full)."""
        self.check_capacity()
        sid = new_session_id()
        while sid in self._sessions:  # pragma: no cover - 2^-128
            sid = new_session_id()
        counts = None if prior_counts is None else np.asarray(prior_counts, dtype=np.float64)
        session = Session(sid, gate, kind, layout, partner, counts, created_at=self._wall(),
                          last_used=self._clock(), _observer=observer)
        session.commit_state()
        self._sessions[sid] = session
        return session

    def _drop(self, session: Session) -> None:
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]
        session.closed = True
        if self.persistent:
            self._mark()

    def remove(self, session: Session) -> None:
        """Delete a session (call under its lock)."""
        self._drop(session)

    def reinstate(self, session: Session) -> None:
        """Undo :meth:`remove` after a failed snapshot write."""
        session.closed = False
        self._sessions[session.id] = session
        self._mark()

    def sweep(self) -> list:
        """Remove every expired session; returns their ids."""
        now = self._clock()
        gone = [s for s in self._sessions.values() if self._expired(s, now)]
        for session in gone:
            self._drop(session)
        if gone:
            log.info("expired %d idle session(s)", len(gone))
        return [s.id for s in gone]

    def changed(self, session: Session) -> None:
        """Book-keep a successful mutation (under the session's lock): the live state
        becomes the committed one. :meth:`rollback` undoes it."""
        session.version += 1
        session.last_used = self._clock()
        session.commit_state()

    def rollback(self, session: Session, previous: tuple) -> None:
        """Undo :meth:`changed` after a failed snapshot write: put ``previous`` (the
        ``committed`` record before the change) back with the public ``restore``."""
        session.committed = previous
        session.roll_back()
        if self.persistent:
            self._mark()

    # ----------------------------------------------------------------- snapshots

    def _event(self) -> asyncio.Event:
        if self._dirty is None:
            self._dirty = asyncio.Event()
        return self._dirty

    def _mark(self) -> int:
        self._seq += 1
        self._event().set()
        return self._seq

    async def commit(self) -> None:
        """Wait until the current state of every session is in the snapshot file.

        No-op without a snapshot path. Raises :class:`SnapshotWriteError` if the
        write that should have contained it failed.
        """
        if not self.persistent:
            return
        seq = self._mark()
        future = asyncio.get_running_loop().create_future()
        self._waiters.append((seq, future))
        await future

    def snapshot_bytes(self) -> bytes:
        """The snapshot of every live session's last committed state (plain data; each
        session's record is re-packed only when its committed version changed)."""
        now = self._clock()
        payload = {
            "format": SNAPSHOT_FORMAT,
            "version": SNAPSHOT_VERSION,
            "written_at": self._wall(),
            "sessions": [(max(0.0, now - s.last_used), s.packed()) for s in self._sessions.values()],
        }
        return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)

    def write_snapshot(self) -> None:
        """Write the snapshot now (synchronously)."""
        if self.persistent:
            self._writer(self.snapshot_path, self.snapshot_bytes())
            self._writes += 1

    async def run_writer(self) -> None:
        """Background task: write the snapshot whenever something changed (batched)."""
        dirty = self._event()
        while True:
            await dirty.wait()
            dirty.clear()
            target = self._seq
            data = self.snapshot_bytes()
            error: Optional[Exception] = None
            try:
                await asyncio.to_thread(self._writer, self.snapshot_path, data)
            except OSError as exc:
                log.error("snapshot write to %s failed: %s", self.snapshot_path, exc)
                error = SnapshotWriteError(f"could not write the snapshot {self.snapshot_path}: {exc}")
            else:
                self._durable = target
                self._writes += 1
            pending = []
            for seq, future in self._waiters:
                if seq > target:
                    pending.append((seq, future))
                elif not future.done():
                    if error is None:
                        future.set_result(None)
                    else:
                        future.set_exception(error)
            self._waiters = pending

    # ----------------------------------------------------------------- start-up

    @property
    def lock_path(self) -> Optional[Path]:
        """The sidecar lock file of the snapshot (``.<name>.lock`` next to it)."""
        if self.snapshot_path is None:
            return None
        return self.snapshot_path.with_name(f".{self.snapshot_path.name}.lock")

    def open(self) -> int:
        """Take the snapshot file for this server, clean up, restore; returns the sessions
        restored. No-op without a snapshot path.

        Raises :class:`SnapshotLockedError` if another server holds the file, and
        :class:`SnapshotError` if it cannot be read.
        """
        if not self.persistent:
            return 0
        self.acquire_lock()
        try:
            removed = self.remove_stale_temporaries()
            if removed:
                log.warning("removed %d stale snapshot temporar%s next to %s", removed,
                            "y" if removed == 1 else "ies", self.snapshot_path)
            return self.restore()
        except BaseException:  # a server that does not start holds nothing (the file is left as it was)
            self.release_lock()
            raise

    def acquire_lock(self) -> None:
        """Exclusive, non-blocking lock on the sidecar lock file (:class:`~beliefgate.fileio.FileLock`),
        held until :meth:`close`."""
        if self._lock is not None:
            return
        lock = FileLock(self.lock_path, blocking=False, mode=0o600, make_parents=False)
        try:
            lock.acquire()
        except LockHeldError:
            raise SnapshotLockedError(f"snapshot {self.snapshot_path} is in use by another server "
                                      f"(lock {self.lock_path} held)") from None
        except OSError as exc:
            raise SnapshotError(f"cannot lock {self.lock_path}: {exc}") from exc
        self._lock = lock

    def remove_stale_temporaries(self) -> int:
        """Delete the temporaries ``atomic_write`` leaves when killed mid-write
        (``.<name>.*.tmp``); call only while holding the lock. Returns how many."""
        removed = 0
        for tmp in self.snapshot_path.parent.glob(f".{self.snapshot_path.name}.*.tmp"):
            try:
                tmp.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise SnapshotError(f"cannot remove the stale temporary {tmp}: {exc}") from exc
            removed += 1
        self._stale_removed += removed
        return removed

    @property
    def stale_removed(self) -> int:
        """Stale snapshot temporaries removed at start."""
        return self._stale_removed

    def restore(self) -> int:
        """Load the snapshot file if it exists; returns the number of sessions restored.

        Sessions whose idle time (at the snapshot, plus the time since it was
        written) exceeds the TTL are dropped. Raises :class:`SnapshotError` if the
        file is not a readable beliefgate snapshot.
        """
        if not self.persistent or not self.snapshot_path.exists():
            return 0
        try:
            payload = _unpickle(self.snapshot_path.read_bytes())
        except OSError as exc:
            raise SnapshotError(f"cannot read snapshot {self.snapshot_path}: {exc}") from exc
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError,
                TypeError, IndexError) as exc:
            what = "empty" if isinstance(exc, EOFError) else f"{type(exc).__name__}: {exc}"
            raise SnapshotError(f"{self.snapshot_path} is not a beliefgate-serve snapshot (unreadable: {what})") \
                from exc
        if not isinstance(payload, dict) or payload.get("format") != SNAPSHOT_FORMAT:
            raise SnapshotError(f"{self.snapshot_path} is not a beliefgate-serve snapshot")
        if payload.get("version") not in READ_VERSIONS:
            raise SnapshotError(f"snapshot {self.snapshot_path} has version {payload.get('version')}, "
                                f"this server reads versions {', '.join(map(str, READ_VERSIONS))}")
        since = max(0.0, self._wall() - float(payload["written_at"]))
        now = self._clock()
        restored = 0
        for item in payload["sessions"]:
            try:
                if payload["version"] == 1:  # a whole pickled Gate/Kappa per session
                    rec = item
                    gate = _unpickle(rec["gate"])
                else:
                    idle_s, data = item
                    rec = _unpickle(data)
                    rec["idle_s"] = idle_s
                    gate = _rebuild(rec)
            except (BeliefgateError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError,
                    TypeError, IndexError, KeyError) as exc:
                raise SnapshotError(f"snapshot {self.snapshot_path}: a session cannot be rebuilt: {exc}") from exc
            if not isinstance(gate, Kappa if rec["kind"] == "kappa" else Gate):
                raise SnapshotError(f"snapshot {self.snapshot_path}: session {rec['id']} holds no "
                                    f"{'Kappa' if rec['kind'] == 'kappa' else 'Gate'}")
            idle = float(rec["idle_s"]) + since
            if self.ttl_s is not None and idle > self.ttl_s:
                continue
            if len(self._sessions) >= self.max_sessions:
                log.warning("snapshot holds more sessions than max_sessions=%d; the rest are dropped",
                            self.max_sessions)
                break
            counts = rec["prior_counts"]
            session = Session(rec["id"], gate, rec["kind"], rec["layout"], rec["partner"],
                              None if counts is None else np.asarray(counts, dtype=np.float64),
                              created_at=float(rec["created_at"]), last_used=now - idle,
                              version=int(rec["version"]), log=gate.log if rec["kind"] == "kappa" else ())
            session.commit_state()
            self._sessions[session.id] = session
            restored += 1
        return restored

    def close(self) -> None:
        """Final synchronous snapshot (at shutdown), then the lock is released; a failed
        write is logged, not raised (every acknowledged change is already on disk)."""
        if self.persistent:
            try:
                self.write_snapshot()
            except OSError as exc:
                log.error("final snapshot write to %s failed: %s", self.snapshot_path, exc)
        self.release_lock()

    def release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


__all__ = [
    "Session",
    "SessionStore",
    "SessionError",
    "SessionNotFoundError",
    "SessionLimitError",
    "WrongSessionKindError",
    "SnapshotError",
    "SnapshotWriteError",
    "SnapshotLockedError",
    "atomic_write",
    "new_session_id",
]
