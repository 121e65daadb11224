"""The offline demo: one scripted episode per layout, the gate reading the partner."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

from beliefgate.envs.overcooked.layouts import LAYOUTS
from beliefgate.eval.episode import run_episode
from beliefgate.eval.replay import replay


def run_demo(seed: int = 0, horizon: int = 400, partner: str = "switch-sourcer-to-plater",
             out_dir: Optional[Path] = None, progress=None, params=None) -> List[Dict[str, object]]:
    """Play ``balanced`` with ``partner`` on every layout and replay the partner through the gate."""
    rows = []
    for i, layout in enumerate(LAYOUTS):
        who = partner  # on a split floor (forced_coordination) every scripted partner passes over counters
        log = (Path(out_dir) / f"{layout}_seed{seed}.jsonl") if out_dir is not None else None
        if progress is not None:
            progress(i, len(LAYOUTS), layout)
        result = run_episode(layout, "balanced", who, seed=seed, horizon=horizon, seat=0, log_path=log)
        rep = replay(result.trajectory, params, partner=1)
        known = rep.truth >= 0
        rows.append({
            "layout": layout, "partner": who, "deliveries": result.summary["deliveries"],
            "reward": result.summary["reward"], "map_accuracy": rep.map_accuracy,
            "mean_confidence": float(rep.confidence[known].mean()) if known.any() else float("nan"),
            "interrupts": int(rep.interrupt.sum()), "changepoints": int(rep.changepoint.sum()),
            "log": str(log) if log else "-",
        })
    return rows


AGENT_COMPARISON = ("bayes-belief", "bayes-belief:no_replan", "periodic-10")
SWITCHERS = ("switch-sourcer-to-plater", "switch-plater-to-sourcer")


def compare_agents(layout: str = "cramped_room", agents=AGENT_COMPARISON, partners=SWITCHERS,
                   seeds=range(3), horizon: int = 400, progress=None) -> List[Dict[str, object]]:
    """Offline agents against role-switching partners: mean metrics per agent over partners x seeds."""
    import numpy as np

    from beliefgate.eval.metrics import episode_metrics

    jobs = [(a, p, s) for a in agents for p in partners for s in seeds]
    per_agent: Dict[str, List[Dict[str, float]]] = {a: [] for a in agents}
    for i, (agent, partner, seed) in enumerate(jobs):
        if progress is not None:
            progress(i, len(jobs), f"{agent} + {partner} (seed {seed})")
        traj = run_episode(layout, agent, partner, seed=seed, horizon=horizon).trajectory
        per_agent[agent].append(episode_metrics(traj))
    rows = []
    for agent, metrics in per_agent.items():
        row = {"agent": agent, "episodes": len(metrics)}
        for key in ("reward", "deliveries", "replans", "map_accuracy", "gap_rate"):
            row[key] = float(np.nanmean([m[key] for m in metrics]))
        rows.append(row)
    return rows
