"""The NumPyro skill model against brute-force enumeration, and the filter against both.

Every check runs on small random problems (3 skills x 4 steps, random feasibility,
completions, tempering weights, prior counts and parameters) in float64.
"""

from __future__ import annotations

import itertools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from jax.nn import logsumexp
from numpyro.handlers import condition, substitute
from numpyro.infer.util import log_density

from beliefgate.beliefs import filter as F
from beliefgate.beliefs.errors import (
    BeliefInputError,
    CompletedIndexError,
    InvalidParameterError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
)
from beliefgate.models import params as P
from beliefgate.models import skill_model as M

T, K, A = 4, 3, 5
PATHS = np.array(list(itertools.product(range(K), repeat=T)), dtype=np.int32)
SEEDS = [0, 1, 2, 3, 4, 5]


pytestmark = pytest.mark.usefixtures("x64")


def random_problem(seed: int, weight_zero_after: int | None = None):
    """Random (data, values) with feasibility, completions and weights all exercised."""
    rng = np.random.default_rng(seed)
    q = -rng.integers(0, 6, size=(T, K, A)).astype(float)
    q[rng.random((T, K, A)) < 0.1] = -np.inf  # impossible actions, still eps/A
    q[..., 0] = np.maximum(q[..., 0], -3.0)  # every row keeps a finite value
    mask = np.zeros((T, A), bool)
    mask[np.arange(T), rng.integers(0, A, T)] = True
    mask[rng.integers(0, T), rng.integers(0, A)] = True  # one ambiguous step
    weight = rng.choice([0.0, 0.35, 1.0], size=T, p=[0.2, 0.3, 0.5])
    if weight_zero_after is not None:
        weight[weight_zero_after + 1:] = 0.0
    feasible = rng.random((T, K)) < 0.6
    feasible[np.arange(T), rng.integers(0, K, T)] = True
    completed = np.where(rng.random(T) < 0.35, rng.integers(0, K, T), -1)
    prior_counts = rng.integers(0, 3, K).astype(float)
    values = dict(beta=rng.uniform(0.5, 3.0), epsilon=rng.uniform(0.05, 0.3),
                  hazard=rng.uniform(0.05, 0.5), alpha=rng.uniform(0.5, 2.0))
    data = M.skill_data(q, mask, weight, feasible, completed, prior_counts)
    return data, values


def filter_params(values) -> F.FilterParams:
    return F.FilterParams("hazard", values["hazard"], values["alpha"], None)


def observations(data, values) -> F.Observations:
    loglik = M.controller_loglik(data, values["beta"], values["epsilon"])
    return M.to_observations(data, loglik)


def path_log_joint(data, values) -> np.ndarray:
    """``log p(z_{0:T-1} = path, a)`` for all K^T paths, from the explicit NumPyro model."""
    model = partial(M.partner_skill_model_explicit, fixed=values)

    def one(path):
        conditioned = condition(model, data={f"z_{t}": path[t] for t in range(T)})
        return log_density(conditioned, (data,), {}, {})[0]

    return np.asarray(jax.vmap(one)(jnp.asarray(PATHS)))


def path_marginals(log_joint: np.ndarray) -> np.ndarray:
    """``p(z_t = k | a)`` [T, K] from path log joints."""
    post = np.exp(log_joint - logsumexp(log_joint))
    return np.stack([np.bincount(PATHS[:, t], weights=post, minlength=K) for t in range(T)])


# ----------------------------------------------------------------------------------------
# Parts
# ----------------------------------------------------------------------------------------


def reference_transition_row(pi0, feasible, hazard, completed_before, i):
    """docs/model.md transcribed literally (NumPy), for one row i."""
    forced = pi0 * feasible / np.sum(pi0 * feasible)
    if completed_before or not feasible[i]:
        return forced
    stay = np.zeros_like(pi0)
    stay[i] = 1.0 - hazard
    row = (stay + hazard * pi0) * feasible
    z_i = (1 - hazard) * feasible[i] + hazard * np.sum(pi0 * feasible)
    return row / z_i


@pytest.mark.parametrize("hazard", [0.0, 0.2, 1.0])
def test_transition_matrix_matches_contract(hazard):
    rng = np.random.default_rng(7)
    pi0 = rng.dirichlet(np.ones(K))
    feasible = np.array([True, False, True])
    for reset in (False, True):
        got = np.exp(np.asarray(F.hazard_log_transition(
            jnp.log(jnp.asarray(pi0)), jnp.asarray(feasible), hazard, jnp.asarray(reset))))
        want = np.stack([reference_transition_row(pi0, feasible, hazard, reset, i)
                         for i in range(K)])
        np.testing.assert_allclose(got, want, atol=1e-12)
        np.testing.assert_allclose(got.sum(1), 1.0, atol=1e-12)


def test_controller_loglik_tempering_and_mask():
    data, values = random_problem(0)
    ll = np.asarray(M.controller_loglik(data, values["beta"], values["epsilon"]))
    from beliefgate.models.controllers import boltzmann_logprobs

    logp = boltzmann_logprobs(np.asarray(data.q), values["beta"], values["epsilon"])
    mask = np.asarray(data.action_mask)
    w = np.asarray(data.weight)
    for t in range(T):
        want = w[t] * np.log(np.exp(logp[t][:, mask[t]]).sum(-1)) if w[t] > 0 else np.zeros(K)
        np.testing.assert_allclose(ll[t], want, atol=1e-12)


# ----------------------------------------------------------------------------------------
# Brute force: (a) log marginal, (b) filtered/smoothed marginals and Viterbi
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_filter_log_marginal_equals_enumerated_model(seed):
    data, values = random_problem(seed)
    log_joint = path_log_joint(data, values)
    brute = float(logsumexp(log_joint))
    result = F.filter(filter_params(values), observations(data, values))
    assert np.isfinite(brute)
    assert float(result.log_marginal) == pytest.approx(brute, abs=1e-5)
    assert float(result.log_marginal) == pytest.approx(brute, abs=1e-10)


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_filtered_smoothed_and_viterbi_equal_brute_force(seed):
    data, values = random_problem(seed)
    params = filter_params(values)
    obs = observations(data, values)
    result = F.filter(params, obs)
    filtered = np.exp(np.asarray(result.log_posterior))
    np.testing.assert_allclose(filtered.sum(-1), 1.0, atol=1e-12)
    for t in range(T):
        truncated, _ = random_problem(seed, weight_zero_after=t)
        want = path_marginals(path_log_joint(truncated, values))[t]
        np.testing.assert_allclose(filtered[t], want, atol=1e-10)

    log_joint = path_log_joint(data, values)
    log_smoothed, log_marginal = F.smoother(params, obs)
    smoothed = np.exp(np.asarray(log_smoothed))
    np.testing.assert_allclose(smoothed, path_marginals(log_joint), atol=1e-10)
    np.testing.assert_allclose(smoothed.sum(-1), 1.0, atol=1e-12)
    assert float(log_marginal) == pytest.approx(float(logsumexp(log_joint)), abs=1e-10)

    path, log_best = F.most_likely_path(params, obs)
    best = int(np.argmax(log_joint))
    np.testing.assert_array_equal(np.asarray(path), PATHS[best])
    assert float(log_best) == pytest.approx(float(log_joint[best]), abs=1e-10)


# ----------------------------------------------------------------------------------------
# (c) the marginalised model is the filter
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_marginalised_model_log_density_equals_filter(seed):
    data, values = random_problem(seed)
    result = F.filter(filter_params(values), observations(data, values))
    fixed_model = partial(M.partner_skill_model, fixed=values)
    log_joint, trace = log_density(fixed_model, (data,), {}, {})
    assert float(log_joint) == pytest.approx(float(result.log_marginal), abs=1e-10)
    assert float(trace["log_lik"]["value"]) == pytest.approx(float(result.log_marginal), abs=1e-10)

    # With parameters as sample sites: log density = priors + marginal likelihood.
    sampled = {k: values[k] for k in ("beta", "epsilon", "hazard")}
    model = partial(M.partner_skill_model, fixed={"alpha": values["alpha"]})
    log_joint, _ = log_density(model, (data,), {}, sampled)
    priors = sum(float(spec.prior().log_prob(values[spec.name]))
                 for spec in P.PARAMS if spec.name in sampled)
    assert float(log_joint) == pytest.approx(priors + float(result.log_marginal), abs=1e-10)

    # substitute/condition pin the same sites.
    log_joint_sub, _ = log_density(substitute(model, data=sampled), (data,), {}, {})
    assert float(log_joint_sub) == pytest.approx(float(log_joint), abs=1e-10)


def test_batched_model_records_per_trajectory_log_lik_and_gradients_are_finite():
    problems = [random_problem(s) for s in SEEDS[:3]]
    values = problems[0][1]
    lengths = [4, 2, 3]
    stack = lambda i: np.stack([np.asarray(p[0][i]) for p in problems])  # noqa: E731
    valid = np.arange(T)[None, :] < np.array(lengths)[:, None]
    batch = M.skill_data(stack(0), stack(1), stack(2), stack(3), stack(4), stack(5), valid)
    _, trace = log_density(partial(M.partner_skill_model, fixed=values), (batch,), {}, {})
    per_traj = np.asarray(trace["log_lik"]["value"])
    assert per_traj.shape == (3,)
    for b, (data, _) in enumerate(problems):
        # The unbatched filter with the same validity mask (test_filter checks that a
        # masked tail equals truncation); keeps one compiled shape.
        one = data._replace(valid=jnp.asarray(valid[b]))
        want = F.filter(filter_params(values), observations(one, values)).log_marginal
        assert per_traj[b] == pytest.approx(float(want), abs=1e-10)

    # Gradients for NUTS: finite and equal to central differences. (Q is made finite
    # here: the Boltzmann controller's beta-gradient is NaN where Q = -inf.)
    finite = batch._replace(q=jnp.where(jnp.isfinite(batch.q), batch.q, -20.0))
    sampled = {k: jnp.asarray(values[k]) for k in ("beta", "epsilon", "hazard")}
    model = partial(M.partner_skill_model, fixed={"alpha": values["alpha"]})
    log_joint = jax.jit(lambda p: log_density(model, (finite,), {}, p)[0])
    grad = jax.jit(jax.grad(lambda p: log_density(model, (finite,), {}, p)[0]))(sampled)
    for name, g in grad.items():
        step = 1e-6
        up = dict(sampled, **{name: sampled[name] + step})
        down = dict(sampled, **{name: sampled[name] - step})
        numeric = (float(log_joint(up)) - float(log_joint(down))) / (2 * step)
        assert float(g) == pytest.approx(numeric, rel=1e-5, abs=1e-6), name

    draws = {k: jnp.asarray([v, v]) for k, v in sampled.items()}
    pointwise = M.pointwise_log_likelihood(draws, batch, fixed={"alpha": values["alpha"]})
    np.testing.assert_allclose(np.asarray(pointwise), np.stack([per_traj, per_traj]), atol=1e-10)


def test_gradients_finite_with_impossible_actions():
    data, values = random_problem(0)
    assert not np.all(np.isfinite(np.asarray(data.q)))
    sampled = {k: jnp.asarray(values[k]) for k in ("beta", "epsilon", "hazard")}
    model = partial(M.partner_skill_model, fixed={"alpha": values["alpha"]})
    grad = jax.jit(jax.grad(lambda p: log_density(model, (data,), {}, p)[0]))(sampled)
    assert all(np.isfinite(float(g)) for g in grad.values()), grad


def test_sample_params_respects_fixed_random_and_specs():
    with numpyro.handlers.trace() as tr, numpyro.handlers.seed(rng_seed=0):
        values = P.sample_params(fixed={"hazard": 0.2})
    assert set(tr) == {"beta", "epsilon"}  # alpha fixed by default, hazard pinned
    assert float(values["hazard"]) == 0.2 and float(values["alpha"]) == 1.0
    with numpyro.handlers.trace() as tr, numpyro.handlers.seed(rng_seed=0):
        P.sample_params(random=["alpha"])
    assert set(tr) == {"beta", "epsilon", "hazard", "alpha"}
    with pytest.raises(InvalidParameterError):
        P.sample_params(fixed={"gamma": 1.0})
    assert P.default_values() == {"beta": 2.0, "epsilon": 0.1, "hazard": 0.05, "alpha": 1.0}
    with pytest.raises(InvalidParameterError, match="hazard"):
        P.check_values({"hazard": 1.5})
    with pytest.raises(InvalidParameterError, match="beta"):
        P.check_values({"beta": -1.0})


# ----------------------------------------------------------------------------------------
# Prior predictive
# ----------------------------------------------------------------------------------------


def test_prior_predictive_matches_model_prior_marginals():
    data, values = random_problem(3)
    data = data._replace(weight=jnp.zeros(T))  # no evidence: the brute force gives the prior
    prior = path_marginals(path_log_joint(data, values))
    num = 4000
    draws = M.prior_predictive(jax.random.PRNGKey(0), data, values, num_samples=num)
    z, a = np.asarray(draws["z"]), np.asarray(draws["a"])
    assert z.shape == (num, T) and a.shape == (num, T)
    for t in range(T):
        freq = np.bincount(z[:, t], minlength=K) / num
        se = np.sqrt(prior[t] * (1 - prior[t]) / num) + 1e-12
        assert np.all(np.abs(freq - prior[t]) <= 5 * se + 1e-9), (t, freq, prior[t])
    # Actions follow pi_hat(. | s_t, z_t) (checked at t = 0 for the commonest skill).
    logp = np.asarray(M.action_logprobs(data, values["beta"], values["epsilon"]))
    k = int(np.argmax(prior[0]))
    sel = z[:, 0] == k
    freq = np.bincount(a[sel, 0], minlength=A) / sel.sum()
    p = np.exp(logp[0, k])
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / sel.sum()) + 1e-9)


# ----------------------------------------------------------------------------------------
# Input validation
# ----------------------------------------------------------------------------------------


def test_skill_data_rejects_bad_input():
    q = np.zeros((T, K, A))
    mask = np.eye(A, dtype=bool)[:T]
    with pytest.raises(ShapeMismatchError):
        M.skill_data(q[0], mask)
    with pytest.raises(ShapeMismatchError, match="action_mask"):
        M.skill_data(q, mask[:, :3])
    bad = q.copy()
    bad[1, 2, 3] = np.nan
    with pytest.raises(NonFiniteLoglikError, match=r"\(1, 2, 3\)"):
        M.skill_data(bad, mask)
    bad = q.copy()
    bad[0, 1] = -np.inf
    with pytest.raises(NonFiniteLoglikError, match="finite action value"):
        M.skill_data(bad, mask)
    with pytest.raises(NoFeasibleSkillError):
        M.skill_data(q, mask, feasible=np.zeros((T, K), bool))
    with pytest.raises(CompletedIndexError):
        M.skill_data(q, mask, completed=np.array([-1, 3, -1, -1]))
    with pytest.raises(CompletedIndexError):
        M.skill_data(q, mask, completed=np.array([-2, 0, -1, -1]))
    with pytest.raises(InvalidParameterError):
        M.skill_data(q, mask, weight=-np.ones(T))
    with pytest.raises(ShapeMismatchError, match="no action"):
        M.skill_data(q, np.zeros((T, A), bool))
    # Padding steps may hold anything.
    padded = M.skill_data(bad, mask, valid=np.array([False, True, True, True]))
    assert np.all(np.isfinite(np.asarray(padded.q)))
    assert issubclass(ShapeMismatchError, BeliefInputError)
    assert issubclass(BeliefInputError, ValueError)


# ----------------------------------------------------------------------------------------
# End to end: fit the marginalised model on prior-predictive data (slow)
# ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_nuts_recovers_parameters_from_simulated_trajectories():
    from numpyro.infer import MCMC, NUTS

    truth = {"beta": 3.0, "epsilon": 0.1, "hazard": 0.1, "alpha": 1.0}
    rng = np.random.default_rng(0)
    batch, steps, skills, actions = 10, 50, 3, 5
    q = -rng.integers(0, 5, size=(batch, steps, skills, actions)).astype(float)
    template = M.skill_data(q, np.ones((batch, steps, actions), bool))
    masks = []
    for b in range(batch):
        one = jax.tree_util.tree_map(lambda x: x[b], template)
        draw = M.prior_predictive(jax.random.PRNGKey(b), one, truth, num_samples=1)
        masks.append(np.eye(actions, dtype=bool)[np.asarray(draw["a"][0])])
    data = M.skill_data(q, np.stack(masks))
    mcmc = MCMC(NUTS(M.partner_skill_model), num_warmup=150, num_samples=150, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(1), data)
    samples = mcmc.get_samples()
    assert samples["log_lik"].shape == (150, batch)
    for name in ("beta", "hazard"):
        lo, hi = np.quantile(np.asarray(samples[name]), [0.01, 0.99])
        assert lo < truth[name] < hi, (name, lo, hi)


# --------------------------------------------------------------------------- transitions as components


def test_each_transition_predict_is_one_definition_for_numpy_and_jax(x64):
    """The hazard and windowed predicts are written once over ``xp``: NumPy and jax.numpy give
    the same numbers (float64), and the windowed log predict is the direct formula."""
    from beliefgate.models.transitions import hazard as TH
    from beliefgate.models.transitions import windowed as TW

    rng = np.random.default_rng(3)
    log_b = np.log(rng.dirichlet(np.ones(4)))
    log_pi0 = np.log(rng.dirichlet(np.ones(4)))
    feas = np.array([True, False, True, True])
    for reset in (False, True):
        got_np = TH.log_predict(np, log_b, log_pi0, feas, 0.1, reset)
        got_jx = np.asarray(TH.log_predict(jnp, jnp.asarray(log_b), jnp.asarray(log_pi0), jnp.asarray(feas),
                                           0.1, reset))
        np.testing.assert_allclose(got_np, got_jx, rtol=1e-12)
        assert got_np[1] == -np.inf
    before = rng.normal(size=4) * 3
    lp_np, lw_np, p_np = TW.segment_log_predict(np, log_pi0, feas, before)
    lp_jx, lw_jx, p_jx = TW.segment_log_predict(jnp, jnp.asarray(log_pi0), jnp.asarray(feas), jnp.asarray(before))
    direct = np.where(feas, np.exp(log_pi0 + before), 0.0)
    np.testing.assert_allclose(np.exp(lp_np), direct / direct.sum(), rtol=1e-12)
    np.testing.assert_allclose(np.exp(np.asarray(lp_jx)), direct / direct.sum(), rtol=1e-12)
    np.testing.assert_allclose(p_np, direct / direct.sum(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(p_jx), direct / direct.sum(), rtol=1e-12)
    assert float(lw_np) == pytest.approx(float(lw_jx), rel=1e-12)
    # a window that rules out every feasible skill: log_w = -inf (the gate refuses the step)
    for xp in (np, jnp):
        _, lw, _ = TW.segment_log_predict(xp, xp.asarray(log_pi0), xp.asarray(feas),
                                          xp.asarray(np.where(feas, -np.inf, 0.0)))
        assert float(lw) == -np.inf


def test_filters_dispatch_on_the_transition_component():
    """The model string picks a component once; an unknown one is a one-line error naming it."""
    from beliefgate.models.transitions import HAZARD, MODELS, WINDOWED, get_transition

    assert get_transition("hazard") is HAZARD and get_transition("windowed") is WINDOWED
    assert MODELS == ("hazard", "windowed")
    assert HAZARD.window_slots(5) == 0 and WINDOWED.window_slots(5) == 5 and WINDOWED.window_slots(None) == 0
    assert HAZARD.has_matrix and not WINDOWED.has_matrix
    with pytest.raises(InvalidParameterError, match="'sticky'"):
        get_transition("sticky")


def test_one_min_hazard():
    from beliefgate.beliefs import config
    from beliefgate.models import components, fit, skill_model, transitions

    assert config.MIN_HAZARD == components.MIN_HAZARD == fit.MIN_HAZARD == skill_model.MIN_HAZARD \
        == transitions.MIN_HAZARD == 1e-30
