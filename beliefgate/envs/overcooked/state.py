"""A typed, JSON-serialisable symbolic Overcooked state.

:class:`SymbolicState` is what every beliefgate component reads: the adapter
produces it from the ``overcooked`` package's state, :func:`from_human_2019`
from the 2019 human-data format (old dynamics: soup state
``[type, n, cook_time]``, cooking starts at three onions), and trajectory logs
store it as JSON. ``to_flat_dict`` gives the flat key/value view a generated
policy tree reads (Co-pi-tree appendix A.9).
"""

from __future__ import annotations
from beliefgate.errors import InputError

import ast
import json
from typing import Any, Dict, Iterable, Literal, Optional, Tuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from beliefgate.envs.overcooked.layouts import DIRECTIONS, DIRECTION_NAMES, layout_info, resolve_layout

Pos = Tuple[int, int]
HeldObject = Optional[Literal["onion", "tomato", "dish", "soup"]]

#: default cook time of a three-onion soup (old and new dynamics alike)
COOK_TIME = 20
POT_CAPACITY = 3


class StateFormatError(InputError):
    """A state (symbolic, ``overcooked`` or 2019 human format) is malformed or inconsistent with its layout."""


class PlayerView(BaseModel):
    """One player: cell, facing direction (a unit vector) and held object (None = empty hands)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    position: Pos
    orientation: Pos
    held: HeldObject = None

    @field_validator("orientation")
    @classmethod
    def _unit(cls, v: Pos) -> Pos:
        if tuple(v) not in DIRECTIONS:
            raise ValueError(f"orientation must be one of {list(DIRECTIONS)}, got {v}")
        return tuple(v)

    @property
    def facing(self) -> Pos:
        return (self.position[0] + self.orientation[0], self.position[1] + self.orientation[1])

    @property
    def orientation_name(self) -> str:
        return DIRECTION_NAMES[DIRECTIONS.index(self.orientation)]


class PotView(BaseModel):
    """One pot: onions in it, whether it cooks or is ready, and cook ticks remaining."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    position: Pos
    ingredients: int = Field(ge=0, le=POT_CAPACITY)
    cooking: bool = False
    ready: bool = False
    timer: int = Field(default=0, ge=0, description="cook ticks remaining (0 when idle or ready)")

    @property
    def full(self) -> bool:
        return self.ingredients >= POT_CAPACITY or self.cooking or self.ready


class CounterObject(BaseModel):
    """An object lying on a counter."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    position: Pos
    name: Literal["onion", "tomato", "dish", "soup"]


class SymbolicState(BaseModel):
    """The whole public state of one timestep."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    layout: str
    timestep: int = Field(ge=0)
    score: float = 0.0
    players: Tuple[PlayerView, ...] = Field(min_length=1)
    pots: Tuple[PotView, ...] = ()
    counters: Tuple[CounterObject, ...] = ()

    # ----------------------------------------------------------------- views
    def pot_at(self, pos: Pos) -> Optional[PotView]:
        for pot in self.pots:
            if pot.position == pos:
                return pot
        return None

    def counter_object(self, pos: Pos) -> Optional[str]:
        for obj in self.counters:
            if obj.position == pos:
                return obj.name
        return None

    def counter_dict(self) -> Dict[Pos, str]:
        return {o.position: o.name for o in self.counters}

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes | Dict[str, Any]) -> "SymbolicState":
        try:
            if isinstance(text, dict):
                return cls.model_validate(text)
            return cls.model_validate_json(text)
        except ValidationError as exc:
            from beliefgate.validation import first_problem  # one line: the first error, the rest counted

            raise StateFormatError(f"malformed symbolic state: {first_problem(exc, 'state').message}") from None

    def validate_against_layout(self) -> "SymbolicState":
        """Check players stand on floor cells, pots are pots and counter objects lie on counters."""
        info = layout_info(self.layout)
        for i, p in enumerate(self.players):
            if not info.is_floor(p.position):
                raise StateFormatError(f"player {i} at {p.position} is not on a floor cell of {self.layout}")
        if len({p.position for p in self.players}) != len(self.players):
            raise StateFormatError("two players occupy the same cell")
        for pot in self.pots:
            if info.kind(pot.position) != "P":
                raise StateFormatError(f"pot at {pot.position} is not a pot cell of {self.layout}")
        for obj in self.counters:
            if info.kind(obj.position) != "X":
                raise StateFormatError(f"object {obj.name} at {obj.position} is not on a counter of {self.layout}")
        return self

    def to_flat_dict(self) -> Dict[str, Any]:
        """Flat key/value view of the state for generated policy code (Co-pi-tree A.9)."""
        flat: Dict[str, Any] = {"layout": self.layout, "timestep": self.timestep, "score": self.score}
        for i, p in enumerate(self.players):
            flat[f"p{i}_x"], flat[f"p{i}_y"] = p.position
            flat[f"p{i}_facing"] = p.orientation_name
            flat[f"p{i}_held"] = p.held or "nothing"
        for j, pot in enumerate(self.pots):
            flat[f"pot{j}_onions"] = pot.ingredients
            flat[f"pot{j}_cooking"] = pot.cooking
            flat[f"pot{j}_ready"] = pot.ready
            flat[f"pot{j}_timer"] = pot.timer
        for name, plural in (("onion", "onions"), ("dish", "dishes"), ("soup", "soups"), ("tomato", "tomatoes")):
            flat[f"counter_{plural}"] = sum(1 for o in self.counters if o.name == name)
        return flat


# --------------------------------------------------------------------------- converters
def from_overcooked(state, layout: str, score: float = 0.0) -> SymbolicState:
    """Convert an ``overcooked.mdp.overcooked_mdp.OvercookedState``."""
    layout = resolve_layout(layout)
    info = layout_info(layout)
    players = tuple(
        PlayerView(
            position=tuple(p.position),
            orientation=tuple(p.orientation),
            held=p.held_object.name if p.held_object is not None else None,
        )
        for p in state.players
    )
    pot_cells = set(info.pots)
    pots = {pos: PotView(position=pos, ingredients=0) for pos in info.pots}
    counters = []
    for pos, obj in state.objects.items():
        pos = tuple(pos)
        if pos in pot_cells and obj.name == "soup":
            ready = bool(obj.is_ready)
            cooking = bool(obj.is_cooking)
            pots[pos] = PotView(
                position=pos,
                ingredients=len(obj.ingredients),
                cooking=cooking,
                ready=ready,
                timer=int(obj.cook_time_remaining) if cooking else 0,
            )
        else:
            counters.append(CounterObject(position=pos, name=obj.name))
    counters.sort(key=lambda o: (o.position[1], o.position[0]))
    return SymbolicState(
        layout=layout,
        timestep=int(state.timestep),
        score=float(score),
        players=players,
        pots=tuple(pots[p] for p in info.pots),
        counters=tuple(counters),
    )


def _pos(value: Any, what: str) -> Pos:
    try:
        x, y = value
        return (int(x), int(y))
    except (TypeError, ValueError) as exc:
        raise StateFormatError(f"{what}: expected an [x, y] pair, got {value!r}") from exc


def _objects_iter(objects: Any) -> Iterable[Dict[str, Any]]:
    if isinstance(objects, dict):
        return objects.values()
    if isinstance(objects, list):
        return objects
    raise StateFormatError(f"'objects' must be a list or a mapping, got {type(objects).__name__}")


def from_human_2019(state: Dict[str, Any] | str, layout: str, score: float = 0.0,
                    cook_time: int = COOK_TIME, timestep: Optional[int] = None) -> SymbolicState:
    """Convert one state of the 2019 human-human data (old dynamics).

    ``state`` is a mapping, its JSON, or the Python ``repr`` the study's pickles
    store (single quotes, ``False``; parsed with :func:`ast.literal_eval`, never
    evaluated). Soups are ``{"name": "soup", "position": [x, y], "state": [type, n, t]}``
    where ``t`` counts cook ticks up from 0; a pot starts cooking when it holds three
    ingredients and is ready once ``t >= cook_time``. Held objects carry the same
    representation (a held soup is always ready). The study's states carry no
    timestep: pass ``timestep`` (it overrides a ``"timestep"`` key).
    """
    if isinstance(state, str):
        try:
            state = json.loads(state)
        except json.JSONDecodeError as exc:
            try:
                state = ast.literal_eval(state)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise StateFormatError(f"2019 state is neither JSON nor a Python literal: {exc}") from None
    if not isinstance(state, dict) or "players" not in state:
        raise StateFormatError("2019 state must be a mapping with 'players' and 'objects'")
    layout = resolve_layout(layout)
    info = layout_info(layout)
    players = []
    for i, p in enumerate(state["players"]):
        held = p.get("held_object")
        players.append(
            PlayerView(
                position=_pos(p.get("position"), f"player {i} position"),
                orientation=_pos(p.get("orientation"), f"player {i} orientation"),
                held=held["name"] if held else None,
            )
        )
    pots = {pos: PotView(position=pos, ingredients=0) for pos in info.pots}
    counters = []
    for obj in _objects_iter(state.get("objects", [])):
        pos = _pos(obj.get("position"), "object position")
        name = obj.get("name")
        if info.kind(pos) == "P":
            if name != "soup":
                raise StateFormatError(f"pot at {pos} holds a {name!r}, expected a soup")
            if "state" in obj:
                _, n, t = obj["state"]
            else:  # newer representation
                n = len(obj.get("_ingredients", []))
                t = max(int(obj.get("cooking_tick", obj.get("_cooking_tick", -1))), 0)
            n, t = int(n), int(t)
            cooking_started = n >= POT_CAPACITY
            ready = cooking_started and t >= cook_time
            pots[pos] = PotView(
                position=pos,
                ingredients=n,
                cooking=cooking_started and not ready,
                ready=ready,
                timer=max(cook_time - t, 0) if cooking_started and not ready else 0,
            )
        else:
            counters.append(CounterObject(position=pos, name=name))
    counters.sort(key=lambda o: (o.position[1], o.position[0]))
    try:
        return SymbolicState(
            layout=layout,
            timestep=int(state.get("timestep", 0)) if timestep is None else int(timestep),
            score=float(score),
            players=tuple(players),
            pots=tuple(pots[p] for p in info.pots),
            counters=tuple(counters),
        )
    except ValidationError as exc:
        raise StateFormatError(f"malformed 2019 state: {exc}") from exc


def to_overcooked(state: SymbolicState, old_dynamics: bool = True):
    """Build the ``overcooked`` package's state from a symbolic one (scenario set-up, forward models)."""
    from overcooked.mdp.overcooked_mdp import ObjectState, OvercookedState, PlayerState, SoupState

    from beliefgate.envs.overcooked.layouts import make_mdp

    state.validate_against_layout()
    mdp = make_mdp(state.layout, old_dynamics)

    def soup(pos, n, cooking_tick):
        return SoupState(pos, ingredients=[ObjectState("onion", pos) for _ in range(n)], cooking_tick=cooking_tick)

    def obj(name, pos):
        if name == "soup":
            return soup(pos, POT_CAPACITY, COOK_TIME)
        return ObjectState(name, pos)

    players = [
        PlayerState(p.position, p.orientation, obj(p.held, p.position) if p.held else None) for p in state.players
    ]
    objects = {}
    for o in state.counters:
        objects[o.position] = obj(o.name, o.position)
    for pot in state.pots:
        if pot.ingredients == 0:
            continue
        if pot.ready:
            tick = COOK_TIME
        elif pot.cooking:
            tick = COOK_TIME - pot.timer
        else:
            tick = -1
        objects[pot.position] = soup(pot.position, pot.ingredients, tick)
    return OvercookedState(players, objects, bonus_orders=[], all_orders=mdp.start_all_orders,
                           timestep=state.timestep)
