"""The hazard (sticky) transition: with probability ``1 - h`` the partner keeps its skill,
with probability ``h`` it redraws one from ``pi0`` (``docs/model.md``).

Every form of the predict step is written once here over an array namespace ``xp``
(``numpy`` or ``jax.numpy``; only operations both provide):

* :func:`hazard_sticky` -- the O(K) predict in scaled probabilities (the NumPy online gate,
  the JAX batched kernel and, via :func:`log_predict`, the JAX log-space filter);
* :func:`log_predict` -- that predict taken to log space (the JAX filter, NumPyro likelihood);
* :func:`log_transition` -- the full ``[K, K]`` log matrix (offline: smoother, Viterbi,
  explicit model), tested equal to the predict;
* :func:`hazard_step` -- predict + Bayes correction in NumPy (the online gate and the
  change-point gate's run-length filter).

:data:`HAZARD` is the component object the filters dispatch on (``FilterParams.model`` /
``GateParams.model == "hazard"``).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np

from beliefgate.models.forward import condition

_new = tuple.__new__

#: The one smallest hazard. The fitted model evaluates ``h`` below it at it (an exact 0 gives NaN
#: gradients in the predict step; the likelihood is the same to rounding), and any ``h >= MIN_HAZARD``
#: keeps every feasible skill's predicted mass at least ``h pi0`` (a normal float64), so the online
#: gate never meets a skill stuck at exactly 0.
MIN_HAZARD = 1e-30


def hazard_constants(xp, pi0, hazard):
    """``(h pi0, (1-h) + h pi0)``: the all-feasible switch and stay factors for one ``pi0``."""
    hpi0 = hazard * pi0
    return hpi0, (1.0 - hazard) + hpi0


def forced_switch(xp, pi0, feasible, axis: int = -1):
    """The restart distribution ``pi0 ∘ f / sum(pi0 ∘ f)`` (episode start, visible completion)."""
    if feasible is None:
        return pi0
    pf = pi0 * feasible
    return pf / pf.sum(axis=axis, keepdims=True)


def hazard_sticky(xp, belief, pi0, feasible, hazard, consts=None, axis: int = -1):
    """O(K) predict of the hazard model from a normalised belief: ``(prior, stay, switch)``.

    With ``S = sum(pi0 ∘ f)``, ``Zf = (1-h) + h S``, ``B_f`` the belief mass on
    feasible skills and ``B_x = 1 - B_f`` (rows of infeasible skills switch by force)::

        stay(j)   = f(j) [(1-h) + h pi0(j)] / Zf
        switch(j) = f(j) pi0(j) [h (B_f - b(j)) / Zf + B_x / S]
        prior     = stay * b + switch

    (resampling the current skill counts as staying). ``feasible`` is a 0/1 (or bool)
    array, or ``None`` for "all feasible" (then ``stay = (1-h) + h pi0`` and
    ``switch = h pi0 (1 - b)``; ``consts`` may hold :func:`hazard_constants`). Sums are
    the array method ``x.sum(...)`` (on NumPy's K-sized arrays under half of ``np.sum``);
    ``axis`` is the skill axis (``0`` for the batched kernel's ``[K, B]`` layout).
    """
    if feasible is None:
        if consts is None:
            hpi0, stay = hazard_constants(xp, pi0, hazard)
        else:
            hpi0, stay = consts[0], consts[1]
        switch = hpi0 - hpi0 * belief  # h pi0 (1 - b), array-array operations only
        # stay * b + switch = (1-h) b + h pi0 for a normalised b: two operations, not four
        return (1.0 - hazard) * belief + hpi0, stay, switch
    h = hazard
    pf = pi0 * feasible
    s = pf.sum(axis=axis, keepdims=True)
    zf = (1.0 - h) + h * s
    b_f = (belief * feasible).sum(axis=axis, keepdims=True)
    stay = feasible * (((1.0 - h) + h * pi0) / zf)
    switch = pf * (h * (b_f - belief) / zf + (1.0 - b_f) / s)
    return stay * belief + switch, stay, switch


def log_predict(xp, log_belief, log_pi0, feasible, hazard, reset):
    """O(K) predict in log space: ``log sum_i b(i) T(i, j)`` (normalised; ``-inf`` on infeasible
    skills). :func:`hazard_sticky` on the belief scaled by its maximum, so relative beliefs stay
    exact down to float range (1e-308 of the MAP); ``reset`` (a bool, or a traced one) forces the
    switch to ``pi0 ∘ feasible``."""
    top = xp.max(log_belief)
    belief = xp.exp(log_belief - top)
    belief = belief / xp.sum(belief)
    pi0 = xp.exp(log_pi0)
    f = feasible.astype(pi0.dtype)
    sticky, _, _ = hazard_sticky(xp, belief, pi0, f, hazard)
    pred = xp.where(reset, forced_switch(xp, pi0, f), sticky)
    # Infeasible skills get exactly -inf; feed log() a 1 there so no NaN gradient leaks.
    ok = feasible & (pred > 0)
    return xp.where(ok, xp.log(xp.where(ok, pred, 1.0)), -xp.inf)


def log_transition(xp, log_pi0, feasible, hazard, reset):
    """Full log transition matrix ``log T[i, j]`` into a step (offline use, O(K^2)).

    Written directly from ``docs/model.md``: row ``i`` is the forced switch
    ``pi0 ∘ feasible / S`` if ``reset`` or skill ``i`` is infeasible, else
    ``[(1-h)[i == j] + h pi0(j)] feasible(j) / Z_i``.
    """
    num_skills = log_pi0.shape[-1]
    pi0 = xp.exp(log_pi0)
    f = feasible.astype(pi0.dtype)
    forced = pi0 * f / xp.sum(pi0 * f)
    eye = xp.eye(num_skills, dtype=pi0.dtype)
    unnorm = ((1.0 - hazard) * eye + hazard * pi0[None, :]) * f[None, :]
    z = xp.sum(unnorm, axis=1, keepdims=True)
    sticky_ok = feasible[:, None] & ~reset
    rows = xp.where(sticky_ok, unnorm / xp.where(sticky_ok, z, 1.0), forced[None, :])
    return xp.log(rows)


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


def hazard_step(
    belief: np.ndarray,
    pi0: np.ndarray,
    feasible: Optional[np.ndarray],
    restart: bool,
    hazard: float,
    loglik: Optional[np.ndarray],
    constants: Optional[tuple] = None,
) -> HazardStep:
    """Predict and correct one step of the hazard model in NumPy.

    ``belief``: float[K] posterior of the previous step (ignored when ``restart``);
    ``pi0``: smoothed prior; ``feasible``: bool[K] or ``None`` (all feasible);
    ``restart``: episode start or visible completion (forced switch to
    ``pi0 ∘ feasible``); ``loglik``: tempered float[K] (``None``: excluded step);
    ``constants``: ``hazard_constants(np, pi0, hazard)`` if already computed (a longer tuple
    starting with them is fine).
    Never raises: an impossible observation gives ``log_z = -inf``.
    """
    if restart:
        stay = switch = None
        prior = forced_switch(np, pi0, feasible)
    else:
        prior, stay, switch = hazard_sticky(np, belief, pi0, feasible, hazard, constants)
    # the records are built with tuple.__new__ (every field, in order): no generated __new__ frame
    if loglik is None:
        return _new(HazardStep, (prior, prior, 0.0, stay, switch, None))
    post, log_z, factor = condition(prior, loglik, factor=True)
    if log_z == -math.inf:
        return _new(HazardStep, (prior, prior, log_z, stay, switch, None))
    return _new(HazardStep, (prior, post, log_z, stay, switch, factor))


class HazardTransition:
    """The hazard transition as a component the filters dispatch on (no state of its own).

    ``params`` are the names of the model parameters it reads; ``has_matrix``: it has a
    transition matrix (smoothing and Viterbi are defined); ``scaled_kernel``: the batched
    scaled-probability kernel (``filter_batch(method="scaled")``) implements it;
    ``runs_hazard_filter``: its online
    step *is* the hazard filter the change-point gate extends (its statistics come free).
    """

    name = "hazard"
    #: what ``beliefgate fit --help`` says the model is
    summary = "sticky switching"
    params = ("hazard", "alpha")
    #: configuration fields (``GateParams``/``FitConfig``) that apply to this transition only
    options = ()
    has_matrix = True
    scaled_kernel = True
    runs_hazard_filter = True

    def window_slots(self, window) -> int:
        """Rows of the window ring the filter state carries: none."""
        return 0

    def filter_fields(self, xp, values, window) -> tuple:
        """``(hazard, window)`` of the filter's ``FilterParams`` at parameter ``values`` (traceable):
        ``h`` evaluated at :data:`MIN_HAZARD` below it (no NaN gradient at an exact 0), no window."""
        return xp.maximum(values["hazard"], MIN_HAZARD), None

    def filter_predict(self, xp, params, state, log_pi0, loglik, feasible, observed):
        """The log-space filter's predict (traceable): ``(log_pred, log_seg_prior, window_buf,
        window_pos, window_sum)``; the window fields pass through unchanged."""
        log_pred = log_predict(xp, state.log_belief, log_pi0, feasible, params.hazard, state.reset)
        return log_pred, state.log_seg_prior, state.window_buf, state.window_pos, state.window_sum

    def constants(self, pi0, hazard) -> tuple:
        """What the NumPy online step caches with ``pi0``: :func:`hazard_constants` and the
        array ``1 - h`` (array-array products beat scalar ones at K ~ 6)."""
        return (*hazard_constants(np, pi0, hazard), np.full(pi0.shape, 1.0 - hazard))

    def online_step(self, belief, pi0, restart, window_buf, window_pos, window_sum, ll, feas, hazard, consts):
        """The NumPy online step on a gate's belief-state fields (previous posterior, ``pi0``,
        restart flag, window ring, slot and sum; ``consts`` from :meth:`constants`):
        ``(prior, post, log_z, window_buf, window_pos, window_sum, hazard_step, predictive)``;
        the window fields pass through, and ``predictive = (1 - h) post + h pi0`` is the belief
        about ``z_{t+1}`` before ``a_{t+1}`` if nothing completes at ``t``."""
        hs = hazard_step(belief, pi0, feas, restart, hazard, ll, consts)
        post = hs[1]
        predictive = post * consts[2]
        predictive += consts[0]
        return hs[0], post, hs[2], window_buf, window_pos, window_sum, hs, predictive

    def __repr__(self) -> str:
        return "HAZARD"


#: The hazard transition component.
HAZARD = HazardTransition()

__all__ = ["MIN_HAZARD", "HAZARD", "HazardTransition", "HazardStep", "hazard_step", "hazard_constants",
           "forced_switch", "hazard_sticky", "log_predict", "log_transition"]
