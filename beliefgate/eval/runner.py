"""Run an evaluation grid into a directory, resumably.

Layout of a run directory ``DIR``::

    DIR/grid.json                     the resolved grid (spec, digest, episodes, skips)
    DIR/episodes/<layout>/<agent>__<partner>__seed<S>__seat<P>__<key>.jsonl          trajectory log
    DIR/episodes/<layout>/<agent>__<partner>__seed<S>__seat<P>__<key>.metrics.json   its metric row
    DIR/results.parquet, DIR/results.csv   one row per finished episode of the grid
    DIR/run.json                      what the last run did (counts, executor, failures, report lines)

File names are deterministic (``<key>`` hashes everything that determines the
episode), so rerunning the same command finds its work:

* an episode whose log and metric row agree (the row records the log's SHA-256)
  is **done** and skipped;
* a log without a (valid, current) metric row is re-scored from the log, not
  replayed;
* a log that does not read back (:class:`~beliefgate.envs.trajlog.LogFormatError`),
  or belongs to another episode, is **corrupt**: reported, deleted and rerun.

Workers play an episode into a private temporary file and send the log back;
this process writes it with an atomic rename, then its metric row. A killed run
therefore leaves only complete files and loses at most the episodes in flight.
The results table is rebuilt from the metric rows after every run (also an
interrupted one), one row per episode of the grid, so rows are never duplicated.
"""

from __future__ import annotations
from beliefgate.errors import InputError

import csv
import hashlib
import io
import json
import math
import os
import tempfile
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import beliefgate
from beliefgate.fileio import atomic_write
from beliefgate.provenance import git_commit
from beliefgate.eval.grid import EpisodeSpec, GridSpec, ResolvedGrid, resolve_grid

ROW_FORMAT = "beliefgate.eval-row/1"
RUN_FORMAT = "beliefgate.eval-run/1"

#: config columns of the results table, in order; the metric columns follow
CONFIG_COLUMNS = ("grid", "grid_digest", "agent", "layout", "partner", "partner_entry", "group", "seed", "seat",
                  "horizon", "llm_model", "version", "metrics_version", "episode_key", "log", "wall_s")
#: extra config column of grids with ``gate:`` overrides (compact JSON of the overrides), after CONFIG_COLUMNS
GATE_COLUMN = "gate_params"

Progress = Callable[[int, int, str], None]
Reporter = Callable[[str], None]


class RunError(InputError):
    """A run directory or results table that cannot be used."""


class RunDirMismatchError(RunError):
    """The run directory holds the results of another grid (rerun with ``force`` to move them aside)."""


class RunLockedError(RunError):
    """Another process is running a grid into the same run directory (its lock is held)."""


#: the run directory's lock file (an ``flock`` held for the whole run, with the holder's pid)
RUN_LOCK = ".beliefgate-run.lock"
#: the locks this process holds, by run directory (a nested ``lock_run_dir`` of the same one is free)
_HELD_RUN_LOCKS: Dict[Path, Any] = {}


@contextmanager
def lock_run_dir(out: str | Path):
    """Hold ``out``'s run lock (``out/.beliefgate-run.lock``; ``out`` is created) for the block:
    two runs into one directory would play the same episodes and one's start-up clean-up could
    delete the other's files in flight. Another process holding it is a :class:`RunLockedError`
    naming the directory and the holder's pid. The lock is the kernel's (``flock``, see
    :class:`~beliefgate.fileio.FileLock`): a killed run leaves its file but never a stale lock.
    Nested in one process (the CLI, then :func:`run_grid`) the outer hold serves both."""
    from beliefgate.fileio import FileLock, LockHeldError

    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"cannot create the run directory {out}: {exc.strerror or exc}") from None
    key = out.resolve()
    if key in _HELD_RUN_LOCKS:
        yield
        return
    lock = FileLock(out / RUN_LOCK, blocking=False, mode=0o644, make_parents=False, record_pid=True)
    try:
        lock.acquire()
    except LockHeldError as exc:
        who = f"process {exc.holder_pid}" if exc.holder_pid is not None else "another process"
        raise RunLockedError(f"{out} is in use by another eval run ({who} holds {out / RUN_LOCK}); wait for it "
                             "to finish or use another --out") from None
    except OSError as exc:
        raise RunError(f"cannot lock the run directory {out}: {exc.strerror or exc}") from None
    _HELD_RUN_LOCKS[key] = lock
    try:
        yield
    finally:
        del _HELD_RUN_LOCKS[key]
        lock.release()


# ------------------------------------------------------------------------------ worker side
@dataclass
class EpisodeTask:
    """What a worker needs to play one episode (picklable)."""

    spec: EpisodeSpec
    llm: Optional[Dict[str, Any]] = None     # LLMSettings fields, api_key included; never written anywhere
    memory: Optional[Any] = None             # a beliefgate.agents.memory.MemoryUse (eval run --memory)


@dataclass
class EpisodeOutcome:
    """What a worker sends back: the log's bytes and its metrics, or the error."""

    spec: EpisodeSpec
    ok: bool
    log: bytes = b""
    metrics: Dict[str, float] = field(default_factory=dict)
    version: str = ""
    wall_s: float = 0.0
    error: str = ""
    detail: str = ""


def _episode_config(spec: EpisodeSpec) -> Dict[str, Any]:
    return {"episode_key": spec.key, "grid_episode": spec.identity()}


def play_episode(task: EpisodeTask) -> EpisodeOutcome:
    """Play one grid episode into a private temporary log, score it from the log, return both.

    Runs in a worker process. Any failure of the episode itself comes back as an
    outcome with ``ok=False`` (the run records it and goes on; a rerun retries it).
    """
    from beliefgate.envs.trajlog import read_log
    from beliefgate.eval.episode import run_episode
    from beliefgate.eval.metrics import episode_metrics

    spec = task.spec
    started = time.perf_counter()
    try:
        llm = None
        if task.llm is not None:
            from beliefgate.planners.client import LLMClient, LLMSettings

            llm = LLMClient(LLMSettings(**task.llm))
        with tempfile.TemporaryDirectory(prefix="beliefgate-episode-") as tmp:
            path = Path(tmp) / "episode.jsonl"
            run_episode(spec.layout, spec.agent, spec.partner, seed=spec.seed, horizon=spec.horizon,
                        seat=spec.seat, log_path=path, config=_episode_config(spec), llm=llm,
                        gate_params=spec.gate_params(), memory=task.memory, env_options=spec.env_options)
            traj = read_log(path)
            metrics = episode_metrics(traj)
            data = path.read_bytes()
    except Exception as exc:  # noqa: BLE001 -- a task boundary: the error is recorded per episode, never dropped
        return EpisodeOutcome(spec, ok=False, error=f"{type(exc).__name__}: {exc}", detail=traceback.format_exc(),
                              wall_s=time.perf_counter() - started)
    return EpisodeOutcome(spec, ok=True, log=data, metrics=metrics, version=traj.header.version,
                          wall_s=round(time.perf_counter() - started, 4))


def lost_episode(task: EpisodeTask, exc: BaseException) -> EpisodeOutcome:
    """The outcome of a task whose worker died."""
    return EpisodeOutcome(task.spec, ok=False, error=f"worker lost: {type(exc).__name__}: {exc}")


# ------------------------------------------------------------------------------ files
def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _metric_value(value: Any) -> float:
    return float("nan") if value is None else float(value)


def metric_row(spec: EpisodeSpec, metrics: Dict[str, float], log_sha256: str, version: str,
               wall_s: float) -> Dict[str, Any]:
    """The metric row stored beside a log (JSON; NaN as null)."""
    from beliefgate.eval.metrics import METRICS_VERSION

    return {"format": ROW_FORMAT, "metrics_version": METRICS_VERSION, "episode": spec.to_dict(),
            "episode_key": spec.key, "log_sha256": log_sha256, "version": version, "wall_s": wall_s,
            "metrics": {k: _json_safe(v) for k, v in metrics.items()}}


@dataclass
class EpisodeState:
    """What the run directory holds for one episode."""

    spec: EpisodeSpec
    status: str                      # done | rescore | run
    reason: str = ""                 # why it must be rescored / rerun
    row: Optional[Dict[str, Any]] = None


def _read_row(path: Path) -> Optional[Dict[str, Any]]:
    try:
        row = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return row if isinstance(row, dict) and row.get("format") == ROW_FORMAT else None


def _check_log(spec: EpisodeSpec, path: Path) -> Optional[str]:
    """None when the log at ``path`` is a complete log of ``spec``, else what is wrong with it."""
    from beliefgate.envs.trajlog import LogFormatError, read_log

    try:
        traj = read_log(path)
    except LogFormatError as exc:
        return str(exc)
    h = traj.header
    expected = (spec.layout, spec.seed, spec.seat, spec.horizon, spec.agent, spec.partner, spec.key)
    found = (h.layout, h.seed, h.seat, h.horizon, h.ego, h.partner, h.config.get("episode_key"))
    if found != expected:
        return f"{path}: the log is of another episode ({found} instead of {expected})"
    if spec.gate is not None and not _same_gate_params(h.config.get("gate_params"), spec.gate_params()):
        return f"{path}: the log was played with other gate parameters ({h.config.get('gate_params')})"
    return None


def _same_gate_params(logged: Any, params) -> bool:
    """Whether a log header's ``gate_params`` (nested, or the flat form of older logs) are ``params``."""
    import warnings

    from beliefgate.beliefs.config import GateParamError

    if logged == params.model_dump(mode="json"):
        return True
    try:
        with warnings.catch_warnings():  # an older log's flat form: it loads, and is compared
            warnings.simplefilter("ignore", DeprecationWarning)
            return type(params).model_validate(logged) == params
    except GateParamError:
        return False


def inspect_episode(out: Path, spec: EpisodeSpec) -> EpisodeState:
    """Classify one episode of the grid from the files in ``out`` (see the module docstring)."""
    from beliefgate.eval.metrics import METRICS_VERSION

    log_path, row_path = out / spec.log_name, out / spec.metrics_name
    if not log_path.exists():
        return EpisodeState(spec, "run", "new" if not row_path.exists() else "log missing")
    row = _read_row(row_path) if row_path.exists() else None
    data = log_path.read_bytes()
    if row is not None and row.get("log_sha256") == _sha256(data) and row.get("episode_key") == spec.key:
        if row.get("metrics_version") == METRICS_VERSION:
            return EpisodeState(spec, "done", row=row)
        reason = f"metrics version {row.get('metrics_version')} -> {METRICS_VERSION}"
    elif row is None:
        reason = "metric row missing" if not row_path.exists() else "metric row unreadable"
    else:
        reason = "log changed since it was scored"
    problem = _check_log(spec, log_path)
    if problem is not None:
        return EpisodeState(spec, "run", f"corrupt log: {problem}")
    return EpisodeState(spec, "rescore", reason)


def _rescore(out: Path, spec: EpisodeSpec) -> Dict[str, Any]:
    from beliefgate.envs.trajlog import read_log
    from beliefgate.eval.metrics import episode_metrics

    log_path = out / spec.log_name
    data = log_path.read_bytes()
    traj = read_log(log_path)
    row = metric_row(spec, episode_metrics(traj), _sha256(data), traj.header.version,
                     float((traj.final.summary if traj.final else {}).get("wall_s", float("nan"))))
    atomic_write(out / spec.metrics_name, (json.dumps(row, indent=1) + "\n").encode())
    return row


def _store(out: Path, outcome: EpisodeOutcome) -> Dict[str, Any]:
    """Write a finished episode: the log first (atomic), then its metric row (atomic)."""
    spec = outcome.spec
    atomic_write(out / spec.log_name, outcome.log)
    row = metric_row(spec, outcome.metrics, _sha256(outcome.log), outcome.version, outcome.wall_s)
    atomic_write(out / spec.metrics_name, (json.dumps(row, indent=1) + "\n").encode())
    return row


def _remove_stale_temporaries(out: Path) -> List[str]:
    """Temporary files of writes a killed run left half-done."""
    removed = []
    root = out / "episodes"
    found = sorted(root.rglob("*.tmp")) if root.is_dir() else []
    # the run directory's own tables and records (atomic_write's ".NAME.*.tmp", write_results' parquet)
    found += sorted(p for p in out.glob("*.tmp") if p.is_file() and p.name.startswith(
        tuple(f"{prefix}{name}." for name in RUN_DIR_ENTRIES for prefix in ("", "."))))
    for tmp in found:
        tmp.unlink()
        removed.append(str(tmp.relative_to(out)))
    return removed


# ------------------------------------------------------------------------------ the table
def table_row(grid: GridSpec, digest: str, row: Dict[str, Any]) -> Dict[str, Any]:
    """One results-table row: the grid's config, the episode's config, its version, its metrics."""
    from beliefgate.eval.metrics import METRICS

    spec = EpisodeSpec.from_dict(row["episode"])
    out: Dict[str, Any] = {
        "grid": grid.name, "grid_digest": digest, "agent": spec.agent, "layout": spec.layout,
        "partner": spec.partner, "partner_entry": spec.partner_entry, "group": spec.group, "seed": spec.seed,
        "seat": spec.seat, "horizon": spec.horizon, "llm_model": spec.llm_model or "", "version": row["version"],
        "metrics_version": row["metrics_version"], "episode_key": spec.key, "log": spec.log_name,
        "wall_s": _metric_value(row.get("wall_s")),
    }
    if spec.gate is not None:
        out[GATE_COLUMN] = spec.gate_json
    for name in METRICS:
        out[name] = _metric_value(row["metrics"].get(name))
    return out


def write_results(out: Path, rows: List[Dict[str, Any]]) -> List[Path]:
    """``results.csv`` (always) and ``results.parquet`` (when pyarrow is installed), written atomically.

    Grids with ``gate:`` overrides get the ``gate_params`` column after the config columns."""
    from beliefgate.eval.metrics import METRICS

    gate = [GATE_COLUMN] if any(GATE_COLUMN in r for r in rows) else []
    columns = list(CONFIG_COLUMNS) + gate + list(METRICS)
    written = []
    text = _csv_text(columns, rows)
    atomic_write(out / "results.csv", text.encode())
    written.append(out / "results.csv")
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # the `dist` extra is not installed: CSV only
        return written
    types = {c: pa.string() for c in columns}
    for c in ("seed", "seat", "horizon", "metrics_version"):
        types[c] = pa.int64()
    for c in ("wall_s", *METRICS):
        types[c] = pa.float64()
    table = pa.table({c: pa.array([r[c] for r in rows], type=types[c]) for c in columns})
    fd, tmp = tempfile.mkstemp(dir=out, prefix="results.parquet.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.chmod(tmp, 0o644)  # as atomic_write's files (mkstemp creates 0600)
        os.replace(tmp, out / "results.parquet")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    written.append(out / "results.parquet")
    return written


def _csv_text(columns: Sequence[str], rows: List[Dict[str, Any]]) -> str:
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({c: ("" if isinstance(r[c], float) and math.isnan(r[c]) else
                             repr(r[c]) if isinstance(r[c], float) else r[c]) for c in columns})
    return buf.getvalue()


def load_results(out: str | Path) -> List[Dict[str, Any]]:
    """The results table of a run directory as a list of dicts (Parquet when present, else CSV)."""
    from beliefgate.eval.metrics import METRICS

    out = Path(out)
    parquet, csv_path = out / "results.parquet", out / "results.csv"
    if parquet.exists():
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            pq = None
        if pq is not None:
            try:
                return pq.read_table(parquet).to_pylist()
            except (OSError, pa.ArrowException) as exc:  # ArrowInvalid: empty or corrupt (a ValueError)
                raise RunError(f"{parquet}: not a readable Parquet file ({exc}); delete it to fall back on "
                               f"{csv_path.name}, or rerun `beliefgate eval run` into {out}") from None
    if not csv_path.exists():
        raise RunError(f"{out} has no results table (results.parquet / results.csv); run `beliefgate eval run` first")
    ints = {"seed", "seat", "horizon", "metrics_version"}
    floats = {"wall_s", *METRICS}
    rows = []
    from beliefgate.fileio import read_text

    text = read_text(csv_path, RunError, "results table")
    for n, raw in enumerate(csv.DictReader(io.StringIO(text, newline="")), start=2):
        try:
            rows.append({k: (int(v) if k in ints else (float(v) if v != "" else float("nan")) if k in floats
                             else v) for k, v in raw.items()})
        except (TypeError, ValueError) as exc:
            raise RunError(f"{csv_path}:{n}: malformed row: {exc}") from None
    return rows


# ------------------------------------------------------------------------------ the run
@dataclass
class RunSummary:
    """What one call of :func:`run_grid` did."""

    out: Path
    episodes: int
    skipped_done: int = 0
    ran: int = 0
    rescored: int = 0
    failed: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    rows: List[Dict[str, Any]] = field(default_factory=list)
    tables: List[Path] = field(default_factory=list)
    executor: str = ""
    wall_s: float = 0.0
    interrupted: bool = False

    @property
    def complete(self) -> bool:
        return len(self.rows) == self.episodes

    @property
    def fallbacks(self) -> Tuple[int, int]:
        """``(fallbacks, episodes with any)`` over the finished episodes (LLM and tree calls that
        the fallback answered; :mod:`beliefgate.planners.fallbacks`)."""
        counts = [float(r.get("fallbacks", 0.0)) for r in self.rows]
        counts = [c for c in counts if math.isfinite(c)]
        return int(sum(counts)), sum(1 for c in counts if c > 0)

    def to_dict(self) -> Dict[str, Any]:
        fallbacks, with_fallbacks = self.fallbacks
        return {"format": RUN_FORMAT, "out": str(self.out), "episodes": self.episodes,
                "skipped_done": self.skipped_done, "ran": self.ran, "rescored": self.rescored,
                "failed": self.failed, "notes": self.notes, "rows": len(self.rows),
                "tables": [str(p) for p in self.tables], "executor": self.executor,
                "wall_s": round(self.wall_s, 3), "interrupted": self.interrupted, "complete": self.complete,
                "fallbacks": fallbacks, "episodes_with_fallbacks": with_fallbacks,
                "version": beliefgate.__version__, "commit": git_commit()}


#: what a run directory holds (moved aside together when another grid replaces it)
#: the files a run directory holds, and with its folders every entry a grid's results are made of
RUN_DIR_FILES = ("grid.json", "run.json", "results.csv", "results.parquet")
RUN_DIR_ENTRIES = RUN_DIR_FILES + ("episodes", "reports")


def check_run_dir(out: str | Path, resolved: ResolvedGrid, force: bool = False) -> Optional[Path]:
    """Refuse to run ``resolved`` into a directory that holds another grid's results.

    Returns None when ``out`` is new or was made by this grid (same digest: a resume).
    Otherwise raises :class:`RunDirMismatchError`, or with ``force`` moves the old
    results (:data:`RUN_DIR_ENTRIES`) into ``out/superseded-<old digest>-<UTC time>/``
    (nothing is deleted) and returns that folder.
    """
    out = Path(out)
    path = out / "grid.json"
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        old, old_name = record.get("digest"), record.get("spec", {}).get("name")
    except (OSError, json.JSONDecodeError, AttributeError) as exc:
        old, old_name = None, f"unreadable grid.json: {exc}"
    new = resolved.spec.digest()
    if old == new:
        return None
    if not force:
        raise RunDirMismatchError(
            f"{out} holds the results of another grid ({old_name!r}, digest {old}); this grid "
            f"({resolved.spec.name!r}) has digest {new}. Use another --out, or --force to move the old results "
            f"aside into {out}/superseded-{old or 'unknown'}-<time>/")
    aside = out / f"superseded-{old or 'unknown'}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    n = 1
    while aside.exists():  # two replacements within one second
        aside = aside.with_name(f"{aside.name.split('~')[0]}~{n}")
        n += 1
    aside.mkdir()
    for name in RUN_DIR_ENTRIES:
        if (out / name).exists():
            os.replace(out / name, aside / name)
    return aside


def prepare_out(out: Path, resolved: ResolvedGrid) -> None:
    """Create ``out`` and record the resolved grid in ``out/grid.json``."""
    out.mkdir(parents=True, exist_ok=True)
    if not out.is_dir():
        raise RunError(f"{out} is not a directory")
    for name in RUN_DIR_FILES:
        if (out / name).is_dir():  # found now, not when the table is written after every episode
            raise RunError(f"{out / name} is a directory; the run writes a file there (move it away)")
    record = {"format": "beliefgate.grid-run/1", "spec": resolved.spec.canonical(),
              "digest": resolved.spec.digest(), "conditions": resolved.conditions,
              "skipped": resolved.skipped, "episodes": len(resolved.episodes),
              "version": beliefgate.__version__, "commit": git_commit()}
    atomic_write(out / "grid.json", (json.dumps(record, indent=1) + "\n").encode())


#: columns a results table must have for a report (identity of the episode and its reward)
REPORT_COLUMNS = ("agent", "layout", "partner", "group", "seat", "seed", "horizon", "reward")


def check_results(rows: List[Dict[str, Any]], record: Dict[str, Any], out: str | Path) -> Optional[str]:
    """Refuse a results table that is not this run directory's (rows of another grid, a cell twice,
    the core columns missing); return a one-line note when the run is incomplete (fewer episodes
    than its grid, or conditions without any), else ``None``."""
    missing = [c for c in REPORT_COLUMNS if rows and not any(c in r for r in rows)]
    if missing:
        raise RunError(f"{out}: the results table lacks the columns {', '.join(missing)}; rerun `beliefgate eval "
                       f"run` into it to rebuild the table")
    digest = record.get("digest")
    foreign = sorted({str(r.get("grid_digest")) for r in rows if r.get("grid_digest") not in (None, "", digest)})
    if digest and foreign:
        raise RunError(f"{out}: the results table holds rows of another grid (grid_digest {', '.join(foreign)}; "
                       f"this run directory's grid is {digest}); rerun `beliefgate eval run` into it to rebuild it")
    from beliefgate.validation import repeats

    twice = repeats(rows, key=lambda r: (r.get("agent"), r.get("layout"), r.get("partner"), r.get("seat"),
                                         r.get("seed"), r.get("horizon")))
    if twice:
        a, lay, p, seat, seed, _ = twice[0][0]
        raise RunError(f"{out}: the results table holds {len(twice)} episode(s) more than once (e.g. {a} + {p} on "
                       f"{lay}, seat {seat}, seed {seed}); rerun `beliefgate eval run` into it to rebuild it")
    expected = record.get("episodes")
    agents = {r.get("agent") for r in rows}
    from beliefgate.envs.domain import layout_key

    layouts = [layout_key(lay) for lay in (record.get("spec") or {}).get("layouts") or []]
    absent = [c for c in record.get("conditions") or ()  # a {layout} template is present through any layout
              if not any(c.replace("{layout}", lay) in agents for lay in layouts or [""]) and c not in agents]
    if (isinstance(expected, int) and len(rows) < expected) or absent:
        note = f"incomplete run: {len(rows)} of {expected} episodes"
        return note + (f"; no episode yet of {', '.join(absent)}" if absent else "")
    return None


def load_grid_record(out: str | Path) -> Dict[str, Any]:
    """``out/grid.json`` (the grid a run directory was made with)."""
    path = Path(out) / "grid.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        raise RunError(f"{out} is not a run directory (no grid.json); run `beliefgate eval run` first") from None
    except json.JSONDecodeError as exc:
        raise RunError(f"{path}: not valid JSON: {exc}") from None


def run_grid(grid: GridSpec | ResolvedGrid, out: str | Path, executor=None, progress: Optional[Progress] = None,
             report: Optional[Reporter] = None, api_key: Optional[str] = None,
             stop_after: Optional[int] = None, other_grid: str = "aside",
             memory: Optional[str | Path] = None) -> RunSummary:
    """Play every episode of ``grid`` not yet finished in ``out``; rebuild the results table.

    ``executor`` defaults to this process. ``progress(done, total, label)`` is called
    as episodes finish; ``report(line)`` gets one line per notable event (a corrupt
    log rerun, a re-scored log, a failed episode). ``api_key`` is given to LLM
    agents when the grid has ``llm`` settings. ``stop_after`` stops after that many
    played episodes (tests use it to simulate an interrupted run). When ``out`` holds
    another grid's results, ``other_grid="aside"`` (the default) moves them into
    ``out/superseded-*/`` and reports it, ``"refuse"`` raises :class:`RunDirMismatchError`
    (``beliefgate eval run`` refuses unless ``--force``); nothing is ever deleted. The run holds
    ``out``'s lock throughout (:func:`lock_run_dir`: another run into ``out`` is a :class:`RunLockedError`).
    ``memory`` (a store path, :mod:`beliefgate.agents.memory`): the episodes of every agent that keeps a
    gate are played with a partner memory, each (condition, layout, partner, seat, settings) sequence
    under its own key and in seed order (:func:`memory_waves`); the others as without.
    """
    started = time.perf_counter()
    resolved = grid if isinstance(grid, ResolvedGrid) else resolve_grid(grid)
    out = Path(out)
    if other_grid not in ("aside", "refuse"):
        raise RunError(f"other_grid must be 'aside' or 'refuse', got {other_grid!r}")
    if memory is not None:
        resolved = with_memory(resolved)
    with lock_run_dir(out):  # one run per directory, from before its start-up clean-up to the last table
        return _run_locked(resolved, out, executor, progress, report, api_key, stop_after, other_grid, started,
                           memory)


def _run_locked(resolved: ResolvedGrid, out: Path, executor, progress, report, api_key, stop_after, other_grid,
                started: float, memory=None) -> RunSummary:
    from beliefgate.eval.executors import InlineExecutor

    spec = resolved.spec
    aside = check_run_dir(out, resolved, force=other_grid == "aside")
    prepare_out(out, resolved)
    say = report or (lambda line: None)
    summary = RunSummary(out=out, episodes=len(resolved.episodes))
    if aside is not None:
        line = f"{out} held another grid's results: moved them to {aside}"
        summary.notes.append(line)
        say(line)
    for line in resolved.skipped:
        summary.notes.append(f"skipped {line}")
    for tmp in _remove_stale_temporaries(out):
        line = f"removed the partial write {tmp} of an interrupted run"
        summary.notes.append(line)
        say(line)

    states = [inspect_episode(out, ep) for ep in resolved.episodes]
    if memory is not None:  # a done episode whose memory is not in the store is replayed, with its sequence's later ones
        with_mem = [st.spec for st in states if st.spec.memory]
        summary.notes.append(f"partner memory {memory}: {len(with_mem)} episodes in "
                             f"{len({ep.sequence for ep in with_mem})} sequences, each in seed order")
        for line in check_memory_sequences(states, memory):
            summary.notes.append(line)
            say(line)
    rows: Dict[str, Dict[str, Any]] = {}
    for st in states:
        if st.status == "done":
            rows[st.spec.key] = st.row
            summary.skipped_done += 1
        elif st.status == "rescore":
            line = f"re-scoring {st.spec.log_name} ({st.reason})"
            summary.notes.append(line)
            say(line)
            rows[st.spec.key] = _rescore(out, st.spec)
            summary.rescored += 1
        elif st.reason.startswith("corrupt"):
            line = f"{st.reason}; deleting and rerunning {st.spec.label}"
            summary.notes.append(line)
            say(line)
            for name in (st.spec.log_name, st.spec.metrics_name):
                if (out / name).exists():
                    (out / name).unlink()

    todo = [st.spec for st in states if st.status == "run"]
    llm_settings = None
    if spec.llm is not None:
        llm_settings = {**spec.llm.model_dump(), "api_key": api_key or "not-needed"}
    tasks = [EpisodeTask(ep, llm_settings if ep.llm_model is not None else None, memory_use(ep, memory))
             for ep in todo]
    waves = memory_waves(tasks)
    executor = executor or InlineExecutor()
    summary.executor = executor.description
    if progress is not None:
        progress(0, len(tasks), f"{len(tasks)} episodes to play ({summary.skipped_done} already done)")
    try:
        done = 0
        broken: set = set()  # memory sequences with a failed episode: their later episodes wait for a rerun
        for wave in waves:
            wave = [t for t in wave if t.memory is None or t.memory.scope not in broken]
            for outcome in executor.map_unordered(play_episode, wave, lost_episode):
                done += 1
                if outcome.ok:
                    rows[outcome.spec.key] = _store(out, outcome)
                    summary.ran += 1
                else:
                    line = f"FAILED {outcome.spec.label}: {outcome.error}"
                    summary.failed.append(line)
                    say(line)
                    if outcome.spec.memory:
                        broken.add(outcome.spec.sequence)
                if progress is not None:
                    progress(done, len(tasks), outcome.spec.label)
                if stop_after is not None and done >= stop_after:
                    summary.interrupted = True
                    break
            if summary.interrupted:
                break
        if broken:
            line = (f"{len(broken)} memory sequence(s) stopped at a failed episode; their later seeds were not "
                    "played (rerun the same command)")
            summary.notes.append(line)
            say(line)
    except KeyboardInterrupt:
        summary.interrupted = True
        raise
    finally:
        ordered = [rows[ep.key] for ep in resolved.episodes if ep.key in rows]
        digest = spec.digest()
        summary.rows = [table_row(spec, digest, r) for r in ordered]
        summary.tables = write_results(out, summary.rows)
        summary.wall_s = time.perf_counter() - started
        atomic_write(out / "run.json", (json.dumps(summary.to_dict(), indent=1) + "\n").encode())
    return summary


# ------------------------------------------------------------------------------ partner memory
def with_memory(resolved: ResolvedGrid) -> ResolvedGrid:
    """``resolved`` with every episode of an agent that keeps a partner memory (a gate) marked
    ``memory`` (another episode key: it starts from the earlier seeds of its sequence)."""
    from dataclasses import replace

    from beliefgate.agents.registry import make_agent

    keeps: Dict[Tuple[str, Optional[str]], bool] = {}
    episodes = []
    for ep in resolved.episodes:
        probe = (ep.agent, ep.gate_json)
        if probe not in keeps:
            agent = make_agent(ep.agent, gate_params=ep.gate_params())
            keeps[probe] = bool(getattr(agent, "keeps_belief", False)) and callable(getattr(agent, "use_memory", None))
        episodes.append(replace(ep, memory=True) if keeps[probe] else ep)
    return ResolvedGrid(resolved.spec, episodes, list(resolved.skipped), resolved.llm_agents)


def memory_use(spec: EpisodeSpec, memory: Optional[str | Path]):
    """The :class:`~beliefgate.agents.memory.MemoryUse` of one grid episode: its sequence's key, its seed as order."""
    if memory is None or not spec.memory:
        return None
    from beliefgate.agents.memory import MemoryUse

    return MemoryUse(str(Path(memory).resolve()), scope=spec.sequence, order=spec.seed)


def memory_keys(spec: EpisodeSpec):
    """The store keys one memory episode writes: one per teammate seat."""
    from beliefgate.agents.memory import PartnerKey
    from beliefgate.eval.episode import partner_list, seat_names

    names = seat_names(spec.agent, partner_list(spec.partner), spec.seat)
    return [PartnerKey(n, spec.layout, s, spec.sequence) for s, n in enumerate(names) if s != spec.seat]


def check_memory_sequences(states: List[EpisodeState], memory: str | Path) -> List[str]:
    """Mark for replay every memory episode from the first one of its sequence (in seed order) that
    is to be played or whose commit the store lacks: a later seed started from the earlier ones'
    memory, so it is replayed after them. Creates the store when missing (its faults are raised
    here, before any episode). Returns one line per sequence replayed this way."""
    from beliefgate.agents.memory import MemoryStore

    lines = []
    sequences: Dict[str, List[EpisodeState]] = {}
    for st in states:
        if st.spec.memory:
            sequences.setdefault(st.spec.sequence, []).append(st)
    with MemoryStore(memory) as store:
        for scope, members in sequences.items():
            replay_from = None
            for st in sorted(members, key=lambda m: m.spec.seed):
                if replay_from is None:
                    if st.status == "run":
                        replay_from = st.spec.seed
                    elif not all(store.has_episode(k, st.spec.seed) for k in memory_keys(st.spec)):
                        replay_from = st.spec.seed
                        lines.append(f"memory store {memory} lacks {st.spec.label}: replaying its sequence from "
                                     f"seed {st.spec.seed}")
                if replay_from is not None and st.status != "run":
                    st.status, st.reason, st.row = "run", f"memory: its sequence is replayed from seed {replay_from}", None
    return lines


def memory_waves(tasks: List[EpisodeTask]) -> List[List[EpisodeTask]]:
    """The tasks in waves: wave ``i`` holds the ``i``-th episode (by seed) of every memory sequence, so
    the episodes of one sequence run one after the other in seed order, and different sequences in
    parallel; tasks without memory all go into the first wave."""
    sequences: Dict[str, List[EpisodeTask]] = {}
    plain = []
    for t in tasks:
        if t.memory is None:
            plain.append(t)
        else:
            sequences.setdefault(t.memory.scope, []).append(t)
    ordered = [sorted(ts, key=lambda t: t.spec.seed) for ts in sequences.values()]
    depth = max((len(ts) for ts in ordered), default=0)
    waves = [[ts[i] for ts in ordered if i < len(ts)] for i in range(depth)]
    if plain:
        waves = [plain + (waves[0] if waves else [])] + waves[1:]
    return waves


# ------------------------------------------------------------------------------ summaries
def summarize(rows: List[Dict[str, Any]], by: Sequence[str] = ("agent",),
              metrics: Sequence[str] = ("reward", "deliveries", "replans", "map_accuracy", "gap_rate", "comp3",
                                        "duplicate_rate", "intent_accuracy")) -> List[Dict[str, Any]]:
    """Mean of each metric per group of rows (NaN-skipping), groups in first-seen order, with episode counts."""
    import numpy as np

    groups: Dict[tuple, List[Dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in by), []).append(r)
    out = []
    for key, members in groups.items():
        entry: Dict[str, Any] = dict(zip(by, key))
        entry["episodes"] = len(members)
        for m in metrics:
            vals = np.array([r[m] for r in members], dtype=float)
            vals = vals[~np.isnan(vals)]
            entry[m] = float(vals.mean()) if vals.size else float("nan")
        out.append(entry)
    return out
