"""Offline inference on whole trajectories: forward-backward smoothing and Viterbi (hazard model).

Both use the per-step log transition matrices of the same hazard component the
online filter predicts with (:func:`beliefgate.models.hmm.log_transition_matrices`,
O(K^2) per step: fine offline). The windowed model has no transition matrix, so
both refuse it. Validation and the forward filter that names an impossible step come from
:mod:`beliefgate.beliefs.boundary` (as :mod:`beliefgate.beliefs.filter`'s do).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.nn import logsumexp

from beliefgate.beliefs.errors import ShapeMismatchError, UnsupportedModelError
from beliefgate.beliefs.boundary import check_params, filter, numbers, observations  # noqa: A004
from beliefgate.models.hmm import (
    FilterParams,
    Observations,
    _correct,
    log_transition_matrices,
)
from beliefgate.models.transitions import get_transition


def _require_hazard(params: FilterParams, obs) -> tuple[FilterParams, Observations]:
    params = check_params(params)
    if not get_transition(params.model).has_matrix:
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
    hazard, alpha = numbers(params, obs.loglik.dtype)
    return _refuse_impossible(params, obs, _smoother_jit(hazard, alpha, obs))


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
    hazard, alpha = numbers(params, obs.loglik.dtype)
    return _refuse_impossible(params, obs, _viterbi_jit(hazard, alpha, obs))


def _refuse_impossible(params: FilterParams, obs, result):
    """``result`` (its second entry a log probability), or, where that is not finite, the forward
    filter's :class:`ImpossibleObservationError` naming the step (NaN marginals and a -inf path
    score came back silently where :func:`filter` raises)."""
    if not np.isfinite(float(result[1])):
        filter(params, obs)  # raises, naming the first impossible step
    return result



__all__ = ["smoother", "most_likely_path"]
