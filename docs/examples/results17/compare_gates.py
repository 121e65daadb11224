"""Closed-loop comparison of two gate settings played as two runs of the same cells.

    python docs/examples/results17/compare_gates.py runs/cusum_t_base runs/cusum_t_cusum [LABEL [BASE]]

The second run's agents are relabelled ``<agent>+LABEL`` (default ``cusum``), then every arm is
paired against the arm ``BASE`` (default ``bayes-belief:full``) of the first run on the (layout, partner, seat, seed) cells
all arms played: reward, replans and effective replans per episode, the per-step gap rate against
the SPEC table and the rollout-oracle gap rate, each with a paired bootstrap interval over episodes
(``beliefgate.eval.report.paired_bootstrap``).
"""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "results16"))
from compare_arms import load, matched  # noqa: E402

from beliefgate.eval.report import paired_bootstrap  # noqa: E402

METRICS = ("reward", "replans", "effective_replans", "gap_rate", "oracle_gap_rate")
BASE = "bayes-belief:full"


def mean(values) -> float:
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(values) / len(values) if values else float("nan")


def main(base_dir: str, other_dir: str, label: str = "cusum", base: str = BASE) -> None:
    rows = load(base_dir) + [dict(r, agent=f"{r['agent']}+{label}") for r in load(other_dir)]
    arms, base_rows = matched(rows, base)
    for agent, v in arms.items():
        parts = []
        for m in METRICS:
            text = f"{m}={mean(r.get(m) for r in v):.3f}"
            if agent != base:
                d = paired_bootstrap(v, base_rows, m, unit="episode")
                text += f" ({d.mean:+.3f} [{d.lo:+.3f}, {d.hi:+.3f}])"
            parts.append(text)
        print(f"{agent:32s} " + "  ".join(parts))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(*sys.argv[1:5])
