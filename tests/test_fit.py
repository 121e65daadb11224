"""Fitting and diagnosing the partner-skill model on real logs, with real NumPyro and ArviZ.

States, feasibility and completions come from scripted Overcooked episodes; actions are
either the scripted partner's own (the CLI test) or simulated from the model at known
parameters (recovery and misspecification), so the truth is known.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from beliefgate.beliefs import filter as F
from beliefgate.envs.trajlog import FinalRow, LogWriter, read_log
from beliefgate.eval.episode import run_episode
from beliefgate.models import fit as fit_module
from beliefgate.models import skill_model as M
from beliefgate.models.data import (
    FitData,
    FitDataError,
    from_arrays,
    load_logs,
    simulate,
    subset,
)
from beliefgate.models.fit import (
    FitConfig,
    FitError,
    fitted_model,
    fit,
    fit_config,
    fit_record,
    load_fit,
    model_loglik,
    point_values,
    prepare,
    save_fit,
    trajectories_log_lik,
)

BIN = Path(sys.executable).parent / "beliefgate"
ROOT = Path(__file__).resolve().parents[1]
#: simulated partner for recovery (inside the bulk of the priors)
TRUTH = {"beta": 2.5, "epsilon": 0.1, "hazard": 0.08}
#: a partner that switches often: fitting it with h = 0 is a real misspecification
SWITCHER = {"beta": 2.5, "epsilon": 0.1, "hazard": 0.15}
#: every in-process NUTS fit of the 8 x 125 steps uses these sizes (one chain method: NumPyro and XLA
#: reuse most of the work between fits of the same shapes)
QUICK = {"chains": 2, "draws": 120, "warmup": 100, "chain_method": "vectorized"}
#: posterior and prior draws behind the predictive groups of the in-process fits
PP_DRAWS = 20
EPISODES = [("cramped_room", "balanced"), ("coordination_ring", "switch-sourcer-to-plater"),
            ("asymmetric_advantages", "plater"), ("counter_circuit", "onion-sourcer")]


def as64(data: FitData) -> FitData:
    """The same data in float64 (call inside ``jax.enable_x64(True)``)."""
    s = data.skill
    return from_arrays(np.asarray(s.q, np.float64), s.action_mask, np.asarray(s.weight, np.float64), s.feasible,
                       np.asarray(s.completed).astype(np.int64), np.asarray(s.prior_counts, np.float64), s.valid,
                       action=data.action, true_skill=data.true_skill, ambiguous=data.ambiguous,
                       skill_names=data.skill_names, action_names=data.action_names,
                       excluded_actions=data.excluded_actions, sources=data.sources, meta=data.meta)


def run_cli(*args, check=True):
    env = {**os.environ, "COLUMNS": "200"}  # rich wraps at the terminal width
    proc = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=600, env=env,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"beliefgate {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Eight scripted episodes of 125 steps (two per layout and partner)."""
    out = tmp_path_factory.mktemp("logs")
    paths = []
    for i, (layout, partner) in enumerate(EPISODES):
        for rep in range(2):
            path = out / f"{layout}_{rep}.jsonl"
            run_episode(layout, "balanced", partner, seed=10 * i + rep, horizon=125, log_path=path)
            paths.append(path)
    return paths


@pytest.fixture(scope="module")
def data(logs):
    return load_logs(logs)


@pytest.fixture(scope="module")
def sim(data):
    return simulate(data, TRUTH, seed=3)


@pytest.fixture(scope="module")
def free_fit(sim):
    # beta adapts slowly at 100; 20 draws behind the predictive groups (the default 100 costs 5x their time)
    return fit(sim, FitConfig(**{**QUICK, "warmup": 250}, seed=0, predictive_draws=PP_DRAWS))


@pytest.fixture(scope="module")
def switching(data):
    return simulate(data, SWITCHER, seed=3)


def _switching_fits(switching):
    return (fit(switching, FitConfig(**QUICK, seed=0)),
            fit(switching, FitConfig(**QUICK, seed=0, fixed={"hazard": 0.0})))


# ------------------------------------------------------------------------------------------ data


def test_logs_become_the_gates_evidence(logs, data):
    from beliefgate.envs.overcooked.observer import OvercookedObserver

    assert data.num_trajectories == 8 and data.skill.q.shape == (8, 125, 6, 6)
    assert data.num_steps == 8 * 125 and data.has_true_skills
    assert data.excluded_actions == (4,) and data.action_names[4] == "stay"
    traj = read_log(logs[1])
    observer = OvercookedObserver(traj.header.layout, partner=1)
    states = traj.states()
    for t in range(0, 125, 7):
        ev = observer.evidence(states[t], states[t + 1])
        assert np.array_equal(np.asarray(data.skill.action_mask[1, t]), ev.action_mask)
        assert float(data.skill.weight[1, t]) == ev.weight
        assert np.array_equal(np.asarray(data.skill.feasible[1, t]), ev.feasible)
        assert int(data.skill.completed[1, t]) == (-1 if ev.completed is None else ev.completed)
        q = observer.controller.q_values(states[t], 1)
        np.testing.assert_allclose(M.action_logprobs(data.skill, 2.0, 0.1)[1, t], ev.logprobs, atol=1e-5)
        assert np.array_equal(np.asarray(data.skill.q[1, t]), q)
        assert data.action[1, t] == traj.steps[t].actions[1]
    # ambiguous steps are exactly the put-downs (weight 0.35)
    assert np.array_equal(data.ambiguous, np.isclose(np.asarray(data.skill.weight), 0.35))
    # the data survive the trip through ArviZ groups
    observed, constant = data.to_datasets()
    assert observed["action_mask"].dims == ("trajectory", "step", "action_kind")
    assert constant["q"].shape == (8, 125, 6, 6)


def test_fingerprint_ignores_precision(data):
    """A float64 (--x64) fit of the same logs is comparable with a float32 one; other data is not."""
    import jax

    with jax.enable_x64(True):
        wide = as64(data)
        assert np.asarray(wide.skill.q).dtype == np.float64
        assert wide.fingerprint() == data.fingerprint()
    assert subset(data, [0, 1]).fingerprint() != data.fingerprint()


def test_partner_side_and_short_logs(logs, tmp_path):
    ego = load_logs(logs[:1], partner_side=0)
    assert ego.meta["partner_sides"] == [0]
    assert not np.array_equal(ego.action, load_logs(logs[:1]).action)
    with pytest.raises(FitDataError, match="partner side 2 but the log has 2 players"):
        load_logs(logs[:1], partner_side=2)
    # two logs of different lengths are padded, padding is invalid
    short = tmp_path / "short.jsonl"
    run_episode("cramped_room", "balanced", "balanced", seed=1, horizon=40, log_path=short)
    both = load_logs([logs[0], short])
    assert both.lengths.tolist() == [125, 40]
    assert not np.asarray(both.skill.valid)[1, 40:].any() and (both.action[1, 40:] == -1).all()


def _never_acting_log(src: Path, dst: Path, steps: int = 30) -> Path:
    traj = read_log(src)
    state = traj.steps[0].state
    with LogWriter(dst, traj.header) as writer:
        for t in range(steps):
            frozen = state.model_copy(update={"timestep": state.timestep + t})
            writer.step(traj.steps[0].model_copy(update={
                "t": t, "state": frozen, "actions": [4, 4], "reward": 0.0, "events": [[], []],
                "skills": [None, None], "info": [{}, {}]}))
        writer.final(FinalRow(state=state.model_copy(update={"timestep": state.timestep + steps}),
                              summary={}))
    return dst


def test_bad_logs_fail_clearly_before_any_sampling(logs, tmp_path):
    corrupt = tmp_path / "corrupt.jsonl"
    lines = logs[0].read_text().splitlines(keepends=True)
    corrupt.write_text("".join(lines[:5]) + "{not json\n" + "".join(lines[6:]))
    with pytest.raises(FitDataError, match=r"corrupt trajectory log: .*corrupt.jsonl:6: not valid JSON"):
        load_logs([logs[0], corrupt])
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:20]) + lines[20][:40])
    with pytest.raises(FitDataError, match=r"truncated trajectory log.*cut.jsonl:21"):
        load_logs([cut])
    unfinished = tmp_path / "unfinished.jsonl"
    unfinished.write_text("".join(lines[:20]))  # header + 19 steps, no final row
    with pytest.raises(FitDataError, match="truncated.*without its final row"):
        load_logs([unfinished])
    assert load_logs([unfinished], allow_incomplete=True).num_steps == 18
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(FitDataError, match="truncated trajectory log.*empty log"):
        load_logs([empty])
    no_steps = tmp_path / "no_steps.jsonl"
    no_steps.write_text(lines[0] + lines[-1])
    with pytest.raises(FitDataError, match="no steps"):
        load_logs([no_steps])
    idle = _never_acting_log(logs[0], tmp_path / "idle.jsonl")
    with pytest.raises(FitDataError, match="player 1 never acts"):
        load_logs([logs[0], idle])
    with pytest.raises(FitDataError, match="no such file"):
        load_logs([tmp_path / "missing.jsonl"])
    header = json.loads(lines[0])
    wrong = tmp_path / "wrong_layout.jsonl"
    wrong.write_text(json.dumps({**header, "layout": "no_such_kitchen"}) + "\n" + "".join(lines[1:]))
    with pytest.raises(FitDataError, match="wrong_layout.jsonl:1: invalid header row: header: unknown layout 'no_such_kitchen'"):
        load_logs([wrong])
    with pytest.raises(FitDataError, match="no trajectory logs"):
        load_logs([])
    with pytest.raises(FitError, match="FitData"):
        fit(np.zeros(3), FitConfig())


# ------------------------------------------------------------------------------------------ model


def test_fitted_model_is_the_skill_model(data):
    with jax.enable_x64(True):
        _fitted_model_is_the_skill_model(as64(data))


def _fitted_model_is_the_skill_model(data):
    from numpyro.infer.util import log_density

    inputs = prepare(data)
    assert inputs.values.tolist() == [-3.0, -2.0, -1.0, 0.0]  # Overcooked: moves differ by steps
    for beta, eps in ((2.0, 0.1), (0.7, 0.3)):
        np.testing.assert_allclose(model_loglik(inputs, beta, eps), M.controller_loglik(data.skill, beta, eps),
                                   rtol=1e-12, atol=1e-12)
    per_skill = jnp.linspace(0.5, 4.0, 6)
    np.testing.assert_allclose(model_loglik(inputs, per_skill, 0.1),
                               M.controller_loglik(data.skill, per_skill[:, None], 0.1), atol=1e-12)
    # the direct path (many distinct Q values) computes the same numbers
    rng = np.random.default_rng(0)
    q = np.asarray(data.skill.q) + rng.normal(0, 0.1, data.skill.q.shape)
    noisy = from_arrays(q, data.skill.action_mask, data.skill.weight, data.skill.feasible,
                        np.asarray(data.skill.completed).astype(int), None, data.skill.valid,
                        ambiguous=data.ambiguous)
    assert prepare(noisy).values.shape == (0,)
    np.testing.assert_allclose(model_loglik(prepare(noisy), 2.0, 0.1), M.controller_loglik(noisy.skill, 2.0, 0.1),
                               atol=1e-12)
    # free tempering weight: the normalised power likelihood on ambiguous steps
    for d in (data, noisy):
        logp = M.action_logprobs(d.skill, 2.0, 0.1)
        amb = jnp.asarray(d.ambiguous)
        base = M.controller_loglik(d.skill._replace(weight=jnp.where(amb, 1.0, d.skill.weight)), 2.0, 0.1)
        ref = jnp.where(amb[..., None], 0.6 * base - jax.nn.logsumexp(0.6 * logp, axis=-1), base)
        np.testing.assert_allclose(model_loglik(prepare(d), 2.0, 0.1, 0.6), ref, atol=1e-12)
        # with w = 1 the power likelihood is the controller itself
        np.testing.assert_allclose(model_loglik(prepare(d), 2.0, 0.1, 1.0),
                                   M.controller_loglik(d.skill._replace(weight=jnp.where(amb, 1.0, d.skill.weight)),
                                                       2.0, 0.1), atol=1e-12)
    # default configuration: the same log density as partner_skill_model
    values = {"beta": 2.5, "epsilon": 0.15, "hazard": 0.07}
    ours, _ = log_density(fitted_model, (inputs,), {"config": FitConfig()}, values)
    reference, _ = log_density(M.partner_skill_model, (data.skill,), {}, values)
    assert float(ours) == pytest.approx(float(reference), rel=1e-12)


def test_windowed_likelihood_is_the_windowed_filter(data):
    with jax.enable_x64(True):
        _windowed_likelihood_is_the_windowed_filter(as64(data))


def _windowed_likelihood_is_the_windowed_filter(data):
    inputs = prepare(data)
    values = {"beta": 2.0, "epsilon": 0.1, "alpha": 1.0}
    for window in (None, 5):
        config = FitConfig(model="windowed", window=window)
        ours = trajectories_log_lik(inputs, values, config)
        obs = M.to_observations(data.skill, M.controller_loglik(data.skill, 2.0, 0.1))
        ref = F.filter_batch(F.FilterParams("windowed", 0.05, 1.0, window), obs).log_marginal
        np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_hazard_zero_has_finite_gradients(data):
    with jax.enable_x64(True):
        _hazard_zero_has_finite_gradients(as64(data))


def _hazard_zero_has_finite_gradients(data):
    inputs = prepare(data)

    def total(beta, eps):
        return jnp.sum(trajectories_log_lik(inputs, {"beta": beta, "epsilon": eps, "hazard": 0.0, "alpha": 1.0},
                                            FitConfig(fixed={"hazard": 0.0})))

    grads = jax.grad(total, argnums=(0, 1))(2.0, 0.1)
    assert all(np.isfinite(float(g)) for g in grads)
    tiny = total(2.0, 0.1)
    ref = jnp.sum(M.trajectory_log_likelihood(data.skill, {"beta": 2.0, "epsilon": 0.1, "hazard": 0.0,
                                                           "alpha": 1.0}))
    assert float(tiny) == pytest.approx(float(ref), rel=1e-12)


def test_config_validation():
    with pytest.raises(ValueError, match="unknown parameter"):
        FitConfig(fixed={"gamma": 1.0})
    with pytest.raises(ValueError, match="no hazard"):
        FitConfig(model="windowed", fixed={"hazard": 0.1})
    with pytest.raises(ValueError, match="outside its support"):
        FitConfig(fixed={"epsilon": 2.0})
    with pytest.raises(ValueError, match="windowed model only"):
        FitConfig(window=3)
    assert FitConfig(per_skill_beta=True, fit_weight=True).parameter_names() == [
        "beta", "epsilon", "hazard", "ambiguous_weight"]
    assert FitConfig(model="windowed", fixed={"epsilon": 0.1}).parameter_names() == ["beta"]


# ------------------------------------------------------------------------------------------ fits


def test_quick_nuts_recovery(free_fit):
    from beliefgate.models.diagnose import summarize

    summary = summarize(free_fit)
    for name, truth in TRUTH.items():
        row = summary[name]
        assert row.hdi_low <= truth <= row.hdi_high, (name, row)
        assert row.r_hat <= 1.05, (name, row)  # 2 x 120 draws; the slow test asks for <= 1.01
    assert int(free_fit.sample_stats["diverging"].sum()) == 0


def test_inference_data_layout_and_round_trip(free_fit, sim, tmp_path):
    assert set(free_fit.groups()) >= {"posterior", "sample_stats", "log_likelihood", "observed_data",
                                      "constant_data"}
    assert free_fit.log_likelihood["log_lik"].dims == ("chain", "draw", "trajectory")
    assert free_fit.log_likelihood["log_lik"].shape == (2, 120, 8)
    assert "log_lik" not in free_fit.posterior
    assert {"diverging", "energy", "tree_depth", "step_size"} <= set(free_fit.sample_stats)
    record = fit_record(free_fit)
    assert record["config"]["chains"] == 2 and record["config"]["seed"] == 0
    assert record["data_fingerprint"] == sim.fingerprint() and record["num_steps"] == 1000
    # log_lik per trajectory is the filter's log marginal at that draw
    post = free_fit.posterior
    draw = {k: float(post[k].values[1, 17]) for k in ("beta", "epsilon", "hazard")}
    ref = M.trajectory_log_likelihood(sim.skill, {**draw, "alpha": 1.0})
    np.testing.assert_allclose(free_fit.log_likelihood["log_lik"].values[1, 17], ref, rtol=1e-5)
    # the prior the posterior is read against: every sampled parameter, drawn from its prior
    prior = free_fit.prior
    assert set(prior) == {"beta", "epsilon", "hazard"} and prior["beta"].shape == (1, fit_module.PRIOR_DRAWS)
    assert float(prior["hazard"].std()) > float(free_fit.posterior["hazard"].std())  # the data narrowed it
    path = save_fit(free_fit, tmp_path / "sub" / "fit.nc")
    back = load_fit(path)
    assert fit_record(back) == record
    np.testing.assert_array_equal(back.prior["beta"].values, prior["beta"].values)
    # replicated actions and the skills behind them, one step ahead, at 20 posterior and 20 prior draws
    from beliefgate.models.diagnose import REPLICATION_ATTR

    skill = sim.skill
    replicable = (np.asarray(skill.valid) & (np.asarray(skill.weight) > 0) & (sim.action >= 0)
                  & ~np.isin(sim.action, sim.excluded_actions))
    for group, source in (("posterior_predictive", "posterior"), ("prior_predictive", "prior")):
        reps = getattr(back, group)
        assert set(reps) == {"action", "skill"}
        for name in ("action", "skill"):
            assert reps[name].dims == ("chain", "draw", "trajectory", "step")
            assert reps[name].shape == (1, PP_DRAWS, 8, 125)
            np.testing.assert_array_equal(reps[name].values, getattr(free_fit, group)[name].values)
        action, behind = reps["action"].values[0], reps["skill"].values[0]
        assert ((action >= 0) == replicable).all() and ((behind >= 0) == replicable).all()
        assert not np.isin(action[:, replicable], sim.excluded_actions).any()
        # the skill behind each replicated action is one the state allows
        feasible = np.asarray(skill.feasible)
        b, t = np.nonzero(replicable)
        assert feasible[b, t, behind[:, b, t]].all()
        meta = json.loads(reps.attrs[REPLICATION_ATTR])
        assert meta["group"] == source and len(meta["draws"]) == PP_DRAWS
    assert json.loads(back.posterior_predictive.attrs[REPLICATION_ATTR])["seed"] == 0
    # a posterior replication is not the data: it differs from the taken actions at some steps
    assert (back.posterior_predictive["action"].values[0][:, replicable] != sim.action[replicable]).any()
    assert FitData.from_idata(back).fingerprint() == sim.fingerprint()
    np.testing.assert_array_equal(FitData.from_idata(back).true_skill, sim.true_skill)
    save_fit(back, path)  # overwriting a file that was read works (it was read eagerly)
    (tmp_path / "junk.nc").write_text("not netcdf")
    with pytest.raises(FitError, match="not a readable NetCDF"):
        load_fit(tmp_path / "junk.nc")


def test_diagnose_checks_with_the_fit_files_replications(free_fit, sim):
    """`diagnose` uses the stored posterior_predictive group: the same check as drawing those replications."""
    from beliefgate.models.diagnose import diagnose, predictive_check

    print("record", fit_record(free_fit)["wall_s"], fit_record(free_fit)["predictive_wall_s"])
    result = diagnose(free_fit, calibrate=False)
    assert result.settings["replications"] == "stored" and result.settings["ppc_draws"] == PP_DRAWS
    assert result.settings["seed"] == 0  # the fit's seed
    drawn = predictive_check(free_fit, sim, num_draws=PP_DRAWS, seed=0)  # the same draws and seed
    for a, b in zip(result.predictive, drawn):
        assert (a.view, a.ppp, a.chi2_observed, a.chi2_replicated, a.draws) == (b.view, b.ppp, b.chi2_observed,
                                                                                 b.chi2_replicated, b.draws)
    # the stored actions are what is replicated: replace them by the data and X^2(rep) becomes X^2(obs)
    copied = free_fit.copy()
    taken = np.where(copied.posterior_predictive["action"].values >= 0, sim.action[None, None], -1)
    copied.posterior_predictive["action"] = (copied.posterior_predictive["action"].dims, taken.astype(np.int16))
    for view in predictive_check(copied, sim, stored=True):
        assert view.chi2_replicated == pytest.approx(view.chi2_observed) and view.ppp == 1.0
    damaged = free_fit.copy()
    damaged.posterior_predictive = damaged.posterior_predictive.isel(step=slice(0, 100))
    with pytest.raises(FitError, match="posterior_predictive group .* does not match its data"):
        diagnose(damaged, calibrate=False)
    assert diagnose(damaged, calibrate=False, stored=False, ppc_draws=5).settings["replications"] == "drawn"


def test_a_failed_check_names_the_missed_class_and_what_to_try():
    """The advice follows the numbers: the class the model under-predicts decides what it points at."""
    from beliefgate.models.diagnose import SKILL_CLASSES, BucketCheck, PredictiveCheck, ppc_advice

    def check(view, actions, observed, predicted):
        buckets = [BucketCheck("pickup_onion+pickup_dish", 200, observed, predicted, predicted, predicted, 0.1),
                   BucketCheck("other", 10, predicted, observed, predicted, predicted, 0.1)]
        return PredictiveCheck(view, list(actions), buckets, 90.0, 8.0, 0.0, 0.1, 100, 210, 0.05, False)

    switches = ppc_advice(check("skill", SKILL_CLASSES, [0.6, 0.3, 0.1], [0.7, 0.1, 0.2]))
    assert switches.startswith("Most missed: 'toward another feasible skill' 30% observed vs 10% predicted in "
                               "bucket 'pickup_onion+pickup_dish'") and "skill dynamics" in switches
    assert "free the hazard" in switches and "beliefgate compare" in switches
    rigid = ppc_advice(check("skill", SKILL_CLASSES, [0.9, 0.05, 0.05], [0.6, 0.1, 0.3]))
    assert "more deterministic" in rigid and "larger beta" in rigid and "--per-skill-beta" in rigid
    assert "scripted partners" in rigid
    wander = ppc_advice(check("skill", SKILL_CLASSES, [0.5, 0.1, 0.4], [0.7, 0.1, 0.2]), partner_sides=[1, 1, 0])
    assert "'neither' 40% observed vs 20% predicted" in wander and "--partner-side` (modelled: player 0, 1)" in wander
    moves = ppc_advice(check("primitive", ["north", "south", "interact"], [0.4, 0.4, 0.2], [0.3, 0.3, 0.4]))
    assert "'interact' 20% observed vs 40% predicted" in moves and "less often" in moves and "within a skill" in moves
    assert len(switches) < 400 and len(moves) < 400  # one or two lines


def test_gate_params_from_fit(free_fit, tmp_path):
    from beliefgate.beliefs.gate import GateParams

    path = save_fit(free_fit, tmp_path / "fit.nc")
    params = GateParams.from_fit(path)
    for name in TRUTH:
        assert getattr(params, name) == pytest.approx(float(np.median(free_fit.posterior[name].values)))
    assert params.model == "hazard" and params.alpha == 1.0
    mean = GateParams.from_fit(path, point="mean", tau_obs=0.3)
    assert mean.beta == pytest.approx(float(free_fit.posterior["beta"].mean())) and mean.tau_obs == 0.3
    assert point_values(free_fit)["beta"] == pytest.approx(params.beta)
    with pytest.raises(ValueError, match="point"):
        GateParams.from_fit(path, point="mode")
    with pytest.raises(ValueError, match="no such file"):
        GateParams.from_fit(tmp_path / "none.nc")
    broken = tmp_path / "broken.nc"
    broken.write_bytes(b"not netcdf")
    with pytest.raises(ValueError, match="not a readable NetCDF fit"):
        GateParams.from_fit(broken)


@pytest.mark.slow  # two more NUTS fits and two predictive checks: ~65 s; test_cli_end_to_end runs compare and diagnose by default
def test_misspecified_switching_fit_is_detected(switching):
    """Data from a switching partner (h = 0.15) fitted with h fixed at 0: compare and the check see it."""
    from beliefgate.models.compare import compare_fits
    from beliefgate.models.diagnose import diagnose

    free_fit, h0_fit = _switching_fits(switching)
    result = compare_fits({"free": free_fit, "h=0": h0_fit})
    assert result.best == "free"
    worse = result.rows[1]
    assert worse.name == "h=0" and worse.elpd_diff > 1.5 * worse.dse and result.rows[0].weight > 0.9
    good = diagnose(free_fit, ppc_draws=60)
    bad = diagnose(h0_fit, ppc_draws=60)
    skill_good = next(v for v in good.predictive if v.view == "skill")
    skill_bad = next(v for v in bad.predictive if v.view == "skill")
    assert skill_good.passed and skill_good.ppp > 0.2
    assert not skill_bad.passed and skill_bad.ppp < 0.05
    assert any("predictive check (skill view) failed" in w for w in bad.warnings)
    # and it says what the failure points at (the skill dynamics; a free hazard, compare, calibration)
    assert any("It points at the skill dynamics" in w and "beliefgate compare" in w for w in bad.warnings)
    assert not any("predictive check (skill view)" in w for w in good.warnings)
    # the misfit explains switches as noise: too few "toward another skill" actions predicted
    other = [b.observed[1] - b.predicted[1] for b in skill_bad.buckets]
    assert np.average(other, weights=[b.steps for b in skill_bad.buckets]) > 0
    # calibration against the simulated skills: the fitted filter is better than the defaults (h = 0.05)
    cal = good.calibration
    assert cal is not None and cal.fitted.n == 1000
    assert cal.fitted.log_loss < cal.defaults.log_loss
    assert 0.0 <= cal.fitted.ece <= 1.0 and 0.0 < cal.fitted.accuracy <= 1.0
    # the JSON shape of `diagnose --json`
    out = bad.to_json_dict()
    assert set(out) == {"parameters", "divergences", "warnings"}
    assert set(out["parameters"]) == {"beta", "epsilon"}
    for row in out["parameters"].values():
        assert set(row) == {"mean", "sd", "hdi_low", "hdi_high", "ess_bulk", "ess_tail", "r_hat"}
    json.dumps(out)


def test_compare_refuses_different_data(free_fit):
    from beliefgate.models.compare import compare_fits
    from beliefgate.models.fit import CONFIG_ATTR

    other = free_fit.copy()
    record = {**fit_record(free_fit), "data_fingerprint": "0" * 64}
    other.attrs[CONFIG_ATTR] = json.dumps(record)
    with pytest.raises(FitError, match="different data"):
        compare_fits({"a": free_fit, "b": other})
    with pytest.raises(FitError, match="at least two"):
        compare_fits({"a": free_fit})


def test_convergence_warnings_are_explicit():
    from beliefgate.models.diagnose import ParameterSummary, convergence_warnings

    ok = ParameterSummary(1.0, 0.1, 0.8, 1.2, 1500.0, 1200.0, 1.002)
    assert convergence_warnings({"beta": ok}, 0, 4, 1000, "nuts") == []
    bad = ok._replace(r_hat=1.03, ess_bulk=120.0, ess_tail=390.0)
    warnings = convergence_warnings({"beta": bad}, 3, 4, 1000, "nuts")
    assert any("r_hat 1.0300 > 1.01" in w for w in warnings)
    # SVI: i.i.d. guide draws, whose r_hat is noise: no verdict on chains
    assert not any("r_hat" in w for w in convergence_warnings({"beta": bad}, 0, 4, 1000, "svi"))
    assert any("ess_bulk 120 < 400" in w for w in warnings)
    assert any("ess_tail 390 < 400" in w for w in warnings)
    assert any("3 divergent" in w for w in warnings)
    assert any("only 1 chain" in w for w in convergence_warnings({"beta": ok}, 0, 1, 1000, "nuts"))
    stuck = ok._replace(r_hat=float("nan"), ess_bulk=float("nan"))  # constant chains give NaN, not a pass
    warnings = convergence_warnings({"beta": stuck}, 0, 4, 1000, "nuts")
    assert any("beta: r_hat is nan" in w for w in warnings) and any("ess_bulk is nan" in w for w in warnings)


def test_svi_and_model_options(sim, tmp_path):
    config = FitConfig(method="svi", chains=2, draws=25, svi_steps=300, seed=0, per_skill_beta=True,
                       fit_weight=True, learning_rate=0.05, predictive_draws=0)  # no groups: a compile saved
    idata = fit(sim, config)
    assert idata.posterior["beta"].dims == ("chain", "draw", "skill")
    assert list(idata.posterior["beta"].coords["skill"].values) == list(sim.skill_names)
    assert "ambiguous_weight" in idata.posterior and "loss" in idata.sample_stats
    assert "prior" in idata.groups() and "posterior_predictive" not in idata.groups()
    assert idata.prior["beta"].dims == ("chain", "draw", "skill")
    losses = idata.sample_stats["loss"].values
    assert losses.shape == (300,) and losses[-50:].mean() < losses[:50].mean()
    values = point_values(idata)
    assert abs(values["epsilon"] - TRUTH["epsilon"]) < 0.08
    assert np.median(values["beta"]) == pytest.approx(TRUTH["beta"], abs=0.6)
    from beliefgate.models.diagnose import diagnose

    result = diagnose(idata, predictive=False, calibrate=False)  # the CLI test runs the checks on an SVI fit
    assert result.divergences == 0 and len(result.parameters) == 6 + 3
    assert "beta[pickup_onion]" in result.parameters
    from beliefgate.beliefs.gate import GateParams

    gate = GateParams.from_fit(save_fit(idata, tmp_path / "per_skill.nc"))  # the gate takes one pooled beta
    assert gate.beta == pytest.approx(float(np.median(idata.posterior["beta"].values)))
    assert gate.epsilon == pytest.approx(values["epsilon"]) and gate.model == "hazard"


# ------------------------------------------------------------------------------------------ CLI


def test_cli_end_to_end(logs, tmp_path, monkeypatch):
    """fit (NUTS and SVI), diagnose (JSON, plots, strict, table) and compare, as a user runs them.

    In-process (``typer``'s runner: the same code as the installed command, without
    a new JAX per step); the entry point itself is checked by a subprocess.
    """
    from beliefgate.beliefs.gate import GateParams

    assert all(name in run_cli("--help").stdout for name in ("fit", "diagnose", "compare"))
    # `fit` sets XLA_FLAGS (host device count) for a JAX that has not started yet; keep it local
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
    a, b = tmp_path / "hazard.nc", tmp_path / "windowed.nc"
    code, out, err = _invoke("fit", *logs, "--out", a, "--chains", 2, "--draws", 120, "--warmup", 100,
                             "--chain-method", "vectorized", "--seed", 1, "--predictive-draws", 10, "--no-progress",
                             "--json")
    assert code == 0 and a.is_file(), err
    assert "fitting the hazard model by NUTS on 8 trajectories, 1000 steps" in err
    record = json.loads(out)
    assert record["config"]["chains"] == 2 and record["config"]["draws"] == 120
    assert record["command"]["argv"][:2] == ["beliefgate", "fit"]
    options = record["command"]["options"]  # every option, given or defaulted, is in the record
    assert options["seed"] == 1 and options["chain_method"] == "vectorized" and options["allow_incomplete"] is False
    assert options["model"] == "hazard" and options["fix"] == []
    assert set(record["summary"]) == {"beta", "epsilon", "hazard"}
    code, _, err = _invoke("fit", *logs, "--out", b, "--model", "windowed", "--window", 5, "--method", "svi",
                           "--svi-steps", 150, "--draws", 40, "--chains", 2, "--guide", "mvn", "--predictive-draws", 0,
                           "--no-progress")
    assert code == 0 and b.is_file(), err
    assert fit_config(load_fit(b)).guide == "mvn"
    assert not {"posterior_predictive", "prior_predictive"} & set(load_fit(b).groups())  # --predictive-draws 0
    fitted = load_fit(a)
    assert fitted.posterior_predictive["action"].shape == fitted.prior_predictive["skill"].shape == (1, 10, 8, 125)
    # --ppc-draws given: new replications instead of the file's (the file's are checked in the kappa CLI test)
    code, out, _ = _invoke("diagnose", a, "--json", "--ppc-draws", 10, "--plots", tmp_path / "plots", "--strict")
    assert code == 1  # --strict: scripted partners fail the predictive check (and 240 draws are few)
    out = json.loads(out)
    assert set(out) == {"parameters", "divergences", "warnings"} and out["warnings"]
    for name, row in out["parameters"].items():
        assert set(row) == {"mean", "sd", "hdi_low", "hdi_high", "ess_bulk", "ess_tail", "r_hat"}
        # every low ESS / high r_hat is named in a warning
        assert (row["ess_bulk"] >= 400) or any(f"{name}: ess_bulk" in w for w in out["warnings"])
        assert (row["r_hat"] <= 1.01) or any(f"{name}: r_hat" in w for w in out["warnings"])
    assert any("predictive check" in w for w in out["warnings"])
    for name in ("trace.png", "rank.png", "ppc_skill.png", "ppc_primitive.png", "calibration.png",
                 "diagnosis.json"):
        assert (tmp_path / "plots" / name).stat().st_size > 0
    report = json.loads((tmp_path / "plots" / "diagnosis.json").read_text())
    assert report["settings"]["seed"] == 0 and report["settings"]["ppc_draws"] == 10
    assert report["settings"]["replications"] == "drawn"
    # a failed check says what it points at, with the modelled player
    assert any("Most missed: '" in w and "(modelled: player" in w for w in out["warnings"])
    assert report["settings"]["fit"]["config"]["draws"] == 120  # the fit's own record comes along
    windowed = GateParams.from_fit(b, point="mean")  # a windowed fit sets the gate's model and window
    assert windowed.model == "windowed" and windowed.window == 5
    assert windowed.beta == pytest.approx(float(load_fit(b).posterior["beta"].mean()))
    code, table, _ = _invoke("diagnose", b, "--no-ppc")
    assert code == 0 and "Posterior summary" in table and "Calibration" in table
    code, out, err = _invoke("compare", a, b, "--json")
    assert code == 0, err
    out = json.loads(out)
    assert {r["name"] for r in out["models"]} == {"hazard", "windowed"}
    assert sum(r["weight"] for r in out["models"]) == pytest.approx(1.0)
    assert {"elpd_loo", "se", "weight"} <= set(out["models"][0])


def _invoke(*args):
    """The CLI in-process (error paths need no subprocess): ``(exit_code, stdout, stderr)``."""
    from typer.testing import CliRunner

    from beliefgate.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def test_cli_bad_input_exits_2_before_sampling(logs, tmp_path, monkeypatch):
    import beliefgate.models.fit as fit_module

    def no_sampling(*args, **kwargs):
        raise AssertionError("sampling started")

    monkeypatch.setattr(fit_module, "fit", no_sampling)
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text(logs[0].read_text()[:-30])
    idle = _never_acting_log(logs[0], tmp_path / "idle.jsonl")
    out = tmp_path / "never.nc"
    for bad, message in ((corrupt, "truncated"), (idle, "never acts"), (tmp_path / "nope.jsonl", "no such file")):
        code, _, err = _invoke("fit", bad, "--out", out, "--chains", 1, "--draws", 5)
        assert code == 2 and message in err and not out.exists(), err
    code, _, err = _invoke("fit", logs[0], "--out", out, "--fix", "hazard=abc")
    assert code == 2 and "not a number" in err
    code, _, err = _invoke("fit", logs[0], "--out", out, "--model", "windowed", "--fix", "hazard=0")
    assert code == 2 and "no hazard" in err
    code, _, err = _invoke("diagnose", tmp_path / "missing.nc")
    assert code == 2 and "no such file" in err
    code, _, err = _invoke("compare", tmp_path / "missing.nc", tmp_path / "missing2.nc")
    assert code == 2 and "no such file" in err
    for sub in ("fit", "diagnose", "compare"):
        code, text, _ = _invoke(sub, "--help")
        assert code == 0 and "Usage" in text


@pytest.mark.slow
def test_bench_quick_smoke():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_nuts.py"), "--quick", "--json"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["marginalised"]["ess_per_s"] > 0 and result["enumerated"]["ess_per_s"] > 0
    assert math.isfinite(result["ratio_ess_per_s"])
    enum = result["enumerated"]  # warm-started from the marginalised run by default
    assert enum["start"] == "warm" and enum["draws"] == 60 and enum["warmup"] == 20
    assert enum["projected_full_wall_s"] > enum["wall_s"] * (120 / 80) * 0.99


# ------------------------------------------------------------------------------------------ slow


@pytest.mark.slow
def test_parameter_recovery_ten_seeds(data):
    """Truth inside the 94% HDI of every parameter in >= 9 of 10 seeds; r_hat <= 1.01 everywhere."""
    from beliefgate.models.diagnose import summarize


    truth = TRUTH
    covered, worst_rhat, rows = 0, 0.0, []
    for seed in range(10):
        simulated = simulate(data, truth, seed=100 + seed)
        started = time.perf_counter()
        idata = fit(simulated, FitConfig(chains=4, draws=600, warmup=400, chain_method="vectorized", seed=seed))
        wall = time.perf_counter() - started
        summary = summarize(idata)
        inside = {k: summary[k].hdi_low <= v <= summary[k].hdi_high for k, v in truth.items()}
        covered += all(inside.values())
        worst_rhat = max(worst_rhat, *(summary[k].r_hat for k in truth))
        divergences = int(idata.sample_stats["diverging"].sum())
        rows.append(f"seed {seed}: " + ", ".join(
            f"{k} {summary[k].mean:.3f} [{summary[k].hdi_low:.3f}, {summary[k].hdi_high:.3f}]"
            f"{'' if inside[k] else ' MISS'} r_hat {summary[k].r_hat:.4f} ess {summary[k].ess_bulk:.0f}"
            for k in truth) + f"; divergences {divergences}; {wall:.0f} s")
    report = "\n".join(rows) + f"\ncovered {covered}/10, max r_hat {worst_rhat:.4f}"
    print(report)
    assert covered >= 9, report
    assert worst_rhat <= 1.01, report


def test_belief_model_is_a_deprecated_alias_of_the_one_model(data):
    from numpyro.infer.util import log_density

    from beliefgate.models.fit import belief_model

    with jax.enable_x64(True):
        inputs = prepare(as64(data))
        values = {"beta": 2.0, "epsilon": 0.1, "hazard": 0.05, "alpha": 1.0}
        with pytest.warns(DeprecationWarning, match="fitted_model"):
            old, _ = log_density(belief_model, (inputs,), {"config": FitConfig()}, values)
        new, _ = log_density(fitted_model, (inputs,), {"config": FitConfig()}, values)
        assert float(old) == float(new)


def test_svi_warnings_read_the_elbo_trend_not_the_noise():
    """An SVI fit's convergence is its ELBO loss trace (r_hat/ESS of i.i.d. guide draws cannot
    show it): a trace still falling over its last half warns, a settled noisy one does not, and
    NUTS fits are not concerned."""
    import arviz as az
    import xarray as xr

    from beliefgate.models.diagnose import svi_warnings

    def idata(losses):
        return az.InferenceData(sample_stats=xr.Dataset({"loss": (("svi_step",), np.asarray(losses))}))

    rng = np.random.default_rng(1000)
    steps = np.arange(400)
    falling = 5000.0 * np.exp(-steps / 300.0) + 1000.0 + rng.normal(0, 50, 400)
    settled = 1000.0 + rng.normal(0, 300, 400)
    assert svi_warnings(idata(falling), "svi") and "still falls" in svi_warnings(idata(falling), "svi")[0]
    assert svi_warnings(idata(settled), "svi") == []
    assert svi_warnings(idata(falling), "nuts") == []
    assert "too few" in svi_warnings(idata(settled[:12]), "svi")[0]
    assert "without its ELBO" in svi_warnings(az.InferenceData(posterior=xr.Dataset({"a": (("chain", "draw"), np.zeros((1, 3)))})), "svi")[0]


def test_fit_reads_logs_through_the_named_domain(tmp_path):
    """`fit --domain NAME` looks the loader up in the 'beliefgate.fitdata' entry points (so another
    domain's logs can be fitted); an unknown domain is one line, exit 2, nothing written."""
    log = tmp_path / "x.jsonl"
    log.write_text("{}\n")
    proc = run_cli("fit", str(log), "--domain", "warehouse", "--out", str(tmp_path / "f.nc"), check=False)
    from importlib.metadata import entry_points

    known = sorted(ep.name for ep in entry_points(group="beliefgate.fitdata"))  # as installed (v2 adds one)
    assert "overcooked" in known
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"error: no domain 'warehouse' is registered in 'beliefgate.fitdata'; known: {known}; reinstall "
        "beliefgate (pip install -e .) if the list is empty"]
    assert not (tmp_path / "f.nc").exists()


def test_fit_data_refuses_repeated_skill_names():
    import numpy as np

    from beliefgate.models.data import FitDataError, from_arrays

    q = np.log(np.full((1, 4, 3, 2), 0.5))
    with pytest.raises(FitDataError, match="skill names must be distinct; a given more than once"):
        from_arrays(q, np.ones((1, 4, 2), bool), skill_names=["a", "a", "b"])
