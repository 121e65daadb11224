"""The NumPyro goal model of ``docs/goal.md``: data, the JAX scan, the two model forms, simulation, fit.

* :func:`scan_goal` -- the forward algorithm in JAX: ``lax.scan`` of
  :func:`beliefgate.models.goal.step.goal_step` (the online filter's step) with ``xp = jax.numpy``;
* :func:`partner_goal_model` -- ``(g, k)`` summed out by :func:`scan_goal` (NUTS/SVI);
* :func:`partner_goal_model_explicit` -- ``g_t`` and ``z_t`` as discrete sample sites from the
  dense transition :func:`~beliefgate.models.goal.step.goal_log_transition` (brute force);
* :func:`sample_goal_paths` -- simulation on a fixed state sequence;
* :func:`fit_goal` -- NUTS, ArviZ ``InferenceData``.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Dict, Literal, Mapping, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax import lax
from numpyro.distributions import constraints
from pydantic import ConfigDict, Field, field_validator

from beliefgate.models.controllers.boltzmann import boltzmann_logprobs_jax
from beliefgate.limits import MAX_CHAINS, MAX_DRAWS, MAX_SVI_STEPS
from beliefgate.models.errors import InvalidParameterError, ShapeMismatchError
from beliefgate.models.goal.step import (
    check_goal_change,
    check_goal_loglik,
    check_goal_prior,
    check_log_weights,
    goal_log_initial,
    goal_log_transition,
    goal_step,
    initial_log_joint,
    log_sum_exp,
    redraw_probability,
)
from beliefgate.models.params import BETA, EPSILON, HAZARD, ParamSpec, check_values, sample_params
from beliefgate.models.skill_model import action_logprobs, controller_loglik, skill_data
from beliefgate.models.transitions.hazard import MIN_HAZARD
from beliefgate.validation import CheckedModel, ParamError

#: Per-step probability that the partner redraws its goal from the goal prior unprompted.
GOAL_HAZARD = ParamSpec(
    "goal_hazard", lambda: dist.Beta(1.0, 199.0), constraints.unit_interval, 0.002, True,
    "Per-step probability that the partner redraws its goal from the goal prior.")

#: The goal model's parameters: the controller's beta and epsilon, the skill hazard, the goal hazard
#: (fixed at its default unless sampled: ``sample_params(GOAL_PARAMS, random=("goal_hazard",))``).
GOAL_PARAMS: tuple = (BETA, EPSILON, HAZARD, GOAL_HAZARD)


# --------------------------------------------------------------------------------------
# Data and the JAX scan
# --------------------------------------------------------------------------------------


class GoalObs(NamedTuple):
    """Per-step rows of one trajectory ``[T, ...]`` for :func:`scan_goal`.

    Fields
    ------
    loglik : float[T, K]      tempered skill log-likelihood rows (the skill model's)
    goal_loglik : float[T, G] direct goal evidence (zeros if none)
    log_weights : float[T, G, K]  goal-conditioned skill log-weights (``pi_t(k | g)`` up to a constant)
    feasible : bool[T, K]     skill preconditions
    completed : int32[T]      skill visibly completed by ``a_t`` (-1 none): next predict is a forced switch
    goal_change : float[T]    probability that the goal is redrawn after ``a_t`` (flagged by the domain)
    valid : bool[T]           False on padding (no change, adds 0)
    log_goal_prior : float[G] normalised ``log rho``
    """

    loglik: object
    goal_loglik: object
    log_weights: object
    feasible: object
    completed: object
    goal_change: object
    valid: object
    log_goal_prior: object


class GoalData(NamedTuple):
    """Observed data of one trajectory or a padded batch for the NumPyro goal model.

    ``skill`` is the skill model's :class:`~beliefgate.models.skill_model.SkillData` (Q tables,
    action masks, weights, feasibility, completions, padding); the rest are as in
    :class:`GoalObs` with the same leading axes (``log_goal_prior`` ``[..., G]``).
    """

    skill: object
    log_weights: object
    goal_change: object
    goal_loglik: object
    log_goal_prior: object


def goal_data(q, action_mask, log_weights, goal_prior=None, goal_change=None, goal_loglik=None, *,
              weight=None, feasible=None, completed=None, valid=None) -> GoalData:
    """Validate and package :class:`GoalData` (``q`` ``[T, K, A]`` or ``[B, T, K, A]``).

    The skill part is validated by :func:`beliefgate.models.skill_model.skill_data`; the goal
    arrays raise :class:`ShapeMismatchError`, :class:`NonFiniteLoglikError`,
    :class:`GoalPriorError`, :class:`GoalSkillPriorError` or :class:`InvalidParameterError`
    naming the array. ``goal_prior``: probability weights ``[G]`` (or ``[B, G]``), uniform if None.
    """
    skill = skill_data(q, action_mask, weight, feasible, completed, None, valid)
    lead = tuple(skill.valid.shape)
    valid_np = np.asarray(skill.valid)
    feas = np.asarray(skill.feasible)
    w = check_log_weights(log_weights, lead, feas.shape[-1], feas, valid_np)
    num_goals = w.shape[-2]
    if goal_prior is None:
        log_rho = np.broadcast_to(check_goal_prior(None, num_goals), lead[:-1] + (num_goals,))
    else:
        log_rho = check_goal_prior(goal_prior, num_goals)
        if log_rho.shape not in ((num_goals,), lead[:-1] + (num_goals,)):
            raise ShapeMismatchError(f"goal_prior must have shape {lead[:-1] + (num_goals,)}, got {log_rho.shape}")
        log_rho = np.broadcast_to(log_rho, lead[:-1] + (num_goals,))
    change = check_goal_change(goal_change, lead)
    gl = check_goal_loglik(goal_loglik, lead + (num_goals,))
    fdt = skill.q.dtype
    keep = valid_np[..., None, None]
    return GoalData(
        skill=skill,
        log_weights=jnp.asarray(np.where(keep, w, 0.0), fdt),
        goal_change=jnp.asarray(np.where(valid_np, change, 0.0), fdt),
        goal_loglik=jnp.asarray(np.where(valid_np[..., None], gl, 0.0), fdt),
        log_goal_prior=jnp.asarray(log_rho, fdt),
    )


def goal_observations(data: GoalData, loglik) -> GoalObs:
    """The scan's rows from :class:`GoalData` and the skill log-likelihood rows ``loglik``."""
    s = data.skill
    return GoalObs(loglik, data.goal_loglik, data.log_weights, s.feasible, s.completed, data.goal_change,
                   s.valid, data.log_goal_prior)


class GoalScan(NamedTuple):
    """What :func:`scan_goal` returns: per-step ``[T, ...]`` arrays and the total.

    Fields
    ------
    log_predicted : float[T, G, K]  ``log p(g_t, k_t | a_{<t})``
    log_posterior : float[T, G, K]  ``log p(g_t, k_t | a_{<=t})`` (padding repeats the last)
    log_normalizer : float[T]       ``log p(a_t | a_{<t})`` (0 on padding)
    log_marginal : float[]          ``log p(a_{0:T-1})``
    """

    log_predicted: object
    log_posterior: object
    log_normalizer: object
    log_marginal: object


def scan_goal(hazard, goal_hazard, obs: GoalObs) -> GoalScan:
    """Traceable forward pass of the goal model over one trajectory (``lax.scan`` of :func:`goal_step`
    with ``xp = jax.numpy``); no validation. ``hazard`` and ``goal_hazard`` are evaluated at
    :data:`MIN_HAZARD` below it (an exact 0 gives NaN gradients)."""
    hazard = jnp.maximum(hazard, MIN_HAZARD)
    goal_hazard = jnp.maximum(goal_hazard, MIN_HAZARD)
    num_skills = obs.loglik.shape[-1]
    log_rho = obs.log_goal_prior
    init = (initial_log_joint(jnp, log_rho, num_skills).astype(obs.loglik.dtype), jnp.asarray(True),
            jnp.zeros((), obs.loglik.dtype))

    def body(carry, xs):
        log_joint, reset, change = carry
        loglik, goal_loglik, log_weights, feasible, completed, goal_change, valid = xs
        loglik = jnp.where(valid, loglik, 0.0)
        goal_loglik = jnp.where(valid, goal_loglik, 0.0)
        feasible = feasible | ~valid
        log_pred, log_post, log_z = goal_step(jnp, log_joint, reset, change, log_rho, log_weights, loglik,
                                              goal_loglik, feasible, hazard, goal_hazard)
        new = (log_post, completed >= 0, goal_change)
        carry = tuple(jnp.where(valid, n, o) for n, o in zip(new, carry))
        return carry, (jnp.where(valid, log_pred, log_joint), carry[0], jnp.where(valid, log_z, 0.0))

    xs = (obs.loglik, obs.goal_loglik, obs.log_weights, obs.feasible, obs.completed, obs.goal_change, obs.valid)
    _, (log_pred, log_post, log_z) = lax.scan(body, init, xs)
    return GoalScan(log_pred, log_post, log_z, log_z.sum())


def _filter(data: GoalData, values):
    loglik = controller_loglik(data.skill, values["beta"], values["epsilon"])
    obs = goal_observations(data, loglik)

    def one(o):
        return scan_goal(values["hazard"], values["goal_hazard"], o)

    return jax.vmap(one)(obs) if loglik.ndim == 3 else one(obs)


_filter_jit = jax.jit(_filter)


def filter_goal(data: GoalData, values: Optional[Mapping[str, float]] = None) -> GoalScan:
    """Offline goal filter of validated :class:`GoalData` (one trajectory or a batch, with the
    leading batch axis on every field of the result) at parameter ``values`` (``beta, epsilon,
    hazard, goal_hazard``; defaults for missing ones, checked against their supports).
    Jitted: one compilation per data shape and dtype, whatever the values."""
    if not isinstance(data, GoalData):
        raise ShapeMismatchError(f"data must be GoalData (see goal_data), got {type(data).__name__}")
    vals = check_values(values or {}, GOAL_PARAMS)
    dtype = data.skill.q.dtype
    return _filter_jit(data, {k: jnp.asarray(v, dtype) for k, v in vals.items()})


# --------------------------------------------------------------------------------------
# NumPyro models
# --------------------------------------------------------------------------------------


def goal_trajectory_log_likelihood(data: GoalData, values: Mapping[str, object], controller=boltzmann_logprobs_jax):
    """Traceable ``log p(a | theta)`` with ``(g, k)`` summed out; ``[B]`` or scalar. ``values`` holds
    ``beta, epsilon, hazard, goal_hazard``; ``controller`` as in the skill model."""
    loglik = controller_loglik(data.skill, values["beta"], values["epsilon"], controller)
    obs = goal_observations(data, loglik)

    def one(o):
        return scan_goal(values["hazard"], values["goal_hazard"], o).log_marginal

    return jax.vmap(one)(obs) if loglik.ndim == 3 else one(obs)


_log_lik_jit = jax.jit(goal_trajectory_log_likelihood)


def partner_goal_model(data: GoalData, fixed: Optional[Mapping[str, float]] = None,
                       specs: tuple = GOAL_PARAMS, controller=boltzmann_logprobs_jax) -> None:
    """Marginalised goal model (NUTS/SVI): one sample site per non-fixed parameter of ``specs``,
    ``"log_lik"`` (deterministic, per trajectory) and the factor ``"obs"`` (their sum). The
    likelihood is :func:`scan_goal`, the online filter's own step."""
    values = sample_params(specs, fixed)
    if controller is boltzmann_logprobs_jax:  # one compilation, reused by NumPyro's eager runs (init, Predictive)
        log_lik = _log_lik_jit(data, {k: values[k] for k in ("beta", "epsilon", "hazard", "goal_hazard")})
    else:
        log_lik = goal_trajectory_log_likelihood(data, values, controller)
    numpyro.deterministic("log_lik", log_lik)
    numpyro.factor("obs", jnp.sum(log_lik))


def partner_goal_model_explicit(data: GoalData, fixed: Optional[Mapping[str, float]] = None,
                                specs: tuple = GOAL_PARAMS, controller=boltzmann_logprobs_jax) -> None:
    """Explicit discrete-latent goal model for one trajectory: per valid step ``t`` the sites
    ``"g_{t}"`` ~ ``p(g_t | g_{t-1})`` and ``"z_{t}"`` ~ ``p(k_t | g_t, g_{t-1}, k_{t-1})`` (both
    from the dense :func:`goal_log_transition`) and the factor ``"a_{t}"``. For brute force."""
    if data.skill.q.ndim != 3:
        raise ShapeMismatchError(f"the explicit model takes one trajectory [T, K, A], got {data.skill.q.shape}")
    values = sample_params(specs, fixed)
    loglik = controller_loglik(data.skill, values["beta"], values["epsilon"], controller)
    hazard = jnp.maximum(values["hazard"], MIN_HAZARD)
    goal_hazard = jnp.maximum(values["goal_hazard"], MIN_HAZARD)
    valid = np.asarray(data.skill.valid)
    log_rho = data.log_goal_prior
    first, reset, change = True, jnp.asarray(True), jnp.asarray(0.0)
    g_prev = z_prev = None
    for t in range(loglik.shape[0]):
        if not valid[t]:
            continue
        feas = data.skill.feasible[t]
        if first:
            row = goal_log_initial(jnp, log_rho, data.log_weights[t], feas)
        else:
            redraw = redraw_probability(jnp, goal_hazard, change)
            row = goal_log_transition(jnp, log_rho, data.log_weights[t], feas, hazard, redraw, reset)[g_prev, z_prev]
        log_pg = log_sum_exp(jnp, row, axis=-1)
        g = numpyro.sample(f"g_{t}", dist.Categorical(logits=log_pg))
        z = numpyro.sample(f"z_{t}", dist.Categorical(logits=row[g] - log_pg[g]))
        numpyro.factor(f"a_{t}", loglik[t, z] + data.goal_loglik[t, g])
        first, reset, change = False, data.skill.completed[t] >= 0, data.goal_change[t]
        g_prev, z_prev = g, z


# --------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------


def sample_goal_paths(rng_key, data: GoalData, values: Optional[Mapping[str, float]] = None,
                      num_samples: int = 1) -> Dict[str, object]:
    """Simulate the model on one trajectory's fixed state sequence: ``{"g", "z", "a", "completed"}``
    int32 ``[S, T]``. Actions come from the untempered controller; at the steps where
    ``data`` completes a skill, the sampled skill is the one completed (``completed = z_t``,
    -1 elsewhere) so the forced switches happen where the data put them."""
    if data.skill.q.ndim != 3:
        raise ShapeMismatchError(f"sample_goal_paths takes one trajectory [T, K, A], got {data.skill.q.shape}")
    if int(num_samples) != num_samples or num_samples < 1:
        raise InvalidParameterError(f"num_samples must be an integer >= 1, got {num_samples!r}")
    vals = check_values(values or {}, GOAL_PARAMS)
    keys = jax.random.split(rng_key, int(num_samples))
    g, z, a = _sample_jit(keys, data, {k: jnp.asarray(v, data.skill.q.dtype) for k, v in vals.items()})
    completed = jnp.where(data.skill.completed[None] >= 0, z, -1)
    return {"g": g, "z": z, "a": a, "completed": completed.astype(jnp.int32)}


def _sample_one(key, logp, data: GoalData, values):
    hazard = jnp.maximum(values["hazard"], MIN_HAZARD)
    goal_hazard = jnp.maximum(values["goal_hazard"], MIN_HAZARD)
    log_rho = data.log_goal_prior
    num_skills = logp.shape[1]

    def body(carry, xs):
        first, reset, change, g_prev, z_prev = carry
        key_t, logp_t, log_w, feas, completed, goal_change, valid = xs
        init = goal_log_initial(jnp, log_rho, log_w, feas)
        redraw = redraw_probability(jnp, goal_hazard, change)
        trans = goal_log_transition(jnp, log_rho, log_w, feas, hazard, redraw, reset)[g_prev, z_prev]
        row = jnp.where(first, init, trans).reshape(-1)
        key_s, key_a = jax.random.split(key_t)
        s = jax.random.categorical(key_s, row)
        g, z = s // num_skills, s % num_skills
        a = jax.random.categorical(key_a, logp_t[z])
        g = jnp.where(valid, g, g_prev).astype(jnp.int32)
        z = jnp.where(valid, z, z_prev).astype(jnp.int32)
        a = jnp.where(valid, a, -1).astype(jnp.int32)
        carry = (first & ~valid, jnp.where(valid, completed >= 0, reset), jnp.where(valid, goal_change, change), g, z)
        return carry, (g, z, a)

    s = data.skill
    keys = jax.random.split(key, logp.shape[0])
    carry = (jnp.asarray(True), jnp.asarray(True), jnp.zeros((), logp.dtype), jnp.asarray(0, jnp.int32),
             jnp.asarray(0, jnp.int32))
    xs = (keys, logp, data.log_weights, s.feasible, s.completed, data.goal_change, s.valid)
    _, out = lax.scan(body, carry, xs)
    return out


def _sample_paths(keys, data, values):


    logp = action_logprobs(data.skill, values["beta"], values["epsilon"])
    return jax.vmap(lambda key: _sample_one(key, logp, data, values))(keys)


_sample_jit = jax.jit(_sample_paths)


# --------------------------------------------------------------------------------------
# Fit (NUTS or SVI, discrete sites marginalised; the skill model's runners)
# --------------------------------------------------------------------------------------

#: attribute and format of a goal fit's record (``beliefgate fit --model goal``)
GOAL_FIT_ATTR = "beliefgate_goal_fit"
GOAL_FIT_FORMAT = "beliefgate.goal_fit/1"


class GoalFitError(ParamError):
    """A goal fit cannot be configured, run or read (one line naming the field or the problem)."""


def goal_fit_file():
    """The goal fit's :class:`~beliefgate.models.fitio.FitFile` (record, groups, error)."""
    from beliefgate.models.fitio import FitFile

    return FitFile(GOAL_FIT_ATTR, GOAL_FIT_FORMAT, GoalFitError,
                   "not a goal fit: no 'beliefgate_goal_fit' attribute (write it with `beliefgate fit --model goal`)",
                   groups=("posterior", "log_likelihood", "constant_data"),
                   what="the goal fit (as `beliefgate fit --model goal` writes it)",
                   stamp_groups=("posterior", "sample_stats", "log_likelihood"))


class GoalFitData(NamedTuple):
    """What a domain's goal loader returns for a fit: the model's :class:`GoalData`, the goal
    names (index order), the skill names, the log paths, and per step the goal active in the log
    (``true_goal`` int ``[B, T]``, -1 unknown or padding) for the recipe-MAP accuracy."""

    data: GoalData
    goal_names: tuple
    skill_names: tuple
    sources: tuple
    true_goal: object


class GoalFitConfig(CheckedModel):
    """Settings of :func:`fit_goal`: ``method`` (``nuts``/``svi``), ``chains``, ``draws``,
    ``warmup``, ``seed``, ``target_accept``, ``max_tree_depth``, ``chain_method``, SVI's
    ``svi_steps``, ``learning_rate``, ``guide``, and ``fixed`` (pinned parameter values by name)."""

    error_type = GoalFitError
    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Literal["nuts", "svi"] = "nuts"
    chains: int = Field(1, ge=1, le=MAX_CHAINS)
    draws: int = Field(500, ge=1, le=MAX_DRAWS)
    warmup: int = Field(500, ge=0, le=MAX_DRAWS)
    seed: int = Field(0, ge=0)
    target_accept: float = Field(0.8, gt=0.0, lt=1.0)
    max_tree_depth: int = Field(10, ge=1, le=15)
    chain_method: Literal["parallel", "sequential", "vectorized"] = "sequential"
    svi_steps: int = Field(2000, ge=1, le=MAX_SVI_STEPS)
    learning_rate: float = Field(0.02, gt=0.0)
    guide: Literal["normal", "mvn"] = "normal"
    fixed: Dict[str, float] = Field(default_factory=dict)

    @field_validator("fixed")
    @classmethod
    def _known(cls, fixed: Dict[str, float]) -> Dict[str, float]:
        known = {s.name for s in GOAL_PARAMS}
        unknown = set(fixed) - known
        if unknown:
            raise ValueError(f"cannot fix unknown parameter(s) {sorted(unknown)}; known: {sorted(known)}")
        for name, value in fixed.items():
            if not math.isfinite(value):
                raise ValueError(f"fixed {name} must be finite, got {value}")
        try:
            check_values(fixed, GOAL_PARAMS)
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        return fixed

    def parameter_names(self) -> list:
        """The sampled parameters, in model order (the goal hazard stays at its default unless freed
        by ``sample_params``; see :data:`GOAL_PARAMS`)."""
        return [s.name for s in GOAL_PARAMS if not s.fixed and s.name not in self.fixed]


def fit_goal(data, config: Optional["GoalFitConfig"] = None, *, progress: bool = False,
             extra_attrs: Optional[Mapping[str, object]] = None):
    """NUTS or SVI (``config.method``; the skill model's :func:`~beliefgate.models.fit.run_nuts` /
    :func:`~beliefgate.models.fit.run_svi`) on :func:`partner_goal_model` (discrete ``(g, k)``
    summed out by the filter's scan). ``data``: :class:`GoalData`, or :class:`GoalFitData` (a
    domain loader's, whose names, sources and logged goals are kept: ``constant_data`` holds the
    model inputs, so ``beliefgate diagnose`` can refilter). Returns ``arviz.InferenceData`` with
    ``posterior``, ``prior`` (the sampled parameters drawn from their priors, 500 draws),
    ``sample_stats`` (NUTS statistics or the ELBO loss), ``log_likelihood``
    (``log_lik`` per trajectory and draw) and the record (config, provenance) as
    ``attrs["beliefgate_goal_fit"]`` (JSON)."""
    import time

    import xarray as xr

    import beliefgate
    from beliefgate.models.fit import prior_group, run_nuts, run_svi

    config = GoalFitConfig() if config is None else config
    full = data if isinstance(data, GoalFitData) else None
    data = full.data if full is not None else data
    if not isinstance(data, GoalData):
        raise GoalFitError(f"expected GoalData (see goal_data), got {type(data).__name__}")
    if not np.any(np.asarray(data.skill.weight) > 0):
        raise GoalFitError("the data hold no weighted step: nothing to fit")
    batched = data.skill.q.ndim == 4
    model = partial(partner_goal_model, fixed=dict(config.fixed))
    dims = {"log_lik": ["trajectory"]} if batched else None
    coords = {"trajectory": list(range(data.skill.q.shape[0]))} if batched else None
    started = time.perf_counter()
    if config.method == "nuts":
        idata, info = run_nuts(model, (data,), config, progress, coords, dims)
    else:
        idata, info = run_svi(model, (data,), config, config.parameter_names(), progress, coords, dims,
                              error=GoalFitError)
    wall = time.perf_counter() - started
    for group in ("observed_data", "constant_data", "log_likelihood"):
        if group in idata.groups():
            delattr(idata, group)
    log_lik = idata.posterior["log_lik"]
    idata.posterior = idata.posterior.drop_vars("log_lik")
    idata.add_groups(log_likelihood=xr.Dataset({"log_lik": log_lik}))
    idata.add_groups(constant_data=goal_datasets(full if full is not None else data))
    if "prior" in idata.groups():
        delattr(idata, "prior")
    idata.add_groups(prior=prior_group(lambda: sample_params(GOAL_PARAMS, dict(config.fixed)),
                                       config.parameter_names(), config.seed + 1))
    valid = np.asarray(data.skill.valid)
    record = {
        "format": GOAL_FIT_FORMAT,
        "model": "goal",
        "config": config.model_dump(),
        "parameters": config.parameter_names(),
        "goal_names": list(full.goal_names) if full is not None else None,
        "skill_names": list(full.skill_names) if full is not None else None,
        "sources": list(full.sources) if full is not None else None,
        "num_trajectories": int(valid.shape[0]) if batched else 1,
        "num_steps": int(valid.sum()),
        "wall_s": round(wall, 3),
        "beliefgate_version": beliefgate.__version__,
        "jax_x64": bool(np.asarray(data.skill.q).dtype == np.float64),
        **info,
        **dict(extra_attrs or {}),
    }
    return goal_fit_file().stamp(idata, record)


#: the model inputs a goal fit stores (``constant_data``), by :class:`GoalData` path
_STORED = (("q", ("skill", "q")), ("action_mask", ("skill", "action_mask")), ("weight", ("skill", "weight")),
           ("feasible", ("skill", "feasible")), ("completed", ("skill", "completed")),
           ("valid", ("skill", "valid")), ("log_weights", ("log_weights",)), ("goal_change", ("goal_change",)),
           ("goal_loglik", ("goal_loglik",)), ("log_goal_prior", ("log_goal_prior",)))
_DIMS = {"q": ("trajectory", "step", "skill", "action"), "action_mask": ("trajectory", "step", "action"),
         "weight": ("trajectory", "step"), "feasible": ("trajectory", "step", "skill"),
         "completed": ("trajectory", "step"), "valid": ("trajectory", "step"),
         "log_weights": ("trajectory", "step", "goal", "skill"), "goal_change": ("trajectory", "step"),
         "goal_loglik": ("trajectory", "step", "goal"), "log_goal_prior": ("trajectory", "goal"),
         "true_goal": ("trajectory", "step")}


def goal_datasets(data):
    """The model inputs of :class:`GoalData` (or :class:`GoalFitData`, with its logged goals) as
    an xarray Dataset (a leading ``trajectory`` axis even for one trajectory)."""
    import xarray as xr

    full = data if isinstance(data, GoalFitData) else None
    data = full.data if full is not None else data
    one = data.skill.q.ndim == 3
    out = {}
    for name, path in _STORED:
        arr = data
        for attr in path:
            arr = getattr(arr, attr)
        arr = np.asarray(arr)
        if one:
            arr = arr[None]
        if name == "q":  # -inf (impossible actions) is stored as NaN-free: a large negative finite value
            arr = np.where(np.isfinite(arr), arr, -1e30)
        out[name] = (_DIMS[name], arr)
    if full is not None:
        out["true_goal"] = (_DIMS["true_goal"], np.asarray(full.true_goal, np.int64).reshape(out["valid"][1].shape))
    return xr.Dataset(out)


def goal_data_from_idata(idata) -> GoalData:
    """The :class:`GoalData` a goal fit was made on (its ``constant_data``; batched)."""
    c = idata.constant_data
    arr = {name: np.asarray(c[name].values) for name, _ in _STORED}
    q = np.where(arr["q"] <= -1e29, -np.inf, arr["q"])
    return goal_data(q, arr["action_mask"].astype(bool), arr["log_weights"], np.exp(arr["log_goal_prior"]),
                     arr["goal_change"], arr["goal_loglik"], weight=arr["weight"],
                     feasible=arr["feasible"].astype(bool), completed=arr["completed"].astype(np.int64),
                     valid=arr["valid"].astype(bool))


__all__ = [
    "GOAL_HAZARD", "GOAL_PARAMS", "GoalObs", "GoalData", "goal_data", "goal_observations", "GoalScan", "scan_goal", "filter_goal",
    "goal_trajectory_log_likelihood", "partner_goal_model", "partner_goal_model_explicit",
    "sample_goal_paths", "GoalFitConfig", "GoalFitError", "GoalFitData", "fit_goal", "goal_datasets",
    "goal_data_from_idata", "GOAL_FIT_ATTR", "GOAL_FIT_FORMAT", "goal_fit_file",
]
