"""The five classic Overcooked-AI layouts and their static geometry.

Layout names are the classic ones; ``counter_circuit`` maps to the package's
onion-only ``counter_circuit_o_1order`` grid (the 2019 study's ``random3``).
Everything here is static per layout and cached in memory.
"""

from __future__ import annotations
from beliefgate.envs.domain import UnknownLayoutError as DomainUnknownLayoutError

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Tuple

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

Pos = Tuple[int, int]

#: classic name -> layout file name inside the ``overcooked`` package
LAYOUT_FILES: Dict[str, str] = {
    "cramped_room": "cramped_room",
    "asymmetric_advantages": "asymmetric_advantages",
    "coordination_ring": "coordination_ring",
    "forced_coordination": "forced_coordination",
    "counter_circuit": "counter_circuit_o_1order",
}

#: names used by the 2019 human-human study -> classic names
HUMAN_STUDY_NAMES: Dict[str, str] = {
    "cramped_room": "cramped_room",
    "asymmetric_advantages": "asymmetric_advantages",
    "coordination_ring": "coordination_ring",
    "random1": "coordination_ring",
    "random0": "forced_coordination",
    "forced_coordination": "forced_coordination",
    "random3": "counter_circuit",
    "counter_circuit": "counter_circuit",
}

#: the five classic two-player layouts (the human data's and the papers' layouts)
LAYOUTS: Tuple[str, ...] = tuple(LAYOUT_FILES)

#: three-player kitchens (OverForge's Fig. 17 starts): a third chef in the connected room of
#: cramped_room, and one in the left half of asymmetric_advantages' split room. Grids in the
#: ``overcooked`` package's notation (digits are the players' starts).
THREE_PLAYER_GRIDS: Dict[str, Tuple[str, ...]] = {
    "cramped_room_3p": ("XXPXX",
                        "O  2O",
                        "X1 3X",
                        "XDXSX"),
    "asymmetric_advantages_3p": ("XXXXXXXXX",
                                 "O XSXOX S",
                                 "X 3 P 1 X",
                                 "X2  P   X",
                                 "XXXDXDXXX"),
}

#: every layout the classic domain plays, two-player ones first
ALL_LAYOUTS: Tuple[str, ...] = LAYOUTS + tuple(THREE_PLAYER_GRIDS)

# Overcooked direction vectors, in the package's action order.
NORTH, SOUTH, EAST, WEST = (0, -1), (0, 1), (1, 0), (-1, 0)
DIRECTIONS: Tuple[Pos, ...] = (NORTH, SOUTH, EAST, WEST)
DIRECTION_NAMES = ("north", "south", "east", "west")

TERRAIN_NAMES = {
    "X": "counter",
    "O": "onion_dispenser",
    "T": "tomato_dispenser",
    "D": "dish_dispenser",
    "P": "pot",
    "S": "serving",
    " ": "floor",
}


class UnknownLayoutError(DomainUnknownLayoutError):
    """A layout name the classic Overcooked domain does not play."""


def resolve_layout(name: str) -> str:
    """Classic layout name for ``name`` (also accepts the 2019 study's names)."""
    if name in LAYOUT_FILES or name in THREE_PLAYER_GRIDS:
        return name
    if name in HUMAN_STUDY_NAMES:
        return HUMAN_STUDY_NAMES[name]
    raise UnknownLayoutError(f"unknown layout {name!r}; supported layouts: {', '.join(ALL_LAYOUTS)}")


def layout_key(name: str) -> str:
    """What makes two layout names the same layout (the 2019 study's alias and the classic name);
    an unknown name is itself (it is refused where it is used)."""
    try:
        return resolve_layout(name)
    except UnknownLayoutError:
        return name


@dataclass(frozen=True)
class LayoutInfo:
    """Static geometry of one layout.

    ``terrain[y][x]`` is one of ``X O T D P S`` or ``' '`` (floor).
    ``floor`` lists walkable cells in row-major order; ``interactables`` every
    non-floor cell in row-major order (the targets of INTERACT).
    """

    name: str
    terrain: Tuple[str, ...]
    start_positions: Tuple[Pos, ...]
    floor: Tuple[Pos, ...]
    interactables: Tuple[Pos, ...]

    @property
    def width(self) -> int:
        return len(self.terrain[0])

    @property
    def height(self) -> int:
        return len(self.terrain)

    def kind(self, pos: Pos) -> str:
        x, y = pos
        if not (0 <= y < self.height and 0 <= x < self.width):
            return "out"
        return self.terrain[y][x]

    def cells_of(self, kind: str) -> Tuple[Pos, ...]:
        return _cells_of(self, kind)

    @property
    def pots(self) -> Tuple[Pos, ...]:
        return self.cells_of("P")

    @property
    def counters(self) -> Tuple[Pos, ...]:
        return self.cells_of("X")

    def is_floor(self, pos: Pos) -> bool:
        return self.kind(pos) == " "

    @property
    def shared_floor(self) -> bool:
        """Can the players walk into each other's start cells (one floor region for both)?

        False where a counter separates them (forced_coordination, asymmetric_advantages):
        there every hand-over goes over a counter.
        """
        return _shared_floor(self)

    @property
    def separate_kitchens(self) -> bool:
        """Do the players share neither floor nor a counter (they meet only at interactables
        such as pots, as on asymmetric_advantages)? False on forced_coordination, whose
        players hand items over the shared counters, and on every shared floor."""
        if self.shared_floor:
            return False
        touched = [self.touching(p) for p in self.start_positions]
        common = frozenset.intersection(*touched)
        return not (common & frozenset(self.counters))

    def region(self, pos: Pos) -> frozenset:
        """The floor cells a player standing on ``pos`` can walk to (a flood fill; cached)."""
        return _region(self, tuple(pos))

    def touching(self, pos: Pos) -> frozenset:
        """The interactable cells next to :meth:`region` of ``pos``: what that player can reach."""
        return _touching(self, tuple(pos))

    def describe(self) -> Dict[str, object]:
        """A JSON-friendly summary (used by ``beliefgate layouts``)."""
        return {
            "name": self.name,
            "size": [self.width, self.height],
            "grid": list(self.terrain),
            "start_positions": [list(p) for p in self.start_positions],
            "floor_cells": len(self.floor),
            "pots": [list(p) for p in self.pots],
            "onion_dispensers": [list(p) for p in self.cells_of("O")],
            "dish_dispensers": [list(p) for p in self.cells_of("D")],
            "serving": [list(p) for p in self.cells_of("S")],
            "counters": len(self.counters),
        }


@lru_cache(maxsize=None)
def _cells_of(info: LayoutInfo, kind: str) -> Tuple[Pos, ...]:
    return tuple(p for p in info.interactables if info.kind(p) == kind)


@lru_cache(maxsize=None)
def _shared_floor(info: LayoutInfo) -> bool:
    first, *others = info.start_positions
    seen = info.region(first)
    return all(tuple(o) in seen for o in others)


@lru_cache(maxsize=None)
def _region(info: LayoutInfo, start: Pos) -> frozenset:
    seen, todo = {start}, [start]
    while todo:  # 4-neighbour flood fill over the floor
        x, y = todo.pop()
        for nxt in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if nxt not in seen and info.is_floor(nxt):
                seen.add(nxt)
                todo.append(nxt)
    return frozenset(seen)


@lru_cache(maxsize=None)
def _touching(info: LayoutInfo, start: Pos) -> frozenset:
    region = info.region(start)
    return frozenset(c for c in info.interactables
                     if any((c[0] + dx, c[1] + dy) in region for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))))


@lru_cache(maxsize=None)
def make_mdp(name: str, old_dynamics: bool = True):
    """A fresh ``OvercookedGridworld`` for a classic layout.

    ``old_dynamics=True`` (default) starts cooking automatically at three
    ingredients, as in the classic papers and the 2019 human data; with
    ``False`` an INTERACT on a full pot starts it. Cached: the MDP is stateless.
    """
    from overcooked.mdp.overcooked_mdp import OvercookedGridworld

    layout = resolve_layout(name)
    if layout in THREE_PLAYER_GRIDS:
        params = {"layout_name": layout, "start_bonus_orders": [], "rew_shaping_params": None,
                  "start_all_orders": [{"ingredients": ["onion", "onion", "onion"]}]}
        return OvercookedGridworld.from_grid(list(THREE_PLAYER_GRIDS[layout]), params,
                                             {"old_dynamics": old_dynamics})
    return OvercookedGridworld.from_layout_name(LAYOUT_FILES[layout], old_dynamics=old_dynamics)


@lru_cache(maxsize=None)
def layout_info(name: str) -> LayoutInfo:
    """Static geometry of a classic layout (cached)."""
    layout = resolve_layout(name)
    mdp = make_mdp(layout)
    terrain = tuple("".join(row) for row in mdp.terrain_mtx)
    floor = tuple((x, y) for y, row in enumerate(terrain) for x, c in enumerate(row) if c == " ")
    inter = tuple((x, y) for y, row in enumerate(terrain) for x, c in enumerate(row) if c != " ")
    return LayoutInfo(
        name=layout,
        terrain=terrain,
        start_positions=tuple(tuple(p) for p in mdp.start_player_positions),
        floor=floor,
        interactables=inter,
    )
