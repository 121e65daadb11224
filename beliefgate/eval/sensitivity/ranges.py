"""Sweepable gate parameters and their ranges: ``NAME=LOW:HIGH:N`` (one-at-a-time),
``NAME=LOW:HIGH`` (global), ``NAME=v1,v2,...`` (explicit values), ``:log``/``:lin``.

Without a suffix the scale is automatic: logarithmic when ``LOW > 0`` and
``HIGH / LOW >= 100`` (the range spans two decades or more), else linear. Integer
parameters (``n_stable``, ``cooldown``, ``window``, ``cp_horizon``, ``cp_cooldown``)
need integer bounds and map a unit-interval sample ``u`` to
``floor(LOW + u (HIGH - LOW + 1))`` (capped at ``HIGH``): every integer of the range
has mass ``1 / (HIGH - LOW + 1)``; with a log scale ``floor(LOW ((HIGH + 1) / LOW)^u)``,
mass ``log((k + 1) / k) / log((HIGH + 1) / LOW)``. Every range is validated (name,
order, integrality, the field's own bounds, relevance to the base configuration)
before any work starts (``docs/sensitivity.md``).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Dict, List, Literal, Optional, Sequence, Tuple

import numpy as np
from pydantic import ValidationError

from beliefgate.beliefs.config import GateParamError, GateParams
from beliefgate.eval.sensitivity.errors import IrrelevantParameterError, RangeSpecError, UnknownParameterError
from beliefgate.fileio import finite_or_none
from beliefgate.limits import MAX_OAT_VALUES
from beliefgate.validation import first_problem
from beliefgate.models.transitions import models_with_option

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
    # "stable_map", "changepoint" or "transition" (applies to the models whose transition
    # component lists it in ``options``, e.g. window: the windowed model)
    needs: Optional[str] = None


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
        ParamSpec("window", "belief", True, "window", "transition"),
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
        if self.num is not None and (isinstance(self.num, bool) or int(self.num) != self.num
                                     or not 2 <= self.num <= MAX_OAT_VALUES):
            raise RangeSpecError(f"{self.name}: N must be an integer >= 2 and <= {MAX_OAT_VALUES}, got {self.num!r}")
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
        if not 2 <= len(values) <= MAX_OAT_VALUES:
            raise RangeSpecError(f"{name}: give 2 to {MAX_OAT_VALUES} distinct values, got {len(values)}")
        low, high = values[0], values[-1]
    elif mode == "oat":
        if len(parts) != 3:
            raise RangeSpecError(f"{name}: expected {name}=LOW:HIGH:N (or {name}=v1,v2,...), got {spec!r}")
        low, high = _number(parts[0], "LOW", name), _number(parts[1], "HIGH", name)
        n = _number(parts[2], "N", name)
        if not n.is_integer() or not 2 <= n <= MAX_OAT_VALUES:
            raise RangeSpecError(f"{name}: N must be an integer >= 2 and <= {MAX_OAT_VALUES}, got {parts[2]!r}")
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
    models = models_with_option(info.name) if info.needs == "transition" else ()
    if models and base.model not in models:
        raise IrrelevantParameterError(
            f"{info.name} only matters for {' or '.join(f'model={m!r}' for m in models)} "
            f"(the base uses model={base.model!r}; "
            "set it with --base PARAMS.json)")
    if info.needs == "changepoint" and base.gate.kind == "stable_map":
        raise IrrelevantParameterError(
            f"{info.name} only changes interrupts when gate is 'changepoint' or 'either' "
            "(the base uses gate='stable_map'; set it with --base PARAMS.json)")
    if info.needs == "stable_map" and base.gate.kind == "changepoint":
        raise IrrelevantParameterError(
            f"{info.name} only changes interrupts of the stable-MAP gate; the base uses gate='changepoint'")


def _check_field(name: str, value: float) -> None:
    """The field's own constraints (e.g. tau_obs in [0, 1]), not the model's joint ones."""
    from typing import Annotated

    from pydantic import TypeAdapter

    info = GateParams.field_info(name)  # the part's field the flat name maps to
    v = int(value) if PARAMETERS[name].integer else float(value)
    try:
        TypeAdapter(Annotated[(info.annotation, *info.metadata)]).validate_python(v)
    except ValidationError as exc:
        detail = first_problem(exc, name).reason
        raise RangeSpecError(f"{name}={_fmt(value)} is not a valid GateParams value: {detail}") from None


def _check_value(base: GateParams, name: str, value: float) -> None:
    """``base`` with ``name = value`` must be a valid GateParams (joint constraints included)."""
    v = int(value) if PARAMETERS[name].integer else float(value)
    try:
        base.replace(**{name: v})
    except GateParamError as exc:
        raise RangeSpecError(f"{name}={_fmt(value)} is not a valid GateParams value: {exc.reason}") from None


def parse_ranges(texts: Sequence[str], mode: Literal["oat", "global"],
                 base: Optional[GateParams] = None) -> List[ParamRange]:
    """Parse several ranges; also rejects duplicates and jointly invalid ranges
    (``cp_release`` above ``cp_threshold`` somewhere in the sampled box)."""
    base = base or GateParams()
    if base.gate.kind == "cusum":
        raise IrrelevantParameterError("the sensitivity analyses sweep the stable-MAP and change-point gates; "
                                       "the base uses gate='cusum' (sweep its cusum_h with `beliefgate switches`)")
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



def _json_float(x: float):
    """A float for JSON: ``None`` for NaN and infinities."""
    return finite_or_none(float(x))


__all__ = ["Kind", "ParamSpec", "PARAMETERS", "DECISION_PARAMS", "BELIEF_PARAMS", "GATE_FIVE", "TABLE7_DIRECTIONS",
           "AUTO_LOG_RATIO", "Scale", "ParamRange", "looks_like_range", "parse_range", "parse_ranges",
           "prepare_global_ranges"]
