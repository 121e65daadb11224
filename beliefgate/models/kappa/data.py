"""Kappa's evidence as data: the checks every piece passes, and the decisions format.

The checks (:func:`check_branch_names`, :func:`branch_index`, :func:`judgment_outcome`,
:func:`rollout_depth`, :func:`rollout_score`) are the one definition of a valid decision:
the online kappa (:mod:`beliefgate.beliefs.kappa`) calls them on every update and
:func:`parse_decision` on every record a fit reads, so a record the fit accepts is one the
online kappa accepts. They raise the :class:`~beliefgate.models.kappa.errors.KappaInputError`
subclasses naming the field.

Decisions JSONL (one decision per line; ``docs/kappa.md``)::

    {"decision": "ep3-t194", "branches": ["g0:interact", "g0:up", "g1:interact"],
     "judgments": [{"left": "g0:interact", "right": "g0:up", "y": 1}, ...],
     "rollouts": [{"branch": "g1:interact", "depth": 2, "score": 0.4}, ...]}

``branches`` (>= 1 distinct names) is required; ``judgments`` and ``rollouts`` default
to empty; other keys (``kappa``, ``best``, ``true_utilities``, ...) are kept as metadata.
:meth:`beliefgate.beliefs.kappa.Kappa.to_record` writes this format.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Iterable, List, NamedTuple, Optional, Sequence, Union

import numpy as np

from beliefgate.fileio import DataSyntaxError, parse_data
from beliefgate.models.kappa.errors import (
    BranchNameError,
    DepthError,
    DuplicateBranchError,
    JudgmentValueError,
    KappaDataError,
    KappaInputError,
    NoBranchError,
    NonFiniteScoreError,
    TooManyBranchesError,
    UnknownBranchError,
)
from beliefgate.limits import MAX_BRANCHES, check_count

#: largest magnitude of a rollout score, everywhere a score enters (the API, the service, the
#: decisions a fit reads). Utilities far beyond it only lose float64 (and float32) precision:
#: the importance weights of the argmax rule cancel terms of size score^2 / tau^2.
SCORE_BOUND = 1e9
#: the bound as messages show it: "[-1e9, 1e9]"
SCORE_RANGE = f"[-{SCORE_BOUND:.0e}, {SCORE_BOUND:.0e}]".replace("e+0", "e")
#: largest rollout depth (a rollout's variance is sigma_r^2 / depth: at 10^4 steps it is already
#: 10^-4 of one step's; a 42-digit depth overflowed float32 in the fit, "internal error")
MAX_DEPTH = 10_000


# --------------------------------------------------------------------------- checks of one piece


def check_branch_names(branches) -> tuple:
    """``branches`` as a tuple of at least one distinct non-empty name, or
    :class:`BranchNameError` / :class:`NoBranchError` / :class:`DuplicateBranchError` (field ``branches``)."""
    if isinstance(branches, (str, bytes)):
        raise BranchNameError(f"branches must be a sequence of names, got the string {branches!r}", "branches")
    try:
        names = list(branches)
    except TypeError:
        raise BranchNameError(f"branches must be a sequence of names, got {type(branches).__name__}",
                              "branches") from None
    if len(names) < 1:
        raise NoBranchError("a decision needs at least one branch, got none", "branches")
    check_count(len(names), MAX_BRANCHES, f"{len(names)} branches", TooManyBranchesError, field="branches")
    for n in names:
        if not isinstance(n, str) or not n:
            raise BranchNameError(f"branch names must be non-empty strings, got {n!r}", "branches")
    seen = set()
    for n in names:
        if n in seen:
            raise DuplicateBranchError(f"branch name {n!r} appears twice in {names!r}", "branches")
        seen.add(n)
    return tuple(names)


def branch_index(state, ref, field: str) -> int:
    """The index of branch ``ref`` (a name, or an index in range) among ``state.names`` (a
    :class:`~beliefgate.beliefs.kappa.KappaState` or anything with the decision's ``names``);
    :class:`UnknownBranchError` naming ``field`` otherwise."""
    names = state.names
    if isinstance(ref, str):
        try:
            return names.index(ref)
        except ValueError:
            raise UnknownBranchError(f"{field} {ref!r} is not a branch of this decision (branches: "
                                     f"{list(names)})", field) from None
    if isinstance(ref, (bool, np.bool_)) or not isinstance(ref, (int, np.integer)):
        raise UnknownBranchError(f"{field} must be a branch name or index, got {ref!r}", field)
    if not 0 <= int(ref) < len(names):
        raise UnknownBranchError(f"{field} index {int(ref)} outside [0, {len(names)})", field)
    return int(ref)


def judgment_outcome(y) -> int:
    """A judgment's ``y`` as 0 or 1 (a bool is accepted); :class:`JudgmentValueError` otherwise."""
    if isinstance(y, (bool, np.bool_)):
        return int(y)
    if isinstance(y, (int, np.integer)) and int(y) in (0, 1):
        return int(y)
    raise JudgmentValueError(f"judgment y must be 0 or 1, got {y!r}", "y")


def rollout_depth(depth) -> int:
    """A rollout's depth as an integer in ``1..MAX_DEPTH``; :class:`DepthError` otherwise."""
    if isinstance(depth, (bool, np.bool_)) or not isinstance(depth, (int, np.integer)) or \
            not 1 <= int(depth) <= MAX_DEPTH:
        raise DepthError(f"rollout depth must be an integer in 1..{MAX_DEPTH}, got {depth!r}", "depth")
    return int(depth)


def rollout_score(score) -> float:
    """A rollout's score as a finite float within :data:`SCORE_RANGE`; :class:`NonFiniteScoreError` otherwise."""
    if isinstance(score, (bool, np.bool_)) or not isinstance(score, (int, float, np.integer, np.floating)):
        raise NonFiniteScoreError(f"rollout score must be a finite number, got {score!r}", "score")
    value = float(score)
    if not math.isfinite(value):
        raise NonFiniteScoreError(f"rollout score must be finite, got {value!r}", "score")
    if abs(value) > SCORE_BOUND:
        raise NonFiniteScoreError(f"rollout score must lie in {SCORE_RANGE}, got {value!r}", "score")
    return value


# --------------------------------------------------------------------------- the model's arrays


class KappaData(NamedTuple):
    """Flattened evidence of ``N`` decisions (a pytree of arrays; ``B`` branches in all).

    ``branch_decision[B]``: decision of each branch; judgments ``j_left``, ``j_right``
    (global branch indices), ``j_y`` (1: left judged better) and ``j_mask``; rollouts
    ``r_branch``, ``r_depth``, ``r_score``, ``r_mask``. Masked-out entries are padding.
    """

    branch_decision: Any
    j_left: Any
    j_right: Any
    j_y: Any
    j_mask: Any
    r_branch: Any
    r_depth: Any
    r_score: Any
    r_mask: Any

    @property
    def num_branches(self) -> int:
        return int(np.shape(self.branch_decision)[0])


def evidence_data(sets: Sequence[tuple]) -> KappaData:
    """:class:`KappaData` of several independent decisions given as ``(K, judgments, rollouts)``
    with ``judgments`` = ``[(b, c, y)]`` and ``rollouts`` = ``[(b, depth, score)]`` (branch indices)."""
    bd, jl, jr, jy, rb, rd, rs = [], [], [], [], [], [], []
    offset = 0
    for n, (k, judgments, rollouts) in enumerate(sets):
        bd.extend([n] * int(k))
        for b, c, y in judgments:
            jl.append(offset + int(b))
            jr.append(offset + int(c))
            jy.append(int(y))
        for b, d, r in rollouts:
            rb.append(offset + int(b))
            rd.append(float(d))
            rs.append(float(r))
        offset += int(k)
    return KappaData(np.asarray(bd, np.int32), np.asarray(jl, np.int32), np.asarray(jr, np.int32),
                     np.asarray(jy, np.int32), np.ones(len(jl), bool), np.asarray(rb, np.int32),
                     np.asarray(rd, np.float64), np.asarray(rs, np.float64), np.ones(len(rb), bool))


class Decisions(NamedTuple):
    """Parsed decisions: the model arrays plus what identifies each decision."""

    data: KappaData
    branches: List[List[str]]
    ids: List[str]
    meta: List[dict]
    sources: List[str]

    @property
    def num_decisions(self) -> int:
        return len(self.branches)

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for name in KappaData._fields:
            h.update(np.ascontiguousarray(np.asarray(getattr(self.data, name), np.float64)).tobytes())
        return h.hexdigest()[:16]


# --------------------------------------------------------------------------- decision records


class _Names(NamedTuple):
    """What :func:`branch_index` reads of a state: the decision's branch names."""

    names: tuple


def parse_decision(record: Any, where: str = "record") -> tuple[list, list, list, dict]:
    """Validate one decision record: ``(branches, judgments [(b, c, y)], rollouts [(b, d, r)], meta)``.

    Uses the online kappa's own checks, so a record the fit accepts is one
    :class:`~beliefgate.beliefs.kappa.Kappa` accepts. Raises :class:`KappaDataError`.
    """
    if not isinstance(record, dict):
        raise KappaDataError(f"{where}: a decision must be a JSON object, got {type(record).__name__}")
    if "branches" not in record:
        if record.get("kind") in ("header", "step", "final"):
            raise KappaDataError(f"{where}: a trajectory log ({record['kind']!r} record), not a kappa decisions "
                                 "file; fit the skill model on it with `beliefgate fit LOG` (without --model kappa)")
        raise KappaDataError(f"{where}: missing 'branches'")
    try:
        names = check_branch_names(record["branches"])
        state = _Names(names)
        judgments, rollouts = [], []
        for i, j in enumerate(_list(record.get("judgments", []), "judgments", where)):
            if not isinstance(j, dict) or set(j) - {"left", "right", "y"} or len(j) != 3:
                raise KappaDataError(f"{where}: judgments[{i}] must be {{\"left\", \"right\", \"y\"}}, got {j!r}")
            b, c = branch_index(state, j["left"], "left"), branch_index(state, j["right"], "right")
            if b == c:
                raise KappaDataError(f"{where}: judgments[{i}] judges {names[b]!r} against itself")
            judgments.append((b, c, judgment_outcome(j["y"])))
        for i, r in enumerate(_list(record.get("rollouts", []), "rollouts", where)):
            if not isinstance(r, dict) or set(r) - {"branch", "depth", "score"} or len(r) != 3:
                raise KappaDataError(f"{where}: rollouts[{i}] must be {{\"branch\", \"depth\", \"score\"}}, "
                                     f"got {r!r}")
            rollouts.append((branch_index(state, r["branch"], "branch"), rollout_depth(r["depth"]),
                             rollout_score(r["score"])))
    except KappaInputError as exc:
        raise KappaDataError(f"{where}: {exc}") from None
    meta = {k: v for k, v in record.items() if k not in ("branches", "judgments", "rollouts")}
    return list(names), judgments, rollouts, meta


def _list(value, name: str, where: str) -> list:
    if not isinstance(value, list):
        raise KappaDataError(f"{where}: '{name}' must be a list, got {type(value).__name__}")
    return value


def decisions_from_records(records: Sequence[Any], sources: Optional[Sequence[str]] = None,
                           where: Optional[Sequence[str]] = None) -> Decisions:
    """Build :class:`Decisions` from decision records (dicts of the JSONL format)."""
    if not records:
        raise KappaDataError("no decision to fit (the input holds no record)")
    bd, jl, jr, jy, rb, rd, rs = [], [], [], [], [], [], []
    branches, ids, meta = [], [], []
    offset = 0
    for n, rec in enumerate(records):
        names, judgments, rollouts, m = parse_decision(rec, where[n] if where else f"record {n}")
        branches.append(names)
        ids.append(str(m.get("decision", n)))
        meta.append(m)
        bd.extend([n] * len(names))
        for b, c, y in judgments:
            jl.append(offset + b)
            jr.append(offset + c)
            jy.append(y)
        for b, d, r in rollouts:
            rb.append(offset + b)
            rd.append(d)
            rs.append(r)
        offset += len(names)
    data = KappaData(
        branch_decision=np.asarray(bd, np.int32),
        j_left=np.asarray(jl, np.int32), j_right=np.asarray(jr, np.int32), j_y=np.asarray(jy, np.int32),
        j_mask=np.ones(len(jl), bool),
        r_branch=np.asarray(rb, np.int32), r_depth=np.asarray(rd, np.float64), r_score=np.asarray(rs, np.float64),
        r_mask=np.ones(len(rb), bool),
    )
    return Decisions(data, branches, ids, meta, list(sources or []))


def read_decisions(paths: Union[str, Path, Sequence[Union[str, Path]]]) -> Decisions:
    """Read decisions JSONL files (blank lines skipped); errors name ``file:line``."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    records, where = [], []
    for path in paths:
        path = Path(path)
        try:
            # lines end at "\n" only: str.splitlines() also cut at U+2028, NEL and \x1c-\x1e, which JSON
            # strings may hold (a branch name written with ensure_ascii=False)
            lines = path.read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise KappaDataError(f"{path}: cannot read ({exc})") from None
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(parse_data(line, "json"))  # a key given twice is refused, not "last wins"
            except DataSyntaxError as exc:
                raise KappaDataError(f"{path}:{i}: not JSON ({exc})") from None
            where.append(f"{path}:{i}")
    if not records:
        raise KappaDataError(f"{', '.join(str(p) for p in paths)}: no decision records")
    return decisions_from_records(records, [str(p) for p in paths], where)


def write_decisions(records: Iterable[dict], path: Union[str, Path]) -> Path:
    """Write decision records as JSONL; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, allow_nan=False) + "\n")
    return path


__all__ = [
    "SCORE_BOUND",
    "SCORE_RANGE",
    "MAX_DEPTH",
    "check_branch_names",
    "branch_index",
    "judgment_outcome",
    "rollout_depth",
    "rollout_score",
    "KappaData",
    "evidence_data",
    "Decisions",
    "parse_decision",
    "decisions_from_records",
    "read_decisions",
    "write_decisions",
]
