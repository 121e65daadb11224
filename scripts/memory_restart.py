"""The memory-restart measurement of issue 45 (item 6, third bullet; docs/memory.md "Memory restart").

One *run* per seed: an ego (default ``bayes-belief:full``) plays ``E`` episodes with a partner memory
beside two teammates of one partner kind on a three-player kitchen; then the memory of one teammate's
seat is erased (the cut, ``MemoryStore.erase`` as ``beliefgate memory erase --seat`` does) and the ego
plays one more episode. The same post-cut episode (same seed) is also played without any memory.
Per run, over the first ``--window`` steps of the post-cut episode:

* ``ia_kept`` / ``ia_erased``: the ego's partner-intent accuracy about the kept / erased teammate
  (``beliefgate.agents.memory.intent_counts``: the argmax of the ego's logged posterior of that
  teammate against its true skill);
* ``ia_kept_fresh`` / ``ia_erased_fresh``: the same seats in the episode without memory;
* ``deliveries`` and ``deliveries_fresh``: soups in the window, with and without memory.

The partner kind alternates with the seed (``--partners``), and so, in pairs of seeds, does the
erased seat (1 or 2), so that neither the kind nor the seat lines up with the cut. The summary gives
each quantity's mean and the paired differences (kept - erased; kept - kept without memory; ...)
with percentile bootstrap intervals over runs (``beliefgate.eval.report.bootstrap_mean_ci``,
10,000 resamples, seed 0).

    PYTHONPATH=$PWD python scripts/memory_restart.py run --out runs/memory_restart/test --seeds 0-19
    PYTHONPATH=$PWD python scripts/memory_restart.py report --out runs/memory_restart/test

``run`` appends one JSON line per finished run to ``OUT/rows.jsonl`` (a run already there is skipped;
its memory lives in ``OUT/memory.db`` under the scope ``restart seed S``, erased and replayed from the
start when the run is replayed). Settings are chosen on seeds >= 1000 (``--seeds 1000-1003``) and
reported on seeds 0-19.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Dict, List


def _seeds(text: str) -> List[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]


def _window_stats(result, ego: int, window: int, seats: List[int]) -> Dict[str, float]:
    from beliefgate.agents.memory import intent_counts
    from beliefgate.envs.domain import domain_for_layout

    traj = result.trajectory
    domain = domain_for_layout(traj.header.layout)
    names = domain.controller(traj.header.layout).library.names
    steps = traj.steps[:window]
    out = {}
    for seat in seats:
        hits, total = intent_counts(steps, ego, seat, len(traj.header.agents), names)
        out[f"ia_{seat}"] = hits / total if total else math.nan
    out["deliveries"] = sum(e.count(d) for row in steps for e in row.events for d in domain.delivery_events)
    return out


def play_run(seed: int, args) -> Dict[str, object]:
    from beliefgate.agents.memory import MemoryStore, MemoryUse
    from beliefgate.eval.episode import run_episode

    partners = args.partners.split(",")
    partner = partners[seed % len(partners)]
    erased = 1 + (seed // len(partners)) % 2
    kept = 3 - erased
    scope = f"restart seed {seed}"
    store_path = str(Path(args.out) / "memory.db")
    with MemoryStore(store_path) as store:  # a replayed run starts from nothing
        store.erase(scope=scope)
    seeds = [seed * 100 + i for i in range(args.episodes + 1)]
    before = []
    for i, s in enumerate(seeds[:-1]):
        r = run_episode(args.layout, args.ego, [partner, partner], seed=s, horizon=args.horizon, seat=0,
                        memory=MemoryUse(store_path, scope=scope, order=i))
        before.append(r.summary["deliveries"])
    with MemoryStore(store_path) as store:  # the cut: one seat forgets
        store.erase(partner=partner, layout=args.layout, seat=erased, scope=scope)
    after = run_episode(args.layout, args.ego, [partner, partner], seed=seeds[-1], horizon=args.horizon, seat=0,
                        memory=MemoryUse(store_path, scope=scope, order=args.episodes))
    recalled = after.trajectory.header.config["memory"]["recalled"]
    assert recalled == {str(kept): args.episodes, str(erased): 0}, recalled
    fresh = run_episode(args.layout, args.ego, [partner, partner], seed=seeds[-1], horizon=args.horizon, seat=0)
    row = {"seed": seed, "partner": partner, "kept_seat": kept, "erased_seat": erased,
           "episodes_before": args.episodes, "deliveries_before": before,
           "deliveries_episode": after.summary["deliveries"], "deliveries_episode_fresh": fresh.summary["deliveries"],
           "windows": {}}
    for window in sorted({args.window, *WINDOWS}):
        w = _window_stats(after, 0, window, [kept, erased])
        f = _window_stats(fresh, 0, window, [kept, erased])
        row["windows"][str(window)] = {
            "ia_kept": w[f"ia_{kept}"], "ia_erased": w[f"ia_{erased}"], "ia_kept_fresh": f[f"ia_{kept}"],
            "ia_erased_fresh": f[f"ia_{erased}"], "deliveries": w["deliveries"], "deliveries_fresh": f["deliveries"]}
    return row


#: windows (steps after the cut) scored beside ``--window``
WINDOWS = (25,)


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    done = set()
    if rows_path.exists():
        done = {json.loads(line)["seed"] for line in rows_path.read_text().splitlines() if line.strip()}
    config = {k: v for k, v in vars(args).items() if k != "func"}
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    for seed in _seeds(args.seeds):
        if seed in done:
            continue
        started = time.perf_counter()
        row = play_run(seed, args)
        row["wall_s"] = round(time.perf_counter() - started, 2)
        with rows_path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


#: (label, quantity) of the report: a column of the rows, or a paired difference of two
QUANTITIES = (
    ("IA kept seat, memory", "ia_kept"),
    ("IA erased seat, memory", "ia_erased"),
    ("IA kept − erased", ("ia_kept", "ia_erased")),
    ("IA kept seat: memory − none", ("ia_kept", "ia_kept_fresh")),
    ("IA erased seat: after cut − none", ("ia_erased", "ia_erased_fresh")),
    ("IA (same seats) kept − erased without memory", ("ia_kept_fresh", "ia_erased_fresh")),
    ("soups in the window: memory − none", ("deliveries", "deliveries_fresh")),
    ("soups in the episode: memory − none", ("deliveries_episode", "deliveries_episode_fresh")),
)


def report(args) -> None:
    import numpy as np

    from beliefgate.eval.report import bootstrap_mean_ci

    out = Path(args.out)
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines() if line.strip()]
    config = json.loads((out / "config.json").read_text())
    summary = {"config": config, "runs": len(rows), "seeds": sorted(r["seed"] for r in rows), "quantities": {}}
    lines = []
    for window in sorted({int(w) for r in rows for w in r["windows"]}):
        lines += ["", f"| quantity (first {window} steps after the cut) | mean | 95% CI | runs |", "|---|---|---|---|"]
        for label, q in QUANTITIES:
            flat = [{**r, **r["windows"][str(window)]} for r in rows]
            values = [r[q[0]] - r[q[1]] for r in flat] if isinstance(q, tuple) else [r[q] for r in flat]
            values = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
            mean, lo, hi = bootstrap_mean_ci(np.asarray(values, float), seed=0, name=label)
            summary["quantities"][f"{label} @{window}"] = {"mean": mean, "lo": lo, "hi": hi, "n": len(values)}
            lines.append(f"| {label} | {mean:+.3f} | [{lo:+.3f}, {hi:+.3f}] | {len(values)} |")
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(required=True)
    p = sub.add_parser("run", help="play the runs")
    p.add_argument("--out", required=True)
    p.add_argument("--seeds", default="0-19")
    p.add_argument("--episodes", type=int, default=3, help="E: episodes with memory before the cut")
    p.add_argument("--horizon", type=int, default=200)
    p.add_argument("--window", type=int, default=100, help="steps after the cut that are scored")
    p.add_argument("--layout", default="cramped_room_3p")
    p.add_argument("--ego", default="bayes-belief:full")
    p.add_argument("--partners", default="onion-sourcer,plater", help="partner kinds, alternating with the seed")
    p.set_defaults(func=run)
    p = sub.add_parser("report", help="means and paired differences with bootstrap CIs")
    p.add_argument("--out", required=True)
    p.set_defaults(func=report)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    sys.exit(main())
