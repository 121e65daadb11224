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
from functools import partial
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.nn import logsumexp

from beliefgate.beliefs.checks import as_bool as _as_bool
from beliefgate.beliefs.errors import (
    CompletedIndexError,
    ImpossibleObservationError,
    InvalidParameterError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
    UnsupportedModelError,
)

MODELS = ("hazard", "windowed")


# --------------------------------------------------------------------------------------
# Containers
# --------------------------------------------------------------------------------------


class FilterParams(NamedTuple):
    """Filter configuration (bound once; numeric fields may be JAX tracers).

    Fields
    ------
    model : str
        ``"hazard"`` (sticky transition with switch hazard) or ``"windowed"``
        (segment product over the last ``window`` observed steps). Static.
    hazard : float in [0, 1]
        ``h``, probability per step of redrawing the skill from ``pi0`` (hazard
        model only).
    alpha : float > 0
        Concentration of the smoothed prior ``pi0(k) ∝ n(k) + alpha``.
    window : int >= 1 or None
        Windowed model: number of observed steps kept in the product; ``None``
        (or ``math.inf``) keeps the whole segment. Ignored by the hazard model. Static.
    """

    model: str = "hazard"
    hazard: float = 0.05
    alpha: float = 1.0
    window: Optional[int] = None


class FilterState(NamedTuple):
    """Carried filter state after ``t`` updates (``K`` skills, ``W`` window slots).

    Fields
    ------
    log_belief : float[K]
        ``log b_{t-1}(k) = log p(z_{t-1} = k | a_{0:t-1})``, the filtered log
        posterior after the last update (normalised: ``logsumexp == 0``). Before
        the first update it holds ``log pi0_0`` (it is not used then because
        ``reset`` is true).
    counts : float[K]
        ``n_t(k) = prior_counts(k) + #visible completions of k so far`` (memory of
        earlier episodes included). ``pi0_t ∝ counts + alpha``.
    reset : bool[]
        True when the next predict is a forced switch to ``pi0 ∘ feasible``: at the
        start of an episode and right after a visible completion. Windowed model:
        the next step starts a new segment.
    step : int32[]
        Number of (valid) updates applied.
    log_marginal : float[]
        ``log p(a_{0:t-1})`` = sum of the per-step log normalisers so far.
    log_seg_prior : float[K]
        Windowed model: ``log pi0_seg``, the smoothed prior frozen at the start of
        the current segment. Hazard model: carried unchanged.
    window_buf : float[W, K]
        Windowed model with a finite window: ring buffer of the last ``W`` observed
        loglik rows of the segment (unused slots are zero). ``W = 0`` otherwise.
    window_pos : int32[]
        Next slot of ``window_buf`` to overwrite (the oldest row once full).
    window_sum : float[K]
        Windowed model: ``sum`` of the loglik rows currently in the product
        (infinite window: the running segment sum). Hazard model: zeros.
    """

    log_belief: jax.Array
    counts: jax.Array
    reset: jax.Array
    step: jax.Array
    log_marginal: jax.Array
    log_seg_prior: jax.Array
    window_buf: jax.Array
    window_pos: jax.Array
    window_sum: jax.Array


class UpdateInfo(NamedTuple):
    """Diagnostics of one update (logged, never fed back).

    Fields
    ------
    log_predicted : float[K]
        ``log p(z_t | a_{0:t-1})``: the belief after the predict step, before the
        new action enters (normalised).
    log_posterior : float[K]
        ``log p(z_t | a_{0:t})``: the belief after the correction (normalised).
    log_normalizer : float[]
        ``log p(a_t | a_{0:t-1}) = logsumexp(log_predicted + loglik)``.
    observed : bool[]
        Whether the loglik row was not identically zero (enters a window slot).
    """

    log_predicted: jax.Array
    log_posterior: jax.Array
    log_normalizer: jax.Array
    observed: jax.Array


class Observations(NamedTuple):
    """A sequence (or a padded batch) of observed steps for offline filtering.

    Shapes are ``[T, ...]`` for one trajectory or ``[B, T, ...]`` for a batch.

    Fields
    ------
    loglik : float[..., T, K]
        Tempered log-likelihood rows (``-inf`` allowed, NaN/``+inf`` not).
    feasible : bool[..., T, K]
        Skill preconditions; at least one True at every valid step.
    completed : int32[..., T]
        Skill visibly completed by ``a_t`` (-1 none).
    valid : bool[..., T]
        False for padding: such steps leave the state unchanged and add 0.
    prior_counts : float[..., K]
        Completion counts carried in from earlier episodes (>= 0).
    """

    loglik: jax.Array
    feasible: jax.Array
    completed: jax.Array
    valid: jax.Array
    prior_counts: jax.Array


class FilterResult(NamedTuple):
    """Output of :func:`filter` / :func:`filter_batch`.

    Fields
    ------
    log_posterior : float[..., T, K]
        Filtered ``log p(z_t | a_{0:t})`` (padding steps repeat the last belief).
    log_predicted : float[..., T, K]
        ``log p(z_t | a_{0:t-1})`` before each correction.
    log_normalizer : float[..., T]
        Per-step ``log p(a_t | a_{0:t-1})`` (0 at padding steps).
    log_marginal : float[...]
        ``log p(a_{0:T-1})`` = sum of ``log_normalizer``.
    state : FilterState
        Final state (leading batch axis for ``filter_batch``).
    """

    log_posterior: jax.Array
    log_predicted: jax.Array
    log_normalizer: jax.Array
    log_marginal: jax.Array
    state: FilterState


# --------------------------------------------------------------------------------------
# Pure maths (traceable; no validation)
# --------------------------------------------------------------------------------------


def _log_mask(feasible):
    """0 where feasible, -inf elsewhere."""
    return jnp.where(feasible, 0.0, -jnp.inf)


def log_smoothed_prior(counts, alpha):
    """``log pi0(k)`` with ``pi0(k) = (counts(k) + alpha) / sum_j (counts(j) + alpha)``."""
    smoothed = counts + alpha
    return jnp.log(smoothed) - jnp.log(jnp.sum(smoothed, axis=-1, keepdims=True))


def hazard_predict(log_belief, log_pi0, feasible, hazard, reset):
    """O(K) predict of the hazard model: ``log sum_i b(i) T(i, j)``.

    Parameters are ``log_belief`` [K] (normalised), ``log_pi0`` [K], ``feasible``
    [K] bool, ``hazard`` scalar, ``reset`` bool (forced switch for every row).
    Returns the normalised predicted log belief [K] (``-inf`` on infeasible skills).
    """
    log_q = log_pi0 + _log_mask(feasible)
    log_s = logsumexp(log_q)
    log_forced = log_q - log_s
    log_h = jnp.log(hazard)
    log_1mh = jnp.log1p(-hazard)
    log_z = jnp.where(feasible, jnp.logaddexp(log_1mh, log_h + log_s), log_h + log_s)
    log_stay = jnp.where(feasible, log_1mh - log_z, -jnp.inf)
    log_switch = jnp.where(feasible, log_h + log_s - log_z, 0.0)
    switched = logsumexp(log_switch + log_belief)
    # Infeasible j would give logaddexp(-inf, -inf): its value is right (-inf) but its
    # gradient is NaN, which `where` does not stop. Feed it zeros there instead.
    stay_term = jnp.where(feasible, log_stay + log_belief, 0.0)
    switch_term = jnp.where(feasible, log_forced + switched, 0.0)
    log_sticky = jnp.where(feasible, jnp.logaddexp(stay_term, switch_term), -jnp.inf)
    return jnp.where(reset, log_forced, log_sticky)


def hazard_log_transition(log_pi0, feasible, hazard, reset):
    """Full log transition matrix ``log T[i, j]`` into a step (offline use, O(K^2)).

    Written directly from ``docs/model.md``: row ``i`` is the forced switch
    ``pi0 ∘ feasible / S`` if ``reset`` or skill ``i`` is infeasible, else
    ``[(1-h)[i == j] + h pi0(j)] feasible(j) / Z_i``.
    """
    num_skills = log_pi0.shape[-1]
    pi0 = jnp.exp(log_pi0)
    f = feasible.astype(pi0.dtype)
    forced = pi0 * f / jnp.sum(pi0 * f)
    eye = jnp.eye(num_skills, dtype=pi0.dtype)
    unnorm = ((1.0 - hazard) * eye + hazard * pi0[None, :]) * f[None, :]
    z = jnp.sum(unnorm, axis=1, keepdims=True)
    sticky_ok = feasible[:, None] & ~reset
    rows = jnp.where(sticky_ok, unnorm / jnp.where(sticky_ok, z, 1.0), forced[None, :])
    return jnp.log(rows)


def _window_size(params: FilterParams) -> int:
    """Number of ring-buffer slots (0 = no buffer: hazard model or infinite window)."""
    if params.model != "windowed" or params.window is None or params.window == math.inf:
        return 0
    return int(params.window)


def initial_state(params: FilterParams, prior_counts) -> FilterState:
    """Traceable initial state from ``prior_counts`` [K] (no validation)."""
    counts = jnp.asarray(prior_counts)
    num_skills = counts.shape[-1]
    log_pi0 = log_smoothed_prior(counts, params.alpha)
    zeros = jnp.zeros(num_skills, counts.dtype)
    return FilterState(
        log_belief=log_pi0,
        counts=counts,
        reset=jnp.asarray(True),
        step=jnp.asarray(0, jnp.int32),
        log_marginal=jnp.zeros((), counts.dtype),
        log_seg_prior=log_pi0,
        window_buf=jnp.zeros((_window_size(params), num_skills), counts.dtype),
        window_pos=jnp.asarray(0, jnp.int32),
        window_sum=zeros,
    )


def _correct(log_pred, loglik):
    log_joint = log_pred + loglik
    log_norm = logsumexp(log_joint)
    return log_joint - log_norm, log_norm


def _windowed_predict(params, state, loglik, feasible, observed):
    """Windowed predict; returns (log_pred, log_seg_prior, buf, pos, window_sum_after)."""
    log_pi0 = log_smoothed_prior(state.counts, params.alpha)
    seg_prior = jnp.where(state.reset, log_pi0, state.log_seg_prior)
    num_slots = state.window_buf.shape[0]
    if num_slots == 0:
        before = jnp.where(state.reset, 0.0, state.window_sum)
        buf, pos = state.window_buf, state.window_pos
        after = before + loglik
    else:
        buf = jnp.where(state.reset, 0.0, state.window_buf)
        pos = jnp.where(state.reset, 0, state.window_pos)
        evicted = buf.at[pos].set(0.0)
        kept = jnp.where(observed, evicted, buf)
        before = jnp.sum(kept, axis=0)
        buf = jnp.where(observed, evicted.at[pos].set(loglik), buf)
        pos = jnp.where(observed, (pos + 1) % num_slots, pos)
        after = jnp.sum(buf, axis=0)
    unnorm = seg_prior + _log_mask(feasible) + before
    return unnorm - logsumexp(unnorm), seg_prior, buf, pos, after


def update_step(params: FilterParams, state: FilterState, loglik, feasible, completed):
    """One filter step, raw and traceable (no validation): ``(state, UpdateInfo)``.

    ``loglik`` float[K], ``feasible`` bool[K], ``completed`` int (-1 none). The
    completion updates the counts and sets ``reset`` for the *next* step.
    """
    observed = jnp.any(loglik != 0.0)
    if params.model == "hazard":
        log_pi0 = log_smoothed_prior(state.counts, params.alpha)
        log_pred = hazard_predict(state.log_belief, log_pi0, feasible, params.hazard, state.reset)
        seg_prior, buf, pos, wsum = (
            state.log_seg_prior, state.window_buf, state.window_pos, state.window_sum)
    elif params.model == "windowed":
        log_pred, seg_prior, buf, pos, wsum = _windowed_predict(
            params, state, loglik, feasible, observed)
    else:
        raise InvalidParameterError(f"unknown filter model {params.model!r}; use one of {MODELS}")
    log_post, log_norm = _correct(log_pred, loglik)
    num_skills = loglik.shape[-1]
    counts = state.counts + jax.nn.one_hot(completed, num_skills, dtype=state.counts.dtype)
    new_state = FilterState(
        log_belief=log_post,
        counts=counts,
        reset=jnp.asarray(completed) >= 0,
        step=state.step + 1,
        log_marginal=state.log_marginal + log_norm,
        log_seg_prior=seg_prior,
        window_buf=buf,
        window_pos=pos,
        window_sum=wsum,
    )
    return new_state, UpdateInfo(log_pred, log_post, log_norm, observed)


def _masked_step(params, state, loglik, feasible, completed, valid):
    """``update_step`` that leaves the state unchanged (and adds 0) where ``valid`` is False.

    Padding inputs are replaced by harmless values *before* the step so no NaN is
    ever produced (keeps gradients finite under ``where``).
    """
    loglik = jnp.where(valid, loglik, 0.0)
    feasible = feasible | ~valid
    completed = jnp.where(valid, completed, -1)
    new_state, info = update_step(params, state, loglik, feasible, completed)
    state = jax.tree_util.tree_map(lambda n, o: jnp.where(valid, n, o), new_state, state)
    info = UpdateInfo(
        log_predicted=jnp.where(valid, info.log_predicted, state.log_belief),
        log_posterior=state.log_belief,
        log_normalizer=jnp.where(valid, info.log_normalizer, 0.0),
        observed=info.observed & valid,
    )
    return state, info


def scan_filter(params: FilterParams, obs: Observations, unroll: int = 1):
    """Traceable forward pass over one trajectory: ``(final_state, UpdateInfo[T])``.

    The building block of :func:`filter` and of the NumPyro marginalised model.
    """
    state0 = initial_state(params, obs.prior_counts)

    def body(state, xs):
        return _masked_step(params, state, *xs)

    xs = (obs.loglik, obs.feasible, obs.completed, obs.valid)
    return lax.scan(body, state0, xs, unroll=unroll)


def log_marginal_likelihood(params: FilterParams, obs: Observations):
    """Traceable ``log p(a_{0:T-1})`` for one trajectory (hazard or windowed)."""
    state, _ = scan_filter(params, obs)
    return state.log_marginal


# --------------------------------------------------------------------------------------
# Validation at the boundary (host-side, NumPy)
# --------------------------------------------------------------------------------------


def _check_params(params: FilterParams) -> FilterParams:
    if not isinstance(params, FilterParams):
        raise InvalidParameterError(f"expected FilterParams, got {type(params).__name__}")
    if params.model not in MODELS:
        raise InvalidParameterError(f"unknown filter model {params.model!r}; use one of {MODELS}")
    hazard = float(params.hazard)
    if not (math.isfinite(hazard) and 0.0 <= hazard <= 1.0):
        raise InvalidParameterError(f"hazard must lie in [0, 1], got {params.hazard!r}")
    alpha = float(params.alpha)
    if not (math.isfinite(alpha) and alpha > 0.0):
        raise InvalidParameterError(f"alpha must be a finite number > 0, got {params.alpha!r}")
    window = params.window
    if window is not None and window != math.inf:
        if isinstance(window, bool) or int(window) != window or window < 1:
            raise InvalidParameterError(f"window must be an integer >= 1 or None, got {window!r}")
        window = int(window)
    else:
        window = None
    return FilterParams(params.model, hazard, alpha, window)


def _check_loglik(loglik: np.ndarray, where: np.ndarray, what: str = "loglik") -> None:
    bad = (np.isnan(loglik) | (loglik == np.inf)) & where
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise NonFiniteLoglikError(
            f"{what} must not contain NaN or +inf (first bad entry at index {idx}: "
            f"{loglik[idx]!r}); use -inf for probability zero")


def _check_completed(completed: np.ndarray, num_skills: int, where: np.ndarray) -> None:
    if not np.issubdtype(completed.dtype, np.integer):
        raise CompletedIndexError(f"completed must hold integers, got dtype {completed.dtype}")
    bad = ((completed < -1) | (completed >= num_skills)) & where
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CompletedIndexError(
            f"completed must lie in [-1, {num_skills}) (-1 = none); got {completed[idx]} at {idx}")




def _float_dtype(x: np.ndarray):
    """The JAX float dtype an array becomes (float64 only when x64 is enabled)."""
    src = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    return jax.dtypes.canonicalize_dtype(src)


def observations(loglik, feasible=None, completed=None, valid=None, prior_counts=None,
                 *, batched: Optional[bool] = None) -> Observations:
    """Validate and package a trajectory (``[T, K]``) or a padded batch (``[B, T, K]``).

    Defaults: all skills feasible, no completions, all steps valid, zero prior
    counts. Raises :class:`ShapeMismatchError`, :class:`NonFiniteLoglikError`,
    :class:`NoFeasibleSkillError` or :class:`CompletedIndexError` with the first
    offending index. Returns JAX arrays (float dtype follows JAX's x64 setting).
    """
    ll = np.asarray(loglik)
    if not np.issubdtype(ll.dtype, np.number):
        raise ShapeMismatchError(f"loglik must be numeric, got dtype {ll.dtype}")
    if batched is None:
        batched = ll.ndim == 3
    want = 3 if batched else 2
    if ll.ndim != want or ll.shape[-1] < 1 or ll.shape[-2] < 1:
        raise ShapeMismatchError(
            f"loglik must have shape {'[B, T, K]' if batched else '[T, K]'} with T, K >= 1, "
            f"got {ll.shape}")
    lead, num_skills = ll.shape[:-1], ll.shape[-1]
    valid_np = np.ones(lead, bool) if valid is None else _as_bool(valid, "valid")
    if valid_np.shape != lead:
        raise ShapeMismatchError(f"valid must have shape {lead}, got {valid_np.shape}")
    _check_loglik(ll, valid_np[..., None])
    feas = np.ones(ll.shape, bool) if feasible is None else _as_bool(feasible, "feasible")
    if feas.shape != ll.shape:
        raise ShapeMismatchError(f"feasible must have shape {ll.shape}, got {feas.shape}")
    none_ok = ~np.any(feas, axis=-1) & valid_np
    if np.any(none_ok):
        idx = tuple(int(i) for i in np.argwhere(none_ok)[0])
        raise NoFeasibleSkillError(f"no skill is feasible at step index {idx}")
    comp = np.full(lead, -1, np.int32) if completed is None else np.asarray(completed)
    if comp.shape != lead:
        raise ShapeMismatchError(f"completed must have shape {lead}, got {comp.shape}")
    _check_completed(comp, num_skills, valid_np)
    counts_shape = lead[:-1] + (num_skills,)
    counts = np.zeros(counts_shape) if prior_counts is None else np.asarray(prior_counts, float)
    if counts.shape != counts_shape:
        raise ShapeMismatchError(f"prior_counts must have shape {counts_shape}, got {counts.shape}")
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise InvalidParameterError("prior_counts must be finite and >= 0")
    fdt = _float_dtype(ll)
    return Observations(
        loglik=jnp.asarray(ll, fdt),
        feasible=jnp.asarray(feas),
        completed=jnp.asarray(np.where(valid_np, comp, -1), jnp.int32),
        valid=jnp.asarray(valid_np),
        prior_counts=jnp.asarray(counts, fdt),
    )


# --------------------------------------------------------------------------------------
# Jitted entry points (configuration split into static structure + traced numbers)
# --------------------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("model", "window"))
def _update_jit(model, window, hazard, alpha, state, loglik, feasible, completed):
    params = FilterParams(model, hazard, alpha, window)
    return update_step(params, state, loglik, feasible, completed)


@partial(jax.jit, static_argnames=("model", "window"))
def _filter_jit(model, window, hazard, alpha, obs):
    params = FilterParams(model, hazard, alpha, window)
    return _filter_result(params, obs)


@partial(jax.jit, static_argnames=("model", "window"))
def _filter_batch_jit(model, window, hazard, alpha, obs):
    params = FilterParams(model, hazard, alpha, window)
    return jax.vmap(partial(_filter_result, params))(obs)


def _filter_result(params, obs):
    state, info = scan_filter(params, obs)
    return FilterResult(info.log_posterior, info.log_predicted, info.log_normalizer,
                        state.log_marginal, state)


def _numbers(params: FilterParams, dtype):
    # NumPy 0-d arrays (not jnp.asarray: ~80 us each) with a fixed dtype, so the jit
    # cache key never changes with the values.
    dtype = np.dtype(dtype)
    return np.asarray(params.hazard, dtype), np.asarray(params.alpha, dtype)


def init(params: FilterParams, num_skills: int, prior_counts=None) -> FilterState:
    """Initial state for ``num_skills`` skills (validated).

    ``prior_counts`` [K] (>= 0): completion counts remembered from earlier
    episodes with the same partner; zeros by default.
    """
    params = _check_params(params)
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
    params = _check_params(params)
    num_skills = int(state.log_belief.shape[-1])
    if _window_size(params) != state.window_buf.shape[0]:
        raise ShapeMismatchError(
            f"state has {state.window_buf.shape[0]} window slots but params ask for "
            f"{_window_size(params)}; build the state with init(params, ...)")
    ll = np.asarray(loglik)
    if ll.shape != (num_skills,) or not np.issubdtype(ll.dtype, np.number):
        raise ShapeMismatchError(f"loglik must be a numeric array of shape ({num_skills},), "
                                 f"got {ll.shape} {ll.dtype}")
    _check_loglik(ll, np.ones(ll.shape, bool))
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
    hazard, alpha = _numbers(params, dtype)
    new_state, info = _update_jit(
        params.model, params.window, hazard, alpha, state,
        np.asarray(ll, np.dtype(dtype)), feas, np.asarray(int(comp), np.int32))
    if not np.isfinite(float(info.log_normalizer)):
        raise ImpossibleObservationError(
            "this observation has probability zero under every skill the model allows "
            "(all feasible skills with predicted mass have loglik = -inf)")
    return new_state, info


def filter(params: FilterParams, obs) -> FilterResult:  # noqa: A001 - public name by contract
    """Offline forward filter of one trajectory (``jit`` around ``lax.scan``).

    ``obs`` is an :class:`Observations` with ``[T, ...]`` arrays (build it with
    :func:`observations`), or a bare ``loglik`` array [T, K] (all feasible, no
    completions). Returns a :class:`FilterResult`.
    """
    params = _check_params(params)
    if not isinstance(obs, Observations):
        obs = observations(obs, batched=False)
    elif obs.loglik.ndim != 2:
        raise ShapeMismatchError(f"filter expects [T, K] arrays, got loglik {obs.loglik.shape}; "
                                 "use filter_batch for [B, T, K]")
    hazard, alpha = _numbers(params, obs.loglik.dtype)
    return _filter_jit(params.model, params.window, hazard, alpha, obs)


def filter_batch(params: FilterParams, obs) -> FilterResult:
    """Forward filter of a padded batch ``[B, T, ...]`` (``vmap`` of :func:`filter`).

    Steps with ``valid == False`` leave the state unchanged and add 0 to the log
    marginal, so each row equals the unbatched result on its valid steps.
    """
    params = _check_params(params)
    if not isinstance(obs, Observations):
        obs = observations(obs, batched=True)
    elif obs.loglik.ndim != 3:
        raise ShapeMismatchError(f"filter_batch expects [B, T, K] arrays, got {obs.loglik.shape}")
    hazard, alpha = _numbers(params, obs.loglik.dtype)
    return _filter_batch_jit(params.model, params.window, hazard, alpha, obs)


# --------------------------------------------------------------------------------------
# Offline smoothing and decoding (hazard model; full K x K matrices)
# --------------------------------------------------------------------------------------


def log_transition_matrices(params: FilterParams, obs: Observations):
    """Traceable per-step log transition matrices ``[T, K, K]`` of the hazard model.

    Entry ``t`` maps ``z_{t-1}`` to ``z_t`` (at the first step every row is the
    initial distribution, so any dummy ``z_{-1}`` works). Padding steps get the
    identity (``0`` on the diagonal, ``-inf`` elsewhere) and do not change counts.
    """
    num_skills = obs.loglik.shape[-1]
    log_eye = jnp.log(jnp.eye(num_skills, dtype=obs.loglik.dtype))

    def body(carry, xs):
        counts, reset = carry
        feasible, completed, valid = xs
        log_pi0 = log_smoothed_prior(counts, params.alpha)
        mat = hazard_log_transition(log_pi0, feasible | ~valid, params.hazard, reset)
        mat = jnp.where(valid, mat, log_eye)
        completed = jnp.where(valid, completed, -1)
        counts = counts + jax.nn.one_hot(completed, num_skills, dtype=counts.dtype)
        reset = jnp.where(valid, completed >= 0, reset)
        return (counts, reset), mat

    carry = (jnp.asarray(obs.prior_counts, obs.loglik.dtype), jnp.asarray(True))
    _, mats = lax.scan(body, carry, (obs.feasible, obs.completed, obs.valid))
    return mats


def _require_hazard(params: FilterParams, obs) -> tuple[FilterParams, Observations]:
    params = _check_params(params)
    if params.model != "hazard":
        raise UnsupportedModelError(
            f"{params.model!r} is a filter only (no transition matrix); smoothing and "
            "decoding are defined for the hazard model")
    if not isinstance(obs, Observations):
        obs = observations(obs, batched=False)
    elif obs.loglik.ndim != 2:
        raise ShapeMismatchError(f"expected [T, K] arrays, got loglik {obs.loglik.shape}")
    return params, obs


def _decoding_inputs(hazard, alpha, obs):
    """Per-step log transition matrices and the masked log-likelihoods (traced)."""
    mats = log_transition_matrices(FilterParams("hazard", hazard, alpha, None), obs)
    loglik = jnp.where(obs.valid[:, None], obs.loglik, 0.0)
    return mats, loglik, loglik.shape[-1]


@jax.jit
def _smoother_jit(hazard, alpha, obs):
    mats, loglik, num_skills = _decoding_inputs(hazard, alpha, obs)
    log_b0 = jnp.full(num_skills, -jnp.log(num_skills), loglik.dtype)

    def forward(log_b, xs):
        mat, ll = xs
        log_pred = logsumexp(log_b[:, None] + mat, axis=0)
        log_post, log_norm = _correct(log_pred, ll)
        return log_post, (log_post, log_norm)

    _, (log_filt, log_norms) = lax.scan(forward, log_b0, (mats, loglik))

    def backward(log_beta, xs):
        mat_next, ll_next = xs
        prev = logsumexp(mat_next + (ll_next + log_beta)[None, :], axis=1)
        prev = prev - logsumexp(prev)
        return prev, prev

    last = jnp.zeros(num_skills, loglik.dtype)
    _, log_betas = lax.scan(backward, last, (mats[1:], loglik[1:]), reverse=True)
    log_betas = jnp.concatenate([log_betas, last[None]], axis=0)
    unnorm = log_filt + log_betas
    return unnorm - logsumexp(unnorm, axis=-1, keepdims=True), jnp.sum(log_norms)


def smoother(params: FilterParams, obs):
    """Forward-backward posterior marginals ``log p(z_t | a_{0:T-1})`` [T, K] (hazard model).

    Returns ``(log_smoothed [T, K], log_marginal)``. Uses the full per-step K x K
    transition matrices (fine offline). Rows at padding steps carry neighbouring
    values and should be ignored.
    """
    params, obs = _require_hazard(params, obs)
    hazard, alpha = _numbers(params, obs.loglik.dtype)
    return _smoother_jit(hazard, alpha, obs)


@jax.jit
def _viterbi_jit(hazard, alpha, obs):
    mats, loglik, num_skills = _decoding_inputs(hazard, alpha, obs)

    def forward(delta, xs):
        mat, ll = xs
        scores = delta[:, None] + mat
        best = jnp.argmax(scores, axis=0)
        delta = jnp.max(scores, axis=0) + ll
        return delta, best

    delta0 = jnp.zeros(num_skills, loglik.dtype)
    delta, back = lax.scan(forward, delta0, (mats, loglik))
    last = jnp.argmax(delta)

    def backtrack(z_next, bp):
        z = bp[z_next]
        return z, z

    _, path_prev = lax.scan(backtrack, last, back[1:], reverse=True)
    path = jnp.concatenate([path_prev, last[None]])
    return path.astype(jnp.int32), delta[last]


def most_likely_path(params: FilterParams, obs):
    """Viterbi decoding of the hazard model: ``(path int32[T], log p(path, a_{0:T-1}))``.

    At padding steps the path repeats the neighbouring skill.
    """
    params, obs = _require_hazard(params, obs)
    hazard, alpha = _numbers(params, obs.loglik.dtype)
    return _viterbi_jit(hazard, alpha, obs)


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
    params = _check_params(params)
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
    "scan_filter",
    "log_marginal_likelihood",
    "smoother",
    "most_likely_path",
    "log_smoothed_prior",
    "hazard_predict",
    "hazard_log_transition",
    "log_transition_matrices",
]
