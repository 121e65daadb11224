"""Parameters of the partner-skill model, with priors and constraints declared as data.

Each parameter is a :class:`ParamSpec` (name, prior factory, support, default,
whether it is fixed unless asked otherwise, doc). Models never branch on a
parameter's name: they loop over a tuple of specs (:data:`PARAMS`) through
:func:`sample_params`, and a caller changes a prior by replacing a spec
(``HAZARD._replace(prior=...)``) or pins a value with ``fixed={"hazard": 0.1}``
(or ``numpyro.handlers.substitute/condition`` on the sample site of that name).

=========  ==============================  =============  =======  ==================
name       prior (default)                  support        default  sampled by default
=========  ==============================  =============  =======  ==================
beta       Gamma(2, 1)     (mean 2)         (0, inf)       2.0      yes
epsilon    Beta(2, 18)     (mean 0.1)       (0, 1)         0.1      yes
hazard     Beta(2, 38)     (mean 0.05)      (0, 1)         0.05     yes
alpha      Gamma(4, 4)     (mean 1)         (0, inf)       1.0      no (fixed at 1.0)
=========  ==============================  =============  =======  ==================
"""

from __future__ import annotations

import math
from typing import Callable, Collection, Mapping, NamedTuple, Optional

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from beliefgate.models.errors import InvalidParameterError


class ParamSpec(NamedTuple):
    """One model parameter declared as data.

    Fields
    ------
    name : str
        Sample-site name in the NumPyro models (and key in value dicts).
    prior : Callable[[], numpyro.distributions.Distribution]
        Factory of the prior (a factory so specs stay hashable and cheap).
    support : numpyro.distributions.constraints.Constraint
        Constraint the value must satisfy (used by :func:`check_values`).
    default : float
        Value used when the parameter is fixed and no value is given.
    fixed : bool
        If True the parameter is a constant (``default``) unless listed in
        ``sample_params(..., random=...)``; if False it is sampled from ``prior``
        unless pinned with ``fixed={name: value}``.
    doc : str
        Meaning of the parameter.
    """

    name: str
    prior: Callable[[], dist.Distribution]
    support: constraints.Constraint
    default: float
    fixed: bool
    doc: str


def _gamma(concentration: float, rate: float) -> Callable[[], dist.Distribution]:
    return lambda: dist.Gamma(concentration, rate)


def _beta(a: float, b: float) -> Callable[[], dist.Distribution]:
    return lambda: dist.Beta(a, b)


BETA = ParamSpec(
    "beta", _gamma(2.0, 1.0), constraints.positive, 2.0, False,
    "Rationality of the Boltzmann controller: pi_hat ∝ exp(beta * Q).")
EPSILON = ParamSpec(
    "epsilon", _beta(2.0, 18.0), constraints.unit_interval, 0.1, False,
    "Noise mixed into the controller: (1 - eps) softmax + eps / |A|.")
HAZARD = ParamSpec(
    "hazard", _beta(2.0, 38.0), constraints.unit_interval, 0.05, False,
    "Per-step probability h that the partner redraws its skill from pi0.")
ALPHA = ParamSpec(
    "alpha", _gamma(4.0, 4.0), constraints.positive, 1.0, True,
    "Concentration of the smoothed skill prior pi0(k) ∝ n(k) + alpha.")

#: The parameters of the model in docs/model.md, in a fixed order.
PARAMS: tuple[ParamSpec, ...] = (BETA, EPSILON, HAZARD, ALPHA)


def default_values(specs: tuple[ParamSpec, ...] = PARAMS) -> dict[str, float]:
    """``{name: default}`` for every spec."""
    return {spec.name: spec.default for spec in specs}


def check_values(values: Mapping[str, float], specs: tuple[ParamSpec, ...] = PARAMS) -> dict:
    """Validate concrete parameter values against their specs' supports.

    Unknown names raise; missing names are filled with defaults. Returns a new
    dict of floats. Raises :class:`InvalidParameterError`.
    """
    by_name = {spec.name: spec for spec in specs}
    unknown = set(values) - set(by_name)
    if unknown:
        raise InvalidParameterError(
            f"unknown parameter(s) {sorted(unknown)}; known: {sorted(by_name)}")
    out = default_values(specs)
    for name, value in values.items():
        value = float(value)
        spec = by_name[name]
        inside = bool(spec.support(jnp.asarray(value))) if math.isfinite(value) else False
        if not inside:
            raise InvalidParameterError(
                f"{name} = {value!r} is outside its support {spec.support}")
        out[name] = value
    return out


def sample_params(specs: tuple[ParamSpec, ...] = PARAMS,
                  fixed: Optional[Mapping[str, float]] = None,
                  random: Collection[str] = ()) -> dict:
    """Inside a NumPyro model: draw or fix every parameter, returning ``{name: value}``.

    A spec becomes a sample site (named ``spec.name``) unless its name is in
    ``fixed`` (then that value is used) or ``spec.fixed`` is True and its name is
    not in ``random`` (then ``spec.default`` is used). Fixed parameters create no
    site, so ``log_density`` contains only the likelihood and the sampled priors.
    """
    fixed = dict(fixed or {})
    names = {spec.name for spec in specs}
    unknown = (set(fixed) | set(random)) - names
    if unknown:
        raise InvalidParameterError(
            f"unknown parameter(s) {sorted(unknown)}; known: {sorted(names)}")
    values = {}
    for spec in specs:
        if spec.name in fixed:
            values[spec.name] = jnp.asarray(fixed[spec.name])
        elif spec.fixed and spec.name not in random:
            values[spec.name] = jnp.asarray(spec.default)
        else:
            values[spec.name] = numpyro.sample(spec.name, spec.prior())
    return values


__all__ = [
    "ParamSpec",
    "BETA",
    "EPSILON",
    "HAZARD",
    "ALPHA",
    "PARAMS",
    "default_values",
    "check_values",
    "sample_params",
]
