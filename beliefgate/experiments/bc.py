"""The behaviour-cloned human proxy at play: its reward with a scripted partner (``beliefgate eval bc``).

A driver: it plays episodes (:mod:`beliefgate.eval.episode`) with the agent of
:mod:`beliefgate.envs.overcooked.bc`, so it sits above both.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from beliefgate.envs.overcooked.layouts import resolve_layout
from beliefgate.errors import InputError


def evaluate_play(layout: str, partner: str = "balanced", episodes: int = 5, horizon: int = 400,
                  seed: int = 0, ego: Optional[str] = None) -> Dict[str, Any]:
    """Reward of ``bc:<layout>`` (or ``ego``) with a scripted partner over seeds ``seed .. seed+episodes-1``.

    The BC agent plays seat 0 on even seeds and seat 1 on odd ones. Rewards are the
    simulator's (20 per soup).
    """
    from beliefgate.eval.episode import run_episode

    if episodes < 1 or horizon < 1:
        raise InputError(f"episodes and horizon must be >= 1, got {episodes} and {horizon}")
    layout = resolve_layout(layout)
    ego = ego or f"bc:{layout}"
    rewards, deliveries = [], []
    for s in range(seed, seed + episodes):
        res = run_episode(layout, ego, partner, seed=s, horizon=horizon, seat=s % 2)
        rewards.append(float(res.summary["reward"]))
        deliveries.append(int(res.summary["deliveries"]))
    r = np.asarray(rewards)
    return {"layout": layout, "ego": ego, "partner": partner, "episodes": episodes, "horizon": horizon,
            "seeds": [seed, seed + episodes - 1], "reward_mean": float(r.mean()),
            "reward_sd": float(r.std(ddof=1)) if episodes > 1 else 0.0, "rewards": rewards,
            "deliveries_mean": float(np.mean(deliveries))}
