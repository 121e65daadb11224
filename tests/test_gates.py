"""The gate wrappers of beliefgate.beliefs.gates: stable-MAP semantics, hazard step, change point."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from beliefgate.beliefs import gates as G
from beliefgate import Gate, GateParams


# --------------------------------------------------------------------------- helpers


def sm_config(tau=0.1, lam=1.0, floor=0.6, n_stable=3, cooldown=5):
    return G.StableMapConfig.make(tau, lam, floor, n_stable, cooldown)


def dense_transition(pi0, feasible, h, restart):
    """T[i, j] written row by row from docs/model.md (O(K^2), no shortcuts)."""
    num = len(pi0)
    f = feasible.astype(float)
    forced = pi0 * f / np.sum(pi0 * f)
    mat = np.zeros((num, num))
    for i in range(num):
        if restart or not feasible[i]:
            mat[i] = forced
        else:
            row = ((1 - h) * (np.arange(num) == i) + h * pi0) * f
            mat[i] = row / row.sum()
    return mat


def smoothed(counts, alpha=1.0):
    c = np.asarray(counts, float) + alpha
    return c / c.sum()


def switching_table(num_skills=3, num_actions=5, p_pref=0.8):
    """Skill k prefers action k with probability p_pref, the rest share the remainder."""
    lp = np.full((num_skills, num_actions), math.log((1 - p_pref) / (num_actions - 1)))
    for k in range(num_skills):
        lp[k, k] = math.log(p_pref)
    return lp


# --------------------------------------------------------------------------- stable-MAP gate


def test_stable_counter_confidence_and_interrupt():
    cfg = sm_config(n_stable=2, cooldown=0)
    st = G.stable_map_init()
    prior = np.array([0.7, 0.2, 0.1])
    bad = np.array([math.log(0.05), 0.0, 0.0])  # l_t = 0.05 under skill 0
    stables, interrupts = [], []
    for t in range(4):
        st, info = G.stable_map_update(cfg, st, t, prior, bad, 0.0, 1.0)
        stables.append(info.stable)
        interrupts.append(info.interrupt)
        assert info.map_skill == 0 and info.confidence == pytest.approx(0.7)
        assert info.contradiction and info.l_t == pytest.approx(0.05)
    assert stables == [0, 1, 2, 3]
    assert interrupts == [False, False, True, True]
    # a new MAP restarts the count
    st, info = G.stable_map_update(cfg, st, 4, prior[::-1].copy(), bad, 0.0, 1.0)
    assert info.map_skill == 2 and info.stable == 0
    assert st.num_interrupts == 2 and st.num_contradictions == 4  # l_t = 1 under skill 2


def test_reasons_in_order():
    prior = np.array([0.9, 0.1])
    bad = np.array([math.log(0.01), 0.0])
    good = np.zeros(2)

    def reason(cfg, state=None, ratio=bad, weight=1.0, ego=True, t=10, prior=prior):
        state = state or G.StableMapState(prev_map=0, stable=5)
        return G.stable_map_update(cfg, state, t, prior, ratio, 0.0, weight, ego)[1].suppressed_reason

    assert reason(sm_config()) is None
    assert reason(sm_config(), weight=0.0) == "excluded_step"
    assert reason(sm_config(), ratio=good) == "no_contradiction"
    assert reason(sm_config(), state=G.StableMapState(prev_map=1, stable=5)) == "unstable_map"
    assert reason(sm_config(floor=0.95)) == "low_confidence"
    assert reason(sm_config(), state=G.StableMapState(prev_map=0, stable=5, t_last_interrupt=8)) == "cooldown"
    assert reason(sm_config(), ego=False) == "ego_idle"


def test_cooldown_arithmetic_and_notify():
    cfg = sm_config(n_stable=0, floor=0.0, cooldown=3)
    prior = np.array([0.9, 0.1])
    bad = np.array([-10.0, 0.0])
    st = G.stable_map_init()
    fired = []
    for t in range(10):
        st, info = G.stable_map_update(cfg, st, t, prior, bad, 0.0, 1.0)
        fired.append(info.interrupt)
    assert [t for t, f in enumerate(fired) if f] == [0, 3, 6, 9]
    st = G.stable_map_notify_replanned(st, 10)
    results = [G.stable_map_update(cfg, st, t, prior, bad, 0.0, 1.0)[1].suppressed_reason for t in (11, 12, 13)]
    assert results == ["cooldown", "cooldown", None]


def test_ego_idle_does_not_start_cooldown():
    cfg = sm_config(n_stable=0, floor=0.0, cooldown=5)
    prior = np.array([0.9, 0.1])
    bad = np.array([-10.0, 0.0])
    st, info = G.stable_map_update(cfg, G.stable_map_init(), 0, prior, bad, 0.0, 1.0, ego_active=False)
    assert not info.interrupt and info.suppressed_reason == "ego_idle"
    st, info = G.stable_map_update(cfg, st, 1, prior, bad, 0.0, 1.0, ego_active=True)
    assert info.interrupt


def test_tau_zero_and_lambda_zero_never_contradict():
    prior = np.array([0.9, 0.1])
    impossible = np.array([-math.inf, 0.0])
    for cfg in (sm_config(tau=0.0), sm_config(lam=0.0)):
        _, info = G.stable_map_update(cfg, G.stable_map_init(), 0, prior, impossible, 0.0, 1.0)
        assert not info.contradiction
    _, info = G.stable_map_update(sm_config(), G.stable_map_init(), 0, prior, impossible, 0.0, 1.0)
    assert info.contradiction and info.l_t == 0.0
    _, info = G.stable_map_update(sm_config(), G.stable_map_init(), 0, prior, None, 0.0, 0.0)
    assert info.l_t == 1.0 and not info.contradiction


def test_l_t_is_ratio_to_the_power_lambda():
    prior = np.array([0.2, 0.8])
    ratio = np.array([0.0, math.log(0.3)])
    top = np.ones(2)
    _, info = G.stable_map_update(sm_config(lam=2.5), G.stable_map_init(), 0, prior, ratio + top, top, 1.0)
    assert info.l_t == pytest.approx(0.3 ** 2.5)


# --------------------------------------------------------------------------- hazard step


@pytest.mark.parametrize("h", [0.0, 0.05, 0.4, 1.0])
@pytest.mark.parametrize("feasible", [None, [True, False, True, True], [False, True, False, False]])
@pytest.mark.parametrize("restart", [False, True])
def test_hazard_step_matches_dense_transition(h, feasible, restart):
    rng = np.random.default_rng(3)
    pi0 = smoothed([2, 0, 1, 0])
    belief = rng.dirichlet(np.ones(4))
    feas = None if feasible is None else np.array(feasible)
    ll = np.log(rng.dirichlet(np.ones(4)))
    step = G.hazard_step(belief, pi0, feas, restart, h, ll)
    mat = dense_transition(pi0, np.ones(4, bool) if feas is None else feas, h, restart)
    pred = belief @ mat
    np.testing.assert_allclose(step.prior, pred, rtol=0, atol=1e-13)
    post = pred * np.exp(ll)
    np.testing.assert_allclose(step.post, post / post.sum(), rtol=0, atol=1e-13)
    assert step.log_z == pytest.approx(math.log(post.sum()), abs=1e-12)
    np.testing.assert_allclose(step.prior * step.factor, step.post, atol=1e-13)
    if not restart:
        np.testing.assert_allclose(step.stay * belief + step.switch, step.prior, atol=1e-13)


def test_condition_log_space_fallback_and_impossible():
    pred = np.array([1.0, 0.0, 0.0])
    post, log_z, factor = G.condition(pred, np.array([-1000.0, 0.0, 0.0]), factor=True)
    np.testing.assert_allclose(post, [1.0, 0.0, 0.0])
    assert log_z == pytest.approx(-1000.0)
    assert np.all(np.isfinite(factor))
    _, log_z, _ = G.condition(np.array([0.5, 0.5, 0.0]), np.array([-math.inf, -math.inf, 0.0]))
    assert log_z == -math.inf


# --------------------------------------------------------------------------- change-point gate


def brute_force_changepoint(ll, feasible, completed, h, horizon, alpha=1.0):
    """Enumerate every skill path: P(switch in the last L steps), P(switch now) at each t.

    A switch at tau is z_tau != z_{tau-1} on a transition that is not a restart
    (episode start or visible completion at tau-1); a restart forgets earlier switches.
    """
    steps, num = ll.shape
    recent, now = [], []
    for t in range(steps):
        total = rec = cur = 0.0
        for path in itertools.product(range(num), repeat=t + 1):
            counts = np.zeros(num)
            weight, restart, switched, start = 1.0, True, [], 0
            for tau, z in enumerate(path):
                start = tau if restart else start
                mat = dense_transition(smoothed(counts, alpha), feasible[tau], h, restart)
                prev = path[tau - 1] if tau else 0
                weight *= mat[prev, z] * math.exp(ll[tau, z])
                switched.append(not restart and z != path[tau - 1])
                restart = completed[tau] >= 0
                if restart:
                    counts[completed[tau]] += 1
            total += weight
            rec += weight * any(switched[max(start, t - horizon + 1):])
            cur += weight * switched[t]
        recent.append(rec / total)
        now.append(cur / total)
    return np.array(recent), np.array(now)


@pytest.mark.parametrize("model", ["hazard", "windowed"])
def test_changepoint_statistics_match_path_enumeration(model):
    rng = np.random.default_rng(11)
    steps, num, horizon, h = 6, 3, 2, 0.2
    ll = np.log(rng.dirichlet(np.ones(num), size=steps))
    feasible = np.ones((steps, num), bool)
    feasible[4, 1] = False
    completed = np.array([-1, -1, 2, -1, -1, -1])
    recent, now = brute_force_changepoint(ll, feasible, completed, h, horizon)
    gate = Gate.from_logprobs(num, GateParams(model=model, hazard=h, cp_horizon=horizon, window=2,
                                              track_changepoint=True))
    got_recent, got_now = [], []
    for t in range(steps):
        d = gate.step_loglik(ll[t], completed[t] if completed[t] >= 0 else None, feasible=feasible[t])
        got_recent.append(d.changepoint_prob)
        got_now.append(d.switch_prob)
        joint = G.changepoint_joint(gate.state.changepoint)
        assert joint.shape == (horizon + 1, num)
        assert joint.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(got_recent, recent, atol=1e-12)
    np.testing.assert_allclose(got_now, now, atol=1e-12)


def switching_run(seed, params, segment=20, order=(0, 1, 2, 0), p_pref=0.8):
    rng = np.random.default_rng(seed)
    lp = switching_table(p_pref=p_pref)
    truth = [z for z in order for _ in range(segment)]
    gate = Gate.from_logprobs(3, params)
    decisions = [gate.step(lp, int(rng.choice(5, p=np.exp(lp[z])))) for z in truth]
    return decisions


def test_changepoint_statistic_rises_after_switches_unlike_instantaneous():
    """P(switch in the last L steps) climbs far above h after each switch and stays
    low inside segments; P(z_t != z_{t-1} | a_{0:t}) never leaves the vicinity of h."""
    h, horizon, segment = 0.05, 6, 20
    params = GateParams(hazard=h, cp_horizon=horizon, cp_threshold=0.5, cp_release=0.2)
    peaks, interiors, inst, detected, missed, false_alarms = [], [], [], 0, 0, 0
    for seed in range(8):
        ds = switching_run(seed, params, segment)
        cp = np.array([d.changepoint_prob for d in ds])
        sw = np.array([d.switch_prob for d in ds])
        fired = np.array([d.changepoint for d in ds])
        for s in (segment, 2 * segment, 3 * segment):
            peaks.append(cp[s:s + horizon + 3].max())
            hits = int(fired[s:s + horizon + 3].sum())
            detected += hits > 0
            missed += hits == 0
        near = np.zeros(len(ds), bool)
        for s in (segment, 2 * segment, 3 * segment):
            near[s:s + horizon + 3] = True
        false_alarms += int(fired[~near].sum())
        for s in range(0, 4 * segment, segment):
            interiors.append(cp[s + horizon + 3:s + segment])
        inst.append(sw)
    interiors = np.concatenate(interiors)
    inst = np.concatenate(inst)
    assert np.median(peaks) > 0.9 and min(peaks) > 0.5  # well above h = 0.05
    assert interiors.mean() < 0.1 and np.median(interiors) < 2 * h
    # the instantaneous switch probability hovers near h and never gets near a threshold
    assert inst.mean() < 2 * h and inst.max() < 0.3
    assert detected >= 22 and missed <= 2  # 24 switches in total
    assert false_alarms <= 4  # over 8 x 80 steps


def test_changepoint_fires_once_per_switch():
    """Hysteresis: on noise-free switching behaviour each switch fires exactly once."""
    lp = switching_table(p_pref=0.8)
    gate = Gate.from_logprobs(3, GateParams(hazard=0.05, cp_horizon=6))
    truth = [0] * 15 + [1] * 15 + [2] * 15 + [0] * 15
    fired = [t for t, z in enumerate(truth) if gate.step(lp, z).changepoint]
    assert len(fired) == 3
    assert all(0 <= f - s < 4 for f, s in zip(fired, (15, 30, 45)))


def test_changepoint_cooldown_and_notify():
    params = GateParams(hazard=0.05, cp_horizon=6, cp_release=0.5, cp_threshold=0.5, cp_cooldown=100)
    ds = switching_run(0, params)
    assert sum(d.changepoint for d in ds) == 1  # cooldown outlasts the episode
    state = G.changepoint_init(3, 6)
    state = G.changepoint_notify_replanned(state, 7)
    assert state.t_last_fire == 7


def test_changepoint_ignores_visible_completions():
    """A visible completion is not a hidden switch: the statistic restarts at zero."""
    lp = switching_table()
    gate = Gate.from_logprobs(3, GateParams(hazard=0.05))
    for _ in range(10):
        gate.step(lp, 0)
    d = gate.step(lp, 0, completed=0)
    d = gate.step(lp, 1)
    assert d.switch_prob == 0.0 and d.changepoint_prob == 0.0
    assert d.map_skill == 1


# --------------------------------------------------------------------------- one rule, C configurations


def test_first_failure_scalar_and_element_wise():
    reasons = G.STABLE_MAP_REASONS[:3]
    assert G.first_failure(reasons, True, True, True) == (None, True)
    assert G.first_failure(reasons, True, False, np.array([True])) == (reasons[1], False)  # scalar fails first
    codes, passed = G.first_failure(reasons, True, np.array([True, False, True, False]),
                                    np.array([True, True, False, False]))
    assert codes.tolist() == [3, 1, 2, 1] and passed.tolist() == [True, False, False, False]
    assert G.reason_names(reasons, codes).tolist() == [None, reasons[1], reasons[2], reasons[1]]
    codes, passed = G.first_failure(reasons, np.array([True, True]), True, False)  # a later scalar failure
    assert codes.tolist() == [2, 2] and passed.tolist() == [False, False]
    assert G.first_failure(reasons, True, np.array([False, False]), np.array([True, False])) == (reasons[1], False)
    assert G.reason_names(reasons, reasons[0]) == reasons[0] and G.reason_names(reasons, None) is None
    assert G.logical_not(True) is False and G.logical_not(np.array([True, False])).tolist() == [False, True]


def _random_stable_map_configs(rng, count):
    return dict(tau=rng.choice([0.0, 0.01, 0.1, 0.3, 1.0], count), lam=rng.choice([0.0, 0.5, 1.0, 3.0], count),
                floor=rng.choice([0.0, 0.4, 0.6, 1.0], count), n_stable=rng.integers(0, 5, count),
                cooldown=rng.integers(0, 9, count))


def _as_list(value, count):
    return np.broadcast_to(np.asarray(value, dtype=object), (count,)).tolist()


def test_stable_map_decide_on_c_configurations_equals_one_at_a_time():
    """Every field of every step, scalar update per configuration == one batched decide."""
    rng = np.random.default_rng(3)
    steps, num, count = 80, 3, 60
    cols = _random_stable_map_configs(rng, count)
    scalar_cfgs = [G.StableMapConfig.make(*(cols[k][c] for k in ("tau", "lam", "floor", "n_stable", "cooldown")))
                   for c in range(count)]
    batch_cfg = G.StableMapConfig.make(cols["tau"], cols["lam"], cols["floor"], cols["n_stable"], cols["cooldown"])
    assert [float(x) for x in batch_cfg.log_tau] == [c.log_tau for c in scalar_cfgs]
    # a belief sequence with long stable runs, impossible actions, excluded steps and an idle ego
    priors, scores, weights, egos, replans = [], [], [], [], []
    m = 0
    for t in range(steps):
        m = int(rng.integers(num)) if rng.random() < 0.1 else m
        p = rng.dirichlet(np.ones(num) * 0.5)
        p[m] += 2.0
        priors.append(p / p.sum())
        s = np.log(rng.dirichlet(np.ones(num)))
        if rng.random() < 0.1:
            s[m] = -math.inf
        scores.append(None if rng.random() < 0.05 else s)
        weights.append(float(rng.choice([0.0, 0.5, 1.0], p=[0.1, 0.2, 0.7])))
        egos.append(bool(rng.random() < 0.9))
        replans.append(bool(rng.random() < 0.05))
    # scalar: one configuration at a time
    rows = []
    for cfg in scalar_cfgs:
        st, row = G.stable_map_init(), []
        for t in range(steps):
            st, info = G.stable_map_update(cfg, st, t, priors[t], scores[t], 0.0, weights[t], egos[t])
            if replans[t]:
                st = G.stable_map_notify_replanned(st, t)
            row.append((info, st))
        rows.append(row)
    # batched: the belief side of one pass (lambda = 1: log_l is the ratio), then one decide per step
    belief = []
    st = G.stable_map_init()
    for t in range(steps):
        st, info = G.stable_map_update(sm_config(lam=1.0), st, t, priors[t], scores[t], 0.0, weights[t])
        belief.append((info.map_skill, info.confidence, info.stable, info.log_l))
    bst = G.stable_map_init()
    fired = 0
    for t in range(steps):
        bst, binfo = G.stable_map_decide(batch_cfg, bst, t, *belief[t], weights[t], egos[t])
        bst = G.stable_map_notify_replanned(bst, t, replans[t])
        binfo = binfo._replace(suppressed_reason=G.reason_names(G.STABLE_MAP_REASONS, binfo.suppressed_reason))
        for name in ("interrupt", "contradiction", "suppressed_reason", "log_l"):
            got = _as_list(getattr(binfo, name), count)
            want = [getattr(rows[c][t][0], name) for c in range(count)]
            assert [str(x) for x in got] == [str(x) for x in want], (t, name)  # str: NaN-safe, exact
        # l_t = exp(log_l): numpy's exp may differ from math.exp in the last bit
        np.testing.assert_array_max_ulp(np.broadcast_to(binfo.l_t, (count,)),
                                        np.array([rows[c][t][0].l_t for c in range(count)]), maxulp=1)
        for name in ("t_last_interrupt", "num_contradictions", "num_interrupts"):
            assert _as_list(getattr(bst, name), count) == [getattr(rows[c][t][1], name) for c in range(count)]
        fired += int(np.sum(binfo.interrupt))
    reasons = {r for row in rows for info, _ in row for r in [info.suppressed_reason]}
    assert reasons == set(G.STABLE_MAP_REASONS) | {None} and fired > 20  # every branch was exercised


def test_changepoint_decide_on_c_configurations_equals_one_at_a_time():
    rng = np.random.default_rng(5)
    count, num, horizon, h = 40, 3, 4, 0.1
    thr = rng.uniform(0.05, 1.0, count)
    rel = thr * rng.choice([0.0, 0.3, 0.9, 1.0], count)
    cool = rng.integers(0, 8, count)
    lp = switching_table(num, p_pref=0.8)
    truth = [z for z in (0, 1, 2, 0, 2, 1) for _ in range(12)]
    actions = [int(rng.choice(5, p=np.exp(lp[z]))) for z in truth]
    pi0 = np.full(num, 1.0 / num)

    def run(cfg):
        st, belief, out = G.changepoint_init(num, horizon), pi0, []
        for t, a in enumerate(actions):
            step = G.hazard_step(belief, pi0, None, t == 0, h, lp[:, a])
            st, info = G.changepoint_update(cfg, st, t, step, pi0, None, lp[:, a])
            belief = step.post
            out.append((info, st))
        return out

    rows = [run(G.ChangePointConfig(h, horizon, float(thr[c]), float(rel[c]), int(cool[c]))) for c in range(count)]
    batch_cfg = G.ChangePointConfig(h, horizon, thr, rel, cool)
    bst = G.ChangePointState(None, 0, None)
    for t in range(len(actions)):
        info0 = rows[0][t][0]
        bst, binfo = G.changepoint_decide(batch_cfg, bst, t, info0.prob, info0.switch_prob)
        assert _as_list(binfo.fired, count) == [rows[c][t][0].fired for c in range(count)]
        reasons = G.reason_names(G.CHANGEPOINT_REASONS, binfo.suppressed_reason)
        assert _as_list(reasons, count) == [rows[c][t][0].suppressed_reason for c in range(count)]
        for name in ("armed", "t_last_fire", "num_fires"):
            assert _as_list(getattr(bst, name), count) == [getattr(rows[c][t][1], name) for c in range(count)]
    reasons = {info.suppressed_reason for row in rows for info, _ in row}
    assert reasons == set(G.CHANGEPOINT_REASONS) | {None}


def test_gate_interrupt_modes():
    sm, cp = np.array([True, False, False, True]), np.array([False, True, False, True])
    assert G.gate_interrupt("stable_map", sm, cp).tolist() == sm.tolist()
    assert G.gate_interrupt("changepoint", sm, cp).tolist() == cp.tolist()
    assert G.gate_interrupt("changepoint", sm, cp, False).tolist() == [False] * 4
    assert G.gate_interrupt("either", sm, cp).tolist() == [True, True, False, True]
    assert G.gate_interrupt("either", True, False, False) is True
    with pytest.raises(ValueError, match="unknown gate mode 'both'"):
        G.gate_interrupt("both", True, True)


# --------------------------------------------------------------------------- CUSUM gate


def test_cusum_update_accumulates_restarts_and_fires():
    cfg = G.CusumConfig(2.0)
    st = G.cusum_init(3)
    ll = np.log(np.array([0.2, 0.6, 0.2]))  # skill 1 explains the action 3x better than skill 0
    st, info = G.cusum_update(cfg, st, 0, ll, None)
    assert info.statistic == pytest.approx(math.log(3)) and not info.fired
    assert info.suppressed_reason == G.REASON_BELOW_THRESHOLD
    st, info = G.cusum_update(cfg, st, 0, None, None)  # excluded step: nothing changes
    assert info.statistic == pytest.approx(math.log(3)) and info.suppressed_reason == G.REASON_EXCLUDED
    st, info = G.cusum_update(cfg, st, 0, ll, None)
    assert info.fired and info.statistic == pytest.approx(2 * math.log(3)) and st.num_fires == 1
    assert not st.sums.any()  # an alarm restarts every sum
    st, _ = G.cusum_update(cfg, st, 0, ll, np.array([True, False, True]))  # skill 1 infeasible: no gain
    assert not st.sums.any()
    st, _ = G.cusum_update(cfg, st, 0, ll, None)
    assert st.sums[1] > 0
    st2, info = G.cusum_update(cfg, st, 2, ll, None)  # the reference changed: restart, then this step
    assert info.reference == 2 and st2.sums[1] == pytest.approx(math.log(3)) and st2.sums[0] == 0
    st3, info = G.cusum_update(G.CusumConfig(10.0), st, 0, ll, None, completed=1)  # completion: restart
    assert info.statistic == pytest.approx(2 * math.log(3)) and not info.fired and not st3.sums.any()
    # the observation is impossible under the reference: infinite evidence, fires at once
    _, info = G.cusum_update(cfg, G.cusum_init(3), 0, np.array([-np.inf, -1.0, -np.inf]), None)
    assert info.fired and info.statistic == math.inf
    # ... with an infeasible skill beside it: no NaN; the statistic-only mode (h = inf) never fires
    st, info = G.cusum_update(G.CusumConfig(math.inf), G.cusum_init(3), 0, np.array([-np.inf, -1.0, -2.0]),
                              np.array([True, True, False]))
    assert info.statistic == math.inf and not info.fired and st.num_fires == 0
    assert not np.isnan(st.sums).any() and st.sums[2] == 0.0
    st, info = G.cusum_update(G.CusumConfig(math.inf), st, 0, np.array([-1.0, -0.5, -2.0]), None)
    assert info.statistic == math.inf and not info.fired


def test_cusum_gate_drives_the_interrupt_and_matches_its_replay():
    """A Gate with gate="cusum": its interrupts are the CUSUM rule on its own pre-update MAP
    (beliefgate.eval.detectors.cusum_alarms replays it), idle egos are not interrupted, and a
    gate with another mode carries no CUSUM state."""
    from beliefgate.beliefs.evidence import StepEvidence
    from beliefgate.eval.detectors import EvidenceTrace, cusum_alarms

    rng = np.random.default_rng(4)
    K, A = 3, 4
    table = np.full((K, A), 0.3 / (A - 1))
    table[np.arange(K), np.arange(K)] = 0.7
    lp = np.log(table)
    steps = []
    for t in range(200):
        z = 0 if t < 60 else (1 if t < 130 else 2)
        a = int(rng.integers(A)) if rng.random() < 0.15 else z
        mask = np.zeros(A, dtype=bool)
        mask[a] = True
        steps.append(StepEvidence(lp, mask, 0.0 if t % 17 == 5 else 1.0, 0 if t == 40 else None, None))
    params = GateParams(gate="cusum", cusum_h=3.0)
    gate = Gate.from_logprobs(K, params)
    decisions = [gate.step_evidence(ev) for ev in steps]
    interrupts = np.array([d.interrupt for d in decisions])
    refs = np.array([d.info.map_skill for d in decisions])
    replay = cusum_alarms(EvidenceTrace.from_steps(steps), refs, 3.0)
    assert np.array_equal(interrupts, replay)
    assert interrupts[60:70].any() and interrupts[130:140].any()  # both switches within 10 steps
    assert gate.state.cusum.num_fires == interrupts.sum()
    assert all(d.info.cusum.fired == d.interrupt for d in decisions)
    # ego idle: the alarm is reported, the interrupt suppressed
    idle = Gate.from_logprobs(K, params)
    ds = [idle.step_evidence(ev, ego_active=False) for ev in steps[:80]]
    assert any(d.info.cusum.fired for d in ds) and not any(d.interrupt for d in ds)
    assert {d.info.suppressed_reason for d in ds if d.info.cusum.fired} == {"ego_idle"}
    plain = Gate.from_logprobs(K, GateParams())
    plain.step_evidence(steps[0])
    assert plain.state.cusum is None and plain.step_evidence(steps[1]).info.cusum is None
    # a state of the other kind is refused by restore(), the gate unchanged
    from beliefgate.beliefs.errors import ShapeMismatchError

    before = gate.state
    with pytest.raises(ShapeMismatchError, match="gate='cusum'"):
        gate.restore(plain.state)
    with pytest.raises(ShapeMismatchError, match="gate='stable_map'"):
        plain.restore(before)
    assert gate.state is before


def test_cusum_params_are_checked():
    from beliefgate.beliefs.config import GateParamError

    for bad in (0.0, -1.0, float("nan"), 1e7):
        with pytest.raises(GateParamError, match="cusum_h"):
            GateParams(gate="cusum", cusum_h=bad)
    assert GateParams(gate="cusum", track_changepoint=False).gate.kind == "cusum"
    with pytest.raises(G.InvalidParameterError, match="cusum"):
        G.gate_interrupt("bogus", False, False)


# --------------------------------------------------------------------------- drivers: how gates combine


def test_gates_combine_through_drivers_not_mode_strings():
    """A driver reads the gates' records by slot; ``any_of`` combines any of them (a new
    combination needs no change in the core), and the core never branches on the gate's name."""
    from pathlib import Path

    d = G.any_of("sm_or_cusum", G.STABLE_MAP, G.CUSUM)
    assert d.slots == (0, 2) and d.joint_replan and not G.CUSUM.joint_replan
    fired = (np.array([True, False, False]), False, np.array([False, True, True]))
    assert d.interrupt(fired, np.array([True, True, False])).tolist() == [True, True, False]
    sm = G.StableMapInfo(0, 0.9, 3, 0.1, math.log(0.1), True, False, "cooldown")
    cu = G.CusumInfo(5.0, 0, True, None)
    assert d.decide((sm, None, cu), True) == (True, None)
    assert d.decide((sm, None, cu), False) == (False, "cooldown")  # the first member's reason
    assert G.CUSUM.decide((sm, None, cu), False) == (False, G.REASON_EGO_IDLE)
    assert G.gate_driver("either").decide((sm, G.ChangePointInfo(0.1, 0.0, False, "below_threshold"), None),
                                          True) == (False, "cooldown")
    core = (Path(G.__file__).parent / "core.py").read_text()
    for name in ('"stable_map"', '"changepoint"', '"either"', '"cusum"', '"hazard"', '"windowed"'):
        assert name not in core, name


# --------------------------------------------------------------------------- the gate as a wrapper under jit / vmap


def _wrapper_case():
    from beliefgate.beliefs.core import LoglikEvidence, make_gate

    K, T, B = 4, 40, 6
    rng = np.random.default_rng(0)
    ll = np.log(rng.dirichlet(np.full(K, 0.5), size=(B, T)))
    ll[1, 7] = [0.0, -math.inf, 0.0, -2.0]  # an action impossible under one skill
    params = GateParams(tau_obs=0.3, confidence_floor=0.6, cooldown=3)
    fns = make_gate(params, K)
    rows = []
    for b in range(B):
        state, row = fns.init(), []
        for t in range(T):
            state, info = fns.update(state, LoglikEvidence(ll[b, t]))
            row.append((info.interrupt, info.suppressed_reason, info.map_skill, info.posterior))
        rows.append(row)
    return params, ll, rows


def test_jitted_vmapped_stable_map_wrapper_equals_the_numpy_gate(x64):
    """The stable-MAP rule the NumPy gate runs per step, wrapped around the JAX filter and run on
    six episodes at once under jit(vmap(scan)), gives the same interrupts, reasons and MAP skills,
    and the posteriors to rounding."""
    import jax
    import jax.numpy as jnp

    from beliefgate.beliefs.wrappers import stable_map_wrapper

    params, ll, rows = _wrapper_case()
    K = ll.shape[-1]
    init, update = stable_map_wrapper(params.filter_params(), params.stable_map_config())

    def episode(ll_b):
        def body(state, row):
            state, info = update(state, row, row, jnp.max(row), 1.0, jnp.ones(K, bool), -1)
            sm = info.stable_map
            return state, (sm.interrupt, sm.suppressed_reason, sm.map_skill, jnp.exp(info.filter.log_posterior))
        return jax.lax.scan(body, init(jnp.zeros(K)), ll_b)[1]

    interrupts, codes, maps, posts = jax.jit(jax.vmap(episode))(jnp.asarray(ll))
    want_int = np.array([[r[0] for r in row] for row in rows])
    assert want_int.sum() >= 10  # the case exercises the gate
    assert np.asarray(interrupts).tolist() == want_int.tolist()
    reasons = G.reason_names(G.STABLE_MAP_REASONS, np.asarray(codes))
    assert reasons.tolist() == [[r[1] for r in row] for row in rows]
    assert np.asarray(maps).tolist() == [[r[2] for r in row] for row in rows]
    np.testing.assert_allclose(np.asarray(posts), np.array([[r[3] for r in row] for row in rows]),
                               rtol=0, atol=1e-12)


def test_jitted_wrapper_update_does_not_recompile_in_a_loop(x64):
    import jax
    import jax.numpy as jnp

    from beliefgate.beliefs.wrappers import stable_map_wrapper

    params, ll, rows = _wrapper_case()
    K = ll.shape[-1]
    init, update = stable_map_wrapper(params.filter_params(), params.stable_map_config())
    traces = []

    @jax.jit
    def step(state, row, ego_active):
        traces.append(1)  # a Python side effect: runs once per trace, never per call
        return update(state, row, row, jnp.max(row), 1.0, jnp.ones(K, bool), -1, ego_active)

    state = init(jnp.zeros(K))
    got = []
    for t in range(ll.shape[1]):
        state, info = step(state, jnp.asarray(ll[0, t]), jnp.asarray(t % 5 != 0))
        got.append(bool(info.stable_map.interrupt))
    assert len(traces) == 1 and step._cache_size() == 1
    assert sum(got) >= 1
