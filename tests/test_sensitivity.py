"""Sensitivity analyses: ranges, the vectorised gate replay, OAT (Table 7), Sobol/Morris wiring, CLI."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from beliefgate.beliefs.gate import GateParams
from beliefgate.eval import sensitivity as sens
from beliefgate.eval.episode import run_episode
from beliefgate.eval.replay import replay, score_switches
from beliefgate.eval.sensitivity import (
    ConfigTable,
    IrrelevantParameterError,
    ParamRange,
    RangeSpecError,
    UnknownParameterError,
    belief_params,
    belief_trace,
    evaluate_configs,
    global_sample,
    load_episodes,
    parse_range,
    parse_ranges,
    prepare_episode,
    run_global,
    run_oat,
    table7_directions,
    vectorised_interrupts,
)

BIN = Path(sys.executable).parent / "beliefgate"
# scripted switching partners whose 200-step episodes hold a hidden switch (at steps 106-140)
EPISODES = [("asymmetric_advantages", "switch-plater-to-sourcer", 0),
            ("asymmetric_advantages", "switch-plater-to-sourcer", 1),
            ("cramped_room", "switch-plater-to-sourcer", 2)]


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sens-logs")
    for layout, partner, seed in EPISODES:
        run_episode(layout, "balanced", partner, seed=seed, horizon=200, seat=0,
                    log_path=folder / f"{layout}_{partner}_{seed}.jsonl")
    return folder


@pytest.fixture(scope="module")
def episodes(log_dir):
    return load_episodes(sorted(log_dir.glob("*.jsonl")))


# --------------------------------------------------------------------------- ranges


def test_parse_ranges_forms_and_scales():
    r = parse_range("tau_obs=0.05:0.5:4", "oat")
    assert (r.low, r.high, r.num, r.scale, r.integer) == (0.05, 0.5, 4, "linear", False)
    np.testing.assert_allclose(r.grid(), [0.05, 0.2, 0.35, 0.5])
    # spans two decades -> logarithmic automatically; :lin forces linear
    r = parse_range("likelihood_scale=0.01:4:3", "oat")
    assert r.scale == "log"
    np.testing.assert_allclose(r.grid(), [0.01, 0.2, 4.0])
    assert parse_range("likelihood_scale=0.01:4:3:lin", "oat").scale == "linear"
    assert parse_range("tau_obs=0.02:0.5:log", "global").scale == "log"
    r = parse_range("confidence_floor=0.9,0.3,0.7", "oat")
    assert r.values == (0.3, 0.7, 0.9) and list(r.grid()) == [0.3, 0.7, 0.9]
    r = parse_range("cooldown=0:10:4", "oat")  # 0, 3.33, 6.67, 10 rounded half up
    assert r.integer and list(r.grid()) == [0, 3, 7, 10]
    assert list(parse_range("cooldown=1:100:3:log", "oat").grid()) == [1, 10, 100]
    g = parse_range("n_stable=0:4", "global")
    assert g.num is None and g.integer


@pytest.mark.parametrize("text, mode, error, words", [
    ("tau_obs=0.5:0.1:3", "oat", RangeSpecError, "LOW must be < HIGH"),
    ("tau_obs=0.2:0.2", "global", RangeSpecError, "LOW must be < HIGH"),
    ("tau=0.1:0.5:3", "oat", UnknownParameterError, "did you mean 'tau_obs'"),
    ("gamma=0:1", "global", UnknownParameterError, "unknown parameter"),
    ("reference=0:1", "global", UnknownParameterError, "categorical"),
    ("cooldown=0:2.5:3", "oat", RangeSpecError, "integer parameter"),
    ("n_stable=0.5:3", "global", RangeSpecError, "integer parameter"),
    ("cooldown=0,1.5,3", "oat", RangeSpecError, "integer parameter"),
    ("tau_obs=0:2", "global", RangeSpecError, "less than or equal to 1"),
    ("cooldown=-1:5", "global", RangeSpecError, "greater than or equal to 0"),
    ("tau_obs=0.1:0.5", "oat", RangeSpecError, "LOW:HIGH:N"),
    ("tau_obs=0.1:0.5:4", "global", RangeSpecError, "LOW:HIGH"),
    ("tau_obs=0.1:0.5:1", "oat", RangeSpecError, "N must be an integer >= 2"),
    ("tau_obs=0.1:0.5:2.5", "oat", RangeSpecError, "N must be an integer >= 2"),
    ("tau_obs=a:0.5", "global", RangeSpecError, "not a number"),
    ("tau_obs=0:nan", "global", RangeSpecError, "finite"),
    ("tau_obs", "global", RangeSpecError, "expected NAME=LOW:HIGH"),
    ("tau_obs=0:0.5:log", "global", RangeSpecError, "log scale needs LOW > 0"),
    ("window=1:8", "global", IrrelevantParameterError, "model='windowed'"),
    ("cp_threshold=0.2:0.6", "global", IrrelevantParameterError, "gate is 'changepoint' or 'either'"),
])
def test_bad_ranges_are_rejected_clearly(text, mode, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_range(text, mode)


def test_a_cusum_base_is_refused_up_front():
    with pytest.raises(IrrelevantParameterError, match="gate='cusum'"):
        parse_ranges(["hazard=0.01:0.1"], "global", GateParams(gate="cusum"))


def test_joint_and_duplicate_range_errors():
    with pytest.raises(RangeSpecError, match="given twice"):
        parse_ranges(["tau_obs=0.1:0.5", "tau_obs=0.2:0.3"], "global")
    either = GateParams(gate="either")
    with pytest.raises(RangeSpecError, match="cp_release may exceed cp_threshold"):
        parse_ranges(["cp_release=0.1:0.5", "cp_threshold=0.3:0.9"], "global", either)
    # release above the base threshold is fine when the swept threshold stays above it
    assert len(parse_ranges(["cp_release=0.0:0.5", "cp_threshold=0.6:0.9"], "global", either)) == 2
    with pytest.raises(RangeSpecError, match="must not exceed cp_threshold"):  # OAT: against the base threshold 0.3
        parse_ranges(["cp_release=0.1:0.5:3"], "oat", either)
    # windowed base: window is sweepable
    assert parse_range("window=1:8", "global", GateParams(model="windowed")).integer
    with pytest.raises(RangeSpecError, match="at least one"):
        parse_ranges([], "oat")


def test_integer_parameters_get_equal_mass_per_integer():
    """floor(LOW + u (HIGH - LOW + 1)), never a floor of the raw continuous sample."""
    r = ParamRange("cooldown", 0, 4, integer=True)
    u = (np.arange(10_000) + 0.5) / 10_000
    x = r.from_unit(u)
    assert set(np.unique(x)) == {0, 1, 2, 3, 4}
    np.testing.assert_array_equal(np.bincount(x.astype(int)), [2000] * 5)  # a raw floor would give 4 only at u=1
    assert r.from_unit(np.array([1.0]))[0] == 4 and r.from_unit(np.array([0.0]))[0] == 0
    # log-scaled integers: mass log((k + 1) / k) / log((HIGH + 1) / LOW)
    rl = ParamRange("cooldown", 1, 9, scale="log", integer=True)
    counts = np.bincount(rl.from_unit(u).astype(int), minlength=10)[1:]
    expected = np.log(np.arange(2, 11) / np.arange(1, 10)) / np.log(10.0)
    np.testing.assert_allclose(counts / u.size, expected, atol=2e-4)
    # quantised continuous levels: L equally likely bin centres
    rq = ParamRange("hazard", 0.0, 0.2, levels=4)
    np.testing.assert_allclose(np.unique(rq.from_unit(u)), [0.025, 0.075, 0.125, 0.175])
    # the SALib Sobol sample of the gate ranges covers every integer about evenly
    ranges = parse_ranges(["tau_obs=0.02:0.7", "n_stable=0:4", "cooldown=0:20"], "global")
    unit, values = global_sample(ranges, "sobol", 256, seed=0)
    assert unit.shape == (256 * 5, 3)
    counts = np.bincount(values["n_stable"].astype(int), minlength=5)
    assert counts.min() > 0.8 * counts.mean() and set(np.unique(values["cooldown"])) == set(range(21))


# --------------------------------------------------------------------------- vectorised == scalar


def _random_columns(rng, base, C):
    vals = {
        "tau_obs": rng.choice([0.0, 0.01, 0.05, 0.2, 0.5, 1.0], C) * rng.choice([1.0, rng.uniform(0.5, 1.0)], C),
        "likelihood_scale": rng.choice([0.0, 0.3, 1.0, 2.0, 4.0], C),
        "confidence_floor": rng.choice([0.0, 0.5, 0.7, 0.9, 1.0], C),
        "n_stable": rng.integers(0, 5, C),
        "cooldown": rng.integers(0, 15, C),
    }
    if base.gate.kind != "stable_map":
        thr = rng.uniform(0.05, 1.0, C)
        vals.update(cp_threshold=thr, cp_release=thr * rng.uniform(0.0, 1.0, C), cp_cooldown=rng.integers(0, 8, C))
    return vals


@pytest.mark.parametrize("base", [
    GateParams(),
    GateParams(reference="action", hazard=0.1),
    GateParams(model="windowed", window=4),
    GateParams(gate="either"),
    GateParams(gate="changepoint", hazard=0.08, cp_horizon=4),
], ids=["hazard-skill", "hazard-action", "windowed", "either", "changepoint"])
def test_vectorised_replay_equals_the_scalar_gate(episodes, base):
    """Interrupt for interrupt, random configurations including integer parameters and edge values:
    the batched replay (the gates' decision rules on [C] arrays) against replay(), which runs the real
    scalar Gate once per configuration and replans after each interrupt."""
    rng = np.random.default_rng(7)
    ep = episodes[0]
    ev = ep.evidence(base.beta, base.epsilon)
    C = 40
    configs = ConfigTable.from_values(base, _random_columns(rng, base, C))
    trace = belief_trace(ev, ep.skill_names, belief_params(base))
    fast = vectorised_interrupts(trace, configs.decision_columns(), base.gate.kind)
    assert fast.shape == (ep.steps, C)
    for i in range(C):
        slow = replay(ep.trajectory, configs.params(i), ep.partner, ev).interrupt
        np.testing.assert_array_equal(fast[:, i], slow, err_msg=f"config {configs.params(i)}")
    assert fast.any() and not fast.all(axis=0).any()  # a non-trivial comparison


def test_evaluate_configs_equals_scalar_scores_across_belief_groups(episodes):
    """Outputs (grouped belief passes, evidence params included) equal scalar replays scored one by one."""
    base = GateParams()
    vals = {"tau_obs": np.array([0.2, 0.05, 0.4, 0.2, 0.2]), "cooldown": np.array([5, 0, 10, 3, 5]),
            "hazard": np.array([0.05, 0.05, 0.1, 0.02, 0.05]), "beta": np.array([2.0, 2.0, 2.0, 2.0, 3.0])}
    configs = ConfigTable.from_values(base, vals)
    assert len(configs.belief_groups()) == 4
    outs = evaluate_configs(episodes, configs, window=10)
    for i in range(len(configs)):
        p = configs.params(i)
        total, intr, correct, known, conf, steps = None, 0, 0, 0, 0.0, 0
        for ep in episodes:
            rep = replay(ep.trajectory, p, ep.partner, ep.evidence(p.beta, p.epsilon))
            sc = score_switches(rep.interrupt, ep.hidden, 10)
            total = sc if total is None else total + sc
            intr += int(rep.interrupt.sum())
            k = rep.truth >= 0
            correct += int(np.sum(rep.map_skill[k] == rep.truth[k]))
            known += int(k.sum())
            conf += float(rep.confidence.sum())
            steps += len(rep.interrupt)
        assert outs["interrupts_per_episode"][i] == intr / len(episodes)
        assert outs["detection_delay"][i] == pytest.approx(total.mean_delay, abs=1e-12)
        assert outs["false_alarms_per_100"][i] == pytest.approx(total.false_alarms_per_100, abs=1e-12)
        assert outs["detection_rate"][i] == pytest.approx(total.detection_rate, abs=1e-12)
        assert outs["map_accuracy"][i] == pytest.approx(correct / known, abs=1e-12)
        assert outs["mean_confidence"][i] == pytest.approx(conf / steps, abs=1e-12)
    assert total.switches == 3  # one hidden switch per episode


# --------------------------------------------------------------------------- OAT: Table 7


def test_oat_shows_the_four_table7_directions(episodes):
    """On scripted switching-partner logs: more interrupts with tau_obs and lambda, fewer with c_floor and cooldown."""
    base = GateParams()
    ranges = parse_ranges(["tau_obs=0.02:0.7:6", "likelihood_scale=0.25:4:5", "confidence_floor=0.3:0.99:5",
                           "cooldown=0:20:5"], "oat", base)
    result = run_oat(episodes, ranges, base, window=10)
    directions = table7_directions(result)
    assert set(directions) == {"tau_obs", "likelihood_scale", "confidence_floor", "cooldown"}
    for name, d in directions.items():
        assert d["monotone"], (name, d)
        assert abs(d["change"]) >= 1.0, (name, d)  # a visible effect, at least one interrupt per episode
        assert np.sign(d["change"]) == sens.TABLE7_DIRECTIONS[name]
    # the default of every parameter is in its block and marked, exactly once
    for r in ranges:
        block = result.block(r.name)
        assert sum(row.is_default for row in block) == 1
        assert [row.value for row in block if row.is_default] == [float(getattr(base, r.name))]
    # outputs against ground truth are present; belief-only outputs do not move with gate parameters
    assert set(result.outputs_available) == set(sens.OUTPUTS)
    assert len({row.outputs["map_accuracy"] for row in result.rows}) == 1
    data = result.to_dict()
    json.dumps(data)  # JSON-ready
    assert data["base"] == base.model_dump() and len(data["episodes"]) == 3


def test_oat_without_ground_truth_reports_only_what_it_can(episodes):
    ep = episodes[0]
    blind = prepare_episode(ep.trajectory, "blind")
    blind.truth = np.full(blind.steps, -1)
    blind.hidden = np.zeros(blind.steps, dtype=bool)
    blind.has_truth = False
    result = run_oat([blind], parse_ranges(["tau_obs=0.1:0.5:3"], "oat"))
    assert result.outputs_available == ["interrupts_per_episode", "mean_confidence"]
    assert math.isnan(result.rows[0].outputs["detection_delay"])


# --------------------------------------------------------------------------- global: wiring


ISHIGAMI_A, ISHIGAMI_B = 7.0, 0.1


def _ishigami(values):
    x1, x2, x3 = values["x1"], values["x2"], values["x3"]
    return {"y": np.sin(x1) + ISHIGAMI_A * np.sin(x2) ** 2 + ISHIGAMI_B * x3 ** 4 * np.sin(x1)}


def test_sobol_on_ishigami_matches_analytic_indices_within_their_cis():
    a, b, pi = ISHIGAMI_A, ISHIGAMI_B, math.pi
    v1 = 0.5 * (1 + b * pi ** 4 / 5) ** 2
    v2 = a ** 2 / 8
    v13 = 8 * b ** 2 * pi ** 8 / 225
    var = v1 + v2 + v13
    s1 = np.array([v1, v2, 0.0]) / var            # 0.3139, 0.4424, 0
    st = np.array([v1 + v13, v2, v13]) / var      # 0.5576, 0.4424, 0.2437
    ranges = [ParamRange(f"x{i}", -pi, pi) for i in (1, 2, 3)]
    result = run_global(ranges, _ishigami, "sobol", n=2048, seed=1)
    idx = result.indices["y"]
    assert result.num_configs == 2048 * 5
    assert np.all(np.abs(idx["S1"] - s1) <= idx["S1_conf"]), (idx["S1"], idx["S1_conf"])
    assert np.all(np.abs(idx["ST"] - st) <= idx["ST_conf"]), (idx["ST"], idx["ST_conf"])
    assert np.all(idx["S1_conf"] < 0.08) and np.all(idx["ST_conf"] < 0.08)  # the CIs are informative


def test_morris_on_a_known_function():
    """f = 2 x1 + 0 x2 + x3^2 on [0, 1]: mu* = 2 and sigma = 0 for x1, 0 for x2, sigma > 0 for x3."""
    ranges = [ParamRange(n, 0.0, 1.0) for n in ("x1", "x2", "x3")]
    result = run_global(ranges, lambda v: {"f": 2 * v["x1"] + 0 * v["x2"] + v["x3"] ** 2}, "morris", n=30, seed=3)
    idx = result.indices["f"]
    assert idx["mu_star"][0] == pytest.approx(2.0) and idx["sigma"][0] == pytest.approx(0.0, abs=1e-12)
    assert idx["mu_star"][1] == 0.0
    assert idx["sigma"][2] > 0.1


def test_gate_sobol_and_plots(episodes, tmp_path):
    """The gate through the same path: cooldown dominates interrupts on these logs; constant outputs flagged."""
    ranges = parse_ranges(["tau_obs=0.02:0.7", "confidence_floor=0.3:0.99", "cooldown=0:20"], "global")
    result = sens.run_gate_global(episodes, ranges, "sobol", n=64, seed=0)
    assert result.num_configs == 64 * 5
    assert result.context["belief_passes"] == len(episodes)  # decision parameters only: one pass per log
    st = result.indices["interrupts_per_episode"]["ST"]
    assert int(np.argmax(st)) == 2
    assert set(result.constant) == {"map_accuracy", "mean_confidence"}
    assert result.context["not_computed"] == {}  # these logs carry switches and true skills
    json.dumps(result.to_dict())
    paths = sens.plot_global(result, tmp_path)
    names = {p.name for p in paths}
    assert "sobol_heatmap.png" in names and "sobol_interrupts_per_episode.png" in names
    assert all(p.stat().st_size > 5_000 for p in paths)


# --------------------------------------------------------------------------- CLI


def _cli(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300)


def test_cli_oat_json_and_plots(log_dir, tmp_path):
    proc = _cli("sensitivity", "oat", log_dir, "--param", "tau_obs=0.05,0.2,0.5", "--param", "cooldown=0:10:3",
                "--json", "--plots", tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["kind"] == "sensitivity.oat" and len(data["episodes"]) == 3
    rows = [r for r in data["rows"] if r["param"] == "cooldown"]
    assert [r["value"] for r in rows] == [0, 5, 10] and [r["default"] for r in rows] == [False, True, False]
    assert data["table7_directions"]["tau_obs"]["monotone"] and data["table7_directions"]["cooldown"]["monotone"]
    assert sorted(Path(p).name for p in data["plots"]) == ["oat_cooldown.png", "oat_tau_obs.png"]


def test_cli_global_table_with_params_after_one_flag(log_dir):
    proc = _cli("sensitivity", "global", "--method", "morris", "--n", "6", "--params", "tau_obs=0.02:0.7",
                "cooldown=0:20", log_dir)
    assert proc.returncode == 0, proc.stderr
    assert "μ*" in proc.stdout and "cooldown" in proc.stdout and "tau_obs" in proc.stdout


@pytest.mark.parametrize("args, words", [
    (["oat", "{logs}", "--param", "tau_obs=0.5:0.1:3"], "LOW must be < HIGH"),
    (["oat", "{logs}", "--param", "n_stable=0:2.5:3"], "integer parameter"),
    (["global", "{logs}", "--params", "taux=0:1"], "unknown parameter"),
    (["global", "missing-dir", "--params", "tau_obs=0.1:0.3"], "no such log"),
    (["oat", "{logs}", "--param", "tau_obs=0.1:0.3:3", "--out", "somewhere"], "only applies with --closed-loop"),
])
def test_cli_bad_input_exits_2_before_any_work(log_dir, args, words):
    proc = _cli("sensitivity", *[a.format(logs=log_dir) for a in args])
    assert proc.returncode == 2
    assert words in " ".join(proc.stderr.split()), proc.stderr
    assert proc.stdout == ""


def test_range_errors_come_before_reading_logs(monkeypatch, log_dir):
    """In-process: a bad range never reaches the log reader or the replay."""
    from typer.testing import CliRunner

    from beliefgate.cli import app

    def boom(*a, **k):
        raise AssertionError("work started despite a bad range")

    monkeypatch.setattr(sens, "load_episodes", boom)
    monkeypatch.setattr(sens, "evaluate_configs", boom)
    res = CliRunner().invoke(app, ["sensitivity", "oat", str(log_dir), "--param", "cooldown=5:1:3"])
    assert res.exit_code == 2


def test_benchmark_smoke():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sensitivity.py"
    spec = importlib.util.spec_from_file_location("bench_sensitivity", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--quick"])
    assert out["configs"] == 8 * 7 and out["subset_mismatches"] == 0


# --------------------------------------------------------------------------- package layout

#: every public name of the former single module beliefgate/eval/sensitivity.py
OLD_PUBLIC = (
    "SensitivityError RangeSpecError UnknownParameterError IrrelevantParameterError ParamSpec PARAMETERS "
    "DECISION_PARAMS BELIEF_PARAMS GATE_FIVE TABLE7_DIRECTIONS OUTPUTS TRUTH_OUTPUTS AUTO_LOG_RATIO Scale Kind "
    "ParamRange parse_range parse_ranges prepare_global_ranges looks_like_range ConfigTable DecisionColumns "
    "LoggedEpisode prepare_episode resolve_log_paths load_episodes BeliefTrace belief_params belief_trace "
    "vectorised_interrupts score_configs evaluate_configs count_belief_passes OATRow OATResult oat_values run_oat "
    "table7_directions Evaluator GlobalResult global_sample run_global GateReplayEvaluator run_gate_global "
    "CLOSED_LOOP_OUTPUTS CLOSED_LOOP_COLUMNS BASE_DIR CLOSED_LOOP_FORMAT ClosedLoopConfig ClosedLoopPlan "
    "plan_closed_loop count_interrupts ClosedLoopRow ClosedLoopResult run_closed_loop_oat plot_closed_loop "
    "plot_oat plot_global").split()


def test_package_re_exports_every_former_public_name():
    import importlib

    for name in OLD_PUBLIC:
        value = getattr(sens, name)
        module = importlib.import_module(f"beliefgate.eval.sensitivity.{sens._WHERE[name]}")
        assert getattr(module, name) is value, name
    assert set(OLD_PUBLIC) <= set(sens.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sens.nope  # noqa: B018


def test_old_cli_module_is_a_deprecated_alias():
    import importlib

    from beliefgate.eval.sensitivity import cli

    sys.modules.pop("beliefgate.eval.sensitivity_cli", None)
    with pytest.warns(DeprecationWarning, match="beliefgate.eval.sensitivity.cli"):
        alias = importlib.import_module("beliefgate.eval.sensitivity_cli")
    assert alias.register is cli.register


def test_sobol_confidence_intervals_are_the_same_for_every_seed_including_zero():
    """SALib seeds its bootstrap only for a truthy seed: seed 0 used to give new CIs every run."""
    r = [sens.ParamRange("x", 0, 1), sens.ParamRange("z", 0, 1)]

    def f(v):
        return {"y": v["x"] ** 2 + v["z"]}

    for seed in (0, 3):
        a = sens.run_global(r, f, "sobol", n=128, seed=seed).indices["y"]
        b = sens.run_global(r, f, "sobol", n=128, seed=seed).indices["y"]
        assert all(np.array_equal(a[k], b[k]) for k in ("S1", "S1_conf", "ST", "ST_conf"))


def test_sobol_warns_about_small_n_and_impossible_estimates():
    from beliefgate.eval.sensitivity.global_ import sobol_warnings

    r = [sens.ParamRange("x", 0, 1), sens.ParamRange("z", 0, 1)]
    res = sens.run_global(r, lambda v: {"y": v["x"] ** 2 + v["z"]}, "sobol", n=8, seed=0)
    assert res.warnings and "--n 8 < 64" in res.warnings[0] and res.to_dict()["warnings"] == res.warnings
    idx = {"y": {"S1": np.array([-1.6, 0.4]), "S1_conf": np.array([0.1, 0.05]),
                 "ST": np.array([0.5, 0.1]), "ST_conf": np.array([0.1, 0.05])}}
    w = sobol_warnings(idx, ["x", "z"], 1024)
    assert len(w) == 2 and "S1 -1.600 outside [0, 1]" in w[0] and "ST 0.100 below S1 0.400" in w[1]
    assert sobol_warnings(idx, ["x", "z"], 1024, constant=["y"]) == []


def test_global_says_what_logs_without_switches_cannot_give(tmp_path):
    log = tmp_path / "plain.jsonl"
    run_episode("cramped_room", "balanced", "plater", seed=1000, horizon=80, seat=0, log_path=log)
    result = sens.run_gate_global(load_episodes([log]), parse_ranges(["tau_obs=0.02:0.7"], "global"),
                                  "morris", n=4, seed=0)
    assert result.context["not_computed"] == {"detection_delay": "these logs hold no hidden switch",
                                              "detection_rate": "these logs hold no hidden switch"}
    assert "detection_rate" not in result.indices
