"""The V2 executor: a skill -> primitive actions (JaxMARL's action order).

Shortest path on the pose graph to face an active target of the skill; INTERACT when facing one
and the interaction would act (a plate at a pot still cooking waits visibly instead); a teammate
in the way is routed around with the tables that block its cell, after a random wait that breaks
symmetric deadlocks. It reports running, completed (the completion event was seen), invalid (the
held-object requirement fails or no target is left) or timed out.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from beliefgate.envs.domain import SkillStatus
from beliefgate.envs.overcooked_v2.controller import V2Controller, pose_tables
from beliefgate.envs.overcooked_v2.layouts import (ACTION_DIR, BUTTON_INDICATOR, COOKED, DIR_VEC, GOAL,
                                                   INGREDIENT_PILE_BASE, INTERACT, PLATE, PLATE_PILE, POT, STAY,
                                                   WALL, decode_ingredients)
from beliefgate.envs.overcooked_v2.state import V2State, completion_matches


def interact_acts(state: V2State, player: int, start_cooking: Optional[bool] = None) -> bool:
    """Whether INTERACT by ``player`` would change something now (JaxMARL's ``process_interact``)."""
    if start_cooking is None:
        start_cooking = state.start_cooking_interaction
    me = state.players[player]
    info = state.info
    front = me.front
    code = info.code(front)
    content, timer = state.cell(front)
    inv = me.inventory
    if code == PLATE_PILE or code >= INGREDIENT_PILE_BASE:
        return inv == 0
    if code == WALL:
        return (inv == 0) != (content == 0)
    if code == GOAL:
        return bool(inv & COOKED)
    if code == BUTTON_INDICATOR:
        return inv == 0
    if code == POT:
        cooked = bool(content & COOKED)
        if cooked:
            return inv == PLATE
        if timer > 0:
            return False
        n = len(decode_ingredients(content))
        held = me.held or ""
        if held.startswith("ingredient_"):
            return n < 3
        return inv == 0 and n > 0 and start_cooking
    return False


def fidget(state: V2State, player: int, rng: np.random.Generator) -> int:
    """A visible way to wait: turn towards a blocked neighbour (no step), else step to a free
    neighbour, else STAY; next to a teammate it steps aside half of the time (a waiting player
    must not seal a corridor)."""
    me = state.players[player]
    info = state.info
    others = {p.position for i, p in enumerate(state.players) if i != player}
    turns, steps = [], []
    for a in range(4):
        d = ACTION_DIR[a]
        cell = (me.position[0] + DIR_VEC[d][0], me.position[1] + DIR_VEC[d][1])
        free = info.is_floor(cell) and cell not in others
        if not free and d != me.direction:
            turns.append(a)
        elif free:
            steps.append(a)
    crowded = any(abs(p[0] - me.position[0]) + abs(p[1] - me.position[1]) == 1 for p in others)
    if steps and (crowded and rng.random() < 0.5 or not turns):
        return int(rng.choice(steps))  # a teammate next to it may need the cell: step aside at times
    return int(rng.choice(turns)) if turns else STAY


def give_way(state: V2State, player: int, rng: np.random.Generator) -> int:
    """Step to a random free neighbouring cell (a deadlock in a corridor breaks when one player
    steps aside), else :func:`fidget`."""
    me = state.players[player]
    info = state.info
    others = {p.position for i, p in enumerate(state.players) if i != player}
    steps = []
    for a in range(4):
        d = DIR_VEC[ACTION_DIR[a]]
        cell = (me.position[0] + d[0], me.position[1] + d[1])
        if info.is_floor(cell) and cell not in others:
            steps.append(a)
    return int(rng.choice(steps)) if steps else fidget(state, player, rng)


class V2Executor:
    """Low-level control of one player for one skill at a time."""

    def __init__(self, controller: V2Controller, player: int, rng: np.random.Generator, timeout: int = 80):
        self.controller = controller
        self.library = controller.library
        self.player = player
        self.rng = rng
        self.timeout = timeout
        self.skill: Optional[int] = None
        self.override: Optional[frozenset] = None
        self.steps = 0
        self._waited = 0
        self._patience = 0

    def start(self, skill, override=None) -> None:
        self.skill = self.library.index(skill)
        self.override = frozenset(override) if override is not None else None
        self.steps = 0
        self._waited = 0
        self._patience = int(self.rng.integers(0, 4))

    def start_in(self, state: V2State, skill) -> None:
        self.start(skill)

    def can_start(self, state: V2State, skill) -> bool:
        """Would :meth:`start_in` find a target of ``skill`` this player can reach?"""
        return self.reachable(state, skill)

    def stop(self) -> None:
        self.skill = None

    def targets(self, state: V2State) -> np.ndarray:
        inter = self.controller.tables.interactables
        if self.override is not None:
            return np.array([c in self.override for c in inter])
        return self.controller.target_row(state, self.skill)

    def reachable(self, state: V2State, skill) -> bool:
        k = self.library.index(skill)
        mask = self.controller.target_row(state, k)
        me = state.players[self.player]
        t = self.controller.tables
        return bool(mask.any() and np.isfinite(t.dist[mask, t.pose(me.position, me.direction)]).any())

    def _best_move(self, tables, me, mask) -> Optional[int]:
        pose = tables.pose(me.position, me.direction)
        d = tables.dist[mask][:, tables.next_pose[pose, :4]].min(axis=0)
        if not np.isfinite(d).any():
            return None
        if d.min() >= tables.dist[mask, pose].min():
            return STAY
        return int(self.rng.choice(np.flatnonzero(d == d.min())))

    def act(self, state: V2State) -> int:
        if self.skill is None:
            return STAY
        self.steps += 1
        me = state.players[self.player]
        mask = self.targets(state)
        if not mask.any():
            return fidget(state, self.player, self.rng)
        tables = self.controller.tables
        pose = tables.pose(me.position, me.direction)
        faced = tables.facing[pose]
        if faced >= 0 and mask[faced]:
            if interact_acts(state, self.player):
                return INTERACT
            front = tables.interactables[faced]
            if state.info.code(front) == POT and state.cell(front)[1] == 0 and self.rng.random() < 0.5:
                return give_way(state, self.player, self.rng)  # a pot still filling: do not block it
            return fidget(state, self.player, self.rng)  # e.g. the soup is still cooking
        others = frozenset(p.position for i, p in enumerate(state.players) if i != self.player)
        move = self._best_move(tables, me, mask)
        if move is None:
            return fidget(state, self.player, self.rng)
        if move < 4:
            d = ACTION_DIR[move]
            nxt = (me.position[0] + DIR_VEC[d][0], me.position[1] + DIR_VEC[d][1])
            if nxt in others:
                self._waited += 1
                if self._waited <= self._patience:
                    return fidget(state, self.player, self.rng)
                self._waited = 0
                self._patience = int(self.rng.integers(0, 4))
                around = self._best_move(pose_tables(self.controller.layout, others), me, mask)
                if around is not None and around != STAY:
                    return around
                return give_way(state, self.player, self.rng)  # no way round: step aside
            self._waited = 0
            if self._contested(state, nxt) and self.rng.random() < 0.5:
                return fidget(state, self.player, self.rng)  # a teammate may step there too: let it go first
            return move
        # turning in place towards the target's cell: a move into a non-floor cell only turns
        return fidget(state, self.player, self.rng) if move == STAY else move

    def _contested(self, state: V2State, cell) -> bool:
        """Is a teammate next to ``cell`` and facing it (so it may step there this turn)?"""
        return any(i != self.player and p.front == cell for i, p in enumerate(state.players))

    def update(self, state: V2State, my_events: Sequence[str]) -> SkillStatus:
        if self.skill is None:
            return SkillStatus.INVALID
        spec = self.library.skills[self.skill]
        if any(completion_matches(e, spec.completion) for e in my_events):
            return SkillStatus.COMPLETED
        if not self.library.requirement_met(self.skill, state.players[self.player].held):
            return SkillStatus.INVALID
        if not self.targets(state).any():
            return SkillStatus.INVALID
        if self.steps >= self.timeout:
            return SkillStatus.TIMED_OUT
        return SkillStatus.RUNNING
