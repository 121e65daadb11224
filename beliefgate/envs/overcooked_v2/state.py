"""The symbolic OvercookedV2 state, its JSON, and the conversion to and from JaxMARL's ``State``.

A :class:`V2State` keeps JaxMARL's own encodings (an inventory or a cell's content is the integer
``DynamicObject`` code), so the round trip symbolic -> JaxMARL -> symbolic is exact; the readable
views (``held``, pots, counters, the recipe's ingredients) are derived from them. Only the cells
whose dynamic content or timer is not zero are stored (``items``: ``[x, y, content, timer]``).

Events between two states (per player): ``pickup:ingredient_<i>``, ``pickup:plate``,
``pickup:dish`` (a soup scooped onto a plate, or a dish taken off a counter), ``potting:ingredient_<i>``,
``drop:<object>`` (put on a counter), ``deliver:correct`` / ``deliver:wrong``, ``press:button``
(the recipe button) and ``cook:start`` (a pot started by hand).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from beliefgate.errors import InputError
from beliefgate.envs.overcooked_v2.layouts import (BUTTON_INDICATOR, COOKED, DIR_VEC, GOAL, INDICATOR_TIME, PLATE,
                                                   POT, WALL, Pos, V2Layout, decode_ingredients, layout_info)


class V2StateError(InputError):
    """A V2 state (a log's, or one given to ``set_state``) that is malformed or does not fit its layout."""


def held_name(code: int) -> Optional[str]:
    """The held-object name of an inventory code: None, ``plate``, ``dish`` or ``ingredient_<i>``."""
    code = int(code)
    if code == 0:
        return None
    if code & PLATE:
        return "dish" if code & COOKED else "plate"
    ing = decode_ingredients(code)
    if len(ing) == 1:
        return f"ingredient_{ing[0]}"
    return "mixed"


class V2Player(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    position: Tuple[int, int]
    direction: int = Field(ge=0, le=3)
    inventory: int = Field(0, ge=0)

    @property
    def held(self) -> Optional[str]:
        return held_name(self.inventory)

    @property
    def front(self) -> Pos:
        d = DIR_VEC[self.direction]
        return (self.position[0] + d[0], self.position[1] + d[1])


@dataclass(frozen=True)
class V2Pot:
    """A derived view of one pot."""

    position: Tuple[int, int]
    ingredients: Tuple[int, ...]
    timer: int
    cooked: bool

    @property
    def cooking(self) -> bool:
        return self.timer > 0

    @property
    def idle(self) -> bool:
        return not self.cooking and not self.cooked

    @property
    def full(self) -> bool:
        return len(self.ingredients) >= 3


class V2State(BaseModel):
    """One OvercookedV2 state on a named layout (JaxMARL's encodings; see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layout: str
    timestep: int = Field(ge=0)
    score: float = 0.0
    recipe: int = Field(ge=0, description="JaxMARL's encoding of the active recipe")
    players: Tuple[V2Player, ...]
    items: Tuple[Tuple[int, int, int, int], ...] = ()
    new_correct_delivery: bool = False
    agent_view_size: Optional[int] = Field(None, ge=1, description="the episode's view radius (who sees the recipe)")
    start_cooking_interaction: bool = Field(False, description="the episode's pots cook only when a player "
                                            "interacts with them")
    sample_recipe_on_delivery: bool = Field(False, description="the episode draws a new recipe after each "
                                            "correct delivery (a rule every player knows)")

    @model_validator(mode="after")
    def _fits_layout(self) -> "V2State":
        info = layout_info(self.layout)
        if len(self.players) != info.players:
            raise ValueError(f"players: layout {self.layout} has {info.players}, the state lists {len(self.players)}")
        for i, p in enumerate(self.players):
            if not info.is_floor(tuple(p.position)):
                raise ValueError(f"players.{i}.position: {list(p.position)} is not a floor cell of {self.layout}")
        for x, y, content, timer in self.items:
            if not (0 <= x < info.width and 0 <= y < info.height):
                raise ValueError(f"items: cell {[x, y]} is outside {self.layout}")
        return self

    # -------------------------------------------------------------- views
    @cached_property
    def info(self) -> V2Layout:
        return layout_info(self.layout)

    @property
    def recipe_ingredients(self) -> Tuple[int, ...]:
        return decode_ingredients(self.recipe)

    def cell(self, pos: Pos) -> Tuple[int, int]:
        """(content, timer) of a cell."""
        for x, y, content, timer in self.items:
            if (x, y) == tuple(pos):
                return content, timer
        return 0, 0

    @cached_property
    def pots(self) -> Tuple[V2Pot, ...]:
        out = []
        for pos in self.info.pots:
            content, timer = self.cell(pos)
            out.append(V2Pot(pos, decode_ingredients(content), timer, bool(content & COOKED)))
        return tuple(out)

    @cached_property
    def counters(self) -> Dict[Pos, str]:
        """Counter cell -> the object lying on it."""
        info = self.info
        return {(x, y): held_name(content) for x, y, content, _ in self.items
                if content and info.code((x, y)) == WALL}

    def button_active(self, pos: Pos) -> bool:
        return self.cell(pos)[1] > 0

    def sees_recipe(self, player: int) -> bool:
        """Whether ``player``'s observation shows the recipe now: a recipe indicator, or a pressed
        recipe button, within its view (everything is in view without ``agent_view_size``)."""
        info = self.info
        shown = list(info.indicators) + [b for b in info.buttons if self.button_active(b)]
        if self.agent_view_size is None:
            return bool(shown)
        px, py = self.players[player].position
        v = self.agent_view_size
        return any(abs(x - px) <= v and abs(y - py) <= v for x, y in shown)

    # -------------------------------------------------------------- JSON
    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: Any) -> "V2State":
        try:
            if isinstance(data, str):
                return cls.model_validate_json(data)
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "state"
            raise V2StateError(f"invalid v2 state: {where}: {first['msg']}") from None


# ------------------------------------------------------- JaxMARL conversion
def from_arrays(layout: str, arrays, score: float, agent_view_size: Optional[int],
                start_cooking_interaction: bool = False, sample_recipe_on_delivery: bool = False) -> V2State:
    """A :class:`V2State` from host copies of a JaxMARL state's leaves: ``(x, y, dir, inventory,
    grid, recipe, step, new_correct_delivery)``."""
    xs, ys, dirs, inv, grid, recipe, step, ncd = arrays
    players = tuple(V2Player.model_construct(position=(int(x), int(y)), direction=int(d), inventory=int(i))
                    for x, y, d, i in zip(xs, ys, dirs, inv))
    dyn = grid[:, :, 1:]
    ys_, xs_ = np.nonzero((dyn != 0).any(axis=-1))
    items = tuple((int(x), int(y), int(grid[y, x, 1]), int(grid[y, x, 2])) for y, x in zip(ys_, xs_))
    return V2State.model_construct(layout=layout, timestep=int(step), score=float(score), recipe=int(recipe),
                                   players=players, items=items, new_correct_delivery=bool(ncd),
                                   agent_view_size=agent_view_size,
                                   start_cooking_interaction=start_cooking_interaction,
                                   sample_recipe_on_delivery=sample_recipe_on_delivery)


def host_arrays(jstate, *extra):
    """Host copies of the leaves :func:`from_arrays` reads, then of ``extra`` (one transfer)."""
    import jax

    a = jstate.agents
    return jax.device_get((a.pos.x, a.pos.y, a.dir, a.inventory, jstate.grid, jstate.recipe, jstate.step,
                           jstate.new_correct_delivery, *extra))


def to_jax(state: V2State, template):
    """A JaxMARL ``State`` holding ``state`` (dtypes taken from ``template``, a state of the same env)."""
    import jax.numpy as jnp

    info = state.info
    grid = np.zeros((info.height, info.width, 3), dtype=np.int64)
    grid[:, :, 0] = info.static
    for x, y, content, timer in state.items:
        grid[y, x, 1], grid[y, x, 2] = content, timer
    ag = template.agents
    agents = ag.replace(
        pos=ag.pos.replace(x=jnp.asarray([p.position[0] for p in state.players], dtype=ag.pos.x.dtype),
                           y=jnp.asarray([p.position[1] for p in state.players], dtype=ag.pos.y.dtype)),
        dir=jnp.asarray([p.direction for p in state.players], dtype=ag.dir.dtype),
        inventory=jnp.asarray([p.inventory for p in state.players], dtype=ag.inventory.dtype))
    return template.replace(agents=agents, grid=jnp.asarray(grid, dtype=template.grid.dtype),
                            recipe=jnp.asarray(state.recipe, dtype=template.recipe.dtype),
                            step=jnp.asarray(state.timestep, dtype=template.step.dtype),
                            done=jnp.asarray(False, dtype=template.done.dtype),
                            new_correct_delivery=jnp.asarray(state.new_correct_delivery,
                                                             dtype=template.new_correct_delivery.dtype))


# ------------------------------------------------------------------ events
def detect_events(prev: V2State, state: V2State) -> List[List[str]]:
    """Per-player interaction events between two consecutive states (see the module doc)."""
    info = prev.info
    out: List[List[str]] = []
    for p0, p1 in zip(prev.players, state.players):
        ev: List[str] = []
        a, b = p0.inventory, p1.inventory
        front = p1.front
        code = info.code(front)
        if a != b:
            if a == 0:
                name = held_name(b)
                ev.append(f"pickup:{name}")
            elif b == 0:
                name = held_name(a)
                if code == POT:
                    ev.append(f"potting:{name}")
                elif code == GOAL:
                    plated = prev.recipe | PLATE | COOKED
                    ev.append("deliver:correct" if a == plated else "deliver:wrong")
                else:
                    ev.append(f"drop:{name}")
            elif a == PLATE and b & COOKED:
                ev.append("pickup:dish")
        elif a == 0 and p0.position == p1.position and p0.direction == p1.direction:
            c0, t0 = prev.cell(front)
            c1, t1 = state.cell(front)
            if code == BUTTON_INDICATOR and t1 == INDICATOR_TIME - 1:  # set to the full time, then ticked once
                ev.append("press:button")
            elif code == POT and t0 == 0 and t1 > 0 and not c0 & COOKED and c0 == c1:
                ev.append("cook:start")
        out.append(ev)
    return out


def completion_matches(event: str, completion: str) -> bool:
    """Whether ``event`` completes a skill whose completion is ``completion`` (``kind:any`` matches
    every event of that kind)."""
    if completion.endswith(":any"):
        return event.startswith(completion[:-3])
    return event == completion
