"""How the offline rule planner should use the posterior on ordinary calls (tuning seeds only).

Plays ``bayes-belief`` conditions with the rule planner's ``cover`` option set per variant and
prints each variant's pooled reward minus ``bayes-belief:no_belief`` (paired over layout,
partner and seed; 95% percentile bootstrap over the matched episodes, 4000 resamples, seed 0).
This chose ``RulePlannerConfig.cover = "none"`` (``beliefgate/planners/rule.py``). Use seeds
>= 1000 only; the reported seeds are 0-19.

    python docs/examples/results17/tune_cover.py --seeds 1000:1004 --partners bp --out runs/tune_cover_bp.json
    python docs/examples/results17/tune_cover.py --seeds 1000:1005 --partners scripted --out runs/tune_cover_scr.json

A variant is ``CONDITION`` with ``cover=MODE`` given to every ``RulePlanner`` the agent builds
(the agent module's ``RulePlanner`` is replaced in the worker process by a subclass with
these options; this is a tuning script, not an API). ``dish`` and ``onion`` restrict
``cover="map"`` to one pickup (the believed MAP of any other pickup is ignored).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np

LAYOUTS = ("cramped_room", "asymmetric_advantages", "forced_coordination", "counter_circuit", "coordination_ring")
BP = tuple(f"bp-g1-dish-{a}-eager-{b}" for a in ("hi", "lo") for b in ("hi", "lo")) + \
    tuple(f"bp-g2-onion-{a}-pot-{b}" for a in ("hi", "lo") for b in ("hi", "lo")) + \
    tuple(f"bp-g3-onion-{a}-stock-{b}" for a in ("hi", "lo") for b in ("hi", "lo"))
SCRIPTED = ("onion-sourcer", "plater", "server", "balanced", "switch-sourcer-to-plater", "switch-plater-to-sourcer")
#: name: (agent, cover mode, the one pickup cover is restricted to)
VARIANTS = {
    "nb": ("bayes-belief:no_belief", "none", None),
    "nr_map": ("bayes-belief:no_replan", "map", None),
    "nr_none": ("bayes-belief:no_replan", "none", None),
    "nr_dish": ("bayes-belief:no_replan", "map", "pickup_dish"),
    "nr_onion": ("bayes-belief:no_replan", "map", "pickup_onion"),
    "full_map": ("bayes-belief:full", "map", None),
    "full_none": ("bayes-belief:full", "none", None),
    "full_dish": ("bayes-belief:full", "map", "pickup_dish"),
}


def play(task):
    variant, layout, partner, seed = task
    import beliefgate.agents.planning as planning
    from beliefgate.eval.episode import run_episode
    from beliefgate.planners.rule import RulePlanner

    agent, cover, only = VARIANTS[variant]

    class Variant(RulePlanner):
        def __init__(self, **options):
            super().__init__(**{"cover": cover, **options})

        def choose(self, inp):
            b = inp.belief
            if only is not None and b is not None and b.map_skill.startswith("pickup") and b.map_skill != only:
                inp = dataclasses.replace(inp, belief=dataclasses.replace(b, map_skill="(ignored)"))
            return super().choose(inp)

    saved = planning.RulePlanner
    planning.RulePlanner = Variant
    try:
        summary = run_episode(layout, agent, partner, seed=seed, horizon=400).summary
    finally:
        planning.RulePlanner = saved
    return variant, layout, partner, seed, float(summary["reward"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1000:1004", help="START:STOP (stop excluded), >= 1000")
    ap.add_argument("--partners", default="bp", help="bp, scripted, or a comma-separated list")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--variants", default="nb,nr_map,nr_none,full_map,full_none")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="write every episode's reward here (JSON)")
    args = ap.parse_args()
    start, stop = (int(x) for x in args.seeds.split(":"))
    if start < 1000:
        raise SystemExit(f"--seeds {args.seeds}: tuning uses seeds >= 1000 only")
    partners = {"bp": BP, "scripted": SCRIPTED}.get(args.partners) or tuple(args.partners.split(","))
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or "nb" not in variants:
        raise SystemExit(f"--variants: unknown {unknown}" if unknown else "--variants must include nb (the baseline)")
    layouts = args.layouts.split(",")
    tasks = list(itertools.product(variants, layouts, partners, range(start, stop)))
    rewards = {}
    t0 = time.time()
    with mp.get_context("spawn").Pool(args.workers, maxtasksperchild=20) as pool:
        for variant, layout, partner, seed, reward in pool.imap_unordered(play, tasks):
            rewards[(variant, layout, partner, seed)] = reward
    print(f"{len(tasks)} episodes in {time.time() - t0:.0f} s; seeds {start}-{stop - 1}, partners {args.partners}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"config": vars(args) | {"out": str(args.out)},
                                        "episodes": [[*k, v] for k, v in sorted(rewards.items())]}))
    keys = sorted({k[1:] for k in rewards})
    for layout in layouts:
        ks = [k for k in keys if k[0] == layout]
        print(f"{layout:24s} " + "  ".join(f"{v} {np.mean([rewards[(v, *k)] for k in ks]):.1f}" for v in variants))
    rng = np.random.default_rng(0)
    print(f"{'variant':10s} {'reward':>7s}  minus nb [95% CI]")
    for v in variants:
        d = np.array([rewards[(v, *k)] - rewards[("nb", *k)] for k in keys])
        boot = [rng.choice(d, len(d)).mean() for _ in range(4000)]
        mean = np.mean([rewards[(v, *k)] for k in keys])
        print(f"{v:10s} {mean:7.1f}  {d.mean():+6.1f} [{np.percentile(boot, 2.5):+.1f}, {np.percentile(boot, 97.5):+.1f}]")


if __name__ == "__main__":
    main()
