"""Fitting kappa's parameters to logged decisions, and checking the fit.

:func:`fit_kappa` fits ``mu0, sigma0, tau, sigma_r`` of
:func:`~beliefgate.models.kappa.model.utility_model` (those a :class:`KappaFitConfig` does not
pin) to :class:`~beliefgate.models.kappa.data.Decisions` with NUTS or SVI, into an
``arviz.InferenceData`` whose record (``attrs["beliefgate_kappa_fit"]``) says how;
:data:`KAPPA_FIT_FILE` writes and reads it. :func:`kappa_predictive_check` is its posterior
predictive check (``beliefgate diagnose``).
"""

from __future__ import annotations

import json
import math
import time
from functools import partial
from pathlib import Path
from typing import Any, Dict, List, Literal, Mapping, NamedTuple, Optional, Union

import numpy as np
from pydantic import ConfigDict, Field, field_validator

from beliefgate.limits import MAX_DRAWS
from beliefgate.models.fitio import REPLICATION_ATTR, FitFile, pick_draws, stored_replication_record
from beliefgate.models.kappa.data import Decisions, KappaData
from beliefgate.models.kappa.errors import KappaFitConfigError, KappaFitError
from beliefgate.models.kappa.model import PARAM_NAMES, PARAM_RANGES, PRIORS, utility_model
from beliefgate.validation import CheckedModel

#: format tag of a kappa fit's record (``idata.attrs["beliefgate_kappa_fit"]``)
FORMAT = "beliefgate.kappa_fit/1"
CONFIG_ATTR = "beliefgate_kappa_fit"
KAPPA_FIT_FILE = FitFile(CONFIG_ATTR, FORMAT, KappaFitError,
                         "not a kappa fit: no 'beliefgate_kappa_fit' attribute (write it with "
                         "`beliefgate fit --model kappa`)",
                         groups=("posterior", "observed_data", "constant_data"), what="the kappa fit")


class KappaFitConfig(CheckedModel):
    """Validated configuration of a kappa fit (stored in the result's record).

    Every way of building one raises :class:`KappaFitConfigError` (a :class:`KappaFitError`)
    listing each bad field and its value in one line, never pydantic's ``ValidationError``.
    """

    error_type = KappaFitConfigError
    all_errors = True
    model_config = ConfigDict(frozen=True, extra="forbid")

    fixed: Dict[str, float] = Field(default_factory=dict)
    method: Literal["nuts", "svi"] = "nuts"
    chains: int = Field(4, ge=1)
    draws: int = Field(1000, ge=1)
    warmup: int = Field(1000, ge=0)
    seed: int = 0
    chain_method: Literal["parallel", "sequential", "vectorized"] = "sequential"
    target_accept: float = Field(0.8, gt=0.0, lt=1.0)
    max_tree_depth: int = Field(10, ge=1, le=15)
    svi_steps: int = Field(2000, ge=1)
    learning_rate: float = Field(0.02, gt=0.0)
    guide: Literal["normal", "mvn"] = "normal"
    #: sample the utilities themselves (better mixing when branches carry much evidence; measured:
    #: 60 simulated decisions, 2 x 300 draws, min ess_bulk 191 centred vs 84 non-centred)
    centered: bool = True
    #: posterior and prior draws behind the file's posterior_predictive and prior_predictive groups (0: neither)
    predictive_draws: int = Field(100, ge=0, le=MAX_DRAWS)

    @field_validator("fixed")
    @classmethod
    def _known(cls, fixed: Dict[str, float]) -> Dict[str, float]:
        unknown = set(fixed) - set(PARAM_NAMES)
        if unknown:
            raise ValueError(f"cannot fix unknown kappa parameter(s) {sorted(unknown)}; known: {list(PARAM_NAMES)}")
        for name, value in fixed.items():
            if not math.isfinite(value):
                raise ValueError(f"fixed {name} must be finite, got {value}")
            lo, hi = PARAM_RANGES[name]
            if not lo <= value <= hi:
                raise ValueError(f"fixed {name} must lie in [{lo:g}, {hi:g}] (the range of KappaParams), got {value}")
        if set(PARAM_NAMES) <= set(fixed):
            raise ValueError(f"every kappa parameter is fixed ({', '.join(PARAM_NAMES)}): nothing to fit")
        return fixed

    def parameter_names(self) -> list:
        return [n for n in PARAM_NAMES if n not in self.fixed]


def _model(data: KappaData, config: KappaFitConfig) -> None:
    utility_model(data, config.fixed, centered=config.centered)


def _nuts(data: KappaData, config: KappaFitConfig, progress: bool):
    import arviz as az
    import jax
    from numpyro.infer import MCMC, NUTS

    kernel = NUTS(partial(_model, config=config), target_accept_prob=config.target_accept,
                  max_tree_depth=config.max_tree_depth)
    chain_method = config.chain_method
    if chain_method == "parallel" and jax.local_device_count() < config.chains:
        chain_method = "sequential"
    mcmc = MCMC(kernel, num_warmup=config.warmup, num_samples=config.draws, num_chains=config.chains,
                chain_method=chain_method, progress_bar=progress)
    mcmc.run(jax.random.PRNGKey(config.seed), data,
             extra_fields=("diverging", "num_steps", "accept_prob", "potential_energy", "energy"))
    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()
               if k in config.parameter_names()}
    stats = {k: np.asarray(v).reshape(config.chains, config.draws)
             for k, v in mcmc.get_extra_fields(group_by_chain=True).items()}
    idata = az.from_dict(posterior=samples, sample_stats=stats)
    return idata, {"chain_method_used": chain_method}


def _svi(data: KappaData, config: KappaFitConfig, progress: bool):
    import arviz as az
    import jax
    import xarray as xr
    from numpyro import optim
    from numpyro.infer import SVI, Predictive, Trace_ELBO
    from numpyro.infer.autoguide import AutoMultivariateNormal, AutoNormal

    model = partial(_model, config=config)
    guide = (AutoNormal if config.guide == "normal" else AutoMultivariateNormal)(model)
    svi = SVI(model, guide, optim.Adam(config.learning_rate), Trace_ELBO())
    key_fit, key_draw = jax.random.split(jax.random.PRNGKey(config.seed))
    result = svi.run(key_fit, config.svi_steps, data, progress_bar=progress)
    losses = np.asarray(result.losses)
    if not np.all(np.isfinite(losses[-max(1, len(losses) // 10):])):
        raise KappaFitError("SVI diverged (non-finite ELBO); lower --learning-rate")
    names = config.parameter_names()
    total = config.chains * config.draws
    draws = Predictive(model, guide=guide, params=result.params, num_samples=total, return_sites=names)(
        key_draw, data)
    shaped = {k: np.asarray(v).reshape(config.chains, config.draws) for k, v in draws.items()}
    idata = az.from_dict(posterior=shaped)
    idata.add_groups(sample_stats=xr.Dataset({"loss": (("svi_step",), losses)},
                                             coords={"svi_step": np.arange(len(losses))}))
    return idata, {"final_loss": float(losses[-1])}


def _data_groups(decisions: Decisions):
    import xarray as xr

    d = decisions.data
    observed = xr.Dataset({"y": (("judgment",), np.asarray(d.j_y)),
                           "r": (("rollout",), np.asarray(d.r_score))})
    constant = xr.Dataset({"branch_decision": (("branch",), np.asarray(d.branch_decision)),
                           "j_left": (("judgment",), np.asarray(d.j_left)),
                           "j_right": (("judgment",), np.asarray(d.j_right)),
                           "r_branch": (("rollout",), np.asarray(d.r_branch)),
                           "r_depth": (("rollout",), np.asarray(d.r_depth))})
    return observed, constant


def fit_kappa(decisions: Decisions, config: Optional[KappaFitConfig] = None, *, progress: bool = False,
              extra_attrs: Optional[Mapping[str, Any]] = None):
    """Fit ``mu0, sigma0, tau, sigma_r`` (those not pinned) to ``decisions``; returns InferenceData.

    Groups: ``posterior`` (the parameters; the per-branch utilities are summed out by
    sampling and not kept), ``sample_stats``, ``observed_data`` (``y``, ``r``),
    ``constant_data`` (indices, depths), ``prior`` (:func:`kappa_prior_draws`) and, unless
    ``config.predictive_draws`` is 0, ``posterior_predictive`` / ``prior_predictive``
    (:func:`kappa_replication_group`: what ``diagnose`` checks with); the record (configuration, data provenance,
    timing) is ``attrs["beliefgate_kappa_fit"]`` (JSON).
    """
    import beliefgate

    config = KappaFitConfig() if config is None else config
    if not isinstance(decisions, Decisions):
        raise KappaFitError(f"expected Decisions (see read_decisions), got {type(decisions).__name__}")
    if not config.parameter_names():
        raise KappaFitError("every parameter is fixed: nothing to fit")
    d = decisions.data
    if len(d.j_y) == 0 and len(d.r_score) == 0:
        raise KappaFitError("the decisions hold no judgment and no rollout: nothing to fit")
    started = time.perf_counter()
    idata, info = (_nuts if config.method == "nuts" else _svi)(d, config, progress)
    observed, constant = _data_groups(decisions)
    idata.add_groups(observed_data=observed, constant_data=constant)
    record = {
        "format": FORMAT,
        "model": "kappa",
        "config": config.model_dump(),
        "parameters": config.parameter_names(),
        "priors": {k: [v[0], list(v[1])] for k, v in PRIORS.items()},
        "num_decisions": decisions.num_decisions,
        "num_branches": d.num_branches,
        "num_judgments": int(len(d.j_y)),
        "num_rollouts": int(len(d.r_score)),
        "branches": decisions.branches,
        "decision_ids": decisions.ids,
        "data_fingerprint": decisions.fingerprint(),
        "sources": decisions.sources,
        "wall_s": round(time.perf_counter() - started, 3),
        "beliefgate_version": beliefgate.__version__,
        **info,
        **dict(extra_attrs or {}),
    }
    KAPPA_FIT_FILE.stamp(idata, record)
    idata.add_groups(prior=kappa_prior_draws(config))
    if config.predictive_draws:
        started = time.perf_counter()
        for group, seed in (("posterior", config.seed), ("prior", config.seed + 2)):
            idata.add_groups({f"{group}_predictive": kappa_replication_group(
                idata, group=group, num_draws=config.predictive_draws, seed=seed)})
        record["predictive_wall_s"] = round(time.perf_counter() - started, 3)
        KAPPA_FIT_FILE.stamp(idata, record)
    return idata


#: draws of a kappa fit's ``prior`` group
KAPPA_PRIOR_DRAWS = 500
#: judgments + rollouts replicated per variable at most (draws x values): larger data get fewer draws
KAPPA_PREDICTIVE_MAX_VALUES = 4_000_000


def kappa_prior_draws(config: KappaFitConfig, num: int = KAPPA_PRIOR_DRAWS):
    """The sampled parameters drawn from their :data:`PRIORS` (one chain of ``num`` draws, seed + 1):
    the kappa fit file's ``prior`` group."""
    import jax
    import xarray as xr

    from beliefgate.models.kappa.model import prior

    keys = jax.random.split(jax.random.PRNGKey(config.seed + 1), len(PARAM_NAMES))
    return xr.Dataset({name: (("chain", "draw"), np.asarray(prior(name).sample(key, (num,)), np.float64)[None])
                       for name, key in zip(PARAM_NAMES, keys) if name not in config.fixed},
                      coords={"chain": [0], "draw": np.arange(num)})


def _parameter_draws(idata, config: KappaFitConfig, group: str, num: int, pick=None):
    """``(values, pick)``: every parameter at up to ``num`` draws of ``group`` (thinned evenly across
    chains, or the flat indices ``pick``), pinned ones at their fixed value."""
    post = getattr(idata, group)
    total = post.sizes["chain"] * post.sizes["draw"]
    pick = pick_draws(total, num) if pick is None else np.asarray(pick, int)
    values = {}
    for name in PARAM_NAMES:
        if name in config.fixed:
            values[name] = np.full(len(pick), float(config.fixed[name]))
        else:
            values[name] = np.asarray(post[name].values).reshape(-1)[pick]
    return values, pick


def kappa_replications(data: KappaData, values: Mapping[str, np.ndarray], seed: int):
    """``(y [S, J], r [S, R])``: for each parameter draw a data set with the same branches, judged
    pairs and rollout depths drawn from the model (fresh utilities): the replication of
    :func:`kappa_predictive_check` and of the fit file's predictive groups."""
    rng = np.random.default_rng(seed)
    num = len(values["mu0"])
    ys = np.zeros((num, len(data.j_y)), np.int8)
    rs = np.zeros((num, len(data.r_score)), np.float64)
    for s in range(num):
        u = rng.normal(values["mu0"][s], values["sigma0"][s], size=data.num_branches)
        ys[s] = rng.random(len(data.j_y)) < 1.0 / (1.0 + np.exp(-(u[data.j_left] - u[data.j_right]) / values["tau"][s]))
        rs[s] = rng.normal(u[data.r_branch], values["sigma_r"][s] / np.sqrt(data.r_depth))
    return ys, rs


def kappa_replication_group(idata, *, group: str = "posterior", num_draws: int = 100, seed: int = 0):
    """A kappa fit's ``posterior_predictive`` / ``prior_predictive`` group: ``y [chain=1, draw, judgment]``
    (int8) and ``r [chain=1, draw, rollout]`` replicated at up to ``num_draws`` draws of ``group``
    (fewer where draws x values would pass :data:`KAPPA_PREDICTIVE_MAX_VALUES`), with the draws and
    the seed in ``attrs[REPLICATION_ATTR]``."""
    import xarray as xr

    config = kappa_fit_config(idata)
    data = data_from_idata(idata)
    size = max(1, len(data.j_y) + len(data.r_score))
    values, pick = _parameter_draws(idata, config, group, min(num_draws, max(1, KAPPA_PREDICTIVE_MAX_VALUES // size)))
    ys, rs = kappa_replications(data, values, seed)
    record = {"group": group, "draws": [int(i) for i in pick], "seed": int(seed),
              "replicates": "whole data sets: fresh utilities, the same branches, judged pairs and rollout depths"}
    return xr.Dataset({"y": (("chain", "draw", "judgment"), ys[None]), "r": (("chain", "draw", "rollout"), rs[None])},
                      coords={"chain": [0], "draw": np.arange(len(pick))},
                      attrs={REPLICATION_ATTR: json.dumps(record)})


def stored_kappa_replications(idata, data: KappaData):
    """``(y [S, J], r [S, R], draws, seed)`` of a kappa fit's ``posterior_predictive`` group, or ``None``
    without one; :class:`KappaFitError` when it does not match the fit (a damaged or edited file)."""
    stored = stored_replication_record(idata, ("y", "r"), KappaFitError)
    if stored is None:
        return None
    group, draws, seed = stored
    ys = np.asarray(group["y"].values).reshape((-1, len(data.j_y)) if group["y"].size else (len(draws), 0))
    rs = np.asarray(group["r"].values).reshape((-1, len(data.r_score)) if group["r"].size else (len(draws), 0))
    post = idata.posterior
    total = post.sizes["chain"] * post.sizes["draw"]
    if (group["y"].shape[-1] != len(data.j_y) or group["r"].shape[-1] != len(data.r_score)
            or len(ys) != len(draws) or len(rs) != len(draws) or not len(draws)
            or draws.min() < 0 or draws.max() >= total):
        raise KappaFitError(f"the fit's posterior_predictive group ({group['y'].shape[-1]} judgments, "
                            f"{group['r'].shape[-1]} rollouts, {len(draws)} draws) does not match its data "
                            f"({len(data.j_y)} judgments, {len(data.r_score)} rollouts) or posterior ({total} draws)")
    return ys, rs, draws, seed


def is_kappa_fit(idata) -> bool:
    return KAPPA_FIT_FILE.has(idata)


def kappa_fit_record(idata) -> dict:
    return KAPPA_FIT_FILE.record(idata)


def kappa_fit_config(idata) -> KappaFitConfig:
    return KappaFitConfig(**kappa_fit_record(idata)["config"])


def save_kappa_fit(idata, path: Union[str, Path]) -> Path:
    return KAPPA_FIT_FILE.save(idata, path)


def load_kappa_fit(path: Union[str, Path]):
    """Read a kappa fit written by :func:`save_kappa_fit` (validated)."""
    return KAPPA_FIT_FILE.load(path)


def data_from_idata(idata) -> KappaData:
    """The :class:`KappaData` a kappa fit was made on (from its data groups)."""
    c, o = idata.constant_data, idata.observed_data
    nj, nr = int(o["y"].size), int(o["r"].size)
    return KappaData(np.asarray(c["branch_decision"].values, np.int32),
                     np.asarray(c["j_left"].values, np.int32), np.asarray(c["j_right"].values, np.int32),
                     np.asarray(o["y"].values, np.int32), np.ones(nj, bool),
                     np.asarray(c["r_branch"].values, np.int32), np.asarray(c["r_depth"].values, np.float64),
                     np.asarray(o["r"].values, np.float64), np.ones(nr, bool))


# --------------------------------------------------------------------------------------
# Posterior predictive check
# --------------------------------------------------------------------------------------


class KappaStatCheck(NamedTuple):
    """One discrepancy statistic: observed value, replicated mean and 90% band, ppp."""

    name: str
    description: str
    observed: float
    replicated_mean: float
    low: float
    high: float
    ppp: float
    passed: bool


def _statistics(data: KappaData, y: np.ndarray, r: np.ndarray) -> dict:
    """Discrepancy statistics of one (observed or replicated) data set."""
    out = {}
    nb = data.num_branches
    if len(r):
        w = np.asarray(data.r_depth)
        sums = np.bincount(data.r_branch, weights=w * r, minlength=nb)
        wsum = np.bincount(data.r_branch, weights=w, minlength=nb)
        counts = np.bincount(data.r_branch, minlength=nb)
        means = np.divide(sums, wsum, out=np.zeros(nb), where=wsum > 0)
        resid = (r - means[data.r_branch]) ** 2 * w
        repeated = counts[data.r_branch] > 1
        out["rollout_mean"] = float(np.mean(r))
        out["rollout_sd"] = float(np.std(r))
        if repeated.any():
            # depth-scaled spread of repeated rollouts of one branch: sigma_r^2 (n-1)/n on average
            out["rollout_within"] = float(resid[repeated].mean())
        if len(y):
            has = wsum[data.j_left] > 0
            has &= wsum[data.j_right] > 0
            if has.any():
                left_higher = means[data.j_left] > means[data.j_right]
                agree = np.where(y == 1, left_higher, ~left_higher)
                out["judgment_rollout_agreement"] = float(agree[has].mean())
    return out


STAT_DESCRIPTIONS = {
    "rollout_mean": "mean rollout score (mu0)",
    "rollout_sd": "sd of rollout scores (sigma0 and sigma_r together)",
    "rollout_within": "depth-scaled squared deviation of repeated rollouts of one branch (sigma_r)",
    "judgment_rollout_agreement": "share of judgments that agree with the branches' mean rollout scores "
                                  "(tau against sigma0)",
}


def kappa_predictive_check(idata, num_draws: int = 200, seed: int = 0, alpha: float = 0.05,
                           stored: bool = False) -> List[KappaStatCheck]:
    """Posterior predictive check of a kappa fit.

    For each of ``num_draws`` parameter draws a replicated data set with the same
    branches, judged pairs and rollout depths is drawn from the model (fresh utilities,
    :func:`kappa_replications`), and the statistics of :data:`STAT_DESCRIPTIONS` are compared
    with the observed ones: ``ppp = P(T_rep >= T_obs)``; a check fails when ``ppp < alpha/2``
    or ``> 1 - alpha/2``. ``stored``: the replications of the fit file's
    ``posterior_predictive`` group instead (its draws and seed).
    """
    data = data_from_idata(idata)
    observed = _statistics(data, np.asarray(data.j_y), np.asarray(data.r_score))
    saved = stored_kappa_replications(idata, data) if stored else None
    if stored and saved is None:
        raise KappaFitError("the fit has no posterior_predictive group of `beliefgate fit --model kappa` to check with")
    if saved is None:
        values, _ = _parameter_draws(idata, kappa_fit_config(idata), "posterior", num_draws)
        ys, rs = kappa_replications(data, values, seed)
    else:
        ys, rs = saved[:2]
    reps: Dict[str, list] = {k: [] for k in observed}
    for y, r in zip(ys, rs):
        stats = _statistics(data, y.astype(np.int32), r)
        for k in reps:
            reps[k].append(stats[k])
    out = []
    for k, obs in observed.items():
        rep = np.asarray(reps[k])
        ppp = float(np.mean(rep >= obs))
        out.append(KappaStatCheck(k, STAT_DESCRIPTIONS[k], obs, float(rep.mean()), float(np.quantile(rep, 0.05)),
                                  float(np.quantile(rep, 0.95)), ppp, alpha / 2 <= ppp <= 1 - alpha / 2))
    return out


__all__ = [
    "FORMAT",
    "CONFIG_ATTR",
    "KAPPA_FIT_FILE",
    "KappaFitConfig",
    "fit_kappa",
    "is_kappa_fit",
    "kappa_fit_record",
    "kappa_fit_config",
    "save_kappa_fit",
    "load_kappa_fit",
    "data_from_idata",
    "STAT_DESCRIPTIONS",
    "KappaStatCheck",
    "kappa_predictive_check",
    "kappa_prior_draws",
    "kappa_replications",
    "kappa_replication_group",
    "stored_kappa_replications",
]
