"""The goal model's forward step, written once over an array namespace ``xp`` (``docs/goal.md``).

NumPy instantiates it in the online :class:`beliefgate.beliefs.goal.GoalFilter`,
``jax.numpy`` in :func:`beliefgate.models.goal.model.scan_goal` (the NumPyro model's
likelihood). The skill part of the predict is the hazard model's own
:func:`~beliefgate.models.transitions.hazard.hazard_sticky` and ``forced_switch``, applied
to every goal's row at once. This module imports neither JAX nor NumPyro (the online path
stays light); it also holds the boundary checks both paths share and the helper
:func:`goal_skill_log_weights`.

Shapes: ``G`` goals, ``K`` skills; the joint belief is ``[G, K]``.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from beliefgate.models.checks import as_array
from beliefgate.models.errors import (
    BeliefInputError,
    InvalidParameterError,
    NonFiniteLoglikError,
    ShapeMismatchError,
)
from beliefgate.models.transitions.hazard import forced_switch, hazard_sticky, log_transition


class GoalPriorError(BeliefInputError):
    """The goal prior cannot be normalised (negative, NaN/inf, or all zero)."""


class GoalSkillPriorError(BeliefInputError):
    """At some step a goal leaves no feasible skill with positive weight (its skill prior is undefined)."""


# --------------------------------------------------------------------------------------
# The forward step, written once over xp (numpy or jax.numpy)
# --------------------------------------------------------------------------------------


def log_sum_exp(xp, x, axis=None, keepdims: bool = False):
    """``log sum exp(x)`` shifted by the finite maximum (``-inf`` when every entry is ``-inf``)."""
    top = xp.max(x, axis=axis, keepdims=True)
    top = xp.where(xp.isfinite(top), top, 0.0)
    out = xp.log(xp.sum(xp.exp(x - top), axis=axis, keepdims=True)) + top
    if keepdims:
        return out
    return out.reshape(()) if axis is None else xp.squeeze(out, axis=axis)


def goal_skill_prior(xp, log_weights):
    """``pi(k | g)`` [..., G, K]: each goal's row of log-weights normalised over all skills
    (``-inf`` weight: probability 0). Feasibility enters in the predict, as in the skill model."""
    return xp.exp(log_weights - log_sum_exp(xp, log_weights, axis=-1, keepdims=True))


def redraw_probability(xp, goal_hazard, goal_change):
    """``r = 1 - (1 - eta)(1 - c)``: the goal is redrawn unprompted (``eta``) or because the
    domain flagged a possible change (``c``) after the previous step."""
    return 1.0 - (1.0 - goal_hazard) * (1.0 - goal_change)


def goal_predict(xp, log_joint, log_rho, log_weights, feasible, hazard, redraw, reset):
    """O(G K) predict: ``log p(g_t, k_t | a_{<t})`` [G, K] from ``log p(g_{t-1}, k_{t-1} | a_{<t})``.

    With ``b`` the previous joint (scaled by its maximum and normalised), ``m(g) = sum_k b(g, k)``,
    ``pi = goal_skill_prior(log_weights)``, ``F_g = forced_switch(pi_g, f)`` and
    ``S_g = hazard_sticky(b(g, .) / m(g), pi_g, f, h)`` (the skill model's switching with the
    goal's skill prior)::

        pred(g, k) = (1 - r) m(g) [S_g(k) or F_g(k) after a completion] + r rho(g) F_g(k)

    A redrawn goal (probability ``r``) draws its skill afresh. ``-inf`` on infeasible skills.
    """
    top = xp.max(log_joint)
    b = xp.exp(log_joint - top)
    b = b / b.sum()
    mass = b.sum(axis=-1, keepdims=True)  # [G, 1]
    safe = xp.where(mass > 0, mass, 1.0)
    pi = goal_skill_prior(xp, log_weights)
    f = feasible.astype(pi.dtype)
    sticky, _, _ = hazard_sticky(xp, b / safe, pi, f, hazard)
    forced = forced_switch(xp, pi, f)
    keep = xp.where(reset, forced, sticky)
    rho = xp.exp(log_rho)[:, None]
    pred = (1.0 - redraw) * mass * keep + redraw * rho * forced
    ok = pred > 0
    return xp.where(ok, xp.log(xp.where(ok, pred, 1.0)), -xp.inf)


def goal_correct(xp, log_pred, loglik, goal_loglik):
    """Bayes correction in log space: ``(log_post [G, K], log_z)`` with
    ``log_z = log sum_{g,k} pred(g, k) exp(loglik(k) + goal_loglik(g))`` (``-inf``: impossible)."""
    log_joint = log_pred + loglik[None, :] + goal_loglik[:, None]
    log_z = log_sum_exp(xp, log_joint)
    return log_joint - log_z, log_z


def goal_step(xp, log_joint, reset, change, log_rho, log_weights, loglik, goal_loglik, feasible,
              hazard, goal_hazard):
    """One forward step, predict + correct: ``(log_pred, log_post, log_z)``.

    ``log_joint`` [G, K]: the previous posterior; ``reset``: the previous step completed a
    skill (or this is the first step); ``change``: the domain's "goal may have changed"
    probability of the previous step; the rest are this step's rows. The carried state's
    next ``reset`` and ``change`` are this step's ``completed >= 0`` and ``goal_change``."""
    redraw = redraw_probability(xp, goal_hazard, change)
    log_pred = goal_predict(xp, log_joint, log_rho, log_weights, feasible, hazard, redraw, reset)
    log_post, log_z = goal_correct(xp, log_pred, loglik, goal_loglik)
    return log_pred, log_post, log_z


def initial_log_joint(xp, log_rho, num_skills: int):
    """The state before the first step: goal marginal ``rho``, skills uniform (the first predict
    is a forced switch, so only the goal marginal matters)."""
    return log_rho[:, None] + xp.zeros((1, num_skills)) - math.log(num_skills)


def goal_log_transition(xp, log_rho, log_weights, feasible, hazard, redraw, reset):
    """The dense log transition ``log T[g', k', g, k]`` [G, K, G, K] into a step (offline, O(G^2 K^2)).

    ``T = (1 - r) [g = g'] S_g(k', k) + r rho(g) F_g(k)`` with ``S_g`` the hazard model's
    matrix (``hazard.log_transition``: forced rows after a completion or from an infeasible
    skill) under the goal's skill prior; tested equal to :func:`goal_predict`."""
    num_goals = log_weights.shape[-2]
    log_pi = log_weights - log_sum_exp(xp, log_weights, axis=-1, keepdims=True)
    skill = xp.stack([xp.exp(log_transition(xp, log_pi[g], feasible, hazard, reset))
                      for g in range(num_goals)])  # [G, K', K]
    forced = forced_switch(xp, xp.exp(log_pi), feasible.astype(log_pi.dtype))  # [G, K]
    eye = xp.eye(num_goals, dtype=log_pi.dtype)
    stay = (1.0 - redraw) * eye[:, None, :, None] * xp.transpose(skill, (1, 0, 2))[None]
    fresh = redraw * (xp.exp(log_rho)[:, None] * forced)[None, None]
    total = stay + fresh
    ok = total > 0
    return xp.where(ok, xp.log(xp.where(ok, total, 1.0)), -xp.inf)


def goal_log_initial(xp, log_rho, log_weights, feasible):
    """``log p(g_0, k_0) = log rho(g) + log F_g(k)`` [G, K]."""
    pi = goal_skill_prior(xp, log_weights)
    init = xp.exp(log_rho)[:, None] * forced_switch(xp, pi, feasible.astype(pi.dtype))
    ok = init > 0
    return xp.where(ok, xp.log(xp.where(ok, init, 1.0)), -xp.inf)


def marginals(xp, log_joint):
    """``(goal posterior [G], skill posterior [K])`` of a normalised log joint [G, K]."""
    joint = xp.exp(log_joint)
    return joint.sum(axis=-1), joint.sum(axis=-2)


# --------------------------------------------------------------------------------------
# Boundary checks (NumPy, host side), shared by the online filter and the data
# --------------------------------------------------------------------------------------


def _first(mask) -> tuple:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def check_goal_prior(goal_prior, num_goals: Optional[int] = None, name: str = "goal_prior") -> np.ndarray:
    """Probability weights ``[..., G]`` (>= 0, finite, positive sum per row) -> normalised ``log rho``.
    ``None`` with ``num_goals``: uniform. Raises :class:`GoalPriorError` naming ``name``."""
    if goal_prior is None:
        if num_goals is None or num_goals < 1:
            raise GoalPriorError(f"{name}: give the prior or a number of goals >= 1")
        return np.full(num_goals, -math.log(num_goals))
    rho = as_array(goal_prior, name, float)
    if rho.ndim < 1 or rho.shape[-1] == 0:
        raise ShapeMismatchError(f"{name} must have a goal axis [..., G], got shape {rho.shape}")
    if num_goals is not None and rho.shape[-1] != num_goals:
        raise ShapeMismatchError(f"{name} must have {num_goals} goals, got shape {rho.shape}")
    if not np.all(np.isfinite(rho)) or np.any(rho < 0):
        raise GoalPriorError(f"{name} must be finite weights >= 0, got {rho.tolist()}")
    total = rho.sum(-1, keepdims=True)
    if np.any(total <= 0):
        raise GoalPriorError(f"{name} cannot be normalised: its weights sum to 0")
    with np.errstate(divide="ignore"):
        return np.log(rho) - np.log(total)


def check_log_weights(log_weights, lead: tuple, num_skills: int, feasible: np.ndarray,
                      valid: Optional[np.ndarray] = None, name: str = "log_weights") -> np.ndarray:
    """Goal-conditioned skill log-weights ``lead + (G, K)``: no NaN/``+inf``, and at every
    (valid) step every goal gives some feasible skill a finite weight."""
    w = as_array(log_weights, name, float)
    if w.ndim != len(lead) + 2 or w.shape[:len(lead)] != lead or w.shape[-1] != num_skills or w.shape[-2] < 1:
        raise ShapeMismatchError(f"{name} must have shape {lead + ('G', num_skills)}, got {w.shape}")
    keep = np.ones(lead, bool) if valid is None else valid
    bad = (np.isnan(w) | (w == np.inf)) & keep[..., None, None]
    if np.any(bad):
        raise NonFiniteLoglikError(f"{name} must not contain NaN or +inf (first at {_first(bad)})")
    usable = np.isfinite(w) & feasible[..., None, :]
    empty = ~np.any(usable, axis=-1) & keep[..., None]
    if np.any(empty):
        where = _first(empty)
        at = f" at step {where[:-1] if len(where) > 2 else where[0]}" if len(where) > 1 else ""
        raise GoalSkillPriorError(f"{name}: goal {where[-1]} gives no feasible skill a finite weight{at}")
    return w


def check_goal_change(goal_change, lead: tuple, name: str = "goal_change") -> np.ndarray:
    """Per-step probabilities in [0, 1] (0 by default)."""
    if goal_change is None:
        return np.zeros(lead)
    c = as_array(goal_change, name, float)
    if c.shape != lead:
        raise ShapeMismatchError(f"{name} must have shape {lead}, got {c.shape}")
    if not np.all(np.isfinite(c)) or np.any((c < 0) | (c > 1)):
        raise InvalidParameterError(f"{name} must be probabilities in [0, 1], got {c.tolist()}")
    return c


def check_goal_loglik(goal_loglik, shape: tuple, name: str = "goal_loglik") -> np.ndarray:
    """Direct goal evidence ``shape`` (zeros by default): ``-inf`` allowed, NaN/``+inf`` not."""
    if goal_loglik is None:
        return np.zeros(shape)
    gl = as_array(goal_loglik, name, float)
    if gl.shape != shape:
        raise ShapeMismatchError(f"{name} must have shape {shape}, got {gl.shape}")
    bad = np.isnan(gl) | (gl == np.inf)
    if np.any(bad):
        raise NonFiniteLoglikError(f"{name} must not contain NaN or +inf (first at {_first(bad)})")
    return gl


def goal_skill_log_weights(serves, concentration: float = 10.0) -> np.ndarray:
    """``log pi(k | g)`` up to a constant from a table ``serves[..., g, k]`` (bool, or counts >= 0):
    ``pi(k | g) ∝ 1 + concentration * serves[g, k]``.

    A skill that serves goal ``g`` is ``1 + concentration`` times as likely to be chosen under
    ``g`` as one that does not; ``concentration = 0`` makes the goal uninformative. Counts
    weigh proportionally (e.g. the number of a recipe's ingredients still missing)."""
    c = float(concentration)
    if not math.isfinite(c) or c < 0:
        raise InvalidParameterError(f"concentration must be a finite number >= 0, got {concentration!r}")
    table = as_array(serves, "serves")
    if table.ndim < 2 or 0 in table.shape:
        raise ShapeMismatchError(f"serves must be a [..., G, K] table, got shape {table.shape}")
    if table.dtype != np.bool_ and not np.issubdtype(table.dtype, np.number):
        raise ShapeMismatchError(f"serves must be boolean or numbers, got dtype {table.dtype}")
    table = table.astype(float)
    if not np.all(np.isfinite(table)) or np.any(table < 0):
        raise InvalidParameterError("serves must be finite and >= 0")
    return np.log1p(c * table)


__all__ = [
    "GoalPriorError", "GoalSkillPriorError",
    "log_sum_exp", "goal_skill_prior", "redraw_probability", "goal_predict", "goal_correct", "goal_step",
    "initial_log_joint", "goal_log_transition", "goal_log_initial", "marginals",
    "check_goal_prior", "check_log_weights", "check_goal_change", "check_goal_loglik", "goal_skill_log_weights",
]
