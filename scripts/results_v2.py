"""The OvercookedV2 recipe-belief grid of docs/results_v2.md (issue 43): does the belief pay where
the recipe is hidden from the ego?

    PYTHONPATH=$PWD .venv/bin/python scripts/results_v2.py run --out runs/results_v2 --seeds 0-19
    PYTHONPATH=$PWD .venv/bin/python scripts/results_v2.py report --out runs/results_v2

``run`` plays every (layout, agent, partner, seat, seed) episode and appends one JSON line per
episode, with the commit that played it, to ``OUT/rows.jsonl`` (resumable: an episode already there
is skipped; a line is written only when its episode is complete). ``verify`` replays a seeded sample
of stored rows with the current code: rows from several commits are pooled only when it finds the
same episodes. ``report`` prints the markdown tables: per layout and agent
the means, and the paired differences ``full - no_belief`` (and ``full - no_replan``) with the
project's paired bootstrap (``beliefgate.eval.report.paired_bootstrap``: pairs matched on layout,
partner, seat, seed; seeds resampled).

Per episode: reward, soups (correct deliveries), wrong dishes served, recipe-MAP accuracy (share of
the ego's steps after the partner's first ingredient pickup whose MAP recipe is the active one; NaN
for an agent without a recipe belief or an episode where the partner picks no ingredient), the
gap rate (``belief_action_gap_rate`` against the reference gate), replans and effective replans.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

from beliefgate.envs.overcooked_v2.layouts import HIDDEN_RECIPE
from beliefgate.eval.grid import seed_list
from beliefgate.provenance import git_commit

#: the asymmetric-information layouts and the environment options that make them so (two players)
#: (the split room, added for docs/results_social.md, is not part of this grid's reported runs)
LAYOUTS: Dict[str, Dict[str, object]] = {k: v for k, v in HIDDEN_RECIPE.items()
                                         if not k.endswith("_3p") and k != "v2/asymm_advantages_recipes_right"}
#: an ablation (not a condition of the agent table): ``full`` whose recipe belief leaves out the ego's
#: own sight of the recipe (it still plays a recipe it sees now, as every agent does)
NO_VIEW = "v2ablation-noview"


#: the layout's hand-written V2 seed tree (``policy-tree:seed:<layout>``; docs/policytree.md)
SEED_TREE = "policy-tree:seed"

PARTNERS = ("v2-cook", "v2-cook-adaptive", "v2-fetcher", "v2-server")
#: OverForge before ``recipe=map`` became its default (its seeds 0-19 rows are kept under this name)
OVERFORGE_AUTO = "overforge:recipe=auto"
AGENTS = ("bayes-belief:full", "bayes-belief:no_belief", "bayes-belief:no_replan", NO_VIEW, "overforge",
          OVERFORGE_AUTO, SEED_TREE)
#: the paired comparisons the report prints: (condition, baseline)
COMPARISONS = (("bayes-belief:full", "bayes-belief:no_belief"), ("bayes-belief:full", "bayes-belief:no_replan"),
               ("bayes-belief:full", NO_VIEW), ("overforge", "bayes-belief:no_belief"),
               (OVERFORGE_AUTO, "bayes-belief:no_belief"), ("overforge", OVERFORGE_AUTO),
               (SEED_TREE, "bayes-belief:no_belief"))
METRICS = ("reward", "soups", "wrong", "recipe_acc", "gap_rate", "replans", "effective_replans")


def _register() -> None:
    from beliefgate.agents.planning import BayesBeliefAgent
    from beliefgate.agents.registry import AgentEntry, register_agent
    from beliefgate.envs.domain import register_domain
    from beliefgate.envs.overcooked_v2.domain import DOMAIN

    register_domain(DOMAIN)

    class NoViewAgent(BayesBeliefAgent):
        goal_evidence_options = {"use_view": False}

    register_agent(AgentEntry(NO_VIEW, lambda option, **kw: NoViewAgent("full"),
                              "bayes-belief:full whose recipe belief ignores the ego's own view of the recipe"))


def recipe_accuracy(traj, seat: int) -> float:
    """Share of the ego's steps after the partner's first ingredient pickup whose logged MAP recipe
    is the active recipe (NaN without such steps or without a recipe belief)."""
    from beliefgate.envs.overcooked_v2.kitchen import recipe_name

    partner = 1 - seat
    first = next((row.t for row in traj.steps
                  if any(e.startswith("pickup:ingredient_") for e in row.events[partner])), None)
    if first is None:
        return float("nan")
    hits = total = 0
    for row in traj.steps:
        if row.t <= first:
            continue
        info = row.info[seat] or {}
        if "recipe_map" not in info:
            return float("nan")
        total += 1
        hits += info["recipe_map"] == recipe_name(row.state.recipe_ingredients)
    return hits / total if total else float("nan")


def play(task) -> dict:
    """One episode's row (with the commit of the code that played it)."""
    from beliefgate.eval.episode import run_episode
    from beliefgate.eval.metrics import belief_action_gap_rate, effective_replans, reference_replay, replans

    layout, agent, partner, seat, seed, horizon = task
    t0 = time.perf_counter()
    ego = f"{SEED_TREE}:{layout}" if agent == SEED_TREE else agent
    res = run_episode(layout, ego, partner, seed=seed, horizon=horizon, seat=seat, env_options=LAYOUTS[layout])
    traj = res.trajectory
    events = [e for row in traj.steps for ev in row.events for e in ev]
    row = {"layout": layout, "agent": agent, "partner": partner, "seat": seat, "seed": seed, "horizon": horizon,
           "reward": float(res.summary["reward"]), "soups": events.count("deliver:correct"),
           "wrong": events.count("deliver:wrong"), "recipe_acc": recipe_accuracy(traj, seat),
           "replans": float(replans(traj)), "effective_replans": float(effective_replans(traj))}
    row["gap_rate"] = float(belief_action_gap_rate(traj, reference_replay(traj)))
    row["wall_s"] = round(time.perf_counter() - t0, 2)
    row["commit"] = git_commit()
    return row


def _key(row) -> tuple:
    return (row["layout"], row["agent"], row["partner"], int(row["seat"]), int(row["seed"]), int(row["horizon"]))


def load_rows(out: Path) -> List[dict]:
    path = out / "rows.jsonl"
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done = {_key(r) for r in load_rows(out)}
    tasks = [(layout, agent, partner, seat, seed, args.horizon)
             for layout in args.layouts for seed in seed_list(args.seeds) for partner in args.partners
             for seat in args.seats for agent in args.agents]
    todo = [t for t in tasks if t not in done]
    print(f"{len(tasks)} episodes, {len(tasks) - len(todo)} done, {len(todo)} to play", flush=True)
    (out / "grid.json").write_text(json.dumps({"layouts": {k: LAYOUTS[k] for k in args.layouts},
                                               "agents": args.agents, "partners": args.partners,
                                               "seats": args.seats, "seeds": args.seeds,
                                               "horizon": args.horizon, "commit": git_commit()}, indent=1))
    with open(out / "rows.jsonl", "a") as fh:
        if args.workers <= 1:
            _register()
            results = map(play, todo)
        else:
            import multiprocessing as mp

            pool = mp.get_context("spawn").Pool(args.workers, initializer=_register)
            results = pool.imap_unordered(play, todo)
        for i, row in enumerate(results, 1):
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            if i % 20 == 0:
                print(f"{i}/{len(todo)}", flush=True)


#: what must agree for a replayed row to count as the same episode
VERIFIED = ("reward", "soups", "wrong", "replans", "effective_replans")


def verify(args) -> None:
    """Replay a seeded sample of the stored rows with the current code and say, row by row, whether
    the episode comes out the same: the check that rows played at different commits may be pooled.
    Exits 1 when any differs."""
    import random

    rows = [r for r in load_rows(Path(args.out)) if args.agent is None or r["agent"] == args.agent]
    if not rows:
        raise SystemExit(f"no rows to verify in {args.out}" + (f" for agent {args.agent!r}" if args.agent else ""))
    sample = random.Random(args.seed).sample(rows, min(args.sample, len(rows)))
    _register()
    differ = 0
    print(f"replaying {len(sample)} of {len(rows)} rows at {git_commit()}")
    for old in sample:
        new = play(_key(old))
        diff = {k: (old[k], new[k]) for k in VERIFIED if old[k] != new[k]}
        differ += bool(diff)
        print(f"{'DIFFERS' if diff else 'same'}  {old['layout']} {old['agent']} {old['partner']} seat {old['seat']} "
              f"seed {old['seed']}  (stored at {old.get('commit') or 'an unrecorded commit'})"
              + (f"  {diff}" if diff else ""), flush=True)
    print(f"{len(sample) - differ} of {len(sample)} replayed rows are the same episode")
    if differ:
        raise SystemExit(1)


def _mean(values) -> float:
    x = [v for v in values if v is not None and not math.isnan(v)]
    return sum(x) / len(x) if x else float("nan")


def _f(v: float, digits: int = 1, signed: bool = False) -> str:
    if v is None or math.isnan(v):
        return "–"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def report(args) -> None:
    from beliefgate.eval.report import paired_bootstrap

    rows = load_rows(Path(args.out))
    layouts = list(dict.fromkeys(r["layout"] for r in rows))
    agents = [a for a in AGENTS if any(r["agent"] == a for r in rows)]
    print("| layout | agent | episodes | reward | soups | wrong dishes | recipe-MAP acc. | gap rate | replans | "
          "effective replans |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for layout in layouts:
        for agent in agents:
            sel = [r for r in rows if r["layout"] == layout and r["agent"] == agent]
            if not sel:
                continue
            m = {k: _mean([r[k] for r in sel]) for k in METRICS}
            print(f"| {layout} | {agent} | {len(sel)} | {_f(m['reward'])} | {_f(m['soups'], 2)} | {_f(m['wrong'], 2)} "
                  f"| {_f(100 * m['recipe_acc'])}% | {_f(m['gap_rate'], 3)} | {_f(m['replans'], 2)} "
                  f"| {_f(m['effective_replans'], 2)} |")
    for cond_agent, base in COMPARISONS:
        if base not in agents or cond_agent not in agents:
            continue
        print(f"\nPaired differences `{cond_agent}` − `{base}` (mean [95% bootstrap CI], seeds resampled):\n")
        print("| layout | seats | pairs | reward | soups | wrong dishes | gap rate |")
        print("|---|---|---|---|---|---|---|")
        for layout in layouts:
            for seats in ((0, 1), (0,), (1,)):
                cond = [r for r in rows if r["layout"] == layout and r["agent"] == cond_agent
                        and r["seat"] in seats]
                ref = [r for r in rows if r["layout"] == layout and r["agent"] == base and r["seat"] in seats]
                cells = []
                pairs = 0
                for metric, digits in (("reward", 1), ("soups", 2), ("wrong", 2), ("gap_rate", 3)):
                    d = paired_bootstrap(cond, ref, metric, name=f"{layout}/{metric}/{seats}")
                    pairs = d.pairs if metric == "reward" else pairs
                    cells.append(f"{_f(d.mean, digits, True)} [{_f(d.lo, digits, True)}, {_f(d.hi, digits, True)}]")
                label = "both" if len(seats) == 2 else str(seats[0])
                print(f"| {layout} | {label} | {pairs} | " + " | ".join(cells) + " |")
        if base != "bayes-belief:no_belief":
            continue
        print(f"\nReward `{cond_agent}` − `{base}` per partner and seat (both seats; seat 0; seat 1):\n")
        partners = list(dict.fromkeys(r["partner"] for r in rows))
        print("| layout | " + " | ".join(partners) + " |")
        print("|---|" + "---|" * len(partners))
        for layout in layouts:
            cells = []
            for partner in partners:
                parts = []
                for seats in ((0, 1), (0,), (1,)):
                    cond = [r for r in rows if r["layout"] == layout and r["agent"] == cond_agent
                            and r["partner"] == partner and r["seat"] in seats]
                    ref = [r for r in rows if r["layout"] == layout and r["agent"] == base
                           and r["partner"] == partner and r["seat"] in seats]
                    d = paired_bootstrap(cond, ref, "reward", name=f"{layout}/{partner}/{seats}")
                    parts.append(_f(d.mean, 1, True) if len(seats) < 2 else
                                 f"{_f(d.mean, 1, True)} [{_f(d.lo, 1, True)}, {_f(d.hi, 1, True)}]")
                cells.append(f"{parts[0]}; {parts[1]}; {parts[2]}")
            print(f"| {layout} | " + " | ".join(cells) + " |")
        print(f"\nRecipe-MAP accuracy of `{cond_agent}` per partner and seat (episodes where the partner "
              "picks an ingredient):\n")
        print("| layout | seat | " + " | ".join(partners) + " |")
        print("|---|---|" + "---|" * len(partners))
        for layout in layouts:
            for seat in (0, 1):
                cells = []
                for partner in partners:
                    acc = [r["recipe_acc"] for r in rows if r["layout"] == layout and r["partner"] == partner
                           and r["seat"] == seat and r["agent"] == cond_agent]
                    n = sum(1 for a in acc if not math.isnan(a))
                    cells.append(f"{_f(100 * _mean(acc))}% ({n})")
                print(f"| {layout} | {seat} | " + " | ".join(cells) + " |")


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--seeds", default="0-19")
    r.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=list(LAYOUTS))
    r.add_argument("--agents", nargs="+", default=list(AGENTS))
    r.add_argument("--partners", nargs="+", default=list(PARTNERS))
    r.add_argument("--seats", nargs="+", type=int, default=[0, 1])
    r.add_argument("--horizon", type=int, default=400)
    r.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    q = sub.add_parser("report")
    q.add_argument("--out", required=True)
    v = sub.add_parser("verify", help="replay a sample of stored rows with the current code")
    v.add_argument("--out", required=True)
    v.add_argument("--sample", type=int, default=6)
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--agent", default=None)
    args = p.parse_args(argv)
    {"run": run, "report": report, "verify": verify}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
