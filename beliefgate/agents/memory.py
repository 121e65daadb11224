"""Partner memory across episodes: a per-partner SQLite store (docs/memory.md).

Agents are rebuilt for every episode, so what a belief agent learnt about a teammate -- the
completion counts behind its gate's smoothed prior (``n_psi``, :attr:`Gate.memory
<beliefgate.beliefs.gate.Gate.memory>`) -- is lost at the episode's end unless it is kept
somewhere. :class:`MemoryStore` keeps it in one SQLite file (WAL mode, schema-versioned),
keyed by the partner's identity (:class:`PartnerKey`: partner name, layout, the partner's seat
and a scope naming the sequence of episodes), one row per episode and teammate:

* the gate's completion counts at the episode's end, by skill name (the next episode's prior);
* the agreed roles of the episode (``{seat: role}``; filled by agents that negotiate roles);
* request-following: requests the ego made of the partner and how many it followed, by skill;
* the ego's partner-intent accuracy over the episode (hits / steps).

Every episode is committed in **one** transaction (all its teammates together), so a process
killed mid-episode loses at most that episode and leaves the store consistent.

The Gate's in-process mechanism is ``Gate.reset(keep_memory=True)``; across processes an agent
gets a :class:`MemorySession` (:meth:`~beliefgate.agents.planning.PlanningAgent.use_memory`)
before :meth:`reset`, reads each teammate's counts from it when its gates are built
(``Gate.reset(memory=counts)``), and the runner commits
:meth:`~beliefgate.agents.planning.PlanningAgent.memory_record` at the episode's end.

Order: an episode with an ``order`` (a grid's seed) starts from the latest episode of its key
with a smaller order, and replaces the row of its own order, so a replayed episode starts from
the same prior (reproducible, resumable); without one it starts from the latest episode and is
appended after it.

Faults: a file that is not a beliefgate store, a store of a newer schema, a damaged file
(:class:`MemoryStoreError`, an input error) and a store locked by another writer past the busy
timeout (:class:`MemoryLockedError`) are refused in one line naming the file; nothing is written
to a file that was refused.
"""

from __future__ import annotations

import math
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from beliefgate.errors import InputError, RuntimeFailure

#: what the ``meta`` table's ``format`` says in every beliefgate memory store
STORE_FORMAT = "beliefgate.partner-memory"
#: the schema this code writes; a store of a newer one is refused, an older one migrated
SCHEMA_VERSION = 1
#: seconds a writer waits for another writer's transaction before :class:`MemoryLockedError`
DEFAULT_TIMEOUT_S = 10.0

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE partners (
    id INTEGER PRIMARY KEY,
    partner TEXT NOT NULL, layout TEXT NOT NULL, seat INTEGER NOT NULL, scope TEXT NOT NULL,
    created TEXT NOT NULL,
    UNIQUE (partner, layout, seat, scope));
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    partner_id INTEGER NOT NULL REFERENCES partners(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    seed INTEGER, ego TEXT NOT NULL, ego_seat INTEGER NOT NULL, steps INTEGER NOT NULL,
    intent_hits INTEGER NOT NULL, intent_steps INTEGER NOT NULL,
    deliveries INTEGER, committed TEXT NOT NULL, version TEXT NOT NULL,
    UNIQUE (partner_id, seq));
CREATE TABLE skill_counts (
    episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    skill TEXT NOT NULL, count REAL NOT NULL,
    PRIMARY KEY (episode_id, skill));
CREATE TABLE roles (
    episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    seat INTEGER NOT NULL, role TEXT NOT NULL,
    PRIMARY KEY (episode_id, seat));
CREATE TABLE requests (
    episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    skill TEXT NOT NULL, asked INTEGER NOT NULL, followed INTEGER NOT NULL,
    PRIMARY KEY (episode_id, skill));
CREATE INDEX episodes_by_partner ON episodes (partner_id, seq);
"""
_TABLES = ("meta", "partners", "episodes", "skill_counts", "roles", "requests")


class MemoryStoreError(InputError):
    """A memory file that cannot be used: not a beliefgate store, a newer schema, damaged, or unreadable."""


class MemoryLockedError(RuntimeFailure):
    """Another process held the store's write lock for longer than the busy timeout."""


class MemoryNotUsedError(InputError):
    """Memory given to an agent that keeps no partner belief (it would have no effect)."""


# --------------------------------------------------------------------------- records
@dataclass(frozen=True)
class PartnerKey:
    """Who a memory entry is about: the partner (agent name or partner file as given), the layout,
    the partner's seat, and the sequence of episodes it belongs to (``scope``; ``""`` for plain
    ``beliefgate episode`` runs, one per (condition, seat, settings) in grids)."""

    partner: str
    layout: str
    seat: int
    scope: str = ""

    @property
    def label(self) -> str:
        return f"{self.partner} on {self.layout}, seat {self.seat}" + (f" [{self.scope}]" if self.scope else "")


@dataclass(frozen=True)
class PartnerMemory:
    """What the store recalls about one partner before an episode."""

    key: PartnerKey
    counts: Dict[str, float]               # n_psi by skill name (the gate's counts after the last episode)
    episodes: int                          # earlier episodes of this key (before the recalled order)
    last_seq: int
    roles: Dict[int, str] = field(default_factory=dict)          # the latest agreed split, seat -> role
    requests: Dict[str, Tuple[int, int]] = field(default_factory=dict)   # skill -> (asked, followed), summed
    intent_hits: int = 0
    intent_steps: int = 0

    def counts_for(self, skill_names: Sequence[str]) -> Tuple[np.ndarray, List[str]]:
        """The counts in ``skill_names`` order (0 for a skill never stored), and the stored skills
        the names lack (ignored; the caller counts them)."""
        arr = np.array([float(self.counts.get(n, 0.0)) for n in skill_names])
        return arr, sorted(set(self.counts) - set(skill_names))

    @property
    def request_rate(self) -> float:
        """Share of the ego's requests the partner followed (NaN when none was made)."""
        asked = sum(a for a, _ in self.requests.values())
        return sum(f for _, f in self.requests.values()) / asked if asked else math.nan

    @property
    def intent_accuracy(self) -> float:
        return self.intent_hits / self.intent_steps if self.intent_steps else math.nan


@dataclass(frozen=True)
class TeammateRecord:
    """What an agent hands back about one teammate at an episode's end."""

    skills: Tuple[str, ...]
    counts: np.ndarray
    roles: Dict[int, str] = field(default_factory=dict)
    requests: Dict[str, Tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class EpisodeEntry:
    """One teammate's row of one episode, as :meth:`MemoryStore.commit` writes it."""

    key: PartnerKey
    record: TeammateRecord
    ego: str
    ego_seat: int
    steps: int
    intent_hits: int = 0
    intent_steps: int = 0
    deliveries: Optional[int] = None
    seed: Optional[int] = None


# --------------------------------------------------------------------------- the store
class MemoryStore:
    """One memory file (created when missing; its folder must exist).

    ``readonly=True`` never creates or changes the file (``memory show``). ``timeout_s``: how long a
    writer waits for another writer's transaction before :class:`MemoryLockedError`.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.path = Path(path)
        self.readonly = readonly
        self.timeout_s = float(timeout_s)
        self._conn = self._open()

    # ---------------------------------------------------------------- opening
    def _fail(self, what: str) -> MemoryStoreError:
        return MemoryStoreError(f"{self.path}: {what}")

    def _locked(self, what: str) -> MemoryLockedError:
        return MemoryLockedError(f"{self.path}: locked by another writer for more than {self.timeout_s:g} s "
                                 f"({what}); try again when it has finished")

    def _open(self) -> sqlite3.Connection:
        path = self.path
        if path.is_dir():
            raise self._fail("is a directory, not a memory store")
        exists = path.exists()
        if not exists and self.readonly:
            raise self._fail("no memory store here")
        if not exists and not path.parent.is_dir():
            raise self._fail(f"its folder {path.parent} does not exist")
        empty = exists and path.stat().st_size == 0
        if exists and not empty:
            self._check_header()
        from urllib.parse import quote

        uri = f"file:{quote(str(path.resolve()))}?mode={'ro' if self.readonly else 'rwc'}"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=self.timeout_s, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._fail(f"cannot open ({exc})") from None
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            if exists and not empty:
                self._check_store(conn)
            elif not self.readonly:
                self._create(conn)
            if not self.readonly:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.OperationalError as exc:
            conn.close()
            if _is_locked(exc):
                raise self._locked("opening") from None
            raise self._fail(f"damaged or unreadable ({exc})") from None
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise self._fail(f"damaged or not an SQLite file ({exc})") from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_header(self) -> None:
        """Refuse a file that is not SQLite at all before SQLite opens it (nothing is written)."""
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(16)
        except OSError as exc:
            raise self._fail(f"cannot read ({exc.strerror or exc})") from None
        if head != b"SQLite format 3\x00":
            raise self._fail("not a beliefgate memory store (not an SQLite file)")

    def _check_store(self, conn: sqlite3.Connection) -> None:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" not in tables:
            raise self._fail("not a beliefgate memory store (an SQLite file without its meta table)")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != STORE_FORMAT:
            raise self._fail(f"not a beliefgate memory store (format {meta.get('format')!r})")
        try:
            version = int(meta.get("schema_version", ""))
        except ValueError:
            raise self._fail(f"damaged: schema_version {meta.get('schema_version')!r} is not a number") from None
        if version > SCHEMA_VERSION:
            raise self._fail(f"a memory store of schema {version}, newer than this beliefgate's {SCHEMA_VERSION}; "
                             "upgrade beliefgate to read it")
        if version < 1:
            raise self._fail(f"damaged: schema_version {version}")
        missing = [t for t in _TABLES if t not in tables]
        if missing:
            raise self._fail(f"damaged: tables {', '.join(missing)} are missing")
        check = conn.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise self._fail(f"damaged: {check[0] if check else 'integrity check gave no answer'}")
        self.schema_version = version
        self.meta = meta

    def _create(self, conn: sqlite3.Connection) -> None:
        import beliefgate

        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "meta" in tables:  # another process created it first
                conn.execute("ROLLBACK")
                self._check_store(conn)
                return
            if tables:
                raise self._fail("not a beliefgate memory store (an SQLite file with other tables)")
            for statement in _SCHEMA.strip().split(";"):
                if statement.strip():
                    conn.execute(statement)
            self.meta = {"format": STORE_FORMAT, "schema_version": str(SCHEMA_VERSION),
                         "created": _now(), "created_by": beliefgate.__version__}
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", sorted(self.meta.items()))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.schema_version = SCHEMA_VERSION

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------------- queries
    def _query(self, sql: str, args: Iterable = ()) -> List[tuple]:
        try:
            return self._conn.execute(sql, tuple(args)).fetchall()
        except sqlite3.OperationalError as exc:
            if _is_locked(exc):
                raise self._locked("reading") from None
            raise self._fail(f"damaged or unreadable ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise self._fail(f"damaged ({exc})") from None

    def _partner_id(self, key: PartnerKey) -> Optional[int]:
        rows = self._query("SELECT id FROM partners WHERE partner = ? AND layout = ? AND seat = ? AND scope = ?",
                           (key.partner, key.layout, int(key.seat), key.scope))
        return rows[0][0] if rows else None

    def recall(self, key: PartnerKey, before: Optional[int] = None) -> Optional[PartnerMemory]:
        """What the store holds about ``key`` for an episode of order ``before`` (the latest episode
        with a smaller order; ``None``: the latest of all), or ``None`` when it holds nothing earlier."""
        pid = self._partner_id(key)
        if pid is None:
            return None
        where, args = "partner_id = ?", [pid]
        if before is not None:
            where += " AND seq < ?"
            args.append(int(before))
        rows = self._query(f"SELECT id, seq FROM episodes WHERE {where} ORDER BY seq DESC LIMIT 1", args)
        if not rows:
            return None
        last_id, last_seq = rows[0]
        counts = dict(self._query("SELECT skill, count FROM skill_counts WHERE episode_id = ?", (last_id,)))
        n, hits, steps = self._query(f"SELECT COUNT(*), COALESCE(SUM(intent_hits), 0), COALESCE(SUM(intent_steps), 0) "
                                     f"FROM episodes WHERE {where}", args)[0]
        e_where = where.replace("partner_id", "e.partner_id").replace("seq <", "e.seq <")
        roles_at = self._query(f"SELECT r.seat, r.role, e.seq FROM roles r JOIN episodes e ON e.id = r.episode_id "
                               f"WHERE {e_where} ORDER BY e.seq DESC, r.seat", args)
        # the split of the latest episode that agreed one
        latest = {int(s): r for s, r, q in roles_at if q == roles_at[0][2]} if roles_at else {}
        requests = {skill: (int(a), int(f)) for skill, a, f in self._query(
            f"SELECT q.skill, SUM(q.asked), SUM(q.followed) FROM requests q JOIN episodes e ON e.id = q.episode_id "
            f"WHERE {e_where} GROUP BY q.skill", args)}
        return PartnerMemory(key=key, counts={k: float(v) for k, v in counts.items()}, episodes=int(n),
                             last_seq=int(last_seq), roles=latest, requests=requests,
                             intent_hits=int(hits), intent_steps=int(steps))

    def has_episode(self, key: PartnerKey, seq: int) -> bool:
        pid = self._partner_id(key)
        return pid is not None and bool(self._query("SELECT 1 FROM episodes WHERE partner_id = ? AND seq = ?",
                                                     (pid, int(seq))))

    # ---------------------------------------------------------------- writing
    def _write(self, work, what: str):
        """Run ``work(conn)`` in one IMMEDIATE transaction (all of it or nothing)."""
        if self.readonly:
            raise self._fail("opened read-only")
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _is_locked(exc):
                raise self._locked(what) from None
            raise self._fail(f"cannot write ({exc})") from None
        try:
            out = work(conn)
            conn.execute("COMMIT")
            return out
        except sqlite3.OperationalError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if _is_locked(exc):
                raise self._locked(what) from None
            raise self._fail(f"cannot write ({exc})") from None
        except sqlite3.DatabaseError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise self._fail(f"damaged ({exc})") from None
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def commit(self, entries: Sequence[EpisodeEntry], order: Optional[int] = None) -> List[int]:
        """Write one episode (every teammate's :class:`EpisodeEntry`) in one transaction; returns the
        order (``seq``) each entry got. With ``order`` each entry replaces its key's row of that
        order; without, it is appended after its key's latest row."""
        import beliefgate

        for e in entries:
            counts = np.asarray(e.record.counts, dtype=np.float64)
            if counts.shape != (len(e.record.skills),) or not np.all(np.isfinite(counts)) or np.any(counts < 0):
                raise InputError(f"memory of {e.key.label}: counts must be finite and >= 0, one per skill, got "
                                 f"{counts.tolist()}")

        def work(conn: sqlite3.Connection) -> List[int]:
            seqs = []
            stamp = _now()
            for e in entries:
                k = e.key
                conn.execute("INSERT OR IGNORE INTO partners (partner, layout, seat, scope, created) "
                             "VALUES (?, ?, ?, ?, ?)", (k.partner, k.layout, int(k.seat), k.scope, stamp))
                pid = conn.execute("SELECT id FROM partners WHERE partner = ? AND layout = ? AND seat = ? AND "
                                   "scope = ?", (k.partner, k.layout, int(k.seat), k.scope)).fetchone()[0]
                if order is None:
                    seq = conn.execute("SELECT COALESCE(MAX(seq) + 1, 0) FROM episodes WHERE partner_id = ?",
                                       (pid,)).fetchone()[0]
                else:
                    seq = int(order)
                    conn.execute("DELETE FROM episodes WHERE partner_id = ? AND seq = ?", (pid, seq))
                cur = conn.execute(
                    "INSERT INTO episodes (partner_id, seq, seed, ego, ego_seat, steps, intent_hits, intent_steps, "
                    "deliveries, committed, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (pid, seq, e.seed, e.ego, int(e.ego_seat), int(e.steps), int(e.intent_hits),
                     int(e.intent_steps), e.deliveries, stamp, beliefgate.__version__))
                eid = cur.lastrowid
                conn.executemany("INSERT INTO skill_counts (episode_id, skill, count) VALUES (?, ?, ?)",
                                 [(eid, s, float(c)) for s, c in zip(e.record.skills, e.record.counts)])
                conn.executemany("INSERT INTO roles (episode_id, seat, role) VALUES (?, ?, ?)",
                                 [(eid, int(s), str(r)) for s, r in sorted(e.record.roles.items())])
                conn.executemany("INSERT INTO requests (episode_id, skill, asked, followed) VALUES (?, ?, ?, ?)",
                                 [(eid, s, int(a), int(f)) for s, (a, f) in sorted(e.record.requests.items())])
                seqs.append(int(seq))
            return seqs

        return self._write(work, "committing an episode")

    def erase(self, partner: Optional[str] = None, layout: Optional[str] = None, seat: Optional[int] = None,
              scope: Optional[str] = None) -> int:
        """Delete every entry matching the given fields (none given: all of them), with its episodes, in one
        transaction; returns how many partner entries went."""
        where, args = _filter(partner, layout, seat, scope)

        def work(conn: sqlite3.Connection) -> int:
            return conn.execute(f"DELETE FROM partners{where}", args).rowcount

        return self._write(work, "erasing")

    # ---------------------------------------------------------------- listing
    def entries(self, partner: Optional[str] = None, layout: Optional[str] = None, seat: Optional[int] = None,
                scope: Optional[str] = None) -> List[Dict[str, Any]]:
        """One summary per partner entry (``memory show``): its key, episodes, the latest counts, roles,
        request-following and intent accuracy (overall and per episode)."""
        where, args = _filter(partner, layout, seat, scope)
        out = []
        for pid, p, lay, s, sc in self._query(f"SELECT id, partner, layout, seat, scope FROM partners{where} "
                                              "ORDER BY partner, layout, seat, scope", args):
            mem = self.recall(PartnerKey(p, lay, int(s), sc))
            episodes = [{"seq": q, "seed": seed, "ego": ego, "ego_seat": es, "steps": st,
                         "intent_accuracy": (h / n if n else None), "deliveries": d, "committed": c}
                        for q, seed, ego, es, st, h, n, d, c in self._query(
                            "SELECT seq, seed, ego, ego_seat, steps, intent_hits, intent_steps, deliveries, committed "
                            "FROM episodes WHERE partner_id = ? ORDER BY seq", (pid,))]
            entry = {"partner": p, "layout": lay, "seat": int(s), "scope": sc, "episodes": len(episodes),
                     "counts": {}, "roles": {}, "requests": {}, "request_rate": None, "intent_accuracy": None,
                     "history": episodes}
            if mem is not None:
                rate, acc = mem.request_rate, mem.intent_accuracy
                entry.update(counts=mem.counts, roles={str(k): v for k, v in mem.roles.items()},
                             requests={k: {"asked": a, "followed": f} for k, (a, f) in mem.requests.items()},
                             request_rate=None if math.isnan(rate) else rate,
                             intent_accuracy=None if math.isnan(acc) else acc)
            out.append(entry)
        return out

    def describe(self) -> Dict[str, Any]:
        return {"path": str(self.path), "format": STORE_FORMAT, "schema_version": self.schema_version,
                **{k: v for k, v in self.meta.items() if k not in ("format", "schema_version")}}


def _filter(partner, layout, seat, scope) -> Tuple[str, list]:
    parts, args = [], []
    for column, value in (("partner", partner), ("layout", layout), ("seat", seat), ("scope", scope)):
        if value is not None:
            parts.append(f"{column} = ?")
            args.append(value)
    return (" WHERE " + " AND ".join(parts)) if parts else "", args


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# --------------------------------------------------------------------------- one episode's use
@dataclass(frozen=True)
class MemoryUse:
    """How an episode uses a store (picklable: grid workers get it): the file, the sequence's
    ``scope`` and the episode's ``order`` in it (a grid: its seed; ``None``: after the latest)."""

    path: str
    scope: str = ""
    order: Optional[int] = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    @classmethod
    def of(cls, memory: "MemoryUse | str | Path") -> "MemoryUse":
        return memory if isinstance(memory, MemoryUse) else cls(str(memory))


class MemorySession:
    """A store bound to one episode: who sits where (``names``, one agent name per seat), the ego's
    seat, the layout. An agent asks :meth:`recall` for a teammate's seat when it builds its gates;
    :meth:`commit` writes the agent's :meth:`memory_record` and the episode's intent accuracy."""

    def __init__(self, use: MemoryUse, layout: str, names: Sequence[str], ego_seat: int,
                 store: Optional[MemoryStore] = None):
        self.use = use
        self.layout = layout
        self.names = list(names)
        self.ego_seat = int(ego_seat)
        self.store = store if store is not None else MemoryStore(use.path, timeout_s=use.timeout_s)
        self._owned = store is None
        self.recalled: Dict[int, Optional[PartnerMemory]] = {}
        #: stored skills the agent's library lacks, per seat (ignored at recall; counted)
        self.unknown_skills: Dict[int, List[str]] = {}

    def key(self, seat: int) -> PartnerKey:
        return PartnerKey(self.names[seat], self.layout, int(seat), self.use.scope)

    def recall(self, seat: int) -> Optional[PartnerMemory]:
        mem = self.store.recall(self.key(seat), self.use.order)
        self.recalled[seat] = mem
        return mem

    def describe(self) -> Dict[str, Any]:
        """What a log's header says about the memory an episode started from (after the recall)."""
        return {"scope": self.use.scope, "order": self.use.order,
                "recalled": {str(s): (m.episodes if m is not None else 0) for s, m in sorted(self.recalled.items())}}

    def commit(self, records: Mapping[int, TeammateRecord], steps: Sequence[Any], ego: str,
               deliveries: Optional[int] = None, seed: Optional[int] = None) -> Dict[str, Any]:
        """Write the episode (one transaction); ``steps``: its log rows (for the intent accuracy)."""
        entries = []
        for seat, record in sorted(records.items()):
            hits, total = intent_counts(steps, self.ego_seat, seat, len(self.names), record.skills)
            entries.append(EpisodeEntry(self.key(seat), record, ego, self.ego_seat, len(steps), hits, total,
                                        deliveries, seed))
        seqs = self.store.commit(entries, self.use.order)
        return {"path": str(self.store.path), "scope": self.use.scope,
                "entries": [{"partner": e.key.partner, "seat": e.key.seat, "seq": q,
                             "recalled_episodes": (self.recalled.get(e.key.seat).episodes
                                                   if self.recalled.get(e.key.seat) is not None else 0),
                             "intent_accuracy": (e.intent_hits / e.intent_steps if e.intent_steps else None)}
                            for e, q in zip(entries, seqs)],
                "unknown_skills": {str(s): v for s, v in self.unknown_skills.items() if v}}

    def close(self) -> None:
        if self._owned:
            self.store.close()


def intent_counts(steps: Sequence[Any], ego: int, seat: int, players: int,
                  skills: Sequence[str]) -> Tuple[int, int]:
    """The ego's partner-intent hits and scored steps about the teammate in ``seat``: steps where the
    ego logged a prediction and the teammate's true skill is known. With two players the prediction
    is the logged ``partner_map`` (as :func:`beliefgate.eval.metrics.partner_intent_accuracy`); with
    more, the argmax of that teammate's logged posterior (``info["beliefs"][seat]``)."""
    hits = total = 0
    for row in steps:
        info = row.info[ego] if ego < len(row.info) else {}
        truth = row.skills[seat]
        if players == 2:
            guess = info.get("partner_map")
        else:
            post = (info.get("beliefs") or {}).get(str(seat))
            guess = skills[int(np.argmax(post))] if post else None
        if guess is None or truth is None:
            continue
        total += 1
        hits += guess == truth
    return hits, total


__all__ = ["MemoryStore", "MemoryStoreError", "MemoryLockedError", "MemoryNotUsedError", "MemorySession",
           "MemoryUse", "PartnerKey", "PartnerMemory", "TeammateRecord", "EpisodeEntry", "intent_counts",
           "SCHEMA_VERSION", "STORE_FORMAT"]
