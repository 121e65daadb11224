"""Executor: turns a chosen skill into primitive actions.

Shortest path on the pose graph with the other players' cells treated as
obstacles, INTERACT when facing an active target, and a simple unstick rule (a
random move after a few steps without progress). It reports whether the skill
is still running, completed (its completion event was seen), invalid (the
held-object precondition fails or no target is reachable) or timed out.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

import numpy as np

from beliefgate.envs.domain import SkillStatus
from beliefgate.envs.overcooked.controller import OvercookedController
from beliefgate.envs.overcooked.dynamics import _interact_would_act, completion_matches
from beliefgate.envs.overcooked.kitchen import start_targets
from beliefgate.envs.overcooked.layouts import DIRECTIONS, Pos, layout_info
from beliefgate.envs.overcooked.state import SymbolicState
from beliefgate.envs.overcooked.tables import INTERACT, STAY, pose_tables


class Executor:
    """Low-level controller of one player for one skill at a time."""

    def __init__(self, controller: OvercookedController, player: int, rng: np.random.Generator,
                 timeout: int = 80, unstick_after: int = 3):
        self.controller = controller
        self.library = controller.library
        self.player = player
        self.rng = rng
        self.timeout = timeout
        self.unstick_after = unstick_after
        self.skill: Optional[int] = None
        self.allowed: Optional[frozenset] = None
        self.excluded: frozenset = frozenset()
        self.override: Optional[frozenset] = None
        self.steps = 0
        self._still = 0
        self._last_pos: Optional[Pos] = None

    # ---------------------------------------------------------------- control
    def start(self, skill: int, allowed: Optional[Iterable[Pos]] = None,
              excluded: Iterable[Pos] = (), override: Optional[Iterable[Pos]] = None) -> None:
        """Begin ``skill``; ``allowed``/``excluded`` restrict its target cells and
        ``override`` replaces them (e.g. waiting by any pot with a dish)."""
        self.skill = self.library.index(skill)
        self.allowed = frozenset(allowed) if allowed is not None else None
        self.excluded = frozenset(excluded)
        self.override = frozenset(override) if override is not None else None
        self.steps = 0
        self._still = 0
        self._last_pos = None
        self._waited = 0
        self._detour = 0
        self._patience = int(self.rng.integers(0, 4))

    def start_in(self, state: SymbolicState, skill) -> None:
        """Begin ``skill`` in ``state`` as an ego does, keeping the hand-over counters of a
        layout split by a counter usable: a hand-over goes on one, a surplus item off them and,
        when they are all occupied, a pickup clears one
        (:func:`~beliefgate.envs.overcooked.kitchen.start_targets`)."""
        k = self.library.index(skill)
        allowed, excluded = start_targets(state, self.player, self.library.names[k])
        self.start(k, allowed=allowed, excluded=excluded)

    def can_start(self, state: SymbolicState, skill) -> bool:
        """Would :meth:`start_in` find a target of ``skill`` this player can reach?"""
        k = self.library.index(skill)
        allowed, excluded = start_targets(state, self.player, self.library.names[k])
        return self.reachable(state, k, allowed, excluded)

    def stop(self) -> None:
        self.skill = None

    def targets(self, state: SymbolicState) -> np.ndarray:
        """bool[C] active, permitted targets of the current skill."""
        inter = self.controller.tables.interactables
        if self.override is not None:
            return np.array([cell in self.override for cell in inter])
        mask = self.controller.target_mask(state)[self.skill].copy()
        for c, cell in enumerate(inter):
            if mask[c] and (cell in self.excluded or (self.allowed is not None and cell not in self.allowed)):
                mask[c] = False
        return mask

    def reachable(self, state: SymbolicState, skill: int, allowed=None, excluded=(), override=None) -> bool:
        """Can this player reach a target of ``skill`` (ignoring other players)?"""
        saved = (self.skill, self.allowed, self.excluded, self.override)
        self.start(skill, allowed, excluded, override)
        try:
            mask = self.targets(state)
        finally:
            self.skill, self.allowed, self.excluded, self.override = saved
        me = state.players[self.player]
        tables = self.controller.tables
        pose = tables.pose(me.position, me.orientation)
        return bool(np.isfinite(tables.dist[mask, pose]).any()) if mask.any() else False

    def act(self, state: SymbolicState) -> int:
        """Next primitive action for the current skill (STAY when it has no reachable target)."""
        if self.skill is None:
            return STAY
        me = state.players[self.player]
        self.steps += 1
        if me.position == self._last_pos:
            self._still += 1
        else:
            self._still = 0
        self._last_pos = me.position
        mask = self.targets(state)
        if not mask.any():
            return STAY
        base = self.controller.tables
        pose = base.pose(me.position, me.orientation)
        faced = base.facing[pose]
        if faced >= 0 and mask[faced]:
            if _interact_would_act(me, state, layout_info(self.controller.layout)):
                return INTERACT
            return fidget(state, self.player, self.rng)  # waiting at the target (e.g. soup still cooking)
        others = [p.position for i, p in enumerate(state.players) if i != self.player]
        if self._still >= self.unstick_after + 3 and self.rng.random() < 0.5:
            self._still = 0
            return int(self.rng.integers(0, 4))
        # Follow the free-floor shortest path; when a teammate stands in the way, wait a
        # random number of steps (breaks symmetric deadlocks), then detour around them
        # for a few steps.
        if self._detour > 0 and len(others) == 1:
            self._detour -= 1
            move = self._best_move(pose_tables(self.controller.layout, others[0]), me, mask)
            if move is not None:
                return move if move != STAY else fidget(state, self.player, self.rng)
        move = self._best_move(base, me, mask)
        if move is None:
            return STAY
        if move == STAY:
            return fidget(state, self.player, self.rng)
        if move < 4:
            nxt = (me.position[0] + DIRECTIONS[move][0], me.position[1] + DIRECTIONS[move][1])
            if self._contested(state, nxt) and self.rng.random() < 0.5:
                return fidget(state, self.player, self.rng)  # let the teammate go first
            if nxt in others:
                self._waited += 1
                if self._waited > self._patience:
                    self._waited = 0
                    self._patience = int(self.rng.integers(0, 4))
                    self._detour = 4
                    if len(others) == 1:
                        detour = self._best_move(pose_tables(self.controller.layout, others[0]), me, mask)
                        if detour is not None and detour != STAY:
                            return detour
                return fidget(state, self.player, self.rng)
        self._waited = 0
        return move

    def _contested(self, state: SymbolicState, cell: Pos) -> bool:
        """Is a teammate next to ``cell`` and facing it (so it may step there this turn)?"""
        for i, p in enumerate(state.players):
            if i != self.player and (p.position[0] + p.orientation[0], p.position[1] + p.orientation[1]) == cell:
                return True
        return False

    def _best_move(self, tables, me, mask) -> Optional[int]:
        """Move (0-3) that gets closest to facing a target, STAY if none gets closer, None if unreachable."""
        pose = tables.pose(me.position, me.orientation)
        d = tables.dist[mask][:, tables.next_pose[pose, :4]].min(axis=0)
        if not np.isfinite(d).any():
            return None
        here = tables.dist[mask, pose].min()
        if d.min() >= here:
            return STAY
        return int(self.rng.choice(np.flatnonzero(d == d.min())))

    def update(self, state: SymbolicState, my_events: Sequence[str]) -> SkillStatus:
        """Status of the current skill after observing ``state`` and this player's events."""
        if self.skill is None:
            return SkillStatus.INVALID
        spec = self.library.skills[self.skill]
        if any(completion_matches(e, spec.completion) for e in my_events):
            return SkillStatus.COMPLETED
        if not self.library.requirement_met(self.skill, state.players[self.player].held):
            return SkillStatus.INVALID
        if not self.targets(state).any():
            return SkillStatus.INVALID  # its targets are gone (e.g. the soup was taken)
        if self.steps >= self.timeout:
            return SkillStatus.TIMED_OUT
        return SkillStatus.RUNNING


def fidget(state: SymbolicState, player: int, rng: np.random.Generator) -> int:
    """A visible way to wait: turn towards a blocked neighbouring cell (no step), else
    step to a free neighbouring cell, else STAY.

    Turning or stepping changes the pose, so an observer can tell the action apart
    from STAY or an ineffective INTERACT; the executor then returns to the target.
    """
    me = state.players[player]
    info = layout_info(state.layout)
    others = {p.position for i, p in enumerate(state.players) if i != player}
    turns = [a for a, d in enumerate(DIRECTIONS)
             if d != me.orientation and (not info.is_floor((me.position[0] + d[0], me.position[1] + d[1]))
                                         or (me.position[0] + d[0], me.position[1] + d[1]) in others)]
    if turns:
        return int(rng.choice(turns))
    steps = [a for a, d in enumerate(DIRECTIONS)
             if info.is_floor((me.position[0] + d[0], me.position[1] + d[1]))
             and (me.position[0] + d[0], me.position[1] + d[1]) not in others]
    return int(rng.choice(steps)) if steps else STAY


