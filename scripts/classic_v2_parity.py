"""Print the numbers of docs/overcooked_v2.md "Classic <-> JaxMARL parity".

    PYTHONPATH=. python scripts/classic_v2_parity.py

Runs the parity test's own trajectories and comparisons (``tests/test_classic_v2_parity.py``): per
classic layout, how many of its steps agree field by field; what they exercised; and, for the
cooking rule, every pairing of the classic ``old_dynamics`` with JaxMARL's ``start_cooking_interaction``
on 300 random states of two kitchens.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import test_classic_v2_parity as T  # noqa: E402

from beliefgate.envs.overcooked import jaxmarl_bridge as B  # noqa: E402


def main() -> None:
    covered = Counter()
    print("| layout | steps | " + " | ".join(T.FIELDS) + " |")
    for k, layout in enumerate(T.LAYOUTS):
        transitions = T.classic_transitions(layout, seed=k)
        nxt = B.JaxmarlTwin(layout).step([t[1] for t in transitions], [t[2] for t in transitions])
        agree = T.compare(transitions, *nxt)
        covered += T.coverage(layout, transitions)
        print(f"| {layout} | {len(transitions)} | " + " | ".join(str(agree[f]) for f in T.FIELDS) + " |")
    print("exercised:", ", ".join(f"{k} {v}" for k, v in sorted(covered.items())))
    for layout in ("cramped_room", "forced_coordination"):
        for old, sci in ((True, False), (False, True), (True, True), (False, False)):
            agree = T.cooking_rule_comparison(layout, old, sci, 300, seed=11)
            print(f"{layout} old_dynamics={old} start_cooking_interaction={sci}: {dict(agree)}")


if __name__ == "__main__":
    main()
