"""Domain benchmark: adapter vs the raw `overcooked` env, and controller cost per step.

Both are measured in the same process on the same random joint actions:

* raw:      ``OvercookedEnv.step`` alone,
* adapter:  ``OvercookedAdapter.step`` (raw step + symbolic state + event check),
* adapter + observer: also infers the partner's action and evaluates the likelihood
  controller for all six skills (what ``Gate.observe`` costs on top of the env).

Usage: python benchmarks/bench_domain.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

import numpy as np


def _time_raw(layout, actions):
    from beliefgate.envs.overcooked.adapter import joint_action_tuple, raw_env

    env = raw_env(layout, horizon=len(actions) + 1)
    joint = [joint_action_tuple(a) for a in actions]
    t0 = time.perf_counter()
    for j in joint:
        env.step(j)
    return time.perf_counter() - t0


def _time_adapter(layout, actions):
    from beliefgate.envs.overcooked.adapter import OvercookedAdapter

    env = OvercookedAdapter(layout, horizon=len(actions) + 1)
    env.reset()
    t0 = time.perf_counter()
    for a in actions:
        env.step(a)
    return time.perf_counter() - t0


def _time_controller(layout, n):
    from beliefgate.eval.episode import run_episode
    from beliefgate.envs.overcooked.controller import controller_for
    from beliefgate.envs.overcooked.observer import OvercookedObserver

    traj = run_episode(layout, "balanced", "balanced", seed=0, horizon=n).trajectory
    states = traj.states()
    ctrl = controller_for(layout)
    obs = OvercookedObserver(layout)
    t0 = time.perf_counter()
    for s in states[:-1]:
        ctrl.logprobs(s, 1, 2.0, 0.1)
    t_ctrl = (time.perf_counter() - t0) / (len(states) - 1)
    t0 = time.perf_counter()
    for s0, s1 in zip(states[:-1], states[1:]):
        obs.evidence(s0, s1)
    t_obs = (time.perf_counter() - t0) / (len(states) - 1)
    return t_ctrl, t_obs


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    from beliefgate.envs.overcooked.layouts import LAYOUTS

    steps = 300 if args.quick else 5000
    rng = np.random.default_rng(0)
    rows = []
    for layout in LAYOUTS:
        actions = [[int(x) for x in rng.integers(0, 6, 2)] for _ in range(steps)]
        _time_raw(layout, actions[:50])
        _time_adapter(layout, actions[:50])  # warm caches
        raw = min(_time_raw(layout, actions) for _ in range(2))
        ada = min(_time_adapter(layout, actions) for _ in range(2))
        t_ctrl, t_obs = _time_controller(layout, 100 if args.quick else 400)
        rows.append({
            "layout": layout, "raw_steps_per_s": steps / raw, "adapter_steps_per_s": steps / ada,
            "adapter_over_raw": (steps / ada) / (steps / raw),
            "controller_us_per_step": t_ctrl * 1e6, "observer_us_per_step": t_obs * 1e6,
        })
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"Overcooked adapter vs raw env ({steps} random steps) and controller cost")
        for col in ("layout", "raw steps/s", "adapter steps/s", "adapter/raw", "controller us/step (6 skills)",
                    "observer us/step"):
            table.add_column(col, justify="right")
        for r in rows:
            table.add_row(r["layout"], f"{r['raw_steps_per_s']:.0f}", f"{r['adapter_steps_per_s']:.0f}",
                          f"{r['adapter_over_raw']:.2f}", f"{r['controller_us_per_step']:.1f}",
                          f"{r['observer_us_per_step']:.1f}")
        Console().print(table)
    return {"rows": rows}


if __name__ == "__main__":
    main()
