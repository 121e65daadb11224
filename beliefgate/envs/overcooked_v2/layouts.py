"""OvercookedV2 layouts (``v2/<name>``), their static geometry, and the environment's options.

The layouts are JaxMARL's own (``jaxmarl.environments.overcooked_v2.layouts``): every two-player one
with a pot and a goal, plus two three-player kitchens built with ``Layout.from_string`` -- a third
agent in the connected room of ``cramped_room_v2`` and one in the left half of the split room of
``asymm_advantages`` -- whose added agent is the last player. A layout string of one's own enters
with :func:`register_layout_string` (checked: a pot, a goal, an agent; recipes over ingredients the
layout has).

Coordinates are JaxMARL's: ``(x, y)``, x the column, y the row from the top. Directions are
JaxMARL's ``Direction`` (0 up, 1 down, 2 right, 3 left); actions are its ``OvercookedActionsEnum``
(0 right, 1 down, 2 left, 3 up, 4 stay, 5 interact).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from pydantic import ConfigDict, Field

from beliefgate.envs.domain import UnknownLayoutError
from beliefgate.errors import InputError
from beliefgate.validation import CheckedModel

Pos = Tuple[int, int]
PREFIX = "v2/"

#: JaxMARL ``StaticObject`` codes (checked against the installed package in the tests)
EMPTY, WALL, GOAL, POT, RECIPE_INDICATOR, BUTTON_INDICATOR, PLATE_PILE, INGREDIENT_PILE_BASE = 0, 1, 4, 5, 6, 7, 9, 10
#: JaxMARL ``DynamicObject`` bits
PLATE, COOKED, INGREDIENT_BASE = 1, 2, 4
#: direction index -> (dx, dy), JaxMARL's ``DIR_TO_VEC``
DIR_VEC: Tuple[Pos, ...] = ((0, -1), (0, 1), (1, 0), (-1, 0))
#: action index -> the direction it moves or turns to (JaxMARL's ``ACTION_TO_DIRECTION``)
ACTION_DIR: Tuple[int, ...] = (2, 1, 3, 0)
RIGHT, DOWN, LEFT, UP, STAY, INTERACT = 0, 1, 2, 3, 4, 5
NUM_ACTIONS = 6
ACTION_NAMES = ("east", "south", "west", "north", "stay", "interact")   # right, down, left, up
#: the pot's cooking time and the button indicator's time (JaxMARL's settings, checked in the tests)
POT_COOK_TIME, INDICATOR_TIME = 20, 10

_CHAR = {EMPTY: " ", WALL: "W", GOAL: "X", POT: "P", RECIPE_INDICATOR: "R", BUTTON_INDICATOR: "L", PLATE_PILE: "B"}

#: JaxMARL 0.2's two-player layouts with a pot and a goal (``long_room`` seats one player)
JAXMARL_LAYOUTS: Tuple[str, ...] = (
    "cramped_room", "asymm_advantages", "coord_ring", "forced_coord", "counter_circuit",
    "cramped_room_v2", "asymm_advantages_recipes_center", "asymm_advantages_recipes_right",
    "asymm_advantages_recipes_left", "two_rooms", "two_rooms_both", "fun_coordination",
    "more_fun_coordination", "fun_symmetries", "fun_symmetries_plates", "fun_symmetries1",
    "grounded_coord_simple", "grounded_coord_ring", "test_time_simple", "test_time_wide",
    "demo_cook_simple", "demo_cook_wide",
)
#: the asymmetric-information settings of the results pages (docs/results_v2.md, results_social.md):
#: the environment options that hide the recipe from some seats. A view of two cells (OvercookedV2's
#: own setting for these layouts) hides the indicator from the seat away from it; cramped_room_v2
#: needs a view of one cell to hide it from most of the room, and draws a new recipe after each
#: correct delivery
HIDDEN_RECIPE: Dict[str, Dict[str, object]] = {
    "v2/demo_cook_simple": {"agent_view_size": 2},
    "v2/cramped_room_v2": {"agent_view_size": 1, "sample_recipe_on_delivery": True},
    "v2/grounded_coord_simple": {"agent_view_size": 2},
    "v2/test_time_simple": {"agent_view_size": 2},
    "v2/cramped_room_v2_3p": {"agent_view_size": 1, "sample_recipe_on_delivery": True},
    # the split room: only the right half has an indicator; at view 2 its cook sees the recipe from
    # the cells it works at (about 30 % of steps on seeds 1000-1004), the left cook never
    "v2/asymm_advantages_recipes_right": {"agent_view_size": 2, "sample_recipe_on_delivery": True},
}
#: three-player kitchens: name -> (JaxMARL layout string variable, the added agent's cell, recipes)
THREE_PLAYER: Dict[str, Tuple[str, Pos, Optional[List[List[int]]]]] = {
    "cramped_room_v2_3p": ("cramped_room_v2", (2, 2), None),
    "asymm_advantages_3p": ("asymm_advantages", (1, 2), [[0, 0, 0]]),
}


class LayoutStringError(InputError):
    """A layout string that cannot be an OvercookedV2 kitchen (the message names what it lacks)."""


def ingredient_code(i: int) -> int:
    """JaxMARL's encoding of one ingredient ``i``."""
    return INGREDIENT_BASE << (2 * i)


def recipe_code(recipe) -> int:
    """JaxMARL's encoding of a recipe (three ingredient indices)."""
    return int(sum(ingredient_code(int(i)) for i in recipe))


def decode_ingredients(code: int) -> Tuple[int, ...]:
    """The sorted ingredient indices of an encoded object (plate and cooked bits ignored)."""
    out: List[int] = []
    code, idx = int(code) >> 2, 0
    while code > 0:
        out += [idx] * (code & 0x3)
        code, idx = code >> 2, idx + 1
    return tuple(out)


@dataclass(frozen=True, eq=False)
class V2Layout:
    """Static geometry of one OvercookedV2 layout (what pages draw and controllers plan on)."""

    name: str
    static: np.ndarray                     # int[H, W] StaticObject codes
    starts: Tuple[Pos, ...]
    num_ingredients: int
    recipes: Tuple[Tuple[int, int, int], ...]
    jax_layout: Any = field(repr=False, default=None)

    @property
    def width(self) -> int:
        return int(self.static.shape[1])

    @property
    def height(self) -> int:
        return int(self.static.shape[0])

    @property
    def players(self) -> int:
        return len(self.starts)

    @cached_property
    def grid(self) -> Tuple[str, ...]:
        rows = []
        for y in range(self.height):
            row = ""
            for x in range(self.width):
                code = int(self.static[y, x])
                row += "A" if (x, y) in self.starts else _CHAR.get(code) or str(code - INGREDIENT_PILE_BASE)
            rows.append(row)
        return tuple(rows)

    def code(self, cell: Pos) -> int:
        x, y = cell
        if 0 <= x < self.width and 0 <= y < self.height:
            return int(self.static[y, x])
        return WALL

    def is_floor(self, cell: Pos) -> bool:
        return self.code(cell) == EMPTY

    def cells_of(self, code: int) -> Tuple[Pos, ...]:
        ys, xs = np.nonzero(self.static == code)
        return tuple(sorted((int(x), int(y)) for x, y in zip(xs, ys)))

    @cached_property
    def floor(self) -> Tuple[Pos, ...]:
        return self.cells_of(EMPTY)

    @cached_property
    def pots(self) -> Tuple[Pos, ...]:
        return self.cells_of(POT)

    @cached_property
    def goals(self) -> Tuple[Pos, ...]:
        return self.cells_of(GOAL)

    @cached_property
    def plate_piles(self) -> Tuple[Pos, ...]:
        return self.cells_of(PLATE_PILE)

    @cached_property
    def indicators(self) -> Tuple[Pos, ...]:
        return self.cells_of(RECIPE_INDICATOR)

    @cached_property
    def buttons(self) -> Tuple[Pos, ...]:
        return self.cells_of(BUTTON_INDICATOR)

    def ingredient_piles(self, i: int) -> Tuple[Pos, ...]:
        found = self._piles.get(i)
        if found is None:   # an ingredient the layout has no pile of
            found = self._piles[i] = self.cells_of(INGREDIENT_PILE_BASE + i)
        return found

    @cached_property
    def _piles(self) -> Dict[int, Tuple[Pos, ...]]:
        """Ingredient -> its pile cells (asked on every step of every controller: looked up once)."""
        return {i: self.cells_of(INGREDIENT_PILE_BASE + i) for i in range(self.num_ingredients)}

    @cached_property
    def interactables(self) -> Tuple[Pos, ...]:
        """Non-floor cells next to a floor cell (what a player can face), in (y, x) order."""
        floor = set(self.floor)
        out = []
        for y in range(self.height):
            for x in range(self.width):
                if (x, y) not in floor and any((x + dx, y + dy) in floor for dx, dy in DIR_VEC):
                    out.append((x, y))
        return tuple(out)

    @cached_property
    def counters(self) -> Tuple[Pos, ...]:
        """Walls next to the floor: where items can be put down."""
        return tuple(c for c in self.interactables if self.code(c) == WALL)

    def region(self, start: Pos) -> frozenset:
        """The floor cells a player standing on ``start`` can walk to (a 4-neighbour flood fill)."""
        seen, todo = {tuple(start)}, [tuple(start)]
        while todo:
            x, y = todo.pop()
            for dx, dy in DIR_VEC:
                nxt = (x + dx, y + dy)
                if nxt not in seen and self.is_floor(nxt):
                    seen.add(nxt)
                    todo.append(nxt)
        return frozenset(seen)

    def touching(self, start: Pos) -> frozenset:
        """The interactable cells next to :meth:`region` of ``start``: what that player can reach."""
        region = self.region(start)
        return frozenset(c for c in self.interactables
                         if any((c[0] + dx, c[1] + dy) in region for dx, dy in DIR_VEC))

    @cached_property
    def shared_floor(self) -> bool:
        """Can every player walk to every other's start cell (one floor region for all)?"""
        first, *others = self.starts
        seen = self.region(first)
        return all(tuple(o) in seen for o in others)

    @cached_property
    def separate_kitchens(self) -> bool:
        """Do the players share neither floor nor a counter (they meet only at pots, piles or the
        goal)? The classic ``LayoutInfo.separate_kitchens`` rule, which OverForge reads."""
        if self.shared_floor:
            return False
        common = frozenset.intersection(*[self.touching(p) for p in self.starts])
        return not (common & frozenset(self.counters))

    @cached_property
    def ingredients(self) -> Tuple[int, ...]:
        """The ingredients with a pile in this layout."""
        return tuple(i for i in range(self.num_ingredients) if self.ingredient_piles(i))

    def describe(self) -> Dict[str, Any]:
        return {
            "name": self.name, "size": [self.width, self.height], "floor_cells": len(self.floor),
            "pots": [list(c) for c in self.pots], "serving": [list(c) for c in self.goals],
            "plate_piles": [list(c) for c in self.plate_piles],
            "ingredient_piles": {str(i): [list(c) for c in self.ingredient_piles(i)] for i in self.ingredients},
            "recipe_indicators": [list(c) for c in self.indicators],
            "recipe_buttons": [list(c) for c in self.buttons],
            "recipes": [list(r) for r in self.recipes], "grid": list(self.grid),
        }


# ------------------------------------------------------------------ registry
_LOCK = threading.Lock()
_BUILT: Dict[str, V2Layout] = {}
_CUSTOM: Dict[str, Tuple[str, Optional[List[List[int]]]]] = {}


def layout_names() -> Tuple[str, ...]:
    """Every ``v2/`` layout name (no JaxMARL import)."""
    return tuple(PREFIX + n for n in (*JAXMARL_LAYOUTS, *THREE_PLAYER, *_CUSTOM))


#: the classic kitchens' names -> JaxMARL's names of the same kitchens (``v2/coordination_ring`` is ``v2/coord_ring``)
CLASSIC_ALIASES: Dict[str, str] = {
    "asymmetric_advantages": "asymm_advantages",
    "coordination_ring": "coord_ring",
    "forced_coordination": "forced_coord",
}


def resolve_layout(name: str) -> str:
    """``name`` as a canonical ``v2/`` name (a classic kitchen's name gives JaxMARL's);
    :class:`UnknownLayoutError` for any other."""
    if isinstance(name, str) and name.startswith(PREFIX):
        name = PREFIX + CLASSIC_ALIASES.get(name[len(PREFIX):], name[len(PREFIX):])
    if isinstance(name, str) and name in layout_names():
        return name
    known = ", ".join(layout_names())
    raise UnknownLayoutError(f"unknown layout {name!r}; the v2 backend has {known}")


def _from_string(grid: str, recipes: Optional[List[List[int]]], extra_agent: Optional[Pos] = None):
    from beliefgate.envs.overcooked_v2._jaxmarl import jaxmarl_v2

    jl = jaxmarl_v2().layouts
    rows = [r for r in grid.split("\n")]
    while rows and not rows[0]:
        rows = rows[1:]
    while rows and not rows[-1]:
        rows = rows[:-1]
    if extra_agent is not None:
        x, y = extra_agent
        rows[y] = rows[y][:x] + "A" + rows[y][x + 1:]
    layout = jl.Layout.from_string("\n".join(rows), possible_recipes=recipes)
    if extra_agent is not None:  # the added agent plays last
        rest = [p for p in layout.agent_positions if tuple(p) != tuple(extra_agent)]
        layout.agent_positions = rest + [tuple(extra_agent)]
    return layout


def check_layout_string(grid: str, recipes: Optional[List[List[int]]] = None) -> None:
    """Refuse a layout string without a pot, a goal or an agent, or with recipes over missing
    ingredients (:class:`LayoutStringError`, one line naming what is wrong)."""
    if not isinstance(grid, str) or not grid.strip():
        raise LayoutStringError("layout string is empty")
    text = grid.replace("O", "0")
    for char, what in (("P", "a pot (P)"), ("X", "a goal (X)"), ("A", "an agent (A)")):
        if char not in text:
            raise LayoutStringError(f"layout string has no {what}")
    have = sorted({int(c) for c in text if c.isdigit()})
    if not have:
        raise LayoutStringError("layout string has no ingredient pile (0-9)")
    if recipes is None:
        if "R" not in text:
            raise LayoutStringError("recipes: a layout without a recipe indicator (R) needs its recipes given")
        return
    check_recipes(recipes, have)


def check_recipes(recipes, have) -> None:
    """Each recipe three ingredient indices the layout has (``have``); else a one-line error."""
    if not isinstance(recipes, (list, tuple)) or not recipes:
        raise LayoutStringError(f"recipes must be a non-empty list of three-ingredient lists, got {recipes!r}")
    for r in recipes:
        if not isinstance(r, (list, tuple)) or len(r) != 3 or not all(isinstance(i, int) and not isinstance(i, bool)
                                                                       for i in r):
            raise LayoutStringError(f"recipes: each recipe is three ingredient indices, got {r!r}")
        missing = [i for i in r if i not in have]
        if missing:
            raise LayoutStringError(f"recipes: recipe {list(r)} uses ingredient {missing[0]}, which the layout lacks "
                                    f"(it has {', '.join(map(str, have))})")


def register_layout_string(name: str, grid: str, recipes: Optional[List[List[int]]] = None) -> str:
    """Add ``v2/<name>`` played on ``grid`` (JaxMARL's layout-string format) in this process."""
    if not isinstance(name, str) or not name or "/" in name:
        raise LayoutStringError(f"layout name must be a plain name, got {name!r}")
    check_layout_string(grid, recipes)
    canonical = PREFIX + name
    with _LOCK:
        _CUSTOM[name] = (grid, [list(r) for r in recipes] if recipes is not None else None)
        _BUILT.pop(canonical, None)
    return canonical


def _build(canonical: str) -> V2Layout:
    from beliefgate.envs.overcooked_v2._jaxmarl import jaxmarl_v2

    short = canonical[len(PREFIX):]
    jl = jaxmarl_v2().layouts
    if short in THREE_PLAYER:
        var, cell, recipes = THREE_PLAYER[short]
        layout = _from_string(getattr(jl, var), recipes, extra_agent=cell)
    elif short in _CUSTOM:
        grid, recipes = _CUSTOM[short]
        layout = _from_string(grid, recipes)
    else:
        layout = jl.overcooked_v2_layouts[short]
    recipes = tuple(tuple(sorted(int(i) for i in r)) for r in layout.possible_recipes)
    return V2Layout(canonical, np.asarray(layout.static_objects, dtype=np.int64),
                    tuple((int(x), int(y)) for x, y in layout.agent_positions), int(layout.num_ingredients),
                    recipes, layout)


def layout_info(name: str) -> V2Layout:
    """The :class:`V2Layout` of ``name`` (built once; imports JaxMARL)."""
    found = _BUILT.get(name)   # a canonical name already built (the per-step path of controllers)
    if found is not None:
        return found
    canonical = resolve_layout(name)
    found = _BUILT.get(canonical)
    if found is None:
        found = _build(canonical)
        with _LOCK:
            _BUILT[canonical] = found
    return found


def players(name: str) -> int:
    """How many players ``name`` seats (the three-player kitchens 3, JaxMARL's layouts 2)."""
    canonical = resolve_layout(name)
    short = canonical[len(PREFIX):]
    if short in THREE_PLAYER:
        return 3
    if short in _CUSTOM:
        return layout_info(canonical).players
    return 2


# ------------------------------------------------------------------ options
class V2Options(CheckedModel):
    """The OvercookedV2 environment's options (JaxMARL's names), written into every log header."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sample_recipe_on_delivery: bool = Field(False, description="draw a new recipe after each correct delivery "
                                            "(else only on reset)")
    indicate_successful_delivery: bool = Field(False, description="show a correct delivery in the observation")
    agent_view_size: Optional[int] = Field(None, ge=1, description="cells each player sees in every direction "
                                           "(None: the whole grid)")
    start_cooking_interaction: bool = Field(False, description="a pot cooks only when a player interacts with it "
                                            "(else when it holds three ingredients)")
    negative_rewards: bool = Field(False, description="a wrong dish costs the delivery reward")
    recipes: Optional[List[List[int]]] = Field(None, description="the recipes drawn from (default: the layout's)")

    def checked_for(self, layout: V2Layout) -> "V2Options":
        """These options, refused if a recipe uses an ingredient ``layout`` lacks."""
        if self.recipes is not None:
            check_recipes(self.recipes, layout.ingredients)
        return self

    def recipes_for(self, layout: V2Layout) -> Tuple[Tuple[int, int, int], ...]:
        if self.recipes is None:
            return layout.recipes
        return tuple(tuple(sorted(r)) for r in self.recipes)
