"""Overcooked likelihood controllers: per-skill action values Q_psi(s, a).

For each skill psi the domain resolves its named target predicate to the set of
active target cells T_psi(s); with the pose tables of
:mod:`beliefgate.envs.overcooked.tables`

    D_psi(s, pose) = min_{c in T_psi(s)} dist[c, pose]
    Q_psi(s, a)    = -(1 + D_psi(s, next_pose(pose, a)))   for moves and STAY
    Q_psi(s, INTERACT) = 0 if the pose faces an active target, else -(1 + D_psi(s, pose))

A skill with no reachable target gets a flat row (Q = 0 for every action): its
controller is then uniform and carries no evidence. The Boltzmann controller
(:mod:`beliefgate.models.controllers.boltzmann`) turns Q into
pi_hat(a | s, psi) = (1 - eps) softmax(beta Q) + eps / |A|.

Everything is computed for all skills at once, in NumPy (:meth:`OvercookedController.q_values`)
and in JAX (:func:`q_values_jax`, same numbers).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, Optional, Sequence

import numpy as np

from beliefgate.envs.overcooked.layouts import LayoutInfo, Pos, layout_info, resolve_layout
from beliefgate.envs.overcooked.state import SymbolicState
from beliefgate.envs.overcooked.tables import INTERACT, STAY, PoseTables, pose_tables
from beliefgate.models.controllers.boltzmann import boltzmann_logprobs
from beliefgate.skills.library import SkillLibrary, SkillLibraryError, load_builtin

TargetFn = Callable[[SymbolicState, LayoutInfo], Sequence[Pos]]


def _onion_sources(s: SymbolicState, info: LayoutInfo):
    return list(info.cells_of("O")) + [o.position for o in s.counters if o.name == "onion"]


def _dish_sources(s: SymbolicState, info: LayoutInfo):
    return list(info.cells_of("D")) + [o.position for o in s.counters if o.name == "dish"]


def _pots_not_full(s: SymbolicState, info: LayoutInfo):
    return [p.position for p in s.pots if not p.full]


def _pots_cooking_or_ready(s: SymbolicState, info: LayoutInfo):
    return [p.position for p in s.pots if p.cooking or p.ready]


def _pots_with_soup(s: SymbolicState, info: LayoutInfo):
    return [p.position for p in s.pots if p.ingredients > 0 or p.cooking or p.ready]


def _serving(s: SymbolicState, info: LayoutInfo):
    return list(info.cells_of("S"))


def _empty_counters(s: SymbolicState, info: LayoutInfo):
    taken = {o.position for o in s.counters}
    return [c for c in info.counters if c not in taken]


#: named target predicates a skill library may refer to
TARGET_PREDICATES: Dict[str, TargetFn] = {
    "onion_sources": _onion_sources,
    "dish_sources": _dish_sources,
    "pots_not_full": _pots_not_full,
    "pots_cooking_or_ready": _pots_cooking_or_ready,
    "pots_with_soup": _pots_with_soup,
    "serving_cells": _serving,
    "empty_counters": _empty_counters,
}


@dataclass(frozen=True)
class OvercookedController:
    """Q-values and pi_hat for every skill of a library on one layout."""

    layout: str
    library: SkillLibrary
    tables: PoseTables

    @classmethod
    def create(cls, layout: str, library: Optional[SkillLibrary] = None) -> "OvercookedController":
        layout = resolve_layout(layout)
        library = library or load_builtin("overcooked")
        unknown = [s.targets for s in library.skills if s.targets not in TARGET_PREDICATES]
        if unknown:
            raise SkillLibraryError(
                f"target predicate(s) {unknown} are not defined for Overcooked; known: {sorted(TARGET_PREDICATES)}"
            )
        return cls(layout, library, pose_tables(layout))

    # ----------------------------------------------------------------- targets
    def target_mask(self, state: SymbolicState) -> np.ndarray:
        """bool[K, C]: active target cells of each skill in ``state``."""
        info = layout_info(self.layout)
        index = self.tables.inter_index
        mask = np.zeros((self.library.num_skills, len(self.tables.interactables)), dtype=bool)
        cache: Dict[str, np.ndarray] = {}
        for k, skill in enumerate(self.library.skills):
            row = cache.get(skill.targets)
            if row is None:
                cells = TARGET_PREDICATES[skill.targets](state, info)
                row = np.zeros(mask.shape[1], dtype=bool)
                if cells:
                    row[[index[c] for c in cells]] = True
                cache[skill.targets] = row
            mask[k] = row
        return mask

    def steps_to_targets(self, state: SymbolicState, player: int) -> np.ndarray:
        """float[K]: the steps from ``player``'s pose to each skill's nearest active target (inf
        where a skill has none); OverForge's judge discounts a branch by it."""
        me = state.players[player]
        pose = self.tables.pose(me.position, me.orientation)
        mask = self.target_mask(state)
        d = np.where(mask, self.tables.dist[:, pose][None, :], np.inf)
        return d.min(axis=1) if d.shape[1] else np.full(mask.shape[0], np.inf)

    def feasible(self, state: SymbolicState, player: int, require_targets: bool = False,
                 q: Optional[np.ndarray] = None) -> np.ndarray:
        """bool[K]: skills whose held-object requirement the player meets.

        With ``require_targets`` a skill must also have a target the player can
        reach (a skill whose targets vanished, e.g. a pot that filled up, cannot be
        pursued any more). ``q`` may pass precomputed :meth:`q_values`.
        """
        held = state.players[player].held
        ok = np.array([self.library.requirement_met(k, held) for k in range(self.library.num_skills)])
        if require_targets:
            q = self.q_values(state, player) if q is None else q
            ok &= np.any(q != 0.0, axis=1)  # a flat row means no reachable target
        return ok

    # ---------------------------------------------------------------- Q-values
    def q_values(self, state: SymbolicState, player: int, other_blocks: bool = False,
                 targets: Optional[np.ndarray] = None) -> np.ndarray:
        """float[K, A] action values of ``player`` for every skill (A = 6, Overcooked order)."""
        me = state.players[player]
        tables = self.tables
        if other_blocks and len(state.players) > 1:
            others = [p.position for i, p in enumerate(state.players) if i != player]
            tables = pose_tables(self.layout, others[0]) if len(others) == 1 else tables
        pose = tables.pose(me.position, me.orientation)
        mask = self.target_mask(state) if targets is None else targets
        return q_from_tables(tables.dist, tables.next_pose, tables.facing, mask, pose)

    def logprobs(self, state: SymbolicState, player: int, beta: float, epsilon: float,
                 other_blocks: bool = False) -> np.ndarray:
        """float[K, A] log pi_hat(a | s, k)."""
        return boltzmann_logprobs(self.q_values(state, player, other_blocks), beta, epsilon)


def q_from_tables(dist: np.ndarray, next_pose: np.ndarray, facing: np.ndarray,
                  mask: np.ndarray, pose: int) -> np.ndarray:
    """NumPy Q[K, A] from pose tables, a target mask bool[K, C] and the player's pose."""
    nxt = next_pose[pose]                                   # [A]
    d_next = np.where(mask[:, :, None], dist[None, :, nxt], np.inf).min(axis=1)  # [K, A]
    d_here = d_next[:, STAY]
    q = -(1.0 + d_next)
    faced = facing[pose]
    facing_target = mask[:, faced] if faced >= 0 else np.zeros(mask.shape[0], dtype=bool)
    q[:, INTERACT] = np.where(facing_target, 0.0, -(1.0 + d_here))
    flat = ~np.isfinite(d_here) & ~facing_target
    q[flat] = 0.0
    # an unreachable next pose of a reachable skill stays -inf (move into a dead end)
    return q


def q_values_jax(dist, next_pose, facing, mask, pose):
    """JAX twin of :func:`q_from_tables` (same numbers; traceable, vmappable over ``pose``/``mask``)."""
    import jax.numpy as jnp

    nxt = next_pose[pose]
    d_next = jnp.where(mask[:, :, None], dist[None, :, nxt], jnp.inf).min(axis=1)
    d_here = d_next[:, STAY]
    q = -(1.0 + d_next)
    faced = facing[pose]
    facing_target = jnp.where(faced >= 0, mask[:, jnp.maximum(faced, 0)], False)
    q = q.at[:, INTERACT].set(jnp.where(facing_target, 0.0, -(1.0 + d_here)))
    flat = ~jnp.isfinite(d_here) & ~facing_target
    return jnp.where(flat[:, None], 0.0, q)


@lru_cache(maxsize=None)
def controller_for(layout: str) -> OvercookedController:
    """The default-library controller of a layout (cached)."""
    return OvercookedController.create(layout)
