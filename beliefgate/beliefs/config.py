"""Configuration of the online gate: :class:`GateParams` (validated, immutable, JSON).

One validation serves the Python API and the HTTP service (which builds its
request models from these fields), so every configuration the gate accepts stays
usable: sizes that set the state's memory (``window``, ``cp_horizon``) and the
prior's scale (``alpha``, prior counts) are bounded.

Every way of building a :class:`GateParams` (``GateParams(...)``, ``replace``,
``model_copy(update=...)``, ``model_validate``, ``from_json``, ``load``) raises
:class:`GateParamError` (a ``ValueError`` under ``BeliefgateError``) for a bad value, one line
naming the field and the value. (The class docstring is the service's OpenAPI description.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional, Union

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from beliefgate.beliefs.gates import CHANGEPOINT, ChangePointConfig, CusumConfig, StableMapConfig, gate_driver
from beliefgate.models.errors import InvalidParameterError
from beliefgate.models.transitions import MIN_HAZARD, get_transition  # noqa: F401  (MIN_HAZARD re-exported)
from beliefgate.validation import CheckedModel, ParamError

#: Largest window / change-point horizon: the state holds [W, K] and [L + 1, K] arrays.
MAX_MEMORY_STEPS = 512
#: Largest prior concentration and prior count (larger ones make pi0 insensitive to data
#: and, near float64's range, overflow the smoothed prior).
MAX_ALPHA = 1e6
MAX_PRIOR_COUNT = 1e9


class GateParamError(ParamError, InvalidParameterError):
    """A :class:`GateParams` field is bad (out of range, unknown, or inconsistent with another):
    one line naming the field and the value, ``hazard: Input should be ..., got 2``. A
    ``ValueError`` (and a :class:`~beliefgate.beliefs.errors.BeliefInputError`)."""


class GateParams(CheckedModel):
    """Immutable, validated configuration of a :class:`Gate` (see ``docs/gate.md``).

    Belief model
        ``model``: ``"hazard"`` (sticky switching, default) or ``"windowed"``
        (paper-faithful segment product over the last ``window`` observed steps);
        ``hazard`` h in [0, 1] (with h = 0 a skill whose belief underflows to exactly 0
        stays there, and observations only it explains are refused with
        ImpossibleObservationError; any h >= MIN_HAZARD keeps every skill's predicted
        mass >= h pi0, so that cannot happen); ``window`` >= 1 or ``None`` (whole segment);
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
    CUSUM gate
        ``cusum_h`` > 0: Page's CUSUM of every other feasible skill's log-likelihood
        ratio against the pre-update MAP skill fires at ``cusum_h`` (restarting when the
        MAP changes, after a completion and after an alarm; ``docs/gate.md``).
    ``gate``: which gate drives ``Decision.interrupt``: ``"stable_map"``,
    ``"changepoint"``, ``"either"`` (stable-MAP or change-point) or ``"cusum"``.
    ``track_changepoint``: compute the change-point statistics even when they do
    not drive the interrupt. ``None`` (default) = always, except for the windowed
    model with the stable-MAP or CUSUM gate, where they would cost a second (hazard) filter
    per step; untracked statistics are reported as NaN.
    """

    error_type = GateParamError
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    model: Literal["hazard", "windowed"] = "hazard"
    hazard: float = Field(0.05, ge=0.0, le=1.0)
    window: Optional[int] = Field(5, ge=1, le=MAX_MEMORY_STEPS)
    alpha: float = Field(1.0, gt=0.0, le=MAX_ALPHA)
    tau_obs: float = Field(0.2, ge=0.0, le=1.0)
    likelihood_scale: float = Field(1.0, ge=0.0, le=1e3)
    confidence_floor: float = Field(0.7, ge=0.0, le=1.0)
    n_stable: int = Field(1, ge=0, le=1_000_000)
    cooldown: int = Field(5, ge=0, le=1_000_000)
    beta: float = Field(2.0, ge=0.0, le=1e3)
    epsilon: float = Field(0.1, ge=0.0, le=1.0)
    reference: Literal["skill", "action"] = "skill"
    gate: Literal["stable_map", "changepoint", "either", "cusum"] = "stable_map"
    cp_horizon: int = Field(6, ge=1, le=MAX_MEMORY_STEPS)
    cp_threshold: float = Field(0.3, gt=0.0, le=1.0)
    cp_release: float = Field(0.2, ge=0.0, le=1.0)
    cp_cooldown: int = Field(0, ge=0, le=1_000_000)
    # 4: the highest detection within 1 false alarm per 100 steps of the CUSUM sweep on tuning
    # seeds 1000-1002, four layouts, the 12 shipped switchers (docs/gate.md, docs/switches.md)
    cusum_h: float = Field(4.0, gt=0.0, le=1e6)
    track_changepoint: Optional[bool] = None

    @model_validator(mode="after")
    def _consistent(self) -> "GateParams":
        if self.cp_release > self.cp_threshold:
            raise ValueError(
                f"cp_release ({self.cp_release}) must not exceed cp_threshold ({self.cp_threshold})")
        if self.track_changepoint is False and CHANGEPOINT.slot in gate_driver(self.gate).slots:
            raise ValueError(f"gate={self.gate!r} needs the change-point statistic; "
                             "track_changepoint cannot be False")
        return self

    def to_json(self, indent: Optional[int] = 2) -> str:
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "GateParams":
        from beliefgate.fileio import duplicate_json_key

        repeated = duplicate_json_key(text)
        if repeated is not None:  # pydantic's parser would keep the last value silently
            raise GateParamError(f"GateParams JSON: {repeated}")
        return cls.model_validate_json(text)

    def save(self, path: Union[str, Path]) -> Path:
        """Write the parameters as JSON; returns the path."""
        path = Path(path)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: Union[str, Path]) -> "GateParams":
        """The parameters of a JSON file; a file that is missing, not UTF-8 text or not valid
        raises :class:`GateParamError` (the reading errors name the file)."""
        from beliefgate.fileio import read_text

        return cls.from_json(read_text(path, GateParamError))

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
        if "window" in get_transition(config.model).options:
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

    def cusum_config(self) -> CusumConfig:
        return CusumConfig(float(self.cusum_h))


__all__ = ["GateParams", "GateParamError", "MAX_MEMORY_STEPS", "MAX_ALPHA", "MAX_PRIOR_COUNT", "MIN_HAZARD"]
