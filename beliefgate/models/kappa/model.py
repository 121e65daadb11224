"""The NumPyro model of OverForge branch utilities (SPEC §5), its priors and a simulator.

Generative model, for decision ``n`` with branches ``b = 1..K_n``::

    mu0 ~ Normal(0, 1)              sigma0 ~ LogNormal(0, 0.5)
    tau ~ LogNormal(log 0.5, 0.75)  sigma_r ~ LogNormal(0, 0.75)        (PRIORS; or pinned)
    U_nb = mu0 + sigma0 * z_nb,  z_nb ~ Normal(0, 1)                     (non-centred)
    y    ~ Bernoulli(sigmoid((U_nb - U_nc) / tau))    per judgment "b over c"
    r    ~ Normal(U_nb, sigma_r^2 / d)                per rollout of b at depth d

:func:`utility_model` is the single definition: the online kappa
(:mod:`beliefgate.beliefs.kappa`) approximates its posterior over ``U`` for one decision
at fixed parameters, :func:`~beliefgate.models.kappa.posterior.nuts_argmax_probs` samples that
same posterior with NUTS (the reference the tests compare kappa with), and
:func:`~beliefgate.models.kappa.fit.fit_kappa` fits the parameters to many logged decisions.
:func:`simulate_decisions` draws decision records from it.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional

import numpy as np

from beliefgate.models.kappa.data import KappaData
from beliefgate.models.kappa.errors import KappaDataError

PARAM_NAMES = ("mu0", "sigma0", "tau", "sigma_r")
#: prior of each parameter: (NumPyro distribution name, its arguments)
PRIORS = {
    "mu0": ("Normal", (0.0, 1.0)),
    "sigma0": ("LogNormal", (0.0, 0.5)),
    "tau": ("LogNormal", (math.log(0.5), 0.75)),
    "sigma_r": ("LogNormal", (0.0, 0.75)),
}
#: the range of each model parameter, inclusive: the online KappaParams and a fit's --fix share it
#: (scales far outside would only overflow float64), so every fit written can be read back
PARAM_RANGES = {"mu0": (-1e6, 1e6), "sigma0": (1e-6, 1e6), "tau": (1e-6, 1e6), "sigma_r": (1e-6, 1e6)}


def prior(name: str):
    """The NumPyro prior distribution of parameter ``name`` (:data:`PRIORS`)."""
    import numpyro.distributions as dist

    kind, args = PRIORS[name]
    return getattr(dist, kind)(*args)


def utility_model(data: KappaData, fixed: Optional[Mapping[str, float]] = None,
                  keep_utilities: bool = False, centered: bool = False) -> None:
    """The NumPyro model of branch utilities (module doc) over :class:`KappaData`.

    ``fixed`` pins parameters (the others get their :data:`PRIORS`). Sites: the sampled
    parameters, the utilities (``z``, standardised, ``[B]``; ``centered=True``: ``u``
    itself, which samples better when every branch has much evidence), ``U``
    (deterministic, only with ``keep_utilities``), ``y`` and ``r`` (observed, masked where
    padding). Both parameterisations are the same model.
    """
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    fixed = dict(fixed or {})
    values = {}
    for name in PARAM_NAMES:
        values[name] = (jnp.asarray(fixed[name]) if name in fixed else numpyro.sample(name, prior(name)))
    with numpyro.plate("branch", data.num_branches):
        if centered:
            u = numpyro.sample("u", dist.Normal(values["mu0"], values["sigma0"]))
        else:
            u = values["mu0"] + values["sigma0"] * numpyro.sample("z", dist.Normal(0.0, 1.0))
    if keep_utilities:
        numpyro.deterministic("U", u)
    if np.shape(data.j_y)[0]:
        logits = (u[data.j_left] - u[data.j_right]) / values["tau"]
        with numpyro.plate("judgment", np.shape(data.j_y)[0]):
            numpyro.sample("y", dist.Bernoulli(logits=logits).mask(data.j_mask), obs=data.j_y)
    if np.shape(data.r_score)[0]:
        scale = values["sigma_r"] / jnp.sqrt(data.r_depth)
        with numpyro.plate("rollout", np.shape(data.r_score)[0]):
            numpyro.sample("r", dist.Normal(u[data.r_branch], scale).mask(data.r_mask), obs=data.r_score)


def simulate_decisions(num: int, values: Mapping[str, float], seed: int = 0, *, min_branches: int = 2,
                       max_branches: int = 8, max_judgments: int = 20, max_rollouts: int = 10,
                       max_depth: int = 3) -> list:
    """``num`` decision records drawn from the model at parameter ``values``.

    Each decision has ``K ~ U{min_branches..max_branches}`` branches, ``U{0..max_judgments}``
    judgments between random distinct pairs and ``U{0..max_rollouts}`` rollouts of random
    branches at depth ``U{1..max_depth}``; ``true_utilities`` and ``simulated`` (the
    parameters and seed) are kept in each record.
    """
    for name in PARAM_NAMES:
        if name not in values:
            raise KappaDataError(f"simulate_decisions needs {name}")
    if not 1 <= min_branches <= max_branches:
        raise KappaDataError(f"need 1 <= min_branches <= max_branches, got {min_branches}, {max_branches}")
    rng = np.random.default_rng(seed)
    mu0, s0, tau, sr = (float(values[n]) for n in PARAM_NAMES)
    out = []
    for n in range(num):
        k = int(rng.integers(min_branches, max_branches + 1))
        names = [f"b{i}" for i in range(k)]
        u = rng.normal(mu0, s0, size=k)
        judgments = []
        if k >= 2:
            for _ in range(int(rng.integers(0, max_judgments + 1))):
                b, c = rng.choice(k, size=2, replace=False)
                p = 1.0 / (1.0 + math.exp(-(u[b] - u[c]) / tau))
                judgments.append({"left": names[b], "right": names[c], "y": int(rng.random() < p)})
        rollouts = []
        for _ in range(int(rng.integers(0, max_rollouts + 1))):
            b = int(rng.integers(k))
            d = int(rng.integers(1, max_depth + 1))
            rollouts.append({"branch": names[b], "depth": d, "score": float(rng.normal(u[b], sr / math.sqrt(d)))})
        out.append({"decision": f"sim{n}", "branches": names, "judgments": judgments, "rollouts": rollouts,
                    "true_utilities": dict(zip(names, map(float, u))),
                    "simulated": {"values": {k_: float(values[k_]) for k_ in PARAM_NAMES}, "seed": seed}})
    return out


__all__ = ["PARAM_NAMES", "PRIORS", "PARAM_RANGES", "prior", "utility_model", "simulate_decisions"]
