"""Fit the partner-skill model to trajectories: NUTS or SVI, results as ArviZ InferenceData.

The fitted model is the project's one NumPyro model,
:func:`beliefgate.models.skill_model.partner_skill_model` (skills summed out by the
forward algorithm of the online filter, :func:`beliefgate.models.hmm.scan_filter`),
run by :func:`fitted_model` with its likelihood rows computed from sufficient
statistics (:func:`model_loglik`, equal to the controller's rows; tested) and with
the model's options:

``model="windowed"``
    The paper-faithful filter (no hazard; each segment keeps its last ``window``
    observed steps). Its likelihood is the product of the filter's one-step
    predictive probabilities ``p(a_t | a_{<t})`` (a prequential likelihood): what
    the gate would have predicted, so LOO compares it fairly with the hazard model.
``per_skill_beta``
    One rationality ``beta_k`` per skill (a ``skill`` plate) instead of a shared one.
``fit_weight``
    A free tempering weight ``w`` for ambiguous (put-down) steps, prior
    ``Beta(2, 2)``. A tempered term ``w log p(a | k)`` alone is not a likelihood
    (it always prefers ``w -> 0``), so these steps use the *normalised* power
    likelihood ``p(a | k)^w / sum_a' p(a' | k)^w`` (``w = 1``: the controller;
    ``w = 0``: uninformative). Other steps are unchanged.
``fixed``
    Pin parameters (``{"hazard": 0.0}`` fits a non-switching partner). ``h = 0`` is
    evaluated as ``h = 1e-30``: the same likelihood to rounding, while an exact 0
    gives NaN gradients in the filter's predict step.

With the defaults (hazard model, shared ``beta``, fixed weights) the log density
equals that of :func:`partner_skill_model` on the raw controller tables (tested).

:func:`fit` returns an ``arviz.InferenceData`` with ``posterior`` (parameters),
``sample_stats`` (NUTS: divergences, energy, tree depth, ...; SVI: the ELBO loss
per optimisation step), ``prior`` (the parameters drawn from their priors),
``posterior_predictive`` / ``prior_predictive`` (``action`` and the ``skill`` behind it
replicated one step ahead at ``predictive_draws`` posterior / prior draws:
:func:`beliefgate.models.diagnose.predictive_replications`, what ``diagnose`` checks with),
``log_likelihood`` (``log_lik``: each trajectory's log
marginal likelihood per draw, the unit for LOO because steps within a trajectory
are dependent), ``observed_data``/``constant_data`` (the model inputs, see
:meth:`FitData.to_datasets`) and the configuration as attributes
(``attrs["beliefgate_fit"]``, JSON). :func:`save_fit`/:func:`load_fit` write and
read it as NetCDF.
"""

from __future__ import annotations
from beliefgate.errors import InputError

import math
import time
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Dict, Literal, Mapping, NamedTuple, Optional, Union

from pydantic import ConfigDict, Field, field_validator, model_validator

from beliefgate.models.data import FitData
from beliefgate.models.fitio import FitFile
from beliefgate.limits import MAX_CHAINS, MAX_DRAWS, MAX_SVI_STEPS
from beliefgate.validation import CheckedModel, ParamError

from beliefgate.models.components import MIN_HAZARD  # re-exported
from beliefgate.models.transitions import MODELS, get_transition, models_with_option, unused_params
#: attribute of the InferenceData that holds the fit configuration (JSON)
CONFIG_ATTR = "beliefgate_fit"
FORMAT = "beliefgate.fit/1"


class FitError(InputError):
    """A fit cannot be configured, run or read."""


FIT_FILE = FitFile(CONFIG_ATTR, FORMAT, FitError,
                   "not a beliefgate fit: no 'beliefgate_fit' attribute (write it with `beliefgate fit`)",
                   groups=("posterior", "log_likelihood", "observed_data", "constant_data"),
                   what="the fit (as `beliefgate fit` writes it)",
                   stamp_groups=("posterior", "sample_stats", "log_likelihood"))


#: posterior (and prior) draws whose replicated actions a fit file stores: the predictive check's
#: default, so `beliefgate diagnose` checks with them (about 2 x 100 filter passes over the data)
PREDICTIVE_DRAWS = 100


class FitConfigError(ParamError, FitError):
    """A :class:`FitConfig` field is bad: one line naming the field and the value
    (``warmup: Input should be greater than or equal to 0, got -1``). A :class:`FitError`."""


class FitConfig(CheckedModel):
    """Validated configuration of one fit (stored in the result's attributes).

    Model: ``model`` (``hazard``/``windowed``), ``window`` (windowed model; ``None``
    = whole segment), ``per_skill_beta``, ``fit_weight`` (free tempering weight of
    ambiguous steps), ``fixed`` (pinned parameter values).
    Inference: ``method`` (``nuts``/``svi``), ``chains``, ``draws``, ``warmup``,
    ``seed``, ``chain_method`` (NumPyro's ``parallel``/``sequential``/``vectorized``;
    ``parallel`` needs as many JAX devices as chains), ``target_accept``,
    ``max_tree_depth``; SVI: ``svi_steps``, ``learning_rate``, ``guide``
    (``normal`` = mean field, ``mvn`` = full-rank Gaussian), and ``chains x draws``
    draws from the fitted guide. File: ``predictive_draws`` (posterior and prior draws whose
    replicated actions the ``posterior_predictive``/``prior_predictive`` groups hold; 0: none).
    A bad value raises :class:`FitConfigError` naming the field (``FitConfig(...)``,
    ``model_validate``, ``model_copy(update=...)``).
    """

    error_type = FitConfigError
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: Literal[MODELS] = "hazard"  # the transition components' names (Literal of a tuple = of its items)
    window: Optional[int] = Field(None, ge=1)
    per_skill_beta: bool = False
    fit_weight: bool = False
    fixed: Dict[str, float] = Field(default_factory=dict)
    method: Literal["nuts", "svi"] = "nuts"
    chains: int = Field(4, ge=1, le=MAX_CHAINS)
    draws: int = Field(1000, ge=1, le=MAX_DRAWS)
    warmup: int = Field(1000, ge=0, le=MAX_DRAWS)
    seed: int = Field(0, ge=0)
    chain_method: Literal["parallel", "sequential", "vectorized"] = "sequential"
    target_accept: float = Field(0.8, gt=0.0, lt=1.0)
    max_tree_depth: int = Field(10, ge=1, le=15)
    svi_steps: int = Field(2000, ge=1, le=MAX_SVI_STEPS)
    learning_rate: float = Field(0.02, gt=0.0)
    guide: Literal["normal", "mvn"] = "normal"
    #: draws behind the file's posterior_predictive and prior_predictive groups (0: neither group)
    predictive_draws: int = Field(PREDICTIVE_DRAWS, ge=0, le=MAX_DRAWS)

    @field_validator("fixed")
    @classmethod
    def _known(cls, fixed: Dict[str, float]) -> Dict[str, float]:
        from beliefgate.models.params import PARAMS

        known = {s.name for s in PARAMS} | {"ambiguous_weight"}  # every model parameter (a transition's too)
        unknown = set(fixed) - known
        if unknown:
            raise ValueError(f"cannot fix unknown parameter(s) {sorted(unknown)}; known: {sorted(known)}")
        for name, value in fixed.items():
            if not math.isfinite(value):
                raise ValueError(f"fixed {name} must be finite, got {value}")
        return fixed

    @model_validator(mode="after")
    def _consistent(self) -> "FitConfig":
        transition = get_transition(self.model)
        if self.window is not None and "window" not in transition.options:
            raise ValueError(f"window applies to the {' or '.join(models_with_option('window'))} model only")
        for name in unused_params(self.model):
            if name in self.fixed:
                raise ValueError(f"the {self.model} model has no {name} to fix")
        if self.per_skill_beta and "beta" in self.fixed:
            raise ValueError("per_skill_beta and a fixed beta exclude each other")
        if "ambiguous_weight" in self.fixed and not self.fit_weight:
            raise ValueError("ambiguous_weight can only be fixed together with fit_weight")
        from beliefgate.models.params import check_values

        try:
            check_values({k: v for k, v in self.fixed.items() if k != "ambiguous_weight"})
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        w = self.fixed.get("ambiguous_weight")
        if w is not None and not 0.0 <= w <= 1.0:
            raise ValueError(f"ambiguous_weight must lie in [0, 1], got {w}")
        if not self.parameter_names():
            raise ValueError(f"every parameter is fixed ({', '.join(sorted(self.fixed))}): nothing to fit; "
                             "leave at least one free")
        return self

    def parameter_names(self) -> list[str]:
        """Names of the sampled parameters, in model order."""
        names = [s.name for s in _specs(self) if not s.fixed]
        if self.per_skill_beta:
            names = ["beta"] + names
        if self.fit_weight and "ambiguous_weight" not in self.fixed:
            names.append("ambiguous_weight")
        return [n for n in names if n not in self.fixed]


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------


def _specs(config: FitConfig):
    """ParamSpecs of the scalar parameters the model samples or fixes (beta excluded if per skill)."""
    from beliefgate.models.params import PARAMS
    from beliefgate.models.skill_model import model_param_specs

    return model_param_specs(PARAMS, config.model, config.per_skill_beta)


class ModelInputs(NamedTuple):
    """Arrays the fitted model reads (a pytree; built once on the host by :func:`prepare`).

    The controller part is reduced to sufficient statistics. With
    ``d[t, k, a] = Q[t, k, a] - max_a Q[t, k, a]`` taking few distinct values
    ``v_u`` (Overcooked: 0, -1, -2, -3), ``Z = sum_a exp(beta d)`` and the masked
    sum ``S = sum_{a in M_t} exp(beta d)`` are ``counts @ exp(beta v)`` and
    ``mask_counts @ exp(beta v)``; then
    ``log pi_hat(M_t | k) = log((1 - eps) S / Z + eps |M_t| / A)``, the same
    number as :func:`beliefgate.models.skill_model.controller_loglik` (tested).
    With more distinct values than actions, ``values`` is empty and ``d`` is
    used directly (``counts`` then holds ``d``, ``mask_counts`` the mask).

    Fields
    ------
    values : float[U]           distinct finite values of ``d`` (``U = 0``: direct path)
    counts : float[B, T, K, U]  number of actions with ``d == v_u`` (direct: ``d``, ``-inf`` -> 0)
    mask_counts : float[B, T, K, U]  the same over consistent actions (direct: finite & mask)
    finite : bool[B, T, K, A]   direct path: finite ``Q``; table path: ``[1, 1, 1, A]`` zeros
                                (its last axis always gives ``A``)
    num_mask : float[B, T]      ``|M_t|``
    weight : float[B, T]        tempering weight ``w_t`` (0 at excluded or padding steps)
    ambiguous : bool[B, T]      steps whose weight is the ambiguous weight
    feasible, completed, valid, prior_counts
        As in :class:`~beliefgate.models.skill_model.SkillData`.
    """

    values: Any
    counts: Any
    mask_counts: Any
    finite: Any
    num_mask: Any
    weight: Any
    ambiguous: Any
    feasible: Any
    completed: Any
    valid: Any
    prior_counts: Any


def prepare(data: FitData) -> ModelInputs:
    """Host-side precomputation of :class:`ModelInputs` from :class:`FitData`."""
    import jax.numpy as jnp
    import numpy as np

    s = data.skill
    q = np.asarray(s.q, np.float64)
    dtype = np.asarray(s.q).dtype
    finite = np.isfinite(q)
    qmax = np.max(np.where(finite, q, -np.inf), axis=-1, keepdims=True)
    d = np.where(finite, q - qmax, -np.inf)
    mask = np.asarray(s.action_mask, bool)[..., None, :]  # [B, T, 1, A]
    num_actions = q.shape[-1]
    values = np.unique(d[np.isfinite(d)])
    if len(values) <= num_actions:
        index = np.searchsorted(values, np.where(finite, d, values[0]))
        onehot = (index[..., None] == np.arange(len(values))) & finite[..., None]  # [B,T,K,A,U]
        counts = onehot.sum(axis=-2)
        mask_counts = (onehot & mask[..., None]).sum(axis=-2)
        finite_arr = np.zeros((1, 1, 1, num_actions), bool)
    else:
        values = np.zeros(0)
        counts = np.where(finite, d, 0.0)
        mask_counts = finite & mask
        finite_arr = finite
    return ModelInputs(
        values=jnp.asarray(values, dtype),
        counts=jnp.asarray(counts, dtype),
        mask_counts=jnp.asarray(mask_counts, dtype),
        finite=jnp.asarray(finite_arr),
        num_mask=jnp.asarray(np.asarray(s.action_mask).sum(axis=-1), dtype),
        weight=s.weight,
        ambiguous=jnp.asarray(data.ambiguous & np.asarray(s.valid)),
        feasible=s.feasible,
        completed=s.completed,
        valid=s.valid,
        prior_counts=s.prior_counts,
    )


def _exp_terms(inputs: ModelInputs, beta):
    """``(Z, S, E)``: row sums, masked sums and the per-value terms ``exp(beta v)``."""
    import jax.numpy as jnp

    beta = jnp.asarray(beta)
    if inputs.values.shape[0] > 0:
        b = beta[:, None] if beta.ndim == 1 else beta  # [K, 1] or scalar
        e = jnp.exp(b * inputs.values)  # [U] or [K, U]
        if e.ndim == 1:
            return inputs.counts @ e, inputs.mask_counts @ e, e
        return (jnp.einsum("btku,ku->btk", inputs.counts, e),
                jnp.einsum("btku,ku->btk", inputs.mask_counts, e), e)
    b = beta[:, None] if beta.ndim == 1 else beta
    e = jnp.where(inputs.finite, jnp.exp(b * inputs.counts), 0.0)  # [B, T, K, A]
    return jnp.sum(e, axis=-1), jnp.sum(jnp.where(inputs.mask_counts, e, 0.0), axis=-1), e


def model_loglik(inputs: ModelInputs, beta, epsilon, weight=None):
    """Per-step, per-skill log-likelihood rows ``[B, T, K]`` of the fitted model.

    ``beta`` is a scalar or ``[K]`` (per skill). ``weight`` None: the data's
    tempering weights, ``w_t log pi_hat(M_t | k)`` exactly as
    :func:`~beliefgate.models.skill_model.controller_loglik`; else the ambiguous
    steps use the normalised power likelihood
    ``weight * log pi_hat(M_t | k) - log sum_a pi_hat(a | k)^weight``.
    """
    import jax.numpy as jnp
    from jax.nn import logsumexp

    z, s, e = _exp_terms(inputs, beta)
    num_actions = inputs.finite.shape[-1]
    noise = epsilon / num_actions
    used = (inputs.weight > 0) & inputs.valid & (inputs.num_mask > 0)
    prob = (1.0 - epsilon) * s / z + noise * inputs.num_mask[..., None]
    log_prob = jnp.log(jnp.where(used[..., None], prob, 1.0))
    if weight is None:
        return jnp.where(used[..., None], inputs.weight[..., None] * log_prob, 0.0)
    amb = inputs.ambiguous & used
    # log sum_a pi_hat(a | k)^w, per distinct value (or per action on the direct path)
    if inputs.values.shape[0] > 0:
        per_value = (1.0 - epsilon) * e / z[..., None] + noise  # [B, T, K, U]
        # actions with Q = -inf (not counted in any value) have probability eps / A
        n_inf = num_actions - jnp.sum(inputs.counts, axis=-1, keepdims=True)
        counts = jnp.concatenate([inputs.counts, n_inf], axis=-1)
        per_value = jnp.concatenate([per_value, jnp.broadcast_to(noise, n_inf.shape)], axis=-1)
        present = counts > 0
        terms = jnp.where(present, jnp.log(jnp.where(present, counts, 1.0)) + weight * jnp.log(per_value),
                          -jnp.inf)
    else:
        per_action = (1.0 - epsilon) * e / z[..., None] + noise
        terms = weight * jnp.log(per_action)
    log_norm = logsumexp(jnp.where(amb[..., None, None], terms, 0.0), axis=-1)
    tempered = jnp.where(amb[..., None], weight * log_prob - log_norm, inputs.weight[..., None] * log_prob)
    return jnp.where(used[..., None], tempered, 0.0)


def log_marginal(inputs: ModelInputs, loglik, config: FitConfig, hazard, alpha):
    """Each trajectory's log marginal likelihood ``[B]`` from per-step rows ``loglik``:
    :func:`~beliefgate.models.skill_model.trajectory_log_likelihood` (the filter's scan)."""
    from beliefgate.models.skill_model import trajectory_log_likelihood

    values = {"hazard": hazard, "alpha": alpha}
    return trajectory_log_likelihood(inputs, values, model=config.model, window=config.window, loglik=loglik)


@lru_cache(maxsize=None)
def _jitted_log_lik():
    import jax

    def log_lik(inputs, beta, epsilon, hazard, alpha, weight, model, window):
        config = FitConfig(model=model, window=window)
        loglik = model_loglik(inputs, beta, epsilon, weight)
        return log_marginal(inputs, loglik, config, hazard, alpha)

    return jax.jit(log_lik, static_argnames=("model", "window"))


def trajectories_log_lik(inputs: ModelInputs, values: Mapping[str, Any], config: FitConfig):
    """Each trajectory's log marginal likelihood ``[B]`` at parameter ``values`` (traceable).

    The model's :func:`~beliefgate.models.skill_model.trajectory_log_likelihood` on the
    sufficient-statistic rows :func:`model_loglik`. One jitted function per (model,
    window, shapes): NumPyro's eager model runs (initialisation, ``Predictive``) reuse
    its compilation instead of compiling every operation on its own.
    """
    weight = values.get("ambiguous_weight") if config.fit_weight else None
    return _jitted_log_lik()(inputs, values["beta"], values["epsilon"], values.get("hazard", 0.0),
                             values["alpha"], weight, config.model, config.window)


def fitted_model(inputs: ModelInputs, config: Optional[FitConfig] = None) -> None:
    """What :func:`fit` samples: the project's one model,
    :func:`~beliefgate.models.skill_model.partner_skill_model`, with ``config``'s options
    and its likelihood evaluated from :class:`ModelInputs` (sufficient statistics).

    Sites: the sampled parameters (``beta`` ``[K]`` under a ``skill`` plate when per
    skill; ``ambiguous_weight`` with ``fit_weight``), ``log_lik`` (deterministic
    ``[B]``) and the factor ``obs``.
    """
    from beliefgate.models.skill_model import partner_skill_model

    config = FitConfig() if config is None else config
    from beliefgate.models.params import PARAMS

    partner_skill_model(inputs, config.fixed, PARAMS, model=config.model, window=config.window,
                        per_skill_beta=config.per_skill_beta, fit_weight=config.fit_weight,
                        log_lik_fn=lambda values: trajectories_log_lik(inputs, values, config))


def belief_model(inputs: ModelInputs, config: Optional[FitConfig] = None) -> None:
    """Deprecated alias of :func:`fitted_model` (this release only)."""
    import warnings

    warnings.warn("beliefgate.models.fit.belief_model is deprecated; use fitted_model (a configuration of "
                  "beliefgate.models.skill_model.partner_skill_model)", DeprecationWarning, stacklevel=2)
    fitted_model(inputs, config)


def point_values(idata, point: str = "median") -> dict:
    """Point estimates ``{name: float or list}`` of a fit (posterior median or mean), fixed values included."""
    import numpy as np

    if point not in ("median", "mean"):
        raise FitError(f"point must be 'median' or 'mean', got {point!r}")
    config = fit_config(idata)
    post = idata.posterior
    out: dict = {}
    for name in config.parameter_names():
        arr = np.asarray(post[name].values)
        arr = arr.reshape((-1,) + arr.shape[2:])
        est = np.median(arr, axis=0) if point == "median" else np.mean(arr, axis=0)
        out[name] = est.tolist() if est.ndim else float(est)
    from beliefgate.models.params import PARAMS

    for spec in PARAMS:
        out.setdefault(spec.name, float(config.fixed.get(spec.name, spec.default)))
    for name in unused_params(config.model):  # e.g. the windowed model has no hazard
        out.pop(name, None)
    if config.fit_weight:
        out.setdefault("ambiguous_weight", float(config.fixed.get("ambiguous_weight", 0.35)))
    return out


# --------------------------------------------------------------------------------------
# Running a fit
# --------------------------------------------------------------------------------------


def _coords(data: FitData, config: FitConfig):
    coords = {"skill": list(data.skill_names), "trajectory": list(range(data.num_trajectories))}
    dims = {"log_lik": ["trajectory"]}
    if config.per_skill_beta:
        dims["beta"] = ["skill"]
    return coords, dims


def run_nuts(model, args, config, progress: bool, coords=None, dims=None):
    """NUTS on ``model(*args)`` with ``config``'s inference settings (``target_accept``,
    ``max_tree_depth``, ``chains``, ``draws``, ``warmup``, ``seed``, ``chain_method``): every fitted
    model's one NUTS set-up (the skill model's :func:`fit`, the goal model's ``fit_goal``).
    Returns ``(InferenceData, info)``."""
    import arviz as az
    import jax
    from numpyro.infer import MCMC, NUTS

    kernel = NUTS(model, target_accept_prob=config.target_accept, max_tree_depth=config.max_tree_depth)
    chain_method = config.chain_method
    if chain_method == "parallel" and jax.local_device_count() < config.chains:
        chain_method = "sequential"  # NumPyro would warn and do the same
    mcmc = MCMC(kernel, num_warmup=config.warmup, num_samples=config.draws,
                num_chains=config.chains, chain_method=chain_method, progress_bar=progress)
    mcmc.run(jax.random.PRNGKey(config.seed), *args,
             extra_fields=("diverging", "num_steps", "accept_prob", "adapt_state.step_size",
                           "potential_energy", "energy"))
    idata = az.from_numpyro(mcmc, log_likelihood=False, coords=coords, dims=dims)
    return idata, {"chain_method_used": chain_method}


def run_svi(model, args, config, names, progress: bool, coords=None, dims=None, error=None):
    """SVI on ``model(*args)`` with ``config``'s settings (``guide``, ``learning_rate``,
    ``svi_steps``, ``seed``) and ``chains x draws`` guide draws of the sites ``names`` and
    ``log_lik``: every fitted model's one SVI set-up. ``error`` (default :class:`FitError`) is
    raised when the ELBO diverges. Returns ``(InferenceData, info)``."""
    import arviz as az
    import jax
    import numpy as np
    import xarray as xr
    from numpyro import optim
    from numpyro.infer import SVI, Predictive, Trace_ELBO
    from numpyro.infer.autoguide import AutoMultivariateNormal, AutoNormal

    guide_cls = AutoNormal if config.guide == "normal" else AutoMultivariateNormal
    guide = guide_cls(model)
    svi = SVI(model, guide, optim.Adam(config.learning_rate), Trace_ELBO())
    key_fit, key_draw = jax.random.split(jax.random.PRNGKey(config.seed))
    result = svi.run(key_fit, config.svi_steps, *args, progress_bar=progress)
    losses = np.asarray(result.losses)
    if not np.all(np.isfinite(losses[-max(1, len(losses) // 10):])):
        raise (error or FitError)("SVI diverged (non-finite ELBO); lower --learning-rate")
    total = config.chains * config.draws
    draws = Predictive(model, guide=guide, params=result.params, num_samples=total,
                       return_sites=list(names) + ["log_lik"])(key_draw, *args)
    shaped = {k: np.asarray(v).reshape((config.chains, config.draws) + np.shape(v)[1:])
              for k, v in draws.items()}
    idata = az.from_dict(posterior=shaped, coords=coords, dims=dims)
    stats = xr.Dataset({"loss": (("svi_step",), losses)},
                       coords={"svi_step": np.arange(len(losses))})
    idata.add_groups(sample_stats=stats)
    return idata, {"final_loss": float(losses[-1])}


def _nuts(data: FitData, config: FitConfig, progress: bool):
    coords, dims = _coords(data, config)
    return run_nuts(partial(fitted_model, config=config), (prepare(data),), config, progress, coords, dims)


def _svi(data: FitData, config: FitConfig, progress: bool):
    coords, dims = _coords(data, config)
    return run_svi(partial(fitted_model, config=config), (prepare(data),), config, config.parameter_names(),
                   progress, coords, dims)


#: draws of the prior group a fit stores (``idata.prior``: the parameters drawn from their priors)
PRIOR_DRAWS = 500


def prior_group(sample_sites, names, seed: int, num: int = PRIOR_DRAWS, coords=None, dims=None):
    """The parameter sites ``names`` of ``sample_sites()`` (a function that only samples a model's
    parameters) drawn ``num`` times from their priors, as an xarray Dataset with one chain: every
    fitted model's ``prior`` group (the skill model's, the goal model's)."""
    import arviz as az
    import jax
    import numpy as np
    from numpyro.infer import Predictive

    draws = Predictive(sample_sites, num_samples=num, return_sites=list(names))(jax.random.PRNGKey(seed))
    dims = {k: v for k, v in (dims or {}).items() if k in draws}
    used = {d for v in dims.values() for d in v}
    return az.from_dict(prior={k: np.asarray(v)[None] for k, v in draws.items()},
                        coords={k: v for k, v in (coords or {}).items() if k in used}, dims=dims).prior


def prior_draws(data: FitData, config: FitConfig, num: int = PRIOR_DRAWS):
    """The parameters drawn from the model's priors (``config``'s fixed values, variant and per-skill
    beta), as an xarray Dataset with one chain of ``num`` draws (seed + 1): the fit file's ``prior``
    group, to compare the posterior with (only the parameter sites are run: no likelihood is evaluated)."""
    from beliefgate.models.params import PARAMS
    from beliefgate.models.skill_model import sample_model_params

    def prior_model():
        sample_model_params(PARAMS, config.fixed, num_skills=len(data.skill_names), model=config.model,
                            per_skill_beta=config.per_skill_beta, fit_weight=config.fit_weight)

    coords, dims = _coords(data, config)
    return prior_group(prior_model, config.parameter_names(), config.seed + 1, num, coords, dims)


def parameter_draws(idata, num: int, dtype, group: str = "posterior", pick=None):
    """``(values, pick)``: every model parameter at up to ``num`` draws of ``group`` (``posterior`` or
    ``prior``) of a fit, thinned evenly across chains (or at the flat indices ``pick``), fixed and
    unused-by-the-fit values added (``{name: [S, ...]}`` in ``dtype``)."""
    import numpy as np

    from beliefgate.models.fitio import pick_draws
    from beliefgate.models.params import PARAMS

    config = fit_config(idata)
    post = getattr(idata, group)
    total = post.sizes["chain"] * post.sizes["draw"]
    pick = pick_draws(total, num) if pick is None else np.asarray(pick, int)
    out = {}
    for name in config.parameter_names():
        arr = np.asarray(post[name].values)
        out[name] = arr.reshape((total,) + arr.shape[2:])[pick].astype(dtype)
    point = point_values(idata)
    for name in (*(s.name for s in PARAMS), "ambiguous_weight"):
        if name not in out and name in point:
            out[name] = np.full(len(pick), point[name], dtype)
    return out, pick


def predictive_replications(idata, data: Optional[FitData] = None, *, group: str = "posterior",
                            num_draws: int = PREDICTIVE_DRAWS, seed: int = 0):
    """Replicated actions and skills from ``num_draws`` draws of ``group`` (``"posterior"`` or ``"prior"``):
    the fit file's ``posterior_predictive`` / ``prior_predictive`` group (an ``xarray.Dataset``).

    At each draw every checked step gets an action from the one-step-ahead predictive
    ``p(a_t | a_{<t})`` (renormalised over the checked actions) and the skill behind it: the
    replication of ``diagnose``'s predictive check (:mod:`beliefgate.models.predictive`). Variables
    ``action`` and ``skill`` ``[chain=1, draw, trajectory, step]`` (int16; -1 where no replication:
    padding, excluded or unknown actions; fewer than ``num_draws`` draws where draws x steps would
    pass :data:`~beliefgate.models.predictive.PREDICTIVE_MAX_VALUES`); ``attrs["beliefgate_replication"]``
    (JSON) names the group, the flat indices of the draws (thinned evenly across chains, as the check
    picks them) and the seed: the check with the same draws and seed replicates exactly these actions.
    """
    import numpy as np

    from beliefgate.models.predictive import PREDICTIVE_MAX_VALUES, replication_group

    if group not in ("posterior", "prior"):
        raise FitError(f"group must be 'posterior' or 'prior', got {group!r}")
    config = fit_config(idata)
    data = FitData.from_idata(idata) if data is None else data
    steps = int(np.prod(np.shape(data.skill.valid)))
    num_draws = min(num_draws, max(1, PREDICTIVE_MAX_VALUES // max(1, steps)))  # bounded file size
    draws, pick = parameter_draws(idata, num_draws, np.asarray(data.skill.q).dtype, group)
    return replication_group(prepare(data), data, config, draws, pick, seed, group, model_loglik)


def fit(data: FitData, config: Optional[FitConfig] = None, *, progress: bool = False,
        extra_attrs: Optional[Mapping[str, Any]] = None):
    """Fit ``config``'s model (default: ``FitConfig()``) to ``data``; returns ``arviz.InferenceData``.

    ``progress`` shows NumPyro's progress bar. ``extra_attrs`` (JSON-ready) are
    stored with the configuration (e.g. the command line).
    """
    import numpy as np
    import xarray as xr

    import beliefgate

    config = FitConfig() if config is None else config
    if not isinstance(data, FitData):
        raise FitError(f"expected FitData (see beliefgate.models.data.load_logs), got {type(data).__name__}")
    if not np.any(np.asarray(data.skill.weight) > 0):
        raise FitError("the data hold no weighted step: nothing to fit")
    started = time.perf_counter()
    if config.method == "nuts":
        idata, info = _nuts(data, config, progress)
    else:
        idata, info = _svi(data, config, progress)
    wall = time.perf_counter() - started
    for group in ("observed_data", "constant_data", "log_likelihood"):
        if group in idata.groups():  # from_numpyro may create empty ones
            delattr(idata, group)
    log_lik = idata.posterior["log_lik"]
    idata.posterior = idata.posterior.drop_vars("log_lik")
    idata.add_groups(log_likelihood=xr.Dataset({"log_lik": log_lik}))
    observed, constant = data.to_datasets()
    idata.add_groups(observed_data=observed, constant_data=constant)
    if "prior" in idata.groups():
        delattr(idata, "prior")
    idata.add_groups(prior=prior_draws(data, config))
    record = {
        "format": FORMAT,
        "config": config.model_dump(),
        "parameters": config.parameter_names(),
        "skill_names": list(data.skill_names),
        "num_trajectories": data.num_trajectories,
        "num_steps": data.num_steps,
        "data_fingerprint": data.fingerprint(),
        "sources": list(data.sources),
        "data_meta": data.meta,
        "wall_s": round(wall, 3),
        "beliefgate_version": beliefgate.__version__,
        "jax_x64": bool(np.asarray(data.skill.q).dtype == np.float64),
        **info,
        **dict(extra_attrs or {}),
    }
    FIT_FILE.stamp(idata, record)
    if config.predictive_draws:
        started = time.perf_counter()
        for group, seed in (("posterior", config.seed), ("prior", config.seed + 2)):
            if f"{group}_predictive" in idata.groups():
                delattr(idata, f"{group}_predictive")
            idata.add_groups({f"{group}_predictive": predictive_replications(
                idata, data, group=group, num_draws=config.predictive_draws, seed=seed)})
        record["predictive_wall_s"] = round(time.perf_counter() - started, 3)
        FIT_FILE.stamp(idata, record)
    return idata


def fit_record(idata) -> dict:
    """The JSON record stored by :func:`fit` (configuration, data provenance, timing)."""
    return FIT_FILE.record(idata)


def fit_config(idata) -> FitConfig:
    """The :class:`FitConfig` a fit was made with."""
    return FitConfig(**fit_record(idata)["config"])


def save_fit(idata, path: Union[str, Path]) -> Path:
    """Write a fit as NetCDF (parent directories created); returns the path."""
    return FIT_FILE.save(idata, path)


def load_fit(path: Union[str, Path]):
    """Read a fit written by :func:`save_fit`; raises :class:`FitError` with the reason."""
    return FIT_FILE.load(path)


__all__ = [
    "FitConfig",
    "FitConfigError",
    "FitError",
    "fitted_model",
    "belief_model",
    "model_loglik",
    "log_marginal",
    "fit",
    "run_nuts",
    "run_svi",
    "fit_record",
    "fit_config",
    "parameter_draws",
    "predictive_replications",
    "prior_group",
    "PREDICTIVE_DRAWS",
    "point_values",
    "save_fit",
    "load_fit",
    "MIN_HAZARD",
]
