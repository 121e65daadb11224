"""The NumPyro partner-skill model of ``docs/model.md`` (domain-agnostic).

The model is composed from parts:

* **parameters** - :mod:`beliefgate.models.params` (priors and supports as data);
* **skill prior** - ``pi0(k) ∝ n(k) + alpha`` from smoothed completion counts
  (:func:`beliefgate.models.hmm.log_smoothed_prior`);
* **transition** - sticky with hazard ``h``, forced switch after a visible
  completion, renormalised over feasible skills
  (:func:`beliefgate.models.hmm.hazard_log_transition`);
* **likelihood controller** - ``log pi_hat(a | s_t, k)`` from per-skill action
  values ``Q[t, k, a]`` (default :func:`boltzmann_logprobs_jax`; any function
  ``(q, beta, epsilon) -> logprobs`` can be passed as ``controller=``), reduced to
  the tempered ``loglik[t, k] = w_t log sum_{a in M_t} pi_hat(a | s_t, k)``.

Two forms of the same joint density:

:func:`partner_skill_model`
    ``z`` summed out by the forward algorithm (the *same* scan as the online
    filter, :func:`beliefgate.models.hmm.scan_filter`), one
    ``numpyro.factor`` per batch and a ``numpyro.deterministic("log_lik", [B])``
    site with each trajectory's log marginal likelihood (for LOO/WAIC). Use it for
    NUTS/SVI; pin parameters with ``fixed=`` or ``numpyro.handlers.substitute``.
:func:`partner_skill_model_explicit`
    ``z_t`` as discrete sample sites ``"z_0", "z_1", ...`` (one trajectory,
    Python loop), so the log density of a given path is
    ``numpyro.infer.util.log_density`` under ``numpyro.handlers.condition``; used
    by the brute-force tests.

:func:`prior_predictive` samples skill paths and (untempered) actions for a fixed
state sequence.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Mapping, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax import lax
from jax.nn import logsumexp

from beliefgate.models.checks import as_bool as _bool
from beliefgate.models.errors import (
    CompletedIndexError,
    InvalidParameterError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
)
from beliefgate.models.hmm import (
    FilterParams,
    Observations,
    hazard_log_transition,
    log_smoothed_prior,
    scan_filter,
)
from beliefgate.models import components as _C
from beliefgate.models.controllers.boltzmann import boltzmann_logprobs_jax
from beliefgate.models.params import PARAMS, ParamSpec, check_values, sample_params
from beliefgate.models.transitions import MODELS, TRANSITIONS, unused_params

Controller = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]


class SkillData(NamedTuple):
    """Observed data of one trajectory (``[T, ...]``) or a padded batch (``[B, T, ...]``).

    Fields
    ------
    q : float[..., T, K, A]
        Per-skill action values ``Q[t, k, a]`` from the domain (``-inf`` marks an
        impossible action; every row needs one finite value).
    action_mask : bool[..., T, A]
        Actions consistent with the observed change ``s_t -> s_{t+1}``.
    weight : float[..., T]
        Tempering weight ``w_t >= 0`` (0 excludes the step, e.g. STAY).
    feasible : bool[..., T, K]
        Skill preconditions in ``s_t`` (at least one True at each valid step).
    completed : int32[..., T]
        Skill visibly completed by ``a_t`` (-1 none).
    prior_counts : float[..., K]
        Completion counts remembered from earlier episodes (>= 0).
    valid : bool[..., T]
        False on padding steps (they contribute nothing).
    """

    q: jax.Array
    action_mask: jax.Array
    weight: jax.Array
    feasible: jax.Array
    completed: jax.Array
    prior_counts: jax.Array
    valid: jax.Array


# --------------------------------------------------------------------------------------
# Data boundary
# --------------------------------------------------------------------------------------




def _first(mask: np.ndarray) -> tuple:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def skill_data(q, action_mask, weight=None, feasible=None, completed=None,
               prior_counts=None, valid=None) -> SkillData:
    """Validate and package :class:`SkillData`; batched when ``q`` has 4 axes.

    Defaults: weight 1, all skills feasible, no completions, zero prior counts,
    all steps valid. Raises subclasses of
    :class:`beliefgate.beliefs.errors.BeliefInputError` naming the first bad index.
    """
    q = np.asarray(q)
    if q.ndim not in (3, 4) or not np.issubdtype(q.dtype, np.number) or 0 in q.shape:
        raise ShapeMismatchError(f"q must be numeric [T, K, A] or [B, T, K, A], got {q.shape}")
    lead, (num_skills, num_actions) = q.shape[:-2], q.shape[-2:]
    valid_np = np.ones(lead, bool) if valid is None else _bool(valid, "valid")
    if valid_np.shape != lead:
        raise ShapeMismatchError(f"valid must have shape {lead}, got {valid_np.shape}")
    bad = (np.isnan(q) | (q == np.inf)) & valid_np[..., None, None]
    if np.any(bad):
        raise NonFiniteLoglikError(f"q must not contain NaN or +inf (first at {_first(bad)})")
    no_finite = ~np.any(np.isfinite(q), axis=-1) & valid_np[..., None]
    if np.any(no_finite):
        raise NonFiniteLoglikError(
            f"every Q row needs at least one finite action value (first empty row at "
            f"{_first(no_finite)})")
    mask = _bool(action_mask, "action_mask")
    if mask.shape != lead + (num_actions,):
        raise ShapeMismatchError(
            f"action_mask must have shape {lead + (num_actions,)}, got {mask.shape}")
    w = np.ones(lead) if weight is None else np.asarray(weight, float)
    if w.shape != lead:
        raise ShapeMismatchError(f"weight must have shape {lead}, got {w.shape}")
    if np.any(~np.isfinite(w) | (w < 0)):
        raise InvalidParameterError("weight must be finite and >= 0")
    empty = ~np.any(mask, axis=-1) & (w > 0) & valid_np
    if np.any(empty):
        raise ShapeMismatchError(
            f"action_mask selects no action at a weighted step (first at {_first(empty)}); "
            "give weight 0 to steps with no consistent action")
    feas = np.ones(lead + (num_skills,), bool) if feasible is None else _bool(feasible, "feasible")
    if feas.shape != lead + (num_skills,):
        raise ShapeMismatchError(
            f"feasible must have shape {lead + (num_skills,)}, got {feas.shape}")
    none_ok = ~np.any(feas, axis=-1) & valid_np
    if np.any(none_ok):
        raise NoFeasibleSkillError(f"no skill is feasible at step index {_first(none_ok)}")
    comp = np.full(lead, -1) if completed is None else np.asarray(completed)
    if comp.shape != lead or not np.issubdtype(comp.dtype, np.integer):
        raise CompletedIndexError(f"completed must be integers of shape {lead}, got "
                                  f"{comp.shape} {comp.dtype}")
    out_of_range = ((comp < -1) | (comp >= num_skills)) & valid_np
    if np.any(out_of_range):
        raise CompletedIndexError(
            f"completed must lie in [-1, {num_skills}); got {comp[_first(out_of_range)]} at "
            f"{_first(out_of_range)}")
    counts_shape = lead[:-1] + (num_skills,)
    counts = np.zeros(counts_shape) if prior_counts is None else np.asarray(prior_counts, float)
    if counts.shape != counts_shape:
        raise ShapeMismatchError(f"prior_counts must have shape {counts_shape}, got {counts.shape}")
    if np.any(~np.isfinite(counts) | (counts < 0)):
        raise InvalidParameterError("prior_counts must be finite and >= 0")
    fdt = jax.dtypes.canonicalize_dtype(q.dtype if np.issubdtype(q.dtype, np.floating)
                                        else np.float64)
    keep = valid_np[..., None, None]
    return SkillData(
        q=jnp.asarray(np.where(keep, q, 0.0), fdt),
        action_mask=jnp.asarray(mask | ~valid_np[..., None]),
        weight=jnp.asarray(np.where(valid_np, w, 0.0), fdt),
        feasible=jnp.asarray(feas | ~valid_np[..., None]),
        completed=jnp.asarray(np.where(valid_np, comp, -1), jnp.int32),
        prior_counts=jnp.asarray(counts, fdt),
        valid=jnp.asarray(valid_np),
    )


# --------------------------------------------------------------------------------------
# Parts (traceable)
# --------------------------------------------------------------------------------------


def controller_loglik(data: SkillData, beta, epsilon,
                      controller: Controller = boltzmann_logprobs_jax) -> jax.Array:
    """Tempered ``loglik[..., t, k] = w_t log sum_{a in M_t} pi_hat(a | s_t, k)``.

    Steps with weight 0 or ``valid == False`` give exactly 0 (no NaN from
    ``0 * -inf``: the masked value is replaced before the product).
    """
    logp = controller(data.q, beta, epsilon)  # [..., T, K, A]
    masked = jnp.where(data.action_mask[..., None, :], logp, -jnp.inf)
    used = (data.weight > 0) & data.valid & jnp.any(data.action_mask, axis=-1)
    ll = logsumexp(jnp.where(used[..., None, None], masked, 0.0), axis=-1)
    return jnp.where(used[..., None], data.weight[..., None] * ll, 0.0)


def action_logprobs(data: SkillData, beta, epsilon,
                    controller: Controller = boltzmann_logprobs_jax) -> jax.Array:
    """Untempered ``log pi_hat(a | s_t, k)`` [..., T, K, A]."""
    return controller(data.q, beta, epsilon)


def to_observations(data: SkillData, loglik: jax.Array) -> Observations:
    """Package a loglik tensor with the data's feasibility/completions for the filter."""
    return Observations(loglik, data.feasible, data.completed, data.valid, data.prior_counts)


MIN_HAZARD = _C.MIN_HAZARD


def filter_params(model: str, values: Mapping[str, jax.Array], window: Optional[int] = None) -> FilterParams:
    """The filter's :class:`FilterParams` at parameter ``values`` for ``model``
    (the transition component's ``filter_fields``: the hazard model's ``h`` floored at
    :data:`MIN_HAZARD`; the windowed model has no hazard)."""
    if model not in TRANSITIONS:
        raise InvalidParameterError(f"model must be {' or '.join(map(repr, MODELS))}, got {model!r}")
    hazard, window = TRANSITIONS[model].filter_fields(jnp, values, window)
    return FilterParams(model, hazard, values["alpha"], window)


def trajectory_log_likelihood(data, values: Mapping[str, jax.Array],
                              controller: Controller = boltzmann_logprobs_jax, *,
                              model: str = "hazard", window: Optional[int] = None,
                              loglik: Optional[jax.Array] = None) -> jax.Array:
    """Traceable ``log p(a_{0:T-1} | theta)`` with ``z`` summed out; ``[B]`` or scalar.

    ``values`` holds ``beta, epsilon, alpha`` (and ``hazard`` for the hazard model).
    The per-step rows are ``controller_loglik(data, ...)`` unless ``loglik`` [..., T, K]
    is given (a caller with a faster form of the same rows, e.g. the fit's sufficient
    statistics); ``data`` then only needs ``feasible``, ``completed``, ``valid`` and
    ``prior_counts``. Uses the online filter's scan, so the model and the filter
    cannot drift apart.
    """
    if loglik is None:
        loglik = controller_loglik(data, values["beta"], values["epsilon"], controller)
    params = filter_params(model, values, window)
    obs = to_observations(data, loglik)

    def one(o):
        return scan_filter(params, o)[0].log_marginal

    if loglik.ndim == 3:
        return jax.vmap(one)(obs)
    return one(obs)


# --------------------------------------------------------------------------------------
# NumPyro models
# --------------------------------------------------------------------------------------


def model_param_specs(specs: tuple[ParamSpec, ...] = PARAMS, model: str = "hazard",
                      per_skill_beta: bool = False) -> tuple[ParamSpec, ...]:
    """The scalar parameters of ``specs`` the model samples or fixes: no ``hazard`` in the
    windowed model (nor any transition parameter the model's component lacks,
    :func:`~beliefgate.models.transitions.unused_params`), no scalar ``beta`` when it is per skill (a ``skill`` plate instead)."""
    drop = ({"beta"} if per_skill_beta else set()) | set(unused_params(model))
    return tuple(s for s in specs if s.name not in drop)


def sample_model_params(specs: tuple[ParamSpec, ...] = PARAMS, fixed: Optional[Mapping[str, float]] = None, *,
                        num_skills: int = 0, model: str = "hazard", per_skill_beta: bool = False,
                        fit_weight: bool = False) -> dict:
    """Inside the model: the parameter sites. ``per_skill_beta``: ``beta`` ``[K]`` under a
    ``skill`` plate; ``fit_weight``: ``ambiguous_weight ~ Beta(2, 2)`` (unless fixed); the
    windowed model has no ``hazard``."""
    from beliefgate.models.params import BETA

    fixed = dict(fixed or {})
    weight = fixed.pop("ambiguous_weight", None)
    values = sample_params(model_param_specs(specs, model, per_skill_beta), fixed)
    if per_skill_beta:
        with numpyro.plate("skill", num_skills):
            values["beta"] = numpyro.sample("beta", BETA.prior())
    if fit_weight:
        values["ambiguous_weight"] = (jnp.asarray(weight) if weight is not None
                                      else numpyro.sample("ambiguous_weight", dist.Beta(2.0, 2.0)))
    return values


def partner_skill_model(data, fixed: Optional[Mapping[str, float]] = None,
                        specs: tuple[ParamSpec, ...] = PARAMS,
                        controller: Controller = boltzmann_logprobs_jax, *,
                        model: str = "hazard", window: Optional[int] = None,
                        per_skill_beta: bool = False, fit_weight: bool = False,
                        log_lik_fn: Optional[Callable[[Mapping[str, jax.Array]], jax.Array]] = None) -> None:
    """Marginalised partner-skill model (for NUTS/SVI), one trajectory or a padded batch:
    the one NumPyro model of the project (``beliefgate fit`` runs it too).

    Sites: one sample site per non-fixed parameter (:func:`sample_model_params`);
    ``"log_lik"`` (deterministic, ``[B]`` or scalar) = each trajectory's log marginal
    likelihood; ``"obs"`` (factor) = their sum. Options: ``model="windowed"`` (the
    paper's filter; its likelihood is the product of the filter's one-step predictive
    probabilities), ``per_skill_beta``, ``fit_weight`` (see ``docs/fit.md``).
    ``log_lik_fn(values) -> [B]``: a caller's faster evaluation of the same
    :func:`trajectory_log_likelihood` (the fit passes its sufficient-statistic form,
    tested equal); default: ``trajectory_log_likelihood(data, values, controller)``.
    """
    values = sample_model_params(specs, fixed, num_skills=data.feasible.shape[-1], model=model,
                                 per_skill_beta=per_skill_beta, fit_weight=fit_weight)
    if log_lik_fn is None:
        log_lik = trajectory_log_likelihood(data, values, controller, model=model, window=window)
    else:
        log_lik = log_lik_fn(values)
    numpyro.deterministic("log_lik", log_lik)
    numpyro.factor("obs", jnp.sum(log_lik))


def partner_skill_model_explicit(data: SkillData, fixed: Optional[Mapping[str, float]] = None,
                                 specs: tuple[ParamSpec, ...] = PARAMS,
                                 controller: Controller = boltzmann_logprobs_jax) -> None:
    """Explicit discrete-latent model for one trajectory (``[T, ...]`` data).

    Sites: parameters as in :func:`partner_skill_model`; for each valid step ``t``
    ``"z_{t}"`` ~ Categorical(row ``z_{t-1}`` of the step's transition matrix) and
    a factor ``"a_{t}"`` = ``loglik[t, z_t]``. ``data.valid`` must be concrete
    (padding steps create no site). Meant for small problems and tests.
    """
    if data.q.ndim != 3:
        raise ShapeMismatchError(
            f"the explicit model takes one trajectory [T, K, A], got {data.q.shape}")
    values = sample_params(specs, fixed)
    loglik = controller_loglik(data, values["beta"], values["epsilon"], controller)
    valid = np.asarray(data.valid)
    counts = data.prior_counts
    reset = jnp.asarray(True)
    z_prev = jnp.asarray(0)
    for t in range(loglik.shape[0]):
        if not valid[t]:
            continue
        log_pi0 = log_smoothed_prior(counts, values["alpha"])
        mat = hazard_log_transition(log_pi0, data.feasible[t], values["hazard"], reset)
        z = numpyro.sample(f"z_{t}", dist.Categorical(probs=jnp.exp(mat[z_prev])))
        numpyro.factor(f"a_{t}", loglik[t, z])
        counts, reset = _C.book_completion(jnp, counts, reset, data.completed[t])
        z_prev = z


# --------------------------------------------------------------------------------------
# Prior predictive
# --------------------------------------------------------------------------------------


def _sample_path(key, logp, data: SkillData, values):
    """One path: ``(z [T], a [T])``; padding steps repeat ``z`` and give ``a = -1``."""
    num_steps = logp.shape[0]

    def body(carry, xs):
        counts, reset, z_prev = carry
        key_t, logp_t, feasible, completed, valid = xs
        log_pi0 = log_smoothed_prior(counts, values["alpha"])
        mat = hazard_log_transition(log_pi0, feasible | ~valid, values["hazard"], reset)
        key_z, key_a = jax.random.split(key_t)
        z = jax.random.categorical(key_z, mat[z_prev])
        a = jax.random.categorical(key_a, logp_t[z])
        z = jnp.where(valid, z, z_prev).astype(jnp.int32)
        a = jnp.where(valid, a, -1).astype(jnp.int32)
        counts, reset = _C.book_completion(jnp, counts, reset, completed, valid)
        return (counts, reset, z), (z, a)

    keys = jax.random.split(key, num_steps)
    carry = (data.prior_counts, jnp.asarray(True), jnp.asarray(0, jnp.int32))
    xs = (keys, logp, data.feasible, data.completed, data.valid)
    _, (z, a) = lax.scan(body, carry, xs)
    return z, a


def prior_predictive(rng_key, data: SkillData, params: Optional[Mapping[str, float]] = None,
                     num_samples: int = 1,
                     controller: Controller = boltzmann_logprobs_jax) -> dict[str, jax.Array]:
    """Sample skill paths and actions given a fixed state sequence.

    ``data`` supplies ``q`` (hence ``pi_hat``), feasibility, completions and
    ``prior_counts`` of one trajectory (``[T, ...]``); ``params`` pins ``beta,
    epsilon, hazard, alpha`` (defaults for missing ones). Actions are drawn from the
    untempered ``Categorical(pi_hat(. | s_t, z_t))`` (weights and action masks are
    ignored). Completions are taken from ``data``, not simulated. Returns
    ``{"z": int32[S, T], "a": int32[S, T]}``.
    """
    if data.q.ndim != 3:
        raise ShapeMismatchError(
            f"prior_predictive takes one trajectory [T, K, A], got {data.q.shape}")
    if int(num_samples) != num_samples or num_samples < 1:
        raise InvalidParameterError(f"num_samples must be an integer >= 1, got {num_samples!r}")
    values = {k: np.asarray(v, data.q.dtype) for k, v in check_values(params or {}).items()}
    keys = jax.random.split(rng_key, int(num_samples))
    z, a = _sample_paths(keys, data, values, controller)
    return {"z": z, "a": a}


@partial(jax.jit, static_argnames=("controller",))
def _sample_paths(keys, data: SkillData, values, controller: Controller):
    """Jitted once per shape: ``num_samples`` paths ``(z [S, T], a [S, T])``."""
    logp = action_logprobs(data, values["beta"], values["epsilon"], controller)
    return jax.vmap(lambda key: _sample_path(key, logp, data, values))(keys)


def pointwise_log_likelihood(samples: Mapping[str, jax.Array], data: SkillData,
                             fixed: Optional[Mapping[str, float]] = None,
                             specs: tuple[ParamSpec, ...] = PARAMS,
                             controller: Controller = boltzmann_logprobs_jax) -> jax.Array:
    """Per-draw, per-trajectory log likelihood ``[S, B]`` for LOO/WAIC.

    ``samples`` maps parameter names to ``[S]`` posterior draws (as returned by
    ``MCMC.get_samples()``); parameters absent from ``samples`` come from ``fixed``
    or their spec default. Equivalent to the ``"log_lik"`` deterministic site.
    """
    fixed = dict(fixed or {})
    drawn = {s.name: jnp.asarray(samples[s.name]) for s in specs if s.name in samples}
    if not drawn:
        raise InvalidParameterError("samples holds none of the model's parameters")
    constants = {s.name: jnp.asarray(fixed.get(s.name, s.default)) for s in specs
                 if s.name not in drawn}

    out = _pointwise(drawn, constants, data, controller)
    return out if out.ndim == 2 else out[:, None]


@partial(jax.jit, static_argnames=("controller",))
def _pointwise(drawn, constants, data: SkillData, controller: Controller):
    """Jitted once per shape: ``trajectory_log_likelihood`` vmapped over draws."""
    return jax.vmap(lambda draw: trajectory_log_likelihood(
        data, {**constants, **draw}, controller))(drawn)


__all__ = [
    "SkillData",
    "skill_data",
    "controller_loglik",
    "action_logprobs",
    "to_observations",
    "trajectory_log_likelihood",
    "partner_skill_model",
    "sample_model_params",
    "model_param_specs",
    "filter_params",
    "MIN_HAZARD",
    "partner_skill_model_explicit",
    "prior_predictive",
    "pointwise_log_likelihood",
]
