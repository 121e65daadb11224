"""Boltzmann-rational controller with epsilon noise.

    pi_hat(a | s, k) = (1 - eps) * softmax_a(beta * Q[k, a]) + eps / A

computed in log space as

    log pi_hat = logaddexp(log(1 - eps) + log_softmax(beta * Q), log(eps) - log(A)).

``Q`` may contain ``-inf`` for actions a domain declares impossible; with
``eps > 0`` they still get probability ``eps / A``. Every row of the result is a
normalised distribution over the last axis. The NumPy and JAX versions compute
the same numbers (tests check 1e-6 agreement).
"""

from __future__ import annotations

import numpy as np


def _check_params(beta: float, epsilon: float) -> None:
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
    if not np.isfinite(epsilon) or not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must lie in [0, 1], got {epsilon!r}")


def boltzmann_logprobs(q: np.ndarray, beta: float, epsilon: float) -> np.ndarray:
    """NumPy log pi_hat over the last axis of ``q`` (shape ``[..., A]``)."""
    _check_params(float(beta), float(epsilon))
    q = np.asarray(q, dtype=np.float64)
    num_actions = q.shape[-1]
    z = beta * q
    zmax = np.max(z, axis=-1, keepdims=True)
    if not np.all(np.isfinite(zmax)):
        raise ValueError("every row of Q needs at least one finite action value")
    with np.errstate(divide="ignore"):
        shifted = z - zmax
        log_soft = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
        log_keep = np.log1p(-epsilon) if epsilon < 1.0 else -np.inf
        log_noise = np.log(epsilon) - np.log(num_actions) if epsilon > 0.0 else -np.inf
    return np.logaddexp(log_keep + log_soft, log_noise)


def boltzmann_logprobs_jax(q, beta, epsilon):
    """JAX log pi_hat over the last axis of ``q``; traceable in ``beta`` and ``epsilon``.

    No input validation here (it runs under ``jit`` and inside NumPyro models);
    callers validate at the boundary.
    """
    import jax.numpy as jnp
    from jax.nn import log_softmax

    num_actions = q.shape[-1]
    # -inf marks impossible actions; keep them out of the product so d/d(beta) stays finite
    finite = jnp.isfinite(q)
    z = jnp.where(finite, beta * jnp.where(finite, q, 0.0), -jnp.inf)
    log_soft = log_softmax(z, axis=-1)
    log_keep = jnp.log1p(-epsilon)
    log_noise = jnp.log(epsilon) - jnp.log(num_actions)
    return jnp.logaddexp(log_keep + log_soft, log_noise)
