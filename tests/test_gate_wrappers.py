"""The change-point and CUSUM gates, and their combinations, as ``(init, update)`` wrappers
under ``jax.jit(jax.vmap(lax.scan))``: the same rules as the NumPy :class:`Gate` (interrupts,
reasons, MAP; posteriors and statistics to rounding), and a jitted update that traces once."""

from __future__ import annotations

import math

import numpy as np
import pytest

from beliefgate import GateParams
from beliefgate.beliefs import gates as G

pytestmark = pytest.mark.usefixtures("x64")

K, T, B = 4, 60, 5


def _inputs():
    """Switching partners: a few segments of one preferred skill each, some excluded steps
    (weight 0), a visible completion, an infeasible skill and an action one skill rules out."""
    rng = np.random.default_rng(3)
    ll = np.empty((B, T, K))
    for b in range(B):
        skill = rng.integers(K)
        for t in range(T):
            if rng.random() < 0.08:
                skill = rng.integers(K)
            p = np.full(K, 0.15)
            p[skill] = 0.7
            p = p * rng.uniform(0.6, 1.4, K)
            ll[b, t] = np.log(p / p.sum() * 0.9)
    ll[1, 9] = [0.0, -math.inf, -1.0, -2.0]
    weight = np.ones((B, T))
    weight[:, 5] = 0.0
    weight[2, 20:23] = 0.0
    weight[3, 30] = 0.5
    feasible = np.ones((B, T, K), bool)
    feasible[0, 10:15, 3] = False
    completed = np.full((B, T), -1)
    completed[4, 25] = 2
    ego = np.ones((B, T), bool)
    ego[:, ::7] = False
    return ll, weight, feasible, completed, ego


def _numpy_runs(params, ll, weight, feasible, completed, ego):
    from beliefgate.beliefs.core import LoglikEvidence, make_gate

    fns = make_gate(params, K)
    out = []
    for b in range(B):
        state, rows = fns.init(), []
        for t in range(T):
            ev = LoglikEvidence(ll[b, t], completed=None if completed[b, t] < 0 else int(completed[b, t]),
                                feasible=feasible[b, t], weight=float(weight[b, t]))
            state, info = fns.update(state, ev, ego_active=bool(ego[b, t]))
            rows.append(info)
        out.append(rows)
    return out


def _jax_runs(params, ll, weight, feasible, completed, ego):
    import jax
    import jax.numpy as jnp

    from beliefgate.beliefs.wrappers import gate_wrapper

    init, update = gate_wrapper(params)

    def episode(ll_b, w_b, f_b, c_b, e_b):
        def body(state, xs):
            row, w, f, c, e = xs
            tempered = w * row
            masked = jnp.where(f, tempered, -jnp.inf)
            top = jnp.max(masked)
            state, info = update(state, tempered, tempered, top, w, f, c, e)
            return state, (info, jnp.exp(info.filter.log_posterior))
        return jax.lax.scan(body, init(jnp.zeros(K)), (ll_b, w_b, f_b, c_b, e_b))[1]

    return jax.jit(jax.vmap(episode))(*(jnp.asarray(x) for x in (ll, weight, feasible, completed, ego)))


@pytest.mark.parametrize("gate", ["changepoint", "cusum", "either", "stable_map"])
def test_jitted_vmapped_gates_equal_the_numpy_gate(gate):
    params = GateParams(gate=gate, hazard=0.08, tau_obs=0.3, confidence_floor=0.5, cooldown=3, cusum_h=2.5,
                        cp_threshold=0.3, cp_release=0.2, cp_horizon=4, cp_cooldown=2)
    inputs = _inputs()
    want = _numpy_runs(params, *inputs)
    info, posts = _jax_runs(params, *inputs)
    interrupts = np.asarray(info.interrupt)
    assert interrupts.tolist() == [[i.interrupt for i in row] for row in want]
    # the driver's combined reason, as the NumPy gate's GateInfo.suppressed_reason says it
    reasons = G.reason_names(G.GATE_REASONS, np.asarray(info.suppressed_reason))
    assert reasons.tolist() == [[i.suppressed_reason for i in row] for row in want]
    seen = set(reasons.ravel().tolist())
    assert None in seen and len(seen) >= 3  # interrupts and several reasons (ego_idle for the gates needing it)
    if gate != "stable_map":
        assert G.REASON_EGO_IDLE in seen
    assert 5 <= interrupts.sum() < interrupts.size // 2  # the case exercises the gate
    np.testing.assert_allclose(np.asarray(posts), [[i.posterior for i in row] for row in want], rtol=0, atol=1e-12)
    if gate in ("changepoint", "either"):
        cp = info.changepoint
        assert np.asarray(cp.fired).tolist() == [[i.changepoint.fired for i in row] for row in want]
        reasons = G.reason_names(G.CHANGEPOINT_REASONS, np.asarray(cp.suppressed_reason))
        assert reasons.tolist() == [[i.changepoint.suppressed_reason for i in row] for row in want]
        np.testing.assert_allclose(np.asarray(cp.prob), [[i.changepoint.prob for i in row] for row in want],
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.asarray(cp.switch_prob),
                                   [[i.changepoint.switch_prob for i in row] for row in want], rtol=0, atol=1e-9)
    if gate == "cusum":
        cu = info.cusum
        assert np.asarray(cu.reference).tolist() == [[i.map_skill for i in row] for row in want]
        reasons = G.reason_names(G.CUSUM_REASONS, np.asarray(cu.suppressed_reason))
        assert reasons.tolist() == [[i.cusum.suppressed_reason for i in row] for row in want]
        np.testing.assert_allclose(np.asarray(cu.statistic), [[i.cusum.statistic for i in row] for row in want],
                                   rtol=0, atol=1e-9)
        assert info.stable_map is None and info.changepoint is None  # only the driving gate is wrapped
    if gate in ("stable_map", "either"):
        sm = info.stable_map
        assert np.asarray(sm.map_skill).tolist() == [[i.map_skill for i in row] for row in want]
        reasons = G.reason_names(G.STABLE_MAP_REASONS, np.asarray(sm.suppressed_reason))
        assert reasons.tolist() == [[i.stable_map.suppressed_reason for i in row] for row in want]


def test_either_restarts_both_cooldowns_under_jit():
    """The combinator under jit: an interrupt of either member starts both cooldowns (else the
    change-point gate would fire inside the stable-MAP gate's cooldown and vice versa)."""
    params = GateParams(gate="either", hazard=0.08, tau_obs=0.3, confidence_floor=0.5, cooldown=6,
                        cp_threshold=0.3, cp_horizon=4, cp_cooldown=6)
    info, _ = _jax_runs(params, *_inputs())
    fired = np.asarray(info.interrupt)
    for row in fired:
        steps = np.flatnonzero(row)
        assert len(steps) >= 1 and (np.diff(steps) >= 6).all()


@pytest.mark.parametrize("gate", ["changepoint", "cusum", "either"])
def test_jitted_gate_update_does_not_recompile_in_a_loop(gate):
    import jax
    import jax.numpy as jnp

    from beliefgate.beliefs.wrappers import gate_wrapper

    params = GateParams(gate=gate, hazard=0.08, cusum_h=2.5, cp_horizon=4)
    ll, weight, feasible, completed, ego = _inputs()
    init, update = gate_wrapper(params)
    traces = []

    @jax.jit
    def step(state, row, w, f, c, e):
        traces.append(1)  # a Python side effect: runs once per trace, never per call
        return update(state, w * row, w * row, jnp.max(w * row), w, f, c, e)

    state = init(jnp.zeros(K))
    got = []
    for t in range(T):
        state, info = step(state, jnp.asarray(ll[0, t]), jnp.asarray(weight[4, t]), jnp.asarray(feasible[4, t]),
                           jnp.asarray(completed[4, t]), jnp.asarray(ego[0, t]))
        got.append(bool(info.interrupt))
    assert len(traces) == 1 and step._cache_size() == 1
    assert sum(got) >= 1


def test_single_gate_wrappers_name_their_gate():
    from beliefgate.beliefs.wrappers import changepoint_wrapper, cusum_wrapper

    p = GateParams()
    import jax.numpy as jnp

    for wrap, cfg, field in ((changepoint_wrapper, p.changepoint_config(), "changepoint"),
                             (cusum_wrapper, p.cusum_config(), "cusum")):
        init, update = wrap(p.filter_params(), cfg)
        state = init(jnp.zeros(3))
        row = jnp.log(jnp.asarray([0.7, 0.2, 0.1]))
        state, info = update(state, row, row, jnp.max(row), 1.0, jnp.ones(3, bool), -1, True)
        assert getattr(info, field) is not None and info.stable_map is None
