"""The windowed (segment-product) transition of BayesBelief Eq. 6-8 (``docs/model.md``).

Within a segment (from the episode start or the last visible completion) the belief is
``b(k) ∝ pi0_seg(k) feasible(k) exp(sum of the last W observed loglik rows)``; a row that
is identically zero (tempering weight 0) enters no slot. It has no transition matrix, so
smoothing and Viterbi refuse it. Its two pieces are written once over an array namespace
``xp`` (``numpy`` or ``jax.numpy``):

* :func:`window_push` -- the segment book-keeping (ring of the last ``W`` rows, eviction,
  restart);
* :func:`segment_log_predict` -- the predicted belief from the kept rows, in log space.

The NumPy online gate and the JAX filter both call them through :data:`WINDOWED`.
"""

from __future__ import annotations

import math

import numpy as np

from beliefgate.models.errors import ImpossibleObservationError
from beliefgate.models.forward import condition
from beliefgate.models.transitions.hazard import forced_switch, hazard_constants

_INF = math.inf
#: |maximum| below which the NumPy segment predict exponentiates without shifting (as
#: :func:`beliefgate.models.forward.condition`), and the sum below which it shifts after all.
_SAFE_EXP = 600.0
_TINY = 1e-280


def _pick(xp, cond, a, b):
    """``a if cond else b``: a Python branch for a Python bool (the NumPy online step), else
    ``xp.where`` (traced flags)."""
    if cond is True:  # identity tests: no builtin call on the online step
        return a
    if cond is False:
        return b
    return xp.where(cond, a, b)


def _with_row(buf, pos, row):
    """``buf`` with row ``pos`` replaced by ``row`` (a new array; ``buf`` is not modified)."""
    if buf.__class__ is not np.ndarray:  # a JAX array: functional update
        return buf.at[pos].set(row)
    out = buf.copy()
    out[pos] = row
    return out


def _put_row(fresh, pos, row):
    """:func:`_with_row` on an array the caller has just made (``fresh``): a NumPy one is written in
    place (no second copy), a JAX one updated functionally."""
    if fresh.__class__ is not np.ndarray:
        return fresh.at[pos].set(row)
    fresh[pos] = row
    return fresh


_add_reduce = np.add.reduce


def _sum_rows(buf):
    """``buf.sum(axis=0)``: for a NumPy array the ufunc's reduce itself, the same sum without the
    method's Python wrapper (~1 us a step)."""
    if buf.__class__ is np.ndarray:
        return _add_reduce(buf, 0)
    return buf.sum(axis=0)


def window_push(xp, buf, pos, wsum, row, observed, restart):
    """The windowed model's segment book-keeping for one step: ``(before, buf, pos, after)``.

    ``buf`` float[W, K] is a ring of the last ``W`` observed log-likelihood rows (next
    slot ``pos``); ``W = 0`` keeps the whole segment as the running sum ``wsum`` [K]
    instead. ``restart`` (episode start, visible completion) empties the segment first.
    An ``observed`` step (a row not identically zero) evicts the oldest row, if the ring
    is full, and enters. ``before``: the sum of the rows kept without the new one (what
    the pre-update belief multiplies); ``after``: the sum once it has entered. The flags
    are Python bools (NumPy online step) or traced booleans (JAX); ``row`` is zero when
    not observed.
    """
    slots = buf.shape[0]
    if slots == 0:
        before = wsum if restart is False else _pick(xp, restart, xp.zeros_like(wsum), wsum)
    else:
        if restart is not False:  # a Python False (NumPy online step) skips building the zeros
            buf = _pick(xp, restart, xp.zeros_like(buf), buf)
            pos = _pick(xp, restart, 0, pos)
        evicted = buf if observed is False else _pick(xp, observed, _with_row(buf, pos, 0.0), buf)
        before = _sum_rows(evicted)
        if observed is not False:
            buf = _pick(xp, observed, _put_row(evicted, pos, row), buf)
            pos = _pick(xp, observed, (pos + 1) % slots, pos)
    # the sum once the new row has entered: the kept rows plus it (no second reduction)
    return before, buf, pos, (before if observed is False else _pick(xp, observed, before + row, before))


def segment_log_predict(xp, log_seg_prior, feasible, before, want_log: bool = True):
    """The predicted belief of a segment: ``(log_pred, log_w, pred)`` with
    ``log_pred(k) = log pi0_seg(k) + before(k) - log_w`` on feasible skills (``-inf`` on the
    others; ``feasible`` bool[K] or ``None`` for all), ``log_w`` the log normaliser and
    ``pred = exp(log_pred)``. ``log_w = -inf`` when every feasible skill is ruled out by the
    window (``log_pred`` is then ``-inf`` everywhere; no NaN, no floating-point warning).
    ``want_log=False`` skips ``log_pred`` (``None``; the online gate needs only ``pred``).

    One formula for both namespaces; on NumPy arrays (the online gate) the reductions and the
    two scalar decisions are Python's (~10 us a step saved), on JAX ones ``xp.where``."""
    unnorm = log_seg_prior + before
    if feasible is not None:
        unnorm = xp.where(feasible, unnorm, -_INF)
    if unnorm.__class__ is np.ndarray:  # NumPy (the online gate): Python's max/sum on the list,
        top = max(unnorm.tolist())       # ~0.3 us where the array reductions cost ~1 us each
        if top == -_INF:
            return unnorm, -_INF, np.zeros_like(unnorm)
        if -_SAFE_EXP < top < _SAFE_EXP:  # exp cannot overflow and the best term is >= e^-600: no shift
            e, top = np.exp(unnorm), 0.0
        else:
            e = np.exp(unnorm - top)
        total = sum(e.tolist())
        if not total > _TINY:  # the shift-free sum underflowed: shift by the maximum after all
            top = max(unnorm.tolist())
            e = np.exp(unnorm - top)
            total = sum(e.tolist())
        log_w = math.log(total) + top
        e /= total
        return (unnorm - log_w if want_log else None), log_w, e
    top = unnorm.max()
    ok = top > -_INF  # some feasible skill is left: the normaliser is positive
    shift = xp.where(ok, top, 0.0)
    e = xp.exp(unnorm - shift)
    total = e.sum()
    log_w = xp.where(ok, xp.log(xp.where(ok, total, 1.0)) + shift, -_INF)
    return unnorm - xp.where(ok, log_w, 0.0), log_w, e / xp.where(ok, total, 1.0)


class WindowedTransition:
    """The windowed transition as a component the filters dispatch on (see
    :class:`~beliefgate.models.transitions.hazard.HazardTransition` for the attributes)."""

    name = "windowed"
    summary = "paper-faithful segment window"
    params = ("alpha",)
    options = ("window",)
    has_matrix = False
    scaled_kernel = False
    runs_hazard_filter = False

    def window_slots(self, window) -> int:
        """Rows of the window ring: ``window``, or 0 for the whole segment (``None`` / ``inf``)."""
        if window is None or window == math.inf:
            return 0
        return int(window)

    def filter_fields(self, xp, values, window) -> tuple:
        """``(hazard, window)`` of the filter's ``FilterParams``: no hazard (0), the window."""
        return 0.0, window

    def filter_predict(self, xp, params, state, log_pi0, loglik, feasible, observed):
        """The log-space filter's predict (traceable): ``(log_pred, log_seg_prior, window_buf,
        window_pos, window_sum)``; a reset starts a segment with prior ``pi0``."""
        seg_prior = xp.where(state.reset, log_pi0, state.log_seg_prior)
        row = xp.where(observed, loglik, 0.0)
        before, buf, pos, after = window_push(xp, state.window_buf, state.window_pos, state.window_sum, row,
                                              observed, state.reset)
        log_pred = segment_log_predict(xp, seg_prior, feasible, before)[0]
        return log_pred, seg_prior, buf, pos, after

    def constants(self, pi0, hazard) -> tuple:
        """What the NumPy online step caches with ``pi0``: the hazard constants (the change-point
        gate's filter) and ``log pi0`` (the segment prior)."""
        return (*hazard_constants(np, pi0, hazard), np.log(pi0))

    def online_step(self, belief, pi0, restart, window_buf, window_pos, window_sum, ll, feas, hazard, consts):
        """The NumPy online step (see :meth:`HazardTransition.online_step`; no hazard step:
        that entry is ``None``). An impossible observation gives ``log_z = -inf`` (the
        caller refuses it); a window that rules out every feasible skill raises
        :class:`ImpossibleObservationError`."""
        observed = ll is not None and any(ll.tolist())  # validated (no NaN): a nonzero entry
        before, buf, pos, wsum = window_push(np, window_buf, window_pos, window_sum,
                                             ll if observed else 0.0, observed, restart)
        if restart:
            prior = forced_switch(np, pi0, feas)
        else:
            _, log_w, prior = segment_log_predict(np, consts[2], feas, before, False)
            if log_w == -_INF:
                raise ImpossibleObservationError(
                    "every feasible skill has probability zero in the current window")
        if observed:
            post, log_z, _ = condition(prior, ll)
        else:
            post, log_z = prior, 0.0
        # the belief about z_{t+1} if nothing completes: the segment product with the current rows,
        # every skill assumed feasible
        predictive = post if feas is None else segment_log_predict(np, consts[2], None, wsum, False)[2]
        return prior, post, log_z, buf, pos, wsum, None, predictive

    def __repr__(self) -> str:
        return "WINDOWED"


#: The windowed transition component.
WINDOWED = WindowedTransition()

__all__ = ["WINDOWED", "WindowedTransition", "window_push", "segment_log_predict"]
