"""The goal model (a latent goal above the skill chain, docs/goal.md) against brute force.

Small random problems (2 goals x 3 skills x 4 steps, random feasibility, completions,
goal-change flags, direct goal evidence, tempering weights, goal priors with a zero and
parameters) in float64: the forward algorithm (JAX scan and NumPy GoalFilter, one step
definition) against enumeration of every (g, k) path of the explicit NumPyro model, the
dense transition against a literal transcription of the equations, the marginalised model's
log density against the filter, a seeded simulation for the goal posterior, bad input, jit.
"""

from __future__ import annotations

import itertools
import json
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.nn import logsumexp
from numpyro.handlers import condition, substitute
from numpyro.infer.util import log_density

from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.beliefs.goal import (
    GoalEvidence,
    GoalFilter,
    GoalParamError,
    GoalParams,
    evidence_loglik,
    goal_block,
    steps_to_confidence,
)
from beliefgate.models.controllers import boltzmann_logprobs
from beliefgate.models.errors import (
    ActionIndexError,
    CompletedIndexError,
    ImpossibleObservationError,
    InvalidParameterError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
)
from beliefgate.models.goal import model as GM
from beliefgate.models.goal import step as GS
from beliefgate.models.goal.step import GoalPriorError, GoalSkillPriorError, goal_skill_log_weights
from beliefgate.models.skill_model import controller_loglik

T, G, K, A = 4, 2, 3, 5
STATES = list(itertools.product(range(G), range(K)))
PATHS = np.array(list(itertools.product(range(G * K), repeat=T)), dtype=np.int32)  # (G K)^T = 1296
SEEDS = [0, 1, 2, 3, 4, 5]

pytestmark = pytest.mark.usefixtures("x64")


def random_problem(seed: int, steps: int = T, valid=None):
    """Random (GoalData, values) with every part of the model exercised."""
    rng = np.random.default_rng(seed)
    q = -rng.integers(0, 6, size=(steps, K, A)).astype(float)
    q[rng.random((steps, K, A)) < 0.1] = -np.inf
    q[..., 0] = np.maximum(q[..., 0], -3.0)
    mask = np.zeros((steps, A), bool)
    mask[np.arange(steps), rng.integers(0, A, steps)] = True
    mask[rng.integers(0, steps), rng.integers(0, A)] = True  # one ambiguous step
    weight = rng.choice([0.0, 0.35, 1.0], size=steps, p=[0.2, 0.3, 0.5])
    feasible = rng.random((steps, K)) < 0.6
    feasible[np.arange(steps), rng.integers(0, K, steps)] = True
    completed = np.where(rng.random(steps) < 0.35, rng.integers(0, K, steps), -1)
    log_weights = rng.normal(size=(steps, G, K)) * 1.5
    log_weights[rng.random((steps, G, K)) < 0.2] = -np.inf
    for t in range(steps):  # every goal keeps a feasible skill with a finite weight
        for g in range(G):
            if not np.any(np.isfinite(log_weights[t, g]) & feasible[t]):
                log_weights[t, g, np.flatnonzero(feasible[t])[0]] = 0.0
    goal_prior = rng.dirichlet(np.ones(G))
    goal_change = rng.choice([0.0, 0.5, 1.0], size=steps, p=[0.6, 0.2, 0.2])
    goal_loglik = np.where(rng.random((steps, 1)) < 0.3, rng.normal(size=(steps, G)), 0.0)
    values = dict(beta=rng.uniform(0.5, 3.0), epsilon=rng.uniform(0.05, 0.3),
                  hazard=rng.uniform(0.05, 0.5), goal_hazard=rng.uniform(0.01, 0.3))
    data = GM.goal_data(q, mask, log_weights, goal_prior, goal_change, goal_loglik, weight=weight,
                        feasible=feasible, completed=completed, valid=valid)
    return data, values


@jax.jit
def _path_log_joint(data, values):
    # the explicit model reads `valid` concretely (padding creates no site): every step is valid here
    data = data._replace(skill=data.skill._replace(valid=np.ones(T, bool)))
    model = partial(GM.partner_goal_model_explicit, fixed=values)

    def one(path):
        sites = {}
        for t in range(T):
            sites[f"g_{t}"] = path[t] // K
            sites[f"z_{t}"] = path[t] % K
        return log_density(condition(model, data=sites), (data,), {}, {})[0]

    return jax.vmap(one)(jnp.asarray(PATHS))


def path_log_joint(data, values) -> np.ndarray:
    """``log p(path, a)`` for all (G K)^T paths, from the explicit NumPyro model (one compilation
    per data shape: the parameters are traced)."""
    assert np.all(np.asarray(data.skill.valid))
    return np.asarray(_path_log_joint(data, {k: jnp.asarray(v) for k, v in values.items()}))


@jax.jit
def _scan(data, values) -> GM.GoalScan:
    loglik = controller_loglik(data.skill, values["beta"], values["epsilon"])
    return GM.scan_goal(values["hazard"], values["goal_hazard"], GM.goal_observations(data, loglik))


def scan(data, values) -> GM.GoalScan:
    return _scan(data, {k: jnp.asarray(v) for k, v in values.items()})


def numpy_filter(data, values):
    """Run the NumPy GoalFilter on the data's steps (raw controller tables as StepEvidence)."""
    s = data.skill
    filt = GoalFilter(K, np.exp(np.asarray(data.log_goal_prior)),
                      params=GoalParams(hazard=values["hazard"], goal_hazard=values["goal_hazard"]))
    logp = boltzmann_logprobs(np.asarray(s.q), values["beta"], values["epsilon"])
    evidence = [GoalEvidence(StepEvidence(logp[t], np.asarray(s.action_mask[t]), float(s.weight[t]),
                                          int(s.completed[t]) if s.completed[t] >= 0 else None,
                                          np.asarray(s.feasible[t])),
                             np.asarray(data.log_weights[t]), float(data.goal_change[t]),
                             np.asarray(data.goal_loglik[t]))
                for t in range(s.q.shape[0]) if bool(s.valid[t])]
    return filt.run(evidence)


# ----------------------------------------------------------------------------------------
# The transition: a literal transcription of docs/goal.md against the dense form and the predict
# ----------------------------------------------------------------------------------------


def reference_transition(log_rho, log_weights, feasible, hazard, redraw, reset):
    """docs/goal.md written out with loops (NumPy): T[g', k', g, k]."""
    rho = np.exp(log_rho)
    w = np.exp(log_weights)
    pi = w / w.sum(-1, keepdims=True)
    f = feasible.astype(float)
    out = np.zeros((G, K, G, K))
    for gp, kp, g, k in itertools.product(range(G), range(K), range(G), range(K)):
        forced = pi[g, k] * f[k] / np.sum(pi[g] * f)
        if reset or not feasible[kp]:
            skill = forced
        else:
            z = (1 - hazard) * f[kp] + hazard * np.sum(pi[g] * f)
            skill = ((1 - hazard) * (k == kp) + hazard * pi[g, k]) * f[k] / z
        out[gp, kp, g, k] = (1 - redraw) * (g == gp) * skill + redraw * rho[g] * forced
    return out


@pytest.mark.parametrize("reset", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dense_transition_is_the_documented_one_and_equals_the_predict(seed, reset):
    rng = np.random.default_rng(seed)
    log_rho = np.log(rng.dirichlet(np.ones(G)))
    log_w = rng.normal(size=(G, K))
    feasible = np.array([True, False, True])
    hazard, redraw = rng.uniform(0.05, 0.5), rng.uniform(0.0, 0.5)
    want = reference_transition(log_rho, log_w, feasible, hazard, redraw, reset)
    with np.errstate(divide="ignore"):
        got = np.exp(GS.goal_log_transition(np, log_rho, log_w, feasible, hazard, redraw, reset))
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(got.sum((2, 3)), 1.0, atol=1e-12)
    # the O(G K) predict is the dense matrix applied to the belief, in NumPy and in JAX
    log_joint = np.log(rng.dirichlet(np.ones(G * K)).reshape(G, K))
    with np.errstate(divide="ignore"):
        dense = np.log(np.einsum("ab,abcd->cd", np.exp(log_joint), want))
    with np.errstate(divide="ignore"):
        pred_np = GS.goal_predict(np, log_joint, log_rho, log_w, feasible, hazard, redraw, reset)
    pred_jx = np.asarray(GS.goal_predict(jnp, jnp.asarray(log_joint), jnp.asarray(log_rho), jnp.asarray(log_w),
                                         jnp.asarray(feasible), hazard, redraw, reset))
    np.testing.assert_allclose(np.exp(pred_np), np.exp(dense), atol=1e-12)
    np.testing.assert_allclose(pred_np, pred_jx, rtol=1e-12)
    assert np.all(pred_np[:, 1] == -np.inf)


# ----------------------------------------------------------------------------------------
# Brute force: the log marginal and the filtered posterior
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_forward_log_marginal_equals_enumeration_of_every_goal_and_skill_path(seed):
    data, values = random_problem(seed)
    lj = path_log_joint(data, values)
    brute = float(logsumexp(lj))
    result = scan(data, values)
    assert float(result.log_marginal) == pytest.approx(brute, abs=1e-9)
    trace = numpy_filter(data, values)
    assert trace.log_marginal == pytest.approx(brute, abs=1e-9)
    np.testing.assert_allclose(trace.log_normalizer, np.asarray(result.log_normalizer), atol=1e-9)
    # the final filtered joint p(g_T, k_T | a) from the path posterior
    post = np.exp(lj - logsumexp(lj))
    final = np.bincount(PATHS[:, -1], weights=post, minlength=G * K).reshape(G, K)
    np.testing.assert_allclose(np.exp(trace.log_posterior[-1]), final, atol=1e-9)
    np.testing.assert_allclose(trace.goal_posterior[-1], final.sum(1), atol=1e-9)
    np.testing.assert_allclose(trace.skill_posterior[-1], final.sum(0), atol=1e-9)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_filtered_posterior_at_every_step_equals_enumeration_without_later_evidence(seed):
    data, values = random_problem(seed)
    trace = numpy_filter(data, values)
    for t in range(T):
        later = np.arange(T) > t
        cut = data._replace(
            skill=data.skill._replace(weight=jnp.where(later, 0.0, data.skill.weight)),
            goal_loglik=jnp.where(later[:, None], 0.0, data.goal_loglik))
        lj = path_log_joint(cut, values)
        post = np.exp(lj - logsumexp(lj))
        want = np.bincount(PATHS[:, t], weights=post, minlength=G * K).reshape(G, K)
        np.testing.assert_allclose(np.exp(trace.log_posterior[t]), want, atol=1e-9)


@jax.jit
def _marginal_log_density(data, values):
    """``log_density`` of the marginalised model with every parameter fixed, and its ``log_lik`` site."""
    ld, trace = log_density(partial(GM.partner_goal_model, fixed=values), (data,), {}, {})
    return ld, trace["log_lik"]["value"]


@jax.jit
def _sampled_log_density(data, values):
    """``log_density`` with beta, epsilon and hazard as sample sites (substituted), goal_hazard fixed."""
    ld, trace = log_density(substitute(GM.partner_goal_model, data=values), (data,), {}, {})
    priors = sum(trace[name]["fn"].log_prob(values[name]) for name in ("beta", "epsilon", "hazard"))
    return ld, priors, {name: site["value"] for name, site in trace.items()}


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_log_density_of_the_marginalised_model_equals_the_filter(seed):
    data, values = random_problem(seed)
    brute = float(logsumexp(path_log_joint(data, values)))
    traced = {k: jnp.asarray(v) for k, v in values.items()}
    ld, log_lik = _marginal_log_density(data, traced)
    assert float(ld) == pytest.approx(brute, abs=1e-9)
    assert float(log_lik) == pytest.approx(brute, abs=1e-9)
    # with the parameters as sample sites: the priors' log densities plus the same likelihood
    sampled = {k: v for k, v in traced.items() if k != "goal_hazard"}
    ld2, priors, sites = _sampled_log_density(data, sampled)
    assert set(sites) >= {"beta", "epsilon", "hazard", "obs"} and "goal_hazard" not in sites
    goal_fixed = {**values, "goal_hazard": GM.GOAL_HAZARD.default}
    want = float(logsumexp(path_log_joint(data, goal_fixed))) + float(priors)
    assert float(ld2) == pytest.approx(want, abs=1e-9)


def test_padding_steps_change_nothing_and_a_batch_is_per_trajectory():
    valid = np.array([True, False, True, True])
    data, values = random_problem(11, valid=valid)
    padded = scan(data, values)
    trace = numpy_filter(data, values)  # the NumPy filter never sees the padding steps
    assert float(padded.log_marginal) == pytest.approx(trace.log_marginal, abs=1e-9)
    assert np.all(np.asarray(padded.log_normalizer)[~valid] == 0.0)
    np.testing.assert_allclose(np.exp(np.asarray(padded.log_posterior)[valid]), np.exp(trace.log_posterior),
                               atol=1e-9)
    # a batch of two: the per-trajectory log likelihoods are those of each alone
    other, _ = random_problem(12)
    both = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), data, other)
    per = np.asarray(jax.jit(GM.goal_trajectory_log_likelihood)(both, values))
    assert per.shape == (2,)
    assert per[0] == pytest.approx(float(padded.log_marginal), abs=1e-9)
    assert per[1] == pytest.approx(float(scan(other, values).log_marginal), abs=1e-9)


def test_gradients_of_the_marginalised_likelihood_are_finite():
    data, values = random_problem(3)
    grad = jax.jit(jax.grad(GM.goal_trajectory_log_likelihood, argnums=1))
    values = {k: jnp.asarray(v) for k, v in values.items()}
    for point in (values, {**values, "hazard": jnp.asarray(0.0), "goal_hazard": jnp.asarray(0.0)}):
        grads = grad(data, point)
        assert all(np.isfinite(float(g)) for g in grads.values()), grads


# ----------------------------------------------------------------------------------------
# Semantics the domain relies on
# ----------------------------------------------------------------------------------------


def test_a_flagged_goal_change_returns_the_goal_marginal_to_the_prior():
    rho = np.array([0.2, 0.3, 0.5])
    filt = GoalFilter(2, rho, params=GoalParams(hazard=0.1, goal_hazard=0.0))
    weights = np.log(np.array([[9.0, 1.0], [1.0, 9.0], [1.0, 1.0]]))
    # the partner completes skill 0 at every step, so each step is a fresh draw from pi(k | g)
    ev = GoalEvidence(StepEvidence(np.log([[0.9, 0.1], [0.1, 0.9]]), np.array([True, False]), completed=0),
                      weights)
    belief = filt.init()
    for _ in range(5):
        belief, info = filt.update(belief, ev)
    assert info.map_goal == 0 and info.confidence > 0.5
    belief, _ = filt.update(belief, ev._replace(goal_change=1.0))
    _, after = filt.update(belief, ev)
    np.testing.assert_allclose(np.exp(after.log_predicted).sum(1), rho, atol=1e-12)
    # unflagged, the goal marginal carries over unchanged into the next predict
    belief, last = filt.update(belief, ev)
    _, nxt = filt.update(belief, ev)
    np.testing.assert_allclose(np.exp(nxt.log_predicted).sum(1), last.goal_posterior, atol=1e-12)


def test_goal_skill_log_weights_from_a_serves_table():
    serves = np.array([[True, False, True], [False, False, True]])
    w = goal_skill_log_weights(serves, concentration=4.0)
    pi = np.exp(w) / np.exp(w).sum(-1, keepdims=True)
    np.testing.assert_allclose(pi[0], np.array([5, 1, 5]) / 11)
    np.testing.assert_allclose(pi[1], np.array([1, 1, 5]) / 7)
    np.testing.assert_allclose(goal_skill_log_weights(serves, 0.0), 0.0)  # uninformative
    np.testing.assert_allclose(goal_skill_log_weights(np.array([[2.0, 0.0]]), 1.0), np.log([[3.0, 1.0]]))
    with pytest.raises(InvalidParameterError, match="concentration"):
        goal_skill_log_weights(serves, -1.0)
    with pytest.raises(InvalidParameterError, match="serves"):
        goal_skill_log_weights(np.array([[1.0, -1.0]]), 1.0)
    with pytest.raises(ShapeMismatchError, match="serves"):
        goal_skill_log_weights(np.array([True, False]), 1.0)


# ----------------------------------------------------------------------------------------
# Simulation: the goal posterior concentrates on the true goal
# ----------------------------------------------------------------------------------------

#: G = 4 goals (recipes), K = 6 skills; skill k serves the goals in SERVES[:, k] (two skills
#: serve every goal, like "pick up a plate"); concentration 8.
SERVES = np.array([[1, 1, 0, 0, 1, 1],
                   [1, 0, 1, 0, 1, 1],
                   [0, 1, 0, 1, 1, 1],
                   [0, 0, 1, 1, 1, 1]], bool)
SIM = dict(beta=3.0, epsilon=0.1, hazard=0.1, goal_hazard=0.0)
SIM_STEPS, SIM_SEEDS, SIM_LEVEL = 250, 12, 0.9


def simulated_episode(seed: int, steps: int = SIM_STEPS):
    """One seeded simulation from the model: random Q tables, a completion every ~6 steps,
    the goal drawn from a uniform prior and kept (goal_hazard 0)."""
    rng = np.random.default_rng(1000 + seed)
    q = -rng.integers(0, 5, size=(steps, SERVES.shape[1], A)).astype(float)
    completed = np.where(rng.random(steps) < 1 / 6, 0, -1)
    weights = np.broadcast_to(goal_skill_log_weights(SERVES, 8.0), (steps,) + SERVES.shape)
    template = GM.goal_data(q, np.ones((steps, A), bool), weights, completed=completed)
    draw = GM.sample_goal_paths(jax.random.PRNGKey(seed), template, SIM)
    a = np.asarray(draw["a"][0])
    goal = int(draw["g"][0, 0])
    assert np.all(np.asarray(draw["g"][0]) == goal)  # goal_hazard 0: one goal all along
    logp = boltzmann_logprobs(q, SIM["beta"], SIM["epsilon"])
    comp = np.asarray(draw["completed"][0])
    evidence = [GoalEvidence(StepEvidence(logp[t], np.eye(A, dtype=bool)[a[t]], 1.0,
                                          int(comp[t]) if comp[t] >= 0 else None),
                             weights[t]) for t in range(steps)]
    return goal, evidence, np.asarray(draw["z"][0])


def test_goal_posterior_concentrates_on_the_true_goal_in_simulations():
    filt = GoalFilter(SERVES.shape[1], num_goals=SERVES.shape[0],
                      params=GoalParams(hazard=SIM["hazard"], goal_hazard=SIM["goal_hazard"]))
    needed, correct_last, skill_hits = [], 0, []
    for seed in range(SIM_SEEDS):
        goal, evidence, z = simulated_episode(seed)
        trace = filt.run(evidence)
        correct_last += int(trace.map_goal[-1] == goal)
        needed.append(steps_to_confidence(trace.goal_posterior, goal, SIM_LEVEL))
        skill_hits.append(np.mean(np.argmax(trace.skill_posterior, 1) == z))
    # measured (seeds 0-11, docs/goal.md): the true goal is the MAP at the last step in all 12,
    # and P(true goal) >= 0.9 from then on after 20-144 steps (median 74.5)
    assert correct_last == SIM_SEEDS, needed
    assert all(n is not None for n in needed), needed
    assert np.median(needed) <= 100 and max(needed) <= 200, needed
    assert np.mean(skill_hits) > 0.5, skill_hits


# ----------------------------------------------------------------------------------------
# Bad input: specific errors naming the array
# ----------------------------------------------------------------------------------------


def _evidence(**change):
    base = GoalEvidence(StepEvidence(np.log(np.full((3, 4), 0.25)), np.array([True, False, False, False])),
                        np.zeros((2, 3)))
    step = change.pop("step", {})
    return base._replace(step=base.step._replace(**step), **change)


@pytest.mark.parametrize("evidence, error, name", [
    (_evidence(log_weights=np.zeros((3, 3))), ShapeMismatchError, "log_weights"),
    (_evidence(log_weights=np.zeros((2, 4))), ShapeMismatchError, "log_weights"),
    (_evidence(log_weights=np.array([[0.0, np.nan, 0.0], [0.0, 0.0, 0.0]])), NonFiniteLoglikError, "log_weights"),
    (_evidence(log_weights=np.array([[0.0, 0.0, 0.0], [-np.inf] * 3])), GoalSkillPriorError, "goal 1"),
    (_evidence(goal_change=1.5), InvalidParameterError, "goal_change"),
    (_evidence(goal_change=float("nan")), InvalidParameterError, "goal_change"),
    (_evidence(goal_loglik=np.array([0.0, np.nan])), NonFiniteLoglikError, "goal_loglik"),
    (_evidence(goal_loglik=np.zeros(3)), ShapeMismatchError, "goal_loglik"),
    (_evidence(step={"logprobs": np.zeros((2, 4))}), ShapeMismatchError, "logprobs"),
    (_evidence(step={"logprobs": np.full((3, 4), np.nan)}), NonFiniteLoglikError, "logprobs"),
    (_evidence(step={"action_mask": np.zeros(4, bool)}), ActionIndexError, "action_mask"),
    (_evidence(step={"action_mask": np.ones(5, bool)}), ShapeMismatchError, "action_mask"),
    (_evidence(step={"feasible": np.zeros(3, bool)}), NoFeasibleSkillError, "feasible"),
    (_evidence(step={"completed": 3}), CompletedIndexError, "completed"),
])
def test_bad_evidence_raises_a_specific_error_naming_the_array(evidence, error, name):
    filt = GoalFilter(3, num_goals=2)
    with pytest.raises(error, match=name) as info:
        filt.update(filt.init(), evidence)
    assert "\n" not in str(info.value)


def test_bad_configuration_and_data_raise_specific_errors():
    with pytest.raises(GoalPriorError, match="goal_prior.*normalised"):
        GoalFilter(3, [0.0, 0.0])
    with pytest.raises(GoalPriorError, match="goal_prior"):
        GoalFilter(3, [1.0, -0.5])
    with pytest.raises(GoalPriorError, match="goal_prior"):
        GoalFilter(3, [1.0, np.nan])
    with pytest.raises(GoalPriorError, match="goal_prior"):
        GoalFilter(3)  # neither a prior nor a number of goals
    with pytest.raises(ShapeMismatchError, match="num_skills"):
        GoalFilter(0, num_goals=2)
    with pytest.raises(GoalParamError, match="hazard"):
        GoalParams(hazard=2.0)
    with pytest.raises(GoalParamError, match="goal_hazard"):
        GoalParams(goal_hazard=-0.1)
    q, mask = np.zeros((4, 3, 5)), np.ones((4, 5), bool)
    with pytest.raises(ShapeMismatchError, match="log_weights"):
        GM.goal_data(q, mask, np.zeros((4, 2, 2)))
    with pytest.raises(GoalPriorError, match="goal_prior"):
        GM.goal_data(q, mask, np.zeros((4, 2, 3)), goal_prior=[0.0, 0.0])
    with pytest.raises(ShapeMismatchError, match="goal_prior"):
        GM.goal_data(q, mask, np.zeros((4, 2, 3)), goal_prior=[0.5, 0.25, 0.25])
    with pytest.raises(NonFiniteLoglikError, match="log_weights"):
        GM.goal_data(q, mask, np.full((4, 2, 3), np.inf))
    with pytest.raises(ShapeMismatchError, match="goal_change"):
        GM.goal_data(q, mask, np.zeros((4, 2, 3)), goal_change=np.zeros(3))
    with pytest.raises(GM.GoalFitError, match="draws"):
        GM.GoalFitConfig(draws=0)
    with pytest.raises(GM.GoalFitError, match="unknown"):
        GM.GoalFitConfig(fixed={"alpha": 1.0})


def test_an_impossible_observation_is_refused():
    filt = GoalFilter(2, num_goals=1)
    never = np.array([[0.0, -np.inf], [0.0, -np.inf]])  # action 1 has probability 0 under both skills
    ev = GoalEvidence(StepEvidence(never, np.array([False, True])), np.zeros((1, 2)))
    with pytest.raises(ImpossibleObservationError, match="step 0"):
        filt.update(filt.init(), ev)


def test_evidence_loglik_is_the_skill_models_row():
    data, values = random_problem(4)
    want = np.asarray(controller_loglik(data.skill, values["beta"], values["epsilon"]))
    logp = boltzmann_logprobs(np.asarray(data.skill.q), values["beta"], values["epsilon"])
    for t in range(T):
        got = evidence_loglik(StepEvidence(logp[t], np.asarray(data.skill.action_mask[t]),
                                           float(data.skill.weight[t])), K)
        np.testing.assert_allclose(got, want[t], atol=1e-12)


# ----------------------------------------------------------------------------------------
# jit: one compilation for a loop over same-shaped inputs
# ----------------------------------------------------------------------------------------


def test_jitted_forward_does_not_recompile_for_same_shaped_inputs():
    """``filter_goal`` (the jitted JAX forward) compiles once for a loop over same-shaped problems
    with different parameter values, and gives the scan's numbers."""
    outs = []
    before = None
    for seed in range(5):
        data, values = random_problem(20 + seed)
        result = GM.filter_goal(data, values)
        size = GM._filter_jit._cache_size()
        before = size if before is None else before
        assert size == before, (seed, size, before)
        outs.append(float(result.log_marginal))
        assert outs[-1] == pytest.approx(float(scan(data, values).log_marginal), abs=1e-12)
    assert len(set(outs)) == 5
    with pytest.raises(ShapeMismatchError, match="GoalData"):
        GM.filter_goal({"q": 1}, values)
    with pytest.raises(InvalidParameterError, match="hazard"):
        GM.filter_goal(data, {"hazard": 1.5})


# ----------------------------------------------------------------------------------------
# Fit (slow): NUTS with (g, k) summed out recovers the hazard and beta
# ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_nuts_fit_recovers_hazard_and_beta_from_simulated_episodes():
    truth = {"beta": 3.0, "epsilon": 0.1, "hazard": 0.1, "goal_hazard": 0.002}
    rng = np.random.default_rng(0)
    batch, steps = 10, 80
    q = -rng.integers(0, 8, size=(batch, steps, SERVES.shape[1], A)).astype(float)
    weights = np.broadcast_to(goal_skill_log_weights(SERVES, 8.0), (batch, steps) + SERVES.shape)
    completed = np.where(rng.random((batch, steps)) < 1 / 8, 0, -1)
    masks, comps = [], []
    for b in range(batch):
        one = GM.goal_data(q[b], np.ones((steps, A), bool), weights[b], completed=completed[b])
        draw = GM.sample_goal_paths(jax.random.PRNGKey(b), one, truth)
        masks.append(np.eye(A, dtype=bool)[np.asarray(draw["a"][0])])
        comps.append(np.asarray(draw["completed"][0]))
    data = GM.goal_data(q, np.stack(masks), weights, completed=np.stack(comps))
    idata = GM.fit_goal(data, GM.GoalFitConfig(draws=200, warmup=200, seed=1, fixed={"epsilon": 0.1}))
    assert idata.log_likelihood["log_lik"].shape == (1, 200, batch)
    assert "epsilon" not in idata.posterior
    # the prior the posterior is read against: the sampled parameters only, drawn from their priors
    assert set(idata.prior) == {"beta", "hazard"} and idata.prior["beta"].shape == (1, 500)
    assert float(idata.prior["hazard"].std()) > float(idata.posterior["hazard"].std())
    # measured (docs/goal.md): beta 2.93 [2.21, 3.76], hazard 0.082 [0.053, 0.128] (mean [1%, 99%])
    for name in ("beta", "hazard"):
        draws = np.asarray(idata.posterior[name]).ravel()
        lo, hi = np.quantile(draws, [0.01, 0.99])
        assert lo < truth[name] < hi, (name, lo, hi)


def test_the_docs_example_runs_and_infers_the_onion_recipe():
    """docs/goal.md's wiring example runs as written; two onion pickups make the two-onion recipe the MAP."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "goal.md").read_text(encoding="utf-8")
    code = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)[0]
    scope: dict = {}
    exec(compile(code, "docs/goal.md", "exec"), scope)  # noqa: S102  (our own documentation)
    info = scope["info"]
    assert scope["recipes"][info.map_goal] == ("onion", "onion")
    assert info.confidence > 0.5 and abs(info.goal_posterior.sum() - 1.0) < 1e-12
    # the planners' summary of the step, by name
    names = ["+".join(r) for r in scope["recipes"]]
    block = goal_block(info, names, scope["skills"])
    assert block["map_goal"] == "onion+onion" and block["confidence"] == pytest.approx(info.confidence)
    assert block["map_skill"] == scope["skills"][info.map_skill]
    assert sum(block["goal_posterior"].values()) == pytest.approx(1.0)
    json.dumps(block)
    with pytest.raises(ShapeMismatchError, match="goal_names"):
        goal_block(info, names[:2])


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_with_one_goal_it_is_the_skill_models_hazard_filter(seed):
    """G = 1, no goal redraw and the skill model's smoothed prior pi0_t ∝ n_t + alpha as the
    goal's skill log-weights: the goal filter is the skill model's hazard filter (models/hmm.py)."""
    from beliefgate.models.hmm import FilterParams, Observations, scan_filter

    rng = np.random.default_rng(100 + seed)
    steps = 12
    loglik = np.where(rng.random((steps, K)) < 0.1, -np.inf, rng.normal(size=(steps, K)) * 2)
    loglik[:, 0] = np.maximum(loglik[:, 0], -5.0)
    loglik[rng.random(steps) < 0.2] = 0.0  # excluded steps
    feasible = rng.random((steps, K)) < 0.7
    feasible[np.arange(steps), rng.integers(0, K, steps)] = True
    feasible[:, 0] = True
    completed = np.where(rng.random(steps) < 0.3, rng.integers(0, K, steps), -1)
    prior_counts, alpha, hazard = rng.integers(0, 3, K).astype(float), 0.7, 0.15
    counts, log_weights = prior_counts.copy(), []
    for t in range(steps):
        log_weights.append(np.log(counts + alpha)[None, :])
        if completed[t] >= 0:
            counts[completed[t]] += 1
    skill_state, skill_info = scan_filter(
        FilterParams("hazard", hazard, alpha, None),
        Observations(jnp.asarray(loglik), jnp.asarray(feasible), jnp.asarray(completed, jnp.int32),
                     jnp.ones(steps, bool), jnp.asarray(prior_counts)))
    filt = GoalFilter(K, [1.0], params=GoalParams(hazard=hazard, goal_hazard=0.0))
    belief = filt.init()
    for t in range(steps):
        before = belief.log_joint.copy()
        new, info = filt.update_arrays(belief, loglik[t], log_weights[t], feasible[t], int(completed[t]))
        np.testing.assert_array_equal(belief.log_joint, before)  # update is pure
        belief = new
        np.testing.assert_allclose(np.exp(info.log_posterior[0]), np.exp(np.asarray(skill_info.log_posterior[t])),
                                   atol=1e-12)
        assert info.log_z == pytest.approx(float(skill_info.log_normalizer[t]), abs=1e-10)
    assert belief.log_marginal == pytest.approx(float(skill_state.log_marginal), abs=1e-9)
