"""V2 states drawn by the report and the play page (``viewer/assets/kitchen.js``), in the classic
record format so the same drawing code reads them, with the V2 specifics added alongside.

Layout record: ``{"name", "terrain", "pots", "v2": {...}}``: ``terrain`` uses the classic letters
(``X`` counter -- walls, recipe indicators and buttons included --, ``S`` goal, ``D`` plate pile,
``P`` pot, ``O`` / ``T`` ingredient piles: even / odd ingredient indices, ``' '`` floor); ``v2`` holds
JaxMARL's grid, the ingredient piles by index, the recipe indicators and buttons, and the recipes.

Frame: ``[timestep, score, players, pots, counters, extra]`` with the classic meanings -- a held or
lying object coded 1 onion-like (even ingredient), 2 tomato-like (odd ingredient), 3 plate, 4 dish --
and ``extra = {"recipe": [...], "pots": [[ingredient indices], ...], "held": [inventory codes],
"buttons": [timers], "counters": [[x, y, content code]], "viewers": [players who see the recipe]}``
with the exact V2 contents (JaxMARL's ``DynamicObject`` codes: bit 0 plate, bit 1 cooked, two bits
per ingredient from bit 2), which ``kitchen.js`` draws: ingredients by type, the recipe on its
indicators and on a pressed button, and the recipe band under the kitchen naming who sees it.

:func:`encode_view` is the frame as one player sees it (the play page's person): the recipe is
``None`` unless that player sees it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from beliefgate.envs.overcooked_v2.layouts import (EMPTY, GOAL, INGREDIENT_PILE_BASE, PLATE_PILE,
                                                   POT, WALL, layout_info)
from beliefgate.envs.overcooked_v2.state import V2State

_TERRAIN = {EMPTY: " ", GOAL: "S", PLATE_PILE: "D", POT: "P"}


def _object_code(name: Optional[str]) -> int:
    if name is None:
        return 0
    if name == "plate":
        return 3
    if name in ("dish", "mixed"):
        return 4
    return 1 + int(name.rsplit("_", 1)[1]) % 2


def layout_record(layout: str) -> Dict[str, Any]:
    info = layout_info(layout)
    terrain = []
    for y in range(info.height):
        row = ""
        for x in range(info.width):
            code = info.code((x, y))
            if code >= INGREDIENT_PILE_BASE:
                row += "OT"[(code - INGREDIENT_PILE_BASE) % 2]
            else:
                row += _TERRAIN.get(code, "X")
        terrain.append(row)
    return {"name": info.name, "terrain": terrain, "pots": [list(p) for p in info.pots],
            "v2": {**info.describe(), "backend": "v2"}}


def encode_frame(state: V2State) -> List[Any]:
    players = [[p.position[0], p.position[1], p.direction, _object_code(p.held)] for p in state.players]
    pots = [[len(p.ingredients), 2 if p.cooked else (1 if p.cooking else 0), p.timer] for p in state.pots]
    counters = [[c[0], c[1], _object_code(o)] for c, o in sorted(state.counters.items())]
    score = state.score
    info = state.info
    extra = {"recipe": list(state.recipe_ingredients), "pots": [list(p.ingredients) for p in state.pots],
             "held": [p.inventory for p in state.players],
             "buttons": [state.cell(b)[1] for b in info.buttons],
             "counters": [[x, y, content] for x, y, content, _ in sorted(state.items)
                          if content and info.code((x, y)) == WALL],
             "viewers": [i for i in range(len(state.players)) if state.sees_recipe(i)]}
    return [state.timestep, int(score) if float(score).is_integer() else round(score, 3), players, pots, counters,
            extra]


def encode_view(state: V2State, player: int) -> List[Any]:
    """:func:`encode_frame` as ``player`` sees it: the recipe hidden (``None``) unless ``player``
    sees it in ``state`` (:meth:`V2State.sees_recipe`)."""
    frame = encode_frame(state)
    if not state.sees_recipe(player):
        frame[5]["recipe"] = None
    return frame
