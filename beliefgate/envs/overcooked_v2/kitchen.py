"""What the V2 kitchen needs from a player, its scene text, progress potential and flat state.

A player uses the recipe only when it can see it (:meth:`~.state.V2State.sees_recipe`); otherwise
it reasons over the recipes the layout has that an open pot's contents can still become -- what any
player can observe. The recipe-belief model of a later issue reads :func:`recipe_set`,
:func:`active_recipe` and :func:`recipe_viewers`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.envs.overcooked_v2.controller import V2Controller, recipes_with
from beliefgate.envs.overcooked_v2.layouts import layout_info
from beliefgate.envs.overcooked_v2.state import V2State

DELIVERY_REWARD = 20.0


def recipe_set(layout: str) -> Tuple[Tuple[int, int, int], ...]:
    """The recipes ``layout`` draws from (sorted ingredient indices)."""
    return layout_info(layout).recipes


def active_recipe(state: V2State) -> Tuple[int, ...]:
    """The recipe active in ``state``."""
    return state.recipe_ingredients


def recipe_viewers(state: V2State) -> List[int]:
    """The players whose observation shows the recipe in ``state``."""
    return [i for i in range(len(state.players)) if state.sees_recipe(i)]


def known_recipe(state: V2State, player: int) -> Optional[Tuple[int, ...]]:
    """The recipe if ``player`` sees it now, else None."""
    return state.recipe_ingredients if state.sees_recipe(player) else None


def candidate_recipes(state: V2State, player: int) -> List[Tuple[int, ...]]:
    """The recipes ``player`` should cook for: the one it sees, else those an open pot can still become."""
    known = known_recipe(state, player)
    if known is not None:
        return [tuple(known)]
    open_pots = [p.ingredients for p in state.pots if p.idle]
    return recipes_with(state.info.recipes, open_pots or [()])


def ingredient_need(state: V2State, player: int, ingredient: int) -> int:
    """How many more of ``ingredient`` the fullest open pot needs for some candidate recipe, beyond
    what the other players carry."""
    pots = [p for p in state.pots if p.idle and not p.full]
    if not pots:
        return 0
    pot = max(pots, key=lambda p: len(p.ingredients))
    best = 0
    for r in candidate_recipes(state, player):
        rest = list(r)
        ok = True
        for i in pot.ingredients:
            if i in rest:
                rest.remove(i)
            else:
                ok = False
        if ok:
            best = max(best, rest.count(ingredient))
    carried = sum(1 for i, p in enumerate(state.players) if i != player and p.held == f"ingredient_{ingredient}")
    return max(best - carried, 0)


def skill_needs(state: V2State, player: int, controller: V2Controller,
                feasible: Optional[np.ndarray] = None) -> Dict[str, float]:
    """How much the kitchen needs each feasible skill of ``player`` now (0 = not useful)."""
    names = controller.library.names
    if feasible is None:
        feasible = controller.feasible(state, player, require_targets=True)
    need = {n: 0.0 for k, n in enumerate(names) if feasible[k]}
    held = state.players[player].held
    pots = state.pots
    others = [p for i, p in enumerate(state.players) if i != player]
    if held is None:
        for n in need:
            if n.startswith("pickup_ingredient_"):
                need[n] = float(ingredient_need(state, player, int(n.rsplit("_", 1)[1])))
        if "pickup_plate" in need:
            soups = sum(1 for p in pots if p.cooking or p.cooked or p.full)
            plates = sum(1 for p in others if p.held in ("plate", "dish"))
            need["pickup_plate"] = float(max(soups - plates, 0))
        if "start_cooking" in need:   # a full pot waits for a hand only where pots cook by interaction
            need["start_cooking"] = float(any(p.idle and p.full for p in pots))
        if "press_recipe_button" in need:
            need["press_recipe_button"] = 1.0 if known_recipe(state, player) is None else 0.0
        return need
    use = None
    if held.startswith("ingredient_"):
        i = int(held.rsplit("_", 1)[1])
        if _fits(state, player, i):
            use = f"put_ingredient_{i}_in_pot"
    elif held == "plate":
        use = "plate_soup" if any(p.ingredients for p in pots) else None
    elif held == "dish":
        use = "deliver_dish"
    if use is not None and use in need:
        need[use] = 1.0
    elif "place_on_counter" in need:
        need["place_on_counter"] = 1.0
    return need


def _fits(state: V2State, player: int, ingredient: int) -> bool:
    """Whether a held ``ingredient`` fits an open pot for some candidate recipe."""
    for pot in state.pots:
        if not pot.idle or pot.full:
            continue
        for r in candidate_recipes(state, player):
            rest = list(r)
            ok = True
            for i in (*pot.ingredients, ingredient):
                if i in rest:
                    rest.remove(i)
                else:
                    ok = False
                    break
            if ok:
                return True
    return False


def _recipe_text(r: Sequence[int]) -> str:
    return "+".join(f"ingredient_{i}" for i in r)


def scene_text(state: V2State, ego: int) -> str:
    """The state as a planner reads it (the recipe only where the ego sees it)."""
    lines = [f"OvercookedV2 {state.layout}, step {state.timestep}, score {state.score:g}."]
    known = known_recipe(state, ego)
    lines.append(f"Recipe: {_recipe_text(known)}." if known is not None else
                 "Recipe: not visible to you; possible recipes: "
                 + "; ".join(_recipe_text(r) for r in state.info.recipes) + ".")
    for i, p in enumerate(state.players):
        who = "You" if i == ego else f"Player {i}"
        lines.append(f"{who} at {list(p.position)} holding {p.held or 'nothing'}.")
    for pot in state.pots:
        status = "cooked" if pot.cooked else f"cooking ({pot.timer} left)" if pot.cooking else "open"
        lines.append(f"Pot at {list(pot.position)}: {_recipe_text(pot.ingredients) or 'empty'}, {status}.")
    counters = state.counters
    if counters:
        lines.append("Counters: " + ", ".join(f"{o} at {list(c)}" for c, o in sorted(counters.items())) + ".")
    return "\n".join(lines)


def progress(state: V2State) -> float:
    """A progress potential in reward units: the score plus partial credit for ingredients in pots,
    cooking and cooked soups, plates and dishes in hand."""
    value = float(state.score)
    for pot in state.pots:
        value += 1.0 * len(pot.ingredients) + (3.0 if pot.cooking else 0.0) + (6.0 if pot.cooked else 0.0)
    for p in state.players:
        value += {"dish": 10.0, "plate": 1.0}.get(p.held or "", 0.0)
    return value / DELIVERY_REWARD


def flat_state(state: V2State, player: int, **options) -> Dict[str, Any]:
    """Named features a policy tree reads (the recipe only where ``player`` sees it)."""
    known = known_recipe(state, player)
    out: Dict[str, Any] = {
        "held": state.players[player].held or "nothing",
        "recipe": "-".join(map(str, known)) if known is not None else "unknown",
        "timestep": state.timestep,
    }
    for i, p in enumerate(state.players):
        if i != player:
            out[f"player_{i}_held"] = p.held or "nothing"
    for k, pot in enumerate(state.pots):
        out[f"pot_{k}_ingredients"] = "-".join(map(str, pot.ingredients)) or "empty"
        out[f"pot_{k}_status"] = "cooked" if pot.cooked else "cooking" if pot.cooking else "open"
    return out
