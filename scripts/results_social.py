"""Do messages pay? OverForge self-play with and without the message channel (docs/results_social.md, issue 45).

    PYTHONPATH=$PWD .venv/bin/python scripts/results_social.py run --out runs/social --seeds 0-19 --workers 2
    PYTHONPATH=$PWD .venv/bin/python scripts/results_social.py report --out runs/social
    PYTHONPATH=$PWD .venv/bin/python scripts/results_social.py run --out runs/social --layout v2/cramped_room_v2 ...

``run`` plays, per seed, ``overforge`` x ``overforge`` (both talk and listen) and
``overforge:-messages`` x ``overforge:-messages`` in the connected room (classic ``cramped_room``
by default; ``--layout v2/cramped_room_v2`` plays OvercookedV2's, and
``--layout v2/asymm_advantages_recipes_right`` its split room, each with its hidden-recipe options of
``HIDDEN_RECIPE``: a short view, a new recipe after each correct dish; 400 steps, seat 0) and
appends one JSON line per finished episode (``--partner NAME``: every teammate is that agent instead,
e.g. the recipe-telling scripted cook ``v2-cook-tells``; ``report --partner NAME`` reports those rows) to ``OUT/rows.jsonl`` (resumable: an episode already
there is skipped). On V2 a row also counts wrong dishes, the recipes told (``inform`` with a
goal) and, per seat, the share of steps it acted on the true recipe (its recipe belief's MAP with
at least the acting confidence, or the recipe it sees). ``report`` prints the markdown: deliveries per arm, the paired
difference with the project's paired bootstrap over seeds (``beliefgate.eval.report``), the
requests said and how often the asked seat's next sub-task was the requested skill against chance
(the requested skills shuffled among the requests, :mod:`beliefgate.eval.social`), with a bootstrap
interval over episodes of the difference, and the steps under an agreed role split.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Dict

LAYOUT = "cramped_room"
HORIZON = 400
ARMS = {"messages": "overforge", "no_messages": "overforge:-messages", "flat": "flat", "flat_silent": "flat:-messages",
        "no_rollouts": "overforge:-rollouts", "no_hierarchy": "overforge:-hierarchy"}
#: the paper's Table 5 columns, of seat 0 (beliefgate.eval.metrics, beliefgate.eval.pcm)
TABLE5 = (("FI", "failed_interaction_rate"), ("MB", "blocking_rate"), ("IA", "partner_intent_accuracy"),
          ("Σ⁻", "subtasks_abandoned"), ("κ̄", "kappa_mean"), ("commit", "commit_rate"))
#: the arms ``run`` plays unless ``--arms`` says otherwise (the flat baseline's: ``--arms flat flat_silent``)
DEFAULT_ARMS = ("messages", "no_messages")
#: the paired comparisons ``report`` prints where both arms have rows: (a, b, what a - b measures)
COMPARISONS = (("messages", "no_messages", "messages pay (OverForge)"),
               ("messages", "no_rollouts", "rollouts pay (OverForge)"),
               ("messages", "no_hierarchy", "strategies pay (OverForge)"),
               ("flat", "flat_silent", "messages pay (flat baseline)"),
               ("messages", "flat", "OverForge beats the flat baseline (both talk)"))


def env_options(layout: str) -> Dict:
    from beliefgate.envs.overcooked_v2.layouts import HIDDEN_RECIPE

    return dict(HIDDEN_RECIPE.get(layout, {}))


def recipe_known(traj, seat: int) -> float:
    """The share of steps on which ``seat`` acted on the true recipe: its logged recipe MAP at the
    acting confidence (the rule planner's ``min_goal_confidence``) or a recipe it sees."""
    from beliefgate.envs.overcooked_v2.kitchen import recipe_name
    from beliefgate.planners.rule import RulePlanner

    floor = RulePlanner().config.min_goal_confidence
    hits = 0
    for row in traj.steps:
        info = row.info[seat] or {}
        state = row.state
        true = recipe_name(state.recipe_ingredients)
        seen = state.sees_recipe(seat)
        sure = info.get("recipe_map") == true and (info.get("recipe_confidence") or 0.0) >= floor
        hits += bool(seen or sure)
    return hits / max(len(traj.steps), 1)


def play(arm: str, seed: int, horizon: int, layout: str = LAYOUT, partner: str = "") -> Dict:
    from dataclasses import asdict

    from beliefgate.eval.episode import run_episode
    from beliefgate.eval.social import agreement_steps, request_outcomes

    name = ARMS[arm]
    started = time.perf_counter()
    options = env_options(layout)
    from beliefgate.envs.domain import domain_for_layout

    # self-play (N = 3: two of the same), or every teammate the given partner
    teammates = [partner or name] * (domain_for_layout(layout).players(layout) - 1)
    res = run_episode(layout, name, teammates, seed=seed, horizon=horizon, env_options=options)
    traj = res.trajectory
    row = {"arm": arm, "seed": seed, "layout": layout, "env_options": options, "partner": partner or name, "seat": 0,
           "cross_partner": partner,
           "horizon": horizon, "deliveries": res.summary["deliveries"], "reward": res.summary["reward"],
           "messages": res.summary.get("messages"),
           "requests": [asdict(o) for o in request_outcomes(traj)],
           "agreements": {str(k): v for k, v in agreement_steps(traj).items()},
           "wall_s": round(time.perf_counter() - started, 1), "table5": table5(traj)}
    if layout.startswith("v2/"):
        events = [e for r in traj.steps for ev in (r.events or []) for e in ev]
        row["wrong"] = events.count("deliver:wrong")
        row["paid"] = events.count("deliver:correct")
        row["told_goal"] = sum(1 for r in traj.steps if r.messages for m in r.messages.sent
                               if getattr(m, "goal", None))
        row["recipe_known"] = [round(recipe_known(traj, s), 4) for s in range(len(traj.steps[0].info))]
    return row


def table5(traj) -> Dict:
    """Seat 0's Table 5 columns (:data:`TABLE5`); the PCM's only for an OverForge seat."""
    from beliefgate.eval import metrics
    from beliefgate.eval.pcm import pcm_metrics

    out = {key: float(getattr(metrics, fn)(traj)) for key, fn in TABLE5[:4]}
    pcm = pcm_metrics(traj) if any(row.info[0].get("pcm") for row in traj.steps) else {}
    out.update({key: pcm.get(fn) for key, fn in TABLE5[4:]})
    return out


def _play(job):
    return play(*job)


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    done = set()
    if rows_path.exists():
        for line in rows_path.read_text().splitlines():
            row = json.loads(line)
            done.add((row.get("layout", LAYOUT), row.get("cross_partner", ""), row["arm"], row["seed"]))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    from beliefgate.eval.grid import seed_list

    jobs = [(arm, s, args.horizon, args.layout, args.partner) for s in seed_list(args.seeds) for arm in args.arms
            if (args.layout, args.partner, arm, s) not in done]
    print(f"{len(jobs)} episodes to play ({len(done)} done) at {commit}", file=sys.stderr)
    with ProcessPoolExecutor(max_workers=args.workers) as pool, rows_path.open("a") as fh:
        for row in pool.map(_play, jobs):
            row["commit"] = commit
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            print(f"{row['arm']} seed {row['seed']}: {row['deliveries']} deliveries, {row['wall_s']} s", file=sys.stderr)


def report(args) -> None:
    import numpy as np

    from beliefgate.eval.report import bootstrap_mean_ci, paired_bootstrap
    from beliefgate.eval.social import RequestOutcome, chance_share, followed_share, pooled_gap

    rows = [json.loads(line) for line in (Path(args.out) / "rows.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r.get("layout", LAYOUT) == args.layout and r.get("cross_partner", "") == args.partner]
    if not rows:
        sys.exit(f"no rows of {args.layout}" + (f" with {args.partner}" if args.partner else "") + f" in {args.out}")
    play_with = f"with `{args.partner}`" if args.partner else "self-play"
    by_arm = {arm: rs for arm in ARMS if (rs := [r for r in rows if r["arm"] == arm])}
    v2 = "wrong" in rows[0]
    for r in rows:   # V2: a delivery is paid (the recipe's dish) or unpaid (a wrong one)
        if v2:
            r.setdefault("paid", r["deliveries"] - r["wrong"])
    seeds = sorted({r["seed"] for r in rows})
    commits = sorted({r.get("commit", "?") for r in rows})
    print(f"Seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}), {args.layout}, {play_with}, {rows[0]['horizon']} steps, commit(s) "
          f"{', '.join(commits)}.\n")
    key = "paid" if v2 else "deliveries"
    if v2:
        print("| arm | episodes | paid serves (mean ± sd) | wrong dishes | reward | steps on the true recipe "
              "(per seat) | recipes told | messages sent | refused |")
        print("|---|---|---|---|---|---|---|---|---|")
    else:
        print("| arm | episodes | deliveries (mean ± sd) | messages sent per episode | refused |")
        print("|---|---|---|---|---|")
    for arm, rs in by_arm.items():
        d = np.array([r[key] for r in rs], dtype=float)
        sent = np.mean([(r["messages"] or {}).get("sent", 0) for r in rs])
        refused = sum((r["messages"] or {}).get("refused", 0) for r in rs)
        cells = f"| `{ARMS[arm]}` {play_with} | {len(rs)} | {d.mean():.2f} ± {d.std(ddof=1):.2f} |"
        if v2:
            known = np.array([r["recipe_known"] for r in rs], dtype=float).mean(0)
            cells += (f" {np.mean([r['wrong'] for r in rs]):.2f} | {np.mean([r['reward'] for r in rs]):.1f} | "
                      + " / ".join(f"{k:.3f}" for k in known) + f" | {np.mean([r['told_goal'] for r in rs]):.1f} |")
        print(cells + f" {sent:.1f} | {refused} |")
    t5 = {arm: rs for arm, rs in by_arm.items() if all("table5" in r for r in rs)}
    if t5:
        print("\nSeat 0, the paper's Table 5 columns (mean over episodes; FI failed interactions and MB blocked "
              "moves per step, IA partner-intent accuracy, Σ⁻ sub-tasks abandoned, κ̄ and commit rate of the PCM):\n")
        print("| arm | " + " | ".join(k for k, _ in TABLE5) + " |")
        print("|---|" + "---|" * len(TABLE5))
        for arm, rs in t5.items():
            cells = []
            for k, _ in TABLE5:
                vals = [r["table5"][k] for r in rs if r["table5"].get(k) is not None]
                cells.append(f"{np.mean(vals):.3f}" if vals else "–")
            print(f"| `{ARMS[arm]}` | " + " | ".join(cells) + " |")
    # pair arms on layout, seat and seed (the partner is the arm's own agent, or the one given partner)
    pair = {arm: [{**r, "partner": play_with} for r in rs] for arm, rs in by_arm.items()}
    print()
    for a, b, what in COMPARISONS:
        if a not in pair or b not in pair:
            continue
        diffs = [(k, paired_bootstrap(pair[a], pair[b], k, name="social")) for k in
                 ((key, "reward", "wrong") if v2 else (key,))]
        print(f"- {what}: `{ARMS[a]}` − `{ARMS[b]}` (paired over seeds, bootstrap) "
              + "; ".join(f"{k} **{d.mean:+.2f} [{d.lo:+.2f}, {d.hi:+.2f}]**" for k, d in diffs)
              + f" ({diffs[0][1].units} seeds).")
    print()
    if "messages" not in by_arm:
        return
    per_episode = [[RequestOutcome(**o) for o in r["requests"]] for r in by_arm["messages"]]
    pooled = [o for ep in per_episode for o in ep]
    scored = [o for o in pooled if o.next_skill is not None]
    print(f"Requests: {len(pooled)} said ({len(scored)} with a next sub-task before the episode ended).")
    if scored:
        f, c = followed_share(pooled), chance_share(pooled)
        # per episode (followed - chance), resampled over episodes
        gaps = [followed_share(ep) - chance_share(ep) for ep in per_episode if any(o.next_skill for o in ep)]
        m, lo, hi = bootstrap_mean_ci(gaps, name="requests")
        g, glo, ghi, used = pooled_gap(per_episode)
        print(f"Share whose skill was the asked seat's next sub-task: {f:.3f}; chance (requests shuffled): "
              f"{c:.3f}; pooled difference **{g:+.3f} [{glo:+.3f}, {ghi:+.3f}]** (episodes resampled, {used} "
              f"episodes); per-episode difference {m:+.3f} [{lo:+.3f}, {hi:+.3f}] over {len(gaps)} episodes "
              f"(an episode with one request adds exactly 0 to it).")
        props = [o.in_next_proposal for o in pooled if o.in_next_proposal is not None]
        if props:
            print(f"Requests whose skill's role the asked seat gave itself in its next proposal: {sum(props)}/{len(props)}.")
    agreed = [v for r in by_arm["messages"] for v in r["agreements"].values()]
    if agreed:
        steps = np.mean([a["steps"] for a in agreed])
        ended: Dict[str, int] = {}
        for a in agreed:
            for k, n in a["ended"].items():
                ended[k] = ended.get(k, 0) + n
        print(f"\nSteps per seat under an agreed split: {steps:.1f} of {rows[0]['horizon']}; agreements ended: "
              f"{ended or 'none'}.")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--seeds", default="0-19")
    r.add_argument("--horizon", type=int, default=HORIZON)
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--layout", default=LAYOUT, help="the room: cramped_room (classic), v2/cramped_room_v2[_3p] (connected), "
                   "v2/asymm_advantages_recipes_right (split); V2 rooms take their HIDDEN_RECIPE options")
    r.add_argument("--arms", nargs="+", default=list(DEFAULT_ARMS), choices=list(ARMS))
    r.add_argument("--partner", default="", help="every teammate this agent (e.g. v2-cook-tells) instead of self-play")
    p = sub.add_parser("report")
    p.add_argument("--out", required=True)
    p.add_argument("--layout", default=LAYOUT)
    p.add_argument("--partner", default="", help="report the rows played with this partner (default: self-play)")
    args = ap.parse_args(argv)
    run(args) if args.cmd == "run" else report(args)


if __name__ == "__main__":
    main()
