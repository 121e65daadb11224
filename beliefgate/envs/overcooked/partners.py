"""Scripted partner population with the ground-truth active skill at every step.

Each partner is a high-level skill-choice rule with role-preference weights
(the "logistics / cooking / sourcing" style idea of behaviour-preferring
partners), executed through the shared :class:`~beliefgate.envs.overcooked.executor.Executor`.
Some switch preference at a seeded time mid-episode; one acts with epsilon-random
moves. Every partner is also usable as an ego agent.
"""

from __future__ import annotations
from beliefgate.errors import LookupFailure

from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, FrozenSet, Optional, Sequence, Tuple

import numpy as np

from beliefgate.envs.overcooked.controller import OvercookedController, controller_for
from beliefgate.envs.overcooked.executor import Executor, SkillStatus, fidget
from beliefgate.envs.overcooked.layouts import DIRECTIONS, Pos, layout_info
from beliefgate.envs.overcooked.state import POT_CAPACITY, SymbolicState


class UnknownPartnerError(LookupFailure):
    """A partner or agent name that is not registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown partner"


@dataclass(frozen=True)
class PartnerSpec:
    """A scripted partner: preference weights over the empty-handed choices, and options.

    ``prefer`` weights ``pickup_onion`` vs ``pickup_dish`` when both are useful;
    ``stage_extra_onions`` fetches onions beyond the pots' needs and stages them on
    counters (a sourcing style); ``eager_plating`` fetches dishes as soon as a pot
    holds two onions; ``switch_window`` (lo, hi) switches to ``switch_to`` at a
    seeded step in that window; ``noise`` replaces an action by a random move with
    that probability.
    """

    name: str
    description: str
    prefer: Tuple[float, float] = (1.0, 1.0)
    stage_extra_onions: bool = False
    eager_plating: bool = False
    pass_on_counters: bool = False
    noise: float = 0.0
    switch_window: Optional[Tuple[int, int]] = None
    switch_to: Optional["PartnerSpec"] = None
    layouts: Optional[Tuple[str, ...]] = None

    @property
    def switches(self) -> bool:
        return self.switch_to is not None

    def summary(self) -> Dict[str, object]:
        return {
            "name": self.name,
            "description": self.description,
            "switches": self.switches,
            "layouts": list(self.layouts) if self.layouts else None,
            "noise": self.noise,
        }


_SOURCER = PartnerSpec("onion-sourcer", "ingredient-preferring: fetches and pots onions, stages spare onions on counters",
                       prefer=(4.0, 0.5), stage_extra_onions=True)
_PLATER = PartnerSpec("plater", "plating-preferring: fetches dishes early and scoops soups",
                      prefer=(0.5, 4.0), eager_plating=True)

PARTNERS: Dict[str, PartnerSpec] = {
    p.name: p
    for p in [
        _SOURCER,
        _PLATER,
        PartnerSpec("server", "serving-preferring: plates and delivers ready soups, helps with onions otherwise",
                    prefer=(1.0, 3.0)),
        PartnerSpec("balanced", "no role preference: does whatever the kitchen needs next", prefer=(1.0, 1.0)),
        PartnerSpec("counter-passer", "passes onions and dishes over shared counters (forced_coordination)",
                    prefer=(2.0, 1.0), pass_on_counters=True, layouts=("forced_coordination",)),
        PartnerSpec("noisy", "balanced, but 20% of its actions are random moves", prefer=(1.0, 1.0), noise=0.2),
        PartnerSpec("switch-sourcer-to-plater", "starts ingredient-preferring, switches to plating at a seeded step",
                    prefer=_SOURCER.prefer, stage_extra_onions=True, switch_window=(100, 250), switch_to=_PLATER),
        PartnerSpec("switch-plater-to-sourcer", "starts plating-preferring, switches to ingredients at a seeded step",
                    prefer=_PLATER.prefer, eager_plating=True, switch_window=(100, 250), switch_to=_SOURCER),
    ]
}


def get_partner(name: str) -> PartnerSpec:
    try:
        return PARTNERS[name]
    except KeyError:
        raise UnknownPartnerError(f"unknown partner {name!r}; available: {', '.join(PARTNERS)}") from None


@lru_cache(maxsize=None)
def _regions(layout: str) -> Tuple[FrozenSet[Pos], ...]:
    """Connected components of the floor."""
    info = layout_info(layout)
    left = set(info.floor)
    comps = []
    while left:
        start = left.pop()
        comp, stack = {start}, [start]
        while stack:
            x, y = stack.pop()
            for dx, dy in DIRECTIONS:
                n = (x + dx, y + dy)
                if n in left:
                    left.remove(n)
                    comp.add(n)
                    stack.append(n)
        comps.append(frozenset(comp))
    return tuple(comps)


@lru_cache(maxsize=None)
def shared_counters(layout: str) -> FrozenSet[Pos]:
    """Counters adjacent to two floor regions (passing places); all counters if the floor is one region."""
    info = layout_info(layout)
    regions = _regions(layout)
    if len(regions) == 1:
        return frozenset(info.counters)
    shared = set()
    for c in info.counters:
        touching = {i for i, r in enumerate(regions) for d in DIRECTIONS if (c[0] + d[0], c[1] + d[1]) in r}
        if len(touching) >= 2:
            shared.add(c)
    return frozenset(shared)


class ScriptedAgent:
    """A scripted player: chooses skills by rule, executes them, logs its active skill."""

    replans = 0
    llm_calls = 0

    def __init__(self, spec: PartnerSpec):
        self.spec = spec
        self.name = spec.name

    # ------------------------------------------------------------------ API
    def reset(self, layout: str, player: int, seed: int) -> None:
        self.layout = layout
        self.player = player
        self.rng = np.random.default_rng(seed)
        self.controller: OvercookedController = controller_for(layout)
        self.library = self.controller.library
        self.executor = Executor(self.controller, player, self.rng)
        self.active: Optional[int] = None
        self.style = self.spec
        self.switch_at: Optional[int] = None
        if self.spec.switch_window is not None:
            lo, hi = self.spec.switch_window
            self.switch_at = int(self.rng.integers(lo, hi + 1))
        self.my_drops: set = set()
        self.skill_choices = 0

    @property
    def active_skill(self) -> Optional[str]:
        return self.library.names[self.active] if self.active is not None else None

    def act(self, state: SymbolicState, my_events: Sequence[str] = ()) -> int:
        """Choose this step's action; ``my_events`` are this player's events of the last step."""
        self._note_drops(state, my_events)
        if self.switch_at is not None and state.timestep >= self.switch_at and self.style is self.spec:
            # a hidden switch: drop the current skill mid-way and choose under the new preference
            self.style = self.spec.switch_to
            self.active = None
            self.executor.stop()
            held = state.players[self.player].held
            onion_w, dish_w = self.style.prefer
            # an item of the abandoned role is put down to free the hands for the new one
            if (held == "onion" and dish_w > onion_w) or (held == "dish" and onion_w > dish_w):
                self._start("place_obj_on_counter", state)
        if self.active is not None:
            status = self.executor.update(state, my_events)
            if status is not SkillStatus.RUNNING:
                self.active = None
        if self.active is None:
            self._choose(state)
        action = self.executor.act(state) if self.active is not None else self._idle_action(state)
        if self.spec.noise > 0 and self.rng.random() < self.spec.noise:
            action = int(self.rng.integers(0, 4))
        return action

    def info(self) -> Dict[str, object]:
        return {"skill": self.active_skill, "replans": 0, "llm_calls": 0}

    # ------------------------------------------------------------- choosing
    def _note_drops(self, state: SymbolicState, my_events: Sequence[str]) -> None:
        me = state.players[self.player]
        if any(e.startswith("drop:") for e in my_events):
            self.my_drops.add(me.facing)
        on_counters = set(state.counter_dict())
        self.my_drops &= on_counters

    def _start(self, skill: str, state: SymbolicState, allowed=None, override=None) -> bool:
        k = self.library.index(skill)
        excluded = self.my_drops if skill.startswith("pickup") else ()
        if not self.library.requirement_met(k, state.players[self.player].held):
            return False
        if not self.executor.reachable(state, k, allowed, excluded, override):
            return False
        self.executor.start(k, allowed, excluded, override)
        self.active = k
        self.skill_choices += 1
        return True

    def _choose(self, state: SymbolicState) -> None:
        held = state.players[self.player].held
        passing = shared_counters(self.layout) if (self.style.pass_on_counters or len(_regions(self.layout)) > 1) else None
        if held == "onion":
            if not self._start("put_onion_in_pot", state):
                self._start("place_obj_on_counter", state, allowed=passing)
            return
        if held == "dish":
            if self._start("fill_dish_with_soup", state):
                return
            # no soup cooking yet: wait by a pot, unless onions are needed and nobody brings them
            onions_missing = any(not p.full for p in state.pots) and self._others_holding(state, "onion") == 0
            if not onions_missing and self._start("fill_dish_with_soup", state, override=self.layout_pots()):
                return  # (no pot holds anything yet: wait by any pot)
            self._start("place_obj_on_counter", state, allowed=passing)
            return
        if held == "soup":
            if not self._start("deliver_soup", state):
                self._start("place_obj_on_counter", state, allowed=passing)
            return
        if held is not None:  # e.g. a tomato: put it away
            self._start("place_obj_on_counter", state)
            return
        onion_w, dish_w = self.style.prefer
        options = []
        if self._onion_useful(state):
            options.append(("pickup_onion", onion_w))
        if self._dish_useful(state):
            options.append(("pickup_dish", dish_w))
        while options:
            weights = np.array([w for _, w in options], dtype=float)
            i = int(self.rng.choice(len(options), p=weights / weights.sum()))
            if self._start(options[i][0], state):
                return
            options.pop(i)
        self.active = None  # nothing useful: idle this step

    def _idle_action(self, state: SymbolicState) -> int:
        """Nothing useful to do: step away from a nearby teammate (so as not to block), else stay."""
        me = state.players[self.player].position
        others = [p.position for i, p in enumerate(state.players) if i != self.player]
        near = [o for o in others if abs(o[0] - me[0]) + abs(o[1] - me[1]) <= 2]
        if not near:
            return fidget(state, self.player, self.rng)
        info = layout_info(self.layout)

        def gap(cell):
            return min(abs(o[0] - cell[0]) + abs(o[1] - cell[1]) for o in near)

        moves = []
        for a, (dx, dy) in enumerate(DIRECTIONS):
            cell = (me[0] + dx, me[1] + dy)
            if info.is_floor(cell) and cell not in others:
                moves.append((gap(cell), a))
        if not moves:
            return fidget(state, self.player, self.rng)
        best = max(g for g, _ in moves)
        if best <= gap(me) and self.rng.random() < 0.5:
            return fidget(state, self.player, self.rng)
        return int(self.rng.choice([a for g, a in moves if g == best]))

    def layout_pots(self) -> Tuple[Pos, ...]:
        return layout_info(self.layout).pots

    def _can_reach(self, state: SymbolicState, cells) -> bool:
        me = state.players[self.player]
        tables = self.controller.tables
        pose = tables.pose(me.position, me.orientation)
        idx = [tables.inter_index[c] for c in cells]
        return bool(idx) and bool(np.isfinite(tables.dist[idx, pose]).any())

    def _others_holding(self, state: SymbolicState, name: str) -> int:
        return sum(1 for i, p in enumerate(state.players) if i != self.player and p.held == name)

    def _onion_useful(self, state: SymbolicState) -> bool:
        missing = sum(POT_CAPACITY - p.ingredients for p in state.pots if not p.full)
        in_flight = self._others_holding(state, "onion")
        on_counters = sum(1 for o in state.counters if o.name == "onion" and o.position not in self.my_drops)
        if self._can_reach(state, self.layout_pots()):
            need = missing - in_flight
            if self.style.stage_extra_onions:
                need += max(0, 2 - on_counters)
            return need > 0
        return missing - in_flight - on_counters > 0

    def _dish_useful(self, state: SymbolicState) -> bool:
        eager_from = 2 if self.style.eager_plating else POT_CAPACITY
        coming = sum(1 for p in state.pots if p.full or p.ingredients >= eager_from)
        dishes_out = self._others_holding(state, "dish")
        on_counters = sum(1 for o in state.counters if o.name == "dish" and o.position not in self.my_drops)
        if self._can_reach(state, self.layout_pots()):
            return coming - dishes_out > 0
        return coming - dishes_out - on_counters > 0


def make_scripted(name: str) -> ScriptedAgent:
    return ScriptedAgent(get_partner(name))
