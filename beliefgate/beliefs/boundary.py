"""The JAX filter's boundary: parameter and observation checks and the offline forward filter.

:func:`observations` validates a trajectory (or a padded batch) once and packages it;
:func:`check_params` validates a :class:`~beliefgate.models.hmm.FilterParams`; :func:`filter`
runs the validated forward filter of one trajectory and refuses, naming the step, an
observation that has probability zero. :mod:`beliefgate.beliefs.filter` (the public filter
API, which re-exports these) and :mod:`beliefgate.beliefs.offline` (smoothing, Viterbi) both
build on this module, so neither imports the other's internals.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from beliefgate.beliefs.checks import as_array, as_bool as _as_bool
from beliefgate.beliefs.errors import (
    CompletedIndexError,
    ImpossibleObservationError,
    InvalidParameterError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
)
from beliefgate.models.hmm import FilterParams, FilterResult, Observations, scan_filter
from beliefgate.models.transitions import get_transition


def _number(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise InvalidParameterError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} must be a number, got {value!r}") from None


def check_params(params: FilterParams) -> FilterParams:
    if not isinstance(params, FilterParams):
        raise InvalidParameterError(f"expected FilterParams, got {type(params).__name__}")
    get_transition(params.model)  # InvalidParameterError naming an unknown model
    hazard, alpha = (_number(params.hazard, "hazard"), _number(params.alpha, "alpha"))
    if not (math.isfinite(hazard) and 0.0 <= hazard <= 1.0):
        raise InvalidParameterError(f"hazard must lie in [0, 1], got {params.hazard!r}")
    if not (math.isfinite(alpha) and alpha > 0.0):
        raise InvalidParameterError(f"alpha must be a finite number > 0, got {params.alpha!r}")
    window = params.window
    if window is not None and window != math.inf:
        if isinstance(window, bool) or int(window) != window or window < 1:
            raise InvalidParameterError(f"window must be an integer >= 1 or None, got {window!r}")
        window = int(window)
    else:
        window = None
    return FilterParams(params.model, hazard, alpha, window)


def check_loglik(loglik: np.ndarray, where: np.ndarray, what: str = "loglik") -> None:
    bad = (np.isnan(loglik) | (loglik == np.inf)) & where
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise NonFiniteLoglikError(
            f"{what} must not contain NaN or +inf (first bad entry at index {idx}: "
            f"{loglik[idx]!r}); use -inf for probability zero")


def check_completed(completed: np.ndarray, num_skills: int, where: np.ndarray) -> None:
    if not np.issubdtype(completed.dtype, np.integer):
        raise CompletedIndexError(f"completed must hold integers, got dtype {completed.dtype}")
    bad = ((completed < -1) | (completed >= num_skills)) & where
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CompletedIndexError(
            f"completed must lie in [-1, {num_skills}) (-1 = none); got {completed[idx]} at {idx}")




def _float_dtype(x: np.ndarray):
    """The JAX float dtype an array becomes (float64 only when x64 is enabled)."""
    src = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    return jax.dtypes.canonicalize_dtype(src)


def observations(loglik, feasible=None, completed=None, valid=None, prior_counts=None,
                 *, batched: Optional[bool] = None) -> Observations:
    """Validate and package a trajectory (``[T, K]``) or a padded batch (``[B, T, K]``).

    Defaults: all skills feasible, no completions, all steps valid, zero prior
    counts. Raises :class:`ShapeMismatchError`, :class:`NonFiniteLoglikError`,
    :class:`NoFeasibleSkillError` or :class:`CompletedIndexError` with the first
    offending index. Returns JAX arrays (float dtype follows JAX's x64 setting).
    """
    ll = as_array(loglik, "loglik")
    if not np.issubdtype(ll.dtype, np.number) or np.iscomplexobj(ll):  # complex: as the gate refuses it
        raise ShapeMismatchError(f"loglik must be real numbers, got dtype {ll.dtype}")
    if batched is None:
        batched = ll.ndim == 3
    want = 3 if batched else 2
    if ll.ndim != want or ll.shape[-1] < 1 or ll.shape[-2] < 1:
        raise ShapeMismatchError(
            f"loglik must have shape {'[B, T, K]' if batched else '[T, K]'} with T, K >= 1, "
            f"got {ll.shape}")
    lead, num_skills = ll.shape[:-1], ll.shape[-1]
    valid_np = np.ones(lead, bool) if valid is None else _as_bool(valid, "valid")
    if valid_np.shape != lead:
        raise ShapeMismatchError(f"valid must have shape {lead}, got {valid_np.shape}")
    check_loglik(ll, valid_np[..., None])
    feas = np.ones(ll.shape, bool) if feasible is None else _as_bool(feasible, "feasible")
    if feas.shape != ll.shape:
        raise ShapeMismatchError(f"feasible must have shape {ll.shape}, got {feas.shape}")
    none_ok = ~np.any(feas, axis=-1) & valid_np
    if np.any(none_ok):
        idx = tuple(int(i) for i in np.argwhere(none_ok)[0])
        raise NoFeasibleSkillError(f"no skill is feasible at step index {idx}")
    comp = np.full(lead, -1, np.int32) if completed is None else as_array(completed, "completed")
    if comp.shape != lead:
        raise ShapeMismatchError(f"completed must have shape {lead}, got {comp.shape}")
    check_completed(comp, num_skills, valid_np)
    counts_shape = lead[:-1] + (num_skills,)
    counts = np.zeros(counts_shape) if prior_counts is None else as_array(prior_counts, "prior_counts", float)
    if counts.shape != counts_shape:
        raise ShapeMismatchError(f"prior_counts must have shape {counts_shape}, got {counts.shape}")
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise InvalidParameterError("prior_counts must be finite and >= 0")
    fdt = _float_dtype(ll)
    return Observations(
        loglik=jnp.asarray(ll, fdt),
        feasible=jnp.asarray(feas),
        completed=jnp.asarray(np.where(valid_np, comp, -1), jnp.int32),
        valid=jnp.asarray(valid_np),
        prior_counts=jnp.asarray(counts, fdt),
    )



@partial(jax.jit, static_argnames=("model", "window"))
def _filter_jit(model, window, hazard, alpha, obs):
    params = FilterParams(model, hazard, alpha, window)
    return filter_result(params, obs)



def filter_result(params, obs):
    state, info = scan_filter(params, obs)
    return FilterResult(info.log_posterior, info.log_predicted, info.log_normalizer,
                        state.log_marginal, state)


def numbers(params: FilterParams, dtype):
    # NumPy 0-d arrays (not jnp.asarray: ~80 us each) with a fixed dtype, so the jit
    # cache key never changes with the values.
    dtype = np.dtype(dtype)
    return np.asarray(params.hazard, dtype), np.asarray(params.alpha, dtype)



def filter(params: FilterParams, obs) -> FilterResult:  # noqa: A001 - public name by contract
    """Offline forward filter of one trajectory (``jit`` around ``lax.scan``).

    ``obs`` is an :class:`Observations` with ``[T, ...]`` arrays (build it with
    :func:`observations`), or a bare ``loglik`` array [T, K] (all feasible, no
    completions). Returns a :class:`FilterResult`.
    """
    params = check_params(params)
    if not isinstance(obs, Observations):
        obs = observations(obs, batched=False)
    elif obs.loglik.ndim != 2:
        raise ShapeMismatchError(f"filter expects [T, K] arrays, got loglik {obs.loglik.shape}; "
                                 "use filter_batch for [B, T, K]")
    hazard, alpha = numbers(params, obs.loglik.dtype)
    return refuse_impossible(_filter_jit(params.model, params.window, hazard, alpha, obs))


def refuse_impossible(result):
    """``result``, or :class:`ImpossibleObservationError` naming the first step (and row) whose
    observation has probability zero under every skill the model allows: there the posterior
    is 0/0 (NaN) and the log marginal -inf, as :func:`update` and the online gate refuse."""
    ln = np.asarray(result.log_normalizer)
    bad = ~np.isfinite(ln)
    if bad.any():
        where = np.argwhere(bad)[0]
        at = f"step {where[-1]}" + (f" of row {where[0]}" if ln.ndim == 2 else "")
        raise ImpossibleObservationError(
            f"the observation at {at} has probability zero under every skill the model allows (all feasible "
            "skills with predicted mass have loglik = -inf): the filter has no posterior there")
    return result



__all__ = ["filter_result", "check_params", "numbers", "check_loglik", "check_completed", "observations", "filter",
           "refuse_impossible"]
