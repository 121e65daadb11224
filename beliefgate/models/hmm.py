"""The partner-skill model's forward algorithm in JAX: components and the one traceable step.

This module holds the maths of ``docs/model.md`` as traceable functions on small
NamedTuple pytrees, so that the NumPyro model's likelihood
(:mod:`beliefgate.models.skill_model`, :mod:`beliefgate.models.fit`), the online and
offline filters (:mod:`beliefgate.beliefs.filter`), smoothing and Viterbi
(:mod:`beliefgate.beliefs.offline`) and the diagnostics all run the *same* step:

* the **skill prior** :func:`log_smoothed_prior` (``pi0 ∝ n + alpha``);
* the **transition** component of ``FilterParams.model``
  (:mod:`beliefgate.models.transitions`: hazard, windowed), whose predict
  :func:`update_step` dispatches on; the hazard transition's JAX forms
  :func:`hazard_predict` and :func:`hazard_log_transition` (per-step matrices:
  :func:`log_transition_matrices`);
* the forward step :func:`update_step` (predict, correct, book-keep completions) and
  its scan :func:`scan_filter`, whose final ``log_marginal`` is the model's log
  density with ``z`` summed out.

No validation here: callers validate at the boundary (``beliefgate.beliefs.filter``).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
from jax import lax
from jax.nn import logsumexp

from beliefgate.models import components as _C
from beliefgate.models.transitions import MODELS, get_transition  # noqa: F401  (MODELS re-exported)
from beliefgate.models.transitions import hazard as _hazard


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


def log_smoothed_prior(counts, alpha):
    """``log pi0(k)`` with ``pi0(k) = (counts(k) + alpha) / sum_j (counts(j) + alpha)``."""
    smoothed = counts + alpha
    return jnp.log(smoothed) - jnp.log(jnp.sum(smoothed, axis=-1, keepdims=True))


def hazard_predict(log_belief, log_pi0, feasible, hazard, reset):
    """O(K) log-space predict of the hazard model (JAX):
    :func:`beliefgate.models.transitions.hazard.log_predict` with ``xp = jax.numpy``."""
    return _hazard.log_predict(jnp, log_belief, log_pi0, feasible, hazard, reset)


def hazard_log_transition(log_pi0, feasible, hazard, reset):
    """Full log transition matrix of the hazard model (JAX, offline use):
    :func:`beliefgate.models.transitions.hazard.log_transition` with ``xp = jax.numpy``."""
    return _hazard.log_transition(jnp, log_pi0, feasible, hazard, reset)


def _window_size(params: FilterParams) -> int:
    """Number of ring-buffer slots of ``params``' transition (0: none)."""
    return get_transition(params.model).window_slots(params.window)


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


def update_step(params: FilterParams, state: FilterState, loglik, feasible, completed):
    """One filter step, raw and traceable (no validation): ``(state, UpdateInfo)``.

    ``loglik`` float[K], ``feasible`` bool[K], ``completed`` int (-1 none). The
    completion updates the counts and sets ``reset`` for the *next* step.
    """
    observed = jnp.any(loglik != 0.0)
    log_pi0 = log_smoothed_prior(state.counts, params.alpha)
    log_pred, seg_prior, buf, pos, wsum = get_transition(params.model).filter_predict(
        jnp, params, state, log_pi0, loglik, feasible, observed)
    log_post, log_norm = _correct(log_pred, loglik)
    counts, reset = _C.book_completion(jnp, state.counts, state.reset, jnp.asarray(completed))
    new_state = FilterState(
        log_belief=log_post,
        counts=counts,
        reset=reset,
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
        counts, reset = _C.book_completion(jnp, counts, reset, completed, valid)
        return (counts, reset), mat

    carry = (jnp.asarray(obs.prior_counts, obs.loglik.dtype), jnp.asarray(True))
    _, mats = lax.scan(body, carry, (obs.feasible, obs.completed, obs.valid))
    return mats


# --------------------------------------------------------------------------------------
# Batched filter kernel (scaled probabilities, [B, T, K] in and out)
# --------------------------------------------------------------------------------------


class BatchFilterResult(NamedTuple):
    """Output of the batched filter (``[B, T, K]`` layout, like the input).

    jax arrays from one device computation; NumPy arrays on the host when
    ``beliefgate.beliefs.filter.filter_batch`` ran the batch as row blocks on several cores.

    Fields
    ------
    posterior : float[B, T, K]
        Filtered ``p(z_t | a_{0:t})`` (probabilities; padding steps repeat the last belief).
    log_normalizer : float[B, T]
        Per-step ``log p(a_t | a_{0:t-1})`` (0 at padding steps).
    log_marginal : float[B]
        ``log p(a_{0:T-1})``.
    state : FilterState
        Final states (leading batch axis).
    """

    posterior: jax.Array
    log_normalizer: jax.Array
    log_marginal: jax.Array
    state: FilterState

    @property
    def log_posterior(self) -> jax.Array:
        """``log posterior`` (computed on demand: the kernel works in probabilities)."""
        return jnp.log(self.posterior)


def _step_inputs(loglik, feasible, valid):
    """Scaled likelihoods of one step ``[B, K]``: ``shift[b] = max_k`` over feasible skills
    of ``loglik`` and ``e = exp(loglik - shift)`` (masked to feasible skills), so the best
    feasible skill has ``e = 1``."""
    if feasible is None:
        shift = jnp.max(loglik, axis=-1)
        e = jnp.exp(loglik - shift[..., None])
    else:
        masked = jnp.where(feasible, loglik, -jnp.inf)
        shift = jnp.max(masked, axis=-1)
        shift = jnp.where(jnp.isfinite(shift), shift, 0.0)
        e = jnp.exp(masked - shift[..., None])
    if valid is not None:
        shift = jnp.where(valid, shift, 0.0)
    return shift, e


def _kernel(loglik, feasible, completed, valid, prior_counts, hazard, alpha, lo, batch):
    """The loop behind :func:`batch_filter_scaled` (``feasible``/``completed``/``valid`` may
    be ``None``: all feasible / no completion / no padding, a cheaper recurrence), over the
    ``batch`` rows from row ``lo`` of the inputs.

    The loop runs over ``t`` on the ``[B, T, K]`` arrays as they are: step ``t`` reads the
    rows ``[lo:lo + batch, t, :]``, exponentiates them, and writes the posterior and log
    normaliser in place into the output buffers, so neither the input nor the output is
    transposed or copied whole (the skill sums run over the contiguous last axis)."""
    _, steps, num_skills = loglik.shape
    dtype = loglik.dtype
    rows = lambda x: lax.dynamic_slice_in_dim(x, lo, batch, axis=0)  # noqa: E731
    prior_counts = rows(prior_counts)
    pi0_0 = _C.smoothed_prior(jnp, prior_counts.astype(dtype), alpha)  # [B, K]
    general = completed is not None
    # fixed prior (no completions) and all feasible: the predict's constants are hoisted
    consts = None if general or feasible is not None else _hazard.hazard_constants(jnp, pi0_0, hazard)

    def row(x, t):
        if x is None:
            return None
        start = (lo, t) + (0,) * (x.ndim - 2)
        return lax.dynamic_slice(x, start, (batch, 1) + x.shape[2:])[:, 0]

    def body(t, state):
        (belief, counts, reset), out_post, out_norm = state
        f_t, c_t, v_t = row(feasible, t), row(completed, t), row(valid, t)
        shift, e_t = _step_inputs(row(loglik, t), f_t, v_t)
        pi0 = _C.smoothed_prior(jnp, counts, alpha) if general else pi0_0
        f = None if f_t is None else f_t.astype(dtype)
        prior, _, _ = _hazard.hazard_sticky(jnp, belief, pi0, f, hazard, consts)
        if general:
            prior = jnp.where(reset[:, None], _hazard.forced_switch(jnp, pi0, f), prior)
        post, z = _C.scaled_correct(jnp, prior, e_t)
        z = z[:, 0]
        if v_t is not None:
            post = jnp.where(v_t[:, None], post, belief)
            z = jnp.where(v_t, z, 1.0)
        if general:
            counts, reset = _C.book_completion(jnp, counts, reset, c_t, v_t)
        out_post = lax.dynamic_update_index_in_dim(out_post, post, t, 1)
        out_norm = lax.dynamic_update_index_in_dim(out_norm, jnp.log(z) + shift, t, 1)
        return (post, counts, reset), out_post, out_norm

    counts0 = prior_counts.astype(dtype)
    carry0 = (pi0_0, counts0, jnp.ones(batch, bool))  # belief = pi0: sticky(pi0) = pi0 at t = 0
    out_post = jnp.zeros((batch, steps, num_skills), dtype)
    out_norm = jnp.zeros((batch, steps), dtype)
    (belief, counts, reset), out_post, out_norm = lax.fori_loop(
        0, steps, body, (carry0, out_post, out_norm))
    log_marginal = jnp.sum(out_norm, axis=1)
    num_valid = (jnp.full(batch, steps, jnp.int32) if valid is None
                 else jnp.sum(rows(valid), axis=1).astype(jnp.int32))
    zeros = jnp.zeros((batch, num_skills), dtype)
    final = FilterState(
        log_belief=jnp.log(belief),
        counts=counts,
        reset=reset if general else jnp.zeros(batch, bool),
        step=num_valid,
        log_marginal=log_marginal,
        log_seg_prior=jnp.log(pi0_0),
        window_buf=jnp.zeros((batch, 0, num_skills), dtype),
        window_pos=jnp.zeros(batch, jnp.int32),
        window_sum=zeros,
    )
    return BatchFilterResult(out_post, out_norm, log_marginal, final)


@partial(jax.jit, static_argnames=("simple", "size"))
def _batch_jit(loglik, feasible, completed, valid, prior_counts, hazard, alpha, simple, lo, size):
    if simple:
        return _kernel(loglik, None, None, None, prior_counts, hazard, alpha, lo, size)
    return _kernel(loglik, feasible, completed, valid, prior_counts, hazard, alpha, lo, size)


def batch_filter_scaled(hazard, alpha, obs: Observations, *, simple: bool = False,
                        rows: Optional[tuple[int, int]] = None) -> BatchFilterResult:
    """Hazard-model forward filter of a padded batch ``[B, T, K]`` in scaled probabilities.

    The recurrence is the component :func:`beliefgate.models.components.hazard_sticky`
    (the same definition as the online NumPy step and the log-space JAX step),
    corrected with :func:`~beliefgate.models.components.scaled_correct` on likelihoods
    ``exp(loglik - shift)`` (``shift``: the best feasible skill's log-likelihood at that
    step). One loop over ``t`` reads and writes the ``[B, T, K]`` buffers in place.
    ``simple=True`` (the caller checked: every skill feasible, no completion, no padding)
    drops the feasibility, completion and padding bookkeeping from the recurrence.

    Exactness: every step is normalised explicitly, so no scale drifts; the result equals
    the log-space filter to rounding while each feasible skill's predicted mass stays
    above float64's range (always with ``h > 0``). With ``h = 0`` a skill whose belief
    underflows to 0 stays at 0, where log space would keep it (use ``method="log"``).
    ``rows=(lo, size)`` filters only rows ``lo .. lo + size - 1`` of the batch, read in
    place (``size`` is static: one compilation per block size, whatever ``lo``).
    Raw traceable entry point: no validation and one device computation (the public
    ``beliefgate.beliefs.filter.filter_batch`` validates and shards the batch over cores).
    """
    lo, size = (0, obs.loglik.shape[0]) if rows is None else rows
    return _batch_jit(obs.loglik, obs.feasible, obs.completed, obs.valid, obs.prior_counts,
                      hazard, alpha, bool(simple), lo, int(size))
