"""Does the belief change OverForge's decisions? Every decision searched twice.

    python docs/examples/results16/belief_counterfactual.py --seeds 1000,1001 --horizon 400 \
        --workers 2 --out runs/counterfactual16.jsonl

Plays ``overforge`` (the agent as shipped: its rollouts' partner is played by the belief)
against the scripted population on the five classic layouts, seat 0. At each decision the
rollout search (:meth:`OverForgeAgent.search`) is also run on a copy of the decision's kappa
with the *other* imagined partner (uniform over its feasible skills, the ``-belief``
ablation's), with the same random numbers; only the agent's own search decides what it plays,
so the episodes are exactly those of ``overforge``. Per decision it records both searches' b*,
kappa and commit; the summary gives, per partner, the share of multi-branch decisions where
the two partner models pick a different branch and a different first skill. The belief can
only pay through the forward model on those decisions.

Tuning seeds (>= 1000) only: this is a diagnostic of why ``overforge`` and ``overforge:-belief``
tie, not a reported result. Every row carries the seed, layout and partner that made it.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import sys
from concurrent.futures import ProcessPoolExecutor

LAYOUTS = ["cramped_room", "asymmetric_advantages", "coordination_ring", "forced_coordination", "counter_circuit"]
PARTNERS = ["onion-sourcer", "plater", "server", "balanced", "switch-sourcer-to-plater"]


def play(cell: tuple) -> list:
    from beliefgate.agents.overforge.agent import OverForgeAgent
    from beliefgate.eval.episode import run_episode

    layout, partner, seed, horizon = cell
    rows: list = []
    search = OverForgeAgent.search

    def both(self, kappa, branches, state, mode, rng_seed):
        other = "uniform" if mode == "belief" else "belief"
        shadow = copy.deepcopy(kappa)
        imagined = self.model.steps
        search(self, shadow, branches, state, other, rng_seed)
        self.model.steps = imagined  # the counterfactual's imagined steps are not the agent's
        rounds = search(self, kappa, branches, state, mode, rng_seed)
        rows.append({"layout": layout, "partner": partner, "seed": seed, "t": state.timestep,
                     "branches": len(branches), "mode": mode, "other": other,
                     "best": kappa.best, "best_other": shadow.best,
                     "kappa": kappa.kappa, "kappa_other": shadow.kappa,
                     "commit": kappa.commit, "commit_other": shadow.commit,
                     "depth": len(rounds), "depth_other": shadow.rounds})
        return rounds

    OverForgeAgent.search = both
    try:
        result = run_episode(layout, "overforge", partner, seed=seed, horizon=horizon)
    finally:
        OverForgeAgent.search = search
    for r in rows:
        r["reward"] = result.summary["reward"]
    return rows


def summarize(rows: list) -> list:
    by = collections.defaultdict(list)
    for r in rows:
        by[r["partner"]].append(r)
        by["all"].append(r)
    table = []
    for name in PARTNERS + ["all"]:
        v = by.get(name, [])
        if not v:
            continue
        n = len(v)
        table.append({
            "partner": name, "decisions": n,
            "branch_differs": sum(r["best"] != r["best_other"] for r in v) / n,
            "first_skill_differs": sum(r["best"].split("/", 1)[1] != r["best_other"].split("/", 1)[1] for r in v) / n,
            "kappa_belief": sum(r["kappa"] for r in v) / n,
            "kappa_uniform": sum(r["kappa_other"] for r in v) / n,
            "commit_belief": sum(r["commit"] for r in v) / n,
            "commit_uniform": sum(r["commit_other"] for r in v) / n,
        })
    return table


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1000,1001", help="comma-separated episode seeds (tuning seeds >= 1000)")
    ap.add_argument("--horizon", type=int, default=400)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None, help="write every decision as a JSONL row here")
    args = ap.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        sys.exit(f"--seeds: comma-separated integers, got {args.seeds!r}")
    if args.horizon < 1 or args.workers < 1:
        sys.exit(f"--horizon and --workers must be >= 1, got {args.horizon} and {args.workers}")
    cells = [(lay, p, s, args.horizon) for s in seeds for lay in LAYOUTS for p in PARTNERS]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = [r for part in pool.map(play, cells) for r in part]
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    print(f"config: seeds={seeds} horizon={args.horizon} episodes={len(cells)} (overforge, seat 0)")
    print(f"{'partner':26s} {'decisions':>9s} {'b* differs':>10s} {'skill differs':>13s} "
          f"{'kappa b/u':>11s} {'commit b/u':>11s}")
    for t in summarize(rows):
        print(f"{t['partner']:26s} {t['decisions']:9d} {t['branch_differs']:10.3f} {t['first_skill_differs']:13.3f} "
              f"{t['kappa_belief']:5.3f}/{t['kappa_uniform']:5.3f} {t['commit_belief']:5.3f}/{t['commit_uniform']:5.3f}")


if __name__ == "__main__":
    main()
