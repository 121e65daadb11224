"""The one-step-ahead posterior predictive of the fitted skill model: replications and the check's tallies.

For a parameter draw the fitted model's filter (:func:`filter_pass`) gives each step's predicted
belief ``p(z_t | a_{<t})``; the predictive ``p(a_t | a_{<t}) = sum_k p(z_t = k | a_{<t}) pi_hat(a | s_t, k)``
(renormalised over the checked actions) yields a replicated action per step and the skill behind it
(:func:`_one_step`). :func:`run_checks` tallies expected, observed and replicated counts per
skill-state bucket in two views (:data:`SKILL_CLASSES` and the primitive actions) with Pearson's
``X^2``; ``beliefgate diagnose``'s predictive check (:func:`beliefgate.models.diagnose.predictive_check`)
and the fit file's ``posterior_predictive`` / ``prior_predictive`` groups
(:func:`beliefgate.models.fit.predictive_replications`, :func:`replication_group`) both run it: one
implementation, one compilation per model variant and data shape.

Nothing here imports :mod:`beliefgate.models.fit` (which writes the groups): the fit's likelihood rows
come in as ``loglik_fn`` and its parameter draws as arrays.
"""

from __future__ import annotations

import json
from functools import lru_cache, partial
from typing import NamedTuple, Optional

import numpy as np

from beliefgate.models.data import FitData
from beliefgate.models.fitio import REPLICATION_ATTR


def filter_pass(inputs, skill, config, draw: dict, loglik_fn):
    """``(loglik [B,T,K], UpdateInfo [B,T,...], logp [B,T,K,A])`` at one parameter draw: the fitted
    model's filter (``config``: its ``model``, ``window``, ``fit_weight``; ``loglik_fn``: its
    likelihood rows, :func:`beliefgate.models.fit.model_loglik`)."""
    import jax
    import jax.numpy as jnp

    from beliefgate.models.hmm import scan_filter
    from beliefgate.models.skill_model import action_logprobs, filter_params, to_observations

    weight = draw.get("ambiguous_weight") if config.fit_weight else None
    loglik = loglik_fn(inputs, draw["beta"], draw["epsilon"], weight)
    params = filter_params(config.model, draw, config.window)
    obs = to_observations(inputs, loglik)
    info = jax.vmap(lambda o: scan_filter(params, o)[1])(obs)
    beta = jnp.asarray(draw["beta"])
    logp = action_logprobs(skill, beta[:, None] if beta.ndim == 1 else beta, draw["epsilon"])
    return loglik, info, logp


#: action classes of the skill-relative view
SKILL_CLASSES = ("toward predicted skill", "toward another feasible skill", "neither")


def _skill_classes(q, feasible, predicted):
    """Class of every action [B, T, A] relative to the predicted skill ``predicted`` [B, T].

    0: the action maximises ``Q`` of the predicted skill; 1: it maximises ``Q`` of
    another feasible skill; 2: neither.
    """
    import jax.numpy as jnp

    best = q >= jnp.max(q, axis=-1, keepdims=True)  # [B, T, K, A]
    toward = jnp.take_along_axis(best, predicted[..., None, None], axis=2)[..., 0, :]
    others = feasible & (jnp.arange(q.shape[2]) != predicted[..., None])  # [B, T, K]
    other = jnp.any(best & others[..., None], axis=2)
    return jnp.where(toward, 0, jnp.where(other, 1, 2))


def _pearson(counts, expected, usable):
    """Pearson X^2 over cells with expected count >= 1 (and a usable class)."""
    import jax.numpy as jnp

    cell = usable & (expected >= 1.0)
    return jnp.sum(jnp.where(cell, (counts - expected) ** 2 / jnp.where(cell, expected, 1.0), 0.0))


def _one_step(key, draw, inputs, skill, checked, keep, *, config, loglik_fn):
    """The one-step-ahead predictive at one parameter draw and one replication drawn from it.

    Returns ``(info, log_pa, probs, action, skill)``: the filter's pass, the predictive
    ``log p(a_t | a_{<t})`` over the checked actions ``[B, T, A]`` (0 where not ``keep``), its
    probabilities (0 where not ``keep``), a replicated action per step ``[B, T]`` and the skill
    behind it, ``z ~ p(z_t | a_{<t}) pi_hat(a_rep | s_t, z)`` (so ``(z, a)`` is a draw of the joint
    one-step predictive). The check and the fit file's predictive groups both replicate here.
    """
    import jax
    import jax.numpy as jnp

    _, info, logp = filter_pass(inputs, skill, config, draw, loglik_fn)
    log_pa = jax.nn.logsumexp(info.log_predicted[..., None] + logp, axis=-2)  # [B, T, A]
    log_pa = jnp.where(checked, log_pa, -jnp.inf)
    log_pa = log_pa - jax.nn.logsumexp(log_pa, axis=-1, keepdims=True)
    log_pa = jnp.where(keep[..., None], log_pa, 0.0)
    probs = jnp.where(keep[..., None], jnp.exp(log_pa), 0.0)
    rep = jax.random.categorical(key, log_pa)  # [B, T]
    behind = jnp.take_along_axis(logp, rep[..., None, None], axis=-1)[..., 0]  # [B, T, K]
    rep_skill = jax.random.categorical(jax.random.fold_in(key, 1), info.log_predicted + behind)
    return info, log_pa, probs, rep, rep_skill


def _check_one(key, draw, inputs, skill, checked, observed, bucket, keep, stored, use_stored, *, config,
               num_buckets, loglik_fn):
    """Expected / observed / replicated counts and X^2 of both views, for one posterior draw, and the
    replication itself (``"replicated"``: action and skill ``[B, T]``, -1 where not ``keep``). The
    replicated actions are ``stored`` ones where ``use_stored`` (a traced flag: one compilation
    serves the fit's predictive groups, a check with them and one with new replications)."""
    import jax
    import jax.numpy as jnp

    info, log_pa, probs, rep, rep_skill = _one_step(key, draw, inputs, skill, checked, keep, config=config,
                                                    loglik_fn=loglik_fn)
    rep = jnp.where(use_stored, jnp.where(keep, stored, 0), rep)
    replicated = (jnp.where(keep, rep, -1), jnp.where(keep & ~use_stored, rep_skill, -1))
    obs = jnp.where(keep, observed, 0)
    num_actions = probs.shape[-1]
    in_bucket = jax.nn.one_hot(jnp.where(keep, bucket, num_buckets), num_buckets + 1)[..., :num_buckets]
    in_bucket = in_bucket * keep[..., None]

    def tally(per_step):  # [B, T, C] -> [G, C]
        return jnp.einsum("btg,btc->gc", in_bucket, per_step)

    # primitive actions
    e_prim = tally(probs)
    o_prim = tally(jax.nn.one_hot(obs, num_actions))
    r_prim = tally(jax.nn.one_hot(rep, num_actions))
    # classes relative to the predicted skill
    predicted = jnp.argmax(info.log_predicted, axis=-1)
    cls = _skill_classes(skill.q, skill.feasible, predicted)  # [B, T, A]
    onehot_cls = jax.nn.one_hot(cls, len(SKILL_CLASSES))  # [B, T, A, C]
    e_skill = tally(jnp.einsum("bta,btac->btc", probs, onehot_cls))
    o_skill = tally(jax.nn.one_hot(jnp.take_along_axis(cls, obs[..., None], -1)[..., 0], len(SKILL_CLASSES)))
    r_skill = tally(jax.nn.one_hot(jnp.take_along_axis(cls, rep[..., None], -1)[..., 0], len(SKILL_CLASSES)))
    all_classes = jnp.ones(len(SKILL_CLASSES), bool)
    return {
        "primitive": (e_prim, o_prim, r_prim, _pearson(o_prim, e_prim, checked[None, :]),
                      _pearson(r_prim, e_prim, checked[None, :])),
        "skill": (e_skill, o_skill, r_skill, _pearson(o_skill, e_skill, all_classes[None, :]),
                  _pearson(r_skill, e_skill, all_classes[None, :])),
        "replicated": replicated,
    }


def observed_actions(data: FitData) -> np.ndarray:
    """The taken action per step; from a one-action mask when the log did not say (-1 if unknown)."""
    mask = np.asarray(data.skill.action_mask)
    single = mask.sum(axis=-1) == 1
    return np.where(data.action >= 0, data.action, np.where(single, mask.argmax(axis=-1), -1))


def skill_state_buckets(data: FitData, min_steps: int = 20):
    """``(bucket [B, T] int, labels)``: steps grouped by their feasible-skill set.

    Sets seen at fewer than ``min_steps`` checked steps share one ``"other"`` bucket.
    """
    feasible = np.asarray(data.skill.feasible)
    keep = np.asarray(data.skill.valid) & (np.asarray(data.skill.weight) > 0)
    bits = (feasible * (1 << np.arange(feasible.shape[-1]))).sum(axis=-1)
    patterns, counts = np.unique(bits[keep], return_counts=True)
    order = np.argsort(-counts)
    labels, mapping, other = [], {}, None
    for i in order:
        if counts[i] >= min_steps:
            mapping[int(patterns[i])] = len(labels)
            names = [n for k, n in enumerate(data.skill_names) if (int(patterns[i]) >> k) & 1]
            labels.append("+".join(names) if len(names) < len(data.skill_names) else "all skills")
    if len(mapping) < len(patterns):
        other = len(labels)
        labels.append("other")
    bucket = np.full(bits.shape, -1, np.int32)
    for pattern in np.unique(bits):
        bucket[bits == pattern] = mapping.get(int(pattern), other if other is not None else -1)
    return bucket, labels


def replicable(data: FitData):
    """``(checked [A], observed [B, T], keep [B, T])``: the checked actions (the domain's excluded ones,
    e.g. STAY, left out), the taken actions, and the steps a replication is drawn at (valid, weighted,
    their action known and checked)."""
    skill = data.skill
    checked = np.ones(skill.q.shape[-1], bool)
    checked[list(data.excluded_actions)] = False
    observed = observed_actions(data)
    keep = np.asarray(skill.valid) & (np.asarray(skill.weight) > 0) & (observed >= 0)
    keep &= checked[np.maximum(observed, 0)]
    return checked, observed, keep


class Variant(NamedTuple):
    """What the filter pass needs of a fit's configuration (a hashable key of the compiled check)."""

    model: str
    window: Optional[int]
    fit_weight: bool


@lru_cache(maxsize=32)
def _jitted_check(variant: Variant, num_buckets: int, loglik_fn):
    """The jitted :func:`_check_one` of one model variant: a fit's two predictive groups and later
    checks of the same shapes reuse its compilation."""
    import jax

    return jax.jit(partial(_check_one, config=variant, num_buckets=num_buckets, loglik_fn=loglik_fn))


def run_checks(inputs, data: FitData, config, draws: dict, seed: int, keep, bucket, num_buckets: int, loglik_fn,
               stored=None) -> list:
    """:func:`_check_one` at each draw of ``draws`` (``{name: [S, ...]}``, keys split from ``seed``) on
    ``inputs`` (the fit's prepared data), with the replications ``stored [S, B, T]`` or new ones."""
    import jax
    import jax.numpy as jnp

    checked, observed, _ = replicable(data)
    num = len(next(iter(draws.values())))
    keys = jax.random.split(jax.random.PRNGKey(seed), num)
    fn = _jitted_check(Variant(config.model, config.window, bool(config.fit_weight)), num_buckets, loglik_fn)
    arrays = (inputs, data.skill, jnp.asarray(checked), jnp.asarray(observed), jnp.asarray(bucket),
              jnp.asarray(keep))
    empty = jnp.zeros(keep.shape, jnp.int32)
    return [fn(keys[i], {k: v[i] for k, v in draws.items()}, *arrays,
               empty if stored is None else jnp.asarray(stored[i], jnp.int32), jnp.asarray(stored is not None))
            for i in range(num)]


#: at most this many replicated steps (draws x trajectories x steps) per variable of a predictive group:
#: 20 MB of int16 before compression; more data get fewer draws (100 draws up to 100,000 steps)
PREDICTIVE_MAX_VALUES = 10_000_000


def replication_group(inputs, data: FitData, config, draws: dict, pick, seed: int, group: str, loglik_fn):
    """The replications of :func:`run_checks` at ``draws`` (``{name: [S, ...]}``: the flat draw indices
    ``pick`` of ``group``) as an ``xarray.Dataset``: ``action`` and the ``skill`` behind it
    ``[chain=1, draw, trajectory, step]`` (int16, -1 where not replicated), with the group, the
    draws and the seed in ``attrs[REPLICATION_ATTR]`` (JSON)."""
    import xarray as xr

    _, _, keep = replicable(data)
    bucket, labels = skill_state_buckets(data)  # the check's buckets: the same compiled function
    reps = [r["replicated"] for r in run_checks(inputs, data, config, draws, seed, keep, bucket, len(labels),
                                                loglik_fn)]
    dims = ("chain", "draw", "trajectory", "step")
    action = np.stack([np.asarray(a) for a, _ in reps]).astype(np.int16)[None]
    behind = np.stack([np.asarray(z) for _, z in reps]).astype(np.int16)[None]
    record = {"group": group, "draws": [int(i) for i in pick], "seed": int(seed),
              "replicates": "one-step-ahead: each step's action given the observed earlier actions"}
    return xr.Dataset({"action": (dims, action), "skill": (dims, behind)},
                      coords={"chain": [0], "draw": np.arange(len(pick)),
                              "trajectory": np.arange(action.shape[2])},
                      attrs={REPLICATION_ATTR: json.dumps(record)})


__all__ = ["SKILL_CLASSES", "PREDICTIVE_MAX_VALUES", "Variant", "filter_pass", "observed_actions",
           "skill_state_buckets", "replicable", "run_checks", "replication_group"]
