"""Forward filter over the partner's active skill: the functional core.

This module is the inference side of the generative model in ``docs/model.md``.
Everything is in log space and pure: a small :class:`FilterState` pytree, an
``init`` and an ``update`` (one observed partner step), and offline drivers built
from the same helpers (``filter`` = ``jit`` around ``lax.scan``; ``filter_batch``
= ``vmap`` of it over padded trajectories).

Notation (per observed step ``t``; ``K`` skills):

* ``loglik[t, k]``   tempered log-likelihood of the observed change under skill ``k``;
* ``feasible[t, k]`` bool, skill ``k``'s precondition holds in ``s_t``;
* ``completed[t]``   skill visibly completed by ``a_t`` (-1 none); it changes the
  transition from step ``t`` into ``t + 1``;
* ``pi0_t(k) ∝ n_t(k) + alpha``, ``n_t = prior_counts + #completions before t``.

Two variants (``FilterParams.model``):

``"hazard"`` (default)
    Forward algorithm of the sticky model. The predict step is O(K)::

        pred(j) = stay(j) b(j) + q(j)/S * sum_i switch(i) b(i)
        q = pi0 ∘ feasible, S = sum q, Z_i = (1-h) feasible(i) + h S,
        stay(j)   = feasible(j) (1-h) / Z_j,
        switch(i) = h S / Z_i  if feasible(i) else 1   (row i is a forced switch)

    and after a visible completion (or at the first step) ``pred = q / S``.
    The correction is ``b'(k) ∝ pred(k) exp(loglik[t, k])`` and the log of the
    normaliser is the step's log predictive probability; their sum is the log
    marginal likelihood of the NumPyro model with ``z`` summed out.

``"windowed"`` (paper-faithful, BayesBelief Eq. 6-8)
    ``b_t(k) ∝ pi0_seg(k) feasible_t(k) exp(sum of the last `window` observed
    loglik rows of the current segment)``; a segment starts at the first step and
    after each visible completion (``pi0_seg`` is the smoothed prior then). A step
    whose loglik row is identically zero (tempering weight 0, e.g. STAY) changes
    no product and does not occupy a window slot. The predicted distribution is the
    same expression without the new row (after evicting the oldest one), and the
    step's log normaliser is ``logsumexp(log pred + loglik)``. With
    ``window=None`` (infinite) and feasibility constant within each segment this
    is exactly the hazard model with ``h = 0`` (tested). It is a filter only: it
    has no transition matrix, so ``smoother`` and ``most_likely_path`` refuse it.

Public API (names are stable; the NumPy ``Gate`` is tested against them), in
three layers: the traceable core (``update_step``, ``scan_filter``,
``initial_state``, ``log_smoothed_prior``, ``hazard_predict``,
``hazard_log_transition``, ``log_transition_matrices``); the validated entry
points (``init, update, new_episode, observations, filter, filter_batch,
smoother, most_likely_path``) on the containers ``FilterParams, FilterState,
UpdateInfo, Observations, FilterResult``; and the builder ``make_filter(params)``
that validates the configuration once and binds it.

``update``/``filter``/... validate concrete inputs and raise subclasses of
:class:`beliefgate.beliefs.errors.BeliefInputError`; ``update_step`` and the
``hazard_*`` helpers are the raw traceable cores (no validation) for use inside
``jit``/``scan``/NumPyro models.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from beliefgate.beliefs.boundary import (  # noqa: F401  (observations, filter: the public filter API)
    check_completed,
    check_loglik,
    check_params,
    filter,
    filter_result,
    numbers,
    observations,
    refuse_impossible,
)
from beliefgate.beliefs.checks import as_bool as _as_bool
from beliefgate.beliefs.offline import most_likely_path, smoother
from beliefgate.models.transitions import get_transition
from beliefgate.models.hmm import (  # noqa: F401  (re-exported: the public filter API)
    FilterParams,
    FilterResult,
    FilterState,
    Observations,
    UpdateInfo,
    BatchFilterResult,
    batch_filter_scaled,
    _window_size,
    hazard_log_transition,
    hazard_predict,
    initial_state,
    log_marginal_likelihood,
    log_smoothed_prior,
    log_transition_matrices,
    scan_filter,
    update_step,
)
from beliefgate.beliefs.errors import (
    CompletedIndexError,
    ImpossibleObservationError,
    InvalidParameterError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
)



# --------------------------------------------------------------------------------------
# Validation at the boundary (host-side, NumPy)
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# Jitted entry points (configuration split into static structure + traced numbers)
# --------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("model", "window"))
def _update_jit(model, window, hazard, alpha, state, loglik, feasible, completed):
    params = FilterParams(model, hazard, alpha, window)
    return update_step(params, state, loglik, feasible, completed)


@partial(jax.jit, static_argnames=("model", "window"))
def _filter_batch_jit(model, window, hazard, alpha, obs):
    params = FilterParams(model, hazard, alpha, window)
    return jax.vmap(partial(filter_result, params))(obs)


def init(params: FilterParams, num_skills: int, prior_counts=None) -> FilterState:
    """Initial state for ``num_skills`` skills (validated).

    ``prior_counts`` [K] (>= 0): completion counts remembered from earlier
    episodes with the same partner; zeros by default.
    """
    params = check_params(params)
    if isinstance(num_skills, bool) or int(num_skills) != num_skills or num_skills < 1:
        raise ShapeMismatchError(f"num_skills must be an integer >= 1, got {num_skills!r}")
    counts = np.zeros(int(num_skills)) if prior_counts is None else np.asarray(prior_counts, float)
    if counts.shape != (num_skills,):
        raise ShapeMismatchError(
            f"prior_counts must have shape ({num_skills},), got {counts.shape}")
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise InvalidParameterError("prior_counts must be finite and >= 0")
    return initial_state(params, jnp.asarray(counts, jnp.result_type(float)))


def new_episode(params: FilterParams, state: FilterState) -> FilterState:
    """Fresh episode that remembers the partner: ``init`` with ``prior_counts = state.counts``."""
    return init(params, int(state.counts.shape[-1]), np.asarray(state.counts))


def update(params: FilterParams, state: FilterState, loglik, feasible=None, completed=-1):
    """One validated online step: ``(new_state, UpdateInfo)``.

    ``loglik`` float[K] (tempered log-likelihood of the observed action per skill),
    ``feasible`` bool[K] (None = all), ``completed`` int or None (skill the action
    visibly completed, -1/None = none). Calls a jitted core compiled once per
    (model, window, K, dtype): repeated calls do not recompile. Raises a
    :class:`BeliefInputError` subclass on malformed input and
    :class:`ImpossibleObservationError` if the step has probability zero.
    """
    params = check_params(params)
    num_skills = int(state.log_belief.shape[-1])
    if _window_size(params) != state.window_buf.shape[0]:
        raise ShapeMismatchError(
            f"state has {state.window_buf.shape[0]} window slots but params ask for "
            f"{_window_size(params)}; build the state with init(params, ...)")
    ll = np.asarray(loglik)
    if ll.shape != (num_skills,) or not np.issubdtype(ll.dtype, np.number):
        raise ShapeMismatchError(f"loglik must be a numeric array of shape ({num_skills},), "
                                 f"got {ll.shape} {ll.dtype}")
    check_loglik(ll, np.ones(ll.shape, bool))
    feas = np.ones(num_skills, bool) if feasible is None else _as_bool(feasible, "feasible")
    if feas.shape != (num_skills,):
        raise ShapeMismatchError(f"feasible must have shape ({num_skills},), got {feas.shape}")
    if not np.any(feas):
        raise NoFeasibleSkillError("no skill is feasible at this step")
    comp = -1 if completed is None else completed
    if isinstance(comp, (bool, np.bool_)) or not isinstance(comp, (int, np.integer)):
        comp_arr = np.asarray(comp)
        if comp_arr.shape != () or not np.issubdtype(comp_arr.dtype, np.integer):
            raise CompletedIndexError(f"completed must be an int or None, got {completed!r}")
        comp = int(comp_arr)
    if not -1 <= int(comp) < num_skills:
        raise CompletedIndexError(f"completed must lie in [-1, {num_skills}), got {comp}")
    dtype = state.log_belief.dtype
    hazard, alpha = numbers(params, dtype)
    new_state, info = _update_jit(
        params.model, params.window, hazard, alpha, state,
        np.asarray(ll, np.dtype(dtype)), feas, np.asarray(int(comp), np.int32))
    if not np.isfinite(float(info.log_normalizer)):
        raise ImpossibleObservationError(
            "this observation has probability zero under every skill the model allows "
            "(all feasible skills with predicted mass have loglik = -inf)")
    return new_state, info


def filter_batch(params: FilterParams, obs, *, method: str = "scaled", shards: Optional[int] = None):
    """Forward filter of a padded batch ``[B, T, ...]``: filtered posteriors and log marginals.

    Hazard model, ``method="scaled"`` (default): the batched kernel
    :func:`beliefgate.models.hmm.batch_filter_scaled` (scaled probabilities, the same
    transition component as every other filter; a cheaper recurrence is picked when every
    skill is feasible, nothing completes and nothing is padded), returning a
    :class:`~beliefgate.models.hmm.BatchFilterResult` (``posterior`` probabilities,
    ``log_posterior`` on demand). ``method="log"`` and the windowed model: ``vmap`` of
    :func:`filter` in log space, a :class:`FilterResult` (``log_predicted`` included).
    Steps with ``valid == False`` leave the state unchanged and add 0 to the log
    marginal, so each row equals the unbatched result on its valid steps.

    ``shards`` (scaled kernel only): the batch is cut into this many row blocks that run
    concurrently on a pool of one thread per usable core and are joined in order; rows are
    independent, so the result equals one block's to rounding (each block size compiles on its
    own; tested to 1e-12 relative in float64), with NumPy
    arrays on the host (the blocks are joined there). ``None`` (default) picks
    :func:`default_shards`: on a CPU, :data:`SHARDS_PER_CORE` blocks per usable core while
    every block keeps at least :data:`SHARD_MIN_ROWS` rows (XLA:CPU runs one loop on one
    core); on other devices 1. ``shards=1`` is one device computation, jax arrays out.
    """
    params = check_params(params)
    if method not in ("scaled", "log"):
        raise InvalidParameterError(f"method must be 'scaled' or 'log', got {method!r}")
    if shards is not None and (isinstance(shards, bool) or not isinstance(shards, (int, np.integer))
                               or shards < 1):
        raise InvalidParameterError(f"shards must be a positive integer or None, got {shards!r}")
    if not isinstance(obs, Observations):
        obs = observations(obs, batched=True)
    elif obs.loglik.ndim != 3:
        raise ShapeMismatchError(f"filter_batch expects [B, T, K] arrays, got {obs.loglik.shape}")
    hazard, alpha = numbers(params, obs.loglik.dtype)
    if get_transition(params.model).scaled_kernel and method == "scaled":
        simple = bool(_is_simple(obs.feasible, obs.completed, obs.valid))
        batch = obs.loglik.shape[0]
        count = default_shards(obs.loglik) if shards is None else min(int(shards), batch)
        if count <= 1:
            return refuse_impossible(batch_filter_scaled(hazard, alpha, obs, simple=simple))
        return refuse_impossible(_sharded(hazard, alpha, obs, simple, count))
    return refuse_impossible(_filter_batch_jit(params.model, params.window, hazard, alpha, obs))


#: Fewest rows per block when :func:`filter_batch` shards a batch by default (a block's
#: dispatch and thread hand-off cost about as much as 64 rows of work).
SHARD_MIN_ROWS = 64
#: Blocks per usable core by default: smaller blocks keep a step's rows in cache. Chosen
#: on the benchmark sizes with seed-1000 data (2 cores; 1/2/4/8/16 blocks tried, 8 was
#: best or within 5% of best at K = 6, 16, 64; ``docs/model.md``).
SHARDS_PER_CORE = 4
_POOL: Optional[ThreadPoolExecutor] = None
_POOL_PID: Optional[int] = None
_POOL_LOCK = threading.Lock()


def _usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def default_shards(loglik) -> int:
    """Row blocks :func:`filter_batch` uses for ``loglik [B, T, K]`` when ``shards=None``."""
    devices = getattr(loglik, "devices", None)
    platforms = {d.platform for d in devices()} if callable(devices) else {jax.default_backend()}
    if platforms != {"cpu"}:
        return 1
    cores = _usable_cores()
    if cores == 1:
        return 1
    return max(1, min(SHARDS_PER_CORE * cores, loglik.shape[0] // SHARD_MIN_ROWS))


def _pool() -> ThreadPoolExecutor:
    """The worker threads of :func:`filter_batch`, made on first use (again in a forked child,
    where the parent's threads do not exist)."""
    global _POOL, _POOL_PID
    with _POOL_LOCK:
        if _POOL is None or _POOL_PID != os.getpid():
            _POOL = ThreadPoolExecutor(max_workers=_usable_cores(), thread_name_prefix="filter-batch")
            _POOL_PID = os.getpid()
        return _POOL


def _sharded(hazard, alpha, obs: Observations, simple: bool, count: int) -> BatchFilterResult:
    """Run :func:`batch_filter_scaled` on ``count`` row blocks concurrently and join them.

    Each worker copies its block's posterior and log normalisers into preallocated host
    buffers as soon as the block is done, so the join runs in parallel too (an XLA
    concatenation afterwards is one more single-core pass over ``[B, T, K]``; measured in
    ``docs/model.md``). The result's arrays are therefore NumPy arrays on the host."""
    batch, steps, num_skills = obs.loglik.shape
    dtype = np.dtype(obs.loglik.dtype)
    posterior = np.empty((batch, steps, num_skills), dtype)
    log_normalizer = np.empty((batch, steps), dtype)
    bounds = np.linspace(0, batch, count + 1).astype(int)

    def run(block):
        lo, hi = block
        part = jax.block_until_ready(
            batch_filter_scaled(hazard, alpha, obs, simple=simple, rows=(lo, hi - lo)))
        posterior[lo:hi] = np.asarray(part.posterior)
        log_normalizer[lo:hi] = np.asarray(part.log_normalizer)
        return part.state

    states = list(_pool().map(run, zip(bounds[:-1].tolist(), bounds[1:].tolist())))
    state = FilterState(*(np.concatenate([np.asarray(x) for x in field]) for field in zip(*states)))
    return BatchFilterResult(posterior, log_normalizer, state.log_marginal, state)


@jax.jit
def _is_simple(feasible, completed, valid):
    """Every skill feasible, no completion, no padding (one fused reduction on the device)."""
    return jnp.all(feasible) & jnp.all(completed < 0) & jnp.all(valid)


# --------------------------------------------------------------------------------------
# Builder: bind the configuration once
# --------------------------------------------------------------------------------------


class BoundFilter(NamedTuple):
    """The entry points of this module with one validated :class:`FilterParams` bound.

    ``f = make_filter(FilterParams(hazard=0.1)); s = f.init(K); s, info = f.update(s, ll)``.
    """

    params: FilterParams
    init: Callable[..., FilterState]
    update: Callable[..., tuple]
    filter: Callable[..., FilterResult]
    filter_batch: Callable[..., FilterResult]
    smoother: Callable[..., tuple]
    most_likely_path: Callable[..., tuple]
    new_episode: Callable[..., FilterState]


def make_filter(params: FilterParams = FilterParams()) -> BoundFilter:
    """Validate ``params`` once and return the functions with it bound (builder layer)."""
    params = check_params(params)
    return BoundFilter(
        params=params,
        init=partial(init, params),
        update=partial(update, params),
        filter=partial(filter, params),
        filter_batch=partial(filter_batch, params),
        smoother=partial(smoother, params),
        most_likely_path=partial(most_likely_path, params),
        new_episode=partial(new_episode, params),
    )



__all__ = [
    "BoundFilter",
    "make_filter",
    "FilterParams",
    "FilterState",
    "UpdateInfo",
    "Observations",
    "FilterResult",
    "init",
    "update",
    "update_step",
    "initial_state",
    "new_episode",
    "observations",
    "filter",
    "filter_batch",
    "default_shards",
    "scan_filter",
    "log_marginal_likelihood",
    "smoother",
    "most_likely_path",
    "log_smoothed_prior",
    "hazard_predict",
    "hazard_log_transition",
    "log_transition_matrices",
]
