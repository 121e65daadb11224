"""Configuration of the online gate: :class:`GateParams` (validated, immutable, JSON).

A :class:`GateParams` is composed of three parts, each a frozen, validated model of its own:

``filter`` (:class:`FilterPart`)
    the belief filter: ``model``, ``hazard``, ``window``, ``alpha``;
``controller`` (:class:`ControllerPart`)
    the likelihood controller domain observers use: ``beta``, ``epsilon``;
``gate`` (:class:`GatePart`)
    which gate drives the interrupt (``kind``) and each gate's settings: ``stable_map``
    (:class:`StableMapPart`), ``changepoint`` (:class:`ChangePointPart`), ``cusum``
    (:class:`CusumPart`), and ``track_changepoint``.

Its JSON is nested the same way (``{"filter": {"hazard": 0.05, ...}, "controller": {...},
"gate": {"kind": "stable_map", "stable_map": {...}, ...}}``).

The flat keys of the earlier, one-level model (``hazard``, ``tau_obs``, ``gate="cusum"``,
``cp_horizon``, ``cusum_h``, ... -- :data:`FLAT_KEYS` maps each to its path) still load, by every
way of building one, with one ``DeprecationWarning`` (and a line on the ``beliefgate.beliefs.config``
logger, once per set of keys) naming the keys and their new paths (``hazard -> filter.hazard``);
the count of such loads is :data:`FLAT_KEY_LOADS`. Giving one value both flat and nested is an
error. ``replace``/``model_copy(update=...)`` take the flat names as a shorthand for the field they
map to (no warning: they name one value each), as well as the parts. ``params.hazard`` and the
other flat names are read-only views of the parts (not a second copy of the values).

One validation serves the Python API and the HTTP service (which builds its
request models from these parts), so every configuration the gate accepts stays
usable: sizes that set the state's memory (``window``, ``cp_horizon``) and the
prior's scale (``alpha``, prior counts) are bounded.

Every way of building a :class:`GateParams` (``GateParams(...)``, ``replace``,
``model_copy(update=...)``, ``model_validate``, ``from_json``, ``load``) raises
:class:`GateParamError` (a ``ValueError`` under ``BeliefgateError``) for a bad value, one line
naming the field and the value. (The class docstring is the service's OpenAPI description.)
"""

from __future__ import annotations

import json
import logging
import re
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Literal, Mapping, Optional, Tuple, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator
from pydantic.fields import FieldInfo

from beliefgate.beliefs.gates import CHANGEPOINT, ChangePointConfig, CusumConfig, StableMapConfig, gate_driver
from beliefgate.models.errors import InvalidParameterError
from beliefgate.models.transitions import MIN_HAZARD, get_transition  # noqa: F401  (MIN_HAZARD re-exported)
from beliefgate.validation import CheckedModel, ParamError

log = logging.getLogger(__name__)

#: Largest window / change-point horizon: the state holds [W, K] and [L + 1, K] arrays.
MAX_MEMORY_STEPS = 512
#: Largest prior concentration and prior count (larger ones make pi0 insensitive to data
#: and, near float64's range, overflow the smoothed prior).
MAX_ALPHA = 1e6
MAX_PRIOR_COUNT = 1e9


class GateParamError(ParamError, InvalidParameterError):
    """A :class:`GateParams` field is bad (out of range, unknown, or inconsistent with another):
    one line naming the field and the value, ``filter.hazard: Input should be ..., got 2``. A
    ``ValueError`` (and a :class:`~beliefgate.beliefs.errors.BeliefInputError`)."""


_PART = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class FilterPart(CheckedModel):
    """The belief filter of a :class:`GateParams` (``params.filter``).

    ``model``: ``"hazard"`` (sticky switching, default) or ``"windowed"`` (paper-faithful
    segment product over the last ``window`` observed steps); ``hazard`` h in [0, 1] (with
    h = 0 a skill whose belief underflows to exactly 0 stays there, and observations only it
    explains are refused with ImpossibleObservationError; any h >= MIN_HAZARD keeps every
    skill's predicted mass >= h pi0, so that cannot happen); ``window`` >= 1 or ``None``
    (whole segment); ``alpha`` > 0, concentration of the smoothed prior ``pi0 ∝ n + alpha``.
    (``hazard`` is also the change-point gate's run-length hazard.)
    """

    error_type = GateParamError
    model_config = _PART

    model: Literal["hazard", "windowed"] = "hazard"
    hazard: float = Field(0.05, ge=0.0, le=1.0)
    window: Optional[int] = Field(5, ge=1, le=MAX_MEMORY_STEPS)
    alpha: float = Field(1.0, gt=0.0, le=MAX_ALPHA)


class ControllerPart(CheckedModel):
    """The likelihood controller of a :class:`GateParams` (``params.controller``), used by domain
    observers (e.g. Overcooked's): ``beta`` >= 0 (rationality), ``epsilon`` in [0, 1] (noise)."""

    error_type = GateParamError
    model_config = _PART

    beta: float = Field(2.0, ge=0.0, le=1e3)
    epsilon: float = Field(0.1, ge=0.0, le=1.0)


class StableMapPart(CheckedModel):
    """The stable-MAP gate (SPEC §4; ``params.gate.stable_map``).

    ``tau_obs`` in [0, 1] (contradiction when l_t < tau_obs), ``likelihood_scale`` lambda >= 0,
    ``confidence_floor`` c_floor in [0, 1], ``n_stable`` >= 0, ``cooldown`` >= 0 steps;
    ``reference``: what l_t compares the observation with -- ``"action"`` is BayesBelief Eq. 10
    (the best action under the MAP skill), ``"skill"`` (default) the best feasible skill.
    """

    error_type = GateParamError
    model_config = _PART

    tau_obs: float = Field(0.2, ge=0.0, le=1.0)
    likelihood_scale: float = Field(1.0, ge=0.0, le=1e3)
    confidence_floor: float = Field(0.7, ge=0.0, le=1.0)
    n_stable: int = Field(1, ge=0, le=1_000_000)
    cooldown: int = Field(5, ge=0, le=1_000_000)
    reference: Literal["skill", "action"] = "skill"


class ChangePointPart(CheckedModel):
    """The change-point gate (``params.gate.changepoint``; flat names ``cp_*``).

    ``horizon`` L >= 1 (a switch is "recent" for L steps), ``threshold`` in (0, 1],
    ``release`` in [0, threshold] (re-arm level), ``cooldown`` >= 0 steps. Its run-length
    filter uses the filter's ``hazard``.
    """

    error_type = GateParamError
    model_config = _PART

    horizon: int = Field(6, ge=1, le=MAX_MEMORY_STEPS)
    threshold: float = Field(0.3, gt=0.0, le=1.0)
    release: float = Field(0.2, ge=0.0, le=1.0)
    cooldown: int = Field(0, ge=0, le=1_000_000)

    @model_validator(mode="after")
    def _release_below_threshold(self) -> "ChangePointPart":
        if self.release > self.threshold:
            raise ValueError(f"release ({self.release}) must not exceed threshold ({self.threshold})")
        return self


class CusumPart(CheckedModel):
    """The CUSUM gate (``params.gate.cusum``; flat name ``cusum_h``).

    ``h`` > 0: Page's CUSUM of every other feasible skill's log-likelihood ratio against the
    pre-update MAP skill fires at ``h`` (restarting when the MAP changes, after a completion and
    after an alarm; ``docs/gate.md``).
    """

    error_type = GateParamError
    model_config = _PART

    # 4: the highest detection within 1 false alarm per 100 steps of the CUSUM sweep on tuning
    # seeds 1000-1002, four layouts, the 12 shipped switchers (docs/gate.md, docs/switches.md)
    h: float = Field(4.0, gt=0.0, le=1e6)


class GatePart(CheckedModel):
    """The gates of a :class:`GateParams` (``params.gate``).

    ``kind``: which gate drives ``Decision.interrupt``: ``"stable_map"``, ``"changepoint"``,
    ``"either"`` (stable-MAP or change-point) or ``"cusum"`` (the flat key ``gate``).
    ``stable_map``, ``changepoint``, ``cusum``: each gate's settings (all kept, whichever
    drives). ``track_changepoint``: compute the change-point statistics even when they do not
    drive the interrupt. ``None`` (default) = always, except for the windowed model with the
    stable-MAP or CUSUM gate, where they would cost a second (hazard) filter per step; untracked
    statistics are reported as NaN.
    """

    error_type = GateParamError
    model_config = _PART

    kind: Literal["stable_map", "changepoint", "either", "cusum"] = "stable_map"
    stable_map: StableMapPart = Field(default_factory=StableMapPart)
    changepoint: ChangePointPart = Field(default_factory=ChangePointPart)
    cusum: CusumPart = Field(default_factory=CusumPart)
    track_changepoint: Optional[bool] = None

    @model_validator(mode="after")
    def _tracks_what_drives(self) -> "GatePart":
        if self.track_changepoint is False and CHANGEPOINT.slot in gate_driver(self.kind).slots:
            raise ValueError(f"kind={self.kind!r} needs the change-point statistic; "
                             "track_changepoint cannot be False")
        return self


#: Every flat key of the earlier one-level GateParams -> its path in the parts.
FLAT_KEYS: Dict[str, Tuple[str, ...]] = {
    "model": ("filter", "model"),
    "hazard": ("filter", "hazard"),
    "window": ("filter", "window"),
    "alpha": ("filter", "alpha"),
    "beta": ("controller", "beta"),
    "epsilon": ("controller", "epsilon"),
    "gate": ("gate", "kind"),
    "tau_obs": ("gate", "stable_map", "tau_obs"),
    "likelihood_scale": ("gate", "stable_map", "likelihood_scale"),
    "confidence_floor": ("gate", "stable_map", "confidence_floor"),
    "n_stable": ("gate", "stable_map", "n_stable"),
    "cooldown": ("gate", "stable_map", "cooldown"),
    "reference": ("gate", "stable_map", "reference"),
    "cp_horizon": ("gate", "changepoint", "horizon"),
    "cp_threshold": ("gate", "changepoint", "threshold"),
    "cp_release": ("gate", "changepoint", "release"),
    "cp_cooldown": ("gate", "changepoint", "cooldown"),
    "cusum_h": ("gate", "cusum", "h"),
    "track_changepoint": ("gate", "track_changepoint"),
}
#: Loads that used flat keys in this process, by key (every fallback is counted).
FLAT_KEY_LOADS: Counter = Counter()
#: validation context key of :meth:`GateParams.replace`: flat names are its shorthand, not a deprecated load
_SHORTHAND = "gate_params_shorthand"
_LOGGED: set = set()


def flat_path(name: str) -> str:
    """The dotted path of the flat key ``name`` (``"hazard"`` -> ``"filter.hazard"``)."""
    return ".".join(FLAT_KEYS[name])


def flat_values(params: "GateParams") -> Dict[str, Any]:
    """Every field of ``params`` under its flat name (``{"hazard": 0.05, "gate": "stable_map", ...}``):
    a flat view for tables and sweeps (the nested form is :meth:`GateParams.to_json`'s)."""
    return {name: getattr(params, name) if name != "gate" else params.gate.kind for name in FLAT_KEYS}


def flatten(changes: Mapping[str, Any]) -> Dict[str, Any]:
    """Overrides (flat names and/or parts given as mappings or models) as flat names only:
    ``{"filter": {"hazard": 0.1}, "cusum_h": 3}`` -> ``{"hazard": 0.1, "cusum_h": 3}``. A key that is
    neither is kept as it is (validation names it); one value given twice raises ``ValueError``."""
    by_path = {path: name for name, path in FLAT_KEYS.items()}
    out: Dict[str, Any] = {}

    def walk(prefix: Tuple[str, ...], value: Any) -> None:
        if prefix in by_path:
            name = by_path[prefix]
            if name in out:
                raise ValueError(f"{name} is given twice, flat ({name}) and nested ({flat_path(name)})")
            out[name] = value
        elif isinstance(value, BaseModel):
            for k, v in _node(value)[0].items():
                walk(prefix + (k,), v)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(prefix + (str(k),), v)
        else:
            out[".".join(prefix)] = value

    for key, value in changes.items():
        walk(FLAT_KEYS[key] if _is_flat(key, value) else (str(key),), value)
    return out


def _is_flat(key: Any, value: Any) -> bool:
    """Whether ``key: value`` of a GateParams mapping is a flat key (``gate`` is flat when a string:
    the nested ``gate`` is a part)."""
    return key in FLAT_KEYS and not (key == "gate" and not isinstance(value, str))


def _node(value: Any) -> Tuple[dict, frozenset]:
    """A part given as a mapping or a model, as a dict of its values, and the keys it *gave*
    (a model's explicitly set fields: the others are its defaults, free for a flat key)."""
    if isinstance(value, BaseModel):
        return {k: getattr(value, k) for k in type(value).model_fields}, frozenset(value.model_fields_set)
    return dict(value), frozenset(value)


def _nest(data: Mapping[str, Any]) -> Tuple[dict, list]:
    """``data`` with its flat keys moved to their paths, and the flat keys used. A value given
    both flat and nested raises ``ValueError``; a part that is neither a mapping nor a model is
    left for the model's validation to name."""
    flat = [k for k, v in data.items() if _is_flat(k, v)]
    tree = {k: v for k, v in data.items() if k not in flat}
    given: Dict[Tuple[str, ...], frozenset] = {(): frozenset(tree)}  # per part copied so far: what the caller gave
    for key in flat:
        *parts, leaf = FLAT_KEYS[key]
        node = tree
        for n, name in enumerate(parts):
            path = tuple(parts[:n + 1])
            if path not in given:  # first visit: copy the caller's part (or start an empty one)
                child = node.get(name)
                if child is None:
                    node[name], given[path] = {}, frozenset()
                elif isinstance(child, (Mapping, BaseModel)):
                    node[name], given[path] = _node(child)
                else:  # not a part: validation names it
                    break
            node = node[name]
        else:
            if leaf in given[tuple(parts)]:
                raise ValueError(f"{key} is given twice, flat ({key}) and nested ({flat_path(key)}); "
                                 f"give it once, as {flat_path(key)}")
            node[leaf] = data[key]
    return tree, flat


def _deprecated_flat(keys: list, owner: str) -> None:
    """The one DeprecationWarning (and log line, once per set of keys) of a load with flat keys."""
    FLAT_KEY_LOADS.update(keys)
    moves = ", ".join(f"{k} -> {flat_path(k)}" for k in keys)
    message = (f"{owner}: flat keys are deprecated, use the nested form ({moves}); "
               "GateParams.to_json() writes it")
    warnings.warn(message, DeprecationWarning, stacklevel=2)
    if tuple(keys) not in _LOGGED:
        _LOGGED.add(tuple(keys))
        log.warning(message)


def _merge(base: dict, changes: Mapping[str, Any]) -> dict:
    """``base`` (a model dump) with ``changes`` applied: a mapping updates the part it names
    field by field, anything else (a value, a part's model) replaces it."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _renamed(exc: ValidationError, flat: Mapping[Tuple[str, ...], str]) -> ValidationError:
    """``exc`` with the location of every value given under a flat key named after that key
    (``("filter", "hazard")`` -> ``("hazard",)``), as the caller wrote it; a part's own rule broken
    by flat keys speaks the flat names, as a rule of the whole (``GateParams: cp_release (0.9)
    must not exceed cp_threshold (0.5)``)."""
    errors = []
    for error in exc.errors():
        loc = tuple(error.get("loc", ()))
        ctx = error.get("ctx")
        prefix = next((loc[:n] for n in range(len(loc), 0, -1) if loc[:n] in flat), None)
        if prefix is not None:
            loc = (flat[prefix], *loc[len(prefix):])
        elif error["type"] == "value_error" and any(path[:-1] == loc for path in flat):
            names = {path[-1]: name for name, path in FLAT_KEYS.items() if path[:-1] == loc}
            text = re.sub(r"\b(\w+)\b", lambda m: names.get(m.group(1), m.group(1)), str(ctx["error"]))
            loc, ctx = (), {"error": ValueError(text)}
        errors.append({"type": error["type"], "loc": loc, "input": error.get("input"),
                       **({"ctx": ctx} if ctx is not None else {})})
    try:
        return ValidationError.from_exception_data(exc.title, errors)
    except (KeyError, TypeError, ValueError):  # an error type pydantic cannot rebuild: as it was
        return exc


class _View:
    """A read-only view of one field of a part under a flat name (``params.hazard`` is
    ``params.filter.hazard``), not a second copy of it."""

    def __init__(self, name: str):
        self.name = name
        self.path = FLAT_KEYS[name]
        self.__doc__ = f"``{flat_path(name)}`` (read-only view under the earlier flat name)."

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        value = obj
        for name in self.path:
            value = getattr(value, name)
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        raise GateParamError(f"{self.name}: GateParams is immutable; use params.replace({self.name}=...)",
                             self.name)


class GateParams(CheckedModel):
    """Immutable, validated configuration of a :class:`Gate` (see ``docs/gate.md``), in three parts.

    ``filter`` (FilterPart)
        the belief model: ``model`` (``"hazard"`` or ``"windowed"``), ``hazard`` h in [0, 1],
        ``window`` >= 1 or ``None``, ``alpha`` > 0 (the smoothed prior ``pi0 ∝ n + alpha``).
    ``controller`` (ControllerPart)
        the likelihood controller domain observers use: ``beta`` >= 0, ``epsilon`` in [0, 1].
    ``gate`` (GatePart)
        ``kind``: which gate drives ``Decision.interrupt`` (``"stable_map"``,
        ``"changepoint"``, ``"either"``, ``"cusum"``); ``stable_map`` (``tau_obs``,
        ``likelihood_scale``, ``confidence_floor``, ``n_stable``, ``cooldown``,
        ``reference``), ``changepoint`` (``horizon``, ``threshold``, ``release``,
        ``cooldown``), ``cusum`` (``h``), ``track_changepoint``.

    Each part's own docstring says what its fields mean. The flat keys of the earlier
    one-level form (``hazard``, ``tau_obs``, ``gate: "cusum"``, ``cp_horizon``, ``cusum_h``
    ...) still load, deprecated (a ``DeprecationWarning`` names each key's new path); a value
    may not be given both flat and nested. ``params.hazard`` etc. are read-only views of the
    parts; ``replace(hazard=0.1)`` sets the field a flat name maps to.
    """

    error_type = GateParamError
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, ignored_types=(_View,))

    filter: FilterPart = Field(default_factory=FilterPart)
    controller: ControllerPart = Field(default_factory=ControllerPart)
    gate: GatePart = Field(default_factory=GatePart)

    # read-only views under the earlier flat names (``gate`` is the part: its kind is ``gate.kind``)
    model = _View("model")
    hazard = _View("hazard")
    window = _View("window")
    alpha = _View("alpha")
    beta = _View("beta")
    epsilon = _View("epsilon")
    tau_obs = _View("tau_obs")
    likelihood_scale = _View("likelihood_scale")
    confidence_floor = _View("confidence_floor")
    n_stable = _View("n_stable")
    cooldown = _View("cooldown")
    reference = _View("reference")
    cp_horizon = _View("cp_horizon")
    cp_threshold = _View("cp_threshold")
    cp_release = _View("cp_release")
    cp_cooldown = _View("cp_cooldown")
    cusum_h = _View("cusum_h")
    track_changepoint = _View("track_changepoint")

    @model_validator(mode="wrap")
    @classmethod
    def _flat_keys(cls, data: Any, handler: Any, info: ValidationInfo) -> Any:
        """The deprecated flat keys moved into the parts (one DeprecationWarning naming them, none
        for :meth:`replace`'s shorthand); an error of such a value is named after its flat key."""
        if not isinstance(data, Mapping) or not any(_is_flat(k, v) for k, v in data.items()):
            return handler(data)
        tree, flat = _nest(data)
        if not (info.context or {}).get(_SHORTHAND):
            _deprecated_flat(flat, cls.__name__)
        try:
            return handler(tree)
        except ValidationError as exc:
            raise _renamed(exc, {FLAT_KEYS[k]: k for k in flat}) from None

    @classmethod
    def field_info(cls, name: str) -> FieldInfo:
        """The field (bounds, default) a flat name (``"hazard"``) or a dotted path
        (``"filter.hazard"``) names; :class:`GateParamError` naming it otherwise."""
        path = FLAT_KEYS.get(name, tuple(name.split(".")))
        model: Any = cls
        info = None
        for part in path:
            fields = getattr(model, "model_fields", {}) if isinstance(model, type) else {}
            if part not in fields:
                raise GateParamError(f"{name}: not a GateParams field (flat names: {', '.join(FLAT_KEYS)})", name)
            info = fields[part]
            model = info.annotation
        return info

    def model_copy(self, *, update: Optional[dict] = None, deep: bool = False) -> "GateParams":
        """A copy; with ``update``, a validated one. ``update`` may name parts (a mapping updates
        the part's fields, a part model replaces it) and flat names (``hazard``: the field it maps
        to, no deprecation warning); one value given both ways is an error."""
        if not update:
            return super().model_copy(deep=deep)
        try:
            _nest(update)  # one value given both flat and in a part
        except ValueError as exc:
            raise GateParamError(f"{type(self).__name__}: {exc}") from None
        flat = {k: v for k, v in update.items() if _is_flat(k, v)}
        data = _merge(self.model_dump(), {k: v for k, v in update.items() if k not in flat})
        for key in flat:  # the current value gives way to the flat one
            *parts, leaf = FLAT_KEYS[key]
            node = data
            for name in parts:
                node = node.get(name) if isinstance(node, dict) else None
            if isinstance(node, dict):
                node.pop(leaf, None)
        return type(self).model_validate({**data, **flat}, context={_SHORTHAND: True})

    def to_json(self, indent: Optional[int] = 2) -> str:
        """The nested JSON form."""
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "GateParams":
        """Parameters from JSON, nested or (deprecated) flat."""
        from beliefgate.fileio import duplicate_json_key

        repeated = duplicate_json_key(text)
        if repeated is not None:  # pydantic's parser would keep the last value silently
            raise GateParamError(f"GateParams JSON: {repeated}")
        return cls.model_validate_json(text)

    def save(self, path: Union[str, Path]) -> Path:
        """Write the parameters as (nested) JSON; returns the path."""
        path = Path(path)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: Union[str, Path]) -> "GateParams":
        """The parameters of a JSON file (nested or deprecated flat); a file that is missing,
        not UTF-8 text or not valid raises :class:`GateParamError` (the reading errors name the file)."""
        from beliefgate.fileio import read_text

        return cls.from_json(read_text(path, GateParamError))

    @classmethod
    def from_fit(cls, path: Union[str, Path], point: str = "median", **overrides) -> "GateParams":
        """Parameters from a fit written by ``beliefgate fit`` (ArviZ NetCDF): its filter and
        controller parts.

        ``beta``, ``epsilon``, ``hazard`` (hazard model) and ``alpha`` take the
        posterior ``point`` estimate (``"median"`` or ``"mean"``) or the value the
        fit pinned; ``model`` and ``window`` follow the fitted model. A per-skill
        ``beta`` is pooled (``point`` over skills and draws): the gate takes one
        ``beta``. A fitted tempering weight is not a gate parameter (pass it to the
        domain observer). ``overrides`` set any other field, as :meth:`replace` takes them
        (``tau_obs=0.3``, ``gate={"kind": "cusum"}``, ...).
        Raises ``ValueError`` when the file is not such a fit.
        """
        from beliefgate.models.fit import fit_config, load_fit, point_values

        idata = load_fit(path)  # FitError (a ValueError) naming the file and the reason
        config = fit_config(idata)
        estimates = point_values(idata, point)  # fitted or pinned, exactly as the fit used them
        fitted: dict = {"model": config.model}
        if "window" in get_transition(config.model).options:
            fitted["window"] = config.window
        for name in ("beta", "epsilon", "hazard", "alpha"):
            if name not in estimates:  # the windowed model has no hazard
                continue
            value = estimates[name]
            if isinstance(value, list):  # per-skill beta: pooled over skills and draws
                reduce = np.median if point == "median" else np.mean
                value = float(reduce(np.asarray(idata.posterior[name].values)))
            fitted[name] = value
        parts = {"filter": {k: v for k, v in fitted.items() if FLAT_KEYS[k][0] == "filter"},
                 "controller": {k: v for k, v in fitted.items() if FLAT_KEYS[k][0] == "controller"}}
        return cls(**parts).replace(**overrides) if overrides else cls(**parts)

    def filter_params(self):
        """The equivalent :class:`beliefgate.beliefs.filter.FilterParams` (imports JAX)."""
        from beliefgate.beliefs.filter import FilterParams

        f = self.filter
        return FilterParams(f.model, f.hazard, f.alpha, f.window)

    def stable_map_config(self) -> StableMapConfig:
        sm = self.gate.stable_map
        return StableMapConfig.make(sm.tau_obs, sm.likelihood_scale, sm.confidence_floor, sm.n_stable, sm.cooldown)

    def changepoint_config(self) -> ChangePointConfig:
        cp = self.gate.changepoint
        return ChangePointConfig(self.filter.hazard, cp.horizon, cp.threshold, cp.release, cp.cooldown)

    def cusum_config(self) -> CusumConfig:
        return CusumConfig(float(self.gate.cusum.h))


__all__ = ["GateParams", "GateParamError", "FilterPart", "ControllerPart", "GatePart", "StableMapPart",
           "ChangePointPart", "CusumPart", "FLAT_KEYS", "FLAT_KEY_LOADS", "flat_path", "flat_values", "flatten",
           "MAX_MEMORY_STEPS", "MAX_ALPHA", "MAX_PRIOR_COUNT", "MIN_HAZARD"]
