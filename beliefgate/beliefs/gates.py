"""Gates: wrappers with their own counters around the online skill filter.

A gate never changes the belief. It reads what the filter computed for one step
(the pre-update belief, the likelihood of the new action) and keeps its own small
state (counters, a cooldown clock), in the manner of optax's ``apply_if_finite``.
Everything here is a pure function of NamedTuples and NumPy arrays; the
:class:`beliefgate.beliefs.gate.Gate` class binds the configuration once and swaps
the states after each step.

Two gates are defined.

Stable-MAP contradiction gate (SPEC §4, BayesBelief Eq. 10-12)
    Evaluated on the *pre-update* belief ``b`` of step ``t`` (the prediction for
    ``z_t`` before ``a_t`` is conditioned on)::

        m_t      = argmax_k b(k)                 (lowest index on ties)
        stable_t = stable_{t-1} + 1 if m_t == m_{t-1} else 0      (stable_0 = 0)
        conf_t   = b(m_t)
        l_t      = exp(lambda * r_t(m_t))        r_t(k) = log [pi(a_t|k) / max_a pi(a|k)] <= 0
        contradiction_t = w_t > 0 and l_t < tau_obs
        interrupt_t     = contradiction_t and stable_t >= n_stable and conf_t >= c_floor
                          and t - t_last_interrupt >= cooldown and ego_active

    ``r_t`` is supplied by the caller, so the same gate serves full action tables
    (best consistent action under ``m``) and bare log-likelihood vectors
    (``loglik[m] - max_k loglik[k]``).

Change-point gate (beyond the paper)
    The instantaneous switch probability ``P(z_t != z_{t-1} | a_{0:t})`` of the
    hazard filter hovers near ``h``: one action rarely proves a switch, and later
    actions that do prove it never revise that filtered quantity. This gate runs
    a run-length-augmented forward filter over ``(z_t, r_t)`` with
    ``r_t`` = steps since the last hidden switch, capped at ``L``
    (``r_t = 0``: switched at ``t``; ``r_t = L``: no switch in the last ``L`` steps).
    Its statistic::

        p_t = P(r_t < L | a_{0:t})    # a hidden switch happened within the last L steps

    accumulates the evidence of every action since the switch, so it climbs well
    above ``h`` after a real switch and falls back once the switch is more than
    ``L`` steps old. The gate fires when ``p_t >= threshold`` while armed, then
    disarms until ``p_t < release`` (hysteresis) and honours its own cooldown,
    so one switch fires once. A *visible* completion is not a hidden switch: the
    run length restarts at ``L``. The marginal of the augmented filter over ``r``
    is exactly the hazard model of ``docs/model.md``.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional, Union

import numpy as np

from beliefgate.models.forward import HazardStep, condition, hazard_constants, hazard_step

#: ``t_last`` value of a gate that never fired (any ``t - NEVER`` exceeds any cooldown).
NEVER = -(1 << 62)

# Reasons a stable-MAP interrupt did not fire, in the order the conditions are checked.
REASON_EXCLUDED = "excluded_step"  # weight 0: the step carries no evidence
REASON_NO_CONTRADICTION = "no_contradiction"
REASON_UNSTABLE = "unstable_map"
REASON_LOW_CONFIDENCE = "low_confidence"
REASON_COOLDOWN = "cooldown"
REASON_EGO_IDLE = "ego_idle"
# Reasons a change-point detection did not fire.
REASON_BELOW_THRESHOLD = "below_threshold"
REASON_DISARMED = "disarmed"

# --------------------------------------------------------------------------- stable-MAP gate


class StableMapConfig(NamedTuple):
    """Bound, pre-processed parameters of the stable-MAP gate.

    Fields: ``log_tau`` = log tau_obs (``-inf`` for tau_obs = 0: never contradicts);
    ``likelihood_scale`` = lambda >= 0; ``confidence_floor`` = c_floor in [0, 1];
    ``n_stable`` >= 0; ``cooldown`` >= 0 steps.
    """

    log_tau: float
    likelihood_scale: float
    confidence_floor: float
    n_stable: int
    cooldown: int

    @classmethod
    def make(
        cls,
        tau_obs: float,
        likelihood_scale: float,
        confidence_floor: float,
        n_stable: int,
        cooldown: int,
    ) -> "StableMapConfig":
        log_tau = math.log(tau_obs) if tau_obs > 0.0 else -math.inf
        return cls(log_tau, float(likelihood_scale), float(confidence_floor), int(n_stable), int(cooldown))


class StableMapState(NamedTuple):
    """Counters of the stable-MAP gate.

    Fields: ``prev_map`` = m_{t-1} (-1 before the first step); ``stable`` = stable_{t-1};
    ``t_last_interrupt`` = step of the last interrupt or external replan (:data:`NEVER`);
    ``num_contradictions`` / ``num_interrupts`` = totals this episode.
    """

    prev_map: int = -1
    stable: int = 0
    t_last_interrupt: int = NEVER
    num_contradictions: int = 0
    num_interrupts: int = 0


class StableMapInfo(NamedTuple):
    """Diagnostics of one stable-MAP gate evaluation (logged, never fed back).

    ``map_skill`` / ``confidence`` are m_t and b(m_t) of the pre-update belief;
    ``log_l`` = lambda * r_t(m_t) and ``l_t`` = exp(log_l); ``suppressed_reason`` is
    ``None`` when the gate interrupted, else the first failing condition
    (``"excluded_step"``, ``"no_contradiction"``, ``"unstable_map"``,
    ``"low_confidence"``, ``"cooldown"``, ``"ego_idle"``).
    """

    map_skill: int
    confidence: float
    stable: int
    l_t: float
    log_l: float
    contradiction: bool
    interrupt: bool
    suppressed_reason: Optional[str]


def stable_map_init() -> StableMapState:
    """Counters at the start of an episode."""
    return StableMapState()


def stable_map_update(
    config: StableMapConfig,
    state: StableMapState,
    t: int,
    prior: np.ndarray,
    score: Optional[np.ndarray],
    top: Union[np.ndarray, float],
    weight: float,
    ego_active: bool = True,
) -> tuple[StableMapState, StableMapInfo]:
    """Evaluate the gate at step ``t`` on the pre-update belief ``prior`` (float[K]).

    The log ratio of ``l_t`` under skill ``k`` is ``score[k] - top[k]`` (``top`` may
    be one float for every skill), e.g. ``score[k] = log pi(a_t | s_t, k)`` and
    ``top[k] = log max_a pi(a | s_t, k)``; it must be ``<= 0`` (``-inf`` allowed).
    ``score = None`` means undefined (an excluded step whose likelihoods are all
    ``-inf``): then ``l_t = 1``. Returns the new counters and the step's
    :class:`StableMapInfo`.
    """
    m = int(prior.argmax())
    conf = float(prior[m])
    stable = state.stable + 1 if m == state.prev_map else 0
    lam = config.likelihood_scale
    if lam != 0.0 and score is not None:
        log_l = lam * (float(score[m]) - (top if type(top) is float else float(top[m])))
    else:
        log_l = 0.0
    contradiction = weight > 0.0 and log_l < config.log_tau
    reason: Optional[str]
    if not contradiction:
        reason = REASON_NO_CONTRADICTION if weight > 0.0 else REASON_EXCLUDED
    elif stable < config.n_stable:
        reason = REASON_UNSTABLE
    elif conf < config.confidence_floor:
        reason = REASON_LOW_CONFIDENCE
    elif t - state.t_last_interrupt < config.cooldown:
        reason = REASON_COOLDOWN
    elif not ego_active:
        reason = REASON_EGO_IDLE
    else:
        reason = None
    interrupt = reason is None
    new_state = StableMapState(
        m,
        stable,
        t if interrupt else state.t_last_interrupt,
        state.num_contradictions + contradiction,
        state.num_interrupts + interrupt,
    )
    info = StableMapInfo(m, conf, stable, math.exp(log_l), log_l, contradiction, interrupt, reason)
    return new_state, info


def stable_map_notify_replanned(state: StableMapState, t: int) -> StableMapState:
    """Start the cooldown at step ``t`` as if the gate had interrupted there."""
    return state._replace(t_last_interrupt=t)


# --------------------------------------------------------------------------- change-point gate


class ChangePointConfig(NamedTuple):
    """Bound parameters of the change-point gate.

    ``hazard`` = h of the run-length filter; ``horizon`` = L >= 1 (steps a switch
    counts as recent); ``threshold`` in (0, 1] fires the gate; ``release`` in
    [0, threshold] re-arms it; ``cooldown`` >= 0 steps between two firings.
    """

    hazard: float
    horizon: int
    threshold: float
    release: float
    cooldown: int


class ChangePointState(NamedTuple):
    """State of the change-point gate: the run-length filter plus the gate's counters.

    Fields
    ------
    joint : float[L+1, K]
        ``P(r_t = r, z_t = k | a_{0:t})``. Rows ``0..L-1`` form a ring for the run
        lengths ``r < L`` (row ``(head + r) % L`` holds ``r``, so a step moves no data);
        row ``L`` holds ``r = L``: no hidden switch in the last ``L`` steps.
    head : int
        Ring row of run length 0.
    belief : float[K]
        Marginal over run lengths (= the hazard filter's posterior).
    armed : bool
        May fire (re-armed when the statistic falls below ``release``).
    t_last_fire : int
        Step of the last firing or external replan (:data:`NEVER`).
    num_fires : int
        Firings this episode.
    """

    joint: np.ndarray
    head: int
    belief: np.ndarray
    armed: bool = True
    t_last_fire: int = NEVER
    num_fires: int = 0


class ChangePointInfo(NamedTuple):
    """Diagnostics of one change-point evaluation.

    ``prob`` = P(r_t < L | a_{0:t}) (the gate's statistic); ``switch_prob`` =
    P(r_t = 0 | a_{0:t}) = P(z_t != z_{t-1} | a_{0:t}), the instantaneous switch
    probability; ``fired``; ``suppressed_reason`` (``None`` when fired, else
    ``"below_threshold"``, ``"disarmed"`` or ``"cooldown"``).
    """

    prob: float
    switch_prob: float
    fired: bool
    suppressed_reason: Optional[str]


def changepoint_init(num_skills: int, horizon: int) -> ChangePointState:
    """State at the start of an episode (all mass on "no recent switch")."""
    joint = np.zeros((horizon + 1, num_skills))
    joint[horizon] = 1.0 / num_skills
    return ChangePointState(joint, 0, joint[horizon].copy())


def changepoint_joint(state: ChangePointState) -> np.ndarray:
    """``P(r_t = r, z_t = k | a_{0:t})`` as a float[L+1, K] array ordered by ``r``."""
    horizon = state.joint.shape[0] - 1
    order = np.append((state.head + np.arange(horizon)) % horizon, horizon)
    return state.joint[order]


def changepoint_update(
    config: ChangePointConfig,
    state: ChangePointState,
    t: int,
    step: HazardStep,
    pi0: np.ndarray,
    feasible: Optional[np.ndarray],
    loglik: Optional[np.ndarray],
) -> tuple[ChangePointState, ChangePointInfo]:
    """Advance the run-length filter by one step and evaluate the gate.

    ``step`` is :func:`hazard_step` applied to ``state.belief`` with this step's
    ``pi0``, ``feasible`` and ``loglik``. Every run length of skill ``j`` shares
    the stay factor and the evidence, so with ``keep = stay * factor``::

        P'(r=0, j)   = switch(j) * factor(j)
        P'(r+1, j)   = P(r, j) * keep(j)                 (r + 1 < L)
        P'(L, j)     = (P(L-1, j) + P(L, j)) * keep(j)

    A restart (``step.stay is None``) puts all mass on ``r = L``. If the
    observation is impossible under the filter's own prediction (only possible
    with ``h = 0``) the filter restarts with a certain switch at ``t``.
    """
    horizon = state.joint.shape[0] - 1
    if step.stay is None:  # episode start or visible completion: no hidden switch
        joint, head, enter = np.zeros_like(state.joint), 0, None
        joint[horizon] = step.post
    elif step.log_z == -math.inf:
        step = hazard_step(step.prior, pi0, feasible, True, config.hazard, loglik)
        joint, head = np.zeros_like(state.joint), 0
        enter = joint[0] = step.post
    else:
        f = step.factor
        if f is None:
            keep, enter = step.stay, step.switch
        else:
            keep, enter = step.stay * f, step.switch * f
        head = (state.head - 1) % horizon  # ring row of run length L-1, about to age out
        joint = state.joint * keep
        joint[horizon] += joint[head]
        joint[head] = enter
    settled = joint[horizon]
    prob = 0.0 if enter is None else max(0.0, 1.0 - sum(settled.tolist()))
    switch_prob = sum(enter.tolist()) if enter is not None else 0.0
    armed = state.armed or prob < config.release
    reason: Optional[str]
    if prob < config.threshold:
        reason = REASON_BELOW_THRESHOLD
    elif not armed:
        reason = REASON_DISARMED
    elif t - state.t_last_fire < config.cooldown:
        reason = REASON_COOLDOWN
    else:
        reason = None
    fired = reason is None
    new_state = ChangePointState(
        joint,
        head,
        step.post,
        armed and not fired,
        t if fired else state.t_last_fire,
        state.num_fires + fired,
    )
    return new_state, ChangePointInfo(prob, switch_prob, fired, reason)


def changepoint_notify_replanned(state: ChangePointState, t: int) -> ChangePointState:
    """Start the change-point cooldown at step ``t``."""
    return state._replace(t_last_fire=t)


__all__ = [
    "NEVER",
    "condition",
    "StableMapConfig",
    "StableMapState",
    "StableMapInfo",
    "stable_map_init",
    "stable_map_update",
    "stable_map_notify_replanned",
    "HazardStep",
    "hazard_constants",
    "hazard_step",
    "ChangePointConfig",
    "ChangePointState",
    "ChangePointInfo",
    "changepoint_init",
    "changepoint_joint",
    "changepoint_update",
    "changepoint_notify_replanned",
]
