"""PCM metrics from episode logs, and kappa recomputed from a logged decision.

Every OverForge decision is the ``pcm`` entry of the ego's step info, written and read back by
its typed record, :class:`beliefgate.agents.overforge.record.PCMDecision` (see
:mod:`beliefgate.agents.overforge.agent`). From those records of one trajectory:

* ``kappa_mean`` (kappa-bar), ``commit_rate``, ``depth_mean`` (rollout rounds used; 0 without
  rollouts or for a single-branch set), ``gap_mean`` (difference of the two largest posterior
  utility means; decisions with one branch have none), ``single_branch`` (share of decisions
  with one branch, where kappa is 1 by construction), ``decisions``, ``strategy_changes``;
* ``latency_p50_ms`` / ``latency_p99_ms``: wall time of a decision;
* ``abandoned`` (Sigma-minus) and ``llm_calls_per_step`` (c/s) from :mod:`beliefgate.eval.metrics`.

:func:`recompute_kappa` replays a record's evidence (kappa's own evidence records), in its
logged order, through :class:`beliefgate.beliefs.kappa.Kappa` with the logged parameters
(:meth:`PCMDecision.replay`); :func:`check_record` compares the result with the logged kappa /
argmax probabilities / nucleus / commit (:meth:`PCMDecision.check`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np

from beliefgate.agents.overforge.record import PCMDecision, PCMRecordError
from beliefgate.beliefs.kappa import Kappa

PCM_METRICS = ("kappa_mean", "commit_rate", "depth_mean", "gap_mean", "single_branch", "decisions",
               "strategy_changes", "latency_p50_ms", "latency_p99_ms")

#: a decision record: the typed one, or its logged form
Record = Union[PCMDecision, Mapping[str, Any]]


def decision_records(traj) -> List[Dict[str, Any]]:
    """The logged ``pcm`` entries of the ego of a :class:`~beliefgate.envs.trajlog.Trajectory`, in
    step order (plain dicts; :func:`decisions` parses them)."""
    seat = traj.header.seat
    return [row.info[seat]["pcm"] for row in traj.steps if row.info[seat].get("pcm")]


def decisions(traj) -> List[PCMDecision]:
    """The ego's decisions of a trajectory, in step order, each parsed by :meth:`PCMDecision.from_log`."""
    return [PCMDecision.from_log(r) for r in decision_records(traj)]


def recompute_kappa(record: Record) -> Kappa:
    """A :class:`Kappa` fed with the record's evidence in its logged order (a malformed record:
    :class:`PCMRecordError`)."""
    return PCMDecision.from_log(record).replay()


def check_record(record: Record, tol: float = 1e-9) -> Optional[str]:
    """None when recomputing kappa gives the logged values, else what differs (also when the
    logged evidence no longer replays, e.g. a round extends a branch outside the recomputed
    nucleus; a malformed record still raises :class:`PCMRecordError`)."""
    return PCMDecision.from_log(record).check(tol)


def _mean(values) -> float:
    values = [float(v) for v in values if v is not None]
    return float(np.mean(values)) if values else float("nan")


def pcm_metrics(traj) -> Dict[str, float]:
    """The PCM columns of one trajectory (NaN where there is no decision)."""
    from beliefgate.eval.metrics import llm_calls_per_step, subtasks_abandoned

    recs = decisions(traj)
    times = [r.time_ms for r in recs]
    last = traj.steps[-1].info[traj.header.seat] if traj.steps else {}
    out = {
        "kappa_mean": _mean(r.kappa for r in recs),
        "commit_rate": _mean(float(r.committed) for r in recs),
        "depth_mean": _mean(r.depth for r in recs),
        "gap_mean": _mean(r.gap for r in recs),
        "single_branch": _mean(float(len(r.branches) == 1) for r in recs),
        "decisions": float(len(recs)),
        "strategy_changes": float(last.get("strategy_changes", 0) or 0),
        "latency_p50_ms": float(np.percentile(times, 50)) if times else float("nan"),
        "latency_p99_ms": float(np.percentile(times, 99)) if times else float("nan"),
        "abandoned": float(subtasks_abandoned(traj)),
        "llm_calls_per_step": float(llm_calls_per_step(traj)),
    }
    return out


def pooled(records: List[Record]) -> Dict[str, Any]:
    """Figure-16 ingredients pooled over decisions: kappa values, depths, gaps."""
    recs = [PCMDecision.from_log(r) for r in records]
    return {"kappa": [r.kappa for r in recs], "depth": [r.depth for r in recs],
            "gap": [r.gap for r in recs if r.gap is not None], "time_ms": [r.time_ms for r in recs]}


__all__ = ["PCM_METRICS", "PCMRecordError", "check_record", "decision_records", "decisions", "pcm_metrics",
           "pooled", "recompute_kappa"]
