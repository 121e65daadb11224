"""The functional core of the online gate: ``make_gate(params) -> (init, update)``.

Shaped like blackjax's ``SamplingAlgorithm(init, step)``: a bound configuration, a
carried state (:class:`GateState`, immutable NamedTuples of NumPy arrays) and
per-step records (:class:`GateInfo`) that are logged and never fed back::

    fns = make_gate(GateParams(), num_skills=3, skill_names=["fetch", "cook", "serve"])
    state = fns.init()
    state, info = fns.update(state, TableEvidence(logprobs, action=2))
    decision = fns.decide(info)          # the convenience view (posterior, MAP, interrupt, ...)

``update`` validates its evidence first and raises a :class:`BeliefInputError`
subclass before anything is computed, so a failed step leaves nothing half-done;
states are never modified in place, so the caller keeps the old one. The
:class:`beliefgate.beliefs.gate.Gate` class, the HTTP service and the sensitivity
replays are all thin users of these functions.

Evidence comes in three forms (all reduce to one internal record):

* :class:`TableEvidence` -- a ``[K, A]`` table of action log-probabilities per skill
  and the index of the action the partner took;
* :class:`~beliefgate.beliefs.evidence.StepEvidence` -- the domain boundary's
  general form (table, consistent-action mask, weight, completion, feasibility);
* :class:`LoglikEvidence` -- only the log-likelihood of the observed action per skill.

The maths (hazard and windowed forward steps, the stable-MAP and change-point
gates) lives in :mod:`beliefgate.beliefs.gates` and ``docs/model.md``; this module
only orders the calls and keeps the books.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple, Optional, Sequence, Union

import numpy as np

from beliefgate.beliefs.checks import are_names, as_array, as_bool
from beliefgate.beliefs.config import MAX_PRIOR_COUNT, GateParams
from beliefgate.beliefs.errors import (
    ActionIndexError,
    ImpossibleObservationError,
    InvalidParameterError,
    InvalidWeightError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
    UnknownSkillError,
)
from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.limits import MAX_SKILLS, check_count
from beliefgate.models.transitions import get_transition
from beliefgate.models.transitions.hazard import hazard_step
from beliefgate.beliefs.gates import (
    ChangePointConfig,
    ChangePointInfo,
    ChangePointState,
    CusumConfig,
    CusumInfo,
    CusumState,
    StableMapConfig,
    StableMapInfo,
    StableMapState,
    changepoint_init,
    changepoint_notify_replanned,
    changepoint_update,
    cusum_init,
    cusum_update,
    gate_driver,
    CHANGEPOINT,
    CUSUM,
    stable_map_init,
    stable_map_notify_replanned,
    stable_map_update,
)

_F64 = np.dtype(np.float64)
_INF = math.inf
_max_reduce = np.maximum.reduce
_min_reduce = np.minimum.reduce
_new = tuple.__new__
#: Largest finite |log-probability| accepted in evidence: beyond it exp() and the
#: tempered products leave float64's range, and every later step would fail.
MAX_ABS_LOGPROB = 1e4
#: Largest tempering weight.
MAX_WEIGHT = 1e3


# --------------------------------------------------------------------------- configuration


class GateConfig(NamedTuple):
    """:class:`GateParams` bound to ``K`` skills and pre-processed for the hot path."""

    params: GateParams
    num_skills: int
    names: tuple
    hazard: float
    alpha: float
    transition: object  # the model's transition component (beliefgate.models.transitions)
    slots: int
    skill_ref: bool
    stable_map: StableMapConfig
    changepoint: ChangePointConfig
    mode: str  # GateParams.gate, the driver's name (messages only: nothing branches on it)
    driver: object  # which gate(s) drive the interrupt (beliefgate.beliefs.gates.GATES)
    track_cp: bool
    prior_counts: np.ndarray
    cusum: Optional[CusumConfig] = None  # the CUSUM gate's (only computed where it drives the interrupt)


def check_counts(counts, num_skills: int, what: str = "prior_counts") -> np.ndarray:
    """Completion counts as a fresh float[K] array: numbers, shape ``(num_skills,)``, finite, >= 0 and
    <= :data:`~beliefgate.beliefs.config.MAX_PRIOR_COUNT` (else the error names ``what``)."""
    try:
        out = np.array(counts, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{what} must be numbers, got {counts!r}") from None
    if out.shape != (num_skills,):
        raise ShapeMismatchError(f"{what} must have shape ({num_skills},), got {out.shape}")
    if not np.all(np.isfinite(out)) or np.any(out < 0) or np.any(out > MAX_PRIOR_COUNT):
        raise InvalidParameterError(f"{what} must be finite, >= 0 and <= {MAX_PRIOR_COUNT:g}, got {out.tolist()}")
    return out


def gate_config(params: Optional[GateParams], num_skills: int,
                skill_names: Optional[Sequence[str]] = None, prior_counts=None) -> GateConfig:
    """Validate and bind the configuration (raises :class:`BeliefInputError` subclasses)."""
    if isinstance(num_skills, bool) or not isinstance(num_skills, (int, np.integer)) or num_skills < 1:
        raise ShapeMismatchError(f"num_skills must be an integer >= 1, got {num_skills!r}")
    num_skills = int(num_skills)
    # every constructor (Gate(n), Gate.from_logprobs, make_gate) passes here: refuse before allocating
    check_count(num_skills, MAX_SKILLS, f"num_skills {num_skills}")
    if params is None:
        params = GateParams()
    elif not isinstance(params, GateParams):
        raise InvalidParameterError(f"params must be a GateParams, got {type(params).__name__}")
    if skill_names is not None and not isinstance(skill_names, (str, bytes)):
        try:  # once: a generator checked below would be used up and read as no names
            skill_names = list(skill_names)
        except TypeError:
            raise ShapeMismatchError(f"skill_names must be a sequence of non-empty strings, got {skill_names!r}") from None
    if skill_names is None:
        names = tuple(f"skill_{k}" for k in range(num_skills))
    else:
        if not are_names(skill_names):
            raise ShapeMismatchError(f"skill_names must be a sequence of non-empty strings, got {skill_names!r}")
        names = tuple(skill_names)
        if len(names) != num_skills or len(set(names)) != num_skills:
            raise ShapeMismatchError(
                f"skill_names must hold {num_skills} distinct names, got {list(skill_names)!r}")
    counts = np.zeros(num_skills) if prior_counts is None else check_counts(prior_counts, num_skills)
    counts.setflags(write=False)
    transition = get_transition(params.model)
    driver = gate_driver(params.gate.kind)
    track = params.track_changepoint
    return GateConfig(
        params=params,
        num_skills=num_skills,
        names=names,
        hazard=float(params.hazard),
        alpha=float(params.alpha),
        transition=transition,
        slots=transition.window_slots(params.window),
        skill_ref=params.reference == "skill",
        stable_map=params.stable_map_config(),
        changepoint=params.changepoint_config(),
        mode=params.gate.kind,
        driver=driver,
        track_cp=((transition.runs_hazard_filter or CHANGEPOINT.slot in driver.slots)
                  if track is None else bool(track)),
        prior_counts=counts,
        cusum=params.cusum_config() if CUSUM.slot in driver.slots else None,
    )


# --------------------------------------------------------------------------- states and records


class BeliefState(NamedTuple):
    """Carried state of the online filter after ``t`` steps (K skills).

    Fields
    ------
    belief : float[K]
        ``b_{t-1}(k) = P(z_{t-1} = k | a_{0:t-1})``, the posterior after the last
        step (``pi0`` before the first; unused while ``restart`` is set).
    pi0 : float[K]
        Smoothed prior ``(counts + alpha) / sum(counts + alpha)``; in the windowed
        model also the prior of the current segment (it only changes at completions,
        which start a segment).
    counts : float[K]
        ``n(k)`` = completions remembered from earlier episodes + completions so far.
    restart : bool
        The next predict is ``pi0 ∘ feasible`` (episode start, or after a visible
        completion; windowed: a new segment starts).
    window_buf : float[W, K]
        Windowed model, finite window: ring of the last ``W`` observed tempered
        log-likelihood rows of the segment (zeros = empty slots). ``W = 0`` otherwise.
    window_pos : int
        Slot of ``window_buf`` written next (the oldest once the ring is full).
    window_sum : float[K]
        Windowed model, infinite window: running sum of the segment's rows.
    log_evidence : float
        ``sum_t log p(a_t | a_{<t})`` (hazard: the log marginal likelihood).
    t : int
        Number of steps processed; the next step has index ``t``.
    consts : tuple
        The transition's ``constants(pi0, h)``, cached with ``pi0`` (they change only with
        it): ``(h pi0, (1-h) + h pi0)``, the windowed model's followed by ``log pi0``.
    """

    belief: np.ndarray
    pi0: np.ndarray
    counts: np.ndarray
    restart: bool
    window_buf: np.ndarray
    window_pos: int
    window_sum: np.ndarray
    log_evidence: float
    t: int
    consts: Optional[tuple] = None


class GateState(NamedTuple):
    """Everything the gate carries: the filter and each gate's own counters (``cusum``:
    ``None`` unless the CUSUM gate drives the interrupt)."""

    belief: BeliefState
    stable_map: StableMapState
    changepoint: ChangePointState
    cusum: Optional[CusumState] = None


class GateInfo(NamedTuple):
    """Diagnostics of one step (logged, never fed back).

    Fields
    ------
    t : int
        Step index.
    prior, posterior : float[K]
        Pre-update belief (what the stable-MAP gate judged) and posterior.
    stable_map : StableMapInfo
        That gate's verdict: m_t, b(m_t), stable_t, l_t, contradiction, interrupt,
        reason (also reachable as ``info.map_skill``, ``info.l_t``, ...).
    changepoint : ChangePointInfo
        P(switch in the last L steps), P(z_t != z_{t-1}), fired, reason.
    interrupt : bool
        The interrupt of the gate chosen by ``GateParams.gate``.
    suppressed_reason : str or None
        ``None`` when interrupting, else why not (``"no_contradiction"``,
        ``"unstable_map"``, ``"low_confidence"``, ``"cooldown"``, ``"ego_idle"``,
        ``"excluded_step"``; change-point mode: ``"below_threshold"``, ``"disarmed"``).
    log_evidence : float
        ``log p(a_t | a_{<t})`` under the pre-update belief.
    weight, completed, ego_active
        The step's tempering weight, completed skill (-1 none) and ego flag.
    predictive : float[K] or None
        Belief about ``z_{t+1}`` before ``a_{t+1}`` is seen (after any completion
        reset, every skill assumed feasible at ``t+1``).
    cusum : CusumInfo or None
        The CUSUM gate's statistic, reference and alarm (when it drives the interrupt).
    """

    t: int
    prior: np.ndarray
    posterior: np.ndarray
    stable_map: StableMapInfo
    changepoint: ChangePointInfo
    interrupt: bool
    suppressed_reason: Optional[str]
    log_evidence: float
    weight: float
    completed: int
    ego_active: bool
    predictive: Optional[np.ndarray] = None
    cusum: Optional[CusumInfo] = None

    @property
    def map_skill(self) -> int:
        """m_t, the MAP of the pre-update belief."""
        return self.stable_map.map_skill

    @property
    def confidence(self) -> float:
        """b(m_t) of the pre-update belief."""
        return self.stable_map.confidence

    @property
    def stable(self) -> int:
        return self.stable_map.stable

    @property
    def l_t(self) -> float:
        return self.stable_map.l_t

    @property
    def contradiction(self) -> bool:
        return self.stable_map.contradiction

    def to_dict(self) -> dict:
        """Flat, JSON-ready dict (arrays become lists; gate fields prefixed)."""
        out = {
            "t": self.t,
            "prior": self.prior.tolist(),
            "posterior": self.posterior.tolist(),
            "interrupt": self.interrupt,
            "suppressed_reason": self.suppressed_reason,
            "log_evidence": self.log_evidence,
            "weight": self.weight,
            "completed": self.completed,
            "ego_active": self.ego_active,
        }
        out.update({f"stable_map_{k}": v for k, v in self.stable_map._asdict().items()})
        out.update({f"changepoint_{k}": v for k, v in self.changepoint._asdict().items()})
        if self.cusum is not None:
            out.update({f"cusum_{k}": v for k, v in self.cusum._asdict().items()})
        return out


class Decision(NamedTuple):
    """What a step returns to the caller of the convenience layer.

    Fields
    ------
    posterior : float[K]
        ``P(z_t | a_{0:t})``, sums to one.
    map_skill, map_name : int, str
        ``argmax posterior`` and its skill name.
    confidence : float
        ``posterior[map_skill]``.
    contradiction : bool
        ``l_t < tau_obs`` under the pre-update MAP (steps with weight > 0 only).
    interrupt : bool
        Interrupt the ego skill and replan now (gate chosen by ``GateParams.gate``).
    changepoint : bool
        The change-point gate fired at this step.
    changepoint_prob : float
        ``P(a hidden skill switch happened in the last L steps | a_{0:t})``
        (NaN when not tracked, see ``GateParams.track_changepoint``).
    switch_prob : float
        ``P(z_t != z_{t-1} | a_{0:t})`` (instantaneous; hovers near h; NaN when not tracked).
    predictive : float[K]
        Belief about ``z_{t+1}`` before ``a_{t+1}`` is seen, after any completion
        reset, assuming every skill feasible at ``t+1``.
    info : GateInfo
        Full diagnostics (pre-update posterior, stable count, l_t, reasons, ...).
    """

    posterior: np.ndarray
    map_skill: int
    map_name: str
    confidence: float
    contradiction: bool
    interrupt: bool
    changepoint: bool
    changepoint_prob: float
    switch_prob: float
    predictive: np.ndarray
    info: GateInfo


# --------------------------------------------------------------------------- evidence


class TableEvidence(NamedTuple):
    """``logprobs[k, a] = log pi_hat(a | s_t, k)`` and the index of the action taken."""

    logprobs: np.ndarray
    action: int
    completed: Union[int, str, None] = None
    feasible: Optional[np.ndarray] = None
    weight: float = 1.0


class LoglikEvidence(NamedTuple):
    """``loglik[k] = log pi_hat(a_t | s_t, k)`` only (the gate compares against the best skill)."""

    loglik: np.ndarray
    completed: Union[int, str, None] = None
    feasible: Optional[np.ndarray] = None
    weight: float = 1.0


Evidence = Union[TableEvidence, StepEvidence, LoglikEvidence]


class Reduced(NamedTuple):
    """Validated evidence reduced to what the forward step and the gates read.

    ``ll``: tempered log-likelihood float[K] (``None``: excluded step); ``score`` /
    ``top``: the stable-MAP gate's log ratio is ``score[m] - top[m]`` (``score=None``:
    undefined, ``l_t = 1``); ``weight``; ``completed`` (-1 none); ``feasible``
    bool[K] or ``None`` (all).
    """

    ll: Optional[np.ndarray]
    score: Optional[np.ndarray]
    top: Union[np.ndarray, float]
    weight: float
    completed: int
    feasible: Optional[np.ndarray]


def _completed_index(config: GateConfig, completed) -> int:
    if completed is None:
        return -1
    if isinstance(completed, str):
        try:
            return config.names.index(completed)
        except ValueError:
            raise UnknownSkillError(
                f"unknown skill {completed!r}; known skills: {list(config.names)}") from None
    if isinstance(completed, (bool, np.bool_)) or not isinstance(completed, (int, np.integer)):
        raise UnknownSkillError(f"completed must be a skill name, an index or None, got {completed!r}")
    c = int(completed)
    if not -1 <= c < config.num_skills:
        raise UnknownSkillError(f"completed index must lie in [-1, {config.num_skills}), got {c}")
    return c


def _feasible_mask(config: GateConfig, feasible) -> Optional[np.ndarray]:
    if feasible is None:
        return None
    arr = as_bool(feasible, "feasible", (config.num_skills,))
    if not arr.any():
        raise NoFeasibleSkillError("no skill is feasible at this step")
    if arr.all():
        return None
    return arr


def step_weight(weight) -> float:
    """A step's tempering weight, checked: a finite number in ``[0, MAX_WEIGHT]`` (``InvalidWeightError``)."""
    if type(weight) is float and weight == 1.0:  # the common case, fast
        return 1.0
    if isinstance(weight, (bool, np.bool_)) or not isinstance(
            weight, (int, float, np.integer, np.floating)):
        raise InvalidWeightError(f"weight must be a number >= 0, got {weight!r}")
    w = float(weight)
    if not (math.isfinite(w) and 0.0 <= w <= MAX_WEIGHT):
        raise InvalidWeightError(f"weight must be a finite number in [0, {MAX_WEIGHT:g}], got {weight!r}")
    return w


def _as_float_array(x, what: str) -> np.ndarray:
    """``x`` as float64 without silently dropping parts (complex) or reading bools as numbers."""
    if type(x) is np.ndarray and x.dtype is _F64:  # native float64: the dtype is this singleton
        return x
    arr = as_array(x, what)
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer)
                                     or np.issubdtype(arr.dtype, np.floating)):
        raise ShapeMismatchError(f"{what} must be a real numeric array, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def _table(config: GateConfig, logprobs) -> np.ndarray:
    if logprobs.__class__ is np.ndarray and logprobs.dtype is _F64:  # _as_float_array's fast case, inline
        lp = logprobs
    else:
        lp = _as_float_array(logprobs, "action_logprobs")
    shape = lp.shape
    if len(shape) != 2 or shape[0] != config.num_skills or shape[1] == 0:
        raise ShapeMismatchError(
            f"action_logprobs must have shape ({config.num_skills}, A) with A >= 1, got {lp.shape}")
    return lp


def _row_max(lp: np.ndarray) -> np.ndarray:
    """Row maxima of a log-probability table; raises unless every row is a valid log-distribution."""
    rowmax = _max_reduce(lp, 1)  # positional: the keyword costs ~0.2 us
    values = rowmax.tolist()
    top = max(values)
    low = min(values)
    if not (math.isfinite(sum(values)) and low > -MAX_ABS_LOGPROB and top <= 1e-9):
        if np.isnan(lp).any() or (lp == _INF).any():
            raise NonFiniteLoglikError("action_logprobs must not contain NaN or +inf")
        if top > 1e-9:
            bad = int(np.argmax(rowmax))
            raise NonFiniteLoglikError(
                f"action_logprobs row {bad} has a positive log-probability {top!r}; rows are log-probabilities (<= 0)")
        bad = int(np.argmin(rowmax))
        if rowmax[bad] == -_INF:
            raise NonFiniteLoglikError(
                f"row {bad} of action_logprobs is all -inf (every action impossible under that skill)")
        raise NonFiniteLoglikError(
            f"row {bad} of action_logprobs peaks at {rowmax[bad]!r}, below -{MAX_ABS_LOGPROB:g}")
    lowest = _min_reduce(lp, None)
    if lowest < -MAX_ABS_LOGPROB and (lowest > -_INF or lp[np.isfinite(lp)].min() < -MAX_ABS_LOGPROB):
        finite_min = lp[np.isfinite(lp)].min()
        raise NonFiniteLoglikError(
            f"action_logprobs holds {finite_min!r}; finite entries must be >= -{MAX_ABS_LOGPROB:g} (use -inf for zero)")
    return rowmax


def _temper(col: np.ndarray, w: float) -> Optional[np.ndarray]:
    if w == 1.0:
        return col
    return col * w if w > 0.0 else None


def _vs_best_skill(obs: np.ndarray, feas: Optional[np.ndarray]):
    """``(score, top)`` comparing the MAP skill with the best feasible skill (``reference="skill"``).

    ``obs`` is validated (no NaN), so Python's ``max`` of its values is NumPy's maximum."""
    top = max(obs.tolist()) if feas is None else float(obs[feas].max())
    return (obs if top > -_INF else None), top


def reduce_table(config: GateConfig, ev: TableEvidence) -> Reduced:
    """Validate a :class:`TableEvidence` and reduce it."""
    return reduce_table_args(config, ev.logprobs, ev.action, ev.completed, ev.feasible, ev.weight)


def reduce_table_args(config: GateConfig, logprobs, action, completed=None, feasible=None,
                      weight=1.0) -> Reduced:
    """:func:`reduce_table` on the fields themselves (the hot path of ``Gate.step``)."""
    lp = _table(config, logprobs)
    a = action
    if type(a) is not int:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise ActionIndexError(f"action must be an integer index, got {action!r}")
        a = int(a)
    if not 0 <= a < lp.shape[1]:
        raise ActionIndexError(f"action index {a} outside [0, {lp.shape[1]})")
    rowmax = _row_max(lp)
    comp = -1 if completed is None else _completed_index(config, completed)
    feas = None if feasible is None else _feasible_mask(config, feasible)
    w = 1.0 if (type(weight) is float and weight == 1.0) else step_weight(weight)
    col = lp[:, a]
    if config.skill_ref:
        score, top = _vs_best_skill(col, feas)
    else:
        score, top = col, rowmax
    return _new(Reduced, (col if w == 1.0 else _temper(col, w), score, top, w, comp, feas))


def reduce_step(config: GateConfig, ev: StepEvidence) -> Reduced:
    """Validate a :class:`StepEvidence` and reduce it: the likelihood of the observation under
    skill ``k`` is ``sum_{a in mask} pi_hat(a | s_t, k)``; the gate's ``l_t`` uses the best
    consistent action under the MAP skill."""
    if not isinstance(ev, StepEvidence):
        raise ShapeMismatchError(f"expected a StepEvidence, got {type(ev).__name__}")
    lp = _table(config, ev.logprobs)
    # a [A] bool vector: its nonzero() is np.flatnonzero's answer without that function's ~1 us of
    # Python wrappers (ravel, dispatchers)
    idx = as_bool(ev.action_mask, "action_mask", (lp.shape[1],)).nonzero()[0]
    if idx.size == 0:
        raise ActionIndexError("action_mask selects no action")
    rowmax = _row_max(lp)
    comp = _completed_index(config, ev.completed)
    feas = _feasible_mask(config, ev.feasible)
    w = step_weight(ev.weight)
    if idx.size == 1:
        raw = best = lp[:, int(idx[0])]
    else:
        sub = lp[:, idx]
        raw = np.logaddexp.reduce(sub, axis=1)
        best = _max_reduce(sub, 1)
    if config.skill_ref:
        score, top = _vs_best_skill(raw, feas)
    else:
        score, top = best, rowmax
    return Reduced(_temper(raw, w), score, top, w, comp, feas)


def reduce_loglik(config: GateConfig, ev: LoglikEvidence) -> Reduced:
    """Validate a :class:`LoglikEvidence` and reduce it (``l_t`` against the best feasible skill)."""
    v = _as_float_array(ev.loglik, "loglik")
    if v.shape != (config.num_skills,):
        raise ShapeMismatchError(f"loglik must have shape ({config.num_skills},), got {v.shape}")
    values = v.tolist()
    # the sum is < inf unless a NaN or +inf is present (or finite values overflow it: then look)
    if not sum(values) < _INF and any(x != x or x == _INF for x in values):
        raise NonFiniteLoglikError("loglik must not contain NaN or +inf; use -inf for zero")
    if min(values) < -MAX_ABS_LOGPROB or max(values) > MAX_ABS_LOGPROB:  # -inf is allowed
        finite = [x for x in values if x > -_INF]
        if finite and (min(finite) < -MAX_ABS_LOGPROB or max(finite) > MAX_ABS_LOGPROB):
            raise NonFiniteLoglikError(f"finite loglik entries must lie within ±{MAX_ABS_LOGPROB:g}")
    comp = _completed_index(config, ev.completed)
    feas = _feasible_mask(config, ev.feasible)
    w = step_weight(ev.weight)
    score, top = _vs_best_skill(v, feas)
    return Reduced(_temper(v, w), score, top, w, comp, feas)


def reduce(config: GateConfig, evidence: Evidence) -> Reduced:
    """Validate any evidence form and reduce it (raises :class:`BeliefInputError` subclasses)."""
    if isinstance(evidence, TableEvidence):
        return reduce_table(config, evidence)
    if isinstance(evidence, StepEvidence):
        return reduce_step(config, evidence)
    if isinstance(evidence, LoglikEvidence):
        return reduce_loglik(config, evidence)
    raise ShapeMismatchError(
        f"evidence must be a TableEvidence, StepEvidence or LoglikEvidence, got {type(evidence).__name__}")


# --------------------------------------------------------------------------- init / update


def init(config: GateConfig, counts: Optional[np.ndarray] = None) -> GateState:
    """The state at the start of an episode (``counts``: completion memory; default the config's)."""
    counts = np.array(config.prior_counts if counts is None else counts, dtype=np.float64)
    smoothed = counts + config.alpha
    pi0 = smoothed / smoothed.sum()
    counts.setflags(write=False)
    pi0.setflags(write=False)
    belief = BeliefState(
        belief=pi0,
        pi0=pi0,
        counts=counts,
        restart=True,
        window_buf=np.zeros((config.slots, config.num_skills)),
        window_pos=0,
        window_sum=np.zeros(config.num_skills),
        log_evidence=0.0,
        t=0,
        consts=config.transition.constants(pi0, config.hazard),
    )
    return GateState(belief, stable_map_init(),
                     changepoint_init(config.num_skills, config.params.cp_horizon),
                     cusum_init(config.num_skills) if config.cusum is not None else None)


def notify_replanned(state: GateState) -> GateState:
    """The ego replanned for its own reasons: both cooldowns start at the last step (``t - 1``)."""
    t_last = state.belief.t - 1
    return state._replace(
        stable_map=stable_map_notify_replanned(state.stable_map, t_last),
        changepoint=changepoint_notify_replanned(state.changepoint, t_last),
    )


def advance(config: GateConfig, state: GateState, ev: Reduced,
            ego_active: bool = True) -> tuple[GateState, GateInfo]:
    """One step on reduced evidence: predict, gate on the prediction, condition, book-keep.

    Pure: returns the new state and the step's info; ``state`` is not touched.
    Raises :class:`ImpossibleObservationError` / :class:`NonFiniteLoglikError` when the
    step cannot be taken (the caller keeps ``state``).
    """
    ll, score, top, weight, completed, feas = ev
    if ego_active is not True:
        ego_active = bool(ego_active)
    bs, sm_prev, cps, cus = state
    belief, pi0, counts, restart, buf, pos, wsum, log_evidence, t, consts = bs
    if consts is None:
        consts = config.transition.constants(pi0, config.hazard)

    # 1. predict + condition by the model's transition. The change-point gate's run-length
    #    filter needs the hazard step; in the hazard model that step *is* the belief update.
    prior, post, log_z, buf, pos, wsum, hs, predictive = config.transition.online_step(
        belief, pi0, restart, buf, pos, wsum, ll, feas, config.hazard, consts)
    if log_z == -_INF:
        raise ImpossibleObservationError(
            "the observation has probability zero under every skill the belief allows")
    # log_z finite means the normaliser is a positive finite number and (the likelihoods
    # being shifted below exp's overflow) every posterior entry is finite too.
    if not log_z < _INF:  # NaN or overflow: reject, state untouched
        raise NonFiniteLoglikError(
            "the tempered log-likelihood overflows (weight x log-probability too large); the gate is unchanged")

    # 2. gates, each with its own counters
    sm_state, sm = stable_map_update(config.stable_map, sm_prev, t, prior, score, top, weight, ego_active)
    if not config.track_cp:
        cp_state, cp = cps, _CP_UNTRACKED
    else:
        if hs is None:  # the transition is not the hazard filter: run it for the gate
            hs = hazard_step(cps.belief, pi0, feas, restart, config.hazard, ll, consts)
        cp_state, cp = changepoint_update(config.changepoint, cps, t, hs, pi0, feas, ll)
    if config.cusum is not None:
        cus, cu = cusum_update(config.cusum, cus, sm.map_skill, ll, feas, completed)
    else:
        cu = None
    driver = config.driver
    interrupt, reason = driver.decide((sm, cp, cu), ego_active)
    if interrupt and driver.joint_replan:  # one replanning signal: every member's cooldown starts
        sm_state = stable_map_notify_replanned(sm_state, t)
        cp_state = changepoint_notify_replanned(cp_state, t)

    # 3. completion book-keeping and the prediction for the next step
    next_consts = consts
    if completed >= 0:
        counts = counts.copy()
        counts[completed] += 1.0
        smoothed = counts + config.alpha
        next_pi0 = predictive = smoothed / smoothed.sum()
        counts.setflags(write=False)
        next_pi0.setflags(write=False)
        next_consts = config.transition.constants(next_pi0, config.hazard)
    else:
        next_pi0 = pi0

    post.setflags(write=False)  # shared by the info and the new state
    # The records are built with tuple.__new__ (every field given, in order): the same
    # NamedTuples without the generated __new__'s Python frame, ~0.1 us each per step.
    new_state = _new(GateState, (
        _new(BeliefState, (post, next_pi0, counts, completed >= 0, buf, pos, wsum,
                           log_evidence + log_z, t + 1, next_consts)),
        sm_state,
        cp_state,
        cus,
    ))
    info = _new(GateInfo, (t, prior, post, sm, cp, interrupt, reason, log_z, weight, completed,
                           ego_active, predictive, cu))
    return new_state, info


def update(config: GateConfig, state: GateState, evidence: Evidence,
           ego_active: bool = True) -> tuple[GateState, GateInfo]:
    """Validate ``evidence`` and take one step: ``(new_state, info)``."""
    return advance(config, state, reduce(config, evidence), ego_active)


def decide(config: GateConfig, info: GateInfo) -> Decision:
    """The caller's view of one step (posterior, MAP, interrupt, change-point signals)."""
    post = info.posterior
    values = post.tolist()  # finite: max/index = argmax, lowest index on ties
    confidence = max(values)
    m = values.index(confidence)
    cp = info.changepoint
    return _new(Decision, (post, m, config.names[m], confidence, info.stable_map.contradiction,
                           info.interrupt, cp.fired, cp.prob, cp.switch_prob, info.predictive, info))


#: What the change-point gate reports when it is not tracked.
_CP_UNTRACKED = ChangePointInfo(math.nan, math.nan, False, "not_tracked")


# --------------------------------------------------------------------------- builder


class GateFunctions(NamedTuple):
    """The core with one configuration bound: ``init() -> state``,
    ``update(state, evidence, ego_active=True) -> (state, info)``, ``advance`` (on
    already-reduced evidence), ``reduce`` (validate evidence), ``decide(info)``,
    ``notify_replanned(state)`` and ``new_episode(state, keep_memory)``."""

    config: GateConfig
    init: Callable[[], GateState]
    update: Callable[..., tuple]
    advance: Callable[..., tuple]
    reduce: Callable[..., Reduced]
    decide: Callable[[GateInfo], Decision]
    notify_replanned: Callable[[GateState], GateState]
    new_episode: Callable[..., GateState]


def make_gate(params: Optional[GateParams] = None, num_skills: int = 6,
              skill_names: Optional[Sequence[str]] = None, prior_counts=None) -> GateFunctions:
    """Validate the configuration once and bind it: the functional gate."""
    config = gate_config(params, num_skills, skill_names, prior_counts)

    def _init() -> GateState:
        return init(config)

    def _update(state: GateState, evidence: Evidence, ego_active: bool = True):
        return update(config, state, evidence, ego_active)

    def _advance(state: GateState, ev: Reduced, ego_active: bool = True):
        return advance(config, state, ev, ego_active)

    def _new_episode(state: GateState, keep_memory: bool = True) -> GateState:
        return init(config, state.belief.counts if keep_memory else None)

    return GateFunctions(
        config=config,
        init=_init,
        update=_update,
        advance=_advance,
        reduce=lambda evidence: reduce(config, evidence),
        decide=lambda info: decide(config, info),
        notify_replanned=notify_replanned,
        new_episode=_new_episode,
    )


__all__ = [
    "GateConfig",
    "gate_config",
    "step_weight",
    "BeliefState",
    "GateState",
    "GateInfo",
    "Decision",
    "TableEvidence",
    "LoglikEvidence",
    "StepEvidence",
    "Evidence",
    "Reduced",
    "reduce",
    "reduce_table",
    "reduce_table_args",
    "reduce_step",
    "reduce_loglik",
    "init",
    "advance",
    "update",
    "decide",
    "notify_replanned",
    "GateFunctions",
    "make_gate",
    "MAX_ABS_LOGPROB",
    "MAX_WEIGHT",
]
