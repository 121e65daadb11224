"""Request and response schemas of the gate service (``/v1``).

Every request model forbids unknown fields and rejects NaN and infinities
(``allow_inf_nan=False``): JSON has no encoding for them, and Python's JSON
parser would otherwise accept the non-standard tokens ``NaN``/``Infinity``.
Every value is checked against its JSON type, nested ones (``params``, the
Overcooked states) included: no ``"7"``, ``7.0`` or ``true`` for an integer, no
``"0.1"`` or ``true`` for a number (a JSON integer is a number: ``"hazard": 1``).
The service's copies of ``GateParams``, ``KappaParams`` and ``SymbolicState`` are
strict; the Python classes themselves keep their own (lax) validation.

Encoding of ``log 0``
    A log-probability of zero probability (``-inf`` in the Python API) is sent and
    received as JSON ``null``. ``null`` is accepted wherever a log-probability is
    (``action_logprobs`` entries, ``loglik`` entries); a finite number stands for
    itself. ``-Infinity``, ``Infinity``, ``NaN`` and numbers that overflow a double
    (``1e999``) are rejected with 422.

Bounds
    Finite entries of ``action_logprobs`` lie in ``[-MAX_ABS_LOGPROB, 0]``, those of
    ``loglik`` in ``[-MAX_ABS_LOGPROB, MAX_ABS_LOGPROB]`` (``MAX_ABS_LOGPROB = 1e4``, the
    gate's own limit in :mod:`beliefgate.beliefs.core`), weights in ``[0, MAX_WEIGHT]`` and
    ``action`` in ``[0, A)``, so that the tempered log-likelihood ``weight * loglik`` stays
    far from overflow. The documents state these bounds, but the gate checks them (422 with
    its own error, ``NonFiniteLoglikError``, ``InvalidWeightError``, ``ActionIndexError``),
    exactly as in process: the schema only bounds the sizes (``MAX_SKILLS``, ``MAX_ACTIONS``).

Non-finite numbers in responses
    ``null`` again: ``log_l = null`` means ``-inf`` (``l_t = 0``);
    ``changepoint_prob``/``switch_prob = null`` mean "not tracked" (NaN in Python,
    see ``GateParams.track_changepoint``).

A step's response carries the fields of :class:`beliefgate.beliefs.gate.Decision`,
with ``info`` the nested :class:`~beliefgate.beliefs.gate.GateInfo` (``stable_map``,
``changepoint`` sub-records as in Python). :func:`decision_payload` builds it.
"""

from __future__ import annotations

import hashlib
import math
import struct
from copy import copy
from typing import Annotated, Any, Literal, Optional, Tuple, Union

import numpy as np
from pydantic import (BaseModel, ConfigDict, Field, PlainValidator, Strict, StrictBool, StrictFloat, StrictInt,
                      StrictStr, WithJsonSchema, model_validator)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from beliefgate.beliefs.config import (MAX_PRIOR_COUNT, ChangePointPart, ControllerPart, CusumPart, FilterPart,
                                       GatePart, StableMapPart)
from beliefgate.beliefs.core import MAX_ABS_LOGPROB, MAX_WEIGHT
from beliefgate.beliefs.gate import Decision, Gate, GateParams
from beliefgate.beliefs.kappa import Kappa, KappaParamFields, KappaParams
from beliefgate.models.kappa import MAX_DEPTH, SCORE_BOUND, SCORE_RANGE  # the one bound: API, service and fits

#: most skills a session may have, most branches a kappa session may have: the library's own limits
from beliefgate.limits import MAX_BRANCHES, MAX_SKILLS
#: most pieces of evidence in one kappa request
MAX_EVIDENCE = 256
#: points of kappa's quasi-random rule a session may use (the largest rollout depth is the model's)
MAX_KAPPA_POINTS = 4096
#: most primitive actions in one log-probability table
MAX_ACTIONS = 256
#: longest skill name
MAX_NAME_LENGTH = 64
#: largest ``window`` and ``cp_horizon`` a session may use (memory per session is O(K * window))
MAX_HORIZON = 512
#: highest player index of an Overcooked partner
MAX_PLAYER_INDEX = 15
#: session ids: URL-safe base64, 22 characters from 16 random bytes
SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"

_REQUEST = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)
#: the nested models of a request: every field strict (JSON's own types, see the module docstring)
_STRICT = ConfigDict(strict=True)


def _bounds(low: float, high: Optional[float] = None) -> dict:
    """JSON-schema bounds the gate enforces (its own error class, as in process), stated in the
    documents only: a schema bound would answer ``validation_error`` before the gate sees the value."""
    return {"json_schema_extra": {"minimum": low} if high is None else {"minimum": low, "maximum": high}}


#: an entry of ``action_logprobs``: a log-probability, ``None`` (JSON ``null``) is log 0 = -inf;
#: finite ones within ``[-MAX_ABS_LOGPROB, 0]`` (the gate's check: tempering cannot overflow)
LogProb = Optional[Annotated[StrictFloat, Field(**_bounds(-MAX_ABS_LOGPROB, 0.0))]]
#: an entry of ``loglik``: ``None`` is -inf; finite ones within ``±MAX_ABS_LOGPROB`` (the gate's check)
LogLik = Optional[Annotated[StrictFloat, Field(**_bounds(-MAX_ABS_LOGPROB, MAX_ABS_LOGPROB))]]
#: a skill named by index or by name
SkillRef = Union[StrictInt, Annotated[StrictStr, Field(min_length=1, max_length=MAX_NAME_LENGTH)]]
SkillName = Annotated[StrictStr, Field(min_length=1, max_length=MAX_NAME_LENGTH)]


def _to_array(values: list) -> np.ndarray:
    """Nested lists of floats with ``None`` for -inf -> float64 array."""
    if values and isinstance(values[0], list):
        return np.array([[-math.inf if v is None else v for v in row] for row in values], dtype=np.float64)
    return np.array([-math.inf if v is None else v for v in values], dtype=np.float64)


# --------------------------------------------------------------------------- requests


class ServiceFilterPart(FilterPart):
    """:class:`~beliefgate.beliefs.config.FilterPart`, strict, ``window`` at most ``MAX_HORIZON``."""

    model_config = ConfigDict(strict=True, title="FilterPart")

    window: Optional[int] = Field(5, ge=1, le=MAX_HORIZON)


class ServiceControllerPart(ControllerPart):
    """:class:`~beliefgate.beliefs.config.ControllerPart`, strict."""

    model_config = ConfigDict(strict=True, title="ControllerPart")


class ServiceStableMapPart(StableMapPart):
    """:class:`~beliefgate.beliefs.config.StableMapPart`, strict."""

    model_config = ConfigDict(strict=True, title="StableMapPart")


class ServiceChangePointPart(ChangePointPart):
    """:class:`~beliefgate.beliefs.config.ChangePointPart`, strict, ``horizon`` at most ``MAX_HORIZON``."""

    model_config = ConfigDict(strict=True, title="ChangePointPart")

    horizon: int = Field(6, ge=1, le=MAX_HORIZON)


class ServiceCusumPart(CusumPart):
    """:class:`~beliefgate.beliefs.config.CusumPart`, strict."""

    model_config = ConfigDict(strict=True, title="CusumPart")


class ServiceGatePart(GatePart):
    """:class:`~beliefgate.beliefs.config.GatePart` of strict parts."""

    model_config = ConfigDict(strict=True, title="GatePart")

    stable_map: ServiceStableMapPart = Field(default_factory=ServiceStableMapPart)
    changepoint: ServiceChangePointPart = Field(default_factory=ServiceChangePointPart)
    cusum: ServiceCusumPart = Field(default_factory=ServiceCusumPart)


class ServiceGateParams(GateParams):
    """:class:`~beliefgate.beliefs.gate.GateParams` with the service's size limits
    (``filter.window`` and ``gate.changepoint.horizon`` at most ``MAX_HORIZON``), every field
    strict: ``{"filter": {...}, "controller": {...}, "gate": {"kind": ..., ...}}``. The flat keys
    of the earlier form (``{"hazard": 0.1, "gate": "cusum"}``) are still accepted, deprecated
    (see ``docs/gate.md``)."""

    model_config = _STRICT

    filter: ServiceFilterPart = Field(default_factory=ServiceFilterPart)
    controller: ServiceControllerPart = Field(default_factory=ServiceControllerPart)
    gate: ServiceGatePart = Field(default_factory=ServiceGatePart)

    def to_gate_params(self) -> GateParams:
        return GateParams(**self.model_dump())


class CreateSessionRequest(BaseModel):
    """Create a session: either a generic gate (``num_skills`` and/or
    ``skill_names``, optional ``prior_counts``) or an Overcooked gate (``layout``,
    ``partner``). ``params`` defaults to ``GateParams()``."""

    model_config = _REQUEST

    num_skills: Optional[Annotated[StrictInt, Field(le=MAX_SKILLS, **_bounds(1))]] = Field(
        None, description="number of skills K >= 1 (generic gate)")
    skill_names: Optional[list[SkillName]] = Field(
        None, min_length=1, max_length=MAX_SKILLS,
        description="K distinct skill names (default skill_0 ... skill_{K-1}); implies num_skills")
    prior_counts: Optional[list[Annotated[StrictFloat, Field(**_bounds(0.0, MAX_PRIOR_COUNT))]]] = Field(
        None, max_length=MAX_SKILLS, description="completions remembered from earlier episodes, float[K] >= 0")
    layout: Optional[Annotated[StrictStr, Field(min_length=1, max_length=64)]] = Field(
        None, description="Overcooked layout name (Overcooked gate; feed it with /observe)")
    partner: Optional[StrictInt] = Field(
        None, ge=0, le=MAX_PLAYER_INDEX, description="Overcooked player index of the partner (default 1)")
    params: ServiceGateParams = Field(default_factory=ServiceGateParams)

    @model_validator(mode="after")
    def _one_kind(self) -> "CreateSessionRequest":
        generic = self.num_skills is not None or self.skill_names is not None
        if generic and self.layout is not None:
            raise ValueError("give either num_skills/skill_names (generic gate) or layout (Overcooked), not both")
        if not generic and self.layout is None:
            raise ValueError("give num_skills and/or skill_names (generic gate) or layout (Overcooked)")
        if self.layout is None and self.partner is not None:
            raise ValueError("partner is only meaningful with layout")
        if self.layout is not None and self.prior_counts is not None:
            raise ValueError("prior_counts is only supported for generic gates")
        if self.num_skills is not None and self.skill_names is not None and len(self.skill_names) != self.num_skills:
            raise ValueError(f"skill_names has {len(self.skill_names)} names but num_skills is {self.num_skills}")
        return self

    @property
    def kind(self) -> str:
        return "overcooked" if self.layout is not None else "logprobs"

    def resolved_num_skills(self) -> int:
        return self.num_skills if self.num_skills is not None else len(self.skill_names or ())


class _StepCommon(BaseModel):
    model_config = _REQUEST

    completed: Optional[SkillRef] = Field(
        None, description="skill (name or index; -1 = none) the action visibly completed")
    feasible: Optional[list[StrictBool]] = Field(
        None, max_length=MAX_SKILLS, description="bool[K]: skills whose preconditions hold (null: all)")
    weight: StrictFloat = Field(
        1.0, **_bounds(0.0, MAX_WEIGHT),
        description="tempering weight w >= 0 of the step's log-likelihood (0 excludes the step)")
    ego_active: StrictBool = Field(True, description="whether the ego runs a skill an interrupt could stop")

    def common_kwargs(self) -> dict:
        return {"feasible": self.feasible, "weight": float(self.weight), "ego_active": self.ego_active}


def _rectangular(table: list, name: str) -> None:
    if not table:
        return  # the gate refuses an empty table (ShapeMismatchError)
    width = len(table[0])
    for i, row in enumerate(table):
        if len(row) != width:
            raise ValueError(f"{name} must be rectangular: row 0 has {width} entries, row {i} has {len(row)}")


class StepRequest(_StepCommon):
    """``Gate.step``: the action log-probability table and the action taken."""

    action_logprobs: list[Annotated[list[LogProb], Field(max_length=MAX_ACTIONS)]] = Field(
        ..., max_length=MAX_SKILLS,
        description="float[K][A]: log pi(a | s_t, k); null = log 0 (-inf)")
    action: StrictInt = Field(..., **_bounds(0, MAX_ACTIONS - 1),
                              description="index of the action the partner took, in [0, A)")

    @model_validator(mode="after")
    def _shape(self) -> "StepRequest":
        _rectangular(self.action_logprobs, "action_logprobs")
        return self

    def table(self) -> np.ndarray:
        return _to_array(self.action_logprobs)


class StepEvidenceRequest(_StepCommon):
    """``Gate.step_evidence``: several actions may be consistent with the observation."""

    action_logprobs: list[Annotated[list[LogProb], Field(max_length=MAX_ACTIONS)]] = Field(
        ..., max_length=MAX_SKILLS,
        description="float[K][A]: log pi(a | s_t, k); null = log 0 (-inf)")
    action_mask: list[StrictBool] = Field(
        ..., max_length=MAX_ACTIONS, description="bool[A]: actions consistent with what was seen")

    @model_validator(mode="after")
    def _shape(self) -> "StepEvidenceRequest":
        _rectangular(self.action_logprobs, "action_logprobs")
        return self

    def table(self) -> np.ndarray:
        return _to_array(self.action_logprobs)


class StepLoglikRequest(_StepCommon):
    """``Gate.step_loglik``: only the observed action's log-likelihood per skill."""

    loglik: list[LogLik] = Field(..., max_length=MAX_SKILLS,
                                 description="float[K]: log pi(a_t | s_t, k); null = log 0 (-inf)")

    def vector(self) -> np.ndarray:
        return _to_array(self.loglik)


class ObserveRequest(BaseModel):
    """``Gate.observe``: two consecutive Overcooked symbolic states (``SymbolicState`` JSON)."""

    model_config = _REQUEST

    state: "SymbolicStateIn"
    next_state: "SymbolicStateIn"
    ego_active: StrictBool = True


class ResetRequest(BaseModel):
    """``Gate.reset``: ``keep_memory`` keeps the completion counts (same partner)."""

    model_config = _REQUEST

    keep_memory: StrictBool = False


def _inherited(model: type[BaseModel], name: str) -> FieldInfo:
    """A copy of ``model``'s field ``name`` (default, constraints, description) to redeclare
    it under another annotation."""
    return copy(model.model_fields[name])


#: a JSON array where the model has a tuple: strict tuples would want Python tuples (FastAPI
#: validates the parsed JSON in Python mode); the items stay strict
_ARRAY = Strict(False)


def _symbolic_state_model():
    """``SymbolicState`` as the service reads it: finite scores, every field strict (imported
    here: it pulls in the layouts). Its nested records are strict copies too."""
    from beliefgate.envs.overcooked.state import CounterObject, PlayerView, PotView, SymbolicState

    Position = Annotated[Tuple[int, int], _ARRAY]

    class PlayerViewIn(PlayerView):
        model_config = ConfigDict(strict=True, title="PlayerView")

        position: Position
        orientation: Position

    class PotViewIn(PotView):
        model_config = ConfigDict(strict=True, title="PotView")

        position: Position

    class CounterObjectIn(CounterObject):
        model_config = ConfigDict(strict=True, title="CounterObject")

        position: Position

    class SymbolicStateIn(SymbolicState):
        model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True,
                                  title="SymbolicState")

        players: Annotated[Tuple[PlayerViewIn, ...], _ARRAY] = _inherited(SymbolicState, "players")
        pots: Annotated[Tuple[PotViewIn, ...], _ARRAY] = _inherited(SymbolicState, "pots")
        counters: Annotated[Tuple[CounterObjectIn, ...], _ARRAY] = _inherited(SymbolicState, "counters")

    return SymbolicStateIn


SymbolicStateIn = _symbolic_state_model()
ObserveRequest.model_rebuild()


# --------------------------------------------------------------------------- kappa requests


class ServiceKappaParams(KappaParamFields):
    """:class:`~beliefgate.beliefs.kappa.KappaParams` with the service's limit on ``num_points``,
    every field strict."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, strict=True, title="KappaParams")

    num_points: int = Field(KappaParamFields.model_fields["num_points"].default, ge=64, le=MAX_KAPPA_POINTS,
                            multiple_of=2,
                            description="points of the quasi-random rule (Sobol + antithetic mirror)")

    def to_kappa_params(self) -> KappaParams:
        return KappaParams(**self.model_dump())


class CreateKappaRequest(BaseModel):
    """Create a kappa session: the decision's branch names (distinct; at least one) and params."""

    model_config = _REQUEST

    branches: list[SkillName] = Field(..., max_length=MAX_BRANCHES,
                                      description="distinct branch names, e.g. strategy:first-action")
    params: ServiceKappaParams = Field(default_factory=ServiceKappaParams)


#: the bound as the messages write it


def _score(value: Any) -> Union[int, float]:
    """A rollout score: a JSON number (an integer stays one) within ``±SCORE_BOUND``; NaN and
    the infinities fail the bound. One error, at the field itself."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and -SCORE_BOUND <= value <= SCORE_BOUND:
        return value
    raise PydanticCustomError("finite_score", "the score must be a finite number in {bounds}", {"bounds": SCORE_RANGE})


#: a rollout score (see :func:`_score`)
Score = Annotated[Union[int, float], PlainValidator(_score),
                  WithJsonSchema({"type": "number", "minimum": -SCORE_BOUND, "maximum": SCORE_BOUND})]


class JudgeRequest(BaseModel):
    """``Kappa.judge``: ``y = 1`` when ``left`` was judged better than ``right`` (0: the reverse)."""

    model_config = _REQUEST

    left: SkillRef = Field(..., description="branch name or index")
    right: SkillRef = Field(..., description="branch name or index")
    y: StrictInt = Field(..., **_bounds(0, 1), description="1: left better, 0: right better (kappa checks it: "
                                                            "JudgmentValueError, as in process)")


class RolloutRequest(BaseModel):
    """``Kappa.rollout``: ``branch`` imagined ``depth`` steps ahead scored ``score``."""

    model_config = _REQUEST

    branch: SkillRef = Field(..., description="branch name or index")
    depth: StrictInt = Field(..., le=MAX_DEPTH, json_schema_extra={"minimum": 1},
                             description="steps imagined ahead, >= 1 (kappa checks it: DepthError, as in process)")
    score: Score = Field(..., description=f"progress score, a finite number in {SCORE_RANGE}")


class KappaEvidenceRequest(BaseModel):
    """Several pieces of evidence, applied in order, all or nothing: the judgments first,
    then the rollouts (as one rollout round when ``round`` is true)."""

    model_config = _REQUEST

    judgments: list[JudgeRequest] = Field(default_factory=list, max_length=MAX_EVIDENCE)
    rollouts: list[RolloutRequest] = Field(default_factory=list, max_length=MAX_EVIDENCE)
    round: StrictBool = Field(False, description="the rollouts form one rollout round (nucleus rule, R limit)")


# --------------------------------------------------------------------------- responses


class StableMapInfoOut(BaseModel):
    """The stable-MAP gate's verdict on one step (``StableMapInfo``)."""

    map_skill: int = Field(description="m_t, MAP of the pre-update belief")
    confidence: float = Field(description="b(m_t)")
    stable: int = Field(description="steps the pre-update MAP has been unchanged")
    l_t: float = Field(description="likelihood ratio in [0, 1]")
    log_l: Optional[float] = Field(description="log l_t; null = -inf (l_t = 0)")
    contradiction: bool
    interrupt: bool
    suppressed_reason: Optional[str]


class ChangePointInfoOut(BaseModel):
    """The change-point gate's verdict on one step (``ChangePointInfo``)."""

    prob: Optional[float] = Field(description="P(switch in the last L steps); null when not tracked")
    switch_prob: Optional[float] = Field(description="P(z_t != z_{t-1}); null when not tracked")
    fired: bool
    suppressed_reason: Optional[str]


class CusumInfoOut(BaseModel):
    """The CUSUM gate's verdict on one step (``CusumInfo``; sessions with ``gate="cusum"``)."""

    statistic: Optional[float] = Field(description="max_k S(k): the largest CUSUM of a log-likelihood ratio against "
                                                   "the MAP; null = +inf (the observation is impossible under the MAP)")
    reference: int = Field(description="the pre-update MAP skill the sums compare against")
    fired: bool
    suppressed_reason: Optional[str]


class GateInfoOut(BaseModel):
    """Diagnostics of one step (``GateInfo``)."""

    t: int
    prior: list[float] = Field(description="pre-update belief, float[K]")
    posterior: list[float]
    stable_map: StableMapInfoOut
    changepoint: ChangePointInfoOut
    interrupt: bool
    suppressed_reason: Optional[str]
    log_evidence: float = Field(description="log p(a_t | a_<t)")
    weight: float
    completed: int = Field(description="completed skill index, -1 none")
    ego_active: bool
    cusum: Optional[CusumInfoOut] = Field(None, description="the CUSUM gate's verdict; null unless gate is 'cusum'")


class DecisionOut(BaseModel):
    """What a step returns: the fields of the Python ``Decision``."""

    posterior: list[float] = Field(description="P(z_t | a_0:t), float[K]")
    map_skill: int
    map_name: str
    confidence: float
    contradiction: bool
    interrupt: bool
    changepoint: bool
    changepoint_prob: Optional[float] = Field(description="null when not tracked")
    switch_prob: Optional[float] = Field(description="null when not tracked")
    predictive: list[float] = Field(description="belief about z_{t+1} before a_{t+1}")
    info: GateInfoOut


class StableMapStateOut(BaseModel):
    prev_map: int = Field(description="m_{t-1}; -1 before the first step")
    stable: int
    t_last_interrupt: Optional[int] = Field(description="step of the last interrupt or replan; null: never")
    num_contradictions: int
    num_interrupts: int


class ChangePointStateOut(BaseModel):
    armed: bool
    t_last_fire: Optional[int] = Field(description="step of the last firing or replan; null: never")
    num_fires: int


class CusumStateOut(BaseModel):
    reference: int = Field(description="the skill the sums compare against; -1 before the first step")
    statistic: Optional[float] = Field(description="max_k S(k) now; null = +inf")
    num_fires: int


class SessionOut(BaseModel):
    """A session and the current state of its gate."""

    session_id: str
    kind: Literal["logprobs", "overcooked"]
    layout: Optional[str]
    partner: Optional[int]
    num_skills: int
    skill_names: list[str]
    params: GateParams
    prior_counts: list[float]
    t: int = Field(description="index of the next step")
    version: int = Field(description="number of state changes acknowledged (steps, replans, resets)")
    posterior: list[float] = Field(description="belief after the last step (the prior before the first)")
    memory: list[float] = Field(description="completion counts the smoothed prior uses")
    log_evidence: float = Field(description="sum of log p(a_t | a_<t) this episode")
    stable_map: StableMapStateOut
    changepoint: ChangePointStateOut
    cusum: Optional[CusumStateOut] = Field(None, description="the CUSUM gate's counters; null unless gate is 'cusum'")
    state_digest: str = Field(description="sha256 of the gate's full state: equal digests, equal states")
    created_at: float = Field(description="unix time of creation")
    idle_s: float = Field(description="seconds since the last successful request")
    expires_in_s: Optional[float] = Field(description="seconds until expiry if idle; null: never")


class KappaOut(BaseModel):
    """A kappa session and its current read-out (``KappaInfo``)."""

    session_id: str
    kind: Literal["kappa"]
    branches: list[str]
    params: KappaParamFields
    argmax: dict[str, float] = Field(description="P(argmax U = branch | evidence) per branch; sums to one")
    argmax_probs: list[float] = Field(description="the same, in branch order")
    kappa: float = Field(description="largest argmax probability")
    best: str = Field(description="branch with the largest argmax probability")
    nucleus: list[str] = Field(description="smallest set of branches with argmax mass >= nucleus_p")
    commit: bool = Field(description="kappa >= theta")
    rounds: int
    rounds_left: int
    next: Literal["commit", "rollout", "stop"]
    mean: list[float] = Field(description="approximate posterior mean of each utility")
    sd: list[float] = Field(description="approximate posterior sd of each utility")
    method: str = Field(description="how the argmax probabilities were computed")
    ess: float = Field(description="effective sample fraction of the importance weights (1 where unused)")
    refinements: int
    points: int = Field(description="size of the quasi-random rule used for this read-out")
    t: int = Field(description="pieces of evidence applied")
    num_judgments: int
    num_rollouts: int
    version: int = Field(description="number of state changes acknowledged")
    state_digest: str = Field(description="sha256 of the kappa state: equal digests, equal states")
    created_at: float
    idle_s: float
    expires_in_s: Optional[float]


class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str
    sessions: int
    max_sessions: int
    ttl_s: Optional[float]
    snapshot: bool
    auth: bool


class ErrorOut(BaseModel):
    """Every 4xx/5xx body: a machine-readable ``error`` kind and a human ``detail``."""

    error: str = Field(description="kind: an exception name (ShapeMismatchError, ...) or a service error")
    detail: str
    errors: Optional[list[dict[str, Any]]] = Field(None, description="per-field problems (validation errors)")


# --------------------------------------------------------------------------- payload builders


def _num(x: float) -> Optional[float]:
    """A float for JSON: non-finite values become ``None``."""
    x = float(x)
    return x if math.isfinite(x) else None


def decision_payload(d: Decision) -> dict:
    """The JSON-ready dict of a :class:`Decision` (see :class:`DecisionOut`)."""
    info = d.info
    sm = info.stable_map
    cp = info.changepoint
    return {
        "posterior": d.posterior.tolist(),
        "map_skill": int(d.map_skill),
        "map_name": d.map_name,
        "confidence": float(d.confidence),
        "contradiction": bool(d.contradiction),
        "interrupt": bool(d.interrupt),
        "changepoint": bool(d.changepoint),
        "changepoint_prob": _num(d.changepoint_prob),
        "switch_prob": _num(d.switch_prob),
        "predictive": np.asarray(d.predictive, dtype=np.float64).tolist(),
        "info": {
            "t": int(info.t),
            "prior": np.asarray(info.prior, dtype=np.float64).tolist(),
            "posterior": np.asarray(info.posterior, dtype=np.float64).tolist(),
            "stable_map": {
                "map_skill": int(sm.map_skill),
                "confidence": float(sm.confidence),
                "stable": int(sm.stable),
                "l_t": float(sm.l_t),
                "log_l": _num(sm.log_l),
                "contradiction": bool(sm.contradiction),
                "interrupt": bool(sm.interrupt),
                "suppressed_reason": sm.suppressed_reason,
            },
            "changepoint": {
                "prob": _num(cp.prob),
                "switch_prob": _num(cp.switch_prob),
                "fired": bool(cp.fired),
                "suppressed_reason": cp.suppressed_reason,
            },
            "interrupt": bool(info.interrupt),
            "suppressed_reason": info.suppressed_reason,
            "log_evidence": float(info.log_evidence),
            "weight": float(info.weight),
            "completed": int(info.completed),
            "ego_active": bool(info.ego_active),
            "cusum": None if info.cusum is None else {
                "statistic": _num(info.cusum.statistic),
                "reference": int(info.cusum.reference),
                "fired": bool(info.cusum.fired),
                "suppressed_reason": info.cusum.suppressed_reason,
            },
        },
    }


def decision_is_finite(d: Decision) -> bool:
    """Whether every number a Decision must carry is finite (NaN is allowed only where
    the change-point statistics are untracked, ``log_l`` may be -inf)."""
    info = d.info
    arrays = (d.posterior, d.predictive, info.prior)
    return (all(bool(np.isfinite(a).all()) for a in arrays)
            and math.isfinite(info.log_evidence) and math.isfinite(d.confidence)
            and math.isfinite(info.stable_map.l_t) and math.isfinite(info.stable_map.confidence))


def _never(t: int) -> Optional[int]:
    from beliefgate.beliefs.gates import NEVER

    return None if t == NEVER else int(t)


def state_digest(obj: Any) -> str:
    """sha256 over a canonical encoding of a (nested NamedTuple / array / scalar) state."""
    h = hashlib.sha256()

    def feed(x: Any) -> None:
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            h.update(b"T" + type(x).__name__.encode() + len(x).to_bytes(4, "little"))
            for name, value in zip(x._fields, x):
                h.update(name.encode() + b"=")
                feed(value)
        elif isinstance(x, np.ndarray):
            a = np.ascontiguousarray(x)
            h.update(b"A" + a.dtype.str.encode() + repr(a.shape).encode())
            h.update(a.tobytes())
        elif isinstance(x, (bool, np.bool_)):
            h.update(b"B1" if x else b"B0")
        elif isinstance(x, (int, np.integer)):
            h.update(b"I" + str(int(x)).encode() + b";")
        elif isinstance(x, (float, np.floating)):
            h.update(b"F" + struct.pack("<d", float(x)))
        elif x is None:
            h.update(b"N")
        elif isinstance(x, str):
            h.update(b"S" + len(x).to_bytes(4, "little") + x.encode())
        elif isinstance(x, (tuple, list)):
            h.update(b"L" + len(x).to_bytes(4, "little"))
            for value in x:
                feed(value)
        else:
            raise TypeError(f"cannot digest a {type(x).__name__}")

    feed(obj)
    return h.hexdigest()


def kappa_payload(kappa: Kappa) -> dict:
    """The kappa-derived part of :class:`KappaOut`."""
    info = kappa.info
    names = list(kappa.branches)
    return {
        "branches": names,
        "params": kappa.params.model_dump(mode="json"),
        "argmax": info.probs_dict(names),
        "argmax_probs": [float(p) for p in info.argmax_probs],
        "kappa": float(info.kappa),
        "best": info.best_name,
        "nucleus": list(info.nucleus_names),
        "commit": bool(info.commit),
        "rounds": int(info.rounds),
        "rounds_left": int(info.rounds_left),
        "next": info.next,
        "mean": [float(v) for v in info.mean],
        "sd": [float(v) for v in info.sd],
        "method": info.method,
        "ess": float(info.ess),
        "refinements": int(info.refinements),
        "points": int(info.points),
        "t": int(info.t),
        "num_judgments": int(info.num_judgments),
        "num_rollouts": int(info.num_rollouts),
        "state_digest": state_digest(kappa.state),
    }


def gate_state_payload(gate: Gate) -> dict:
    """The gate-derived part of :class:`SessionOut`."""
    st = gate.state
    bs, sm, cp = st.belief, st.stable_map, st.changepoint
    return {
        "num_skills": gate.num_skills,
        "skill_names": list(gate.skill_names),
        "params": gate.params.model_dump(mode="json"),
        "t": int(bs.t),
        "posterior": np.asarray(bs.belief, dtype=np.float64).tolist(),
        "memory": np.asarray(bs.counts, dtype=np.float64).tolist(),
        "log_evidence": float(bs.log_evidence),
        "stable_map": {
            "prev_map": int(sm.prev_map),
            "stable": int(sm.stable),
            "t_last_interrupt": _never(sm.t_last_interrupt),
            "num_contradictions": int(sm.num_contradictions),
            "num_interrupts": int(sm.num_interrupts),
        },
        "changepoint": {
            "armed": bool(cp.armed),
            "t_last_fire": _never(cp.t_last_fire),
            "num_fires": int(cp.num_fires),
        },
        "cusum": None if st.cusum is None else {
            "reference": int(st.cusum.reference),
            "statistic": _num(float(np.max(st.cusum.sums))),
            "num_fires": int(st.cusum.num_fires),
        },
        "state_digest": state_digest(st),
    }


__all__ = [
    "MAX_SKILLS",
    "MAX_ACTIONS",
    "MAX_HORIZON",
    "SCORE_BOUND",
    "SESSION_ID_PATTERN",
    "ServiceGateParams",
    "CreateSessionRequest",
    "StepRequest",
    "StepEvidenceRequest",
    "StepLoglikRequest",
    "ObserveRequest",
    "ResetRequest",
    "SymbolicStateIn",
    "DecisionOut",
    "GateInfoOut",
    "StableMapInfoOut",
    "ChangePointInfoOut",
    "CusumInfoOut",
    "SessionOut",
    "ServiceKappaParams",
    "CreateKappaRequest",
    "JudgeRequest",
    "RolloutRequest",
    "KappaEvidenceRequest",
    "KappaOut",
    "kappa_payload",
    "HealthOut",
    "ErrorOut",
    "decision_payload",
    "decision_is_finite",
    "gate_state_payload",
    "state_digest",
]
