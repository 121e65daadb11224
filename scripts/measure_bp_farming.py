#!/usr/bin/env python
"""Can a behaviour-preference reward be farmed by a trivial loop?  A measurement on the real dynamics.

    python scripts/measure_bp_farming.py [--sp-curve runs/ppo/zoo/sp_cramped_room_seed0/curve.csv]

On ``v2/cramped_room`` one player (seat 1, starting at (1,1)) runs each loop for a 400-step episode
while the other stays:

* ``onion loop``: face the onion pile, take an onion, face the counter above, then put it down and
  take it back, again and again;
* ``plate loop``: the same with a plate from the plate pile.

Each loop's events are counted by :func:`beliefgate.rl.events.step_events` twice: with pickups from
counters counted (``counter_pickups=True``) and with pickups only from the piles (the rule the
trainer uses). With ``--sp-curve`` the last logged events per episode of a self-play run are printed
beside them (what a team that cooks does), and the weight above which the loop out-earns that
team's delivery reward.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

R, D, L, U, S, I = range(6)  # right, down, left, up, stay, interact
HORIZON = 400


def loop_events(plan, counter_pickups: bool):
    import jax
    import numpy as np
    from jaxmarl.environments.overcooked_v2 import OvercookedV2

    from beliefgate.rl.config import EVENTS
    from beliefgate.rl.events import step_events
    from beliefgate.rl.layouts import resolve_layout

    env = OvercookedV2(layout=resolve_layout("v2/cramped_room")[1], max_steps=HORIZON)
    static = jax.numpy.asarray(env.layout.static_objects)
    _, state = env.reset(jax.random.PRNGKey(0))

    def body(state, a1):
        _, nxt, *_ = env.step_env(jax.random.PRNGKey(1), state, {"agent_0": S, "agent_1": a1})
        return nxt, step_events(static, state, nxt, counter_pickups=counter_pickups)

    _, per_step = jax.jit(lambda s0, acts: jax.lax.scan(body, s0, acts))(state, jax.numpy.asarray(plan))
    return dict(zip(EVENTS, np.asarray(per_step).sum(0)[1].tolist()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sp-curve", type=Path, default=None, help="a self-play run's curve.csv")
    args = parser.parse_args(argv)
    loops = {"onion loop": [L, I, U] + [I] * (HORIZON - 3), "plate loop": [D, I, U] + [I] * (HORIZON - 3)}
    print(f"events per {HORIZON}-step episode of one player (v2/cramped_room)")
    print(f"{'loop':<12} {'pickups counted from':<22} ingredient_pickup plate_pickup counter_placement")
    for name, plan in loops.items():
        for counter in (True, False):
            ev = loop_events(plan, counter)
            print(f"{name:<12} {'piles and counters' if counter else 'piles only':<22} "
                  f"{ev['ingredient_pickup']:>17.0f} {ev['plate_pickup']:>12.0f} {ev['counter_placement']:>17.0f}")
    if args.sp_curve is not None:
        rows = [r for r in csv.DictReader(args.sp_curve.open()) if r["mean_return"]]
        last = rows[-1]
        ret = float(last["mean_return"])
        print(f"self-play team ({args.sp_curve}, update {last['update']}): return {ret:.1f}; per episode, both "
              f"players: ingredient_pickup {float(last['ingredient_pickup_per_episode']):.1f}, plate_pickup "
              f"{float(last['plate_pickup_per_episode']):.1f}, counter_placement "
              f"{float(last['counter_placement_per_episode']):.1f}")
        onion = loop_events(loops["onion loop"], True)["ingredient_pickup"]
        print(f"with counter pickups counted, the onion loop out-earns the team's delivery reward at an "
              f"ingredient_pickup weight above {ret / onion:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
