"""The partner-skill model's shared components, written once for any array namespace.

Each function takes the array module ``xp`` (``numpy`` or ``jax.numpy``) as its first
argument and uses only operations both provide, so the *same* definition serves the NumPy
online gate, the JAX log-space filter and the JAX batched kernel: the smoothed skill prior,
the scaled Bayes correction and the completion book-keeping. The transitions (hazard,
windowed) are components of their own in :mod:`beliefgate.models.transitions`. Sums are
written as the array method ``x.sum(...)`` (on NumPy's K-sized arrays under half of
``np.sum``); ``axis`` is the skill axis. Notation as in ``docs/model.md``.
"""

from __future__ import annotations

from beliefgate.models.transitions.hazard import MIN_HAZARD  # noqa: F401  (the one constant, re-exported)


def smoothed_prior(xp, counts, alpha, axis: int = -1):
    """``pi0(k) = (n(k) + alpha) / sum_j (n(j) + alpha)``."""
    smoothed = counts + alpha
    return smoothed / smoothed.sum(axis=axis, keepdims=True)


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


__all__ = ["book_completion", "smoothed_prior", "scaled_correct", "MIN_HAZARD"]
