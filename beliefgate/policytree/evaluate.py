"""Play a tree (no LLM) over layouts x partners x seats x seeds and summarise with bootstrap CIs."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import numpy as np

from beliefgate.policytree.agent import close_sandboxes, parse_spec


def evaluate_tree(spec: str, layouts: Sequence[str], partners: Sequence[str], seeds: Iterable[int],
                  seats: Sequence[int] = (0,), horizon: int = 400,
                  progress: Optional[Callable[[int, int, str], None]] = None) -> List[Dict[str, Any]]:
    """One row per episode: reward, deliveries, partner-intent accuracy, tree errors, latency."""
    from beliefgate.eval.episode import run_episode
    from beliefgate.eval.metrics import partner_intent_accuracy

    parse_spec(spec)
    seeds = list(seeds)
    jobs = [(lay, p, seat, s) for lay in layouts for p in partners for seat in seats for s in seeds]
    rows = []
    try:
        for i, (layout, partner, seat, seed) in enumerate(jobs):
            if progress is not None:
                progress(i, len(jobs), f"{layout} {partner} seat {seat} seed {seed}")
            result = run_episode(layout, f"policy-tree:{spec}", partner, seed=seed, horizon=horizon, seat=seat)
            infos = [row.info[seat] for row in result.trajectory.steps]
            last = infos[-1] if infos else {}
            rows.append({
                "layout": result.summary["layout"], "partner": partner, "seat": seat, "seed": seed,
                "reward": float(result.summary["reward"]), "deliveries": result.summary["deliveries"],
                "intent_accuracy": partner_intent_accuracy(result.trajectory),
                "tree_errors": int(last.get("tree_errors", 0)), "not_executable": int(last.get("not_executable", 0)),
                "llm_calls": int(result.summary["llm_calls"]),
                "latency_us": [float(i["tree_us"]) for i in infos if i.get("tree_us") is not None],
            })
    finally:
        close_sandboxes()
    return rows


def summarize(rows: List[Dict[str, Any]], by: Sequence[str] = ("layout", "partner", "seat")) -> List[Dict[str, Any]]:
    """Mean reward with a 95% percentile-bootstrap CI per group, and pooled decision latency."""
    from beliefgate.eval.report import bootstrap_mean_ci

    groups: Dict[tuple, List[Dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in by), []).append(r)
    out = []
    for key, rs in groups.items():
        mean, lo, hi = bootstrap_mean_ci([r["reward"] for r in rs], name="/".join(map(str, key)))
        lat = np.concatenate([np.asarray(r["latency_us"], dtype=float) for r in rs]) if rs else np.zeros(0)
        ia = [r["intent_accuracy"] for r in rs if not np.isnan(r["intent_accuracy"])]
        out.append({**dict(zip(by, key)), "episodes": len(rs), "reward": mean, "ci_low": lo, "ci_high": hi,
                    "deliveries": float(np.mean([r["deliveries"] for r in rs])),
                    "intent_accuracy": float(np.mean(ia)) if ia else float("nan"),
                    "tree_errors": int(sum(r["tree_errors"] for r in rs)),
                    "not_executable_per_ep": float(np.mean([r["not_executable"] for r in rs])),
                    "llm_calls": int(sum(r["llm_calls"] for r in rs)),
                    "latency_p50_us": float(np.percentile(lat, 50)) if lat.size else float("nan"),
                    "latency_p99_us": float(np.percentile(lat, 99)) if lat.size else float("nan")})
    return out
