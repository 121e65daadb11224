"""What the V2 kitchen needs from a player, its scene text, progress potential and flat state.

A player uses the recipe only when it can see it (:meth:`~.state.V2State.sees_recipe`); otherwise
it reasons over the recipes the layout has that an open pot's contents can still become -- what any
player can observe. The recipe-belief model of a later issue reads :func:`recipe_set`,
:func:`active_recipe` and :func:`recipe_viewers`.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from beliefgate.errors import InputError
from beliefgate.envs.overcooked_v2.controller import V2Controller, recipes_with
from beliefgate.envs.overcooked_v2.layouts import decode_ingredients, layout_info
from beliefgate.envs.overcooked_v2.state import V2State, detect_events

DELIVERY_REWARD = 20.0


class UnknownRecipeError(InputError):
    """A recipe (goal) name that the layout does not have."""


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


def recipe_name(recipe: Sequence[int]) -> str:
    """A recipe's goal name (its sorted ingredient indices joined by ``-``: ``0-0-1``)."""
    return "-".join(str(int(i)) for i in sorted(recipe))


def recipe_names(layout: str) -> List[str]:
    """The goal names of the recipes ``layout`` draws from, in :func:`recipe_set` order."""
    return [recipe_name(r) for r in recipe_set(layout)]


def parse_recipe(name: str, layout: str) -> Tuple[int, ...]:
    """The recipe of a goal name of :func:`recipe_names` (:class:`UnknownRecipeError` if ``layout``
    has no such recipe)."""
    for r in recipe_set(layout):
        if recipe_name(r) == name:
            return tuple(r)
    raise UnknownRecipeError(f"recipe {name!r} is not one of {layout}'s recipes "
                             f"({', '.join(recipe_names(layout))})")


def _rest(recipe: Sequence[int], contents: Sequence[int]) -> Optional[List[int]]:
    """What ``recipe`` still needs after ``contents`` (None when ``contents`` do not fit it)."""
    rest = list(recipe)
    for i in contents:
        if i not in rest:
            return None
        rest.remove(i)
    return rest


def _dead(contents: Sequence[int], candidates: Sequence[Sequence[int]]) -> bool:
    """Whether a started pot's ``contents`` fit none of the ``candidates``: a dead pot (the recipe was
    redrawn under it, or a wrong ingredient went in). It can only be cleared -- filled with any
    ingredient, cooked, plated and served or set down -- and until then it blocks the kitchen."""
    return bool(contents) and all(_rest(r, contents) is None for r in candidates)


def _carried(state: V2State, player: int) -> List[int]:
    """The ingredients the players other than ``player`` hold now."""
    return [int(p.held.rsplit("_", 1)[1]) for i, p in enumerate(state.players)
            if i != player and p.held is not None and p.held.startswith("ingredient_")]


def candidate_recipes(state: V2State, player: int, recipe: Optional[Sequence[int]] = None) -> List[Tuple[int, ...]]:
    """The recipes ``player`` should cook for: the one it sees; else ``recipe`` (a believed recipe)
    when an open pot can still become it; else what it observes now says: the recipes an open pot's
    contents can still become, narrowed to those that also take the ingredients the other players
    hold now (when some do) -- a player without a belief copies what is in the pot and in its
    teammates' hands."""
    known = known_recipe(state, player)
    if known is not None:
        return [tuple(known)]
    open_pots = [p.ingredients for p in state.pots if p.idle] or [()]
    consistent = recipes_with(state.info.recipes, open_pots)
    if recipe is not None and tuple(sorted(recipe)) in consistent:
        return [tuple(sorted(recipe))]
    carried = tuple(_carried(state, player))
    if carried:
        fitting = recipes_with(consistent, [tuple(c) + carried for c in open_pots])
        if fitting:
            return fitting
    return consistent


def goal_in_making(state: V2State, weights: Mapping[str, float]) -> Optional[str]:
    """Of the recipes named in ``weights`` with weight > 0, the one the kitchen has started: the
    contents of a held dish, then of a cooked, then of a cooking pot, when they are such a recipe;
    else the heaviest such recipe (first in ``weights``' order on a tie) that the fullest open pot
    holding ingredients can still become; None when nothing is started or nothing fits."""
    support = [n for n, w in weights.items() if w > 0]
    made = ([decode_ingredients(p.inventory) for p in state.players if p.held == "dish"]
            + [pot.ingredients for pot in state.pots if pot.cooked]
            + [pot.ingredients for pot in state.pots if pot.cooking])
    for contents in made:
        if contents and recipe_name(contents) in support:
            return recipe_name(contents)
    started = [pot for pot in state.pots if pot.idle and pot.ingredients]
    if not started:
        return None
    fullest = max(started, key=lambda pot: len(pot.ingredients)).ingredients
    fitting = [n for n in support if _rest(parse_recipe(n, state.layout), fullest) is not None]
    return max(fitting, key=lambda n: weights[n]) if fitting else None


def ingredient_need(state: V2State, player: int, ingredient: int, recipe: Optional[Sequence[int]] = None) -> int:
    """How many more of ``ingredient`` the fullest open pot needs for some candidate recipe, beyond
    what the other players carry; a dead pot (:func:`_dead`) needs its free places filled with any
    ingredient, beyond every ingredient the other players carry."""
    pots = [p for p in state.pots if p.idle and not p.full]
    if not pots:
        return 0
    pot = max(pots, key=lambda p: len(p.ingredients))
    candidates = candidate_recipes(state, player, recipe)
    if _dead(pot.ingredients, candidates):
        return max(3 - len(pot.ingredients) - len(_carried(state, player)), 0)
    best = 0
    for r in candidates:
        rest = _rest(r, pot.ingredients)
        if rest is not None:
            best = max(best, rest.count(ingredient))
    carried = sum(1 for i, p in enumerate(state.players) if i != player and p.held == f"ingredient_{ingredient}")
    return max(best - carried, 0)


def recipe_serves(state: V2State, player: int, names: Sequence[str],
                  recipes: Sequence[Sequence[int]]) -> np.ndarray:
    """``serves[g, k]``: whether skill ``names[k]`` moves recipe ``recipes[g]`` forward for ``player``
    in ``state`` -- the goal-conditioned skill table of the recipe belief. An ingredient skill (fetch
    or put ingredient ``i``) serves a recipe that still needs ``i`` in the fullest open pot beyond
    what the other players carry (a recipe-seeing cook's rule); every other skill serves every recipe."""
    serves = np.ones((len(recipes), len(names)), dtype=bool)
    pots = [p for p in state.pots if p.idle and not p.full]
    contents = max(pots, key=lambda p: len(p.ingredients)).ingredients if pots else None
    carried = _carried(state, player)
    for g, r in enumerate(recipes):
        rest = list(r)
        for i in (contents or ()):
            if i in rest:
                rest.remove(i)
        for i in carried:
            if i in rest:
                rest.remove(i)
        for k, n in enumerate(names):
            if n.startswith("pickup_ingredient_") or (n.startswith("put_ingredient_") and n.endswith("_in_pot")):
                i = int(n.split("_")[2])
                serves[g, k] = contents is not None and i in rest
    return serves


#: a delivered dish, or a recipe the ego sees, is near-certain evidence about the recipe (finite, so
#: that no step is impossible under every recipe)
LOG_RULED_OUT = float(np.log(1e-4))


def recipe_evidence(prev: V2State, state: V2State, player: int, viewer: int, names: Sequence[str],
                    concentration: float, use_view: bool = True) -> Tuple[np.ndarray, float, Optional[np.ndarray]]:
    """The recipe belief's evidence for the step ``prev -> state`` of teammate ``player``, as
    ``viewer`` observes it: the ``[G, K]`` goal-conditioned skill log-weights in ``prev``
    (:func:`recipe_serves` with ``concentration``), the probability that the recipe is redrawn
    after the step (1 after a correct delivery where the episode resamples on delivery), and direct
    evidence ``[G]`` (None when none): a delivered dish says its recipe is (correct) or is not
    (wrong) the active one, and a recipe ``viewer`` sees in ``prev`` is the active one (unless
    ``use_view`` is false: an ablation that leaves out the viewer's own sight of the recipe)."""
    from beliefgate.models.goal import goal_skill_log_weights

    recipes = [tuple(r) for r in prev.info.recipes]
    log_weights = goal_skill_log_weights(recipe_serves(prev, player, names, recipes), concentration)
    events = detect_events(prev, state)
    direct = np.zeros(len(recipes))
    seen = False
    change = 0.0
    for i, ev in enumerate(events):
        for e in ev:
            if e in ("deliver:correct", "deliver:wrong"):
                dish = decode_ingredients(prev.players[i].inventory)
                match = np.array([r == dish for r in recipes])
                if e == "deliver:correct":
                    direct[~match] += LOG_RULED_OUT
                    if state.sample_recipe_on_delivery:
                        change = 1.0
                else:
                    direct[match] += LOG_RULED_OUT
                seen = True
    if use_view and prev.sees_recipe(viewer):
        direct[np.array([r != tuple(prev.recipe_ingredients) for r in recipes])] += LOG_RULED_OUT
        seen = True
    return log_weights, change, (direct if seen else None)


def skill_needs(state: V2State, player: int, controller: V2Controller,
                feasible: Optional[np.ndarray] = None, recipe: Optional[Sequence[int]] = None) -> Dict[str, float]:
    """How much the kitchen needs each feasible skill of ``player`` now (0 = not useful); ``recipe``
    is a recipe ``player`` believes in (used where it does not see the recipe and a pot can still
    become it; see :func:`candidate_recipes`)."""
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
                need[n] = float(ingredient_need(state, player, int(n.rsplit("_", 1)[1]), recipe))
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
        if _fits(state, player, i, recipe):
            use = f"put_ingredient_{i}_in_pot"
    elif held == "plate":
        use = "plate_soup" if _soup_coming(state, player) else None
    elif held == "dish":
        use = "deliver_dish"
    if use is not None and use in need:
        need[use] = 1.0
    elif "place_on_counter" in need:
        need["place_on_counter"] = 1.0
    return need


def _soup_coming(state: V2State, player: int) -> bool:
    """Whether a plate ``player`` holds will find a soup: a pot is full, cooking or cooked, or a pot holds
    ingredients and another player's hands are not taken by a plate too (it can fill the pot). When
    every other player holds a plate as well, nobody fills a filling pot: waiting at it deadlocks."""
    if any(p.full or p.cooking or p.cooked for p in state.pots):
        return True
    fillers = [p for i, p in enumerate(state.players) if i != player and p.held != "plate"]
    return bool(fillers) and any(p.ingredients for p in state.pots)


def serves_recipe(state: V2State, player: int, controller: V2Controller, skill: str, partner_skill: str,
                  recipe: Sequence[int]) -> bool:
    """Whether ``player``'s ``skill`` adds to what the kitchen needs for ``recipe`` once a teammate
    running ``partner_skill`` is counted: its need under the recipe (:func:`skill_needs`) is
    positive, and a pickup the teammate is also making is needed twice (the V2 gap metric's
    complementarity, which knows the recipe where the role table cannot)."""
    need = skill_needs(state, player, controller, None, recipe).get(skill, 0.0)
    if skill == partner_skill and skill.startswith("pickup"):
        need -= 1.0
    return need > 0


def _fits(state: V2State, player: int, ingredient: int, recipe: Optional[Sequence[int]] = None) -> bool:
    """Whether a held ``ingredient`` fits an open pot for some candidate recipe (any ingredient fits a
    dead pot: :func:`_dead`)."""
    candidates = candidate_recipes(state, player, recipe)
    for pot in state.pots:
        if not pot.idle or pot.full:
            continue
        if _dead(pot.ingredients, candidates):
            return True
        for r in candidates:
            if _rest(r, (*pot.ingredients, ingredient)) is not None:
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


def recipe_progress(state: V2State) -> float:
    """:func:`progress` counted toward the active recipe only (the value of an imagined
    continuation under a believed recipe): a pot's ingredients, cooking and cooked soup count only
    when its contents fit the recipe (a pot that cannot become it costs one unit per ingredient, the
    pot is blocked); a held dish counts only if it is the recipe's, a held ingredient (0.5) only if
    an open pot can still take it for the recipe, a held plate (1) only if a full, cooking or cooked
    pot of the recipe waits for it (one plate per such pot: a plate held over a pot that is still
    filling is no progress, as ``skill_needs`` asks for a plate only then)."""
    recipe = tuple(state.recipe_ingredients)
    value = float(state.score)
    open_rest = []
    soups = 0   # pots of the recipe that a plate can take (now or once they cook)
    for pot in state.pots:
        rest = _rest(recipe, pot.ingredients)
        if rest is None:
            value -= 1.0 * len(pot.ingredients)
            continue
        value += 1.0 * len(pot.ingredients) + (3.0 if pot.cooking else 0.0) + (6.0 if pot.cooked else 0.0)
        soups += bool(pot.full or pot.cooking or pot.cooked)
        if pot.idle and not pot.full:
            open_rest.append(rest)
    for p in state.players:
        held = p.held or ""
        if held == "dish":
            value += 10.0 if decode_ingredients(p.inventory) == recipe else 0.0
        elif held == "plate":
            value += 1.0 if soups > 0 else 0.0
            soups -= 1
        elif held.startswith("ingredient_"):
            i = int(held.rsplit("_", 1)[1])
            value += 0.5 if any(i in rest for rest in open_rest) else 0.0
    return value / DELIVERY_REWARD

