"""Which skills each seat can use on a layout, and how a seat is described to the planner
(``Domain.seat_skills`` / ``Domain.seat_note`` of the Overcooked domain; policy trees read them).

A skill is usable by a seat when some static cell it can target (a dispenser, pot, serving
cell or counter of the right kind) is reachable from that seat's start position. On the
open layouts every seat has all six skills; on forced_coordination the seat on the
ingredient side has only pickups and counter placement (SPEC §2, paper A.15).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Tuple

import numpy as np

from beliefgate.envs.overcooked.layouts import layout_info, resolve_layout
from beliefgate.envs.overcooked.tables import pose_tables
from beliefgate.skills.library import load_builtin

#: the six skills in library order (the policy-tree sandbox's ``SKILLS``)
SKILLS: Tuple[str, ...] = load_builtin("overcooked").names

#: cell kinds a skill can target at some point of an episode (onions and dishes may lie on counters)
_TARGET_KINDS = {
    "pickup_onion": "OX", "put_onion_in_pot": "P", "pickup_dish": "DX", "fill_dish_with_soup": "P",
    "deliver_soup": "S", "place_obj_on_counter": "X",
}


@lru_cache(maxsize=None)
def seat_skills(layout: str, player: int) -> Tuple[str, ...]:
    """Skills (library order) whose targets ``player`` can reach from its start cell on ``layout``."""
    info = layout_info(resolve_layout(layout))
    tables = pose_tables(info.name)
    start = info.start_positions[player]
    poses = [tables.pose(start, d) for d in ((0, -1), (0, 1), (1, 0), (-1, 0))]
    usable = []
    for skill in SKILLS:
        cells = [c for c in info.interactables if info.kind(c) in _TARGET_KINDS[skill]]
        idx = [tables.inter_index[c] for c in cells]
        if idx and np.isfinite(tables.dist[np.ix_(idx, poses)]).any():
            usable.append(skill)
    return tuple(usable)


def seat_note(layout: str, player: int) -> str:
    """One sentence for the prompts about what this seat and its teammate can do."""
    own, mate = seat_skills(layout, player), seat_skills(layout, 1 - player if player < 2 else 0)
    if len(own) == len(SKILLS) and len(mate) == len(SKILLS):
        return "Both cooks can reach everything they need and may use all six skills."
    return (f"You are player {player}. You can only use: {', '.join(own)}. "
            f"Your teammate can only use: {', '.join(mate)}. Items pass between you over the shared counters.")
