"""The Bayes correction of the NumPy online path (:func:`condition`).

In probability space with explicit normalisation and a log-space fallback when the
normaliser underflows. The transitions' NumPy online steps end with it
(:func:`beliefgate.models.transitions.hazard.hazard_step`, the windowed segment step);
the JAX filter (:mod:`beliefgate.beliefs.filter`) is tested against them to 1e-9 and
``docs/model.md`` lists where each form lives and what it buys.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np


# Below this normaliser the probability-space update may have lost precision to
# underflow; the update is then redone in log space.
_TINY = 1e-280
# |loglik| below this can be exponentiated without overflow (and the normaliser
# underflows only where the fallback takes over).
_SAFE_EXP = 600.0




def condition(
    pred: np.ndarray, loglik: np.ndarray, factor: bool = False
) -> tuple[np.ndarray, float, Optional[np.ndarray]]:
    """Bayes correction ``post ∝ pred * exp(loglik)`` on float[K] vectors.

    ``pred`` is non-negative and sums to one; ``loglik`` may hold ``-inf`` but no
    NaN/``+inf``. Returns ``(post, log_z, f)`` with
    ``log_z = log sum_k pred(k) exp(loglik(k))`` and, if ``factor`` is set,
    ``f = exp(loglik - log_z)`` so that ``post = pred * f`` (0 where ``pred`` is 0;
    ``None`` otherwise). Works in probability space (the maximum log-likelihood is
    subtracted before ``exp`` unless ``exp`` cannot overflow) and falls back to log
    space when the normaliser underflows. ``log_z = -inf`` (``post``, ``f``
    undefined) when the observation is impossible under every skill ``pred`` allows.
    """
    mx = max(loglik.tolist())
    if mx == -math.inf:
        return pred, -math.inf, None
    if -_SAFE_EXP < mx < _SAFE_EXP:  # exp cannot overflow: skip the shift
        e, mx = np.exp(loglik), 0.0
    else:
        e = np.exp(loglik - mx)
    post = pred * e
    z = sum(post.tolist())
    if z > _TINY:
        post /= z
        return post, math.log(z) + mx, e / z if factor else None
    # Underflow (the likeliest skills have negligible predicted mass): log space.
    with np.errstate(divide="ignore"):
        lj = np.log(pred) + loglik
    mj = lj.max()
    if mj == -math.inf:
        return pred, -math.inf, None
    post = np.exp(lj - mj)
    z = post.sum()
    post /= z
    log_z = math.log(z) + mj
    if not factor:
        return post, log_z, None
    return post, log_z, np.where(pred > 0.0, np.exp(np.minimum(loglik - log_z, 700.0)), 0.0)


__all__ = ["condition"]
