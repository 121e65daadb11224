"""The plug-in gate: ``from beliefgate import Gate, GateParams``.

A :class:`Gate` is the convenience layer over the online skill filter of
``docs/model.md`` and the two gates of :mod:`beliefgate.beliefs.gates`. It binds a
:class:`GateParams` once, keeps one immutable :class:`GateState` and swaps it after
each step, so a step that raises leaves the gate exactly as it was.

The online path is plain NumPy in probability space (normalised every step, with
a log-space fallback on underflow), O(K) per step for the hazard model and
O(K W) for the windowed one. It computes the same posteriors as the JAX
functional filter :mod:`beliefgate.beliefs.filter` (tested to 1e-9).

Entry points (all funnel into one private ``_advance``):

* :meth:`Gate.step` - a ``[K, A]`` table of action log-probabilities (the caller's
  likelihood controller) and the index of the action the partner took;
* :meth:`Gate.step_evidence` - a :class:`~beliefgate.beliefs.evidence.StepEvidence`
  (table, consistent-action mask, weight, completion, feasibility);
* :meth:`Gate.step_loglik` - only the log-likelihood of the observed action per skill;
* :meth:`Gate.observe` - two Overcooked states (gate built with :meth:`Gate.for_overcooked`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal, NamedTuple, Optional, Sequence, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from beliefgate.beliefs.checks import as_bool
from beliefgate.beliefs.errors import (
    ActionIndexError,
    BeliefInputError,
    CompletedIndexError,
    InvalidWeightError,
    UnknownSkillError,
    ImpossibleObservationError,
    InvalidParameterError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
)
from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.beliefs.gates import (
    REASON_EGO_IDLE,
    ChangePointConfig,
    ChangePointInfo,
    ChangePointState,
    StableMapConfig,
    StableMapInfo,
    StableMapState,
    changepoint_init,
    changepoint_notify_replanned,
    changepoint_update,
    condition,
    hazard_constants,
    hazard_step,
    stable_map_init,
    stable_map_notify_replanned,
    stable_map_update,
)

_F64 = np.dtype(np.float64)
_INF = math.inf
_max_reduce = np.maximum.reduce
_add_reduce = np.add.reduce


# --------------------------------------------------------------------------- errors


# --------------------------------------------------------------------------- parameters


class GateParams(BaseModel):
    """Immutable, validated configuration of a :class:`Gate` (see ``docs/gate.md``).

    Belief model
        ``model``: ``"hazard"`` (sticky switching, default) or ``"windowed"``
        (paper-faithful segment product over the last ``window`` observed steps);
        ``hazard`` h in [0, 1]; ``window`` >= 1 or ``None`` (whole segment);
        ``alpha`` > 0, concentration of the smoothed prior ``pi0 ∝ n + alpha``.
    Likelihood controller (used by domain observers, e.g. Overcooked)
        ``beta`` >= 0 (rationality), ``epsilon`` in [0, 1] (noise).
    Stable-MAP gate (SPEC §4)
        ``tau_obs`` in [0, 1] (contradiction when l_t < tau_obs),
        ``likelihood_scale`` lambda >= 0, ``confidence_floor`` c_floor in [0, 1],
        ``n_stable`` >= 0, ``cooldown`` >= 0 steps; ``reference``: what l_t compares
        the observation with -- ``"action"`` is BayesBelief Eq. 10 (the best action
        under the MAP skill), ``"skill"`` (default) the best feasible skill.
    Change-point gate
        ``cp_horizon`` L >= 1 (a switch is "recent" for L steps),
        ``cp_threshold`` in (0, 1], ``cp_release`` in [0, cp_threshold] (re-arm
        level), ``cp_cooldown`` >= 0 steps.
    ``gate``: which gate drives ``Decision.interrupt``: ``"stable_map"``,
    ``"changepoint"`` or ``"either"``.
    ``track_changepoint``: compute the change-point statistics even when they do
    not drive the interrupt. ``None`` (default) = always, except for the windowed
    model with the stable-MAP gate, where they would cost a second (hazard) filter
    per step; untracked statistics are reported as NaN.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    model: Literal["hazard", "windowed"] = "hazard"
    hazard: float = Field(0.05, ge=0.0, le=1.0)
    window: Optional[int] = Field(5, ge=1)
    alpha: float = Field(1.0, gt=0.0)
    tau_obs: float = Field(0.2, ge=0.0, le=1.0)
    likelihood_scale: float = Field(1.0, ge=0.0)
    confidence_floor: float = Field(0.7, ge=0.0, le=1.0)
    n_stable: int = Field(1, ge=0)
    cooldown: int = Field(5, ge=0)
    beta: float = Field(2.0, ge=0.0)
    epsilon: float = Field(0.1, ge=0.0, le=1.0)
    reference: Literal["skill", "action"] = "skill"
    gate: Literal["stable_map", "changepoint", "either"] = "stable_map"
    cp_horizon: int = Field(6, ge=1)
    cp_threshold: float = Field(0.3, gt=0.0, le=1.0)
    cp_release: float = Field(0.2, ge=0.0, le=1.0)
    cp_cooldown: int = Field(0, ge=0)
    track_changepoint: Optional[bool] = None

    @model_validator(mode="after")
    def _consistent(self) -> "GateParams":
        if self.cp_release > self.cp_threshold:
            raise ValueError(
                f"cp_release ({self.cp_release}) must not exceed cp_threshold ({self.cp_threshold})")
        if self.track_changepoint is False and self.gate != "stable_map":
            raise ValueError(f"gate={self.gate!r} needs the change-point statistic; "
                             "track_changepoint cannot be False")
        return self

    def replace(self, **changes) -> "GateParams":
        """A validated copy with some fields changed."""
        return type(self)(**{**self.model_dump(), **changes})

    def to_json(self, indent: Optional[int] = 2) -> str:
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "GateParams":
        return cls.model_validate_json(text)

    def save(self, path: Union[str, Path]) -> Path:
        """Write the parameters as JSON; returns the path."""
        path = Path(path)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: Union[str, Path]) -> "GateParams":
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    @classmethod
    def from_fit(cls, path: Union[str, Path], point: str = "median", **overrides) -> "GateParams":
        """Parameters from a fit written by ``beliefgate fit`` (ArviZ NetCDF).

        ``beta``, ``epsilon``, ``hazard`` (hazard model) and ``alpha`` take the
        posterior ``point`` estimate (``"median"`` or ``"mean"``) or the value the
        fit pinned; ``model`` and ``window`` follow the fitted model. A per-skill
        ``beta`` is pooled (``point`` over skills and draws): the gate takes one
        ``beta``. A fitted tempering weight is not a gate parameter (pass it to the
        domain observer). ``overrides`` set any other field (``tau_obs=0.3``, ...).
        Raises ``ValueError`` when the file is not such a fit.
        """
        from beliefgate.models.fit import fit_config, load_fit, point_values

        idata = load_fit(path)  # FitError (a ValueError) naming the file and the reason
        config = fit_config(idata)
        estimates = point_values(idata, point)  # fitted or pinned, exactly as the fit used them
        values: dict = {"model": config.model}
        if config.model == "windowed":
            values["window"] = config.window
        for name in ("beta", "epsilon", "hazard", "alpha"):
            if name not in estimates:  # the windowed model has no hazard
                continue
            value = estimates[name]
            if isinstance(value, list):  # per-skill beta: pooled over skills and draws
                reduce = np.median if point == "median" else np.mean
                value = float(reduce(np.asarray(idata.posterior[name].values)))
            values[name] = value
        return cls(**{**values, **overrides})

    def filter_params(self):
        """The equivalent :class:`beliefgate.beliefs.filter.FilterParams` (imports JAX)."""
        from beliefgate.beliefs.filter import FilterParams

        return FilterParams(self.model, self.hazard, self.alpha, self.window)

    def stable_map_config(self) -> StableMapConfig:
        return StableMapConfig.make(
            self.tau_obs, self.likelihood_scale, self.confidence_floor, self.n_stable, self.cooldown)

    def changepoint_config(self) -> ChangePointConfig:
        return ChangePointConfig(
            self.hazard, self.cp_horizon, self.cp_threshold, self.cp_release, self.cp_cooldown)


# --------------------------------------------------------------------------- states and records


class BeliefState(NamedTuple):
    """Carried state of the NumPy filter after ``t`` steps (K skills).

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


class GateState(NamedTuple):
    """Everything a :class:`Gate` carries: the filter and each gate's own counters."""

    belief: BeliefState
    stable_map: StableMapState
    changepoint: ChangePointState


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
        return out


class Decision(NamedTuple):
    """What a step returns to the caller.

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


# --------------------------------------------------------------------------- the Gate


class Gate:
    """Online partner-skill belief plus interrupt signals for one teammate.

    Build with :meth:`from_logprobs` (any domain) or :meth:`for_overcooked`.
    Not thread-safe; use one gate per teammate. Picklable.
    """

    def __init__(
        self,
        num_skills: int,
        params: Optional[GateParams] = None,
        skill_names: Optional[Sequence[str]] = None,
        prior_counts=None,
    ):
        if isinstance(num_skills, bool) or not isinstance(num_skills, (int, np.integer)) or num_skills < 1:
            raise ShapeMismatchError(f"num_skills must be an integer >= 1, got {num_skills!r}")
        num_skills = int(num_skills)
        if params is None:
            params = GateParams()
        elif not isinstance(params, GateParams):
            raise InvalidParameterError(f"params must be a GateParams, got {type(params).__name__}")
        if skill_names is None:
            names = tuple(f"skill_{k}" for k in range(num_skills))
        else:
            names = tuple(str(n) for n in skill_names)
            if len(names) != num_skills or len(set(names)) != num_skills:
                raise ShapeMismatchError(
                    f"skill_names must hold {num_skills} distinct names, got {list(skill_names)!r}")
        if prior_counts is None:
            counts = np.zeros(num_skills)
        else:
            counts = np.array(prior_counts, dtype=np.float64)
            if counts.shape != (num_skills,):
                raise ShapeMismatchError(f"prior_counts must have shape ({num_skills},), got {counts.shape}")
            if not np.all(np.isfinite(counts)) or np.any(counts < 0):
                raise InvalidParameterError("prior_counts must be finite and >= 0")
        self._params = params
        self._names = names
        self._prior_counts = counts
        self._layout: Optional[str] = None
        self._partner = 1
        self._observer = None
        self._bind()
        self._state = self._initial_state(counts)

    # ----------------------------------------------------------------- construction

    @classmethod
    def from_logprobs(
        cls,
        num_skills: int,
        params: Optional[GateParams] = None,
        skill_names: Optional[Sequence[str]] = None,
        prior_counts=None,
    ) -> "Gate":
        """A domain-agnostic gate fed with per-step action log-probability tables."""
        return cls(num_skills, params, skill_names, prior_counts)

    @classmethod
    def for_overcooked(cls, layout: str, params: Optional[GateParams] = None, partner: int = 1) -> "Gate":
        """A gate for Overcooked player ``partner`` on ``layout``; feed it with :meth:`observe`."""
        from beliefgate.envs.overcooked.observer import OvercookedObserver

        params = GateParams() if params is None else params
        observer = OvercookedObserver(layout, params, partner=partner)
        gate = cls(len(observer.skill_names), params, observer.skill_names)
        gate._layout = layout
        gate._partner = partner
        gate._observer = observer
        return gate

    def _bind(self) -> None:
        """Pre-compute the constants of the hot path from ``self._params``."""
        p = self._params
        self._K = len(self._names)
        self._h = float(p.hazard)
        self._one_minus_h = 1.0 - self._h
        self._alpha = float(p.alpha)
        self._windowed = p.model == "windowed"
        self._skill_ref = p.reference == "skill"
        self._slots = int(p.window) if (self._windowed and p.window is not None) else 0
        self._sm_config = p.stable_map_config()
        self._cp_config = p.changepoint_config()
        self._mode = p.gate
        track = p.track_changepoint
        self._track_cp = (not self._windowed or p.gate != "stable_map") if track is None else track
        self._pi0_ref: Optional[np.ndarray] = None
        self._consts = None

    def _initial_state(self, counts: np.ndarray) -> GateState:
        counts = counts.copy()
        smoothed = counts + self._alpha
        pi0 = smoothed / smoothed.sum()
        counts.setflags(write=False)
        pi0.setflags(write=False)
        belief = BeliefState(
            belief=pi0,
            pi0=pi0,
            counts=counts,
            restart=True,
            window_buf=np.zeros((self._slots, self._K)),
            window_pos=0,
            window_sum=np.zeros(self._K),
            log_evidence=0.0,
            t=0,
        )
        return GateState(belief, stable_map_init(), changepoint_init(self._K, self._params.cp_horizon))

    # ----------------------------------------------------------------- properties

    @property
    def params(self) -> GateParams:
        return self._params

    @property
    def state(self) -> GateState:
        """The current (immutable) state; its arrays are never modified in place."""
        return self._state

    @property
    def num_skills(self) -> int:
        return self._K

    @property
    def skill_names(self) -> tuple[str, ...]:
        return self._names

    @property
    def memory(self) -> np.ndarray:
        """Completion counts the smoothed prior uses now (earlier episodes included)."""
        return self._state.belief.counts.copy()

    @property
    def t(self) -> int:
        """Index of the next step."""
        return self._state.belief.t

    # ----------------------------------------------------------------- control

    def notify_replanned(self) -> None:
        """The ego replanned for its own reasons: start both cooldowns now.

        Equivalent to an interrupt at the most recent step (``t - 1``), so the next
        interrupt can come ``cooldown`` steps after it.
        """
        st = self._state
        t_last = st.belief.t - 1
        self._state = st._replace(
            stable_map=stable_map_notify_replanned(st.stable_map, t_last),
            changepoint=changepoint_notify_replanned(st.changepoint, t_last),
        )

    def reset(self, keep_memory: bool = False) -> None:
        """Start a new episode.

        ``keep_memory=True`` keeps the completion counts (same partner: they seed the
        smoothed prior of the next episode); ``False`` returns to the counts the gate
        was built with.
        """
        counts = self._state.belief.counts if keep_memory else self._prior_counts
        self._state = self._initial_state(counts)

    def save_params(self, path: Union[str, Path]) -> Path:
        return self._params.save(path)

    # ----------------------------------------------------------------- pickling

    def __getstate__(self) -> dict:
        return {
            "params": self._params.to_json(indent=None),
            "skill_names": self._names,
            "prior_counts": self._prior_counts,
            "layout": self._layout,
            "partner": self._partner,
            "state": self._state,
        }

    def __setstate__(self, data: dict) -> None:
        self._params = GateParams.from_json(data["params"])
        self._names = tuple(data["skill_names"])
        self._prior_counts = np.asarray(data["prior_counts"], dtype=np.float64)
        self._layout = data["layout"]
        self._partner = int(data.get("partner", 1))
        self._observer = None
        self._bind()
        self._state = data["state"]

    def __repr__(self) -> str:
        return (f"Gate(num_skills={self._K}, model={self._params.model!r}, "
                f"gate={self._params.gate!r}, t={self.t})")

    # ----------------------------------------------------------------- validation helpers

    def _completed_index(self, completed) -> int:
        if completed is None:
            return -1
        if isinstance(completed, str):
            try:
                return self._names.index(completed)
            except ValueError:
                raise UnknownSkillError(
                    f"unknown skill {completed!r}; known skills: {list(self._names)}") from None
        if isinstance(completed, (bool, np.bool_)) or not isinstance(completed, (int, np.integer)):
            raise UnknownSkillError(
                f"completed must be a skill name, an index or None, got {completed!r}")
        c = int(completed)
        if not -1 <= c < self._K:
            raise UnknownSkillError(f"completed index must lie in [-1, {self._K}), got {c}")
        return c

    def _feasible_mask(self, feasible) -> Optional[np.ndarray]:
        if feasible is None:
            return None
        arr = _bool_vector(feasible, "feasible", self._K)
        if not arr.any():
            raise NoFeasibleSkillError("no skill is feasible at this step")
        if arr.all():
            return None
        return arr

    @staticmethod
    def _weight(weight) -> float:
        if type(weight) is float and weight == 1.0:  # the common case, fast
            return 1.0
        if isinstance(weight, (bool, np.bool_)) or not isinstance(
                weight, (int, float, np.integer, np.floating)):
            raise InvalidWeightError(f"weight must be a number >= 0, got {weight!r}")
        w = float(weight)
        if not (math.isfinite(w) and w >= 0.0):
            raise InvalidWeightError(f"weight must be a finite number >= 0, got {weight!r}")
        return w

    def _table(self, logprobs) -> np.ndarray:
        lp = logprobs
        if type(lp) is not np.ndarray or lp.dtype != _F64:
            try:
                lp = np.asarray(lp, dtype=np.float64)
            except (TypeError, ValueError):
                raise ShapeMismatchError("action_logprobs must be a numeric [K, A] array") from None
        if lp.ndim != 2 or lp.shape[0] != self._K or lp.shape[1] == 0:
            raise ShapeMismatchError(
                f"action_logprobs must have shape ({self._K}, A) with A >= 1, got {lp.shape}")
        return lp

    @staticmethod
    def _row_max(lp: np.ndarray) -> np.ndarray:
        """Row maxima of a log-probability table; raises unless every row has a finite max."""
        rowmax = _max_reduce(lp, axis=1)
        if not math.isfinite(sum(rowmax.tolist())):
            if np.isnan(lp).any() or (lp == _INF).any():
                raise NonFiniteLoglikError("action_logprobs must not contain NaN or +inf")
            bad = int(np.flatnonzero(~np.isfinite(rowmax))[0])
            raise NonFiniteLoglikError(
                f"row {bad} of action_logprobs is all -inf (every action impossible under that skill)")
        return rowmax

    # ----------------------------------------------------------------- steps

    def step(self, action_logprobs, action, completed=None, *, feasible=None, weight=1.0,
             ego_active: bool = True) -> Decision:
        """Condition on one partner action.

        ``action_logprobs``: float[K, A], ``log pi_hat(a | s_t, k)`` of every action
        under every skill (``-inf`` allowed where a row keeps a finite entry);
        ``action``: index of the action taken; ``completed``: skill name or index
        the action visibly finished (or ``None``); ``feasible``: bool[K] (``None`` =
        all); ``weight``: tempering weight (0 = exclude, e.g. STAY); ``ego_active``:
        whether the ego is executing a skill that could be interrupted.
        """
        lp = self._table(action_logprobs)
        a = action
        if type(a) is not int:
            if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
                raise ActionIndexError(f"action must be an integer index, got {action!r}")
            a = int(a)
        if not 0 <= a < lp.shape[1]:
            raise ActionIndexError(f"action index {a} outside [0, {lp.shape[1]})")
        rowmax = self._row_max(lp)
        comp = self._completed_index(completed)
        feas = self._feasible_mask(feasible)
        w = self._weight(weight)
        col = lp[:, a]
        if w == 1.0:
            ll = col
        else:
            ll = col * w if w > 0.0 else None
        if self._skill_ref:
            return self._advance_vs_best_skill(ll, col, w, comp, feas, ego_active)
        return self._advance(ll, col, rowmax, w, comp, feas, bool(ego_active))

    def step_evidence(self, ev: StepEvidence, *, ego_active: bool = True) -> Decision:
        """Condition on a :class:`StepEvidence` (the general entry point).

        The likelihood of the observation under skill ``k`` is
        ``sum_{a in mask} pi_hat(a | s_t, k)`` tempered by ``weight``; the gate's
        ``l_t`` uses the best consistent action under the MAP skill.
        """
        if not isinstance(ev, StepEvidence):
            raise ShapeMismatchError(f"step_evidence expects a StepEvidence, got {type(ev).__name__}")
        lp = self._table(ev.logprobs)
        idx = np.flatnonzero(_bool_vector(ev.action_mask, "action_mask", lp.shape[1]))
        if idx.size == 0:
            raise ActionIndexError("action_mask selects no action")
        rowmax = self._row_max(lp)
        comp = self._completed_index(ev.completed)
        feas = self._feasible_mask(ev.feasible)
        w = self._weight(ev.weight)
        if idx.size == 1:
            raw = best = lp[:, int(idx[0])]
        else:
            sub = lp[:, idx]
            raw = np.logaddexp.reduce(sub, axis=1)
            best = _max_reduce(sub, axis=1)
        if w == 1.0:
            ll = raw
        else:
            ll = raw * w if w > 0.0 else None
        if self._skill_ref:
            return self._advance_vs_best_skill(ll, raw, w, comp, feas, ego_active)
        return self._advance(ll, best, rowmax, w, comp, feas, bool(ego_active))

    def step_loglik(self, loglik, completed=None, *, feasible=None, weight=1.0,
                    ego_active: bool = True) -> Decision:
        """Condition on ``loglik[k] = log pi_hat(a_t | s_t, k)`` only.

        The gate then compares the MAP skill with the best feasible skill:
        ``l_t = exp(lambda (loglik[m] - max_k loglik[k]))``.
        """
        v = loglik
        if type(v) is not np.ndarray or v.dtype != _F64:
            try:
                v = np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError):
                raise ShapeMismatchError("loglik must be a numeric vector") from None
        if v.shape != (self._K,):
            raise ShapeMismatchError(f"loglik must have shape ({self._K},), got {v.shape}")
        mx = v.max()
        if not mx < _INF:  # NaN or +inf somewhere
            raise NonFiniteLoglikError("loglik must not contain NaN or +inf; use -inf for zero")
        comp = self._completed_index(completed)
        feas = self._feasible_mask(feasible)
        w = self._weight(weight)
        if w == 1.0:
            ll = v
        else:
            ll = v * w if w > 0.0 else None
        return self._advance_vs_best_skill(ll, v, w, comp, feas, ego_active)

    def _advance_vs_best_skill(self, ll, obs, w, comp, feas, ego_active) -> Decision:
        """l_t of the observation under the MAP skill against the best feasible skill:
        ``log l_t = lambda (obs[m] - max_{k feasible} obs[k])`` (``reference="skill"``,
        and always for :meth:`step_loglik`). An action that every skill finds poor
        (a detour, a wait) is then no contradiction; one another skill explains is."""
        top = float(obs.max() if feas is None else obs[feas].max())
        return self._advance(ll, obs if top > -_INF else None, top, w, comp, feas, bool(ego_active))

    def observe(self, state, next_state, *, ego_active: bool = True) -> Decision:
        """Overcooked: infer the partner's action from two states and condition on it."""
        if self._observer is None:
            if self._layout is None:
                raise InvalidParameterError("observe() needs a gate built with Gate.for_overcooked")
            from beliefgate.envs.overcooked.observer import OvercookedObserver

            self._observer = OvercookedObserver(self._layout, self._params, partner=self._partner)
        return self.step_evidence(self._observer.evidence(state, next_state), ego_active=ego_active)

    # ----------------------------------------------------------------- the core

    def _advance(self, ll, score, top, weight, completed, feas, ego_active) -> Decision:
        """Predict, gate on the prediction, condition, book-keep; swap the state last.

        ``ll``: tempered log-likelihood float[K] (``None``: excluded step);
        ``score``/``top``: the stable-MAP gate's log ratio is ``score[m] - top[m]``.
        """
        st = self._state
        bs = st.belief
        cps = st.changepoint
        t = bs.t
        pi0 = bs.pi0
        restart = bs.restart
        if pi0 is not self._pi0_ref:
            self._pi0_ref, self._consts = pi0, hazard_constants(pi0, self._h)

        # 1. predict + condition. The change-point gate's run-length filter needs the
        #    hazard step; in the hazard model that step *is* the belief update.
        if not self._windowed:
            hs = hazard_step(bs.belief, pi0, feas, restart, self._h, ll, self._consts)
            prior, post, log_z = hs.prior, hs.post, hs.log_z
            buf, pos, wsum = bs.window_buf, bs.window_pos, bs.window_sum
        else:
            prior, post, log_z, buf, pos, wsum = self._windowed_step(bs, ll, feas)
        if log_z == -_INF:
            raise ImpossibleObservationError(
                "the observation has probability zero under every skill the belief allows")
        if not log_z < _INF or not np.isfinite(post).all():  # NaN or overflow: reject, state untouched
            raise NonFiniteLoglikError(
                "the tempered log-likelihood overflows (weight x log-probability too large); the gate is unchanged")

        # 2. gates, each with its own counters
        sm_state, sm = stable_map_update(self._sm_config, st.stable_map, t, prior, score, top,
                                         weight, ego_active)
        if not self._track_cp:
            cp_state, cp = cps, _CP_UNTRACKED
        else:
            if self._windowed:
                hs = hazard_step(cps.belief, pi0, feas, restart, self._h, ll, self._consts)
            cp_state, cp = changepoint_update(self._cp_config, cps, t, hs, pi0, feas, ll)
        mode = self._mode
        if mode == "stable_map":
            interrupt, reason = sm.interrupt, sm.suppressed_reason
        elif mode == "changepoint":
            interrupt = cp.fired and ego_active
            reason = cp.suppressed_reason if not cp.fired else (None if ego_active else REASON_EGO_IDLE)
        else:
            interrupt = sm.interrupt or (cp.fired and ego_active)
            reason = None if interrupt else sm.suppressed_reason
            if interrupt:  # one replanning signal: both cooldowns start
                sm_state = stable_map_notify_replanned(sm_state, t)
                cp_state = changepoint_notify_replanned(cp_state, t)

        # 3. completion book-keeping and the prediction for the next step
        counts = bs.counts
        if completed >= 0:
            counts = counts.copy()
            counts[completed] += 1.0
            smoothed = counts + self._alpha
            next_pi0 = predictive = smoothed / smoothed.sum()
            counts.setflags(write=False)
            next_pi0.setflags(write=False)
        else:
            next_pi0 = pi0
            if not self._windowed:
                predictive = post * self._one_minus_h + self._consts[0]
            elif feas is None:
                predictive = post
            else:
                predictive = condition(pi0, _add_reduce(buf, axis=0) if self._slots else wsum)[0]

        post.setflags(write=False)  # shared by the Decision and the new state
        m = int(post.argmax())
        self._state = GateState(
            BeliefState(post, next_pi0, counts, completed >= 0, buf, pos, wsum,
                        bs.log_evidence + log_z, t + 1),
            sm_state,
            cp_state,
        )
        info = GateInfo(t, prior, post, sm, cp, interrupt, reason, log_z, weight, completed,
                        ego_active)
        return Decision(post, m, self._names[m], float(post[m]), sm.contradiction, interrupt,
                        cp.fired, cp.prob, cp.switch_prob, predictive, info)

    def _windowed_step(self, bs: BeliefState, ll, feas):
        """Windowed model (docs/model.md): ``b ∝ pi0_seg ∘ feasible ∘ exp(window sum)``.

        A step enters the window only if its tempered log-likelihood row is not
        identically zero; the pre-update belief is the product without the new row
        (after evicting the oldest one). Returns
        ``(prior, post, log_z, window_buf, window_pos, window_sum)``.
        """
        restart = bs.restart
        buf, pos, wsum = bs.window_buf, bs.window_pos, bs.window_sum
        observed = ll is not None and bool(ll.any())
        if self._slots:
            if restart:
                buf, pos = np.zeros((self._slots, self._K)), 0
            if observed:
                buf = buf.copy()
                buf[pos] = 0.0
                before = _add_reduce(buf, axis=0)
                buf[pos] = ll
                pos = (pos + 1) % self._slots
            else:
                before = _add_reduce(buf, axis=0)
        else:
            before = np.zeros(self._K) if restart else wsum
            wsum = before + ll if observed else before
        pi0 = bs.pi0
        base = pi0 if feas is None else _normalised(pi0 * feas)
        if restart:
            prior = base
        else:
            prior, log_w, _ = condition(base, before)
            if log_w == -_INF:
                raise ImpossibleObservationError(
                    "every feasible skill has probability zero in the current window")
        if observed:
            post, log_z, _ = condition(prior, ll)
        else:
            post, log_z = prior, 0.0
        return prior, post, log_z, buf, pos, wsum


#: What the change-point gate reports when it is not tracked.
_CP_UNTRACKED = ChangePointInfo(math.nan, math.nan, False, "not_tracked")


def _bool_vector(x, name: str, length: int) -> np.ndarray:
    """``x`` as bool[length]; 0/1 numbers are accepted, anything else raises."""
    return as_bool(x, name, (length,))


def _normalised(x: np.ndarray) -> np.ndarray:
    return x / x.sum()


__all__ = [
    "Gate",
    "GateParams",
    "GateState",
    "BeliefState",
    "GateInfo",
    "Decision",
    # errors re-exported for callers of the gate (defined in beliefgate.beliefs.errors)
    "BeliefInputError",
    "ActionIndexError",
    "CompletedIndexError",
    "UnknownSkillError",
    "InvalidWeightError",
    "ShapeMismatchError",
    "NonFiniteLoglikError",
    "NoFeasibleSkillError",
    "InvalidParameterError",
    "ImpossibleObservationError",
]
