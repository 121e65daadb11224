"""The V2 skill library (expanded from ``skills_v2.json`` per layout), pose tables and the
likelihood controllers.

A *pose* is (floor cell, direction) with index ``cell * 4 + direction`` (JaxMARL's directions). A
move action turns the player to its direction and steps if the cell there is floor, else it only
turns; STAY and INTERACT keep the pose. ``dist[c, p]`` is the number of actions until a player in
pose ``p`` faces interactable cell ``c`` (``inf``: never), by value iteration on the pose graph.

For each skill the target predicate gives the active target cells ``T(s)``; with
``D(s, pose) = min over c in T(s) of dist[c, pose]``:

    Q(s, a)        = -(1 + D(s, next_pose(pose, a)))   for moves and STAY
    Q(s, INTERACT) = 0 if the pose faces an active target, else -(1 + D(s, pose))

and a skill with no reachable target gets a flat row (no evidence), as in the classic backend.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.envs.overcooked_v2.layouts import (ACTION_DIR, DIR_VEC, INTERACT, NUM_ACTIONS, STAY, Pos,
                                                   V2Layout, layout_info)
from beliefgate.envs.overcooked_v2.state import V2State
from beliefgate.skills.library import SkillLibrary, SkillLibraryError


# ------------------------------------------------------------------ library
@lru_cache(maxsize=None)
def _template() -> dict:
    text = resources.files("beliefgate.envs.overcooked_v2").joinpath("skills_v2.json").read_text()
    return json.loads(text)


def _features(info: V2Layout) -> Dict[str, bool]:
    return {"recipe_buttons": bool(info.buttons), "recipe_indicators": bool(info.indicators)}


@lru_cache(maxsize=None)
def library_for(layout: str) -> SkillLibrary:
    """The skill library of ``layout``: the per-ingredient skills for each ingredient it has, then
    the shared ones (a skill marked ``only`` where the layout has that feature)."""
    info = layout_info(layout)
    t = _template()
    feats = _features(info)
    skills: List[dict] = []
    ing_roles = [f"ingredient_{i}" for i in info.ingredients]
    for i in info.ingredients:
        for spec in t["per_ingredient"]:
            skills.append({k: (v.replace("{i}", str(i)) if isinstance(v, str) else v) for k, v in spec.items()})
    for spec in t["skills"]:
        only = spec.get("only")
        if only is not None and not feats.get(only, False):
            continue
        skills.append({k: v for k, v in spec.items() if k != "only"})
    roles = list(dict.fromkeys(s["role"] for s in skills))

    def expand(names: Sequence[str]) -> List[str]:
        out: List[str] = []
        for n in names:
            out += ing_roles if n == "ingredient_*" else [n]
        return out

    comp: Dict[str, List[str]] = {}
    for role, partners in t["complementary"].items():
        for r in expand([role]):
            if r in roles:
                comp[r] = [p for p in expand(partners) if p != r and p in roles]
    held = list(t["held_objects"]) + [f"ingredient_{i}" for i in info.ingredients]
    return SkillLibrary.from_dict({"domain": "overcooked_v2", "description": t["description"], "roles": roles,
                                   "held_objects": held, "skills": skills, "complementary": comp})


# -------------------------------------------------------------- pose tables
@dataclass(frozen=True, eq=False)
class V2PoseTables:
    """Pose graph and distances of one layout (optionally with some floor cells blocked)."""

    layout: str
    cells: Tuple[Pos, ...]
    next_pose: np.ndarray      # int[P, 6]
    facing: np.ndarray         # int[P] interactable index faced, -1 for floor
    dist: np.ndarray           # float[C, P]
    interactables: Tuple[Pos, ...]

    @property
    def cell_index(self) -> Dict[Pos, int]:
        return {c: i for i, c in enumerate(self.cells)}

    def pose(self, position: Pos, direction: int) -> int:
        return _cell_index(self.layout)[tuple(position)] * 4 + int(direction)


@lru_cache(maxsize=None)
def _inter_index(layout: str) -> Dict[Pos, int]:
    return {c: i for i, c in enumerate(layout_info(layout).interactables)}


@lru_cache(maxsize=None)
def _cell_index(layout: str) -> Dict[Pos, int]:
    return {c: i for i, c in enumerate(layout_info(layout).floor)}


def _build_tables(info: V2Layout, blocked: FrozenSet[Pos]) -> V2PoseTables:
    cells = info.floor
    index = {c: i for i, c in enumerate(cells)}
    inter = {c: i for i, c in enumerate(info.interactables)}
    n = 4 * len(cells)
    next_pose = np.zeros((n, NUM_ACTIONS), dtype=np.int64)
    facing = np.full(n, -1, dtype=np.int64)
    for ci, (x, y) in enumerate(cells):
        for d, (dx, dy) in enumerate(DIR_VEC):
            p = ci * 4 + d
            facing[p] = inter.get((x + dx, y + dy), -1)
            next_pose[p, STAY] = next_pose[p, INTERACT] = p
            for a in range(4):
                nd = ACTION_DIR[a]
                ax, ay = DIR_VEC[nd]
                target = (x + ax, y + ay)
                free = target in index and target not in blocked
                next_pose[p, a] = (index[target] if free else ci) * 4 + nd
    dist = np.full((len(info.interactables), n), np.inf)
    faced = facing >= 0
    dist[facing[faced], np.flatnonzero(faced)] = 0.0
    on_blocked = np.array([cells[p // 4] in blocked for p in range(n)], dtype=bool)
    dist[:, on_blocked] = np.inf
    moves = next_pose[:, :4]
    for _ in range(n + 1):  # value iteration: at most one sweep per pose
        cand = 1.0 + dist[:, moves].min(axis=2)
        cand[:, on_blocked] = np.inf
        new = np.minimum(dist, cand)
        if np.array_equal(new, dist):
            break
        dist = new
    return V2PoseTables(info.name, cells, next_pose, facing, dist, info.interactables)


@lru_cache(maxsize=4096)
def pose_tables(layout: str, blocked: FrozenSet[Pos] = frozenset()) -> V2PoseTables:
    """Pose tables of ``layout`` with the cells ``blocked`` (other players) taken out of the floor."""
    return _build_tables(layout_info(layout), frozenset(blocked))


# -------------------------------------------------------- target predicates
TargetFn = Callable[[V2State, V2Layout], List[Pos]]


def _ingredient_sources(i: int) -> TargetFn:
    name = f"ingredient_{i}"

    def fn(s: V2State, info: V2Layout) -> List[Pos]:
        return list(info.ingredient_piles(i)) + [c for c, o in s.counters.items() if o == name]
    return fn


def _pots_open(s: V2State, info: V2Layout) -> List[Pos]:
    return [p.position for p in s.pots if p.idle and not p.full]


def _plate_sources(s: V2State, info: V2Layout) -> List[Pos]:
    return list(info.plate_piles) + [c for c, o in s.counters.items() if o == "plate"]


def _pots_with_soup(s: V2State, info: V2Layout) -> List[Pos]:
    return [p.position for p in s.pots if p.ingredients]


def _pots_to_start(s: V2State, info: V2Layout) -> List[Pos]:
    if not s.start_cooking_interaction:
        return []   # pots start by themselves when full
    return [p.position for p in s.pots if p.idle and p.ingredients]


def _goals(s: V2State, info: V2Layout) -> List[Pos]:
    return list(info.goals)


def _empty_counters(s: V2State, info: V2Layout) -> List[Pos]:
    taken = s.counters
    return [c for c in info.counters if c not in taken]


def _recipe_buttons(s: V2State, info: V2Layout) -> List[Pos]:
    return list(info.buttons)


TARGET_PREDICATES: Dict[str, TargetFn] = {
    **{f"ingredient_sources_{i}": _ingredient_sources(i) for i in range(10)},
    "pots_open": _pots_open, "plate_sources": _plate_sources, "pots_with_soup": _pots_with_soup,
    "pots_to_start": _pots_to_start, "goals": _goals, "empty_counters": _empty_counters, "recipe_buttons": _recipe_buttons,
}


def q_from_tables(tables: V2PoseTables, mask: np.ndarray, pose: int) -> np.ndarray:
    """Q[K, A] from the pose tables, the active-target mask bool[K, C] and the player's pose."""
    nxt = tables.next_pose[pose]
    d_next = np.where(mask[:, :, None], tables.dist[None, :, nxt], np.inf).min(axis=1)   # [K, A]
    d_here = d_next[:, STAY]
    q = -(1.0 + d_next)
    faced = tables.facing[pose]
    facing_target = mask[:, faced] if faced >= 0 else np.zeros(mask.shape[0], dtype=bool)
    q[:, INTERACT] = np.where(facing_target, 0.0, -(1.0 + d_here))
    q[~np.isfinite(d_here) & ~facing_target] = 0.0   # no reachable target: a flat row
    return q


@dataclass(frozen=True, eq=False)
class V2Controller:
    """Q-values of every skill of a layout's library (the gate's likelihood controller)."""

    layout: str
    library: SkillLibrary
    tables: V2PoseTables

    @classmethod
    def create(cls, layout: str, library: Optional[SkillLibrary] = None) -> "V2Controller":
        info = layout_info(layout)
        library = library or library_for(info.name)
        unknown = [s.targets for s in library.skills if s.targets not in TARGET_PREDICATES]
        if unknown:
            raise SkillLibraryError(f"target predicate(s) {unknown} are not defined for OvercookedV2; "
                                    f"known: {sorted(TARGET_PREDICATES)}")
        return cls(info.name, library, pose_tables(info.name))

    #: target masks by the state's items: a skill's targets depend on what lies where (pots,
    #: counters) and on the episode's cooking rule, never on where the players stand, so the
    #: observers, the executors and OverForge's rollouts reading one state share one mask
    _masks: Dict[Tuple, np.ndarray] = field(default_factory=dict, repr=False)
    #: held object -> bool[K], the skills whose held-object requirement it meets
    _requirements: Dict[Optional[str], np.ndarray] = field(default_factory=dict, repr=False)
    #: masks kept at most (the cache is emptied when full: states of one episode repeat their items
    #: for a while, then move on)
    MASK_CACHE_SIZE = 4096

    def target_mask(self, state: V2State) -> np.ndarray:
        """bool[K, C]: the active target cells of each skill in ``state`` (read-only; cached by the
        state's items and cooking rule, see :attr:`_masks`)."""
        key = (state.items, state.start_cooking_interaction)
        mask = self._masks.get(key)
        if mask is not None:
            return mask
        info = layout_info(self.layout)
        index = _inter_index(self.layout)
        mask = np.zeros((self.library.num_skills, len(index)), dtype=bool)
        rows: Dict[str, np.ndarray] = {}
        for k, skill in enumerate(self.library.skills):
            row = rows.get(skill.targets)
            if row is None:
                row = np.zeros(len(index), dtype=bool)
                cells = [index[c] for c in TARGET_PREDICATES[skill.targets](state, info) if c in index]
                row[cells] = True
                rows[skill.targets] = row
            mask[k] = row
        mask.flags.writeable = False
        if len(self._masks) >= self.MASK_CACHE_SIZE:
            self._masks.clear()
        self._masks[key] = mask
        return mask

    def target_row(self, state: V2State, skill: int) -> np.ndarray:
        """bool[C]: the active target cells of one skill (a read-only row of :meth:`target_mask`)."""
        return self.target_mask(state)[skill]

    def q_values(self, state: V2State, player: int, targets: Optional[np.ndarray] = None) -> np.ndarray:
        """float[K, 6] action values of ``player`` for every skill (JaxMARL's action order)."""
        me = state.players[player]
        mask = self.target_mask(state) if targets is None else targets
        return q_from_tables(self.tables, mask, self.tables.pose(me.position, me.direction))

    def steps_to_targets(self, state: V2State, player: int) -> np.ndarray:
        """float[K]: the steps from ``player``'s pose to each skill's nearest active target (inf
        where a skill has none); OverForge's judge discounts a branch by it."""
        me = state.players[player]
        pose = self.tables.pose(me.position, me.direction)
        mask = self.target_mask(state)
        d = np.where(mask, self.tables.dist[:, pose][None, :], np.inf)
        return d.min(axis=1) if d.shape[1] else np.full(mask.shape[0], np.inf)

    def feasible(self, state: V2State, player: int, require_targets: bool = False,
                 q: Optional[np.ndarray] = None) -> np.ndarray:
        """bool[K]: skills whose held-object requirement ``player`` meets (and, with
        ``require_targets``, that have a target it can reach)."""
        held = state.players[player].held
        ok = self._requirements.get(held)
        if ok is None:
            ok = self._requirements[held] = np.array([self.library.requirement_met(k, held)
                                                      for k in range(self.library.num_skills)])
        ok = ok.copy()
        if require_targets:
            q = self.q_values(state, player) if q is None else q
            ok &= np.any(q != 0.0, axis=1)
        return ok


@lru_cache(maxsize=None)
def controller_for(layout: str) -> V2Controller:
    """The default-library controller of ``layout`` (cached)."""
    return V2Controller.create(layout)


def recipes_with(info_recipes, pots_contents: Sequence[Tuple[int, ...]]) -> List[Tuple[int, ...]]:
    """The recipes some open pot's contents can still become (all of them when no pot has any)."""
    out = []
    for r in info_recipes:
        for contents in pots_contents:
            rest = list(r)
            ok = True
            for i in contents:
                if i in rest:
                    rest.remove(i)
                else:
                    ok = False
                    break
            if ok:
                out.append(tuple(r))
                break
    return out
