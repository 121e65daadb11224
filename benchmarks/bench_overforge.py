"""OverForge benchmark: decision latency of the PCM and the wall time of a 400-step episode.

Measured against ``bayes-belief:full`` (the rule planner + gate) on the same layout, partner and
seed, in this process. Reports the decision latency p50 / p99 of every arm (from the decision
records the agent logs, ``time_ms``), the imagined steps per decision, and the episode wall
time. Targets from the issue (not asserted): offline decision p50 <= 100 ms on one core, a
400-step offline episode <= 20 s.

Usage: python benchmarks/bench_overforge.py [--quick] [--json] [--layout L] [--partner P]
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import numpy as np


def _episode(layout, agent, partner, horizon, seed):
    from beliefgate.eval.pcm import decision_records
    from beliefgate.eval.episode import run_episode

    t0 = time.perf_counter()
    result = run_episode(layout, agent, partner, seed=seed, horizon=horizon)
    wall = time.perf_counter() - t0
    recs = decision_records(result.trajectory) if agent.startswith("overforge") else []
    times = [r["time_ms"] for r in recs]
    return {
        "agent": agent, "layout": layout, "partner": partner, "horizon": horizon, "seed": seed,
        "reward": result.summary["reward"], "episode_s": round(wall, 2), "decisions": len(recs),
        "decision_p50_ms": round(float(np.percentile(times, 50)), 1) if times else None,
        "decision_p99_ms": round(float(np.percentile(times, 99)), 1) if times else None,
        "kappa_mean": round(float(np.mean([r["kappa"] for r in recs])), 3) if recs else None,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100-step episodes")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--layout", default="cramped_room")
    ap.add_argument("--partner", default="balanced")
    ap.add_argument("--seed", type=int, default=1000)
    args = ap.parse_args(argv)
    horizon = 100 if args.quick else 400
    arms = ["bayes-belief:full", "overforge:-rollouts", "overforge:-belief", "overforge"]
    rows = [_episode(args.layout, a, args.partner, horizon, args.seed) for a in arms]
    if args.json:
        print(json.dumps({"benchmark": "overforge", "cpu_count": os.cpu_count(), "load": os.getloadavg(),
                          "rows": rows}, indent=1))
        return 0
    print(f"OverForge decisions, {args.layout} x {args.partner}, {horizon} steps, seed {args.seed} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    print(f"{'agent':<22}{'reward':>8}{'episode s':>11}{'decisions':>11}{'p50 ms':>9}{'p99 ms':>9}{'kappa':>8}")
    for r in rows:
        def fmt(v, w):
            return f"{'-' if v is None else v:>{w}}"
        print(f"{r['agent']:<22}{r['reward']:>8.0f}{r['episode_s']:>11.2f}{r['decisions']:>11}"
              f"{fmt(r['decision_p50_ms'], 9)}{fmt(r['decision_p99_ms'], 9)}{fmt(r['kappa_mean'], 8)}")
    print("targets (issue, not asserted): decision p50 <= 100 ms on one core; 400-step episode <= 20 s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
