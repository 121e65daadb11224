"""What the kitchen needs right now, from one player's point of view (a planning hint).

Used by the rule planner and listed in LLM prompts; scripted partners apply the
same counts with their own preferences.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from beliefgate.envs.overcooked.controller import OvercookedController
from beliefgate.envs.overcooked.layouts import layout_info
from beliefgate.envs.overcooked.state import POT_CAPACITY, SymbolicState


def _others_holding(state: SymbolicState, player: int, name: str) -> int:
    return sum(1 for i, p in enumerate(state.players) if i != player and p.held == name)


def onions_needed(state: SymbolicState, player: int) -> int:
    """Onions the pots still need beyond those other players carry."""
    missing = sum(POT_CAPACITY - p.ingredients for p in state.pots if not p.full)
    return missing - _others_holding(state, player, "onion")


def dishes_needed(state: SymbolicState, player: int) -> int:
    """Soups that are full, cooking or ready, minus dishes other players carry."""
    coming = sum(1 for p in state.pots if p.full)
    return coming - _others_holding(state, player, "dish")


def sole_cook(state: SymbolicState, player: int) -> bool:
    """Is ``player`` the only one who can reach the pots it reaches (a counter keeps the
    others away, as on forced_coordination)? Then it must load every onion itself."""
    info = layout_info(state.layout)
    mine = info.touching(state.players[player].position) & frozenset(info.pots)
    return bool(mine) and not any(info.touching(p.position) & mine
                                  for i, p in enumerate(state.players) if i != player)


def held_wanted(state: SymbolicState, player: int) -> bool:
    """Is the item ``player`` holds wanted now (``False`` with empty hands)?

    An onion while the pots need more than the others carry; a dish while there are more
    soups than dishes the others carry, where a soup is a pot with ingredients, or, for a
    :func:`sole_cook` (who must put its dish down to load the onions), only a full pot;
    a soup always.
    """
    held = state.players[player].held
    if held is None:
        return False
    if held == "onion":
        return onions_needed(state, player) > 0
    if held == "dish":
        if sole_cook(state, player):
            soups = sum(1 for p in state.pots if p.full)
        else:
            soups = sum(1 for p in state.pots if p.ingredients > 0 or p.full)
        return soups - _others_holding(state, player, "dish") > 0
    return True


def counter_sides(state: SymbolicState, player: int) -> Tuple[frozenset, frozenset, frozenset]:
    """``(mine, shared, occupied)``: the counters ``player`` can reach, those of them another
    player can reach too (the hand-over counters), and the counters holding an object."""
    info = layout_info(state.layout)
    mine = info.touching(state.players[player].position) & frozenset(info.counters)
    theirs = frozenset().union(*(info.touching(p.position) for i, p in enumerate(state.players) if i != player))
    return mine, mine & theirs, frozenset(c.position for c in state.counters)


def placement_targets(state: SymbolicState, player: int) -> Tuple[Optional[frozenset], frozenset]:
    """``(allowed, excluded)`` counters for ``player`` putting its held item down, on a layout
    where a counter separates the players (elsewhere every counter is shared: no restriction).

    A wanted item (:func:`held_wanted`) is a hand-over: it goes on a free counter the
    others can reach (``allowed``). A surplus item goes where only ``player`` can reach, if
    such a counter is free: the hand-over counters are ``excluded``. Without this two players
    separated by a counter fill every hand-over cell, or hand nothing over, and stall.
    """
    if state.players[player].held is None:
        return None, frozenset()
    mine, shared, occupied = counter_sides(state, player)
    if not shared or shared == mine:
        return None, frozenset()
    if held_wanted(state, player):
        return (shared if shared - occupied else None), frozenset()
    return None, (shared if mine - shared - occupied else frozenset())


#: the item each pickup skill takes
PICKUP_ITEM = {"pickup_onion": "onion", "pickup_dish": "dish"}


def clearing_targets(state: SymbolicState, player: int, skill: str) -> Optional[frozenset]:
    """Where a :func:`sole_cook` should take ``skill``'s item from when every hand-over
    counter is occupied and one of its own counters is free: the hand-over counters holding
    that item (taking one frees a cell for the next hand-over). ``None``: no restriction."""
    item = PICKUP_ITEM.get(skill)
    if item is None or not sole_cook(state, player):
        return None
    mine, shared, occupied = counter_sides(state, player)
    if not shared or not shared <= occupied or not (mine - shared - occupied):
        return None
    cells = frozenset(c.position for c in state.counters if c.position in shared and c.name == item)
    return cells or None


#: the skill that puts a held item down on a counter
PLACE = "place_obj_on_counter"


def start_targets(state: SymbolicState, player: int, skill: str) -> Tuple[Optional[frozenset], frozenset]:
    """``(allowed, excluded)`` target cells an ego starts ``skill`` with in ``state``: a
    put-down by :func:`placement_targets`, a pickup by :func:`clearing_targets`;
    ``(None, frozenset())`` means no restriction."""
    if skill == PLACE:
        return placement_targets(state, player)
    return clearing_targets(state, player, skill), frozenset()


def skill_needs(state: SymbolicState, player: int, controller: OvercookedController,
                feasible: np.ndarray) -> Dict[str, float]:
    """How many times each feasible skill of ``player`` is needed now (0 = not useful).

    Pickups count what the pots need beyond what other players visibly carry; a
    skill that uses the held object counts 1 while that item is wanted (an onion the
    pots still need, a dish for a soup nobody else is bringing a dish to); a surplus
    item makes putting it down count 1.
    """
    names = controller.library.names
    held = state.players[player].held
    need = {n: 0.0 for k, n in enumerate(names) if feasible[k]}
    if held is None:
        if "pickup_onion" in need:
            need["pickup_onion"] = float(max(onions_needed(state, player), 0))
        if "pickup_dish" in need:
            need["pickup_dish"] = float(max(dishes_needed(state, player), 0))
    else:
        use = {"onion": "put_onion_in_pot", "dish": "fill_dish_with_soup", "soup": "deliver_soup"}.get(held)
        wanted = held_wanted(state, player)
        if use in need and wanted:
            need[use] = 1.0
        elif "place_obj_on_counter" in need:
            need["place_obj_on_counter"] = 1.0  # a surplus item: put it down
        elif use in need:
            need[use] = 1.0
    return need


def useful_skills(state: SymbolicState, player: int, controller: OvercookedController,
                  feasible: np.ndarray) -> Tuple[str, ...]:
    """Feasible skills of ``player`` that advance a soup now (need > 0), in library order."""
    need = skill_needs(state, player, controller, feasible)
    return tuple(n for n in controller.library.names if need.get(n, 0.0) > 0)
