"""Pooled reward of every arm in one or more OverForge run directories, paired against one arm.

    python docs/examples/results16/compare_arms.py runs/overforge_unc,runs/overforge_ev overforge

Reads each finished run's results table (``beliefgate.eval.runner.load_results``), keeps the
(layout, partner, seat, seed) cells every arm has played, and prints per arm the mean
reward, sub-tasks abandoned per episode (Σ⁻), the mean reward per layout and the paired
bootstrap difference against the base arm (``beliefgate.eval.report.paired_bootstrap``, unit =
episode).
"""

import collections
import sys

from beliefgate.errors import InputError
from beliefgate.eval.report import paired_bootstrap
from beliefgate.eval.runner import load_results


def cell(r: dict) -> tuple:
    return r["layout"], r["partner"], r["seat"], r["seed"]


def load(dirs: str) -> list:
    """The finished episodes of comma-separated run directories (a directory that is not a
    finished run exits with its one-line error, no traceback)."""
    try:
        return [r for d in dirs.split(",") for r in load_results(d)]
    except InputError as exc:
        sys.exit(f"error: {exc}")


def main(dirs: str, base: str) -> None:
    compare(load(dirs), base)


def matched(rows: list, base: str) -> tuple:
    """``(arms, base_rows)``: every arm's episodes on the cells all arms share (``{agent: rows}``),
    and the base arm's among them (a missing base arm exits with a one-line error)."""
    by = collections.defaultdict(list)
    for r in rows:
        by[r["agent"]].append(r)
    if base not in by:
        sys.exit(f"no episodes of the base arm {base!r}; the arms here: {', '.join(sorted(by))}")
    common = set.intersection(*[set(map(cell, v)) for v in by.values()])
    if not common:
        sys.exit(f"error: the arms {', '.join(sorted(by))} share no (layout, partner, seat, seed) cell")
    print("matched episodes per arm", len(common))
    arms = {agent: [r for r in v if cell(r) in common] for agent, v in sorted(by.items())}
    return arms, arms[base]


def compare(rows: list, base: str) -> None:
    """Print every arm of ``rows`` on the cells all arms share, paired against ``base``."""
    arms, base_rows = matched(rows, base)
    for agent, v in arms.items():
        per_layout = collections.defaultdict(list)
        for r in v:
            per_layout[r["layout"]].append(r["reward"])
        layouts = " ".join(f"{k[:6]}={sum(x) / len(x):.0f}" for k, x in sorted(per_layout.items()))
        line = (f"{agent:38s} n={len(v):3d} reward={sum(r['reward'] for r in v) / len(v):.1f} "
                f"abandoned={sum(r.get('abandoned', 0) for r in v) / len(v):.2f} {layouts}")
        if agent != base:
            d = paired_bootstrap(v, base_rows, "reward", unit="episode")
            line += f"  vs {base}: {d.mean:+.1f} [{d.lo:+.1f}, {d.hi:+.1f}]"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "bayes-belief:full")
