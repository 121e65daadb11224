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

One rule, two shapes
    Each gate splits into its belief side (the MAP, its stable count and log ratio;
    the run-length filter and its statistic) and its *decision rule*
    (:func:`stable_map_decide`, :func:`changepoint_decide`): the ordered conditions
    and the counters. The rules are written once on array-likes. Called with Python
    scalars they are the online gate (the ``*_update`` functions call them every
    step); called with configuration fields and counters that are NumPy arrays of
    shape ``[C]`` they evaluate ``C`` configurations on one belief sequence at once,
    element for element the same (``beliefgate.eval.sensitivity`` replays sweeps this
    way; ``tests/test_gates.py`` checks the equality). Called with JAX arrays they run
    under ``jax.jit``/``jax.vmap``: :func:`stable_map_update`, the run-length filter
    :func:`changepoint_filter` with :func:`changepoint_decide`, and :func:`cusum_update`
    are what :func:`beliefgate.beliefs.wrappers.gate_wrapper` wraps around the JAX filter
    (``tests/test_gate_wrappers.py``). Only operators that Python scalars, NumPy and JAX
    arrays share are used; :func:`where`, :func:`first_failure` and small one-line helpers
    dispatch the rest (a Python branch on a Python flag, ``where`` on a traced one).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional, Union

import numpy as np

from beliefgate.beliefs.errors import InvalidParameterError
from beliefgate.models.forward import condition
from beliefgate.models.transitions.hazard import HazardStep, hazard_step

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

#: The stable-MAP gate's conditions in the order they are checked (a suppressed step reports
#: the first that fails).
STABLE_MAP_REASONS = (REASON_EXCLUDED, REASON_NO_CONTRADICTION, REASON_UNSTABLE, REASON_LOW_CONFIDENCE,
                      REASON_COOLDOWN, REASON_EGO_IDLE)
_SM_CONTRADICTION = STABLE_MAP_REASONS[:2]
#: The change-point gate's conditions in the order they are checked.
CHANGEPOINT_REASONS = (REASON_BELOW_THRESHOLD, REASON_DISARMED, REASON_COOLDOWN)
#: The CUSUM gate's reasons in the order they are checked (an excluded step, a sum below ``h``).
CUSUM_REASONS = (REASON_EXCLUDED, REASON_BELOW_THRESHOLD)
#: Every reason a gate reports, once each: the combined ``suppressed_reason`` of a driver
#: (:meth:`Drive.reason_code`) under ``jax.jit`` is an int8 code into it, ``len(GATE_REASONS)``
#: where the gate interrupted (:func:`reason_names` decodes it).
GATE_REASONS = tuple(dict.fromkeys(STABLE_MAP_REASONS + CHANGEPOINT_REASONS + CUSUM_REASONS))

# --------------------------------------------------------------------------- scalar / [C] helpers

_ndarray = np.ndarray
_INF = math.inf
_exp = math.exp
_np_exp = np.exp
#: Builds a NamedTuple from a tuple of *all* its fields, in order, without the generated
#: ``__new__``'s Python frame (~0.1 us a record on the per-step path).
_new = tuple.__new__


_CONCRETE = (bool, int, float, _ndarray, np.bool_, np.integer, np.floating)


def _traced(x) -> bool:
    """``x`` is an array of another namespace (a JAX array or tracer inside ``jit``/``vmap``),
    not a Python scalar or NumPy value: the rules then use that namespace's operations."""
    return not isinstance(x, _CONCRETE)


def _xp(x):
    """The array namespace of a traced ``x`` (``jax.numpy``; imported only when one is met,
    so the NumPy gate never imports JAX)."""
    import jax.numpy as jnp

    return jnp


def where(cond, a, b):
    """``a`` where ``cond`` holds, else ``b``: Python's conditional for a scalar ``cond``,
    :func:`numpy.where` (broadcasting) when ``cond`` is a NumPy array, ``jax.numpy.where``
    when it is a JAX array or tracer."""
    if cond is True:  # the online gate's Python bools first
        return a
    if cond is False:
        return b
    if cond.__class__ is _ndarray:
        return np.where(cond, a, b)
    if not _traced(cond):
        return a if cond else b
    return _xp(cond).where(cond, a, b)


def logical_not(x):
    """``not x`` of a bool, or element-wise of a bool array (``~`` would turn ``True`` into -2)."""
    return x ^ True


def exp(x):
    """``exp`` of a float (:func:`math.exp`) or element-wise of an array (NumPy or JAX)."""
    cls = x.__class__
    if cls is float:  # the online gate's case, checked first: no isinstance on the hot path
        return _exp(x)
    if cls is _ndarray:
        return _np_exp(x)
    if _traced(x):
        return _xp(x).exp(x)
    return _exp(x)


def first_failure(reasons, *oks):
    """The first failing condition: ``oks`` are the conditions, in order, and
    ``reasons[i]`` names condition ``i``.

    Scalar conditions: ``(reasons[i], False)`` for the first ``oks[i]`` that is false
    (nothing after it is looked at), else ``(None, True)``. When a condition is an
    array (one entry per configuration) the answer is element-wise: ``(codes,
    passed)``, ``codes`` an int8 array holding per entry the index of the first
    failing condition (``len(reasons)`` where every condition holds; decode with
    :func:`reason_names`) and ``passed`` the bool array "every condition holds". A
    condition that fails for every entry before any entry has failed gives the
    scalar answer (it broadcasts).
    """
    i = 0
    for ok in oks:
        if ok is not True:
            if ok is False:
                return reasons[i], False
            if ok.__class__ is _ndarray or _traced(ok):
                return _first_failure_rows(reasons, oks)
            if not ok:
                return reasons[i], False
        i += 1
    return None, True


def _first_failure_rows(reasons, oks):
    passed = True  # every condition so far holds: a bool, then a bool array
    count = _ZERO  # per entry, how many leading conditions hold (= the first failing one)
    for i, ok in enumerate(oks):
        if ok is not True:
            if passed is True and ok.__class__ is _ndarray and not ok.any():
                return reasons[i], False  # fails for every entry, as one scalar condition would
            passed = passed & ok
        count = count + passed
    return count, passed


_ZERO = np.int8(0)


def reason_names(reasons, suppressed):
    """The reasons of a batched decision as an object array (``None`` where the gate
    fired): ``suppressed`` is a ``suppressed_reason`` of :func:`stable_map_decide` /
    :func:`changepoint_decide` (int8 codes into ``reasons``, or one reason for all)."""
    if suppressed is None or isinstance(suppressed, str):
        return suppressed
    return np.array((*reasons, None), dtype=object)[suppressed]


# --------------------------------------------------------------------------- stable-MAP gate


class StableMapConfig(NamedTuple):
    """Bound, pre-processed parameters of the stable-MAP gate.

    Fields: ``log_tau`` = log tau_obs (``-inf`` for tau_obs = 0: never contradicts);
    ``likelihood_scale`` = lambda >= 0; ``confidence_floor`` = c_floor in [0, 1];
    ``n_stable`` >= 0; ``cooldown`` >= 0 steps. Each field is a scalar (one
    configuration) or a float/int64 array of shape ``[C]`` (``C`` configurations,
    see :func:`stable_map_decide`).
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
        """Bind scalars, or ``[C]`` sequences for ``C`` configurations at once (``log tau``
        then comes from :func:`math.log` per entry, bit for bit the scalar value)."""
        if np.ndim(tau_obs) == 0:
            log_tau = math.log(tau_obs) if tau_obs > 0.0 else -math.inf
            return cls(log_tau, float(likelihood_scale), float(confidence_floor), int(n_stable), int(cooldown))
        tau = np.asarray(tau_obs, dtype=np.float64)
        log_tau = np.array([math.log(x) if x > 0.0 else -math.inf for x in tau.tolist()]).reshape(tau.shape)
        return cls(log_tau, np.asarray(likelihood_scale, dtype=np.float64),
                   np.asarray(confidence_floor, dtype=np.float64), _as_int_array(n_stable), _as_int_array(cooldown))


def _as_int_array(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.int64)


class StableMapState(NamedTuple):
    """Counters of the stable-MAP gate.

    Fields: ``prev_map`` = m_{t-1} (-1 before the first step); ``stable`` = stable_{t-1};
    ``t_last_interrupt`` = step of the last interrupt or external replan (:data:`NEVER`);
    ``num_contradictions`` / ``num_interrupts`` = totals this episode. With ``[C]``
    configurations the last three become int64 arrays of shape ``[C]`` (the scalar
    start values broadcast), ``prev_map`` and ``stable`` stay shared.
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


def stable_map_decide(
    config: StableMapConfig,
    state: StableMapState,
    t: int,
    map_skill: int,
    confidence: float,
    stable: int,
    ratio: float,
    weight: float,
    ego_active=True,
) -> tuple[StableMapState, StableMapInfo]:
    """The stable-MAP decision rule at step ``t``, for one configuration or ``C`` at once.

    The belief side is shared: ``map_skill`` = m_t, ``confidence`` = b(m_t), ``stable``
    = stable_t, ``ratio`` = r_t (the log ratio of ``l_t`` at lambda = 1, 0 where
    undefined; :func:`stable_map_update` computes them from the pre-update belief) and
    ``weight``. ``config`` fields and the
    counters of ``state`` are scalars (one configuration) or ``[C]`` arrays, and so is
    every field of the result: ``log_l = lambda * r_t`` (0 for lambda = 0),
    ``contradiction``, ``interrupt``, the counters and ``suppressed_reason`` (with
    arrays: int8 codes into :data:`STABLE_MAP_REASONS`, ``len(STABLE_MAP_REASONS)``
    where the gate fired, or one reason for all; :func:`reason_names` decodes them).
    ``l_t = exp(log_l)`` then comes from :func:`numpy.exp`, which may differ from the
    scalar :func:`math.exp` in the last bit (nothing is decided on it). Steps with
    ``weight = 0`` carry no evidence and never contradict.
    """
    lam = config.likelihood_scale
    if ratio.__class__ is not float and _traced(ratio):  # JAX: both cases, picked per element
        possible = ratio > -_INF
        log_l = where(possible, lam * where(possible, ratio, 0.0) + 0.0, where(lam != 0.0, -_INF, 0.0))
    elif ratio > -_INF:
        log_l = lam * ratio + 0.0  # + 0.0: lambda = 0 gives 0.0, not -0.0
    else:  # an impossible action: -inf, or 0 for lambda = 0 (not NaN)
        log_l = where(lam != 0.0, -_INF, 0.0)
    evidence = weight > 0.0  # the belief side is shared: one bool for every configuration
    if evidence is True:
        contradiction = log_l < config.log_tau
    elif evidence is False or not _traced(evidence):
        contradiction = (log_l < config.log_tau) if evidence else False
    else:
        contradiction = evidence & (log_l < config.log_tau)
    reason, interrupt = first_failure(_SM_CONTRADICTION, evidence, contradiction)
    if interrupt is False:  # no configuration contradicts: the counters stay
        new_state = _new(StableMapState, (map_skill, stable, state.t_last_interrupt,
                                          state.num_contradictions, state.num_interrupts))
    else:  # some configuration contradicts: the other conditions decide
        reason, interrupt = first_failure(  # in the order of STABLE_MAP_REASONS
            STABLE_MAP_REASONS,
            evidence,
            contradiction,
            stable >= config.n_stable,
            confidence >= config.confidence_floor,
            t - state.t_last_interrupt >= config.cooldown,
            ego_active,
        )
        new_state = _new(StableMapState, (
            map_skill,
            stable,
            where(interrupt, t, state.t_last_interrupt),
            state.num_contradictions + contradiction,
            state.num_interrupts + interrupt,
        ))
    l_t = _exp(log_l) if log_l.__class__ is float else exp(log_l)  # a float: math.exp without a call of exp()
    info = _new(StableMapInfo, (map_skill, confidence, stable, l_t, log_l, contradiction, interrupt, reason))
    return new_state, info


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
    :class:`StableMapInfo`. The belief side is computed here (``m_t = argmax prior``,
    lowest index on ties; the stable count; ``r_t = score[m_t] - top[m_t]``), the
    decision by :func:`stable_map_decide`.
    """
    if prior.__class__ is _ndarray:  # NumPy: Python's max/index on the list (~4x np.argmax at K ~ 6)
        values = prior.tolist()  # finite (the step was checked): max/index = argmax, lowest index on ties
        confidence = max(values)
        m = values.index(confidence)
        stable = state.stable + 1 if m == state.prev_map else 0
        if score is None:
            ratio = 0.0
        else:
            ratio = float(score[m]) - (top if type(top) is float else float(top[m]))
    else:  # JAX (under jit / vmap): the same quantities with the array namespace
        xp = _xp(prior)
        m = xp.argmax(prior)  # lowest index on ties, as above
        confidence = prior[m]
        stable = xp.where(m == state.prev_map, state.stable + 1, 0)
        if score is None:
            ratio = 0.0
        else:
            ratio = score[m] - (top if xp.ndim(top) == 0 else top[m])
    return stable_map_decide(config, state, t, m, confidence, stable, ratio, weight, ego_active)


def stable_map_notify_replanned(state: StableMapState, t: int, when=True) -> StableMapState:
    """Start the cooldown at step ``t`` as if the gate had interrupted there (only where
    ``when`` holds: a bool, or a ``[C]`` mask over configurations)."""
    if when is True:
        return state._replace(t_last_interrupt=t)
    return state._replace(t_last_interrupt=where(when, t, state.t_last_interrupt))


# --------------------------------------------------------------------------- change-point gate


class ChangePointConfig(NamedTuple):
    """Bound parameters of the change-point gate.

    ``hazard`` = h of the run-length filter; ``horizon`` = L >= 1 (steps a switch
    counts as recent); ``threshold`` in (0, 1] fires the gate; ``release`` in
    [0, threshold] re-arms it; ``cooldown`` >= 0 steps between two firings. The
    decision fields (``threshold``, ``release``, ``cooldown``) may be ``[C]`` arrays
    (see :func:`changepoint_decide`).
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


def _set_row(buf, pos, row):
    """``buf`` with row ``pos`` set to ``row``: in place for a NumPy array the caller owns (a fresh
    result), a functional ``.at[].set`` for a JAX array."""
    if buf.__class__ is _ndarray:
        buf[pos] = row
        return buf
    return buf.at[pos].set(row)


def _total(x):
    """``sum(x)``: Python's sum of the list for a NumPy vector (as the online gate always summed),
    the array method otherwise."""
    return sum(x.tolist()) if x.__class__ is _ndarray else x.sum()


def changepoint_filter(xp, joint, head, restart, impossible, post, stay=None, switch=None, factor=None):
    """One step of the run-length filter, written once over ``xp`` (``numpy`` or ``jax.numpy``):
    ``(joint, head, prob, switch_prob)``.

    ``joint``/``head``: the ring of :class:`ChangePointState`; ``stay``, ``switch``: the hazard
    predict's factors (:func:`~beliefgate.models.transitions.hazard.hazard_sticky`) and ``factor``
    = ``exp(loglik - log_z)`` (``None``: no evidence), so with ``keep = stay * factor``::

        P'(r=0, j)   = switch(j) * factor(j)
        P'(r+1, j)   = P(r, j) * keep(j)                 (r + 1 < L)
        P'(L, j)     = (P(L-1, j) + P(L, j)) * keep(j)

    ``restart`` (episode start, visible completion) puts the posterior ``post`` on ``r = L``;
    ``impossible`` (the observation ruled out by the prediction, only with ``h = 0``) restarts with a
    certain switch: ``post`` (then the forced-switch posterior) on ``r = 0``. The flags are Python
    bools (the NumPy gate: only the branch taken is computed) or traced booleans (all three are
    computed and selected). ``prob = P(r < L)``, ``switch_prob = P(r = 0)``.
    """
    horizon = joint.shape[0] - 1
    if restart is True:
        return _set_row(xp.zeros_like(joint), horizon, post), 0, 0.0, 0.0
    if impossible is True:
        return _set_row(xp.zeros_like(joint), 0, post), 0, 1.0, _total(post)
    if factor is None:
        keep, enter = stay, switch
    else:
        keep, enter = stay * factor, switch * factor
    new_head = (head - 1) % horizon  # ring row of run length L-1, about to age out
    out = joint * keep
    settled = out[horizon] + out[new_head]
    # Writing two rows and summing two vectors are the only operations the namespaces spell
    # differently; they are picked once here (not by a helper call each: ~0.6 us a NumPy step).
    if out.__class__ is _ndarray:  # NumPy: rows in place (``out`` is fresh), Python's sums of the lists
        out[horizon] = settled
        out[new_head] = enter
        prob = 1.0 - sum(settled.tolist())
        prob = prob if prob > 0.0 else 0.0
        switch_prob = sum(enter.tolist())
    else:
        out = out.at[horizon].set(settled).at[new_head].set(enter)
        prob = xp.maximum(0.0, 1.0 - settled.sum())
        switch_prob = enter.sum()
    if restart is False and impossible is False:
        return out, new_head, prob, switch_prob
    zeros = xp.zeros_like(joint)
    out = xp.where(restart, _set_row(zeros, horizon, post), xp.where(impossible, _set_row(zeros, 0, post), out))
    head = xp.where(restart | impossible, 0, new_head)
    prob = xp.where(restart, 0.0, xp.where(impossible, 1.0, prob))
    switch_prob = xp.where(restart, 0.0, xp.where(impossible, post.sum(), switch_prob))
    return out, head, prob, switch_prob


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
    prior, post, log_z, stay, switch, factor = step
    if stay is None:  # episode start or visible completion: no hidden switch
        joint, head, prob, switch_prob = changepoint_filter(np, state.joint, state.head, True, False, post)
    elif log_z == -_INF:
        post = hazard_step(prior, pi0, feasible, True, config.hazard, loglik)[1]
        joint, head, prob, switch_prob = changepoint_filter(np, state.joint, state.head, False, True, post)
    else:
        joint, head, prob, switch_prob = changepoint_filter(np, state.joint, state.head, False, False, post,
                                                            stay, switch, factor)
    return changepoint_decide(config, state, t, prob, switch_prob, (joint, head, post))


def changepoint_decide(config: ChangePointConfig, state: ChangePointState, t: int, prob: float,
                       switch_prob: float = math.nan, filtered: Optional[tuple] = None
                       ) -> tuple[ChangePointState, ChangePointInfo]:
    """The change-point decision rule at step ``t``, for one configuration or ``C`` at once.

    ``prob`` = P(r_t < L | a_{0:t}) (shared by the configurations); the gate re-arms
    when ``prob < release``, fires when ``prob >= threshold`` while armed and out of
    cooldown, and then disarms. ``config``'s decision fields and ``state``'s counters
    (``armed``, ``t_last_fire``, ``num_fires``) are scalars or ``[C]`` arrays, and so
    are the results (``suppressed_reason``: codes into :data:`CHANGEPOINT_REASONS`, see
    :func:`reason_names`). The new state holds the run-length filter ``filtered`` =
    ``(joint, head, belief)`` after this step (``None``: ``state``'s, untouched).
    """
    armed = state.armed | (prob < config.release)
    reason, fired = first_failure(  # in the order of CHANGEPOINT_REASONS
        CHANGEPOINT_REASONS,
        prob >= config.threshold,
        armed,
        t - state.t_last_fire >= config.cooldown,
    )
    joint, head, belief = (state.joint, state.head, state.belief) if filtered is None else filtered
    if fired is False:  # no configuration fires: only the arming moves
        new_state = _new(ChangePointState, (joint, head, belief, armed, state.t_last_fire, state.num_fires))
    else:
        new_state = _new(ChangePointState, (
            joint,
            head,
            belief,
            armed & logical_not(fired),
            where(fired, t, state.t_last_fire),
            state.num_fires + fired,
        ))
    return new_state, _new(ChangePointInfo, (prob, switch_prob, fired, reason))


def changepoint_notify_replanned(state: ChangePointState, t: int, when=True) -> ChangePointState:
    """Start the change-point cooldown at step ``t`` (only where ``when`` holds: a bool,
    or a ``[C]`` mask over configurations)."""
    if when is True:
        return state._replace(t_last_fire=t)
    return state._replace(t_last_fire=where(when, t, state.t_last_fire))


# --------------------------------------------------------------------------- CUSUM gate


class CusumConfig(NamedTuple):
    """Bound parameter of the CUSUM gate: the alarm threshold ``h`` > 0 (``inf``: statistic only)."""

    h: float


class CusumState(NamedTuple):
    """State of the CUSUM gate.

    Fields
    ------
    sums : float[K]
        ``S(k)``: Page's one-sided CUSUM of skill ``k``'s log-likelihood ratio against the
        reference skill since the last restart (0 for the reference itself).
    reference : int
        The skill ``sums`` were accumulated against (the pre-update MAP; -1 before the first step).
    num_fires : int
        Alarms this episode.
    """

    sums: np.ndarray
    reference: int = -1
    num_fires: int = 0


class CusumInfo(NamedTuple):
    """Diagnostics of one CUSUM step: ``statistic`` = ``max_k S(k)`` before an alarm's restart,
    ``reference`` (the MAP skill it compared against), ``fired`` (``statistic >= h``) and
    ``suppressed_reason`` (``None`` when fired, else ``"below_threshold"``; ``"excluded_step"``
    for a step with weight 0)."""

    statistic: float
    reference: int
    fired: bool
    suppressed_reason: Optional[str]


def _zeros_like(x, traced: bool):
    """Zeros shaped as ``x``: :func:`numpy.zeros` for a NumPy array (``numpy.zeros_like``'s Python
    wrapper costs ~1 us a call), the namespace's ``zeros_like`` for a traced one."""
    return _xp(x).zeros_like(x) if traced else np.zeros(x.shape)


_max_reduce = np.maximum.reduce


def cusum_init(num_skills: int) -> CusumState:
    return CusumState(np.zeros(num_skills))


def cusum_update(config: CusumConfig, state: CusumState, reference: int, ll: Optional[np.ndarray],
                 feasible: Optional[np.ndarray], completed: int = -1, observed=None
                 ) -> tuple[CusumState, CusumInfo]:
    """One step of the CUSUM gate on the step's tempered log-likelihood ``ll`` (float[K];
    ``None``: excluded step) with the pre-update MAP ``reference``.

    ``S_t(k) = max(0, S_{t-1}(k) + ll_t(k) - ll_t(ref_t))`` for feasible ``k != ref_t``
    (an infeasible skill, or one under which the observation is impossible, restarts at 0; when
    the observation is impossible under the reference itself, the other skills' ratios are
    ``+inf`` and the gate fires at once); the statistic is ``max_k S_t(k)`` and the gate fires
    when it reaches ``h`` (``h = inf``: never, the statistic only). Every ``S``
    restarts at 0 when the reference changes (the belief has absorbed the change), after an
    alarm and after a visible completion (a new segment). Pure: ``state`` is not touched.

    Written once for both array namespaces: on the NumPy gate ``ll is None`` marks an excluded
    step; under ``jax.jit``/``vmap`` (a JAX ``state``, :func:`beliefgate.beliefs.wrappers.gate_wrapper`)
    ``ll`` is always an array and ``observed`` (a traced bool) says whether the step counts; the
    reason is then an int8 code into :data:`CUSUM_REASONS` (:func:`reason_names`).
    """
    sums = state.sums
    traced = not (sums.__class__ is _ndarray and reference.__class__ is int) and (
        _traced(sums) or _traced(reference))
    if traced:
        xp = _xp(None)
        ref = reference
    else:
        xp = np
        ref = int(reference)
    restart = ref != state.reference
    if restart is not False:
        sums = where(restart, _zeros_like(sums, traced), sums)
    if observed is None:
        observed = ll is not None
    if ll is not None:
        if traced or ll[ref] > -_INF:
            llr = ll - ll[ref]
        else:  # the reference rules the observation out: -inf - -inf for the skills that do too
            with np.errstate(invalid="ignore"):
                llr = ll - ll[ref]
        keep = llr == llr
        if traced:
            keep = keep.at[ref].set(False)
        else:
            keep[ref] = False
        if feasible is not None:
            keep = keep & feasible
        stepped = xp.where(keep, xp.maximum(0.0, sums + xp.where(keep, llr, 0.0)), 0.0)
        sums = stepped if observed is True else xp.where(observed, stepped, sums)
    # NumPy: the ufunc's reduce itself (ndarray.max adds a Python wrapper's ~1 us; same NaN rule)
    stat = sums.max() if traced else float(_max_reduce(sums))
    hit = (stat >= config.h) if math.isfinite(config.h) else False
    done = hit | (completed >= 0)
    if done is not False:
        sums = where(done, _zeros_like(sums, traced), sums)
    # in the order of CUSUM_REASONS: an excluded step that does not fire, then a sum below h
    reason, fired = first_failure(CUSUM_REASONS, observed | hit, hit)
    return _new(CusumState, (sums, ref, state.num_fires + fired)), _new(CusumInfo, (stat, ref, fired, reason))


# --------------------------------------------------------------------------- combining the gates


class Drive(NamedTuple):
    """One gate driving the interrupt on its own (a wrapper's verdict, read after its update).

    ``slot`` is the gate's place among the step's records ``(stable_map, changepoint, cusum)``
    (the order of :class:`~beliefgate.beliefs.core.GateState`'s gate fields); ``needs_ego``:
    the gate's own rule ignores whether the ego is active, so the interrupt also needs it
    (change-point, CUSUM; the stable-MAP rule checks it itself). ``slots`` are the gates it
    reads, ``joint_replan`` whether an interrupt restarts every member's cooldown (one gate:
    its own rule already did).
    """

    name: str
    slot: int
    needs_ego: bool

    @property
    def slots(self) -> tuple:
        return (self.slot,)

    @property
    def joint_replan(self) -> bool:
        return False

    def interrupt(self, fired, ego_active=True):
        """The interrupt from the gates' ``fired`` flags (a tuple by slot; scalars or ``[C]``
        arrays)."""
        f = fired[self.slot]
        return (f & ego_active) if self.needs_ego else f

    def decide(self, infos, ego_active: bool) -> tuple:
        """``(interrupt, suppressed_reason)`` of one step from the gates' records (by slot)."""
        info = infos[self.slot]
        if not self.needs_ego:
            return info.interrupt, info.suppressed_reason
        if not info.fired:
            return False, info.suppressed_reason
        return (True, None) if ego_active else (False, REASON_EGO_IDLE)

    def reason_code(self, infos, ego_active, interrupt=None):
        """:meth:`decide`'s ``suppressed_reason`` for traced records (a gate's reason is then a
        code into its own reasons): an int8 code into :data:`GATE_REASONS`, ``len(GATE_REASONS)``
        where the gate interrupts. ``tests/test_gate_wrappers.py`` checks it against :meth:`decide`."""
        info = infos[self.slot]
        code = _gate_reason_code(self.slot, info.suppressed_reason)
        if not self.needs_ego:
            return code
        return where(info.fired, where(ego_active, _NO_REASON, _EGO_IDLE_CODE), code)


class AnyOf(NamedTuple):
    """Interrupt when any member does (:func:`any_of`); a suppressed step reports the first
    member's reason, and an interrupt restarts every member's cooldown (one replanning signal)."""

    name: str
    members: tuple

    @property
    def slots(self) -> tuple:
        return tuple(m.slot for m in self.members)

    @property
    def joint_replan(self) -> bool:
        return True

    def interrupt(self, fired, ego_active=True):
        out = self.members[0].interrupt(fired, ego_active)
        for member in self.members[1:]:
            out = out | member.interrupt(fired, ego_active)
        return out

    def decide(self, infos, ego_active: bool) -> tuple:
        for member in self.members:  # a member interrupts: its own rule's verdict (and the ego active)
            info = infos[member.slot]
            if info.interrupt if not member.needs_ego else (info.fired and ego_active):
                return True, None
        return False, self.members[0].decide(infos, ego_active)[1]

    def reason_code(self, infos, ego_active, interrupt):
        """:meth:`decide`'s ``suppressed_reason`` for traced records (see :meth:`Drive.reason_code`):
        none where ``interrupt`` holds, else the first member's."""
        return where(interrupt, _NO_REASON, self.members[0].reason_code(infos, ego_active))


_NO_REASON = np.int8(len(GATE_REASONS))
_EGO_IDLE_CODE = np.int8(GATE_REASONS.index(REASON_EGO_IDLE))
#: Per slot, the code in :data:`GATE_REASONS` of each of that gate's reason codes (and of "fired").
_SLOT_CODES = tuple(np.array([GATE_REASONS.index(r) for r in reasons] + [len(GATE_REASONS)], dtype=np.int8)
                    for reasons in (STABLE_MAP_REASONS, CHANGEPOINT_REASONS, CUSUM_REASONS))


def _gate_reason_code(slot: int, reason):
    """A gate's ``suppressed_reason`` (``None``, a name, or a code into that gate's reasons) as a
    code into :data:`GATE_REASONS`."""
    if reason is None:
        return _NO_REASON
    if isinstance(reason, str):
        return np.int8(GATE_REASONS.index(reason))
    table = _SLOT_CODES[slot]
    return (_xp(reason).asarray(table) if _traced(reason) else table)[reason]


def any_of(name: str, *members: Drive) -> AnyOf:
    """The combinator: a gate that interrupts when any of ``members`` does."""
    return AnyOf(name, tuple(members))


#: The stable-MAP gate alone.
STABLE_MAP = Drive("stable_map", 0, False)
#: The change-point gate alone (while the ego is active).
CHANGEPOINT = Drive("changepoint", 1, True)
#: The CUSUM gate alone (while the ego is active).
CUSUM = Drive("cusum", 2, True)
#: The gates ``GateParams.gate`` names. A new gate is one wrapper (its ``*_init``/``*_update``
#: and a record with ``fired``/``suppressed_reason``) and one entry here.
GATES = {g.name: g for g in (STABLE_MAP, CHANGEPOINT, any_of("either", STABLE_MAP, CHANGEPOINT), CUSUM)}


def gate_driver(name: str):
    """The driver named ``name`` (:data:`GATES`); :class:`InvalidParameterError` naming it otherwise."""
    try:
        return GATES[name]
    except (KeyError, TypeError):
        raise InvalidParameterError(
            f"unknown gate mode {name!r}; use 'stable_map', 'changepoint', 'either' or 'cusum'") from None


def gate_interrupt(mode: str, sm_interrupt, cp_fired, ego_active=True, cusum_fired=False):
    """Whether the gate named ``mode`` interrupts (scalars or ``[C]`` arrays):
    ``gate_driver(mode).interrupt((sm_interrupt, cp_fired, cusum_fired), ego_active)``."""
    return gate_driver(mode).interrupt((sm_interrupt, cp_fired, cusum_fired), ego_active)


__all__ = [
    "NEVER",
    "condition",
    "StableMapConfig",
    "StableMapState",
    "StableMapInfo",
    "STABLE_MAP_REASONS",
    "CHANGEPOINT_REASONS",
    "CUSUM_REASONS",
    "GATE_REASONS",
    "changepoint_filter",
    "where",
    "logical_not",
    "exp",
    "first_failure",
    "reason_names",
    "stable_map_init",
    "stable_map_decide",
    "stable_map_update",
    "stable_map_notify_replanned",
    "HazardStep",
    "hazard_step",
    "ChangePointConfig",
    "ChangePointState",
    "ChangePointInfo",
    "changepoint_init",
    "changepoint_joint",
    "changepoint_update",
    "changepoint_decide",
    "gate_interrupt",
    "gate_driver",
    "Drive",
    "AnyOf",
    "any_of",
    "GATES",
    "STABLE_MAP",
    "CHANGEPOINT",
    "CUSUM",
    "changepoint_notify_replanned",
    "CusumConfig",
    "CusumState",
    "CusumInfo",
    "cusum_init",
    "cusum_update",
]
