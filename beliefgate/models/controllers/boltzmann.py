"""Boltzmann-rational controller with epsilon noise.

    pi_hat(a | s, k) = (1 - eps) * softmax_a(beta * Q[k, a]) + eps / A

computed in log space as

    log pi_hat = logaddexp(log(1 - eps) + log_softmax(beta * Q), log(eps) - log(A)).

``Q`` may contain ``-inf`` for actions a domain declares impossible; with
``eps > 0`` they still get probability ``eps / A``. Every row of the result is a
normalised distribution over the last axis.

The formula is written once (:func:`boltzmann_logprobs_xp`, for any array module);
:func:`boltzmann_logprobs` is its validated NumPy instance (the online gate) and
:func:`boltzmann_logprobs_jax` its traceable JAX instance (the NumPyro model). The
fitted model's sufficient-statistic form (``beliefgate.models.fit.model_loglik``)
is tested equal to it.
"""

from __future__ import annotations

import numpy as np

from beliefgate.models.errors import InvalidParameterError


def boltzmann_logprobs_xp(xp, q, beta, epsilon):
    """``log pi_hat`` over the last axis of ``q`` with array module ``xp`` (no validation).

    ``-inf`` entries of ``q`` are kept out of the product ``beta * q`` (so that
    ``d/d(beta)`` stays finite under JAX) and give ``-inf`` before the noise mix.
    """
    num_actions = q.shape[-1]
    finite = xp.isfinite(q)
    z = xp.where(finite, beta * xp.where(finite, q, 0.0), -xp.inf)
    zmax = xp.max(z, axis=-1, keepdims=True)
    shifted = z - zmax
    log_soft = shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))
    log_keep = xp.log1p(-epsilon)
    log_noise = xp.log(epsilon) - np.log(num_actions)
    return xp.logaddexp(log_keep + log_soft, log_noise)


def _check_params(beta: float, epsilon: float) -> None:
    if not np.isfinite(beta) or beta < 0:
        raise InvalidParameterError(f"beta must be a finite number >= 0, got {beta!r}")
    if not np.isfinite(epsilon) or not 0.0 <= epsilon <= 1.0:
        raise InvalidParameterError(f"epsilon must lie in [0, 1], got {epsilon!r}")


def boltzmann_logprobs(q: np.ndarray, beta: float, epsilon: float) -> np.ndarray:
    """Validated NumPy ``log pi_hat`` over the last axis of ``q`` (shape ``[..., A]``)."""
    _check_params(float(beta), float(epsilon))
    q = np.asarray(q, dtype=np.float64)
    if not np.all(np.any(np.isfinite(q), axis=-1)) or np.any(np.isnan(q)) or np.any(q == np.inf):
        raise InvalidParameterError("every row of Q needs at least one finite action value "
                                    "(and no NaN or +inf)")
    with np.errstate(divide="ignore"):
        return boltzmann_logprobs_xp(np, q, float(beta), float(epsilon))


def boltzmann_logprobs_jax(q, beta, epsilon):
    """Traceable JAX ``log pi_hat`` over the last axis of ``q`` (no validation: it runs
    under ``jit`` and inside NumPyro models; callers validate at the boundary)."""
    import jax.numpy as jnp

    return boltzmann_logprobs_xp(jnp, q, beta, epsilon)
