"""The partner-skill model's components, written once for any array namespace.

Each function takes the array module ``xp`` (``numpy`` or ``jax.numpy``) as its first
argument and uses only operations both provide, so the *same* definition is
instantiated by

* the NumPy online step (:func:`beliefgate.models.forward.hazard_step`, the gate),
* the JAX log-space forward step (:func:`beliefgate.models.hmm.hazard_predict`, used by
  the NumPyro model's likelihood, ``filter``/``update``, fitting and diagnostics),
* the JAX batched filter kernel (:func:`beliefgate.models.hmm.batch_filter_scaled`).

Sums are written as the array method ``x.sum(...)``, which both provide: on NumPy's
K-sized arrays it costs under half of ``np.sum`` (whose Python wrapper dominates).
``axis`` is the skill axis (``-1`` for ``[..., K]`` arrays, ``0`` for the batched
kernel's ``[K, B]`` layout). The hazard transition also has a log-matrix form for
offline work (:func:`beliefgate.models.hmm.hazard_log_transition`), tested equal to
the O(K) predict here. Notation as in ``docs/model.md``.
"""

from __future__ import annotations

#: hazard values below this are evaluated at this value by the fitted model: an exact 0
#: gives NaN gradients in the predict step, and the likelihood is the same to rounding.
MIN_HAZARD = 1e-30


def smoothed_prior(xp, counts, alpha, axis: int = -1):
    """``pi0(k) = (n(k) + alpha) / sum_j (n(j) + alpha)``."""
    smoothed = counts + alpha
    return smoothed / smoothed.sum(axis=axis, keepdims=True)


def hazard_constants(xp, pi0, hazard):
    """``(h pi0, (1-h) + h pi0)``: the all-feasible switch and stay factors for one ``pi0``."""
    hpi0 = hazard * pi0
    return hpi0, (1.0 - hazard) + hpi0


def forced_switch(xp, pi0, feasible, axis: int = -1):
    """The restart distribution ``pi0 ∘ f / sum(pi0 ∘ f)`` (episode start, visible completion)."""
    if feasible is None:
        return pi0
    pf = pi0 * feasible
    return pf / pf.sum(axis=axis, keepdims=True)


def hazard_sticky(xp, belief, pi0, feasible, hazard, consts=None, axis: int = -1):
    """O(K) predict of the hazard model from a normalised belief: ``(prior, stay, switch)``.

    With ``S = sum(pi0 ∘ f)``, ``Zf = (1-h) + h S``, ``B_f`` the belief mass on
    feasible skills and ``B_x = 1 - B_f`` (rows of infeasible skills switch by force)::

        stay(j)   = f(j) [(1-h) + h pi0(j)] / Zf
        switch(j) = f(j) pi0(j) [h (B_f - b(j)) / Zf + B_x / S]
        prior     = stay * b + switch

    (resampling the current skill counts as staying). ``feasible`` is a 0/1 (or bool)
    array, or ``None`` for "all feasible" (then ``stay = (1-h) + h pi0`` and
    ``switch = h pi0 (1 - b)``; ``consts`` may hold :func:`hazard_constants`).
    """
    if feasible is None:
        hpi0, stay = consts if consts is not None else hazard_constants(xp, pi0, hazard)
        switch = hpi0 - hpi0 * belief  # h pi0 (1 - b), array-array operations only
        # stay * b + switch = (1-h) b + h pi0 for a normalised b: two operations, not four
        return (1.0 - hazard) * belief + hpi0, stay, switch
    h = hazard
    pf = pi0 * feasible
    s = pf.sum(axis=axis, keepdims=True)
    zf = (1.0 - h) + h * s
    b_f = (belief * feasible).sum(axis=axis, keepdims=True)
    stay = feasible * (((1.0 - h) + h * pi0) / zf)
    switch = pf * (h * (b_f - belief) / zf + (1.0 - b_f) / s)
    return stay * belief + switch, stay, switch


def scaled_correct(xp, prior, lik, axis: int = -1):
    """Bayes correction on scaled likelihoods ``lik = exp(loglik - shift)``: ``(post, z)``.

    ``z = sum(prior * lik)``; the step's log normaliser is ``log z + shift``.
    """
    joint = prior * lik
    z = joint.sum(axis=axis, keepdims=True)
    return joint * (1.0 / z), z


def book_completion(xp, counts, reset, completed, valid=None, axis: int = -1):
    """``(counts, reset)`` after a step: a visible completion of skill ``c`` adds one to
    ``n(c)`` and makes the next predict a forced switch; a padding step (``valid`` False)
    changes neither. ``completed`` is -1 for none; ``reset`` is the flag carried in."""
    if valid is not None:
        completed = xp.where(valid, completed, -1)
    num_skills = counts.shape[axis]
    skills = xp.arange(num_skills)
    if axis == 0 and counts.ndim > 1:
        skills = xp.reshape(skills, (num_skills,) + (1,) * (counts.ndim - 1))
    hit = xp.expand_dims(completed, axis) == skills
    counts = counts + hit.astype(counts.dtype)
    done = completed >= 0
    return counts, (done if valid is None else xp.where(valid, done, reset))


def _pick(xp, cond, a, b):
    """``a if cond else b``: a Python branch for a Python bool (the NumPy online step), else
    ``xp.where`` (traced flags)."""
    if type(cond) is bool:
        return a if cond else b
    return xp.where(cond, a, b)


def _with_row(buf, pos, row):
    """``buf`` with row ``pos`` replaced by ``row`` (a new array; ``buf`` is not modified)."""
    if hasattr(buf, "at"):  # a JAX array: functional update
        return buf.at[pos].set(row)
    out = buf.copy()
    out[pos] = row
    return out


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
        before = evicted.sum(axis=0)
        if observed is not False:
            buf = _pick(xp, observed, _with_row(evicted, pos, row), buf)
            pos = _pick(xp, observed, (pos + 1) % slots, pos)
    # the sum once the new row has entered: the kept rows plus it (no second reduction)
    return before, buf, pos, (before if observed is False else _pick(xp, observed, before + row, before))


__all__ = ["window_push", "book_completion", "smoothed_prior", "hazard_constants", "forced_switch", "hazard_sticky", "scaled_correct"]
