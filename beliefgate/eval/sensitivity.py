"""Sensitivity analyses of the gates: one-at-a-time (OAT) and global (Sobol, Morris).

Everything here replays *logged* partner behaviour (``beliefgate.envs.trajlog``
logs) through the gate for many :class:`~beliefgate.beliefs.gate.GateParams`
configurations and measures, per configuration (``OUTPUTS``):

* interrupts per episode;
* against the partner's ground-truth hidden skill switches, when the logs carry
  the partner's true skills: mean detection delay (a miss counts as the whole
  detection window), detection rate and false alarms per 100 steps
  (:func:`beliefgate.eval.replay.score_switches`, pooled over episodes);
* MAP accuracy (share of steps with a known true skill where the posterior's MAP
  is that skill) and mean confidence (mean posterior probability of the MAP).

Why the replay is cheap (see ``docs/sensitivity.md``)
    The belief -- posterior, pre-update belief, its MAP ``m_t``, confidence
    ``conf_t``, stable count ``stable_t`` and the log ratio
    ``r_t = log[pi(a_t | m_t) / reference]`` -- depends only on the *belief*
    parameters (``hazard``, ``alpha``, ``window``, ``cp_horizon``; ``model``,
    ``reference``) and the *evidence* parameters (``beta``, ``epsilon``). The
    *decision* parameters (``tau_obs``, ``likelihood_scale``, ``confidence_floor``,
    ``n_stable``, ``cooldown``, ``cp_threshold``, ``cp_release``, ``cp_cooldown``)
    only turn that sequence into interrupts. So configurations are grouped by
    their belief key, the belief sequence is computed once per (group, log) with
    the scalar :class:`~beliefgate.beliefs.gate.Gate`, and every configuration of
    the group advances through it together, as NumPy arrays of shape ``[C]``
    (:func:`vectorised_interrupts`). The result equals the scalar gate exactly
    (``tests/test_sensitivity.py``).

Parameter ranges (:func:`parse_range`)
    ``NAME=LOW:HIGH:N`` (OAT grid), ``NAME=LOW:HIGH`` (global), ``NAME=v1,v2,...``
    (explicit OAT values); an optional ``:log`` or ``:lin`` suffix fixes the
    scale. Without it the scale is automatic: logarithmic when ``LOW > 0`` and
    ``HIGH / LOW >= 100`` (the range spans two decades or more), else linear.
    Integer parameters (``n_stable``, ``cooldown``, ``window``, ``cp_horizon``,
    ``cp_cooldown``) need integer bounds and map a unit-interval sample ``u`` to
    ``floor(LOW + u (HIGH - LOW + 1))`` (capped at ``HIGH``): every integer of the
    range has mass ``1 / (HIGH - LOW + 1)``; with a log scale
    ``floor(LOW ((HIGH + 1) / LOW)^u)``, mass ``log((k + 1) / k) / log((HIGH + 1) / LOW)``.
    Every range is validated (name, order, integrality, the field's own bounds,
    relevance to the base configuration) before any work starts.

Closed loop (:func:`plan_closed_loop`, :func:`run_closed_loop_oat`)
    The same one-at-a-time sweep played as real episodes of an evaluation grid:
    each configuration is the grid with its ``gate:`` overrides set to it, run by
    the harness (:func:`beliefgate.eval.runner.run_grid`, any executor) into its
    own resumable sub-directory; per value it reports reward, deliveries, replans
    and interrupts per episode, the belief-action gap rate and MAP accuracy
    (:data:`CLOSED_LOOP_OUTPUTS`) with bootstrap CIs over episodes.
"""

from __future__ import annotations
from beliefgate.errors import InputError

import difflib
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Literal, Mapping, Optional, Sequence, Tuple

import numpy as np

from beliefgate.beliefs.errors import BeliefInputError
from beliefgate.beliefs.gate import Gate, GateParams
from beliefgate.beliefs.gates import NEVER
from beliefgate.figures import pyplot, save_figure

# --------------------------------------------------------------------------- errors


class SensitivityError(InputError):
    """Base class of the sensitivity module's input errors."""


class RangeSpecError(SensitivityError):
    """A parameter range is malformed or invalid (bad syntax, LOW >= HIGH, ...)."""


class UnknownParameterError(RangeSpecError):
    """The range names no sweepable ``GateParams`` field."""


class IrrelevantParameterError(RangeSpecError):
    """The parameter cannot change any output under the base configuration."""


# --------------------------------------------------------------------------- parameters


Kind = Literal["decision", "belief", "evidence"]


@dataclass(frozen=True)
class ParamSpec:
    """A sweepable ``GateParams`` field.

    ``kind``: ``"decision"`` (only turns the belief into interrupts: vectorised),
    ``"belief"`` (changes the belief: one belief pass per distinct value) or
    ``"evidence"`` (changes the controller likelihoods: evidence recomputed, then a
    belief pass); ``integer``: integer-valued; ``needs``: when the field matters.
    """

    name: str
    kind: Kind
    integer: bool
    symbol: str
    needs: Optional[str] = None  # "stable_map", "changepoint" or "windowed"


PARAMETERS: Dict[str, ParamSpec] = {
    p.name: p
    for p in (
        ParamSpec("tau_obs", "decision", False, "τ_obs", "stable_map"),
        ParamSpec("likelihood_scale", "decision", False, "λ", "stable_map"),
        ParamSpec("confidence_floor", "decision", False, "c_floor", "stable_map"),
        ParamSpec("n_stable", "decision", True, "n_stable", "stable_map"),
        ParamSpec("cooldown", "decision", True, "cooldown", "stable_map"),
        ParamSpec("cp_threshold", "decision", False, "cp_threshold", "changepoint"),
        ParamSpec("cp_release", "decision", False, "cp_release", "changepoint"),
        ParamSpec("cp_cooldown", "decision", True, "cp_cooldown", "changepoint"),
        ParamSpec("hazard", "belief", False, "h"),
        ParamSpec("alpha", "belief", False, "α"),
        ParamSpec("window", "belief", True, "window", "windowed"),
        ParamSpec("cp_horizon", "belief", True, "L", "changepoint"),
        ParamSpec("beta", "evidence", False, "β"),
        ParamSpec("epsilon", "evidence", False, "ε"),
    )
}
#: Decision parameters, in the order the vectorised replay reads them.
DECISION_PARAMS = tuple(n for n, p in PARAMETERS.items() if p.kind == "decision")
#: Parameters that change the belief sequence (evidence ones included).
BELIEF_PARAMS = tuple(n for n, p in PARAMETERS.items() if p.kind != "decision")
#: The five stable-MAP gate parameters (the benchmark's global analysis).
GATE_FIVE = ("tau_obs", "likelihood_scale", "confidence_floor", "n_stable", "cooldown")
#: Parameters the paper's Table 7 varies, with the direction of their effect on interrupts.
TABLE7_DIRECTIONS = {"tau_obs": +1, "likelihood_scale": +1, "confidence_floor": -1, "cooldown": -1}
_CATEGORICAL = ("model", "reference", "gate", "track_changepoint")

#: Outputs measured per configuration, with their display labels.
OUTPUTS: Dict[str, str] = {
    "interrupts_per_episode": "interrupts / episode",
    "detection_delay": "detection delay (steps)",
    "false_alarms_per_100": "false alarms / 100 steps",
    "detection_rate": "detection rate",
    "map_accuracy": "MAP accuracy",
    "mean_confidence": "mean confidence",
}
#: Outputs that need the logs' ground truth.
TRUTH_OUTPUTS = ("detection_delay", "false_alarms_per_100", "detection_rate", "map_accuracy")

AUTO_LOG_RATIO = 100.0  # HIGH / LOW at or above which the automatic scale is logarithmic
Scale = Literal["linear", "log"]


@dataclass(frozen=True)
class ParamRange:
    """A validated range of one parameter.

    ``low < high`` (both in the parameter's valid set); ``num``: OAT grid size
    (``None`` for a global range); ``values``: explicit OAT values (then ``num`` is
    their count); ``scale``: ``"linear"`` or ``"log"``; ``integer``: integer
    parameter; ``levels``: for a global (Sobol) range of a belief-side
    parameter, the number of equally likely levels it is quantised to
    (``None``: continuous). ``name`` need not be a gate parameter: any range works
    with :func:`run_global` (e.g. the Ishigami test function).
    """

    name: str
    low: float
    high: float
    num: Optional[int] = None
    scale: Scale = "linear"
    integer: bool = False
    values: Optional[Tuple[float, ...]] = None
    levels: Optional[int] = None

    def __post_init__(self):
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise RangeSpecError(f"{self.name}: bounds must be finite numbers")
        if self.low >= self.high:
            raise RangeSpecError(f"{self.name}: LOW must be < HIGH, got {_fmt(self.low)} >= {_fmt(self.high)}")
        if self.scale not in ("linear", "log"):
            raise RangeSpecError(f"{self.name}: scale must be 'linear' or 'log', got {self.scale!r}")
        if self.integer and not (float(self.low).is_integer() and float(self.high).is_integer()):
            raise RangeSpecError(f"{self.name} is an integer parameter: bounds must be integers, "
                                 f"got {_fmt(self.low)}:{_fmt(self.high)}")
        if self.scale == "log" and self.low <= 0:
            raise RangeSpecError(f"{self.name}: a log scale needs LOW > 0, got {_fmt(self.low)}")
        if self.scale == "log" and self.integer and self.low < 1:
            raise RangeSpecError(f"{self.name}: an integer log scale needs LOW >= 1")
        if self.num is not None and (isinstance(self.num, bool) or int(self.num) != self.num or self.num < 2):
            raise RangeSpecError(f"{self.name}: N must be an integer >= 2, got {self.num!r}")
        if self.levels is not None and self.levels < 2:
            raise RangeSpecError(f"{self.name}: levels must be >= 2, got {self.levels}")

    # ------------------------------------------------------------------ OAT

    def grid(self) -> np.ndarray:
        """The OAT values, ascending: explicit values, or ``num`` points equally spaced
        on the range's scale (``geomspace`` for log); integer parameters round each
        point half up and drop duplicates (so the grid may hold fewer than ``num``)."""
        if self.values is not None:
            return np.array(sorted(self.values), dtype=float)
        if self.num is None:
            raise RangeSpecError(f"{self.name}: a one-at-a-time range needs N (NAME=LOW:HIGH:N)")
        pts = np.geomspace(self.low, self.high, self.num) if self.scale == "log" else np.linspace(
            self.low, self.high, self.num)
        if self.integer:
            pts = np.unique(np.floor(pts + 0.5))
        return pts

    # ------------------------------------------------------------------ global

    def from_unit(self, u: np.ndarray) -> np.ndarray:
        """Map unit-interval samples ``u`` (float[n] in [0, 1]) to parameter values.

        Continuous: ``LOW + u (HIGH - LOW)`` (linear) or ``LOW (HIGH / LOW)^u`` (log);
        with ``levels = L`` the sample is first moved to the centre of its bin,
        ``u' = (min(floor(u L), L - 1) + 1/2) / L``: ``L`` equally likely values.
        Integer: ``floor(LOW + u (HIGH - LOW + 1))`` (linear) or
        ``floor(LOW ((HIGH + 1) / LOW)^u)`` (log), capped at ``HIGH`` -- equal mass per
        integer (linear) or per log-interval ``[k, k + 1)`` (log); never a floor of the
        raw continuous value.
        """
        u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
        lo, hi = float(self.low), float(self.high)
        if self.integer:
            if self.scale == "log":
                x = np.floor(lo * np.exp(u * math.log((hi + 1.0) / lo)))
            else:
                x = np.floor(lo + u * (hi - lo + 1.0))
            return np.clip(x, lo, hi)
        if self.levels is not None:
            u = (np.minimum(np.floor(u * self.levels), self.levels - 1) + 0.5) / self.levels
        if self.scale == "log":
            x = lo * np.exp(u * math.log(hi / lo))
        else:
            x = lo + u * (hi - lo)
        return np.clip(x, lo, hi)

    def spec(self) -> str:
        """The range written back in the command-line syntax."""
        if self.values is not None:
            return f"{self.name}=" + ",".join(_fmt(v) for v in self.values)
        text = f"{self.name}={_fmt(self.low)}:{_fmt(self.high)}"
        if self.num is not None:
            text += f":{self.num}"
        return text + (":log" if self.scale == "log" else "")

    def to_dict(self) -> dict:
        return {"name": self.name, "low": self.low, "high": self.high, "num": self.num, "scale": self.scale,
                "integer": self.integer, "values": list(self.values) if self.values is not None else None,
                "levels": self.levels, "spec": self.spec()}


def _fmt(x: float) -> str:
    return f"{x:g}" if isinstance(x, (float, np.floating)) else str(x)


_NAME_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$")


def looks_like_range(text: str) -> bool:
    """``NAME=...`` with an identifier before the ``=`` (used by the CLI to tell
    parameter ranges from log paths among positional arguments)."""
    return bool(_NAME_RE.match(text))


def _number(text: str, what: str, name: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise RangeSpecError(f"{name}: {what} {text.strip()!r} is not a number") from None
    if not math.isfinite(v):
        raise RangeSpecError(f"{name}: {what} must be finite, got {text.strip()!r}")
    return v


def parse_range(text: str, mode: Literal["oat", "global"], base: Optional[GateParams] = None) -> ParamRange:
    """Parse and validate one ``NAME=SPEC`` against ``GateParams`` and ``base``.

    ``mode="oat"``: ``NAME=LOW:HIGH:N[:log|:lin]`` or ``NAME=v1,v2,...``;
    ``mode="global"``: ``NAME=LOW:HIGH[:log|:lin]``. Raises
    :class:`UnknownParameterError`, :class:`IrrelevantParameterError` or
    :class:`RangeSpecError` with a message naming the problem.
    """
    base = base or GateParams()
    m = _NAME_RE.match(text)
    if not m:
        raise RangeSpecError(f"{text!r}: expected NAME=LOW:HIGH" + (":N" if mode == "oat" else ""))
    name, spec = m.group(1), m.group(2).strip()
    if name not in PARAMETERS:
        if name in _CATEGORICAL:
            raise UnknownParameterError(f"{name} is categorical, not a numeric range; set it in the base "
                                        "parameters (--base PARAMS.json)")
        close = difflib.get_close_matches(name, list(PARAMETERS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownParameterError(f"unknown parameter {name!r}{hint}; sweepable: {', '.join(PARAMETERS)}")
    info = PARAMETERS[name]
    _check_relevant(info, base)
    if not spec:
        raise RangeSpecError(f"{name}: empty range")
    parts = [p.strip() for p in spec.split(":")]
    scale: Optional[str] = None
    if parts[-1].lower() in ("log", "lin", "linear"):
        scale = "log" if parts.pop().lower() == "log" else "linear"
    values = None
    num = None
    if len(parts) == 1 and "," in parts[0]:
        if mode != "oat":
            raise RangeSpecError(f"{name}: explicit values are for one-at-a-time sweeps; use NAME=LOW:HIGH")
        values = sorted({_number(v, "value", name) for v in parts[0].split(",") if v.strip()})
        if len(values) < 2:
            raise RangeSpecError(f"{name}: give at least two distinct values")
        low, high = values[0], values[-1]
    elif mode == "oat":
        if len(parts) != 3:
            raise RangeSpecError(f"{name}: expected {name}=LOW:HIGH:N (or {name}=v1,v2,...), got {spec!r}")
        low, high = _number(parts[0], "LOW", name), _number(parts[1], "HIGH", name)
        n = _number(parts[2], "N", name)
        if not n.is_integer() or n < 2:
            raise RangeSpecError(f"{name}: N must be an integer >= 2, got {parts[2]!r}")
        num = int(n)
    else:
        if len(parts) != 2:
            raise RangeSpecError(f"{name}: expected {name}=LOW:HIGH, got {spec!r}")
        low, high = _number(parts[0], "LOW", name), _number(parts[1], "HIGH", name)
    if low >= high:
        raise RangeSpecError(f"{name}: LOW must be < HIGH, got {_fmt(low)} >= {_fmt(high)}")
    if info.integer:
        bad = [v for v in (values or (low, high)) if not float(v).is_integer()]
        if bad:
            raise RangeSpecError(f"{name} is an integer parameter: bounds and values must be integers, "
                                 f"got {_fmt(bad[0])}")
    for v in (values or (low, high)):
        _check_field(name, v)
    if scale is None:
        scale = "log" if (low > 0 and high / low >= AUTO_LOG_RATIO) else "linear"
    if values is not None:
        return ParamRange(name, low, high, len(values), scale, info.integer, tuple(values))
    return ParamRange(name, low, high, num, scale, info.integer)


def _check_relevant(info: ParamSpec, base: GateParams) -> None:
    if info.needs == "windowed" and base.model != "windowed":
        raise IrrelevantParameterError(
            f"{info.name} only matters for model='windowed' (the base uses model={base.model!r}; "
            "set it with --base PARAMS.json)")
    if info.needs == "changepoint" and base.gate == "stable_map":
        raise IrrelevantParameterError(
            f"{info.name} only changes interrupts when gate is 'changepoint' or 'either' "
            "(the base uses gate='stable_map'; set it with --base PARAMS.json)")
    if info.needs == "stable_map" and base.gate == "changepoint":
        raise IrrelevantParameterError(
            f"{info.name} only changes interrupts of the stable-MAP gate; the base uses gate='changepoint'")


def _check_field(name: str, value: float) -> None:
    """The field's own constraints (e.g. tau_obs in [0, 1]), not the model's joint ones."""
    from typing import Annotated

    from pydantic import TypeAdapter

    info = GateParams.model_fields[name]
    v = int(value) if PARAMETERS[name].integer else float(value)
    try:
        TypeAdapter(Annotated[(info.annotation, *info.metadata)]).validate_python(v)
    except ValueError as exc:
        errors = exc.errors() if hasattr(exc, "errors") else None
        detail = errors[0].get("msg", str(exc)) if errors else str(exc)
        raise RangeSpecError(f"{name}={_fmt(value)} is not a valid GateParams value: {detail}") from None


def _check_value(base: GateParams, name: str, value: float) -> None:
    """``base`` with ``name = value`` must be a valid GateParams (joint constraints included)."""
    v = int(value) if PARAMETERS[name].integer else float(value)
    try:
        base.replace(**{name: v})
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        errors = exc.errors() if hasattr(exc, "errors") else None
        detail = errors[0].get("msg", str(exc)) if errors else str(exc)
        raise RangeSpecError(f"{name}={_fmt(value)} is not a valid GateParams value: {detail}") from None


def parse_ranges(texts: Sequence[str], mode: Literal["oat", "global"],
                 base: Optional[GateParams] = None) -> List[ParamRange]:
    """Parse several ranges; also rejects duplicates and jointly invalid ranges
    (``cp_release`` above ``cp_threshold`` somewhere in the sampled box)."""
    base = base or GateParams()
    if not texts:
        raise RangeSpecError("give at least one parameter range (--param NAME=LOW:HIGH" +
                             (":N)" if mode == "oat" else ")"))
    ranges = [parse_range(t, mode, base) for t in texts]
    seen = set()
    for r in ranges:
        if r.name in seen:
            raise RangeSpecError(f"{r.name} is given twice")
        seen.add(r.name)
    by = {r.name: r for r in ranges}
    if mode == "global" and ("cp_release" in by or "cp_threshold" in by):
        rel_hi = by["cp_release"].high if "cp_release" in by else base.cp_release
        thr_lo = by["cp_threshold"].low if "cp_threshold" in by else base.cp_threshold
        if rel_hi > thr_lo:
            raise RangeSpecError(f"cp_release may exceed cp_threshold in this box (cp_release up to {_fmt(rel_hi)}, "
                                 f"cp_threshold down to {_fmt(thr_lo)}); GateParams requires release <= threshold")
    if mode == "oat":  # every configuration must be a valid GateParams
        for r in ranges:
            for v in r.grid():
                _check_value(base, r.name, float(v))
    return ranges


def prepare_global_ranges(ranges: Sequence[ParamRange], method: str, belief_levels: Optional[int]
                          ) -> List[ParamRange]:
    """For Sobol, quantise continuous belief-side ranges to ``belief_levels`` equally
    likely levels (each distinct value costs a belief pass per log); ``None`` or 0
    keeps them continuous. Morris samples a ``num_levels`` grid already."""
    out = []
    for r in ranges:
        spec = PARAMETERS.get(r.name)
        quantise = (method == "sobol" and belief_levels and spec is not None and spec.kind != "decision"
                    and not r.integer)
        out.append(ParamRange(r.name, r.low, r.high, None, r.scale, r.integer, None,
                              int(belief_levels) if quantise else None))
    return out


# --------------------------------------------------------------------------- configurations


@dataclass
class ConfigTable:
    """``C`` gate configurations: ``base`` with the sweepable fields given per row.

    ``columns[name]`` is float[C] for every name of :data:`PARAMETERS` (integer
    fields hold integral floats; ``window`` is NaN where ``None``).
    """

    base: GateParams
    columns: Dict[str, np.ndarray]

    @classmethod
    def from_values(cls, base: GateParams, values: Mapping[str, np.ndarray]) -> "ConfigTable":
        sizes = {len(np.atleast_1d(v)) for v in values.values()}
        if len(sizes) > 1:
            raise SensitivityError(f"columns of different lengths: {sorted(sizes)}")
        n = sizes.pop() if sizes else 1
        cols = {}
        for name, spec in PARAMETERS.items():
            if name in values:
                col = np.asarray(values[name], dtype=float).reshape(n)
            else:
                b = getattr(base, name)
                col = np.full(n, math.nan if b is None else float(b))
            cols[name] = col
        unknown = set(values) - set(PARAMETERS)
        if unknown:
            raise UnknownParameterError(f"unknown parameters {sorted(unknown)}")
        return cls(base, cols)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def value(self, name: str, i: int):
        v = float(self.columns[name][i])
        if math.isnan(v):
            return None
        return int(v) if PARAMETERS[name].integer else v

    def params(self, i: int) -> GateParams:
        """Configuration ``i`` as a validated :class:`GateParams`."""
        return self.base.replace(**{n: self.value(n, i) for n in PARAMETERS})

    def belief_key(self, i: int) -> tuple:
        return tuple(self.value(n, i) for n in BELIEF_PARAMS)

    def belief_groups(self) -> Dict[tuple, np.ndarray]:
        """Configuration indices grouped by their belief-side parameters."""
        mat = np.stack([self.columns[n] for n in BELIEF_PARAMS], axis=1)
        mat = np.where(np.isnan(mat), -1.0, mat)
        _, first, inverse = np.unique(mat, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        return {self.belief_key(int(first[g])): np.flatnonzero(inverse == g) for g in range(len(first))}

    def decision_columns(self, idx: Optional[np.ndarray] = None) -> "DecisionColumns":
        cols = {n: (self.columns[n] if idx is None else self.columns[n][idx]) for n in DECISION_PARAMS}
        return DecisionColumns.from_columns(cols)


@dataclass
class DecisionColumns:
    """The decision parameters of ``C`` configurations as arrays of shape ``[C]``.

    ``log_tau = log tau_obs`` (``-inf`` for 0, computed with :func:`math.log` exactly
    as :class:`~beliefgate.beliefs.gates.StableMapConfig` does); integer fields are int64.
    """

    log_tau: np.ndarray
    lam: np.ndarray
    c_floor: np.ndarray
    n_stable: np.ndarray
    cooldown: np.ndarray
    cp_threshold: np.ndarray
    cp_release: np.ndarray
    cp_cooldown: np.ndarray

    @classmethod
    def from_columns(cls, cols: Mapping[str, np.ndarray]) -> "DecisionColumns":
        tau = np.asarray(cols["tau_obs"], dtype=float)
        log_tau = np.array([math.log(t) if t > 0.0 else -math.inf for t in tau.tolist()])
        as_int = lambda k: np.asarray(cols[k], dtype=float).astype(np.int64)  # noqa: E731
        as_f = lambda k: np.asarray(cols[k], dtype=float)  # noqa: E731
        return cls(log_tau, as_f("likelihood_scale"), as_f("confidence_floor"), as_int("n_stable"),
                   as_int("cooldown"), as_f("cp_threshold"), as_f("cp_release"), as_int("cp_cooldown"))

    @classmethod
    def from_params(cls, params: Sequence[GateParams]) -> "DecisionColumns":
        return cls.from_columns({n: np.array([float(getattr(p, n)) for p in params]) for n in DECISION_PARAMS})

    def __len__(self) -> int:
        return len(self.lam)


# --------------------------------------------------------------------------- logs and belief traces


@dataclass
class LoggedEpisode:
    """One logged episode prepared for replays of one partner.

    ``truth[t]``: the partner's true skill index (-1 unknown); ``hidden[t]``: a
    hidden switch at ``t`` (:func:`beliefgate.eval.replay.ground_truth`);
    ``has_truth``: the log carries the partner's skills at all.
    """

    name: str
    trajectory: object
    partner: int
    skill_names: Tuple[str, ...]
    truth: np.ndarray
    hidden: np.ndarray
    has_truth: bool
    _evidence: Dict[tuple, list] = field(default_factory=dict, repr=False)

    @property
    def steps(self) -> int:
        return len(self.truth)

    def evidence(self, beta: float, epsilon: float) -> list:
        """The partner's per-step evidence under the controller's (beta, epsilon), cached."""
        key = (float(beta), float(epsilon))
        if key not in self._evidence:
            from beliefgate.eval.replay import partner_evidence

            self._evidence[key] = partner_evidence(self.trajectory, self.partner,
                                                   GateParams(beta=key[0], epsilon=key[1]))
        return self._evidence[key]

    def summary(self) -> dict:
        h = self.trajectory.header
        return {"name": self.name, "layout": h.layout, "seed": h.seed, "partner": self.partner,
                "partner_agent": h.partner, "steps": self.steps, "hidden_switches": int(self.hidden.sum()),
                "has_truth": self.has_truth}


def prepare_episode(trajectory, name: str = "episode", partner: Optional[int] = None,
                    base: Optional[GateParams] = None) -> LoggedEpisode:
    """Wrap a :class:`~beliefgate.envs.trajlog.Trajectory` for sensitivity replays.

    ``partner`` defaults to the player who is not the ego (``1 - header.seat``).
    """
    from beliefgate.envs.overcooked.observer import OvercookedObserver
    from beliefgate.eval.replay import ground_truth

    base = base or GateParams()
    h = trajectory.header
    players = len(h.agents)
    if partner is None:
        partner = 1 - h.seat if players == 2 else None
        if partner is None:
            raise SensitivityError(f"{name}: {players} players; say which one is the partner")
    if not 0 <= partner < players or partner == h.seat:
        raise SensitivityError(f"{name}: partner must be a player index other than the ego seat {h.seat}, "
                               f"got {partner}")
    if trajectory.final is None:
        raise SensitivityError(f"{name}: the log has no final state (the last step cannot be replayed)")
    names = tuple(OvercookedObserver(h.layout, base, partner=partner).skill_names)
    ep = LoggedEpisode(name, trajectory, partner, names, np.zeros(0, int), np.zeros(0, bool), False)
    ev = ep.evidence(base.beta, base.epsilon)
    truth, hidden = ground_truth(trajectory, partner, names, evidence=ev)
    ep.truth, ep.hidden = truth, hidden
    ep.has_truth = bool(np.any(truth >= 0))
    return ep


def resolve_log_paths(items: Sequence[str]) -> List[Path]:
    """Log files from paths (a directory stands for its ``*.jsonl`` files, sorted)."""
    out: List[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            found = sorted(p.glob("*.jsonl"))
            if not found:
                raise SensitivityError(f"{p}: directory holds no *.jsonl logs")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise SensitivityError(f"{p}: no such log file or directory")
    if not out:
        raise SensitivityError("give at least one trajectory log")
    return out


def load_episodes(paths: Sequence[Path], partner: Optional[int] = None, base: Optional[GateParams] = None,
                  progress: Optional[Callable[[int, int, str], None]] = None) -> List[LoggedEpisode]:
    """Read and prepare logs (:func:`beliefgate.envs.trajlog.read_log` errors name the line)."""
    from beliefgate.envs.trajlog import read_log

    episodes = []
    for i, p in enumerate(paths):
        if progress is not None:
            progress(i, len(paths), f"reading {Path(p).name}")
        episodes.append(prepare_episode(read_log(p), str(p), partner, base))
    return episodes


@dataclass
class BeliefTrace:
    """What one belief pass gives the decision replay (all float[T] / int[T]).

    ``stable``, ``conf``: stable_t and b(m_t) of the pre-update belief;
    ``log_ratio``: r_t (the gate's log l_t at λ = 1; 0 where undefined);
    ``weight``: tempering weight; ``post_map``, ``post_conf``: MAP and its
    probability after the update; ``cp_prob``: the change-point statistic (NaN
    when untracked).
    """

    stable: np.ndarray
    conf: np.ndarray
    log_ratio: np.ndarray
    weight: np.ndarray
    post_map: np.ndarray
    post_conf: np.ndarray
    cp_prob: np.ndarray

    def __len__(self) -> int:
        return len(self.stable)


def belief_params(base: GateParams, key: Optional[tuple] = None) -> GateParams:
    """Parameters of the belief pass for one belief key (``None``: the base's)."""
    changes = {} if key is None else dict(zip(BELIEF_PARAMS, key))
    needs_cp = base.gate != "stable_map"
    return base.replace(**changes, likelihood_scale=1.0, track_changepoint=needs_cp)


def belief_trace(evidence: list, skill_names: Sequence[str], params: GateParams) -> BeliefTrace:
    """Run the scalar gate once over ``evidence`` and keep what the decisions need.

    ``params.likelihood_scale`` must be 1 so that the logged ``log l_t`` is ``r_t``.
    """
    if params.likelihood_scale != 1.0:
        raise SensitivityError("belief_trace needs likelihood_scale = 1 (then log l_t = r_t)")
    gate = Gate.from_logprobs(len(skill_names), params, skill_names)
    T = len(evidence)
    stable = np.empty(T, dtype=np.int64)
    post_map = np.empty(T, dtype=np.int64)
    conf, log_ratio, weight, post_conf, cp_prob = (np.empty(T) for _ in range(5))
    for t, ev in enumerate(evidence):
        d = gate.step_evidence(ev)
        sm = d.info.stable_map
        stable[t], conf[t], log_ratio[t] = sm.stable, sm.confidence, sm.log_l
        weight[t] = d.info.weight
        post_map[t], post_conf[t], cp_prob[t] = d.map_skill, d.confidence, d.changepoint_prob
    return BeliefTrace(stable, conf, log_ratio, weight, post_map, post_conf, cp_prob)


# --------------------------------------------------------------------------- the vectorised gate


def vectorised_interrupts(trace: BeliefTrace, dec: DecisionColumns, mode: str = "stable_map") -> np.ndarray:
    """Interrupts of ``C`` gate configurations on one belief sequence: bool[T, C].

    Exactly the scalar gate (SPEC §4, ``docs/gate.md``) with the ego always
    active and a replan after every interrupt, advanced for all configurations at
    once. For each step ``t`` and configuration ``c``::

        contradiction[t, c] = w_t > 0  and  λ_c r_t < log τ_c
        candidate[t, c]     = contradiction and stable_t >= n_stable_c and conf_t >= c_floor_c
        interrupt[t, c]     = candidate and t - t_last[c] >= cooldown_c     (t_last <- t)

    The candidates form one [R, C] array (``R``: steps with ``w_t > 0`` and
    ``r_t < 0``, the only ones that can contradict); the cooldown recursion then
    visits only rows with a candidate, updating ``t_last`` as a ``[C]`` array.
    With ``mode`` ``"changepoint"`` or ``"either"`` the change-point gate's
    hysteresis (``armed``) and cooldown are advanced the same way over every step,
    and in ``"either"`` an interrupt of either gate restarts both cooldowns.
    """
    T, C = len(trace), len(dec)
    out = np.zeros((T, C), dtype=bool)
    if mode not in ("stable_map", "changepoint", "either"):
        raise SensitivityError(f"unknown gate mode {mode!r}")
    rows = np.flatnonzero((trace.weight > 0.0) & (trace.log_ratio < 0.0))
    cand = None
    if mode != "changepoint" and rows.size:
        with np.errstate(invalid="ignore"):  # 0 * -inf = nan compares False, like λ = 0 in the gate
            contra = np.multiply.outer(trace.log_ratio[rows], dec.lam) < dec.log_tau
        cand = contra & (trace.stable[rows, None] >= dec.n_stable) & (trace.conf[rows, None] >= dec.c_floor)
    if mode == "stable_map":
        if cand is None:
            return out
        t_last = np.full(C, NEVER, dtype=np.int64)
        for i in np.flatnonzero(cand.any(axis=1)):
            t = int(rows[i])
            fire = cand[i] & ((t - t_last) >= dec.cooldown)
            t_last = np.where(fire, t, t_last)
            out[t] = fire
        return out
    # change-point gate (alone or with the stable-MAP gate): every step matters (re-arming)
    full = np.zeros((T, C), dtype=bool)
    if cand is not None:
        full[rows] = cand
    armed = np.ones(C, dtype=bool)
    t_last_cp = np.full(C, NEVER, dtype=np.int64)
    t_last_sm = np.full(C, NEVER, dtype=np.int64)
    rel_min = float(dec.cp_release.min()) if C else 0.0
    thr_min = float(dec.cp_threshold.min()) if C else 1.0
    for t in range(T):
        p = trace.cp_prob[t]
        if p < rel_min and (mode == "changepoint" or not full[t].any()):
            armed[:] = True  # p < every release <= every threshold: re-arms, cannot fire
            continue
        armed |= p < dec.cp_release
        if p >= thr_min:
            fire = (p >= dec.cp_threshold) & armed & ((t - t_last_cp) >= dec.cp_cooldown)
            armed &= ~fire
        else:
            fire = np.zeros(C, dtype=bool)
        if mode == "either":
            intr = fire | (full[t] & ((t - t_last_sm) >= dec.cooldown))
            t_last_sm = np.where(intr, t, t_last_sm)
        else:
            intr = fire
        t_last_cp = np.where(intr, t, t_last_cp)
        out[t] = intr
    return out


# --------------------------------------------------------------------------- evaluation


@dataclass
class _Totals:
    """Per-configuration accumulators (arrays of shape [C])."""

    n: int
    episodes: int = 0
    interrupts: np.ndarray = None
    switches: int = 0
    detected: np.ndarray = None
    delay_sum: np.ndarray = None
    false_alarms: np.ndarray = None
    truth_steps: int = 0
    map_correct: np.ndarray = None
    map_known: np.ndarray = None
    conf_sum: np.ndarray = None
    steps: int = 0

    def __post_init__(self):
        z = lambda: np.zeros(self.n)  # noqa: E731
        self.interrupts, self.detected, self.delay_sum, self.false_alarms = z(), z(), z(), z()
        self.map_correct, self.map_known, self.conf_sum = z(), z(), z()

    def outputs(self) -> Dict[str, np.ndarray]:
        nan = np.full(self.n, math.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            return {
                "interrupts_per_episode": self.interrupts / max(self.episodes, 1),
                "detection_delay": self.delay_sum / self.switches if self.switches else nan,
                "false_alarms_per_100": 100.0 * self.false_alarms / self.truth_steps if self.truth_steps else nan,
                "detection_rate": self.detected / self.switches if self.switches else nan,
                "map_accuracy": np.where(self.map_known > 0, self.map_correct / np.maximum(self.map_known, 1), nan),
                "mean_confidence": self.conf_sum / max(self.steps, 1),
            }


def score_configs(alarms: np.ndarray, hidden: np.ndarray, window: int):
    """:func:`~beliefgate.eval.replay.score_switches` for every column of ``alarms``
    (bool[T, C]) at once: ``(detected, delay_sum, false_alarms)``, each float[C]."""
    T, C = alarms.shape
    detected, delay_sum = np.zeros(C), np.zeros(C)
    covered = np.zeros(T, dtype=bool)
    for s in np.flatnonzero(hidden):
        win = alarms[s:s + window]
        hit = win.any(axis=0)
        detected += hit
        delay_sum += np.where(hit, win.argmax(axis=0), window)
        covered[s:s + window] = True
    false_alarms = alarms[~covered].sum(axis=0).astype(float)
    return detected, delay_sum, false_alarms


def evaluate_configs(episodes: Sequence[LoggedEpisode], configs: ConfigTable, window: int = 10,
                     progress: Optional[Callable[[int, int, str], None]] = None) -> Dict[str, np.ndarray]:
    """Replay every episode under every configuration; returns ``OUTPUTS`` -> float[C].

    One belief pass per (belief group, episode), then :func:`vectorised_interrupts`
    over the group's configurations. Detection scores pool all switches and steps
    of the episodes that carry ground truth (a missed switch counts ``window``).
    """
    if not episodes:
        raise SensitivityError("no episodes to replay")
    if window < 1:
        raise SensitivityError(f"detection window must be >= 1, got {window}")
    C = len(configs)
    base = configs.base
    totals = _Totals(C)
    groups = configs.belief_groups()
    # evidence keys outermost so that each episode's evidence is computed once per (beta, epsilon)
    order = sorted(groups, key=lambda k: (k[BELIEF_PARAMS.index("beta")], k[BELIEF_PARAMS.index("epsilon")]))
    jobs = len(order) * len(episodes)
    done = 0
    beta_i, eps_i = BELIEF_PARAMS.index("beta"), BELIEF_PARAMS.index("epsilon")
    last_evidence_key = None
    for key in order:
        idx = groups[key]
        dec = configs.decision_columns(idx)
        bparams = belief_params(base, key)
        ekey = (key[beta_i], key[eps_i])
        base_ekey = (float(base.beta), float(base.epsilon))
        if last_evidence_key is not None and ekey != last_evidence_key and last_evidence_key != base_ekey:
            for ep in episodes:  # free the previous (beta, epsilon)'s evidence (the base's stays cached)
                ep._evidence.pop((float(last_evidence_key[0]), float(last_evidence_key[1])), None)
        last_evidence_key = ekey
        for ep in episodes:
            if progress is not None:
                progress(done, jobs, f"{Path(ep.name).name} ({len(idx)} configs)")
            try:
                trace = belief_trace(ep.evidence(*ekey), ep.skill_names, bparams)
            except BeliefInputError as exc:
                changed = {n: v for n, v in zip(BELIEF_PARAMS, key) if v != getattr(base, n)}
                raise SensitivityError(f"{ep.name}: the belief pass failed with {changed or 'the base parameters'}: "
                                       f"{exc}") from exc
            alarms = vectorised_interrupts(trace, dec, base.gate)
            totals.interrupts[idx] += alarms.sum(axis=0)
            totals.conf_sum[idx] += float(trace.post_conf.sum())
            if ep.has_truth:
                det, dsum, fa = score_configs(alarms, ep.hidden, window)
                totals.detected[idx] += det
                totals.delay_sum[idx] += dsum
                totals.false_alarms[idx] += fa
                known = ep.truth >= 0
                totals.map_correct[idx] += float(np.sum(trace.post_map[known] == ep.truth[known]))
                totals.map_known[idx] += float(known.sum())
            done += 1
    for ep in episodes:
        totals.episodes += 1
        totals.steps += ep.steps
        if ep.has_truth:
            totals.switches += int(ep.hidden.sum())
            totals.truth_steps += ep.steps
    if progress is not None:
        progress(jobs, jobs, "done")
    return totals.outputs()


def count_belief_passes(configs: ConfigTable, episodes: int) -> int:
    """How many scalar belief passes :func:`evaluate_configs` will run."""
    return len(configs.belief_groups()) * episodes


# --------------------------------------------------------------------------- one-at-a-time


@dataclass
class OATRow:
    """One configuration of an OAT sweep: ``param`` set to ``value``, the rest at the base."""

    param: str
    value: float
    is_default: bool
    outputs: Dict[str, float]


@dataclass
class OATResult:
    """A one-at-a-time sweep and the configuration that made it."""

    base: GateParams
    ranges: List[ParamRange]
    rows: List[OATRow]
    episodes: List[dict]
    window: int
    outputs_available: List[str]
    elapsed_s: float

    def block(self, param: str) -> List[OATRow]:
        return [r for r in self.rows if r.param == param]

    def series(self, param: str, output: str) -> Tuple[np.ndarray, np.ndarray]:
        rows = self.block(param)
        return np.array([r.value for r in rows]), np.array([r.outputs[output] for r in rows])

    def to_dict(self) -> dict:
        import beliefgate

        return {
            "kind": "sensitivity.oat",
            "version": beliefgate.__version__,
            "base": self.base.model_dump(),
            "ranges": [r.to_dict() for r in self.ranges],
            "window": self.window,
            "episodes": self.episodes,
            "outputs": {k: OUTPUTS[k] for k in self.outputs_available},
            "rows": [{"param": r.param, "value": r.value, "default": r.is_default,
                      **{k: _json_float(r.outputs[k]) for k in self.outputs_available}} for r in self.rows],
            "elapsed_s": self.elapsed_s,
        }


def _json_float(x: float):
    x = float(x)
    return x if math.isfinite(x) else None


def _available(episodes: Sequence[LoggedEpisode]) -> List[str]:
    truth = any(ep.has_truth for ep in episodes)
    switches = any(ep.has_truth and ep.hidden.any() for ep in episodes)
    out = []
    for k in OUTPUTS:
        if k in TRUTH_OUTPUTS and not truth:
            continue
        if k in ("detection_delay", "detection_rate") and not switches:
            continue
        out.append(k)
    return out


def oat_values(r: ParamRange, base: GateParams, include_default: bool = True) -> List[Tuple[float, bool]]:
    """The values of one OAT block with their default flags (the base's value is
    added to the grid when missing and ``include_default``)."""
    default = getattr(base, r.name)
    vals = [float(v) for v in r.grid()]
    if include_default and default is not None and not any(v == float(default) for v in vals):
        vals = sorted(vals + [float(default)])
    return [(v, default is not None and v == float(default)) for v in vals]


def run_oat(episodes: Sequence[LoggedEpisode], ranges: Sequence[ParamRange], base: Optional[GateParams] = None,
            window: int = 10, include_default: bool = True,
            progress: Optional[Callable[[int, int, str], None]] = None) -> OATResult:
    """One-at-a-time sweep: every value of every range, the other fields at ``base``.

    All configurations of all ranges are evaluated in one :func:`evaluate_configs`
    call (so decision parameters share one belief pass per log).
    """
    base = base or GateParams()
    started = time.perf_counter()
    plan: List[Tuple[str, float, bool]] = []
    for r in ranges:
        plan.extend((r.name, v, d) for v, d in oat_values(r, base, include_default))
    values = {r.name: np.array([v if p == r.name else _base_float(base, r.name) for p, v, _ in plan])
              for r in ranges}
    configs = ConfigTable.from_values(base, values)
    for i in range(len(configs)):  # every configuration must be valid before work starts
        try:
            configs.params(i)
        except ValueError as exc:
            raise RangeSpecError(f"{plan[i][0]}={_fmt(plan[i][1])} gives invalid parameters: {exc}") from None
    outs = evaluate_configs(episodes, configs, window, progress)
    rows = [OATRow(p, v, d, {k: float(outs[k][i]) for k in OUTPUTS}) for i, (p, v, d) in enumerate(plan)]
    return OATResult(base, list(ranges), rows, [ep.summary() for ep in episodes], window, _available(episodes),
                     time.perf_counter() - started)


def _base_float(base: GateParams, name: str) -> float:
    v = getattr(base, name)
    return math.nan if v is None else float(v)


def table7_directions(result: OATResult, output: str = "interrupts_per_episode") -> Dict[str, dict]:
    """For each Table 7 parameter in ``result``: is ``output`` monotone in the
    paper's direction (non-decreasing for τ_obs and λ, non-increasing for c_floor
    and cooldown), and by how much does it change over the range?"""
    out = {}
    for name, sign in TABLE7_DIRECTIONS.items():
        if not result.block(name):
            continue
        _, y = result.series(name, output)
        diffs = np.diff(y) * sign
        out[name] = {"expected": "increase" if sign > 0 else "decrease", "monotone": bool(np.all(diffs >= 0)),
                     "change": float(y[-1] - y[0]), "values": y.tolist()}
    return out


# --------------------------------------------------------------------------- global


Evaluator = Callable[[Dict[str, np.ndarray]], Dict[str, np.ndarray]]


@dataclass
class GlobalResult:
    """A global sensitivity analysis (Sobol or Morris) and the settings that made it.

    ``indices[output]``: Sobol ``S1``, ``S1_conf``, ``ST``, ``ST_conf`` (and ``S2``,
    ``S2_conf`` with second order), or Morris ``mu``, ``mu_star``, ``sigma``,
    ``mu_star_conf``, each float[D] in the order of ``ranges``; ``constant``:
    outputs with no variance over the sample (their indices are undefined, NaN);
    ``summary[output]``: mean, std, min and max over the sample. With
    ``keep_samples``: ``samples`` (unit hypercube, float[rows, D]), ``values``
    (``{name: float[rows]}``) and ``outputs`` (``{output: float[rows]}``).
    """

    method: str
    ranges: List[ParamRange]
    n: int
    seed: int
    num_configs: int
    settings: dict
    indices: Dict[str, Dict[str, np.ndarray]]
    constant: List[str]
    summary: Dict[str, dict]
    elapsed_s: float
    samples: Optional[np.ndarray] = field(default=None, repr=False)
    values: Optional[Dict[str, np.ndarray]] = field(default=None, repr=False)
    outputs: Optional[Dict[str, np.ndarray]] = field(default=None, repr=False)
    context: dict = field(default_factory=dict)

    @property
    def names(self) -> List[str]:
        return [r.name for r in self.ranges]

    def to_dict(self) -> dict:
        import beliefgate

        def conv(v):
            a = np.asarray(v, dtype=float)
            return [conv(x) for x in a] if a.ndim else _json_float(a)

        return {
            "kind": f"sensitivity.{self.method}",
            "version": beliefgate.__version__,
            "method": self.method, "n": self.n, "seed": self.seed, "num_configs": self.num_configs,
            "ranges": [r.to_dict() for r in self.ranges],
            "settings": self.settings,
            "indices": {out: {k: conv(v) for k, v in d.items()} for out, d in self.indices.items()},
            "constant": self.constant,
            "summary": {o: {k: _json_float(v) for k, v in s.items()} for o, s in self.summary.items()},
            "elapsed_s": self.elapsed_s,
            **self.context,
        }


def global_sample(ranges: Sequence[ParamRange], method: str, n: int, seed: int, second_order: bool = False,
                  num_levels: int = 4) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
    """SALib sample on the unit hypercube and its mapping to parameter values.

    Sobol: ``SALib.sample.sobol.sample`` (Saltelli's scheme, scrambled Sobol'
    sequence), ``n (D + 2)`` rows (``n (2D + 2)`` with second order). Morris:
    ``SALib.sample.morris.sample``, ``n`` trajectories of ``D + 1`` points on a
    ``num_levels`` grid. Returns ``(unit [rows, D], values {name: float[rows]})``.
    """
    problem = _problem(ranges)
    if method == "sobol":
        from SALib.sample import sobol as sobol_sample

        if n < 2:
            raise SensitivityError(f"Sobol needs N >= 2, got {n}")
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*power of 2.*")
            warnings.filterwarnings("ignore", message=".*balance properties.*")
            unit = sobol_sample.sample(problem, n, calc_second_order=second_order, scramble=True, seed=seed)
    elif method == "morris":
        from SALib.sample import morris as morris_sample

        if n < 2:
            raise SensitivityError(f"Morris needs N >= 2 trajectories, got {n}")
        if num_levels < 2 or num_levels % 2:
            raise SensitivityError(f"Morris needs an even number of levels >= 2, got {num_levels}")
        unit = morris_sample.sample(problem, n, num_levels=num_levels, seed=seed)
    else:
        raise SensitivityError(f"unknown method {method!r}; use 'sobol' or 'morris'")
    values = {r.name: r.from_unit(unit[:, j]) for j, r in enumerate(ranges)}
    return unit, values


def _problem(ranges: Sequence[ParamRange]) -> dict:
    return {"num_vars": len(ranges), "names": [r.name for r in ranges], "bounds": [[0.0, 1.0]] * len(ranges)}


def run_global(ranges: Sequence[ParamRange], evaluate: Evaluator, method: str = "sobol", n: int = 1024,
               seed: int = 0, second_order: bool = False, num_levels: int = 4, resamples: int = 100,
               conf_level: float = 0.95, keep_samples: bool = False) -> GlobalResult:
    """Global sensitivity analysis of ``evaluate`` over ``ranges`` with SALib.

    Samples the unit hypercube (:func:`global_sample`), maps it to values with
    each range's rule (:meth:`ParamRange.from_unit`), calls ``evaluate`` once with
    every configuration (``{name: float[rows]}`` -> ``{output: float[rows]}``), and
    analyses each output: Sobol first-order and total indices with bootstrap
    confidence intervals (half-widths at ``conf_level``), or Morris ``μ``, ``μ*``,
    ``σ`` and the CI of ``μ*`` (elementary effects per unit of the *normalised*
    input, i.e. per whole range on its scale). Indices do not depend on the
    monotone unit-to-value map, so they refer to the parameters themselves.
    """
    if not ranges:
        raise SensitivityError("no parameter ranges")
    names = [r.name for r in ranges]
    if len(set(names)) != len(names):
        raise SensitivityError(f"duplicate parameter names in {names}")
    if not 0.0 < conf_level < 1.0:
        raise SensitivityError(f"conf_level must lie in (0, 1), got {conf_level}")
    started = time.perf_counter()
    unit, values = global_sample(ranges, method, n, seed, second_order, num_levels)
    outputs = evaluate(values)
    problem = _problem(ranges)
    indices, constant, summary = {}, [], {}
    for name, y in outputs.items():
        y = np.asarray(y, dtype=float)
        if y.shape != (unit.shape[0],):
            raise SensitivityError(f"output {name!r} has shape {y.shape}, expected ({unit.shape[0]},)")
        finite = np.isfinite(y)
        summary[name] = {"mean": float(np.mean(y)) if finite.all() else math.nan,
                         "std": float(np.std(y)) if finite.all() else math.nan,
                         "min": float(np.min(y)) if finite.all() else math.nan,
                         "max": float(np.max(y)) if finite.all() else math.nan}
        if not finite.all() or np.ptp(y) == 0.0:
            constant.append(name)
            keys = (("S1", "S1_conf", "ST", "ST_conf") if method == "sobol"
                    else ("mu", "mu_star", "sigma", "mu_star_conf"))
            indices[name] = {k: np.full(len(ranges), math.nan) for k in keys}
            continue
        if method == "sobol":
            from SALib.analyze import sobol as sobol_analyze

            si = sobol_analyze.analyze(problem, y, calc_second_order=second_order, num_resamples=resamples,
                                       conf_level=conf_level, print_to_console=False, seed=seed)
            keys = ("S1", "S1_conf", "ST", "ST_conf") + (("S2", "S2_conf") if second_order else ())
        else:
            from SALib.analyze import morris as morris_analyze

            si = morris_analyze.analyze(problem, unit, y, num_resamples=resamples, conf_level=conf_level,
                                        print_to_console=False, num_levels=num_levels, seed=seed)
            keys = ("mu", "mu_star", "sigma", "mu_star_conf")
        indices[name] = {k: np.asarray(si[k], dtype=float) for k in keys}
    settings = {"second_order": second_order, "num_levels": num_levels if method == "morris" else None,
                "resamples": resamples, "conf_level": conf_level}
    return GlobalResult(method, list(ranges), n, seed, unit.shape[0], settings, indices, constant, summary,
                        time.perf_counter() - started, unit if keep_samples else None,
                        values if keep_samples else None, outputs if keep_samples else None)


class GateReplayEvaluator:
    """The gate as a function of its parameters, for :func:`run_global`: replays
    ``episodes`` under every configuration (:func:`evaluate_configs`) and returns
    the available outputs."""

    def __init__(self, episodes: Sequence[LoggedEpisode], base: Optional[GateParams] = None, window: int = 10,
                 progress: Optional[Callable[[int, int, str], None]] = None):
        self.episodes = list(episodes)
        self.base = base or GateParams()
        self.window = window
        self.progress = progress
        self.outputs = _available(self.episodes)
        self.last_configs: Optional[ConfigTable] = None

    def __call__(self, values: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        configs = ConfigTable.from_values(self.base, values)
        self.last_configs = configs
        outs = evaluate_configs(self.episodes, configs, self.window, self.progress)
        return {k: outs[k] for k in self.outputs}


def run_gate_global(episodes: Sequence[LoggedEpisode], ranges: Sequence[ParamRange], method: str = "sobol",
                    n: int = 1024, seed: int = 0, base: Optional[GateParams] = None, window: int = 10,
                    second_order: bool = False, num_levels: int = 4, belief_levels: Optional[int] = 8,
                    resamples: int = 100, conf_level: float = 0.95,
                    progress: Optional[Callable[[int, int, str], None]] = None,
                    keep_samples: bool = False) -> GlobalResult:
    """Global analysis of the gate on logged episodes (see :func:`run_global`).

    ``belief_levels``: Sobol quantises continuous belief-side parameters (hazard,
    alpha, beta, epsilon) to this many equally likely levels so that the number of
    belief passes stays bounded (``None``/0: one pass per distinct sampled value).
    """
    base = base or GateParams()
    ranges = prepare_global_ranges(ranges, method, belief_levels)
    evaluator = GateReplayEvaluator(episodes, base, window, progress)
    result = run_global(ranges, evaluator, method, n, seed, second_order, num_levels, resamples, conf_level,
                        keep_samples)
    result.settings.update({"window": window, "belief_levels": belief_levels or None})
    result.context = {"base": base.model_dump(), "episodes": [ep.summary() for ep in episodes],
                      "outputs": {k: OUTPUTS[k] for k in evaluator.outputs},
                      "belief_passes": (count_belief_passes(evaluator.last_configs, len(episodes))
                                        if evaluator.last_configs is not None else 0)}
    return result


# --------------------------------------------------------------------------- plots


def plot_oat(result: OATResult, out_dir) -> List[Path]:
    """One line plot per parameter (``oat_<param>.png``): every available output
    against the parameter's values, the default marked."""
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    outs = result.outputs_available
    for r in result.ranges:
        x = np.array([row.value for row in result.block(r.name)])
        dflt = [row.value for row in result.block(r.name) if row.is_default]
        ncol = min(3, len(outs))
        nrow = math.ceil(len(outs) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), squeeze=False)
        for ax, key in zip(axes.flat, outs):
            _, y = result.series(r.name, key)
            ax.plot(x, y, marker="o", color="tab:blue")
            for d in dflt:
                ax.axvline(d, color="0.5", linestyle="--", linewidth=1)
                ax.plot([d], [y[list(x).index(d)]], marker="o", color="tab:red", markersize=8, zorder=3)
            ax.set_xlabel(f"{r.name}" + (" (log scale)" if r.scale == "log" else ""))
            ax.set_ylabel(OUTPUTS[key])
            if r.scale == "log":
                ax.set_xscale("log")
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[len(outs):]:
            ax.axis("off")
        fig.suptitle(f"One-at-a-time: {r.name} (default in red; {len(result.episodes)} episodes)")
        fig.tight_layout()
        path = out_dir / f"oat_{r.name}.png"
        save_figure(fig, path)
        paths.append(path)
    return paths


def plot_global(result: GlobalResult, out_dir) -> List[Path]:
    """Bar plots per output (``<method>_<output>.png``: S1 and ST with their CIs, or
    Morris μ* with its CI and σ) and one heat map of parameters × outputs
    (``<method>_heatmap.png``: ST and S1, or μ* scaled by its largest value per output)."""
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = result.names
    x = np.arange(len(names))
    paths = []
    outs = [o for o in result.indices if o not in result.constant]
    for o in outs:
        idx = result.indices[o]
        fig, ax = plt.subplots(figsize=(max(4.5, 1.1 * len(names) + 2), 3.6))
        if result.method == "sobol":
            w = 0.38
            ax.bar(x - w / 2, idx["S1"], w, yerr=idx["S1_conf"], capsize=3, label="first order S1")
            ax.bar(x + w / 2, idx["ST"], w, yerr=idx["ST_conf"], capsize=3, label="total ST")
            ax.set_ylabel("Sobol index")
            ax.axhline(0, color="0.3", linewidth=0.8)
        else:
            w = 0.38
            ax.bar(x - w / 2, idx["mu_star"], w, yerr=idx["mu_star_conf"], capsize=3, label="μ*")
            ax.bar(x + w / 2, idx["sigma"], w, label="σ")
            ax.set_ylabel(f"elementary effect ({OUTPUTS.get(o, o)})")
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=20, ha="right")
        ax.set_title(f"{result.method.capitalize()}: {OUTPUTS.get(o, o)}")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        path = out_dir / f"{result.method}_{o}.png"
        save_figure(fig, path)
        paths.append(path)
    if outs:
        if result.method == "sobol":
            panels = [("ST", "total index ST"), ("S1", "first-order index S1")]
        else:
            panels = [("mu_star", "μ* / max μ* per output")]
        fig, axes = plt.subplots(1, len(panels), figsize=(len(panels) * (1.3 * len(outs) + 3), 0.6 * len(names) + 2.2),
                                 squeeze=False)
        for ax, (key, title) in zip(axes.flat, panels):
            mat = np.array([result.indices[o][key] for o in outs]).T  # [D, outputs]
            raw = mat.copy()
            if result.method == "morris":
                top = np.nanmax(np.abs(mat), axis=0)
                mat = np.divide(mat, top, out=np.zeros_like(mat), where=top > 0)
            im = ax.imshow(mat, cmap="viridis", vmin=0.0, vmax=max(1.0, float(np.nanmax(mat))) if
                           result.method == "sobol" else 1.0, aspect="auto")
            for (i, j), v in np.ndenumerate(raw):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if mat[i, j] < 0.6 else "black")
            ax.set_xticks(range(len(outs)))
            ax.set_xticklabels([OUTPUTS.get(o, o) for o in outs], rotation=30, ha="right", fontsize=8)
            ax.set_yticks(range(len(names)))
            ax.set_yticklabels(names)
            ax.set_title(title)
            fig.colorbar(im, ax=ax, shrink=0.8)
        fig.tight_layout()
        path = out_dir / f"{result.method}_heatmap.png"
        save_figure(fig, path)
        paths.append(path)
    return paths


# --------------------------------------------------------------------------- closed loop


#: Outputs of a closed-loop sweep, per episode, with their display labels.
CLOSED_LOOP_OUTPUTS: Dict[str, str] = {
    "reward": "reward",
    "deliveries": "deliveries",
    "replans": "replans / episode",
    "interrupts": "interrupts / episode",
    "gap_rate": "belief–action gap rate",
    "map_accuracy": "MAP accuracy (ego's gate)",
    "ref_map_accuracy": "MAP accuracy (reference gate)",
}
#: Where each closed-loop output comes from in the harness's results table
#: (``interrupts`` is counted in the episode's log instead).
CLOSED_LOOP_COLUMNS = {"reward": "reward", "deliveries": "deliveries", "replans": "replans",
                       "gap_rate": "gap_rate", "map_accuracy": "intent_accuracy", "ref_map_accuracy": "map_accuracy"}
#: Sub-directory of the base configuration (every parameter at the grid's ``gate:`` values or the defaults).
BASE_DIR = "base"
CLOSED_LOOP_FORMAT = "beliefgate.sensitivity-closed-loop/1"


@dataclass
class ClosedLoopConfig:
    """One gate configuration of a closed-loop sweep: the grid's ego ``gate`` overrides and its sub-directory."""

    dirname: str
    overrides: Dict[str, object]


@dataclass
class ClosedLoopPlan:
    """A validated closed-loop sweep: the grid, the base configuration, the ranges and
    every (parameter, value) with the configuration that plays it.

    ``blocks``: ``(param, value, is_default, dirname)`` in table order; every value
    equal to the base's is played once, in :data:`BASE_DIR`.
    """

    grid_path: Optional[str]
    spec: object                 # GridSpec as given (its own ``gate:``, if any)
    resolved: object             # ResolvedGrid of the base configuration
    base: GateParams
    base_overrides: Dict[str, object]
    ranges: List[ParamRange]
    blocks: List[Tuple[str, float, bool, str]]
    configs: List[ClosedLoopConfig]

    @property
    def episodes_per_config(self) -> int:
        return len(self.resolved.episodes)

    @property
    def total_episodes(self) -> int:
        return self.episodes_per_config * len(self.configs)

    def grid_record(self) -> dict:
        """What identifies the grid in every output: name, digest, design, seeds."""
        s = self.spec
        return {"name": s.name, "path": self.grid_path, "digest": s.digest(), "agents": list(s.agents),
                "layouts": list(s.layouts), "partners": [e.name for e in s.partner_entries],
                "seeds": s.seed_list, "seats": list(s.seats), "horizon": s.horizon,
                "episodes_per_config": self.episodes_per_config, "skipped": list(self.resolved.skipped)}

    def to_dict(self) -> dict:
        import beliefgate

        return {"format": CLOSED_LOOP_FORMAT, "version": beliefgate.__version__, "grid": self.grid_record(),
                "base": self.base.model_dump(mode="json"), "base_overrides": self.base_overrides,
                "ranges": [r.to_dict() for r in self.ranges],
                "configs": [{"dir": c.dirname, "gate": c.overrides} for c in self.configs],
                "blocks": [{"param": p, "value": v, "default": d, "dir": n} for p, v, d, n in self.blocks]}


def _config_dirname(name: str, value: float) -> str:
    v = int(value) if PARAMETERS[name].integer else float(value)
    return f"{name}={v}" if isinstance(v, int) else f"{name}={v:.10g}"


def plan_closed_loop(grid, params: Sequence, include_default: bool = True) -> ClosedLoopPlan:
    """Validate a closed-loop OAT sweep before any episode: the grid, the ranges, every configuration.

    ``grid``: a grid file path or a :class:`~beliefgate.eval.grid.GridSpec`; its
    ``gate:`` values (if any) are the base configuration, the other fields stay at
    the ``GateParams`` defaults. ``params``: range texts (``NAME=LOW:HIGH:N``,
    ``NAME=v1,v2,...``, parsed as for the replayed sweep) or :class:`ParamRange`
    objects. Raises :class:`~beliefgate.eval.grid.GridError` (bad grid, an agent
    that runs no gate) or :class:`RangeSpecError` (bad range), both ``ValueError``.
    """
    from beliefgate.eval.grid import GridError, GridSpec, load_grid, normalise_gate, resolve_grid

    path = None
    if isinstance(grid, GridSpec):
        spec = grid
    else:
        path = str(grid)
        spec = load_grid(grid)
    base_overrides = dict(spec.gate or {})
    base = GateParams(**base_overrides)
    texts = [p for p in params if not isinstance(p, ParamRange)]
    ranges = parse_ranges(texts, "oat", base) if texts else []
    ranges += [p for p in params if isinstance(p, ParamRange)]
    if not ranges:
        raise RangeSpecError("give at least one parameter range (--param NAME=LOW:HIGH:N)")
    if len({r.name for r in ranges}) != len(ranges):
        raise RangeSpecError("a parameter is given twice")
    resolved = resolve_grid(spec.with_gate(base_overrides))
    if not resolved.episodes:
        raise GridError(f"the grid has no playable episode ({'; '.join(resolved.skipped) or 'empty'})")
    configs = {BASE_DIR: ClosedLoopConfig(BASE_DIR, resolved.spec.gate)}
    blocks: List[Tuple[str, float, bool, str]] = []
    for r in ranges:
        for v, is_default in oat_values(r, base, include_default):
            if is_default:
                blocks.append((r.name, v, True, BASE_DIR))
                continue
            typed = int(v) if PARAMETERS[r.name].integer else float(v)
            try:
                overrides = normalise_gate({**base_overrides, r.name: typed})
            except ValueError as exc:
                raise RangeSpecError(f"{r.name}={_fmt(v)}: {exc}") from None
            dirname = _config_dirname(r.name, v)
            known = configs.get(dirname)
            if known is not None and known.overrides != overrides:
                raise RangeSpecError(f"{r.name}: two values share the directory name {dirname!r}; use fewer digits")
            configs[dirname] = ClosedLoopConfig(dirname, overrides)
            blocks.append((r.name, v, False, dirname))
    used = {b[3] for b in blocks}
    return ClosedLoopPlan(path, spec, resolved, base, resolved.spec.gate, list(ranges), blocks,
                          [c for c in configs.values() if c.dirname in used])


def count_interrupts(log_path, seat: int) -> int:
    """Steps of a logged episode where the ego's trigger interrupted its running skill
    (``info[seat]["interrupt"]``; for BayesBelief ``full``/``no_prompt`` the gate's interrupts)."""
    import json

    n = 0
    with open(log_path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("kind") == "step":
                info = row.get("info") or []
                if len(info) > seat and info[seat].get("interrupt"):
                    n += 1
    return n


def _bootstrap_stats(values: np.ndarray, n_boot: int, conf_level: float, seed: int, name: str) -> dict:
    """Mean, sd and percentile-bootstrap CI of the mean over episodes (NaN values skipped).

    The interval is :func:`beliefgate.eval.report.bootstrap_mean_ci` (resamples seeded by
    ``seed`` and ``name``); one episode, or identical values, give the degenerate interval
    ``[mean, mean]``.
    """
    from beliefgate.eval.report import bootstrap_mean_ci

    x = values[np.isfinite(values)]
    n = int(x.size)
    if n == 0:
        return {"n": 0, "mean": math.nan, "sd": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else 0.0
    if n == 1 or np.ptp(x) == 0.0:
        lo = hi = mean
    else:
        _, lo, hi = bootstrap_mean_ci(x, n_boot, conf_level, seed, name)
    return {"n": n, "mean": mean, "sd": sd, "ci_low": lo, "ci_high": hi}


@dataclass
class ClosedLoopRow:
    """One (parameter, value, agent) of a closed-loop sweep: per-output statistics over its episodes
    (``stats[output]``: ``n``, ``mean``, ``sd``, ``ci_low``, ``ci_high``)."""

    param: str
    value: float
    is_default: bool
    agent: str
    dirname: str
    episodes: int
    stats: Dict[str, dict]

    def mean(self, output: str) -> float:
        return self.stats[output]["mean"]


@dataclass
class ClosedLoopResult:
    """A closed-loop one-at-a-time sweep and everything that made it."""

    plan: ClosedLoopPlan
    out: Path
    rows: List[ClosedLoopRow]
    episodes: Dict[str, List[dict]]      # dirname -> per-episode records (config columns and outputs)
    runs: Dict[str, dict]                # dirname -> what run_grid did there
    failed: List[str]
    n_boot: int
    seed: int
    conf_level: float
    executor: str
    elapsed_s: float

    @property
    def agents(self) -> List[str]:
        return list(dict.fromkeys(r.agent for r in self.rows))

    @property
    def complete(self) -> bool:
        return not self.failed and all(len(v) == self.plan.episodes_per_config for v in self.episodes.values())

    def block(self, param: str, agent: Optional[str] = None) -> List[ClosedLoopRow]:
        return [r for r in self.rows if r.param == param and (agent is None or r.agent == agent)]

    def series(self, param: str, output: str, agent: str) -> Tuple[np.ndarray, ...]:
        """``(values, means, ci_low, ci_high)`` of one output along one parameter for one agent."""
        rows = self.block(param, agent)
        get = lambda k: np.array([r.stats[output][k] for r in rows])  # noqa: E731
        return np.array([r.value for r in rows]), get("mean"), get("ci_low"), get("ci_high")

    def to_dict(self) -> dict:
        import beliefgate

        return {
            "kind": "sensitivity.oat.closed_loop",
            "format": CLOSED_LOOP_FORMAT,
            "version": beliefgate.__version__,
            "grid": self.plan.grid_record(),
            "base": self.plan.base.model_dump(mode="json"),
            "base_overrides": self.plan.base_overrides,
            "ranges": [r.to_dict() for r in self.plan.ranges],
            "outputs": dict(CLOSED_LOOP_OUTPUTS),
            "bootstrap": {"resamples": self.n_boot, "seed": self.seed, "conf_level": self.conf_level,
                          "unit": "episode"},
            "out": str(self.out),
            "configs": [{"dir": c.dirname, "gate": c.overrides, **self.runs.get(c.dirname, {})}
                        for c in self.plan.configs],
            "rows": [{"param": r.param, "value": r.value, "default": r.is_default, "agent": r.agent,
                      "dir": r.dirname, "episodes": r.episodes,
                      **{k: {s: _json_float(v) if s != "n" else v for s, v in r.stats[k].items()}
                         for k in CLOSED_LOOP_OUTPUTS}} for r in self.rows],
            "episodes": {d: rows for d, rows in self.episodes.items()},
            "failed": self.failed,
            "complete": self.complete,
            "executor": self.executor,
            "elapsed_s": round(self.elapsed_s, 3),
        }


def _episode_record(row: dict, sub: Path) -> dict:
    rec = {k: row[k] for k in ("agent", "layout", "partner", "seed", "seat", "episode_key", "log")}
    rec["gate_params"] = row.get("gate_params", "")
    for out, col in CLOSED_LOOP_COLUMNS.items():
        rec[out] = float(row[col])
    rec["interrupts"] = float(count_interrupts(sub / row["log"], int(row["seat"])))
    return rec


def run_closed_loop_oat(plan: ClosedLoopPlan, out, executor=None,
                        progress: Optional[Callable[[int, int, str], None]] = None,
                        report: Optional[Callable[[str], None]] = None, n_boot: int = 2000, seed: int = 0,
                        conf_level: float = 0.95) -> ClosedLoopResult:
    """Play every configuration of ``plan`` through the evaluation harness and summarise it.

    Each configuration is the grid with its ``gate:`` set to that configuration,
    run by :func:`beliefgate.eval.runner.run_grid` into ``out/<dir>`` (``base``,
    ``tau_obs=0.1``, ``cooldown=20``, ...) with ``executor`` (default: this
    process). Every sub-directory is an ordinary resumable run directory: a rerun
    plays only what is missing. ``progress(done, total, label)`` counts episodes
    over all configurations (finished ones included); ``report(line)`` gets the
    harness's notes. Per (parameter, value, agent) every output of
    :data:`CLOSED_LOOP_OUTPUTS` gets its mean, sd and a percentile-bootstrap CI of
    the mean over episodes (``n_boot`` resamples, seeded by ``seed`` and the
    names). Writes ``out/sweep.json`` (the plan) first and ``out/sensitivity.json``
    (the result) last.
    """
    import json

    from beliefgate.eval.executors import InlineExecutor
    from beliefgate.eval.grid import regate
    from beliefgate.eval.runner import run_grid
    from beliefgate.fileio import atomic_write

    if n_boot < 10:
        raise SensitivityError(f"n_boot must be >= 10, got {n_boot}")
    if not 0.0 < conf_level < 1.0:
        raise SensitivityError(f"conf_level must lie in (0, 1), got {conf_level}")
    started = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "sweep.json", (json.dumps(plan.to_dict(), indent=1) + "\n").encode())
    executor = executor or InlineExecutor()
    per = plan.episodes_per_config
    total = plan.total_episodes
    episodes: Dict[str, List[dict]] = {}
    runs: Dict[str, dict] = {}
    failed: List[str] = []
    for i, cfg in enumerate(plan.configs):
        offset = i * per

        def sub_progress(done: int, todo: int, label: str, offset=offset, cfg=cfg) -> None:
            if progress is not None:
                progress(offset + (per - todo) + done, total, cfg.dirname)

        sub = out / cfg.dirname
        grid = regate(plan.resolved, cfg.overrides)
        summary = run_grid(grid, sub, executor, progress=sub_progress, report=report)
        failed.extend(f"{cfg.dirname}: {line}" for line in summary.failed)
        runs[cfg.dirname] = {"grid_digest": grid.spec.digest(), "ran": summary.ran,
                             "already_done": summary.skipped_done, "rescored": summary.rescored,
                             "failed": len(summary.failed), "wall_s": round(summary.wall_s, 3)}
        episodes[cfg.dirname] = [_episode_record(r, sub) for r in summary.rows]
    rows: List[ClosedLoopRow] = []
    agents = list(dict.fromkeys(ep.agent for ep in plan.resolved.episodes))
    for param, value, is_default, dirname in plan.blocks:
        for agent in agents:
            recs = [e for e in episodes[dirname] if e["agent"] == agent]
            stats = {}
            for k in CLOSED_LOOP_OUTPUTS:
                stats[k] = _bootstrap_stats(np.array([e[k] for e in recs], dtype=float), n_boot, conf_level,
                                            seed, f"{dirname}|{agent}|{k}")
            rows.append(ClosedLoopRow(param, float(value), is_default, agent, dirname, len(recs), stats))
    result = ClosedLoopResult(plan, out, rows, episodes, runs, failed, n_boot, seed, conf_level,
                              executor.description, time.perf_counter() - started)
    atomic_write(out / "sensitivity.json", (json.dumps(result.to_dict(), indent=1) + "\n").encode())
    return result


def plot_closed_loop(result: ClosedLoopResult, out_dir) -> List[Path]:
    """One figure per parameter (``closed_loop_<param>.png``): a panel per output, the
    mean over episodes with its bootstrap CI as error bars, one line per agent, the
    default marked; the grid, its digest and seeds in the title."""
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    g = result.plan.grid_record()
    outs = list(CLOSED_LOOP_OUTPUTS)
    paths = []
    for r in result.plan.ranges:
        ncol = 4
        nrow = math.ceil(len(outs) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(4.0 * ncol, 3.1 * nrow), squeeze=False)
        for ax, key in zip(axes.flat, outs, strict=False):
            for agent in result.agents:
                x, m, lo, hi = result.series(r.name, key, agent)
                err = np.vstack([np.maximum(m - lo, 0.0), np.maximum(hi - m, 0.0)])
                ax.errorbar(x, m, yerr=err, marker="o", capsize=3, label=agent)
            for agent in result.agents:
                for row in result.block(r.name, agent):
                    if row.is_default:
                        ax.axvline(row.value, color="0.5", linestyle="--", linewidth=1)
                        ax.plot([row.value], [row.mean(key)], marker="o", color="tab:red", markersize=8, zorder=3)
            ax.set_xlabel(r.name + (" (log scale)" if r.scale == "log" else ""))
            ax.set_ylabel(CLOSED_LOOP_OUTPUTS[key], fontsize=8)
            if r.scale == "log":
                ax.set_xscale("log")
            ax.grid(alpha=0.3)
        axes.flat[0].legend(fontsize=7)
        for ax in list(axes.flat)[len(outs):]:
            ax.axis("off")
        pct = int(round(result.conf_level * 100))
        fig.suptitle(f"Closed-loop one-at-a-time: {r.name} (default in red; {pct}% bootstrap CI over "
                     f"{g['episodes_per_config']} episodes)\ngrid {g['name']} ({g['digest']}), seeds "
                     f"{g['seeds']}, horizon {g['horizon']}", fontsize=9)
        fig.tight_layout()
        path = out_dir / f"closed_loop_{r.name}.png"
        save_figure(fig, path)
        paths.append(path)
    return paths


__all__ = [
    "SensitivityError", "RangeSpecError", "UnknownParameterError", "IrrelevantParameterError",
    "ParamSpec", "PARAMETERS", "DECISION_PARAMS", "BELIEF_PARAMS", "GATE_FIVE", "TABLE7_DIRECTIONS", "OUTPUTS",
    "ParamRange", "parse_range", "parse_ranges", "prepare_global_ranges", "looks_like_range",
    "ConfigTable", "DecisionColumns", "LoggedEpisode", "prepare_episode", "resolve_log_paths", "load_episodes",
    "BeliefTrace", "belief_params", "belief_trace", "vectorised_interrupts", "score_configs",
    "evaluate_configs", "count_belief_passes",
    "OATRow", "OATResult", "oat_values", "run_oat", "table7_directions",
    "GlobalResult", "global_sample", "run_global", "GateReplayEvaluator", "run_gate_global",
    "CLOSED_LOOP_OUTPUTS", "CLOSED_LOOP_COLUMNS", "BASE_DIR", "ClosedLoopConfig", "ClosedLoopPlan", "plan_closed_loop",
    "count_interrupts", "ClosedLoopRow", "ClosedLoopResult", "run_closed_loop_oat", "plot_closed_loop",
    "plot_oat", "plot_global",
]
