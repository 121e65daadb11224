"""The JAX filter: online == offline, normalisation, no recompilation, batching,
windowed variant, the fast sticky-HMM kernel, and input validation.

(The brute-force checks against the NumPyro model live in ``test_model.py``.)
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
from contextlib import contextmanager
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.nn import logsumexp

from beliefgate.beliefs import filter as F
from beliefgate.beliefs.errors import (
    BeliefInputError,
    CompletedIndexError,
    ImpossibleObservationError,
    InvalidParameterError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
    UnsupportedModelError,
)

T, K = 8, 3
HAZARD = F.FilterParams("hazard", hazard=0.2, alpha=0.7)
WINDOWED = F.FilterParams("windowed", alpha=0.7, window=3)


pytestmark = pytest.mark.usefixtures("x64")


def random_sequence(seed: int, num_steps: int = T, segment_feasibility: bool = False):
    """Random loglik/feasible/completed; some rows all-zero (excluded steps)."""
    rng = np.random.default_rng(seed)
    loglik = rng.normal(scale=1.5, size=(num_steps, K))
    loglik[rng.random(num_steps) < 0.2] = 0.0
    completed = np.where(rng.random(num_steps) < 0.3, rng.integers(0, K, num_steps), -1)
    feasible = rng.random((num_steps, K)) < 0.6
    feasible[np.arange(num_steps), rng.integers(0, K, num_steps)] = True
    if segment_feasibility:  # constant between completions
        for t in range(1, num_steps):
            if completed[t - 1] < 0:
                feasible[t] = feasible[t - 1]
    prior_counts = rng.integers(0, 3, K).astype(float)
    return loglik, feasible, completed, prior_counts


@contextmanager
def count_compilations():
    """Collect JAX 'Compiling ...' log records (optax test_utils style)."""
    records: list[str] = []

    class Handler(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            if message.startswith("Compiling"):
                records.append(message)

    handler = Handler()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles():
            yield records
    finally:
        logger.removeHandler(handler)


# ----------------------------------------------------------------------------------------
# Online == offline, normalisation, semantics
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [HAZARD, WINDOWED], ids=["hazard", "windowed"])
def test_online_updates_equal_offline_filter_and_are_normalised(params):
    loglik, feasible, completed, counts = random_sequence(1)
    result = F.filter(params, F.observations(loglik, feasible, completed, prior_counts=counts))
    state = F.init(params, K, counts)
    total = 0.0
    for t in range(T):
        state, info = F.update(params, state, loglik[t], feasible[t], int(completed[t]))
        np.testing.assert_allclose(info.log_posterior, result.log_posterior[t], atol=1e-12)
        np.testing.assert_allclose(info.log_predicted, result.log_predicted[t], atol=1e-12)
        for log_b in (info.log_posterior, info.log_predicted):
            assert float(logsumexp(log_b)) == pytest.approx(0.0, abs=1e-12)
            assert np.all(np.exp(np.asarray(log_b))[~feasible[t]] == 0.0)
        total += float(info.log_normalizer)
    assert total == pytest.approx(float(result.log_marginal), abs=1e-12)
    assert float(state.log_marginal) == pytest.approx(total, abs=1e-12)
    assert int(state.step) == T
    np.testing.assert_allclose(state.counts, counts + np.bincount(completed[completed >= 0],
                                                                  minlength=K))


def test_forced_switch_after_completion_and_memory_across_episodes():
    params = F.FilterParams("hazard", hazard=0.1, alpha=1.0)
    state = F.init(params, K)
    state, _ = F.update(params, state, np.array([3.0, 0.0, -2.0]), completed=0)
    state, info = F.update(params, state, np.zeros(K), feasible=np.array([True, True, False]))
    # After a visible completion the belief is forgotten: pred = pi0 o feasible / Z.
    pi0 = (np.array([1.0, 0.0, 0.0]) + 1.0) / 4.0
    want = pi0 * [1, 1, 0] / np.sum(pi0 * [1, 1, 0])
    np.testing.assert_allclose(np.exp(info.log_predicted), want, atol=1e-12)
    # A new episode keeps the completion counts (per-partner memory).
    fresh = F.new_episode(params, state)
    np.testing.assert_allclose(fresh.counts, [1.0, 0.0, 0.0])
    assert bool(fresh.reset) and int(fresh.step) == 0 and float(fresh.log_marginal) == 0.0


def test_no_recompilation_in_online_loop():
    loglik, feasible, completed, _ = random_sequence(2, num_steps=50)
    for params in (HAZARD, WINDOWED):
        state = F.init(params, K)
        state, _ = F.update(params, state, loglik[0], feasible[0], int(completed[0]))
        cache_size = F._update_jit._cache_size()
        with count_compilations() as compiled:
            for t in range(50):
                # Vary every numeric input, including the traced parameters.
                p = params._replace(hazard=0.05 + 0.01 * (t % 5), alpha=1.0 + t % 3)
                comp = int(completed[t]) if t % 2 else None
                state, info = F.update(p, state, loglik[t].tolist(), feasible[t], comp)
        assert compiled == [], compiled
        assert F._update_jit._cache_size() == cache_size


# ----------------------------------------------------------------------------------------
# Batching with a validity mask
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [HAZARD, WINDOWED], ids=["hazard", "windowed"])
def test_batched_masked_filter_equals_unbatched(params):
    lengths = [T, 3, 5]
    seqs = [random_sequence(10 + b) for b in range(len(lengths))]
    rng = np.random.default_rng(0)
    loglik = np.stack([s[0] for s in seqs])
    feasible = np.stack([s[1] for s in seqs])
    completed = np.stack([s[2] for s in seqs])
    counts = np.stack([s[3] for s in seqs])
    valid = np.arange(T)[None, :] < np.array(lengths)[:, None]
    # Padding holds garbage: huge values, no feasible skill, out-of-range completions.
    loglik[~valid] = rng.normal(scale=1e3, size=loglik[~valid].shape)
    feasible[~valid] = False
    completed[~valid] = 99
    batch = F.filter_batch(params, F.observations(loglik, feasible, completed, valid, counts))
    assert batch.log_posterior.shape == (3, T, K)
    for b, n in enumerate(lengths):
        one = F.filter(params, F.observations(loglik[b, :n], feasible[b, :n], completed[b, :n],
                                              prior_counts=counts[b]))
        assert float(batch.log_marginal[b]) == pytest.approx(float(one.log_marginal), abs=1e-12)
        np.testing.assert_allclose(batch.log_posterior[b, :n], one.log_posterior, atol=1e-12)
        np.testing.assert_allclose(batch.log_normalizer[b, n:], 0.0)
        # Padding steps leave the state unchanged.
        for t in range(n, T):
            np.testing.assert_allclose(batch.log_posterior[b, t], one.log_posterior[-1], atol=1e-12)
        np.testing.assert_allclose(batch.state.counts[b], one.state.counts)
        assert int(batch.state.step[b]) == n


# ----------------------------------------------------------------------------------------
# Windowed variant
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_windowed_with_long_window_equals_hazard_zero(seed):
    loglik, feasible, completed, counts = random_sequence(seed, segment_feasibility=True)
    obs = F.observations(loglik, feasible, completed, prior_counts=counts)
    hazard0 = F.filter(F.FilterParams("hazard", hazard=0.0, alpha=0.7), obs)
    for window in (None, math.inf, T, T + 5):
        windowed = F.filter(F.FilterParams("windowed", alpha=0.7, window=window), obs)
        np.testing.assert_allclose(windowed.log_posterior, hazard0.log_posterior, atol=1e-12)
        np.testing.assert_allclose(windowed.log_predicted, hazard0.log_predicted, atol=1e-12)
        assert float(windowed.log_marginal) == pytest.approx(float(hazard0.log_marginal), abs=1e-12)


def test_windowed_matches_direct_formula():
    """b_t ∝ pi0_seg o feasible_t o exp(sum of the last k observed rows of the segment)."""
    loglik, feasible, completed, counts = random_sequence(6, num_steps=12)
    window, alpha = 3, 0.7
    result = F.filter(F.FilterParams("windowed", alpha=alpha, window=window),
                      F.observations(loglik, feasible, completed, prior_counts=counts))
    n = counts.copy()
    seg_prior, rows = None, []
    for t in range(len(loglik)):
        if seg_prior is None:
            seg_prior, rows = (n + alpha) / np.sum(n + alpha), []
        if np.any(loglik[t] != 0):
            rows = (rows + [loglik[t]])[-window:]
        log_b = np.log(seg_prior) + np.where(feasible[t], 0, -np.inf) + np.sum(rows or [0], axis=0)
        want = np.exp(log_b - logsumexp(log_b))
        np.testing.assert_allclose(np.exp(result.log_posterior[t]), want, atol=1e-12)
        if completed[t] >= 0:
            n[completed[t]] += 1
            seg_prior = None


# ----------------------------------------------------------------------------------------
# Fast sticky-HMM kernel
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("general", [False, True], ids=["simple", "feasible+completions+padding"])
def test_scaled_batch_kernel_equals_log_space_filter(general):
    """The public filter_batch (scaled kernel) against the log-space reference, both
    recurrences: every skill feasible/no completion/no padding, and the general one."""
    rng = np.random.default_rng(0)
    batch, steps, skills = 5, 37, 4
    counts = rng.integers(0, 4, (batch, skills)).astype(float)
    params = F.FilterParams("hazard", 0.07, 0.5)
    log_em = 3.0 * rng.standard_normal((batch, steps, skills))
    log_em[0, 5] -= 800.0  # a step whose raw emissions all underflow exp()
    log_em[1, 7, 2] = -np.inf  # an impossible action under one skill
    if general:
        feasible = rng.random((batch, steps, skills)) < 0.7
        feasible[..., 0] = True
        completed = np.where(rng.random((batch, steps)) < 0.1, rng.integers(0, skills, (batch, steps)), -1)
        valid = np.arange(steps)[None] < np.array([37, 20, 30, 5, 37])[:, None]
        obs = F.observations(log_em, feasible, completed, valid, counts)
    else:
        obs = F.observations(log_em, prior_counts=counts, batched=True)
    exact = F.filter_batch(params, obs, method="log")
    got = F.filter_batch(params, obs)
    assert got.posterior.shape == (batch, steps, skills)
    np.testing.assert_allclose(got.log_marginal, exact.log_marginal, atol=1e-9, rtol=0)
    np.testing.assert_allclose(got.log_normalizer, exact.log_normalizer, atol=1e-9, rtol=0)
    np.testing.assert_allclose(got.posterior, np.exp(exact.log_posterior), atol=1e-12, rtol=0)
    np.testing.assert_allclose(np.sum(got.posterior, axis=-1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(got.state.counts, exact.state.counts)
    np.testing.assert_array_equal(got.state.step, exact.state.step)
    np.testing.assert_array_equal(got.state.reset, exact.state.reset)
    with pytest.raises(InvalidParameterError, match="method"):
        F.filter_batch(params, obs, method="fast")


def test_scaled_batch_kernel_compiles_once_per_shape():
    """Repeated calls with new values and the same shapes reuse one compilation."""
    from beliefgate.models import hmm

    rng = np.random.default_rng(3)
    params = F.FilterParams("hazard", 0.05, 1.0)
    before = hmm._batch_jit._cache_size()
    for i in range(4):
        obs = F.observations(rng.standard_normal((3, 11, 5)), batched=True)
        F.filter_batch(params._replace(hazard=0.05 + 0.01 * i), obs)
    assert hmm._batch_jit._cache_size() - before == 1
    before = hmm._batch_jit._cache_size()
    for i in range(3):  # four equal row blocks: one compilation whatever the block's offset
        obs = F.observations(rng.standard_normal((12, 11, 5)), batched=True)
        F.filter_batch(params._replace(hazard=0.05 + 0.01 * i), obs, shards=4)
    assert hmm._batch_jit._cache_size() - before == 1


@pytest.mark.parametrize("batch", [13, 256])
@pytest.mark.parametrize("general", [False, True], ids=["simple", "feasible+completions+padding"])
def test_sharded_batch_filter_equals_one_block_to_rounding(general, batch):
    """Row blocks run concurrently and joined on the host give the one-block result, with uneven
    blocks (13 rows in 4 blocks) and more blocks than the pool has threads. To rounding, not to
    the bit: XLA compiles each block size on its own, and a review found 129 of 256 log marginals
    differing by up to 4e-14 at 4 blocks (the docs said bit-for-bit)."""
    rng = np.random.default_rng(11)
    steps, skills = 29, 5
    counts = rng.integers(0, 4, (batch, skills)).astype(float)
    log_em = 2.0 * rng.standard_normal((batch, steps, skills))
    if general:
        feasible = rng.random((batch, steps, skills)) < 0.7
        feasible[..., 1] = True
        completed = np.where(rng.random((batch, steps)) < 0.1, rng.integers(0, skills, (batch, steps)), -1)
        valid = np.arange(steps)[None] < rng.integers(1, steps + 1, batch)[:, None]
        obs = F.observations(log_em, feasible, completed, valid, counts)
    else:
        obs = F.observations(log_em, prior_counts=counts, batched=True)
    params = F.FilterParams("hazard", 0.05, 1.0)
    one = F.filter_batch(params, obs, shards=1)
    for shards in (2, 4, 13, 50):
        got = F.filter_batch(params, obs, shards=shards)
        assert isinstance(got.posterior, np.ndarray) and got.posterior.shape == (batch, steps, skills)
        tight = dict(rtol=1e-12, atol=1e-12) if got.posterior.dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got.posterior, one.posterior, **tight)
        np.testing.assert_allclose(got.log_normalizer, one.log_normalizer, **tight)
        np.testing.assert_allclose(got.log_marginal, one.log_marginal, **tight)
        for field, ref in zip(got.state, one.state):
            np.testing.assert_allclose(np.asarray(field, dtype=np.float64), np.asarray(ref, dtype=np.float64), **tight)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(InvalidParameterError, match="shards"):
            F.filter_batch(params, obs, shards=bad)


def test_shard_pool_is_made_again_in_a_forked_child(monkeypatch):
    """A pool inherited through fork has no threads: a process with another pid gets a new one."""
    first = F._pool()
    assert F._pool() is first
    monkeypatch.setattr(F, "_POOL_PID", -1)  # as seen from a forked child
    second = F._pool()
    assert second is not first and F._POOL_PID == os.getpid()
    assert list(second.map(abs, [-1, -2])) == [1, 2]


def test_default_shards_follow_cores_and_batch_size(monkeypatch):
    """On a CPU: SHARDS_PER_CORE blocks per usable core, never below SHARD_MIN_ROWS rows a
    block; one block on a single core."""
    x = jnp.zeros((1024, 2, 3))
    monkeypatch.setattr(F, "_usable_cores", lambda: 2)
    assert F.default_shards(x) == min(2 * F.SHARDS_PER_CORE, 1024 // F.SHARD_MIN_ROWS)
    assert F.default_shards(jnp.zeros((F.SHARD_MIN_ROWS - 1, 2, 3))) == 1
    assert F.default_shards(jnp.zeros((3 * F.SHARD_MIN_ROWS, 2, 3))) == 3
    monkeypatch.setattr(F, "_usable_cores", lambda: 1)
    assert F.default_shards(x) == 1


@pytest.mark.slow  # a benchmark script's smoke run: `make test-slow` / `make bench`, not the default suite
def test_benchmark_script_smoke():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_hmm.py"
    spec = importlib.util.spec_from_file_location("bench_hmm", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.main(["--quick"])
    assert rows and all(r["diff_log"] <= 1e-6 and r["diff_post_log"] <= 1e-9 for r in rows)
    assert all(r.get("diff_dynamax", 0.0) <= 1e-6 for r in rows)


# ----------------------------------------------------------------------------------------
# Offline decoding guards and input validation
# ----------------------------------------------------------------------------------------


def test_smoother_and_viterbi_reject_windowed():
    obs = F.observations(np.zeros((T, K)))
    with pytest.raises(UnsupportedModelError):
        F.smoother(WINDOWED, obs)
    with pytest.raises(UnsupportedModelError):
        F.most_likely_path(WINDOWED, obs)


def test_bad_inputs_raise_specific_errors():
    state = F.init(HAZARD, K)
    ok = np.zeros(K)
    cases = [
        (ShapeMismatchError, dict(loglik=np.zeros(K + 1)), "shape"),
        (NonFiniteLoglikError, dict(loglik=np.array([0.0, np.nan, 0.0])), "NaN"),
        (NonFiniteLoglikError, dict(loglik=np.array([np.inf, 0.0, 0.0])), r"\+inf"),
        (NoFeasibleSkillError, dict(loglik=ok, feasible=np.zeros(K, bool)), "feasible"),
        (ShapeMismatchError, dict(loglik=ok, feasible=np.ones(K + 1, bool)), "feasible"),
        (CompletedIndexError, dict(loglik=ok, completed=K), r"\[-1, 3\)"),
        (CompletedIndexError, dict(loglik=ok, completed=-2), r"\[-1, 3\)"),
        (CompletedIndexError, dict(loglik=ok, completed=1.5), "int"),
        (ImpossibleObservationError, dict(loglik=np.full(K, -np.inf)), "probability zero"),
    ]
    for error, kwargs, message in cases:
        with pytest.raises(error, match=message):
            F.update(HAZARD, state, **kwargs)
        assert issubclass(error, BeliefInputError) and issubclass(error, ValueError)

    for bad in (HAZARD._replace(hazard=1.5), HAZARD._replace(alpha=0.0),
                HAZARD._replace(model="foo"), WINDOWED._replace(window=0),
                WINDOWED._replace(window=2.5)):
        with pytest.raises(InvalidParameterError):
            F.init(bad, K)
    with pytest.raises(ShapeMismatchError, match="window"):
        F.update(WINDOWED, state, ok)  # state built for the hazard model
    with pytest.raises(ShapeMismatchError):
        F.init(HAZARD, K, prior_counts=np.zeros(K + 1))
    with pytest.raises(InvalidParameterError):
        F.init(HAZARD, K, prior_counts=-np.ones(K))

    with pytest.raises(ShapeMismatchError):
        F.observations(np.zeros(K))
    with pytest.raises(NonFiniteLoglikError, match=r"\(2, 1\)"):
        bad = np.zeros((T, K))
        bad[2, 1] = np.nan
        F.observations(bad)
    with pytest.raises(NoFeasibleSkillError, match=r"\(4,\)"):
        feasible = np.ones((T, K), bool)
        feasible[4] = False
        F.observations(np.zeros((T, K)), feasible)
    with pytest.raises(CompletedIndexError):
        F.observations(np.zeros((T, K)), completed=np.full(T, K))
    with pytest.raises(ShapeMismatchError, match="filter_batch"):
        F.filter(HAZARD, F.observations(np.zeros((2, T, K))))


@pytest.mark.parametrize("params", [F.FilterParams(model="windowed", window=5), F.FilterParams(model="hazard", hazard=0.0)],
                         ids=["windowed", "hazard-0"])
def test_offline_filters_refuse_an_impossible_observation_like_the_online_update(params):
    """An observation no allowed skill can produce gave NaN posteriors and a -inf marginal silently
    offline, where `update` and the gate raise: now the offline filters raise too, naming the step."""
    ll = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    with pytest.raises(ImpossibleObservationError, match="at step 1 has probability zero"):
        F.filter(params, F.observations(ll))
    with pytest.raises(ImpossibleObservationError, match="at step 1 of row 0 has probability zero"):
        F.filter_batch(params, F.observations(ll[None], batched=True))
    fine = np.log(np.full((3, 2), 0.5))
    assert np.isfinite(float(F.filter(params, F.observations(fine)).log_marginal))
