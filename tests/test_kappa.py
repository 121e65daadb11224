"""OverForge confidence kappa: online posterior, decision rule, bad input, model, NUTS agreement, fit.

Fast tests use NumPy/SciPy only; one default test runs NUTS on the NumPyro model (a few
evidence sets in one joint run); the full agreement check (>= 50 sets) and the parameter
recovery fit (500 decisions, 4 x 1000 draws) are marked slow.
"""

from __future__ import annotations

import json
import math
import pickle
import time

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit, log_expit, ndtr

from beliefgate import Kappa, KappaParams
from beliefgate.beliefs import kappa as K
from beliefgate.beliefs.kappa import (
    DepthError,
    DuplicateBranchError,
    EvidenceTypeError,
    Judgment,
    JudgmentValueError,
    KappaInputError,
    KappaParamError,
    NoBranchError,
    NonFiniteScoreError,
    NotInNucleusError,
    Rollout,
    RolloutRound,
    RoundLimitError,
    SelfJudgmentError,
    UnknownBranchError,
    kappa_info,
    kappa_init,
    kappa_update,
    monte_carlo_argmax,
)
from beliefgate.errors import InputError, LookupFailure

#: bound on the error of the argmax probabilities against the Monte-Carlo reference at the
#: default 2048 points (docs/kappa.md: 40 random sets, seeds >= 1000, max 0.0093)
RULE_ERROR = 0.01


def random_evidence(rng, k=None, max_judgments=20, max_rollouts=10, values=(0.0, 1.0, 0.5, 1.0)):
    """A random decision from the model: ``(K, judgments [(b, c, y)], rollouts [(b, d, r)])``."""
    mu0, s0, tau, sr = values
    k = int(rng.integers(2, 9)) if k is None else k
    u = rng.normal(mu0, s0, k)
    judgments = []
    for _ in range(int(rng.integers(0, max_judgments + 1))):
        b, c = (int(x) for x in rng.choice(k, 2, replace=False))
        judgments.append((b, c, int(rng.random() < expit((u[b] - u[c]) / tau))))
    rollouts = []
    for _ in range(int(rng.integers(0, max_rollouts + 1))):
        b, d = int(rng.integers(k)), int(rng.integers(1, 4))
        rollouts.append((b, d, float(rng.normal(u[b], sr / math.sqrt(d)))))
    return k, judgments, rollouts


def build(params, k, judgments, rollouts):
    state = kappa_init(params, [f"b{i}" for i in range(k)])
    for b, c, y in judgments:
        state, _ = kappa_update(params, state, Judgment(b, c, y))
    for b, d, r in rollouts:
        state, _ = kappa_update(params, state, Rollout(b, d, r))
    return state


# --------------------------------------------------------------------------- the API of the issue


def test_issue_example():
    k = Kappa(["a", "b", "c"], KappaParams(mu0=0.0, sigma0=1.0, tau=0.5, sigma_r=1.0, theta=0.6, nucleus_p=0.9))
    before = k.argmax_probs
    assert before == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}, abs=1e-9)
    k.judge("a", "b", 1)
    k.rollout("c", depth=2, score=0.4)
    probs = k.argmax_probs
    assert set(probs) == {"a", "b", "c"}
    assert math.isclose(sum(probs.values()), 1.0, rel_tol=0, abs_tol=1e-12)
    assert probs["a"] > probs["b"]  # a beat b
    assert k.kappa == max(probs.values()) and probs[k.best] == k.kappa
    assert isinstance(k.nucleus, list) and k.best in k.nucleus
    assert sum(probs[n] for n in k.nucleus) >= 0.9
    assert k.commit == (k.kappa >= 0.6)
    record = k.to_record("d1")
    assert record["judgments"] == [{"left": "a", "right": "b", "y": 1}]
    assert record["rollouts"] == [{"branch": "c", "depth": 2, "score": 0.4}]


def test_nucleus_and_commit_rule():
    params = KappaParams(theta=0.6, nucleus_p=0.9, max_rounds=2)
    k = Kappa(["a", "b", "c", "d"], params)
    assert k.nucleus == ["a", "b", "c", "d"] and not k.commit and k.info.next == "rollout"
    info = k.round({"a": 2.0, "b": 1.5, "c": -2.0, "d": -2.5})
    assert k.rounds == 1 and info.rounds_left == 1
    probs = info.argmax_probs
    order = np.argsort(-probs, kind="stable")
    cum = np.cumsum(probs[order])
    size = int(np.flatnonzero(cum >= 0.9)[0]) + 1
    assert list(info.nucleus) == [int(i) for i in order[:size]]  # smallest prefix with mass >= p
    assert set(k.nucleus) <= {"a", "b"}
    outside = next(n for n in k.branches if n not in k.nucleus)
    state = k.state
    with pytest.raises(NotInNucleusError):
        k.round({outside: 0.0})
    assert k.state is state
    k.round({n: 1.0 for n in k.nucleus})
    assert k.rounds == 2
    with pytest.raises(RoundLimitError):
        k.round({k.best: 1.0})
    assert k.info.next in ("commit", "stop")
    assert k.info.next == ("commit" if k.kappa >= 0.6 else "stop")
    k.rollout(k.best, 3, 5.0)  # single rollouts do not count as rounds
    assert k.rounds == 2 and k.commit and k.info.next == "commit"


def test_single_branch_and_theta_one():
    k = Kappa(["only"], KappaParams(theta=1.0))
    k.rollout("only", 1, -3.0)
    assert k.argmax_probs == {"only": 1.0} and k.commit and k.nucleus == ["only"]


def test_pickle_round_trip():
    k = Kappa(["a", "b", "c"])
    k.judge("a", "c", 0)
    k.rollout(1, 2, 0.3)
    k2 = pickle.loads(pickle.dumps(k))
    np.testing.assert_array_equal(k2.info.argmax_probs, k.info.argmax_probs)
    assert k2.params == k.params and k2.to_record() == k.to_record()


# --------------------------------------------------------------------------- closed forms and numerics


@pytest.mark.parametrize("seed", range(5))
def test_two_branches_rollouts_only_is_exact(seed):
    rng = np.random.default_rng(seed)
    params = KappaParams(mu0=float(rng.normal()), sigma0=float(rng.uniform(0.3, 2)), sigma_r=float(rng.uniform(0.2, 2)))
    rollouts = [(int(rng.integers(2)), int(rng.integers(1, 4)), float(rng.normal())) for _ in range(6)]
    info = kappa_info(params, build(params, 2, [], rollouts))
    prec = np.full(2, 1 / params.sigma0 ** 2)
    h = np.full(2, params.mu0 / params.sigma0 ** 2)
    for b, d, r in rollouts:
        prec[b] += d / params.sigma_r ** 2
        h[b] += r * d / params.sigma_r ** 2
    m, v = h / prec, 1 / prec
    p0 = 0.5 * math.erfc(-(m[0] - m[1]) / math.sqrt(2 * (v[0] + v[1])))
    assert info.method == "closed_form"
    assert info.argmax_probs[0] == pytest.approx(p0, abs=1e-14)
    np.testing.assert_allclose(info.mean, m, rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_two_branches_with_judgments_match_1d_integral(seed):
    rng = np.random.default_rng(10 + seed)
    params = KappaParams(tau=float(rng.uniform(0.1, 1.5)))
    k, judgments, rollouts = random_evidence(rng, k=2, max_judgments=12)
    judgments.append((0, 1, 1))
    info = kappa_info(params, build(params, 2, judgments, rollouts))
    prec = np.full(2, 1.0)
    h = np.zeros(2)
    for b, d, r in rollouts:
        prec[b] += d
        h[b] += r * d
    mu, var = h[0] / prec[0] - h[1] / prec[1], 1 / prec[0] + 1 / prec[1]
    n01 = sum(1 for b, c, y in judgments if (b, y) in ((0, 1), (1, 0)))
    n10 = len(judgments) - n01

    def dens(x):
        return math.exp(-0.5 * (x - mu) ** 2 / var + n01 * log_expit(x / params.tau)
                        + n10 * log_expit(-x / params.tau))

    pos = integrate.quad(dens, 0, np.inf, epsabs=0, epsrel=1e-12)[0]
    neg = integrate.quad(dens, -np.inf, 0, epsabs=0, epsrel=1e-12)[0]
    assert info.method == "quadrature_1d"
    assert info.argmax_probs[0] == pytest.approx(pos / (pos + neg), abs=1e-8)


def test_rollouts_only_product_quadrature():
    params = KappaParams()
    rollouts = [(0, 1, 0.5), (1, 2, 0.2), (2, 3, -0.4), (3, 1, 0.9), (0, 2, 0.1)]
    info = kappa_info(params, build(params, 4, [], rollouts))
    m, s = info.mean, info.sd
    for b in range(4):
        def f(u, b=b):
            others = np.prod([ndtr((u - m[c]) / s[c]) for c in range(4) if c != b])
            return others * math.exp(-0.5 * ((u - m[b]) / s[b]) ** 2) / (s[b] * math.sqrt(2 * math.pi))

        want = integrate.quad(f, -np.inf, np.inf, epsabs=1e-13)[0]
        assert info.argmax_probs[b] == pytest.approx(want, abs=1e-7)
    assert info.method == "product_quadrature"


def test_tilted_moments_match_quadrature():
    for mu_c, v_c, n1, n0, tau in ((0.3, 1.2, 3, 1, 0.5), (-2.0, 4.0, 7, 0, 0.2), (1.0, 0.05, 0, 5, 2.0)):
        def t(x, p):
            return x ** p * math.exp(-0.5 * (x - mu_c) ** 2 / v_c + n1 * log_expit(x / tau)
                                     + n0 * log_expit(-x / tau))

        z = integrate.quad(t, -np.inf, np.inf, args=(0,), epsrel=1e-12)[0]
        mean = integrate.quad(t, -np.inf, np.inf, args=(1,), epsrel=1e-12)[0] / z
        var = integrate.quad(t, -np.inf, np.inf, args=(2,), epsrel=1e-12)[0] / z - mean ** 2
        got = K._tilted_moments(mu_c, v_c, float(n1), float(n0), tau)
        assert got == pytest.approx((mean, var), rel=1e-8, abs=1e-10)


def test_tilted_moments_random_tilts():
    """The graded grid against adaptive quadrature on random tilts (docs/kappa.md: 600 tilts,
    worst 4e-9 relative; here 60 of the same distribution)."""
    rng = np.random.default_rng(1000)
    worst = 0.0
    for _ in range(60):
        mu_c, v_c, tau = rng.normal(0, 3), math.exp(rng.uniform(-6, 3)), math.exp(rng.uniform(-3, 1))
        n1, n0 = int(rng.integers(0, 8)), int(rng.integers(0, 8))
        n1 = max(n1, 1 - n0)
        nodes = K._tilted_grid(mu_c, v_c, float(n1), float(n0), tau)[0]
        got_mean, got_var = K._tilted_moments(mu_c, v_c, float(n1), float(n0), tau)
        mode = got_mean  # centre of the reference integrals (any point near the mass will do)

        def t(x, p):
            return (x - mode) ** p * math.exp(-0.5 * (x - mu_c) ** 2 / v_c + n1 * log_expit(x / tau)
                                              + n0 * log_expit(-x / tau) - shift)

        shift = -0.5 * (mode - mu_c) ** 2 / v_c + n1 * log_expit(mode / tau) + n0 * log_expit(-mode / tau)
        cuts = sorted({float(nodes[0]), mode, float(nodes[-1]), 0.0})
        edges = [-np.inf, *cuts, np.inf]
        z = [sum(integrate.quad(t, a, b, args=(p,), epsabs=0, epsrel=1e-13, limit=200)[0]
                 for a, b in zip(edges, edges[1:])) for p in (0, 1, 2)]
        mean = mode + z[1] / z[0]
        var = z[2] / z[0] - (z[1] / z[0]) ** 2
        worst = max(worst, abs(got_mean - mean) / math.sqrt(var), abs(got_var / var - 1))
    assert worst < 1e-7, worst


def test_tilted_grid_is_bounded_and_accurate_for_sharp_likelihoods(monkeypatch):
    """A sharp one-sided likelihood (small tau) against a wide cavity on the losing side puts the
    mode at the kink: the Laplace sd is tiny against the range. The piece cap keeps the grid
    bounded (tau = 1e-6 with sigma0 = 1e6 asked for 1.7e8 nodes without it) and changes the
    moments by less than 1e-9 against the uncapped grid (the validated rule of the tests above),
    on cases where the cap binds."""
    rng = np.random.default_rng(1001)
    worst, binding = 0.0, 0
    for i in range(40):
        tau, v_c = 10 ** rng.uniform(-4, -2), 10 ** rng.uniform(1, 4)
        mu_c = -abs(rng.normal(0, 1)) * math.sqrt(v_c)
        n1, n0 = float(rng.integers(1, 6)), 0.0
        if i % 2:
            n1, n0, mu_c = n0, n1, -mu_c
        capped = K._tilted_grid(mu_c, v_c, n1, n0, tau)[0]
        got = K._tilted_moments(mu_c, v_c, n1, n0, tau)
        with monkeypatch.context() as m:
            m.setattr(K, "MAX_PIECES", 10 ** 7)
            full = K._tilted_grid(mu_c, v_c, n1, n0, tau)[0]
            mean, var = K._tilted_moments(mu_c, v_c, n1, n0, tau)
        binding += len(full) > len(capped)
        worst = max(worst, abs(got[0] - mean) / math.sqrt(var), abs(got[1] / var - 1))
    assert binding >= 10, binding
    assert worst < 1e-9, worst
    nodes = K._tilted_grid(-1e6, 1e12, 1.0, 0.0, 1e-6)[0]  # the request that took all memory
    assert len(nodes) <= (K.MAX_PIECES + 2 * len(K._GEO) + 2) * K.GRID_NODES


@pytest.mark.parametrize("params, steps", [
    # a point-mass difference: both rollouts pin their branches, the judgment has no cavity
    ({"sigma_r": 1e-6, "sigma0": 1e6}, [("r", "a", 1, 1e9), ("r", "b", 1, -1e9), ("j", "b", "a", 1)]),
    ({"mu0": -1e6, "sigma0": 1e6, "tau": 1e-6, "sigma_r": 1e6},
     [("r", "a", 10000, 0.0), ("r", "b", 10000, 1e9), ("r", "a", 10000, 0.5), ("j", "c", "a", 0), ("j", "a", "b", 1)]),
])
def test_evidence_too_extreme_for_float64_is_refused_quickly(params, steps):
    """In-range parameters and scores whose posterior float64 cannot hold: a specific error
    naming the field, the object unchanged, and bounded work (these took 68 s and all memory)."""
    k = Kappa(["a", "b", "c"], KappaParams(**params))
    t0 = time.perf_counter()
    with pytest.raises(K.ExtremeEvidenceError) as caught:
        for step in steps:
            before = (k.state, k.info, k.log)
            if step[0] == "r":
                k.rollout(step[1], depth=step[2], score=step[3])
            else:
                k.judge(step[1], step[2], step[3])
    assert (k.state, k.info, k.log) == before
    assert caught.value.field in ("evidence", "y")
    assert "too extreme for float64" in str(caught.value)
    assert time.perf_counter() - t0 < 5.0


def test_numeric_breakdown_becomes_extreme_evidence_error(monkeypatch):
    """Any float64 breakdown inside an update (here a covariance that is not positive
    definite) is refused as ExtremeEvidenceError, never a bare LinAlgError."""
    k = Kappa(["a", "b", "c"], KappaParams())
    k.judge("a", "b", 1)
    before = (k.state, k.info)

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("Matrix is not positive definite")

    monkeypatch.setattr(K.np.linalg, "cholesky", broken)
    with pytest.raises(K.ExtremeEvidenceError, match="LinAlgError"):
        k.judge("b", "c", 0)
    assert (k.state, k.info) == before


def test_rank_one_gaussian_equals_rebuild():
    rng = np.random.default_rng(4)
    params = KappaParams()
    for _ in range(5):
        k, judgments, rollouts = random_evidence(rng)
        state = build(params, k, judgments, rollouts)
        m, cov, lam = K._gaussian(params, state)
        np.testing.assert_allclose(state.mean, m, atol=1e-10)
        np.testing.assert_allclose(state.cov, cov, atol=1e-10)
        np.testing.assert_allclose(state.lam, lam, atol=1e-9)


def test_agreement_with_monte_carlo_reference():
    """The rule's error against an independent slow estimator (200k pseudo-random draws)."""
    rng = np.random.default_rng(21)
    params = KappaParams()
    worst = 0.0
    checked = 0
    while checked < 8:
        k, judgments, rollouts = random_evidence(rng)
        if k < 3 or not judgments:
            continue
        state = build(params, k, judgments, rollouts)
        info = kappa_info(params, state)
        ref, se = monte_carlo_argmax(params, state, 200_000, seed=checked)
        assert info.method == "qmc_rb_is" and info.ess > 0.3
        worst = max(worst, float(np.max(np.abs(info.argmax_probs - ref) - 3 * se)))
        checked += 1
    assert worst <= RULE_ERROR


# --------------------------------------------------------------------------- monotonicities


@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_judgment_for_best_does_not_lower_kappa(k):
    rng = np.random.default_rng(k)
    params = KappaParams()
    tol = 0.0 if k == 2 else RULE_ERROR / 4  # K = 2 is exact quadrature; K >= 3 within the rule's error
    for _ in range(25):
        _, judgments, rollouts = random_evidence(rng, k=k)
        state = build(params, k, judgments, rollouts)
        info = kappa_info(params, state)
        for other in range(k):
            if other != info.best:
                _, after = kappa_update(params, state, Judgment(info.best, other, 1))
                assert after.argmax_probs[info.best] >= info.kappa - tol


@pytest.mark.parametrize("k", [2, 4, 7])
def test_higher_rollout_score_for_best_does_not_lower_kappa(k):
    rng = np.random.default_rng(100 + k)
    params = KappaParams()
    for _ in range(20):
        _, judgments, rollouts = random_evidence(rng, k=k)
        state = build(params, k, judgments, rollouts)
        best = kappa_info(params, state).best
        scores = np.linspace(-2, 3, 6)
        probs = [kappa_update(params, state, Rollout(best, 1, float(s)))[1].argmax_probs[best] for s in scores]
        tol = 0.0 if k == 2 or not judgments else RULE_ERROR / 4
        assert np.all(np.diff(probs) >= -tol - 1e-12)


def _towards_uniform(params_seq, k, judgments, rollouts, tol):
    """Along ``params_seq``: with K = 2 both probabilities move towards 1/2; with K >= 3 kappa
    and the total-variation distance to uniform do not grow. (Per branch the K >= 3 statement
    is false even for the exact posterior: a branch below 1/K can overshoot above it, e.g.
    the sigma_r case of docs/kappa.md.)"""
    probs = [kappa_info(p, build(p, k, judgments, rollouts)).argmax_probs for p in params_seq]
    for a, b in zip(probs, probs[1:]):
        if k == 2:
            assert np.all(np.abs(b - 0.5) <= np.abs(a - 0.5) + tol), (a, b)
        else:
            assert b.max() <= a.max() + tol, (a, b)
            assert np.abs(b - 1 / k).sum() <= np.abs(a - 1 / k).sum() + tol, (a, b)
    assert np.abs(probs[-1] - 1 / k).max() < np.abs(probs[0] - 1 / k).max()


@pytest.mark.parametrize("seed", range(4))
def test_larger_tau_moves_probabilities_towards_uniform(seed):
    rng = np.random.default_rng(200 + seed)
    # K = 2 (exact): any judgments
    _, judgments, _ = random_evidence(rng, k=2, max_judgments=10)
    judgments.append((0, 1, 1))
    _towards_uniform([KappaParams(tau=t) for t in (0.2, 0.5, 1.0, 2.0, 5.0)], 2, judgments, [], 1e-12)
    # K = 4: a judged chain b0 > b1 > b2 > b3
    chain = [(0, 1, 1), (1, 2, 1), (2, 3, 1)] * (1 + seed)
    _towards_uniform([KappaParams(tau=t) for t in (0.2, 0.5, 1.0, 2.0, 5.0)], 4, chain, [], RULE_ERROR / 4)


@pytest.mark.parametrize("seed", range(4))
def test_larger_sigma_r_moves_probabilities_towards_uniform(seed):
    rng = np.random.default_rng(300 + seed)
    for k in (2, 3, 6):  # one rollout per branch, same depth: exact Gaussian paths
        d = int(rng.integers(1, 4))
        rollouts = [(b, d, float(rng.normal())) for b in range(k)]
        _towards_uniform([KappaParams(sigma_r=s) for s in (0.2, 0.5, 1.0, 2.0, 5.0)], k, [], rollouts, 1e-9)


def test_per_branch_towards_uniform_is_false_for_three_branches():
    """Why the K >= 3 checks above use kappa and the distance from uniform: for the exact
    posterior (rollouts only: independent Gaussians, product quadrature exact to ~1e-8) a
    branch below 1/K can overshoot above it as sigma_r grows, moving away from 1/K."""
    probs = []
    for sigma_r in (0.5, 1.0):
        p = KappaParams(sigma_r=sigma_r)
        info = kappa_info(p, build(p, 3, [], [(0, 1, 0.3), (1, 1, 0.063), (2, 1, -1.317)]))
        assert info.method == "product_quadrature"
        probs.append(info.argmax_probs[1])
    # branch b: 0.380 at sigma_r = 0.5, 0.404 at 1.0: larger sigma_r moved it away from 1/3
    assert abs(probs[1] - 1 / 3) > abs(probs[0] - 1 / 3) + 0.02, probs


# --------------------------------------------------------------------------- bad input


BAD = [
    ("unknown branch", lambda k: k.judge("a", "zz", 1), UnknownBranchError, "right"),
    ("unknown index", lambda k: k.rollout(7, 1, 0.0), UnknownBranchError, "branch"),
    ("bool branch", lambda k: k.rollout(True, 1, 0.0), UnknownBranchError, "branch"),
    ("self judgment", lambda k: k.judge("b", "b", 1), SelfJudgmentError, "right"),
    ("self judgment by index", lambda k: k.judge(1, "b", 0), SelfJudgmentError, "right"),
    ("y = 2", lambda k: k.judge("a", "b", 2), JudgmentValueError, "y"),
    ("y = -1", lambda k: k.judge("a", "b", -1), JudgmentValueError, "y"),
    ("y = 0.5", lambda k: k.judge("a", "b", 0.5), JudgmentValueError, "y"),
    ("y = '1'", lambda k: k.judge("a", "b", "1"), JudgmentValueError, "y"),
    ("NaN score", lambda k: k.rollout("a", 1, float("nan")), NonFiniteScoreError, "score"),
    ("inf score", lambda k: k.rollout("a", 1, float("inf")), NonFiniteScoreError, "score"),
    ("-inf score", lambda k: k.rollout("a", 1, -math.inf), NonFiniteScoreError, "score"),
    ("string score", lambda k: k.rollout("a", 1, "0.3"), NonFiniteScoreError, "score"),
    ("depth 0", lambda k: k.rollout("a", 0, 0.1), DepthError, "depth"),
    ("depth -2", lambda k: k.rollout("a", -2, 0.1), DepthError, "depth"),
    ("depth 1.5", lambda k: k.rollout("a", 1.5, 0.1), DepthError, "depth"),
    ("not evidence", lambda k: k.update(("a", "b", 1)), EvidenceTypeError, "evidence"),
    ("round with a bad score", lambda k: k.round({"a": 1.0, "b": math.nan}), NonFiniteScoreError, "score"),
    ("round twice the same", lambda k: k.update(RolloutRound((Rollout("a", 1, 0.0), Rollout(0, 1, 1.0)))),
     DuplicateBranchError, "rollouts"),
    ("empty round", lambda k: k.round({}), EvidenceTypeError, "rollouts"),
]


@pytest.mark.parametrize("name, call, error, field", BAD, ids=[b[0] for b in BAD])
def test_bad_evidence_raises_and_leaves_kappa_unchanged(name, call, error, field):
    k = Kappa(["a", "b", "c"])
    k.judge("a", "b", 1)
    k.rollout("c", 2, 0.4)
    state, info, record = k.state, k.info, k.to_record()
    with pytest.raises(error) as exc:
        call(k)
    assert isinstance(exc.value, KappaInputError) and isinstance(exc.value, InputError)
    assert exc.value.field == field
    assert str(exc.value) and "\n" not in str(exc.value)
    assert k.state is state and k.info is info and k.to_record() == record
    k.judge("b", "c", 0)  # still usable
    assert k.state.t == state.t + 1


def test_unknown_branch_is_also_a_lookup_failure():
    with pytest.raises(LookupFailure):
        Kappa(["a", "b"]).judge("a", "x", 1)


@pytest.mark.parametrize("branches, error", [
    ([], NoBranchError), (["a", "b", "a"], DuplicateBranchError), ("abc", K.BranchNameError),
    (["a", ""], K.BranchNameError), (["a", 3], K.BranchNameError)])
def test_bad_branches(branches, error):
    with pytest.raises(error) as exc:
        Kappa(branches)
    assert exc.value.field == "branches"


@pytest.mark.parametrize("field, value", [
    ("theta", 0.0), ("theta", 1.5), ("theta", -0.1), ("nucleus_p", 0.0), ("nucleus_p", 1.01),
    ("tau", 0.0), ("sigma_r", -1.0), ("sigma0", 0.0), ("max_rounds", 0), ("theta", math.nan),
    ("num_points", 63), ("unknown", 1.0)])
def test_bad_params(field, value):
    with pytest.raises(KappaParamError) as exc:
        KappaParams(**{field: value})
    assert exc.value.field == field and field in str(exc.value)


def test_params_at_the_closed_end_are_valid():
    p = KappaParams(theta=1.0, nucleus_p=1.0)
    assert KappaParams.from_json(p.to_json()) == p
    with pytest.raises(KappaParamError):
        p.replace(theta=2.0)


# --------------------------------------------------------------------------- the model, its data, NUTS


def test_decisions_jsonl_round_trip_and_errors(tmp_path):
    from beliefgate.models.kappa import KappaDataError, read_decisions, simulate_decisions, write_decisions

    records = simulate_decisions(5, {"mu0": 0.0, "sigma0": 1.0, "tau": 0.5, "sigma_r": 1.0}, seed=3)
    path = write_decisions(records, tmp_path / "d.jsonl")
    decisions = read_decisions(path)
    assert decisions.num_decisions == 5
    assert decisions.data.num_branches == sum(len(r["branches"]) for r in records)
    assert len(decisions.data.j_y) == sum(len(r["judgments"]) for r in records)
    # a Kappa replay of a record writes the same evidence back
    rec = records[0]
    k = Kappa(rec["branches"])
    for j in rec["judgments"]:
        k.judge(j["left"], j["right"], j["y"])
    for r in rec["rollouts"]:
        k.rollout(r["branch"], r["depth"], r["score"])
    out = k.to_record()
    assert out["judgments"] == rec["judgments"] and out["rollouts"] == rec["rollouts"]
    bad_lines = [
        '{"judgments": []}',
        '{"branches": ["a", "a"]}',
        '{"branches": ["a", "b"], "judgments": [{"left": "a", "right": "c", "y": 1}]}',
        '{"branches": ["a", "b"], "judgments": [{"left": "a", "right": "a", "y": 1}]}',
        '{"branches": ["a", "b"], "judgments": [{"left": "a", "right": "b", "y": 3}]}',
        '{"branches": ["a"], "rollouts": [{"branch": "a", "depth": 0, "score": 1}]}',
        '{"branches": ["a"], "rollouts": [{"branch": "a", "depth": 1, "score": NaN}]}',
        'not json',
    ]
    for line in bad_lines:
        bad = tmp_path / "bad.jsonl"
        bad.write_text(json.dumps(records[1]) + "\n" + line + "\n")
        with pytest.raises(KappaDataError) as exc:
            read_decisions(bad)
        assert f"{bad}:2" in str(exc.value)


#: two-sided tail of one comparison at 3 standard errors
P3 = 2 * (1 - ndtr(3.0))


def _nuts_agreement(num_sets: int, seed: int, chains: int, draws: int, warmup: int):
    """z-scores of the fast argmax probabilities against NUTS on ``num_sets`` random sets.

    Returns ``(z_all, z_kappa, diffs, divergences)``: ``z_all`` one per branch of every set,
    ``z_kappa`` the best branch's, ``diffs`` the per-set max ``|fast - nuts|``.

    ``z = (fast - nuts) / se`` with the standard error *under the hypothesis tested*
    (the true probability is the fast ``p``): ``se = sqrt(p (1 - p) / ess)``, ``ess`` the
    ArviZ bulk ESS of that branch's indicator draws (where NUTS saw it vary; otherwise the
    set's median relative ESS times the draws), the variance floored at that of half a hit in
    ``ess`` draws (a continuity correction: for p -> 0 the normal approximation of one or two
    NUTS hits breaks down). The plug-in MCSE of the NUTS draws themselves
    is no good for rare branches (a branch NUTS saw win 3 times in 4000 gets an SE ~3x too
    small); measured in docs/kappa.md.
    """
    from beliefgate.models.kappa import nuts_argmax_probs

    rng = np.random.default_rng(seed)
    params = KappaParams()
    values = {"mu0": 0.0, "sigma0": 1.0, "tau": 0.5, "sigma_r": 1.0}
    sets = [random_evidence(rng) for _ in range(num_sets)]
    fast = [kappa_info(params, build(params, *s)) for s in sets]
    nuts = nuts_argmax_probs(values, sets, chains=chains, draws=draws, warmup=warmup, seed=seed)
    z_all, z_kappa, diffs = [], [], []
    for f, n in zip(fast, nuts):
        assert n.r_hat <= 1.01
        p = f.argmax_probs
        rel = float(np.median(n.ess[n.ess > 0])) / n.draws if np.any(n.ess > 0) else 1.0
        ess = np.where(n.ess > 0, n.ess, rel * n.draws)
        se = np.sqrt(np.maximum(p * (1 - p), 0.5 / ess) / ess)
        z = (p - n.probs) / se
        z_all.extend(z.tolist())
        z_kappa.append(float(z[f.best]))
        diffs.append(float(np.max(np.abs(p - n.probs))))
    return np.abs(np.array(z_all)), np.abs(np.array(z_kappa)), np.array(diffs), nuts[0].divergences


def _agreement_criterion(z: np.ndarray, alpha: float = 0.01) -> tuple[bool, str]:
    """The issue's "within 3 Monte-Carlo standard errors", as a test over many comparisons.

    Each comparison falls outside 3 SE by chance with probability ``P3`` (0.27%), so over
    ``n`` comparisons some will. Passes when (a) the number outside 3 SE is within the
    ``1 - alpha`` quantile of Binomial(n, P3) and (b) no ``|z|`` exceeds the Bonferroni bound
    ``Phi^-1(1 - alpha / (2 n))``. (Probabilities of one set are dependent, they sum to one:
    that widens the spread of the count, so (a) errs towards failing.)
    """
    from scipy.stats import binom, norm

    n = len(z)
    outside = int(np.sum(z > 3.0))
    allowed = int(binom.ppf(1 - alpha, n, P3))
    bound = float(norm.ppf(1 - alpha / (2 * n)))
    text = (f"{outside} of {n} outside 3 SE (chance {n * P3:.2f}, allowed {allowed}); "
            f"max |z| {z.max():.2f} (Bonferroni bound {bound:.2f})")
    return outside <= allowed and z.max() <= bound, text


def test_agreement_criterion_can_fail():
    rng = np.random.default_rng(1000)
    # honest z (the null): passes about 98% of the time (alpha = 0.01 for each of its two parts)
    passed = np.mean([_agreement_criterion(np.abs(rng.standard_normal(300)))[0] for _ in range(200)])
    assert passed >= 0.95, passed
    biased, text = _agreement_criterion(np.abs(rng.standard_normal(300) + 1.0))
    assert not biased, text  # a bias of one standard error everywhere is caught
    assert not _agreement_criterion(np.array([0.1] * 50 + [6.0]))[0]  # one gross outlier is caught


def test_kappa_agrees_with_nuts_small():
    z_all, z_kappa, diffs, divergences = _nuts_agreement(3, seed=7, chains=2, draws=1000, warmup=300)
    assert divergences == 0
    ok, text = _agreement_criterion(z_all)
    assert ok, text
    assert _agreement_criterion(z_kappa)[0], z_kappa


@pytest.mark.slow
def test_kappa_agrees_with_nuts_50_sets():
    """The issue's criterion on 50 random sets (2-8 branches, <= 20 judgments, <= 10 rollouts),
    NUTS 4 x 1000 draws: every argmax probability and kappa within 3 SE of NUTS up to the
    failures chance allows (:func:`_agreement_criterion`)."""
    z_all, z_kappa, diffs, divergences = _nuts_agreement(50, seed=11, chains=4, draws=1000, warmup=500)
    assert divergences == 0
    ok_all, text_all = _agreement_criterion(z_all)
    ok_kappa, text_kappa = _agreement_criterion(z_kappa)
    print(f"\nargmax probabilities: {text_all}\nkappa: {text_kappa}\nmax |fast - nuts| {diffs.max():.4f}, "
          f"mean of per-set max {diffs.mean():.4f}")
    assert ok_all, text_all
    assert ok_kappa, text_kappa


@pytest.mark.slow
def test_fit_recovers_tau_and_sigma_r():
    import arviz as az

    from beliefgate.models.diagnose import diagnose_kappa
    from beliefgate.models.kappa import KappaFitConfig, decisions_from_records, fit_kappa, simulate_decisions

    truth = {"mu0": 0.3, "sigma0": 1.2, "tau": 0.7, "sigma_r": 0.8}
    decisions = decisions_from_records(simulate_decisions(500, truth, seed=5))
    idata = fit_kappa(decisions, KappaFitConfig(chains=4, draws=1000, warmup=1000, seed=1))
    summary = az.summary(idata, hdi_prob=0.9, round_to="none")
    print(summary)
    assert float(summary["r_hat"].max()) <= 1.01
    for name in ("tau", "sigma_r"):
        row = summary.loc[name]
        assert row["hdi_5%"] <= truth[name] <= row["hdi_95%"], (name, row)
    result = diagnose_kappa(idata)
    assert not [w for w in result.warnings if "r_hat" in w]


def test_restore_puts_back_an_earlier_state_and_cuts_the_log():
    from beliefgate.models.kappa import KappaStateError

    k = Kappa(["a", "b", "c"])
    s0 = k.state
    k.judge("a", "b", 1)
    s1, probs1 = k.state, dict(k.argmax_probs)
    k.rollout("c", depth=2, score=0.4)
    assert k.argmax_probs != probs1
    k.restore(s1)
    assert k.argmax_probs == probs1 and k.to_record()["judgments"] == [{"left": "a", "right": "b", "y": 1}]
    k.restore(s0)
    assert k.kappa == pytest.approx(1 / 3)
    with pytest.raises(KappaStateError, match="ahead|logged only"):
        k.restore(s1)  # ahead of the (now empty) log: refused, state unchanged
    assert k.kappa == pytest.approx(1 / 3)
    with pytest.raises(KappaStateError):
        k.restore(Kappa(["x", "y"]).state)


def test_log_records_rebuild_the_same_kappa():
    k = Kappa(["a", "b", "c"], KappaParams(seed=3))
    k.judge("a", "b", 1)
    k.rollout(2, depth=2, score=0.4)
    k.round({"a": 0.1, "c": -0.2})
    k.judge("c", "a", 0)
    log = k.log
    assert log[1] == {"branch": "c", "depth": 2, "score": 0.4}  # branches by name, indices resolved
    assert log[2] == {"round": [{"branch": "a", "depth": 1, "score": 0.1}, {"branch": "c", "depth": 1, "score": -0.2}]}
    again = Kappa.from_log(k.branches, k.params, json.loads(json.dumps(log)))
    assert again.log == log
    np.testing.assert_array_equal(again.info.argmax_probs, k.info.argmax_probs)
    assert again.rounds == k.rounds == 1
    # from a committed (earlier) state: the log is cut back to it
    early = Kappa.from_log(k.branches, k.params, log[:2]).state
    back = Kappa.from_log(k.branches, k.params, log, state=early)
    assert back.log == log[:2] and back.state is early


def test_bad_evidence_records_are_rejected_with_the_field():
    from beliefgate.beliefs.kappa import evidence_from_record

    with pytest.raises(K.EvidenceTypeError, match="judgment record .*: lacks right"):
        evidence_from_record({"left": "a", "y": 1})
    with pytest.raises(K.EvidenceTypeError, match="judgment record .*: lacks y"):  # not "branch"
        evidence_from_record({"left": "a", "right": "b"})
    with pytest.raises(K.EvidenceTypeError, match=r"a round record is \{\"round\""):
        evidence_from_record({"round": 5})
    with pytest.raises(K.EvidenceTypeError, match="rollout record .*: unknown extra"):
        evidence_from_record({"branch": "a", "depth": 1, "score": 0.1, "extra": 1})
    with pytest.raises(K.EvidenceTypeError, match="is an object"):
        evidence_from_record(["a", "b", 1])
    k = Kappa(["a", "b"])
    with pytest.raises(K.UnknownBranchError):
        Kappa.from_log(["a", "b"], None, [{"left": "a", "right": "zz", "y": 1}])
    assert k.log == ()


def test_bench_kappa_quick_reports_latency_parts_and_accuracy(tmp_path):
    """`make bench`'s kappa script runs (quick) and writes every section with its configuration;
    no timing is asserted, only that each section measured something."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_kappa.py"
    out = tmp_path / "bench.json"
    subprocess.run([sys.executable, str(script), "--quick", "--json", str(out)], capture_output=True, text=True,
                   timeout=600, check=True)
    result = json.loads(out.read_text())
    assert result["config"]["branches"] == 8 and result["config"]["params"]["num_points"] == 2048
    assert result["latency"]["all"]["n"] == result["parts"]["argmax_rule"]["n"] > 0
    assert result["parts"]["condition_judgment"]["n"] + result["parts"]["condition_rollout"]["n"] == \
        result["parts"]["argmax_rule"]["n"]
    assert all(v["p50_us"] > 0 for v in result["parts"].values())
    assert 0.0 <= result["accuracy"]["max_abs_error"] < 0.1 and result["accuracy"]["sets"] == 5


def test_functional_core_refuses_what_is_not_a_state():
    params = KappaParams()
    for bad in ("x", None, (1, 2)):
        with pytest.raises(K.KappaStateError, match="state must be a KappaState"):
            kappa_update(params, bad, Judgment("a", "b", 1))
        with pytest.raises(K.KappaStateError, match="state must be a KappaState"):
            kappa_info(params, bad)


def test_restore_refuses_a_state_its_log_did_not_reach():
    k = Kappa(["a", "b", "c"])
    k.judge("a", "b", 1)
    mid = k.state
    k.judge("a", "c", 1)
    k.judge("b", "c", 1)
    other = Kappa(["a", "b", "c"])
    other.judge("b", "a", 1)
    other.judge("b", "c", 1)
    wider = Kappa(["a", "b", "c"], KappaParams(sigma0=5.0))
    before = (k.state, k.log, k.kappa)
    for foreign in (other.state, wider.state):
        with pytest.raises(K.KappaStateError, match="not the one this object's evidence log reached"):
            k.restore(foreign)
        assert (k.state, k.log, k.kappa) == before
    k.restore(mid)  # its own earlier state: accepted, the log cut back to it
    assert k.state is mid and len(k.log) == 1 and k.state.t == 1
    again = Kappa.from_log(["a", "b", "c"], None, list(before[1]), state=before[0])
    assert again.kappa == before[2]


def test_rollout_scores_are_bounded_everywhere():
    from beliefgate.models.kappa import SCORE_BOUND, KappaDataError, parse_decision

    k = Kappa(["a", "b"])
    k.rollout("a", 1, SCORE_BOUND)
    for bad in (1.0000001e9, -1e12, 1e39):
        with pytest.raises(K.NonFiniteScoreError, match=r"must lie in \[-1e9, 1e9\]"):
            k.rollout("b", 1, bad)
        with pytest.raises(KappaDataError, match="must lie in"):
            parse_decision({"branches": ["a", "b"], "rollouts": [{"branch": "a", "depth": 1, "score": bad}]})
    assert k.info.t == 1


def test_weights_float64_cannot_resolve_are_refused_not_answered():
    """A judged difference so large against tau that the likelihood ratio's terms cancel below
    float64's resolution: the step is refused (state unchanged); at a scale float64 resolves,
    the answer is the exact linear-tail one, Phi(-sqrt 2)."""
    k = Kappa(["a", "b", "c"])
    k.rollout("b", 1, -1e9)
    k.judge("b", "a", 1)
    assert abs(k.argmax_probs["a"] - ndtr(-math.sqrt(2))) < 5e-4
    sharp = Kappa(["a", "b", "c"], KappaParams(tau=1e-3))
    sharp.rollout("b", 1, -1e9)
    before = sharp.state
    with pytest.raises(K.ExtremeEvidenceError, match="cancel below float64"):
        sharp.judge("b", "a", 1)
    assert sharp.state is before


def test_kappa_itself_can_grow_with_tau():
    """Why the tau checks for K >= 3 use judged chains only: on other evidence even kappa (the
    largest argmax probability) can move away from 1/K as tau grows, for the exact posterior
    too (a case a review found; importance sampling with 2e6 prior draws gave 0.537, 0.570,
    0.622 at tau 0.1, 0.2, 0.5)."""
    names = ["b0", "b1", "b2", "b3"]
    pairs = [("b1", "b3", 0), ("b0", "b1", 0), ("b1", "b2", 0), ("b0", "b1", 0), ("b1", "b3", 0),
             ("b1", "b0", 0), ("b1", "b0", 1), ("b0", "b1", 0), ("b1", "b3", 0)]
    kappas = []
    for tau in (0.1, 0.2, 0.5):
        k = Kappa(names, KappaParams(tau=tau))
        k.update_many([Judgment(a, b, y) for a, b, y in pairs])
        ref, se = monte_carlo_argmax(k.params, k.state, 400_000, seed=7)
        assert abs(k.kappa - ref.max()) < 0.01 + 4 * se.max()
        kappas.append(k.kappa)
    assert kappas[0] < kappas[1] < kappas[2] and kappas[2] - kappas[0] > 0.05, kappas  # 0.54, 0.57, 0.62


# ---------------------------------------------------------------------------- the model package

#: every name the single-module ``beliefgate.models.kappa`` offered (the package keeps them)
FORMER_NAMES = (
    "FORMAT", "CONFIG_ATTR", "PARAM_NAMES", "PRIORS", "PARAM_RANGES", "SCORE_BOUND", "SCORE_RANGE", "MAX_DEPTH",
    "KAPPA_FIT_FILE", "STAT_DESCRIPTIONS", "KappaInputError", "UnknownBranchError", "SelfJudgmentError",
    "JudgmentValueError", "ExtremeEvidenceError", "NonFiniteScoreError", "DepthError", "DuplicateBranchError",
    "NoBranchError", "BranchNameError", "KappaParamError", "KappaStateError", "EvidenceTypeError",
    "RoundLimitError", "NotInNucleusError", "KappaDataError", "KappaFitError", "KappaData", "Decisions",
    "parse_decision", "decisions_from_records", "read_decisions", "write_decisions", "simulate_decisions", "prior",
    "utility_model", "evidence_data", "NutsArgmax", "nuts_argmax_probs", "KappaFitConfig", "fit_kappa",
    "is_kappa_fit", "kappa_fit_record", "kappa_fit_config", "save_kappa_fit", "load_kappa_fit",
    "kappa_point_values", "data_from_idata", "KappaStatCheck", "kappa_predictive_check", "judgment_outcome",
)


def test_the_model_package_keeps_every_former_name():
    import importlib

    import beliefgate.models.kappa as km

    missing = [n for n in FORMER_NAMES if not hasattr(km, n)]
    assert not missing, missing
    assert set(FORMER_NAMES) <= set(km.__all__) and all(hasattr(km, n) for n in km.__all__)
    for part in ("errors", "data", "model", "posterior", "fit"):  # each public name defined once, re-exported
        module = importlib.import_module(f"beliefgate.models.kappa.{part}")
        for name in module.__all__:
            assert getattr(km, name) is getattr(module, name), (part, name)
    # the online kappa's errors are the model's classes, not copies
    assert K.DepthError is km.DepthError and K.KappaParamError is km.KappaParamError


def test_nothing_imports_a_private_name_of_the_kappa_model():
    """The checks the online kappa shares with the decisions format are public (check_branch_names,
    branch_index, judgment_outcome, rollout_depth, rollout_score); no module reaches for a
    ``_name`` of ``beliefgate.models.kappa``."""
    import ast
    from pathlib import Path

    import beliefgate

    root = Path(beliefgate.__file__).parent
    bad = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("beliefgate.models.kappa"):
                bad += [f"{path.relative_to(root)}:{node.lineno} {a.name}" for a in node.names if a.name.startswith("_")]
    assert not bad, bad


@pytest.mark.parametrize("check, good, bad, error", [
    ("check_branch_names", (["a", "b"], ("a", "b")), ["a", "a"], DuplicateBranchError),
    ("rollout_depth", (3, 3), 0, DepthError),
    ("rollout_score", (np.float32(0.5), 0.5), float("inf"), NonFiniteScoreError),
    ("judgment_outcome", (True, 1), 2, JudgmentValueError),
])
def test_public_evidence_checks(check, good, bad, error):
    from beliefgate.models.kappa import data

    fn = getattr(data, check)
    assert fn(good[0]) == good[1]
    with pytest.raises(error) as info:
        fn(bad)
    assert info.value.field in ("branches", "depth", "score", "y")
    names = data.check_branch_names(["x", "y"])
    holder = type("S", (), {"names": names})()
    assert data.branch_index(holder, "y", "left") == 1 == data.branch_index(holder, 1, "left")
    with pytest.raises(UnknownBranchError, match="left 'z' is not a branch"):
        data.branch_index(holder, "z", "left")
