"""Episode metrics computed from trajectory logs alone.

Each function documents its exact definition. The partner-belief quantities use a
*reference* gate replayed on the log (the same for every agent), so that agents
with and without a belief of their own are measured alike.
"""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from beliefgate.envs.trajlog import Trajectory
from beliefgate.eval.replay import ReplayResult, replay
from beliefgate.skills import load_builtin


def ego_skills(traj: Trajectory):
    """The ego's logged active skill per step (None when idle)."""
    seat = traj.header.seat
    return [row.skills[seat] for row in traj.steps]


def replans(traj: Trajectory) -> int:
    """Planner calls that interrupted a skill still running (the ego's final ``replans`` count)."""
    return int(traj.final.summary.get("replans", 0)) if traj.final else 0


def belief_action_gap_rate(traj: Trajectory, reference: Optional[ReplayResult] = None) -> float:
    """Share of decision points with a correct partner belief where the ego's skill is not complementary.

    Decision points: steps where the ego has an active skill and the partner's
    true skill is known. Of those, only steps where the reference gate's MAP
    equals the partner's true skill count (the belief was right). A gap is an
    ego skill that is not complementary to the partner's true skill (SPEC §2:
    stale, duplicate or non-complementary). NaN when there is no such step.
    """
    library = load_builtin("overcooked")
    ref = reference if reference is not None else replay(traj, partner=1 - traj.header.seat)
    gaps = total = 0
    for t, skill in enumerate(ego_skills(traj)):
        truth = ref.truth[t]
        if skill is None or truth < 0 or ref.map_skill[t] != truth:
            continue
        total += 1
        gaps += not library.is_complementary(skill, int(truth))
    return gaps / total if total else float("nan")


def episode_metrics(traj: Trajectory) -> Dict[str, float]:
    """Reward, deliveries, replans, partner-skill MAP accuracy and belief-action gap rate of one log."""
    ref = replay(traj, partner=1 - traj.header.seat)
    summary = traj.final.summary if traj.final else {}
    return {
        "reward": float(summary.get("reward", np.nan)),
        "deliveries": float(summary.get("deliveries", np.nan)),
        "replans": float(replans(traj)),
        "map_accuracy": ref.map_accuracy,
        "gap_rate": belief_action_gap_rate(traj, ref),
    }
