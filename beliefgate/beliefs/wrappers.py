"""The gates as ``(init, update)`` wrappers around the JAX filter's ``(init, update)``.

Shaped like optax's ``apply_if_finite``: the wrapper carries the inner filter's state and
each gate's own state, runs the inner update, then evaluates the gates with the *same*
rules the NumPy gate runs every step, written once on array-likes (Python scalars and NumPy
on the online path, ``jax.numpy`` here): :func:`~beliefgate.beliefs.gates.stable_map_update`,
:func:`~beliefgate.beliefs.gates.changepoint_filter` + :func:`~beliefgate.beliefs.gates.changepoint_decide`
and :func:`~beliefgate.beliefs.gates.cusum_update`; a driver of
:data:`~beliefgate.beliefs.gates.GATES` (``any_of`` included) turns their verdicts into the
interrupt. Everything is traceable, so many episodes run at once under
``jax.jit(jax.vmap(...))``::

    init, update = gate_wrapper(GateParams(gate={"kind": "either"}))
    state = init(jnp.zeros(K))
    state, info = update(state, loglik, score, top, weight, feasible, completed, ego_active)

``loglik`` is the step's tempered log-likelihood row (``weight * log pi(a_t | k)``; zeros for an
excluded step, ``weight = 0``). The counters hold :data:`~beliefgate.beliefs.gates.NEVER`
(``-2**62``): enable JAX's x64 mode before tracing (``jax.config.update("jax_enable_x64", True)``).
The input is assumed valid (the NumPy gate's checks raise; a traced step cannot).
``tests/test_gates.py`` and ``tests/test_gate_wrappers.py`` check jitted, vmapped runs against the
NumPy :class:`~beliefgate.beliefs.gate.Gate` and that calling the jitted update in a loop compiles once.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import jax.numpy as jnp
from jax.nn import logsumexp

from beliefgate.beliefs.gates import (
    CHANGEPOINT,
    CUSUM,
    NEVER,
    STABLE_MAP,
    ChangePointConfig,
    ChangePointInfo,
    ChangePointState,
    CusumConfig,
    CusumInfo,
    CusumState,
    StableMapConfig,
    StableMapInfo,
    StableMapState,
    changepoint_decide,
    changepoint_filter,
    changepoint_notify_replanned,
    cusum_update,
    gate_driver,
    stable_map_notify_replanned,
    stable_map_update,
)
from beliefgate.models.hmm import FilterParams, FilterState, UpdateInfo, initial_state, log_smoothed_prior, update_step
from beliefgate.models.transitions.hazard import forced_switch, hazard_sticky


class WrappedState(NamedTuple):
    """The wrapper's carried state: ``inner`` (the filter's :class:`FilterState`) and each
    wrapped gate's state of 0-d/small arrays (``None`` for a gate that is not wrapped)."""

    inner: FilterState
    stable_map: Optional[StableMapState] = None
    changepoint: Optional[ChangePointState] = None
    cusum: Optional[CusumState] = None


class WrappedInfo(NamedTuple):
    """One step's records (logged, never fed back): the filter's :class:`UpdateInfo`, each wrapped
    gate's record (``None`` if not wrapped; ``suppressed_reason``: int8 codes into
    :data:`~beliefgate.beliefs.gates.STABLE_MAP_REASONS` / ``CHANGEPOINT_REASONS`` /
    ``CUSUM_REASONS``, decode with :func:`~beliefgate.beliefs.gates.reason_names`),
    ``interrupt``, the driver's verdict (:data:`~beliefgate.beliefs.gates.GATES`), and
    ``suppressed_reason``, why it did not interrupt as the NumPy gate's ``GateInfo.suppressed_reason``
    says it: an int8 code into :data:`~beliefgate.beliefs.gates.GATE_REASONS`
    (``len(GATE_REASONS)`` where it interrupted; ``reason_names(GATE_REASONS, code)`` decodes it)."""

    filter: UpdateInfo
    stable_map: Optional[StableMapInfo] = None
    changepoint: Optional[ChangePointInfo] = None
    cusum: Optional[CusumInfo] = None
    interrupt: Any = False
    suppressed_reason: Any = None


class Wrapper(NamedTuple):
    """``init(prior_counts) -> state`` and ``update(state, loglik, score, top, weight, feasible,
    completed, ego_active=True) -> (state, info)``."""

    init: Callable
    update: Callable


def _int(v):
    # explicit (not weakly typed) dtypes: the state after a step has the same types, so a
    # jitted update is traced once
    return jnp.asarray(v, jnp.int64)


def _condition(prior, row):
    """``(post, log_z, factor)`` of a predicted belief and a log-likelihood row (``log_z = -inf``:
    impossible; ``post``/``factor`` are then 0, and not used)."""
    logp = jnp.where(prior > 0, jnp.log(jnp.where(prior > 0, prior, 1.0)), -jnp.inf)
    log_z = logsumexp(logp + row)
    ok = jnp.isfinite(log_z)
    factor = jnp.where(ok, jnp.exp(row - jnp.where(ok, log_z, 0.0)), 0.0)
    return prior * factor, log_z, factor


def _changepoint_step(config: ChangePointConfig, alpha, state: ChangePointState, inner: FilterState, t,
                      row, feasible):
    """The change-point gate under tracing: the hazard predict of its own marginal
    (:func:`hazard_sticky`, the predict the NumPy gate runs), the Bayes correction, then the
    run-length filter and decision rule the NumPy gate runs."""
    pi0 = jnp.exp(log_smoothed_prior(inner.counts, alpha))
    f = feasible.astype(pi0.dtype)
    sticky, stay, switch = hazard_sticky(jnp, state.belief, pi0, f, config.hazard)
    forced = forced_switch(jnp, pi0, f)
    restart = inner.reset
    post, log_z, factor = _condition(jnp.where(restart, forced, sticky), row)
    post_forced = _condition(forced, row)[0]
    impossible = ~restart & ~jnp.isfinite(log_z)
    post = jnp.where(impossible, post_forced, post)
    joint, head, prob, switch_prob = changepoint_filter(jnp, state.joint, state.head, restart, impossible, post,
                                                        stay, switch, factor)
    return changepoint_decide(config, state, t, prob, switch_prob, (joint, head, post))


def gate_wrapper(params, *, stable_map: Optional[StableMapConfig] = None,
                 changepoint: Optional[ChangePointConfig] = None, cusum: Optional[CusumConfig] = None,
                 driver=None) -> Wrapper:
    """Wrap the filter (:func:`beliefgate.models.hmm.update_step`) in gates.

    ``params``: a :class:`~beliefgate.beliefs.config.GateParams` (the filter, the gates its
    ``gate`` driver reads and that driver), or a :class:`FilterParams` with the gates' configs
    given by keyword (scalar fields) and ``driver`` (default: the one wrapped gate, or
    :data:`STABLE_MAP`). ``update``'s ``score``/``top`` give the stable-MAP log ratio
    ``score[m] - top[m]`` under the pre-update MAP ``m`` (``top`` may be 0-d), as
    :func:`~beliefgate.beliefs.gates.stable_map_update` documents; the CUSUM gate compares against
    that MAP. Joint drivers (``any_of``) restart every member's cooldown on an interrupt, as the
    NumPy gate does.
    """
    if not isinstance(params, FilterParams):  # GateParams: the gates its driver reads
        gate_params = params
        driver = gate_driver(gate_params.gate.kind)
        params = gate_params.filter_params()
        slots = driver.slots
        stable_map = gate_params.stable_map_config() if STABLE_MAP.slot in slots else None
        changepoint = gate_params.changepoint_config() if CHANGEPOINT.slot in slots else None
        cusum = gate_params.cusum_config() if CUSUM.slot in slots else None
    elif driver is None:
        driver = CHANGEPOINT if changepoint is not None and stable_map is None else (
            CUSUM if cusum is not None and stable_map is None else STABLE_MAP)

    def init(prior_counts) -> WrappedState:
        prior_counts = jnp.asarray(prior_counts)
        num_skills = prior_counts.shape[-1]
        sm = cp = cu = None
        if stable_map is not None:
            sm = StableMapState(*(_int(v) for v in (-1, 0, NEVER, 0, 0)))
        if changepoint is not None:
            uniform = jnp.full((num_skills,), 1.0 / num_skills, jnp.float64)
            joint = jnp.zeros((changepoint.horizon + 1, num_skills), jnp.float64).at[-1].set(uniform)
            cp = ChangePointState(joint, _int(0), uniform, jnp.asarray(True), _int(NEVER), _int(0))
        if cusum is not None:
            cu = CusumState(jnp.zeros(num_skills, jnp.float64), _int(-1), _int(0))
        return WrappedState(initial_state(params, prior_counts), sm, cp, cu)

    def update(state: WrappedState, loglik, score, top, weight, feasible, completed, ego_active=True):
        t = state.inner.step
        completed = jnp.asarray(completed, jnp.int32)
        inner, finfo = update_step(params, state.inner, loglik, feasible, completed)
        prior = jnp.exp(finfo.log_predicted)
        observed = jnp.asarray(weight) > 0
        sm_state = cp_state = cu_state = sm = cp = cu = None
        if stable_map is not None:
            sm_state, sm = stable_map_update(stable_map, state.stable_map, t, prior, score, top, weight, ego_active)
        if changepoint is not None:
            row = jnp.where(observed, loglik, 0.0)
            cp_state, cp = _changepoint_step(changepoint, params.alpha, state.changepoint, state.inner, t, row,
                                             feasible)
        if cusum is not None:
            reference = sm.map_skill if sm is not None else jnp.argmax(prior)
            cu_state, cu = cusum_update(cusum, state.cusum, _int(reference), loglik, feasible, completed, observed)
        fired = (False if sm is None else sm.interrupt, False if cp is None else cp.fired,
                 False if cu is None else cu.fired)
        interrupt = driver.interrupt(fired, ego_active)
        reason = driver.reason_code((sm, cp, cu), ego_active, interrupt)
        if driver.joint_replan:  # one replanning signal: every member's cooldown starts
            if sm_state is not None:
                sm_state = stable_map_notify_replanned(sm_state, t, interrupt)
            if cp_state is not None:
                cp_state = changepoint_notify_replanned(cp_state, t, interrupt)
        return (WrappedState(inner, sm_state, cp_state, cu_state),
                WrappedInfo(finfo, sm, cp, cu, interrupt, reason))

    return Wrapper(init, update)


def stable_map_wrapper(params: FilterParams, config: StableMapConfig) -> Wrapper:
    """The filter of ``params`` wrapped in the stable-MAP gate of ``config`` (:func:`gate_wrapper`)."""
    return gate_wrapper(params, stable_map=config, driver=STABLE_MAP)


def changepoint_wrapper(params: FilterParams, config: ChangePointConfig) -> Wrapper:
    """The filter of ``params`` wrapped in the change-point gate of ``config`` (:func:`gate_wrapper`;
    ``interrupt = fired & ego_active``)."""
    return gate_wrapper(params, changepoint=config, driver=CHANGEPOINT)


def cusum_wrapper(params: FilterParams, config: CusumConfig) -> Wrapper:
    """The filter of ``params`` wrapped in the CUSUM gate of ``config`` against the pre-update MAP
    (:func:`gate_wrapper`; ``interrupt = fired & ego_active``)."""
    return gate_wrapper(params, cusum=config, driver=CUSUM)


__all__ = ["WrappedState", "WrappedInfo", "Wrapper", "gate_wrapper", "stable_map_wrapper", "changepoint_wrapper",
           "cusum_wrapper"]
