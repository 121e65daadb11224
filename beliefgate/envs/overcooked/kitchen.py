"""What the kitchen needs right now, from one player's point of view (a planning hint).

Used by the rule planner and listed in LLM prompts; scripted partners apply the
same counts with their own preferences.
"""

from __future__ import annotations

from typing import Dict, Tuple

import numpy as np

from beliefgate.envs.overcooked.controller import OvercookedController
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
        if held == "onion":
            # this onion is wanted if the pots need more than the others already carry
            wanted = onions_needed(state, player) > 0
        elif held == "dish":
            soups = sum(1 for p in state.pots if p.ingredients > 0 or p.full)
            wanted = soups - _others_holding(state, player, "dish") > 0
        else:
            wanted = True
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
