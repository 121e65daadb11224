"""The Overcooked domain's rendering (``Domain.render_layout`` / ``Domain.render_frame``): the compact
kitchen encoding that the report and the play page draw (``viewer/assets/kitchen.js``).

A *layout* record is ``{"name", "terrain": [row strings], "pots": [[x, y], ...]}``;
``terrain[y][x]`` is one of ``X O T D P S`` or ``' '`` (floor), as in
:class:`~beliefgate.envs.overcooked.layouts.LayoutInfo`.

A *frame* is a list ``[timestep, score, players, pots, counters]``:

* ``players``: ``[x, y, orientation, held]`` per player, ``orientation`` an index into
  :data:`~beliefgate.envs.overcooked.layouts.DIRECTIONS`, ``held`` an index into
  :data:`OBJECTS` (0: empty hands);
* ``pots``: ``[ingredients, status, timer]`` per pot, in the layout's pot order; ``status``
  0 idle, 1 cooking, 2 ready;
* ``counters``: ``[x, y, object]`` per object lying on a counter.
"""

from __future__ import annotations

from typing import Any, Dict, List

from beliefgate.envs.overcooked.layouts import DIRECTIONS, layout_info
from beliefgate.envs.overcooked.state import SymbolicState

#: object codes (index 0: nothing)
OBJECTS = (None, "onion", "tomato", "dish", "soup")
_OBJECT_CODE = {name: i for i, name in enumerate(OBJECTS)}


def layout_record(layout: str) -> Dict[str, Any]:
    """The static kitchen of ``layout`` as the drawing code reads it."""
    info = layout_info(layout)
    return {"name": info.name, "terrain": list(info.terrain), "pots": [list(p) for p in info.pots]}


def encode_frame(state: SymbolicState) -> List[Any]:
    """One state as a compact JSON-ready list (see the module docstring)."""
    players = [[p.position[0], p.position[1], DIRECTIONS.index(tuple(p.orientation)), _OBJECT_CODE[p.held]]
               for p in state.players]
    pots = [[pot.ingredients, 2 if pot.ready else (1 if pot.cooking else 0), pot.timer] for pot in state.pots]
    counters = [[o.position[0], o.position[1], _OBJECT_CODE[o.name]] for o in state.counters]
    score = state.score
    return [state.timestep, int(score) if float(score).is_integer() else round(score, 3), players, pots, counters]


__all__ = ["OBJECTS", "layout_record", "encode_frame"]
