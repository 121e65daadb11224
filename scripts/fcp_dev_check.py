#!/usr/bin/env python
"""Choose an FCP recipe on development seeds, against a validation partner that is neither in any
pool nor the held-out partner the pages report (issue 44's "FCP beats SP against held-out SP").

    PYTHONPATH=$PWD .venv/bin/python scripts/fcp_dev_check.py --layout v2/forced_coord \
        --partner runs/ppo/zoo_serve/sp_forced_coord_seed5 \
        --ego sp0=runs/ppo/zoo_serve/sp_forced_coord_seed0 --ego fcp2=runs/ppo/fcp/fcp_forced_coord_seed0 \
        --ego fcp4=runs/ppo/fcp4/fcp_forced_coord_seed0 --seeds 1000-1019

Each ``--ego NAME=RUN`` (a run folder or its ``policy.msgpack``) plays the partner from both seats on
every seed (batched in JAX, ``beliefgate.rl.evaluate.play_matches``, both players sampling as
trained); the table gives each ego's mean reward [95% CI] and its paired difference with the first
ego (pairs: seed and seat; seeds resampled, ``beliefgate.eval.report.paired_bootstrap``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _policy_file(run: str) -> Path:
    path = Path(run)
    return path / "policy.msgpack" if path.is_dir() else path


def main(argv=None) -> int:
    from beliefgate.envs.overcooked_v2 import trained_agents as T
    from beliefgate.eval.grid import seed_list
    from beliefgate.eval.report import bootstrap_mean_ci, paired_bootstrap
    from beliefgate.rl.evaluate import play_matches

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", required=True)
    parser.add_argument("--partner", required=True, help="the validation partner's run folder or policy file")
    parser.add_argument("--ego", action="append", required=True, help="NAME=RUN (repeat; the first is the base)")
    parser.add_argument("--seeds", default="1000-1019")
    parser.add_argument("--horizon", type=int, default=400)
    args = parser.parse_args(argv)
    seeds = seed_list(args.seeds)
    partner = T.load(_policy_file(args.partner), layout=args.layout)
    rows: Dict[str, List[dict]] = {}
    for item in args.ego:
        name, sep, run = item.partition("=")
        if not sep:
            parser.error(f"--ego {item!r}: expected NAME=RUN")
        ego = T.load(_policy_file(run), layout=args.layout)
        rows[name] = []
        for seat in (0, 1):
            pair = (ego, partner) if seat == 0 else (partner, ego)
            res = play_matches(args.layout, *pair, seeds=seeds, horizon=args.horizon)
            rows[name] += [{"layout": args.layout, "partner": "p", "seat": seat, "seed": s,
                            "reward": float(r)} for s, r in zip(seeds, res["reward"])]
    base = next(iter(rows))
    print(f"{args.layout}, partner {args.partner}, seeds {args.seeds}, both seats\n")
    print(f"| ego | reward [95% CI] | − {base} [95% CI] |")
    print("|---|---|---|")
    for name, rs in rows.items():
        by: Dict[int, List[float]] = {}
        for r in rs:
            by.setdefault(r["seed"], []).append(r["reward"])
        m, lo, hi = bootstrap_mean_ci([sum(v) / len(v) for _, v in sorted(by.items())], name=name)
        d = paired_bootstrap(rs, rows[base], "reward", name=f"{name}-{base}")
        diff = "–" if name == base else f"{d.mean:+.1f} [{d.lo:+.1f}, {d.hi:+.1f}]"
        print(f"| {name} | {m:.1f} [{lo:.1f}, {hi:.1f}] | {diff} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
