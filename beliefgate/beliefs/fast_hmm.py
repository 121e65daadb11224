"""Fast batched log marginal likelihood of the sticky HMM (benchmark kernel).

The sticky HMM is the hazard model of ``docs/model.md`` with every skill feasible
and no completions inside the sequence:

    z_0 ~ pi0,    T = (1 - h) I + h 1 pi0^T,    p(a_t | z_t = k) = exp(log_em[t, k]).

Because ``T`` is "identity + rank one", the predict step is O(K):
``pred = (1 - h) b + h pi0`` for a normalised belief ``b``. The kernel computes
``log p(a_{0:T-1})`` for a batch of sequences with few operations per step, in
scaled probability space with explicit normalisation:

* the layout is time-major ``[T, K, B]``: the batch axis is contiguous and the sum
  over skills adds ``K`` contiguous rows;
* emissions are exponentiated once per element, vectorised over a block of
  ``chunk`` steps, *outside* the recurrence, after subtracting the per-step
  maximum over skills ``m[t, b] = max_k log_em[t, k, b]`` (so ``e <= 1`` and the
  best skill has ``e = 1``; ``m`` is added back at the end). Blocks keep the
  exponentiated buffer small (``chunk x K x B``, about 2 MiB by default, so it
  stays in a core's L2 cache) instead of a fresh ``T x K x B``
  array, whose allocation alone (page faults above glibc's 32 MiB mmap threshold)
  costs as much as the whole recurrence; ``chunk=None`` exponentiates everything
  at once;
* the normalisation is folded into the predict: with unnormalised ``alpha`` and
  ``s = sum_k alpha(k)`` (``alpha_{-1} = pi0``, ``s_{-1} = 1``),
  ``alpha_t = ((1 - h) / s_{t-1} * alpha_{t-1} + h pi0) * e_t``; each step is one
  sum over ``K``, one reciprocal per sequence and a multiply-add-multiply per
  element, with no max, exp or log inside the recurrence;
* ``log p = sum_t (log s_t + m_t)``: the ``s_t`` are collected per block and
  their logs taken vectorised after the block's recurrence.

Each ``alpha_t`` is the exactly normalised predicted belief times ``e_t``, so no
scale can drift; the result equals the exact log-space forward algorithm to
rounding (tested to 1e-6 in float64; ~1e-12 observed). Limitation: with
``hazard == 0`` a skill whose relative emission underflows to 0 (log-likelihood
ratio below about -745 in float64) keeps probability exactly 0, where log space
would keep a tiny value.
"""

from __future__ import annotations

from functools import partial
from typing import Union

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from beliefgate.beliefs.errors import (
    InvalidParameterError,
    NonFiniteLoglikError,
    ShapeMismatchError,
)


_AUTO_BLOCK_BYTES = 2 << 20


def _recurrence(alpha, em, stay, redraw, unroll, axis):
    """Scan ``alpha_t = ((1-h)/s_{t-1} alpha_{t-1} + h pi0) e_t`` over the leading axis of ``em``.

    ``axis`` is the skill axis of ``alpha``. Returns ``(alpha, s [C, B])``.
    """

    def step(alpha, em_t):
        total = jnp.sum(alpha, axis=axis)  # s_{t-1} [B]
        scale = jnp.expand_dims(stay / total, axis)
        return (alpha * scale + redraw) * em_t, total

    return lax.scan(step, alpha, em, unroll=unroll)


def _block_tkb(alpha, block, stay, redraw, unroll):
    """One block ``[C, K, B]``; alpha ``[K, B]``. Returns (alpha, sum_t log s_t + m_t)."""
    shift = jnp.max(block, axis=1)  # [C, B]
    em = jnp.exp(block - shift[:, None, :])  # [C, K, B], max over K is 1
    alpha, totals = _recurrence(alpha, em, stay, redraw[:, None], unroll, axis=0)
    return alpha, jnp.sum(jnp.log(totals), axis=0) + jnp.sum(shift, axis=0)


def _block_btk(alpha, block, stay, redraw, unroll):
    """One block ``[B, C, K]``; alpha ``[B, K]``. Returns (alpha, sum_t log s_t + m_t)."""
    shift = jnp.max(block, axis=2)  # [B, C]
    em = jnp.exp(block - shift[:, :, None])  # [B, C, K]
    em = jnp.transpose(em, (1, 0, 2))  # [C, B, K]: moves whole K-rows, small block
    alpha, totals = _recurrence(alpha, em, stay, redraw[None, :], unroll, axis=1)
    return alpha, jnp.sum(jnp.log(totals), axis=0) + jnp.sum(shift, axis=1)


def _run(log_em, pi0, hazard, chunk, unroll, layout):
    """Shared driver: blocks of ``chunk`` steps along the time axis of ``log_em``."""
    if layout == "tkb":
        num_steps, num_skills, batch = log_em.shape
        time_axis, block_fn = 0, _block_tkb
        alpha = jnp.broadcast_to(pi0[:, None], (num_skills, batch))
        skill_axis = 0
    else:
        batch, num_steps, num_skills = log_em.shape
        time_axis, block_fn = 1, _block_btk
        alpha = jnp.broadcast_to(pi0[None, :], (batch, num_skills))
        skill_axis = 1
    alpha = alpha.astype(log_em.dtype)
    if chunk == "auto":  # a block of about 2 MiB stays near a core (L2 is 2 MiB here)
        step_bytes = num_skills * batch * log_em.dtype.itemsize
        chunk = int(np.clip(_AUTO_BLOCK_BYTES // step_bytes, 4, 64))
    chunk = num_steps if chunk is None else min(int(chunk), num_steps)
    stay = 1.0 - hazard
    redraw = hazard * pi0
    num_blocks = num_steps // chunk

    def outer(alpha, i):
        block = lax.dynamic_slice_in_dim(log_em, i * chunk, chunk, axis=time_axis)
        return block_fn(alpha, block, stay, redraw, unroll)

    alpha, parts = lax.scan(outer, alpha, jnp.arange(num_blocks))
    total = jnp.sum(parts, axis=0)
    rest = num_steps - num_blocks * chunk
    if rest:
        block = lax.slice_in_dim(log_em, num_blocks * chunk, num_steps, axis=time_axis)
        alpha, tail = block_fn(alpha, block, stay, redraw, unroll)
        total = total + tail
    return total + jnp.log(jnp.sum(alpha, axis=skill_axis))


@partial(jax.jit, static_argnames=("chunk", "unroll"))
def sticky_log_marginal_tkb(log_em, pi0, hazard, chunk: Union[int, str, None] = "auto",
                            unroll: int = 1):
    """``log p(a_{0:T-1})`` [B] from time-major log emissions ``log_em`` [T, K, B].

    ``pi0`` [K] (normalised initial/redraw distribution), ``hazard`` scalar in
    [0, 1]. ``chunk`` steps are exponentiated together (``None``: all ``T``;
    ``"auto"``: blocks of about 2 MiB, 4 to 64 steps).
    Raw jitted kernel: no validation (see :func:`log_marginal`).
    """
    return _run(log_em, pi0, hazard, chunk, unroll, "tkb")


@partial(jax.jit, static_argnames=("chunk", "unroll"))
def sticky_log_marginal(log_em, pi0, hazard, chunk: Union[int, str, None] = "auto",
                        unroll: int = 1):
    """Same as :func:`sticky_log_marginal_tkb` for batch-major ``log_em`` [B, T, K].

    Works in ``[B, K]`` layout per step (the sum over skills is then a row
    reduction, slower for small ``K``); each exponentiated block is reordered to
    ``[chunk, B, K]`` so no full-size transposed copy is made. Time-major
    producers should prefer the ``_tkb`` kernel.
    """
    return _run(log_em, pi0, hazard, chunk, unroll, "btk")


def log_marginal(log_em, pi0, hazard, *, layout: str = "btk",
                 chunk: Union[int, str, None] = "auto"):
    """Validated entry point: batched sticky-HMM log marginal likelihoods [B].

    ``log_em`` is ``[B, T, K]`` (``layout="btk"``) or ``[T, K, B]`` (``"tkb"``),
    finite or ``-inf`` (not NaN/``+inf``); ``pi0`` [K] non-negative and summing to
    one; ``hazard`` in [0, 1]. Raises :class:`BeliefInputError` subclasses.
    """
    if layout not in ("btk", "tkb"):
        raise InvalidParameterError(f"layout must be 'btk' or 'tkb', got {layout!r}")
    em = np.asarray(log_em)
    if em.ndim != 3 or 0 in em.shape or not np.issubdtype(em.dtype, np.floating):
        raise ShapeMismatchError(f"log_em must be a float array [{layout.upper()}], got {em.shape}")
    if np.any(np.isnan(em) | (em == np.inf)):
        raise NonFiniteLoglikError("log_em must not contain NaN or +inf")
    skill_axis = 2 if layout == "btk" else 1
    if not np.all(np.any(np.isfinite(em), axis=skill_axis)):
        raise NonFiniteLoglikError("every step needs a finite log emission for some skill")
    num_skills = em.shape[skill_axis]
    p = np.asarray(pi0, float)
    if p.shape != (num_skills,) or np.any(p < 0) or not np.isclose(p.sum(), 1.0, atol=1e-9):
        raise InvalidParameterError(f"pi0 must be a distribution over {num_skills} skills")
    h = float(hazard)
    if not 0.0 <= h <= 1.0:
        raise InvalidParameterError(f"hazard must lie in [0, 1], got {hazard!r}")
    kernel = sticky_log_marginal if layout == "btk" else sticky_log_marginal_tkb
    em_j = jnp.asarray(em)
    return kernel(em_j, jnp.asarray(p, em_j.dtype), jnp.asarray(h, em_j.dtype), chunk=chunk)


__all__ = ["sticky_log_marginal_tkb", "sticky_log_marginal", "log_marginal"]
