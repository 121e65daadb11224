"""The flat state dict a policy tree reads on an OvercookedV2 layout (schema ``overcooked_v2/1``).

:func:`flat_state` builds it from a :class:`~beliefgate.envs.overcooked_v2.state.V2State` for the
player in seat ``player`` (any seat, any number of players). It holds only plain JSON data (it goes
to the sandbox worker as is) and only what that player can observe: the recipe appears only where
the player sees it (:meth:`~.state.V2State.sees_recipe`); everything else (hands, pots, counters)
is in every player's view. Every key is listed in :data:`FLAT_STATE_KEYS`; a change of meaning or a
removed key bumps :data:`FLAT_STATE_VERSION`. Keys shared with the classic schema
(``beliefgate/envs/overcooked/flat_state.py``) keep its meaning where the game allows it.

Keys
----
``version``, ``game``
    :data:`FLAT_STATE_VERSION` and ``"overcooked_v2"`` (a tree can tell the V2 schema from the
    classic one by ``state.get("game")``).
``self_player``, ``players``, ``teammates``
    the controlled seat, the number of players N (2 or 3), and the other seats in seat order. The
    first of ``teammates`` is *the* teammate: the one whose skill the tree predicts.
``hold``
    one entry per seat: ``"empty"``, ``"plate"``, ``"dish"`` (a plated soup), ``"ingredient_<i>"``
    or ``"mixed"`` (an inventory JaxMARL can hold but no skill makes).
``holdings``
    ``{"self": ..., "teammate": ...}``: the controlled player's and the first teammate's holds.
``teammate_holds``
    the holds of every teammate, in the order of ``teammates``.
``dishes``
    one entry per seat: the recipe name of the dish it holds (``"0-0-1"``: sorted ingredient
    indices joined by ``-``), else ``None``.
``recipe``, ``recipe_visible``
    the active recipe's name where the controlled player sees it now (an indicator, or a pressed
    button, in its view), else ``None``; and whether it does.
``recipes``
    the names of the recipes the layout draws from.
``candidate_recipes``
    the recipes the controlled player should cook for: ``[recipe]`` when it sees it; else those an
    open pot's contents can still become, narrowed to those that also take what the teammates hold
    now (when some do) -- what the no-belief agent cooks (:func:`~.kitchen.candidate_recipes`).
``ingredients``
    the ingredient indices the layout has a pile of (its ``pickup_ingredient_<i>`` skills).
``ingredient_need``
    ``{"ingredient_<i>": n}`` for each of ``ingredients``: how many more of ingredient ``i`` the
    fullest open pot needs for some candidate recipe beyond what the teammates carry now
    (:func:`~.kitchen.ingredient_need`); 0 when no pot is open.
``ingredient_sure``
    the same counts taken as the minimum over the candidate recipes: what the pot needs whichever
    candidate is the recipe (equal to ``ingredient_need`` where the recipe is visible or the pot's
    contents and the teammates' hands leave one candidate).
``self_reachable``, ``teammate_reachable``
    the skills the controlled player / the first teammate can reach a target of now (a target
    exists in this state and the player's room leads to it; what it holds and the other players'
    bodies are not considered): in a split kitchen a seat that cannot reach the pot has no
    ``put_ingredient_<i>_in_pot`` here.
``held_fits``
    the controlled player holds an ingredient that an open pot can take for a candidate recipe.
``pot``
    one dict per pot in the layout's pot order: ``ingredients`` (sorted indices), ``count``
    (``len(ingredients)``, 0-3), ``state`` (``"idle"`` while filling or empty, ``"cooking"``,
    ``"ready"``), ``timers`` (cook ticks left while cooking, 0 when ready, ``None`` when idle),
    ``contents`` (the contents' recipe name, ``""`` when empty) and ``fits`` (the contents are, or
    can still become, a candidate recipe; an empty pot fits).
``any_soup_ready``, ``any_soup_cooking``, ``any_pot_not_full``
    some pot holds a ready soup / is cooking / is idle with fewer than three ingredients.
``soups_coming``
    pots that are cooking, ready, or idle and full (a soup a plate will be needed for).
``plates_needed``
    ``soups_coming`` minus the plates and dishes the teammates hold (at least 0).
``start_by_hand``, ``any_pot_to_start``
    pots cook only when a player interacts with them (the episode's ``start_cooking_interaction``);
    and some idle pot with ingredients waits for that hand (always false without the option).
``num_empty_counters``, ``counter_counts``
    counter cells with nothing on them; and ``{object: n}`` of what lies on the others (keys as
    in ``hold``).
``teammate_last_completed_skill``
    the last skill the first teammate visibly completed this episode (from its interaction
    events), or ``None``.
``teammate_last_inferred_skill``
    the caller's latest inference of the first teammate's current skill, or ``None``: the tree's
    own previous prediction, or the belief gate's MAP skill (the Bayesian variant).
``self_last_skill``
    the skill the controlled player was executing before this decision, or ``None``.
``believed_recipe``, ``believed_confidence``
    the caller's recipe belief, where it keeps one (the policy-tree agent on a layout that draws
    several recipes: its :class:`~beliefgate.agents.goal_tracker.GoalTracker` about the first
    teammate): the most probable recipe's name and its posterior probability; ``None`` otherwise.
    Unlike ``recipe`` it remembers: a recipe seen a while ago, the teammate's ingredient choices,
    a wrong dish.
``believed_need``
    ``{"ingredient_<i>": n}``: ``ingredient_need`` with ``believed_recipe`` taken as the recipe
    where the fullest open pot can still become it (:func:`~.kitchen.candidate_recipes` with
    ``recipe``); equal to ``ingredient_need`` without a belief, or where the recipe is seen.
``timestep``
    the state's step.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from beliefgate.envs.overcooked_v2.controller import controller_for
from beliefgate.envs.overcooked_v2.kitchen import (_fits, _rest, candidate_recipes, ingredient_need, known_recipe,
                                                   recipe_name)
from beliefgate.envs.overcooked_v2.layouts import decode_ingredients, layout_info
from beliefgate.envs.overcooked_v2.state import V2State
from beliefgate.errors import InputError

FLAT_STATE_VERSION = 1
SCHEMA = "overcooked_v2/1"

FLAT_STATE_KEYS = (
    "version", "game", "self_player", "players", "teammates", "hold", "holdings", "teammate_holds", "dishes",
    "recipe", "recipe_visible", "recipes", "candidate_recipes", "ingredients", "ingredient_need", "ingredient_sure",
    "self_reachable", "teammate_reachable", "held_fits",
    "pot", "any_soup_ready", "any_soup_cooking", "any_pot_not_full", "soups_coming", "plates_needed",
    "start_by_hand", "any_pot_to_start", "num_empty_counters", "counter_counts",
    "teammate_last_completed_skill", "teammate_last_inferred_skill", "self_last_skill", "timestep",
    "believed_recipe", "believed_confidence", "believed_need",
)


class V2FlatStateError(InputError):
    """A seat the state does not have, or a recipe belief that does not fit the layout."""


def _pot_dict(pot, fits: bool) -> Dict[str, Any]:
    state = "ready" if pot.cooked else "cooking" if pot.cooking else "idle"
    timers = 0 if pot.cooked else int(pot.timer) if pot.cooking else None
    ing = sorted(int(i) for i in pot.ingredients)
    return {"ingredients": ing, "count": len(ing), "state": state, "timers": timers,
            "contents": recipe_name(ing) if ing else "", "fits": fits}


def _derived(d: Dict[str, Any]) -> Dict[str, Any]:
    """The keys that follow from ``pot`` and the teammates' holds (shared by states and probes)."""
    pots = d["pot"]
    coming = sum(1 for p in pots if p["state"] != "idle" or p["count"] >= 3)
    plated = sum(1 for h in d["teammate_holds"] if h in ("plate", "dish"))
    return {
        "any_soup_ready": any(p["state"] == "ready" for p in pots),
        "any_soup_cooking": any(p["state"] == "cooking" for p in pots),
        "any_pot_not_full": any(p["state"] == "idle" and p["count"] < 3 for p in pots),
        "soups_coming": coming,
        "plates_needed": max(coming - plated, 0),
    }


def _sure_need(state: V2State, player: int, candidates) -> Dict[str, int]:
    """Per ingredient: what the fullest open pot needs whichever candidate recipe is active, beyond
    what the other players carry (0 when no pot is open)."""
    info = state.info
    pots = [p for p in state.pots if p.idle and not p.full]
    out = {f"ingredient_{i}": 0 for i in info.ingredients}
    if not pots:
        return out
    pot = max(pots, key=lambda p: len(p.ingredients))
    rests = [r for r in (_rest(c, pot.ingredients) for c in candidates) if r is not None]
    if not rests:
        return out
    for i in info.ingredients:
        carried = sum(1 for j, p in enumerate(state.players) if j != player and p.held == f"ingredient_{i}")
        out[f"ingredient_{i}"] = max(min(r.count(i) for r in rests) - carried, 0)
    return out


def _reachable(state: V2State, player: int) -> List[str]:
    """The skills ``player`` can reach a target of now (:meth:`~.controller.V2Controller.steps_to_targets`)."""
    ctrl = controller_for(state.layout)
    steps = ctrl.steps_to_targets(state, player)
    return [n for n, d in zip(ctrl.library.names, steps) if np.isfinite(d)]


def flat_state(state: V2State, player: int, *, teammate_last_completed_skill: Optional[str] = None,
               teammate_last_inferred_skill: Optional[str] = None,
               self_last_skill: Optional[str] = None, believed_recipe: Optional[str] = None,
               believed_confidence: Optional[float] = None) -> Dict[str, Any]:
    """The flat dict of ``state`` as seat ``player`` observes it (see the module doc); the recipe
    belief (``believed_recipe`` with its ``believed_confidence``) comes from the caller."""
    n = len(state.players)
    if not isinstance(player, int) or isinstance(player, bool) or not 0 <= player < n:
        raise V2FlatStateError(f"player must be a seat of {state.layout} (0..{n - 1}), got {player!r}")
    info = state.info
    believed = None
    if (believed_recipe is None) != (believed_confidence is None):
        raise V2FlatStateError("believed_recipe and believed_confidence come together (both or neither), "
                               f"got {believed_recipe!r} and {believed_confidence!r}")
    if believed_recipe is not None:
        names = [recipe_name(r) for r in info.recipes]
        if believed_recipe not in names:
            raise V2FlatStateError(f"believed_recipe {believed_recipe!r} is not a recipe of {state.layout} "
                                   f"({', '.join(names)})")
        if not 0.0 <= float(believed_confidence) <= 1.0:
            raise V2FlatStateError(f"believed_confidence must be a probability, got {believed_confidence!r}")
        believed = info.recipes[names.index(believed_recipe)]
    hold = [p.held or "empty" for p in state.players]
    mates = [i for i in range(n) if i != player]
    known = known_recipe(state, player)
    candidates = candidate_recipes(state, player)
    pots = []
    for pot in state.pots:
        fits = any(_rest(r, pot.ingredients) is not None for r in candidates)
        pots.append(_pot_dict(pot, fits))
    counts: Dict[str, int] = {}
    for obj in state.counters.values():
        counts[obj or "empty"] = counts.get(obj or "empty", 0) + 1
    held = state.players[player].held or ""
    d: Dict[str, Any] = {
        "version": FLAT_STATE_VERSION, "game": "overcooked_v2",
        "self_player": player, "players": n, "teammates": mates,
        "hold": hold, "holdings": {"self": hold[player], "teammate": hold[mates[0]]},
        "teammate_holds": [hold[i] for i in mates],
        "dishes": [recipe_name(decode_ingredients(p.inventory)) if p.held == "dish" else None for p in state.players],
        "recipe": recipe_name(known) if known is not None else None,
        "recipe_visible": known is not None,
        "recipes": [recipe_name(r) for r in info.recipes],
        "candidate_recipes": [recipe_name(r) for r in candidates],
        "ingredients": list(info.ingredients),
        "ingredient_need": {f"ingredient_{i}": ingredient_need(state, player, i) for i in info.ingredients},
        "ingredient_sure": _sure_need(state, player, candidates),
        "self_reachable": _reachable(state, player),
        "teammate_reachable": _reachable(state, mates[0]),
        "held_fits": held.startswith("ingredient_") and _fits(state, player, int(held.rsplit("_", 1)[1])),
        "pot": pots,
        "start_by_hand": bool(state.start_cooking_interaction),
        "any_pot_to_start": bool(state.start_cooking_interaction)
        and any(p.idle and p.ingredients for p in state.pots),
        "num_empty_counters": len(info.counters) - len(state.counters),
        "counter_counts": counts,
        "teammate_last_completed_skill": teammate_last_completed_skill,
        "teammate_last_inferred_skill": teammate_last_inferred_skill,
        "self_last_skill": self_last_skill,
        "timestep": int(state.timestep),
        "believed_recipe": believed_recipe,
        "believed_confidence": None if believed_confidence is None else round(float(believed_confidence), 4),
    }
    # without a belief the believed need is the need itself (not computed twice on every step)
    d["believed_need"] = dict(d["ingredient_need"]) if believed is None else {
        f"ingredient_{i}": ingredient_need(state, player, i, recipe=believed) for i in info.ingredients}
    d.update(_derived(d))
    return {k: d[k] for k in FLAT_STATE_KEYS}


def flat_state_text(d: Dict[str, Any]) -> str:
    """One line of plain language for a V2 flat state (the controlled player's view)."""
    parts = [f"self holds {d['holdings']['self']}",
             "teammates hold " + ", ".join(d["teammate_holds"]),
             f"recipe {d['recipe']}" if d["recipe_visible"] else
             "recipe unseen (candidates " + ", ".join(d["candidate_recipes"]) + ")"]
    if d.get("believed_recipe") is not None:
        parts.append(f"believes recipe {d['believed_recipe']} (p = {d['believed_confidence']:.2f})")
    for i, p in enumerate(d["pot"]):
        what = p["contents"] or "empty"
        parts.append(f"pot{i} {what} {p['state']}" + (f" ({p['timers']} left)" if p["state"] == "cooking" else ""))
    items = [f"{n} {obj}" for obj, n in sorted(d["counter_counts"].items())]
    if items:
        parts.append("on counters: " + ", ".join(items))
    if d["teammate_last_completed_skill"]:
        parts.append(f"teammate last completed {d['teammate_last_completed_skill']}")
    return "; ".join(parts)


def probe_states(layout: str, seat: int) -> List[Dict[str, Any]]:
    """Flat states of ``layout`` for seat ``seat`` that exercise a tree before it is accepted: every
    pair of holds (self, first teammate) over the layout's objects, four pot situations, the recipe
    seen and unseen."""
    info = layout_info(layout)
    names = controller_for(layout).library.names
    n = info.players
    mates = [i for i in range(n) if i != seat]
    recipes = [recipe_name(r) for r in info.recipes]
    first = list(info.recipes[0])
    holds = ["empty", "plate", "dish"] + [f"ingredient_{i}" for i in info.ingredients]
    partial = sorted(first[:2])
    situations = [
        {"ingredients": [], "state": "idle", "timers": None},
        {"ingredients": partial, "state": "idle", "timers": None},
        {"ingredients": sorted(first), "state": "cooking", "timers": 9},
        {"ingredients": sorted(first), "state": "ready", "timers": 0},
    ]
    last = (None, "pickup_plate", "plate_soup", "deliver_dish", "place_on_counter",
            *[f"{k}" for i in info.ingredients for k in (f"pickup_ingredient_{i}", f"put_ingredient_{i}_in_pot")])
    states: List[Dict[str, Any]] = []
    k = 0
    for own in holds:
        for mate in holds:
            for s in range(len(situations)):
                pots = []
                for j in range(len(info.pots)):
                    sit = dict(situations[(s + j) % len(situations)])
                    sit.update(count=len(sit["ingredients"]), contents=recipe_name(sit["ingredients"])
                               if sit["ingredients"] else "", fits=True)
                    pots.append(sit)
                visible = k % 2 == 0
                hold = ["empty"] * n
                hold[seat] = own
                hold[mates[0]] = mate
                rest = [i for i in first]
                for i in (pots[0]["ingredients"] if pots[0]["state"] == "idle" else first):
                    if i in rest:
                        rest.remove(i)
                d = {
                    "version": FLAT_STATE_VERSION, "game": "overcooked_v2", "self_player": seat, "players": n,
                    "teammates": mates, "hold": hold, "holdings": {"self": own, "teammate": mate},
                    "teammate_holds": [hold[i] for i in mates],
                    "dishes": [recipes[0] if h == "dish" else None for h in hold],
                    "recipe": recipes[0] if visible else None, "recipe_visible": visible,
                    "recipes": recipes, "candidate_recipes": [recipes[0]] if visible else recipes,
                    "ingredients": list(info.ingredients),
                    "ingredient_need": {f"ingredient_{i}": rest.count(i) for i in info.ingredients},
                    "ingredient_sure": {f"ingredient_{i}": rest.count(i) if visible else 0
                                        for i in info.ingredients},
                    "self_reachable": list(names) if k % 4 else list(names[: len(names) // 2]),
                    "teammate_reachable": list(names) if k % 4 != 1 else [],
                    "held_fits": own.startswith("ingredient_") and int(own.rsplit("_", 1)[1]) in rest,
                    "pot": pots, "start_by_hand": k % 3 == 0, "any_pot_to_start": k % 3 == 0 and s == 1,
                    "num_empty_counters": max(len(info.counters) - k % 3, 0),
                    "counter_counts": {"plate": 1, "ingredient_%d" % info.ingredients[0]: 1} if k % 3 else {},
                    "teammate_last_completed_skill": last[k % len(last)],
                    "teammate_last_inferred_skill": last[(k + 2) % len(last)],
                    "self_last_skill": last[(k + 4) % len(last)],
                    "timestep": k,
                    # a belief on three of four probes: sure, torn, on the last recipe; none on the fourth
                    "believed_recipe": None if k % 4 == 3 else recipes[(k // 4) % len(recipes)],
                    "believed_confidence": None if k % 4 == 3 else (0.95, 0.5, 0.3)[k % 4],
                    "believed_need": {f"ingredient_{i}": (rest.count(i) + k) % 3 for i in info.ingredients},
                }
                d.update(_derived(d))
                states.append({key: d[key] for key in FLAT_STATE_KEYS})
                k += 1
    return states
