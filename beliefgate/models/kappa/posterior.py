"""Kappa's posterior: the NUTS reference of one decision's argmax probabilities, and the
point values of a fit's posterior.

:func:`nuts_argmax_probs` samples ``P(U | evidence)`` of
:func:`~beliefgate.models.kappa.model.utility_model` at fixed parameters: the reference the
online kappa (:mod:`beliefgate.beliefs.kappa`) is tested against. :func:`kappa_point_values`
reads the parameters a fit (:func:`~beliefgate.models.kappa.fit.fit_kappa`) estimates, the
values :meth:`KappaParams.from_fit <beliefgate.beliefs.kappa.KappaParams.from_fit>` uses.
"""

from __future__ import annotations

import math
from functools import partial
from typing import List, Mapping, NamedTuple, Sequence

import numpy as np

from beliefgate.models.kappa.data import evidence_data
from beliefgate.models.kappa.errors import KappaFitError
from beliefgate.models.kappa.fit import kappa_fit_config
from beliefgate.models.kappa.model import PARAM_NAMES, utility_model


class NutsArgmax(NamedTuple):
    """NUTS estimate of the argmax probabilities of one decision at fixed parameters."""

    probs: np.ndarray       # float[K]
    mcse: np.ndarray        # Monte-Carlo standard error of each (ArviZ, from the ESS of the indicator)
    ess: np.ndarray         # effective sample size of each indicator (0 where the indicator is constant)
    r_hat: float            # worst r_hat over the decision's utilities
    divergences: int        # divergent transitions of the joint run
    draws: int


def nuts_argmax_probs(values: Mapping[str, float], sets: Sequence[tuple], *, chains: int = 4, draws: int = 1000,
                      warmup: int = 500, seed: int = 0, target_accept: float = 0.9) -> List[NutsArgmax]:
    """Sample ``P(U | evidence)`` of :func:`utility_model` with NUTS at fixed ``values``.

    ``sets``: independent decisions ``(K, judgments, rollouts)`` (see :func:`evidence_data`).
    They are sampled jointly in one run (their posteriors factorise, so each marginal is
    that decision's posterior) and one compilation serves them all. Returns one
    :class:`NutsArgmax` per set, Monte-Carlo standard errors from ArviZ.
    """
    import arviz as az
    import jax
    from numpyro.infer import MCMC, NUTS

    data = evidence_data(sets)
    fixed = {k: float(values[k]) for k in PARAM_NAMES}
    mcmc = MCMC(NUTS(partial(utility_model, fixed=fixed, keep_utilities=True), target_accept_prob=target_accept),
                num_warmup=warmup, num_samples=draws, num_chains=chains, chain_method="vectorized",
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), data, extra_fields=("diverging",))
    u = np.asarray(mcmc.get_samples(group_by_chain=True)["U"], np.float64)  # [C, D, B]
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    out, offset = [], 0
    for k, _, _ in sets:
        block = u[..., offset:offset + int(k)]
        offset += int(k)
        best = block.argmax(axis=-1)
        probs, mcse, ess = np.zeros(k), np.zeros(k), np.zeros(k)
        for b in range(k):
            ind = (best == b).astype(np.float64)
            probs[b] = ind.mean()
            if 0.0 < probs[b] < 1.0:
                mcse[b] = float(az.mcse(ind, method="mean"))
                ess[b] = float(az.ess(ind, method="bulk"))
        r_hat = float(np.nanmax([az.rhat(block[..., b]) for b in range(k)])) if chains > 1 else math.nan
        out.append(NutsArgmax(probs, mcse, ess, r_hat, divergences, chains * draws))
    return out


def kappa_point_values(idata, point: str = "median") -> dict:
    """``{mu0, sigma0, tau, sigma_r}`` at the posterior median/mean (pinned values as fitted)."""
    if point not in ("median", "mean"):
        raise KappaFitError(f"point must be 'median' or 'mean', got {point!r}")
    config = kappa_fit_config(idata)
    out = {}
    for name in PARAM_NAMES:
        if name in config.fixed:
            out[name] = float(config.fixed[name])
        else:
            arr = np.asarray(idata.posterior[name].values).ravel()
            out[name] = float(np.median(arr) if point == "median" else np.mean(arr))
    return out


__all__ = ["NutsArgmax", "nuts_argmax_probs", "kappa_point_values"]
