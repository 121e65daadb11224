"""PCM metrics from episode logs, and kappa recomputed from a logged decision.

Every OverForge decision is the ``pcm`` entry of the ego's step info (see
:mod:`beliefgate.agents.overforge.agent`). From those records of one trajectory:

* ``kappa_mean`` (kappa-bar), ``commit_rate``, ``depth_mean`` (rollout rounds used; 0 without
  rollouts or for a single-branch set), ``gap_mean`` (difference of the two largest posterior
  utility means; decisions with one branch have none), ``single_branch`` (share of decisions
  with one branch, where kappa is 1 by construction), ``decisions``, ``strategy_changes``;
* ``latency_p50_ms`` / ``latency_p99_ms``: wall time of a decision;
* ``abandoned`` (Sigma-minus) and ``llm_calls_per_step`` (c/s) from :mod:`beliefgate.eval.metrics`.

:func:`recompute_kappa` replays a record's evidence, in its logged order, through
:class:`beliefgate.beliefs.kappa.Kappa` with the logged parameters; :func:`check_record`
compares the result with the logged kappa / argmax probabilities / nucleus / commit.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import numpy as np

from beliefgate.beliefs.kappa import Judgment, Kappa, KappaInputError, KappaParams, Rollout, RolloutRound
from beliefgate.errors import InputError

PCM_METRICS = ("kappa_mean", "commit_rate", "depth_mean", "gap_mean", "single_branch", "decisions",
               "strategy_changes", "latency_p50_ms", "latency_p99_ms")


class PCMRecordError(InputError):
    """A logged decision record that cannot be replayed (missing field, unknown evidence kind)."""


def decision_records(traj) -> List[Dict[str, Any]]:
    """The ``pcm`` records of the ego of a :class:`~beliefgate.envs.trajlog.Trajectory`, in step order."""
    seat = traj.header.seat
    return [row.info[seat]["pcm"] for row in traj.steps if row.info[seat].get("pcm")]


def recompute_kappa(record: Dict[str, Any]) -> Kappa:
    """A :class:`Kappa` fed with the record's evidence in its logged order."""
    for key in ("branches", "evidence", "kappa_params"):
        if key not in record:
            raise PCMRecordError(f"decision record has no {key!r}")
    kappa = Kappa(record["branches"], KappaParams(**record["kappa_params"]))
    for ev in record["evidence"]:
        if "judge" in ev:
            left, right, y = ev["judge"]
            kappa.update(Judgment(left, right, int(y)))
        elif "round" in ev:
            depth = int(ev["round"])
            kappa.update(RolloutRound(tuple(Rollout(b, depth, float(s)) for b, s in ev["scores"].items())))
        else:
            raise PCMRecordError(f"unknown evidence entry {sorted(ev)!r} in a decision record")
    return kappa


def check_record(record: Dict[str, Any], tol: float = 1e-9) -> Optional[str]:
    """None when recomputing kappa gives the logged values, else what differs (also when the
    logged evidence no longer replays, e.g. a round extends a branch outside the recomputed
    nucleus; a malformed record still raises :class:`PCMRecordError`)."""
    try:
        kappa = recompute_kappa(record)
    except KappaInputError as exc:
        return f"the evidence does not replay: {exc}"
    if not math.isclose(kappa.kappa, record["kappa"], rel_tol=0.0, abs_tol=tol):
        return f"kappa {kappa.kappa!r} != logged {record['kappa']!r}"
    probs = np.asarray(list(kappa.info.argmax_probs))
    if np.max(np.abs(probs - np.asarray(record["argmax"]))) > tol:
        return "argmax probabilities differ"
    if list(kappa.nucleus) != list(record["nucleus"]):
        return f"nucleus {kappa.nucleus} != logged {record['nucleus']}"
    if kappa.commit != record["committed"] or kappa.best != record["best"]:
        return "commit / best differ"
    return None


def _mean(values) -> float:
    values = [float(v) for v in values if v is not None]
    return float(np.mean(values)) if values else float("nan")


def pcm_metrics(traj) -> Dict[str, float]:
    """The PCM columns of one trajectory (NaN where there is no decision)."""
    from beliefgate.eval.metrics import llm_calls_per_step, subtasks_abandoned

    recs = decision_records(traj)
    times = [r["time_ms"] for r in recs]
    last = traj.steps[-1].info[traj.header.seat] if traj.steps else {}
    out = {
        "kappa_mean": _mean(r["kappa"] for r in recs),
        "commit_rate": _mean(float(r["committed"]) for r in recs),
        "depth_mean": _mean(r["depth"] for r in recs),
        "gap_mean": _mean(r["gap"] for r in recs),
        "single_branch": _mean(float(len(r["branches"]) == 1) for r in recs),
        "decisions": float(len(recs)),
        "strategy_changes": float(last.get("strategy_changes", 0) or 0),
        "latency_p50_ms": float(np.percentile(times, 50)) if times else float("nan"),
        "latency_p99_ms": float(np.percentile(times, 99)) if times else float("nan"),
        "abandoned": float(subtasks_abandoned(traj)),
        "llm_calls_per_step": float(llm_calls_per_step(traj)),
    }
    return out


def pooled(records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Figure-16 ingredients pooled over decisions: kappa values, depths, gaps."""
    return {"kappa": [float(r["kappa"]) for r in records], "depth": [int(r["depth"]) for r in records],
            "gap": [float(r["gap"]) for r in records if r.get("gap") is not None],
            "time_ms": [float(r["time_ms"]) for r in records]}
