"""An arm composed after the fact from two played arms, by layout, compared like compare_arms.

    python docs/examples/results16/compose_by_layout.py runs/overforge_t20 overforge \\
        overforge:uncommitted=rule cramped_room,coordination_ring,counter_circuit overforge

reads like "take `overforge:uncommitted=rule`'s episodes on the three layouts where the players
share one floor region and `overforge`'s elsewhere": the arm that `uncommitted=auto` plays
(docs/overforge.md, where this chose it on seeds 1000-1004). The composed arm is printed as
``composed`` beside the played ones, every row paired against the base arm on the same cells.
Only a played arm can be a default: the composition says what to play next, the play says
what it scores.
"""

import sys

from compare_arms import compare, load


def main(dirs: str, base: str, inside: str, layouts: str, outside: str) -> None:
    rows = load(dirs)
    chosen = set(layouts.split(","))
    known = {r["layout"] for r in rows}
    if not chosen <= known:
        raise SystemExit(f"layouts {sorted(chosen - known)} are not in {dirs} (it has {sorted(known)})")
    composed = [dict(r, agent="composed") for r in rows
                if (r["agent"] == inside and r["layout"] in chosen) or (r["agent"] == outside and r["layout"] not in chosen)]
    compare(rows + composed, base)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
