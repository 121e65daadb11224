"""The stable-MAP gate as an ``(init, update)`` wrapper around the JAX filter's ``(init, update)``.

Shaped like optax's ``apply_if_finite``: the wrapper carries the inner filter's state and
its own counters, runs the inner update, then evaluates the gate on what the filter
predicted (the pre-update belief ``exp(log_predicted)``) with the *same* rule the NumPy
gate runs every step (:func:`beliefgate.beliefs.gates.stable_map_update`, written on array
likes: Python scalars and NumPy on the online path, ``jax.numpy`` here). Everything is
traceable, so many episodes run at once under ``jax.jit(jax.vmap(...))``::

    init, update = stable_map_wrapper(FilterParams(hazard=0.05), StableMapConfig.make(0.2, 1, 0.7, 1, 5))
    state = init(jnp.zeros(K))
    state, info = update(state, loglik, score, top, weight, feasible, completed)

The counters hold :data:`~beliefgate.beliefs.gates.NEVER` (``-2**62``): enable JAX's x64
mode before tracing (``jax.config.update("jax_enable_x64", True)``). ``tests/test_gates.py``
checks a jitted, vmapped run against the NumPy :class:`~beliefgate.beliefs.gate.Gate` and
that calling the jitted update in a loop compiles once.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax.numpy as jnp

from beliefgate.beliefs.gates import NEVER, StableMapConfig, StableMapInfo, StableMapState, stable_map_update
from beliefgate.models.hmm import FilterParams, FilterState, UpdateInfo, initial_state, update_step


class WrappedState(NamedTuple):
    """The wrapper's carried state: ``inner`` (the filter's :class:`FilterState`) and
    ``gate`` (the stable-MAP counters, :class:`StableMapState` of 0-d arrays)."""

    inner: FilterState
    gate: StableMapState


class WrappedInfo(NamedTuple):
    """One step's records (logged, never fed back): the filter's :class:`UpdateInfo` and the
    gate's :class:`StableMapInfo` (``suppressed_reason``: int8 codes into
    :data:`~beliefgate.beliefs.gates.STABLE_MAP_REASONS`, decode with
    :func:`~beliefgate.beliefs.gates.reason_names`)."""

    filter: UpdateInfo
    stable_map: StableMapInfo


class Wrapper(NamedTuple):
    """``init(prior_counts) -> state`` and ``update(state, loglik, score, top, weight, feasible,
    completed, ego_active=True) -> (state, info)``."""

    init: Callable
    update: Callable


def stable_map_wrapper(params: FilterParams, config: StableMapConfig) -> Wrapper:
    """Wrap the filter of ``params`` (:func:`beliefgate.models.hmm.update_step`) in the stable-MAP
    gate of ``config`` (scalar fields). ``update``'s ``score``/``top`` give the gate's log ratio
    ``score[m] - top[m]`` under the pre-update MAP ``m`` (``top`` may be 0-d: one value for every
    skill), as :func:`~beliefgate.beliefs.gates.stable_map_update` documents."""

    def init(prior_counts) -> WrappedState:
        # explicit (not weakly typed) dtypes: the state after a step has the same types, so a
        # jitted update is traced once
        ints = [jnp.asarray(v, jnp.int64) for v in (-1, 0, NEVER, 0, 0)]
        return WrappedState(initial_state(params, prior_counts), StableMapState(*ints))

    def update(state: WrappedState, loglik, score, top, weight, feasible, completed, ego_active=True):
        t = state.inner.step
        inner, finfo = update_step(params, state.inner, loglik, feasible, jnp.asarray(completed, jnp.int32))
        prior = jnp.exp(finfo.log_predicted)
        gate, info = stable_map_update(config, state.gate, t, prior, score, top, weight, ego_active)
        return WrappedState(inner, gate), WrappedInfo(finfo, info)

    return Wrapper(init, update)


__all__ = ["WrappedState", "WrappedInfo", "Wrapper", "stable_map_wrapper"]
