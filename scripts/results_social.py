"""Do messages pay? OverForge self-play with and without the message channel (docs/results_social.md, issue 45).

    PYTHONPATH=$PWD .venv/bin/python scripts/results_social.py run --out runs/social --seeds 0-19 --workers 2
    PYTHONPATH=$PWD .venv/bin/python scripts/results_social.py report --out runs/social

``run`` plays, per seed, ``overforge`` x ``overforge`` (both talk and listen) and
``overforge:-messages`` x ``overforge:-messages`` in the connected room (classic ``cramped_room``,
400 steps, seat 0) and appends one JSON line per finished episode to ``OUT/rows.jsonl`` (resumable:
an episode already there is skipped). ``report`` prints the markdown: deliveries per arm, the paired
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
ARMS = {"messages": "overforge", "no_messages": "overforge:-messages"}


def play(arm: str, seed: int, horizon: int) -> Dict:
    from dataclasses import asdict

    from beliefgate.eval.episode import run_episode
    from beliefgate.eval.social import agreement_steps, request_outcomes

    name = ARMS[arm]
    started = time.perf_counter()
    res = run_episode(LAYOUT, name, name, seed=seed, horizon=horizon)
    traj = res.trajectory
    return {"arm": arm, "seed": seed, "layout": LAYOUT, "partner": name, "seat": 0, "horizon": horizon,
            "deliveries": res.summary["deliveries"], "reward": res.summary["reward"],
            "messages": res.summary.get("messages"),
            "requests": [asdict(o) for o in request_outcomes(traj)],
            "agreements": {str(k): v for k, v in agreement_steps(traj).items()},
            "wall_s": round(time.perf_counter() - started, 1)}


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
            done.add((row["arm"], row["seed"]))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    from beliefgate.eval.grid import seed_list

    jobs = [(arm, s, args.horizon) for s in seed_list(args.seeds) for arm in ARMS if (arm, s) not in done]
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
    from beliefgate.eval.social import RequestOutcome, chance_share, followed_share

    rows = [json.loads(line) for line in (Path(args.out) / "rows.jsonl").read_text().splitlines()]
    by_arm = {arm: [r for r in rows if r["arm"] == arm] for arm in ARMS}
    seeds = sorted({r["seed"] for r in rows})
    commits = sorted({r.get("commit", "?") for r in rows})
    print(f"Seeds {seeds[0]}-{seeds[-1]} ({len(seeds)}), {LAYOUT}, {rows[0]['horizon']} steps, commit(s) "
          f"{', '.join(commits)}.\n")
    print("| arm | episodes | deliveries (mean ± sd) | messages sent per episode | refused |")
    print("|---|---|---|---|---|")
    for arm, rs in by_arm.items():
        d = np.array([r["deliveries"] for r in rs], dtype=float)
        sent = np.mean([(r["messages"] or {}).get("sent", 0) for r in rs]) if rs else float("nan")
        refused = sum((r["messages"] or {}).get("refused", 0) for r in rs)
        print(f"| `{ARMS[arm]}` self-play | {len(rs)} | {d.mean():.2f} ± {d.std(ddof=1):.2f} | {sent:.1f} | {refused} |")
    # both arms are self-play: pair them on layout, seat and seed (the partner is the arm's own agent)
    pair = {arm: [{**r, "partner": "self-play"} for r in rs] for arm, rs in by_arm.items()}
    diff = paired_bootstrap(pair["messages"], pair["no_messages"], "deliveries", name="social")
    print(f"\nDeliveries, messages − no messages (paired over seeds, bootstrap): **{diff.mean:+.2f} "
          f"[{diff.lo:+.2f}, {diff.hi:+.2f}]** ({diff.units} seeds, {diff.pairs} pairs).\n")
    per_episode = [[RequestOutcome(**o) for o in r["requests"]] for r in by_arm["messages"]]
    pooled = [o for ep in per_episode for o in ep]
    scored = [o for o in pooled if o.next_skill is not None]
    print(f"Requests: {len(pooled)} said ({len(scored)} with a next sub-task before the episode ended).")
    if scored:
        f, c = followed_share(pooled), chance_share(pooled)
        # per episode (followed - chance), resampled over episodes
        gaps = [followed_share(ep) - chance_share(ep) for ep in per_episode if any(o.next_skill for o in ep)]
        m, lo, hi = bootstrap_mean_ci(gaps, name="requests")
        print(f"Share whose skill was the asked seat's next sub-task: {f:.3f}; chance (requests shuffled): "
              f"{c:.3f}; per-episode difference {m:+.3f} [{lo:+.3f}, {hi:+.3f}] over {len(gaps)} episodes.")
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
    p = sub.add_parser("report")
    p.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    run(args) if args.cmd == "run" else report(args)


if __name__ == "__main__":
    main()
