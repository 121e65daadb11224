"""The forward step of the partner-skill model in NumPy (the online path).

One O(K) predict-and-correct step of the hazard model of ``docs/model.md``
(:func:`hazard_step`) and the Bayes correction it ends with (:func:`condition`),
in probability space with explicit normalisation and a log-space fallback when
the normaliser underflows. The online gate (:mod:`beliefgate.beliefs.core`) and
the change-point gate's run-length filter (:mod:`beliefgate.beliefs.gates`) use
these; the JAX filter (:mod:`beliefgate.beliefs.filter`) is tested against them
to 1e-9 and ``docs/model.md`` lists where each form lives and what it buys.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np

from beliefgate.models import components as _C

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


# --------------------------------------------------------------------------- hazard forward step


class HazardStep(NamedTuple):
    """One O(K) forward step of the hazard model, with the pieces the change-point gate reuses.

    Fields
    ------
    prior : float[K]
        ``P(z_t | a_{<t})``, the predicted (pre-update) belief.
    post : float[K]
        ``P(z_t | a_{0:t})``, normalised (undefined when ``log_z = -inf``).
    log_z : float
        ``log p(a_t | a_{<t}) = log sum_k prior(k) exp(loglik(k))``; 0 for an
        excluded step, ``-inf`` for an impossible observation.
    stay : float[K] or None
        ``g(j)``: factor of the belief mass that keeps skill ``j`` (``None`` on restart).
    switch : float[K] or None
        ``sw(j)``: predicted mass that enters ``j`` by a real switch (``None`` on restart);
        ``prior = stay * belief + switch``.
    factor : float[K] or None
        ``exp(loglik - log_z)``, so that ``post = prior * factor`` (``None``: no evidence).
    """

    prior: np.ndarray
    post: np.ndarray
    log_z: float
    stay: Optional[np.ndarray]
    switch: Optional[np.ndarray]
    factor: Optional[np.ndarray]


def hazard_constants(pi0: np.ndarray, hazard: float) -> tuple[np.ndarray, np.ndarray]:
    """``(h pi0, (1-h) + h pi0)``: the all-feasible switch and stay factors for one ``pi0``."""
    return _C.hazard_constants(np, pi0, hazard)


def hazard_step(
    belief: np.ndarray,
    pi0: np.ndarray,
    feasible: Optional[np.ndarray],
    restart: bool,
    hazard: float,
    loglik: Optional[np.ndarray],
    constants: Optional[tuple[np.ndarray, np.ndarray]] = None,
) -> HazardStep:
    """Predict and correct one step of the hazard model of ``docs/model.md``.

    ``belief``: float[K] posterior of the previous step (ignored when ``restart``);
    ``pi0``: smoothed prior; ``feasible``: bool[K] or ``None`` (all feasible);
    ``restart``: episode start or visible completion (forced switch to
    ``pi0 ∘ feasible``); ``loglik``: tempered float[K] (``None``: excluded step);
    ``constants``: ``hazard_constants(pi0, hazard)`` if already computed.

    The predict is :func:`beliefgate.models.components.hazard_sticky` (the one
    definition, shared with the JAX filter and the batched kernel) instantiated
    with NumPy. Never raises: an impossible observation gives ``log_z = -inf``.
    """
    if restart:
        stay = switch = None
        prior = _C.forced_switch(np, pi0, feasible)
    else:
        prior, stay, switch = _C.hazard_sticky(np, belief, pi0, feasible, hazard, constants)
    if loglik is None:
        return HazardStep(prior, prior, 0.0, stay, switch, None)
    post, log_z, factor = condition(prior, loglik, factor=True)
    if log_z == -math.inf:
        return HazardStep(prior, prior, log_z, stay, switch, None)
    return HazardStep(prior, post, log_z, stay, switch, factor)


__all__ = ["condition", "HazardStep", "hazard_constants", "hazard_step"]
