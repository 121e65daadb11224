"""The plug-in Gate: contract, brute force, agreement with the JAX filter, monotonicity, bad input."""

from __future__ import annotations

import copy
import itertools
import json
import math
import pickle
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beliefgate import Decision, Gate, GateParams
from beliefgate.beliefs.config import GateParamError
from beliefgate.beliefs.errors import (
    BeliefInputError,
    CompletedIndexError,
    ImpossibleObservationError,
    InvalidParameterError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
)
from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.beliefs.gate import (
    ActionIndexError,
    GateInfo,
    GateState,
    InvalidWeightError,
    UnknownSkillError,
)
from test_gates import dense_transition, smoothed, switching_table

# --------------------------------------------------------------------------- fixtures and helpers


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def random_sequence(rng, num_skills=3, num_actions=5, steps=40, completions=True, feasibility=True,
                    weights=True, impossible_actions=False):
    """Random per-step evidence from a partner that switches skill now and then."""
    seq = []
    z = int(rng.integers(num_skills))
    for _ in range(steps):
        if rng.random() < 0.1:
            z = int(rng.integers(num_skills))
        lp = log_softmax(rng.normal(0.0, 2.0, size=(num_skills, num_actions)))
        if impossible_actions and rng.random() < 0.3:
            lp[int(rng.integers(num_skills)), int(rng.integers(num_actions))] = -np.inf
            lp = np.where(np.isinf(lp), lp, log_softmax(np.where(np.isinf(lp), -1e300, lp)))
        feas = None
        if feasibility and rng.random() < 0.3:
            feas = rng.random(num_skills) < 0.6
            feas[z] = True
        p = np.exp(lp[z])
        action = int(rng.choice(num_actions, p=p / p.sum()))
        weight = float(rng.choice([0.0, 0.35, 1.0], p=[0.15, 0.15, 0.7])) if weights else 1.0
        completed = z if completions and rng.random() < 0.08 else None
        seq.append(dict(lp=lp, action=action, completed=completed, feasible=feas, weight=weight))
    return seq


def run(gate, seq, **kwargs):
    return [gate.step(s["lp"], s["action"], s["completed"], feasible=s["feasible"],
                      weight=s["weight"], **kwargs) for s in seq]


def fixed_switching_sequence(seed=7, segment=15, order=(0, 1, 2, 0, 2)):
    rng = np.random.default_rng(seed)
    lp = switching_table()
    truth = [z for z in order for _ in range(segment)]
    return [dict(lp=lp, action=int(rng.choice(5, p=np.exp(lp[z]))), completed=None, feasible=None,
                 weight=1.0) for z in truth]


def count_interrupts(params, seq):
    return sum(d.interrupt for d in run(Gate.from_logprobs(seq[0]["lp"].shape[0], params), seq))


def assert_state_equal(a, b):
    assert type(a) is type(b)
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_state_equal(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b or (a != a and b != b)



MODELS = [
    GateParams(),
    GateParams(model="windowed", window=3),
    GateParams(model="windowed", window=None),
]


# --------------------------------------------------------------------------- contract table


@pytest.mark.parametrize("entry", ["step", "step_loglik", "step_evidence"])
@pytest.mark.parametrize("model", ["hazard", "windowed"])
@pytest.mark.parametrize("mode", ["stable_map", "changepoint", "either"])
def test_contract(entry, model, mode):
    rng = np.random.default_rng(0)
    num = 4
    gate = Gate.from_logprobs(num, GateParams(model=model, gate=mode), skill_names=list("abcd"))
    assert gate.t == 0 and gate.num_skills == num and gate.skill_names == tuple("abcd")
    for t, s in enumerate(random_sequence(rng, num, 6, steps=25)):
        if entry == "step":
            d = gate.step(s["lp"], s["action"], s["completed"], feasible=s["feasible"], weight=s["weight"])
        elif entry == "step_loglik":
            d = gate.step_loglik(s["lp"][:, s["action"]], s["completed"], feasible=s["feasible"],
                                 weight=s["weight"])
        else:
            mask = np.zeros(6, bool)
            mask[[s["action"], (s["action"] + 1) % 6]] = True
            d = gate.step_evidence(StepEvidence(s["lp"], mask, s["weight"], s["completed"], s["feasible"]))
        assert isinstance(d, Decision) and isinstance(d.info, GateInfo)
        for vec in (d.posterior, d.predictive, d.info.prior):
            assert isinstance(vec, np.ndarray) and vec.dtype == np.float64 and vec.shape == (num,)
            assert np.all(vec >= 0) and vec.sum() == pytest.approx(1.0, abs=1e-12)
        assert type(d.map_skill) is int and d.map_name == "abcd"[d.map_skill]
        assert d.map_skill == int(np.argmax(d.posterior))
        assert type(d.confidence) is float and d.confidence == d.posterior[d.map_skill]
        for flag in (d.contradiction, d.interrupt, d.changepoint):
            assert isinstance(flag, bool)
        if model == "windowed" and mode == "stable_map":  # not tracked by default
            assert math.isnan(d.changepoint_prob) and math.isnan(d.switch_prob) and not d.changepoint
        else:
            assert 0.0 <= d.switch_prob <= d.changepoint_prob + 1e-12 <= 1.0 + 1e-12
        assert d.info.t == t and gate.t == t + 1
        with pytest.raises(ValueError):
            d.posterior[0] = 1.0  # shared with the gate's state: read-only
        assert 0.0 <= d.info.l_t <= 1.0
        assert (d.info.suppressed_reason is None) == d.interrupt
        if s["feasible"] is not None:
            assert np.all(d.posterior[~s["feasible"]] == 0.0)
        json.dumps(d.info.to_dict())
    assert isinstance(gate.state, GateState)


# --------------------------------------------------------------------------- brute force


def enumerate_hazard(ll, feasible, completed, h, alpha=1.0):
    """Filtered posteriors and log marginal by summing over every skill path."""
    steps, num = ll.shape
    posts, log_marg = [], None
    for t in range(steps):
        post = np.zeros(num)
        for path in itertools.product(range(num), repeat=t + 1):
            counts = np.zeros(num)
            weight, restart = 1.0, True
            for tau, z in enumerate(path):
                mat = dense_transition(smoothed(counts, alpha), feasible[tau], h, restart)
                weight *= mat[path[tau - 1] if tau else 0, z] * math.exp(ll[tau, z])
                restart = completed[tau] >= 0
                if restart:
                    counts[completed[tau]] += 1
            post[path[-1]] += weight
        log_marg = math.log(post.sum())
        posts.append(post / post.sum())
    return np.array(posts), log_marg


def windowed_reference(ll, feasible, completed, window, alpha=1.0):
    """b_t ∝ pi0_seg feasible_t exp(sum of the last `window` observed rows of the segment)."""
    steps, num = ll.shape
    counts, rows, posts = np.zeros(num), [], []
    for t in range(steps):
        if np.any(ll[t] != 0):
            rows.append(ll[t])
        kept = rows[-window:] if window else rows
        window_sum = np.sum(kept, axis=0) if kept else 0.0
        with np.errstate(divide="ignore"):
            logb = np.log(smoothed(counts, alpha) * feasible[t]) + window_sum
        b = np.exp(logb - logb.max())
        posts.append(b / b.sum())
        if completed[t] >= 0:
            counts[completed[t]] += 1
            rows = []
    return np.array(posts)


def tiny_problem(seed):
    rng = np.random.default_rng(seed)
    steps, num, actions = 4, 3, 4
    tables = [log_softmax(rng.normal(0, 1.5, size=(num, actions))) for _ in range(steps)]
    acts = rng.integers(actions, size=steps)
    weights = np.array([1.0, 0.35, 0.0, 1.0])
    feasible = np.ones((steps, num), bool)
    feasible[2, 0] = False
    feasible[3, 2] = False
    completed = np.array([-1, 1, -1, -1])
    ll = np.array([w * tab[:, a] for w, tab, a in zip(weights, tables, acts)])
    return tables, acts, weights, feasible, completed, ll


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("h", [0.0, 0.1, 0.5])
def test_hazard_posterior_matches_path_enumeration(seed, h):
    tables, acts, weights, feasible, completed, ll = tiny_problem(seed)
    want, log_marg = enumerate_hazard(ll, feasible, completed, h)
    gate = Gate.from_logprobs(3, GateParams(hazard=h))
    for t in range(4):
        comp = int(completed[t]) if completed[t] >= 0 else None
        d = gate.step(tables[t], int(acts[t]), comp, feasible=feasible[t], weight=weights[t])
        np.testing.assert_allclose(d.posterior, want[t], rtol=0, atol=1e-12)
    assert gate.state.belief.log_evidence == pytest.approx(log_marg, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("window", [1, 2, None])
def test_windowed_posterior_matches_reference(seed, window):
    tables, acts, weights, feasible, completed, ll = tiny_problem(seed)
    want = windowed_reference(ll, feasible, completed, window)
    gate = Gate.from_logprobs(3, GateParams(model="windowed", window=window))
    for t in range(4):
        comp = int(completed[t]) if completed[t] >= 0 else None
        d = gate.step(tables[t], int(acts[t]), comp, feasible=feasible[t], weight=weights[t])
        np.testing.assert_allclose(d.posterior, want[t], rtol=0, atol=1e-12)


def test_infinite_window_is_hazard_zero():
    rng = np.random.default_rng(5)
    seq = random_sequence(rng, feasibility=False, steps=60)
    a = run(Gate.from_logprobs(3, GateParams(model="windowed", window=None)), seq)
    b = run(Gate.from_logprobs(3, GateParams(model="hazard", hazard=0.0)), seq)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.posterior, y.posterior, atol=1e-12)


def test_first_step_prior_is_uniform_and_hazard_mixes_uniformly():
    gate = Gate.from_logprobs(4, GateParams(hazard=0.2))
    d = gate.step_loglik(np.log([0.7, 0.1, 0.1, 0.1]))
    np.testing.assert_allclose(d.info.prior, 0.25)
    d2 = gate.step_loglik(np.zeros(4))
    np.testing.assert_allclose(d2.info.prior, 0.8 * d.posterior + 0.2 * 0.25, atol=1e-15)
    np.testing.assert_allclose(d.predictive, d2.info.prior, atol=1e-15)


# --------------------------------------------------------------------------- the JAX filter


def test_matches_functional_filter(x64):
    """Same posteriors, predictions and log evidence as beliefgate.beliefs.filter (float64)."""
    F = pytest.importorskip("beliefgate.beliefs.filter")
    rng = np.random.default_rng(2024)
    for params in MODELS + [GateParams(hazard=0.0), GateParams(hazard=1.0), GateParams(alpha=0.3)]:
        for _ in range(3):
            num = 4  # fixed shapes: one compilation per filter variant
            seq = random_sequence(rng, num, 5, steps=50, impossible_actions=True)
            gate = Gate.from_logprobs(num, params, prior_counts=rng.integers(0, 3, size=num))
            memory = gate.memory
            decisions = []
            for s in seq:
                if rng.random() < 0.5:  # exercise the mask path too
                    mask = np.zeros(5, bool)
                    mask[[s["action"], int(rng.integers(5))]] = True
                else:
                    mask = np.eye(5, dtype=bool)[s["action"]]
                s["mask"] = mask
                decisions.append(gate.step_evidence(
                    StepEvidence(s["lp"], mask, s["weight"], s["completed"], s["feasible"])))
            ll = np.array([s["weight"] * np.logaddexp.reduce(s["lp"][:, s["mask"]], axis=1)
                           if s["weight"] > 0 else np.zeros(num) for s in seq])
            feas = np.array([np.ones(num, bool) if s["feasible"] is None else s["feasible"] for s in seq])
            comp = np.array([-1 if s["completed"] is None else s["completed"] for s in seq])
            res = F.filter(params.filter_params(), F.observations(ll, feas, comp, prior_counts=memory))
            post = np.exp(np.asarray(res.log_posterior))
            pred = np.exp(np.asarray(res.log_predicted))
            np.testing.assert_allclose([d.posterior for d in decisions], post, rtol=0, atol=1e-9)
            np.testing.assert_allclose([d.info.prior for d in decisions], pred, rtol=0, atol=1e-9)
            np.testing.assert_allclose([d.info.log_evidence for d in decisions],
                                       np.asarray(res.log_normalizer), rtol=0, atol=1e-9)
            assert gate.state.belief.log_evidence == pytest.approx(float(res.log_marginal), abs=1e-8)
            np.testing.assert_allclose(gate.memory, np.asarray(res.state.counts))


# --------------------------------------------------------------------------- monotonicity


TAUS = [0.0, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
LAMBDAS = [0.0, 0.25, 0.5, 1.0, 2.0, 4.0]
FLOORS = [0.0, 0.3, 0.6, 0.8, 0.95, 1.0]
COOLDOWNS = [0, 1, 3, 5, 10, 100]


@pytest.mark.parametrize("field, values, direction", [
    ("tau_obs", TAUS, +1),
    ("likelihood_scale", LAMBDAS, +1),
    ("confidence_floor", FLOORS, -1),
    ("cooldown", COOLDOWNS, -1),
])
def test_monotonicity_on_fixed_switching_sequence(field, values, direction):
    seq = fixed_switching_sequence()
    base = GateParams(n_stable=2, cooldown=3)
    counts = [count_interrupts(base.replace(**{field: v}), seq) for v in values]
    diffs = np.diff(counts) * direction
    assert np.all(diffs >= 0), counts
    assert counts[0] != counts[-1], counts  # the sequence actually exercises the parameter


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    taus=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    lams=st.tuples(st.floats(0, 5), st.floats(0, 5)),
    floors=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    cooldowns=st.tuples(st.integers(0, 8), st.integers(0, 8)),
    n_stable=st.integers(0, 3),
    model=st.sampled_from(["hazard", "windowed"]),
)
def test_monotonicity_property(seed, taus, lams, floors, cooldowns, n_stable, model):
    rng = np.random.default_rng(seed)
    seq = random_sequence(rng, int(rng.integers(2, 5)), int(rng.integers(2, 6)), steps=30)
    base = GateParams(model=model, n_stable=n_stable, tau_obs=0.2, cooldown=2, confidence_floor=0.4)
    for field, pair, direction in [("tau_obs", taus, +1), ("likelihood_scale", lams, +1),
                                   ("confidence_floor", floors, -1), ("cooldown", cooldowns, -1)]:
        lo, hi = sorted(pair)
        n_lo = count_interrupts(base.replace(**{field: lo}), seq)
        n_hi = count_interrupts(base.replace(**{field: hi}), seq)
        assert (n_hi - n_lo) * direction >= 0, (field, lo, hi, n_lo, n_hi)


# --------------------------------------------------------------------------- gate semantics through the Gate


def test_cooldown_and_notify_replanned():
    lp = switching_table()
    params = GateParams(n_stable=0, confidence_floor=0.0, cooldown=4, hazard=0.01, reference="action")
    gate = Gate.from_logprobs(3, params)
    for _ in range(5):
        gate.step(lp, 0)
    fired = [gate.step(lp, 1 if t % 2 else 0).interrupt for t in range(5, 20)]
    # contradictions at every odd step; interrupts at least `cooldown` apart
    times = [5 + i for i, f in enumerate(fired) if f]
    assert times and np.all(np.diff(times) >= 4)
    gate.reset()
    for _ in range(5):
        gate.step(lp, 0)
    gate.notify_replanned()  # as if interrupted at step 4
    reasons = [gate.step(lp, 3).info.suppressed_reason for _ in range(4)]
    assert reasons[:3] == ["cooldown"] * 3 and reasons[3] is None


def test_ego_idle_suppresses():
    lp = switching_table()
    gate = Gate.from_logprobs(3, GateParams(n_stable=0, confidence_floor=0.0, reference="action"))
    for _ in range(5):
        gate.step(lp, 0)
    d = gate.step(lp, 3, ego_active=False)
    assert d.contradiction and not d.interrupt and d.info.suppressed_reason == "ego_idle"
    assert gate.step(lp, 3).interrupt


def test_gate_is_evaluated_on_the_pre_update_belief():
    gate = Gate.from_logprobs(2, GateParams(n_stable=0, confidence_floor=0.5, hazard=0.01))
    tab = np.log([[0.9, 0.1], [0.1, 0.9]])
    for _ in range(6):
        gate.step(tab, 0)
    d = gate.step(tab, 1)
    assert d.info.map_skill == 0 and d.info.confidence == d.info.prior[0]
    assert d.info.l_t == pytest.approx(0.1 / 0.9)
    assert d.info.prior[0] > d.posterior[0]


def test_step_loglik_semantics():
    params = GateParams(n_stable=0, confidence_floor=0.0, likelihood_scale=2.0, tau_obs=0.5)
    gate = Gate.from_logprobs(3, params)
    v = np.log([0.6, 0.3, 0.1])
    d = gate.step_loglik(v)
    assert d.info.map_skill == 0 and d.info.l_t == pytest.approx(1.0)
    d = gate.step_loglik(np.log([0.2, 0.5, 0.3]))
    assert d.info.map_skill == 0
    assert d.info.l_t == pytest.approx((0.2 / 0.5) ** 2.0)
    assert d.contradiction and d.interrupt
    # l_t compares against the best *feasible* skill
    d = gate.step_loglik(np.log([0.2, 0.1, 0.7]), feasible=[True, True, False])
    assert d.info.l_t == pytest.approx(1.0 if d.info.map_skill == 0 else (0.1 / 0.2) ** 2)
    # the posterior is the same as stepping with a table whose column is v
    g1, g2 = Gate.from_logprobs(3), Gate.from_logprobs(3)
    tab = log_softmax(np.random.default_rng(0).normal(size=(3, 4)))
    np.testing.assert_allclose(g1.step_loglik(tab[:, 2]).posterior, g2.step(tab, 2).posterior)


def test_weight_zero_is_excluded():
    gate = Gate.from_logprobs(3, GateParams(n_stable=0, confidence_floor=0.0))
    lp = switching_table()
    before = gate.step(lp, 0).posterior
    d = gate.step(lp, 4, weight=0.0)
    assert not d.contradiction and d.info.suppressed_reason == "excluded_step"
    np.testing.assert_allclose(d.posterior, d.info.prior)
    assert d.info.log_evidence == 0.0
    np.testing.assert_allclose(d.posterior, 0.95 * before + 0.05 / 3)  # predict only


def test_completion_resets_prior_and_counts():
    gate = Gate.from_logprobs(3, GateParams(alpha=1.0), skill_names=["a", "b", "c"])
    d = gate.step_loglik(np.log([0.8, 0.1, 0.1]), completed="a")
    np.testing.assert_allclose(d.predictive, [0.5, 0.25, 0.25])
    d = gate.step_loglik(np.zeros(3))
    np.testing.assert_allclose(d.info.prior, [0.5, 0.25, 0.25])
    np.testing.assert_allclose(gate.memory, [1, 0, 0])


def test_changepoint_and_either_modes_drive_interrupt():
    lp = switching_table()
    seq = [0] * 15 + [1] * 15
    cp = Gate.from_logprobs(3, GateParams(gate="changepoint"))
    ds = [cp.step(lp, a) for a in seq]
    assert [d.interrupt for d in ds] == [d.changepoint for d in ds] and any(d.interrupt for d in ds)
    either = Gate.from_logprobs(3, GateParams(gate="either"))
    ds = [either.step(lp, a) for a in seq]
    sm_or_cp = [d.info.stable_map.interrupt or d.changepoint for d in ds]
    assert [d.interrupt for d in ds] == sm_or_cp and any(sm_or_cp)


# --------------------------------------------------------------------------- bad input


def bad_cases(num=3, actions=4):
    good = log_softmax(np.random.default_rng(0).normal(size=(num, actions)))
    nan = good.copy()
    nan[1, 2] = np.nan
    pinf = good.copy()
    pinf[0, 0] = np.inf
    allneg = good.copy()
    allneg[2] = -np.inf
    impossible = good.copy()
    impossible[:, 1] = -np.inf
    only_first = good.copy()
    only_first[1:, 1] = -np.inf  # action 1 is possible only under skill 0
    return [
        ("wrong rows", lambda g: g.step(good[:2], 0), ShapeMismatchError),
        ("1-d table", lambda g: g.step(good[0], 0), ShapeMismatchError),
        ("3-d table", lambda g: g.step(good[None], 0), ShapeMismatchError),
        ("empty actions", lambda g: g.step(np.zeros((num, 0)), 0), ShapeMismatchError),
        ("strings", lambda g: g.step([["a"] * actions] * num, 0), ShapeMismatchError),
        ("nan", lambda g: g.step(nan, 0), NonFiniteLoglikError),
        ("+inf", lambda g: g.step(pinf, 0), NonFiniteLoglikError),
        ("row all -inf", lambda g: g.step(allneg, 0), NonFiniteLoglikError),
        ("action too big", lambda g: g.step(good, actions), ActionIndexError),
        ("action negative", lambda g: g.step(good, -1), ActionIndexError),
        ("action float", lambda g: g.step(good, 1.5), ActionIndexError),
        ("action bool", lambda g: g.step(good, True), ActionIndexError),
        ("unknown skill name", lambda g: g.step(good, 0, completed="nope"), UnknownSkillError),
        ("skill index too big", lambda g: g.step(good, 0, completed=num), UnknownSkillError),
        ("skill index -2", lambda g: g.step(good, 0, completed=-2), CompletedIndexError),
        ("skill float", lambda g: g.step(good, 0, completed=1.0), UnknownSkillError),
        ("feasible length", lambda g: g.step(good, 0, feasible=[True] * (num + 1)), ShapeMismatchError),
        ("feasible none", lambda g: g.step(good, 0, feasible=[False] * num), NoFeasibleSkillError),
        ("feasible not bool", lambda g: g.step(good, 0, feasible=[2, 0, 1]), ShapeMismatchError),
        ("weight negative", lambda g: g.step(good, 0, weight=-0.1), InvalidWeightError),
        ("weight nan", lambda g: g.step(good, 0, weight=float("nan")), InvalidWeightError),
        ("weight inf", lambda g: g.step(good, 0, weight=float("inf")), InvalidWeightError),
        ("weight str", lambda g: g.step(good, 0, weight="1"), InvalidWeightError),
        ("impossible action", lambda g: g.step(impossible, 1), ImpossibleObservationError),
        ("impossible given feasible", lambda g: g.step(only_first, 1, feasible=[False, True, True]),
         ImpossibleObservationError),
        ("loglik length", lambda g: g.step_loglik(np.zeros(num + 1)), ShapeMismatchError),
        ("loglik 2-d", lambda g: g.step_loglik(np.zeros((num, 1))), ShapeMismatchError),
        ("loglik nan", lambda g: g.step_loglik([0.0, np.nan, 0.0]), NonFiniteLoglikError),
        ("loglik +inf", lambda g: g.step_loglik([0.0, np.inf, 0.0]), NonFiniteLoglikError),
        ("loglik all -inf", lambda g: g.step_loglik([-np.inf] * num), ImpossibleObservationError),
        ("evidence type", lambda g: g.step_evidence((good, [True] * actions)), ShapeMismatchError),
        ("mask length", lambda g: g.step_evidence(StepEvidence(good, np.ones(actions + 1, bool))),
         ShapeMismatchError),
        ("mask empty", lambda g: g.step_evidence(StepEvidence(good, np.zeros(actions, bool))),
         ActionIndexError),
        ("evidence weight", lambda g: g.step_evidence(StepEvidence(good, np.ones(actions, bool), -1.0)),
         InvalidWeightError),
        ("evidence feasible", lambda g: g.step_evidence(
            StepEvidence(good, np.ones(actions, bool), 1.0, None, np.zeros(num, bool))),
         NoFeasibleSkillError),
        ("observe without layout", lambda g: g.observe(None, None), InvalidParameterError),
    ]


@pytest.mark.parametrize("model", ["hazard", "windowed"])
def test_bad_input_raises_and_leaves_state_unchanged(model):
    rng = np.random.default_rng(1)
    gate = Gate.from_logprobs(3, GateParams(model=model, window=2), skill_names=["x", "y", "z"])
    twin = Gate.from_logprobs(3, GateParams(model=model, window=2), skill_names=["x", "y", "z"])
    seq = random_sequence(rng, 3, 4, steps=12)
    run(gate, seq)
    run(twin, seq)
    for name, call, exc in bad_cases():
        before = gate.state
        snapshot = copy.deepcopy(before)
        with pytest.raises(exc):
            call(gate)
        assert issubclass(exc, BeliefInputError) and issubclass(exc, ValueError)
        assert gate.state is before, name
        assert_state_equal(gate.state, snapshot)
    # the gate still works, exactly like a twin that never saw the bad input
    more = random_sequence(rng, 3, 4, steps=8)
    for a, b in zip(run(gate, more), run(twin, more)):
        np.testing.assert_array_equal(a.posterior, b.posterior)
        assert a.interrupt == b.interrupt


def test_constructor_validation():
    with pytest.raises(ShapeMismatchError):
        Gate.from_logprobs(0)
    with pytest.raises(ShapeMismatchError):
        Gate.from_logprobs(3, skill_names=["a", "a", "b"])
    with pytest.raises(ShapeMismatchError):
        Gate.from_logprobs(3, prior_counts=[1, 2])
    with pytest.raises(InvalidParameterError):
        Gate.from_logprobs(3, prior_counts=[1, -2, 0])
    with pytest.raises(InvalidParameterError):
        Gate.from_logprobs(3, params={"hazard": 0.1})


# --------------------------------------------------------------------------- parameters, pickling, reset


def test_params_validation_and_json(tmp_path):
    p = GateParams(model="windowed", window=None, hazard=0.2, gate="either", cp_horizon=4)
    assert GateParams.from_json(p.to_json()) == p
    path = p.save(tmp_path / "gate.json")
    assert GateParams.load(path) == p
    gate = Gate.from_logprobs(3, p)
    gate.save_params(tmp_path / "again.json")
    assert GateParams.load(tmp_path / "again.json") == p
    defaults = GateParams()
    assert (defaults.model, defaults.hazard, defaults.window, defaults.alpha, defaults.tau_obs,
            defaults.likelihood_scale, defaults.confidence_floor, defaults.n_stable, defaults.cooldown,
            defaults.beta, defaults.epsilon, defaults.gate.kind, defaults.reference) == (
        "hazard", 0.05, 5, 1.0, 0.2, 1.0, 0.7, 1, 5, 2.0, 0.1, "stable_map", "skill")
    for bad in [dict(hazard=1.5), dict(window=0), dict(alpha=0.0), dict(tau_obs=-0.1),
                dict(confidence_floor=1.1), dict(n_stable=-1), dict(cooldown=-1), dict(model="hmm"),
                dict(gate="nope"), dict(cp_release=0.9, cp_threshold=0.5), dict(epsilon=2.0),
                dict(likelihood_scale=float("nan")), dict(unknown=1)]:
        with pytest.raises(GateParamError):
            GateParams(**bad)
    with pytest.raises(GateParamError, match="hazard: Instance is frozen"):
        p.hazard = 0.3  # frozen: the model's one-line error, not pydantic's multi-line ValidationError
    with pytest.raises(GateParamError):
        GateParams.from_json(json.dumps({"hazard": 0.1, "extra": 1}))
    assert p.replace(hazard=0.3).hazard == 0.3
    with pytest.raises(GateParamError):
        p.replace(hazard=3.0)


@pytest.mark.parametrize("params", MODELS + [GateParams(gate="either")])
def test_pickle_round_trip(params):
    rng = np.random.default_rng(4)
    gate = Gate.from_logprobs(3, params, skill_names=["p", "q", "r"], prior_counts=[1, 0, 2])
    seq = random_sequence(rng, 3, 4, steps=30)
    run(gate, seq[:15])
    clone = pickle.loads(pickle.dumps(gate))
    assert clone.params == gate.params and clone.skill_names == gate.skill_names
    assert_state_equal(clone.state, gate.state)
    for a, b in zip(run(gate, seq[15:]), run(clone, seq[15:])):
        np.testing.assert_array_equal(a.posterior, b.posterior)
        assert (a.interrupt, a.changepoint) == (b.interrupt, b.changepoint)
    clone.reset()
    gate.reset()
    assert_state_equal(clone.state, gate.state)


def test_reset_with_and_without_memory():
    gate = Gate.from_logprobs(3, GateParams(alpha=1.0))
    for comp in ("skill_0", 0, None, 2):
        gate.step_loglik(np.zeros(3), comp)
    np.testing.assert_allclose(gate.memory, [2, 0, 1])
    gate.reset(keep_memory=True)
    assert gate.t == 0
    np.testing.assert_allclose(gate.memory, [2, 0, 1])
    d = gate.step_loglik(np.zeros(3))
    np.testing.assert_allclose(d.info.prior, np.array([3, 1, 2]) / 6)
    gate.reset()
    np.testing.assert_allclose(gate.memory, 0)
    np.testing.assert_allclose(gate.step_loglik(np.zeros(3)).info.prior, 1 / 3)
    seeded = Gate.from_logprobs(3, prior_counts=[0, 4, 0])
    seeded.step_loglik(np.zeros(3), completed=0)
    seeded.reset()
    np.testing.assert_allclose(seeded.memory, [0, 4, 0])


def test_reset_clears_gate_counters():
    lp = switching_table()
    gate = Gate.from_logprobs(3, GateParams(n_stable=0, confidence_floor=0.0, cooldown=50, reference="action"))
    for a in [0] * 5 + [3]:
        d = gate.step(lp, a)
    assert d.interrupt
    gate.reset(keep_memory=True)
    for a in [0] * 5 + [3]:
        d = gate.step(lp, a)
    assert d.interrupt  # the cooldown did not survive the reset


# --------------------------------------------------------------------------- Overcooked


def test_observe_overcooked():
    pytest.importorskip("beliefgate.envs.overcooked.observer")
    from beliefgate.envs.overcooked.adapter import OvercookedAdapter

    gate = Gate.for_overcooked("cramped_room")
    assert gate.num_skills == 6
    env = OvercookedAdapter("cramped_room")
    prev = env.reset()
    rng = np.random.default_rng(0)
    for _ in range(25):
        nxt = env.step([int(rng.integers(6)), int(rng.integers(6))]).state
        d = gate.observe(prev, nxt)
        assert d.posterior.sum() == pytest.approx(1.0)
        prev = nxt
    before = gate.state
    with pytest.raises(ValueError):
        gate.observe(prev, prev)  # not consecutive
    assert gate.state is before
    clone = pickle.loads(pickle.dumps(gate))
    nxt = env.step([0, 0]).state
    np.testing.assert_array_equal(clone.observe(prev, nxt).posterior, gate.observe(prev, nxt).posterior)


def test_unknown_layout():
    pytest.importorskip("beliefgate.envs.overcooked.observer")
    with pytest.raises(LookupError):
        Gate.for_overcooked("no_such_kitchen")


# --------------------------------------------------------------------------- docs and benchmark


def test_docs_worked_example():
    """The table in docs/gate.md, 'Worked example'."""
    params = GateParams(hazard=0.1, likelihood_scale=2.0, n_stable=1, confidence_floor=0.6,
                        tau_obs=0.1, cooldown=5)
    gate = Gate.from_logprobs(2, params, skill_names=["onion", "dish"])
    table = np.log([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1]])
    rows = [gate.step(table, a) for a in (0, 0, 1, 1)]
    np.testing.assert_allclose([d.info.prior[0] for d in rows], [0.5, 0.85, 0.931, 0.614], atol=6e-4)
    np.testing.assert_allclose([d.posterior[0] for d in rows], [0.889, 0.978, 0.626, 0.166], atol=6e-4)
    assert [d.info.stable for d in rows] == [0, 1, 2, 3]
    assert [d.interrupt for d in rows] == [False, False, True, False]
    assert rows[3].contradiction and rows[3].info.suppressed_reason == "cooldown"
    assert rows[2].info.l_t == pytest.approx((0.1 / 0.8) ** 2)
    np.testing.assert_allclose([d.changepoint_prob for d in rows], [0, 0.013, 0.301, 0.681], atol=6e-4)
    np.testing.assert_allclose([d.switch_prob for d in rows], [0, 0.013, 0.264, 0.073], atol=6e-4)
    lam1 = Gate.from_logprobs(2, params.replace(likelihood_scale=1.0))
    assert not any(lam1.step(table, a).contradiction for a in (0, 0, 1, 1))


def test_benchmark_smoke(tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gate.py"
    spec = importlib.util.spec_from_file_location("bench_gate", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "bench.json"
    report = bench.main(["--quick", "--steps", "200", "--json", str(out)])
    assert "Gate.step (hazard)" in report["results"]
    assert json.loads(out.read_text())["results"]["Gate.step (hazard)"]["steps"] == 200
    # --against: another checkout's Gate timed in the same process (here: this checkout again,
    # imported a second time), and this process's own modules put back afterwards
    before = sys.modules["beliefgate"]
    ab = bench.main(["--quick", "--steps", "80", "--against", str(path.parents[1])])["results"]
    assert sys.modules["beliefgate"] is before
    assert set(ab["Gate.step (hazard)"]) == {"this_p50_us", "other_p50_us", "ratio"}
    assert all(r["this_p50_us"] > 0 and r["other_p50_us"] > 0 for r in ab.values())
    with pytest.raises(SystemExit, match="imported beliefgate from"):
        bench.load_checkout(str(tmp_path))  # no beliefgate there: the one on sys.path would be timed


def test_reference_skill_vs_action():
    """"action" (BayesBelief Eq. 10) flags any action poor under the MAP skill; "skill" only
    one that another feasible skill explains better."""
    lp = np.log(np.array([
        [0.85, 0.05, 0.05, 0.05],   # skill 0 prefers action 0
        [0.05, 0.85, 0.05, 0.05],   # skill 1 prefers action 1
    ]))
    base = dict(n_stable=0, confidence_floor=0.0, cooldown=0, tau_obs=0.2)
    for ref, expect_poor, expect_other in (("action", True, True), ("skill", False, True)):
        gate = Gate.from_logprobs(2, GateParams(reference=ref, **base))
        for _ in range(4):
            gate.step(lp, 0)
        poor = gate.step(lp, 2)           # action 2: equally poor under both skills
        assert poor.contradiction is expect_poor, ref
        gate = Gate.from_logprobs(2, GateParams(reference=ref, **base))
        for _ in range(4):
            gate.step(lp, 0)
        other = gate.step(lp, 1)          # action 1: what skill 1 would do
        assert other.contradiction is expect_other, ref
        assert other.info.l_t == pytest.approx(0.05 / 0.85)
    # the feasible mask restricts the reference skills
    gate = Gate.from_logprobs(2, GateParams(reference="skill", **base))
    for _ in range(4):
        gate.step(lp, 0)
    assert not gate.step(lp, 1, feasible=[True, False]).contradiction


def test_pickled_overcooked_gate_keeps_its_partner():
    import pickle

    from beliefgate.eval.episode import run_episode

    states = run_episode("cramped_room", "balanced", "plater", seed=0, horizon=12).trajectory.states()
    gate = Gate.for_overcooked("cramped_room", partner=0)
    clone = pickle.loads(pickle.dumps(gate))
    for s0, s1 in zip(states[:-1], states[1:]):
        np.testing.assert_array_equal(gate.observe(s0, s1).posterior, clone.observe(s0, s1).posterior)
    assert clone._observer.partner == 0


def test_overflowing_tempered_loglik_is_rejected_and_state_kept():
    gate = Gate.from_logprobs(3)
    gate.step_loglik([0.0, -1.0, -2.0])
    before = gate.state
    with pytest.raises(NonFiniteLoglikError), np.errstate(all="ignore"):
        gate.step_loglik([-np.inf, 2.6e16, -np.inf], weight=6.3e306)
    assert gate.state is before
    assert np.isfinite(gate.step_loglik([0.0, -1.0, -2.0]).posterior).all()


# ---------------------------------------------------------------------- every accepted configuration is usable


@settings(max_examples=25, deadline=None)
@given(
    model=st.sampled_from(["hazard", "windowed"]),
    hazard=st.floats(1e-9, 1.0),
    window=st.one_of(st.none(), st.integers(1, 512)),
    alpha=st.floats(1e-6, 1e6),
    tau=st.floats(0.0, 1.0),
    lam=st.floats(0.0, 1e3),
    cp_horizon=st.integers(1, 512),
    counts=st.lists(st.floats(0.0, 1e9), min_size=4, max_size=4),
    seed=st.integers(0, 2**31 - 1),
)
def test_any_accepted_configuration_survives_random_steps(model, hazard, window, alpha, tau, lam,
                                                         cp_horizon, counts, seed):
    """The bounds of GateParams and of the evidence keep every accepted gate usable: 1,000
    random valid steps (extreme tables, weights, feasibility, completions) never fail and the
    posterior stays a distribution."""
    from beliefgate.beliefs.core import MAX_ABS_LOGPROB, MAX_WEIGHT

    params = GateParams(model=model, hazard=hazard, window=window, alpha=alpha, tau_obs=tau,
                        likelihood_scale=lam, cp_horizon=cp_horizon, cp_threshold=0.5, cp_release=0.2)
    gate = Gate.from_logprobs(4, params, prior_counts=counts)
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        scale = 10.0 ** rng.uniform(-2, np.log10(MAX_ABS_LOGPROB) - 0.1)
        table = -np.abs(rng.normal(scale=scale, size=(4, 5)))
        table -= table.max(axis=1, keepdims=True)  # each row keeps a 0 (a possible action)
        table = np.maximum(table, -MAX_ABS_LOGPROB)  # the largest magnitude the gate accepts
        feasible = rng.random(4) < 0.8
        feasible[rng.integers(4)] = True
        weight = float(rng.choice([0.0, 0.35, 1.0, MAX_WEIGHT * rng.random()]))
        completed = int(rng.integers(-1, 4)) if rng.random() < 0.1 else None
        action = int(rng.integers(5))
        try:
            d = gate.step(table, action, completed, feasible=feasible, weight=weight)
        except ImpossibleObservationError:
            continue  # a refused observation leaves the gate as it was; the gate stays usable
        assert np.isfinite(d.posterior).all() and abs(d.posterior.sum() - 1.0) < 1e-9


def test_gate_md_table_states_every_field_default_and_range_of_the_model():
    """docs/gate.md's GateParams table: every field, its default and its full numeric range as
    the pydantic model enforces them (upper limits included)."""
    import re
    import typing
    from pathlib import Path

    import annotated_types as at

    text = (Path(__file__).resolve().parents[1] / "docs" / "gate.md").read_text(encoding="utf-8")
    rows = {m.group(2): (m.group(1), m.group(3), m.group(4)) for m in
            re.finditer(r"^\| `([\w.]+)` \| `(\w+)` \| ([^|]+) \| ([^|]+) \|", text, re.M)}

    def num(v) -> str:
        return f"{v:g}" if not float(v).is_integer() or abs(v) < 1e5 else f"{v:.0e}".replace("e+0", "e")

    from beliefgate.beliefs.config import FLAT_KEYS, flat_path

    assert set(rows) == set(FLAT_KEYS)
    for name in FLAT_KEYS:  # every field, by its flat key and its path in the parts
        field = GateParams.field_info(name)
        path, default, rng = (c.strip() for c in rows[name])
        assert path == flat_path(name), (name, path)
        shown = f'"{field.default}"' if isinstance(field.default, str) else str(field.default)
        assert default.strip("`") == shown, (name, default, shown)
        bounds = {type(m): m for m in field.metadata}
        if name == "cp_release":  # tied to the threshold by a validator
            assert rng == "[0, `threshold`]"
            continue
        if at.Le not in bounds:
            continue
        lo = bounds.get(at.Ge) or bounds.get(at.Gt)
        low = lo.ge if isinstance(lo, at.Ge) else lo.gt
        interval = f"{'[' if isinstance(lo, at.Ge) else '('}{num(low)}, {num(bounds[at.Le].le)}]"
        is_int = int in (typing.get_args(field.annotation) or (field.annotation,))
        assert rng.startswith(("int in " if is_int else "") + interval), (name, rng, interval)


@pytest.mark.parametrize("names", ["abc", [1, 2], ["a", ""], ["a", "  "]])
def test_skill_names_must_be_non_empty_strings(names):
    """A string was split into its letters, numbers became '1', '2', an empty name was accepted."""
    from beliefgate.beliefs.errors import ShapeMismatchError

    with pytest.raises(ShapeMismatchError, match="sequence of non-empty strings"):
        Gate.from_logprobs(2 if not isinstance(names, str) else 3, skill_names=names)
