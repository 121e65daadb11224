"""Closed-loop one-at-a-time sweeps (``sensitivity oat --closed-loop GRID.yaml``) and the grid's ``gate:`` key.

Real episodes on the real Overcooked dynamics through the evaluation harness. The
agents' behaviour may change with the planners, so only what holds by
construction is asserted: with a cooldown longer than the episode the gate fires
at most once, and until its first interrupt an episode is the same whatever the
cooldown, so per seed a huge cooldown never gives more interrupts or replans than
cooldown 0.
"""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from beliefgate.beliefs.gate import GateParams
from beliefgate.envs.trajlog import read_log
from beliefgate.eval import sensitivity as sens
from beliefgate.eval.grid import GridError, parse_grid, regate, resolve_grid
from beliefgate.eval.runner import GATE_COLUMN, load_results, run_grid

HORIZON = 60
TINY = {"name": "sens-tiny", "agents": ["bayes-belief:full"], "layouts": ["cramped_room"],
        "partners": ["switch-sourcer-to-plater"], "seeds": [0, 1], "seats": [0], "horizon": HORIZON}


def _write_grid(path: Path, **changes) -> Path:
    path.write_text(yaml.safe_dump({**TINY, **changes}), encoding="utf-8")
    return path


@pytest.fixture()
def grid_file(tmp_path):
    return _write_grid(tmp_path / "grid.yaml")


def _cli(*args):
    from beliefgate.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


# --------------------------------------------------------------------------- the grid's gate: key


def test_grid_without_gate_keeps_its_keys_and_rows():
    ep = resolve_grid(parse_grid(TINY)).episodes[0]
    assert ep.gate is None and "gate" not in ep.identity() and "gate" not in ep.to_dict()
    assert ep.gate_json == "" and ep.gate_params() is None
    assert "gate" not in parse_grid(TINY).canonical()


def test_grid_gate_is_normalised_and_part_of_the_key():
    plain = resolve_grid(parse_grid(TINY)).episodes[0]
    a = resolve_grid(parse_grid({**TINY, "gate": {"tau_obs": 0.3, "cooldown": 5.0}}))
    b = resolve_grid(parse_grid({**TINY, "gate": {"cooldown": 5, "tau_obs": "0.3"}}))
    assert a.spec.gate == {"cooldown": 5, "tau_obs": 0.3} and isinstance(a.spec.gate["cooldown"], int)
    assert [e.key for e in a.episodes] == [e.key for e in b.episodes]
    assert a.episodes[0].key != plain.key and a.spec.digest() != parse_grid(TINY).digest()
    assert a.episodes[0].gate_params() == GateParams(cooldown=5, tau_obs=0.3)
    other = regate(a, {"cooldown": 6, "tau_obs": 0.3})
    assert other.episodes[0].key != a.episodes[0].key and other.episodes[0].seed == a.episodes[0].seed


@pytest.mark.parametrize("gate, words", [
    ({"cooldwn": 3}, "did you mean 'cooldown'"),
    ({"cooldown": -1}, "greater than or equal to 0"),
    ({"n_stable": 1.5}, "valid integer"),
    ({"cp_release": 0.9}, "must not exceed cp_threshold"),
    ([0.1], "must be a mapping"),
])
def test_grid_gate_bad_values(gate, words):
    with pytest.raises(GridError, match="gate") as info:
        parse_grid({**TINY, "gate": gate})
    assert words in str(info.value)


def test_grid_gate_with_an_agent_without_a_gate_is_refused():
    with pytest.raises(GridError, match="'proagent' runs no gate"):
        resolve_grid(parse_grid({**TINY, "agents": ["bayes-belief:full", "proagent"], "gate": {"cooldown": 3}}))
    with pytest.raises(GridError, match="'bayes-belief:no_belief' runs no gate"):
        resolve_grid(parse_grid({**TINY, "agents": ["bayes-belief:no_belief"], "gate": {}}))
    # partners keep their own settings: a scripted partner is fine
    resolve_grid(parse_grid({**TINY, "gate": {"cooldown": 3}}))


def test_run_grid_with_gate_logs_the_params_and_resumes(tmp_path):
    resolved = resolve_grid(parse_grid({**TINY, "seeds": [0], "gate": {"cooldown": 7}}))
    first = run_grid(resolved, tmp_path)
    assert first.ran == 1 and not first.failed
    rows = load_results(tmp_path)
    assert json.loads(rows[0][GATE_COLUMN]) == {"cooldown": 7}
    header = read_log(tmp_path / rows[0]["log"]).header
    assert header.config["gate_params"] == GateParams(cooldown=7).model_dump(mode="json")
    assert run_grid(resolved, tmp_path).skipped_done == 1
    # another setting is another episode, never the stored one
    again = run_grid(regate(resolved, {"cooldown": 8}), tmp_path)
    assert again.ran == 1 and again.skipped_done == 0


# --------------------------------------------------------------------------- the closed-loop sweep


def test_closed_loop_cooldown_sweep(grid_file, tmp_path):
    plan = sens.plan_closed_loop(grid_file, ["cooldown=0:100:2"])
    assert [(p, v, d, n) for p, v, d, n in plan.blocks] == [
        ("cooldown", 0.0, False, "cooldown=0"), ("cooldown", 5.0, True, "base"),
        ("cooldown", 100.0, False, "cooldown=100")]
    assert plan.total_episodes == 6
    seen = []
    result = sens.run_closed_loop_oat(plan, tmp_path / "sweep", progress=lambda d, n, _: seen.append((d, n)),
                                      n_boot=200)
    assert result.complete and seen[-1] == (6, 6)
    by = {d: {e["seed"]: e for e in eps} for d, eps in result.episodes.items()}
    for seed in (0, 1):
        zero, huge = by["cooldown=0"][seed], by["cooldown=100"][seed]
        assert huge["interrupts"] <= 1  # the cooldown outlasts the episode: at most one firing
        assert huge["interrupts"] <= zero["interrupts"] and huge["replans"] <= zero["replans"]
    # every row and log carries the configuration that made it
    out = tmp_path / "sweep"
    for cfg in plan.configs:
        rows = load_results(out / cfg.dirname)
        assert len(rows) == 2 and all(json.loads(r[GATE_COLUMN]) == cfg.overrides for r in rows)
        header = read_log(out / cfg.dirname / rows[0]["log"]).header
        assert header.config["gate_params"]["gate"]["stable_map"]["cooldown"] == {"base": 5, "cooldown=0": 0, "cooldown=100": 100}[
            cfg.dirname]
    assert {c.dirname: c.overrides for c in plan.configs} == {"base": {}, "cooldown=0": {"cooldown": 0},
                                                              "cooldown=100": {"cooldown": 100}}
    data = json.loads((out / "sensitivity.json").read_text())
    assert data["grid"]["digest"] == parse_grid(TINY).digest() and data["grid"]["seeds"] == [0, 1]
    assert data["version"] and [r["value"] for r in data["rows"]] == [0, 5, 100]
    assert set(data["rows"][0]) >= {"reward", "deliveries", "replans", "interrupts", "gap_rate", "map_accuracy"}
    stats = result.rows[0].stats["interrupts"]
    assert stats["ci_low"] <= stats["mean"] <= stats["ci_high"] and stats["n"] == 2
    assert json.loads((out / "sweep.json").read_text())["configs"][0]["dir"] == "base"
    # a sweep with no interrupt at any value says it measured nothing (and the vetoes behind it)
    nothing = all(r.stats["interrupts"]["mean"] == 0.0 for r in result.rows)
    assert bool(result.warnings) == nothing and data["warnings"] == result.warnings
    assert all(e["gate_fired"] >= e["interrupts"] for eps in result.episodes.values() for e in eps)
    # rerun: every sub-directory resumes with nothing to do, same numbers
    again = sens.run_closed_loop_oat(plan, out, n_boot=200)
    assert all(r["ran"] == 0 and r["already_done"] == 2 for r in again.runs.values())
    assert [r.stats for r in again.rows] == [r.stats for r in result.rows]


def test_a_sweep_without_interrupts_warns_that_it_measures_nothing():
    """`sensitivity oat --closed-loop` reported 0.00 interrupts for every cooldown without a word."""
    from types import SimpleNamespace

    def row(value, dirname, interrupts):
        stats = {"interrupts": {"mean": interrupts}}
        return sens.ClosedLoopRow("cooldown", value, value == 5.0, "bayes-belief:full", dirname, 2, stats)

    episodes = {"base": [{"agent": "bayes-belief:full", "gate_fired": 3, "vetoes": {"no_alternative": 2,
                                                                                       "plan_stands": 1}}],
                "cooldown=0": [{"agent": "bayes-belief:full", "gate_fired": 1, "vetoes": {"no_alternative": 1}}]}
    plan = SimpleNamespace(ranges=[SimpleNamespace(name="cooldown")])
    result = sens.ClosedLoopResult(plan, Path("."), [row(0.0, "cooldown=0", 0.0), row(5.0, "base", 0.0)], episodes,
                                   {}, [], 100, 0, 0.95, "inline", 0.0)
    assert result.warnings == ["cooldown: 0 interrupts for every value (0, 5) and every agent: the gate fired 4 "
                               "times and every firing was vetoed (no_alternative 3, plan_stands 1); this sweep "
                               "measures nothing about cooldown"]
    result.rows[1] = row(5.0, "base", 0.5)
    assert result.warnings == []


def test_closed_loop_base_is_the_grids_gate(tmp_path):
    grid = _write_grid(tmp_path / "g.yaml", seeds=[0], gate={"cooldown": 3, "tau_obs": 0.3})
    plan = sens.plan_closed_loop(grid, ["cooldown=0,3,9"])
    assert plan.base == GateParams(cooldown=3, tau_obs=0.3)
    assert [(v, d) for _, v, d, _ in plan.blocks] == [(0.0, False), (3.0, True), (9.0, False)]
    assert {c.dirname: c.overrides for c in plan.configs}["cooldown=9"] == {"cooldown": 9, "tau_obs": 0.3}


def test_cli_closed_loop_json_and_plots_with_two_workers(grid_file, tmp_path):
    proc = _cli("sensitivity", "oat", "--closed-loop", grid_file, "--param", "tau_obs=0.05,0.5",
                "--out", tmp_path / "run", "--workers", "2", "--json", "--plots", tmp_path / "plots",
                "--bootstrap", "100")
    assert proc.exit_code == 0, proc.output
    data = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert data["kind"] == "sensitivity.oat.closed_loop" and data["complete"]
    assert [(r["value"], r["default"], r["dir"]) for r in data["rows"]] == [
        (0.05, False, "tau_obs=0.05"), (0.2, True, "base"), (0.5, False, "tau_obs=0.5")]
    assert "process pool (2 workers)" in data["executor"]
    assert [Path(p).name for p in data["plots"]] == ["closed_loop_tau_obs.png"]
    assert Path(data["plots"][0]).stat().st_size > 5_000
    # the same episodes in this process give the same metrics (episodes are pure functions of the grid)
    inline = sens.run_closed_loop_oat(sens.plan_closed_loop(grid_file, ["tau_obs=0.05,0.5"]), tmp_path / "inline",
                                      n_boot=100)
    assert {d: sorted((e["seed"], e["reward"], e["replans"], e["interrupts"]) for e in eps)
            for d, eps in inline.episodes.items()} == {
        d: sorted((e["seed"], e["reward"], e["replans"], e["interrupts"]) for e in eps)
        for d, eps in data["episodes"].items()}


def test_cli_closed_loop_table(grid_file, tmp_path):
    out = tmp_path / "run"
    assert sens.run_closed_loop_oat(sens.plan_closed_loop(grid_file, ["cooldown=0:10:2"]), out, n_boot=50).complete
    proc = _cli("sensitivity", "oat", "--closed-loop", grid_file, "--param", "cooldown=0:10:2", "--out", out,
                "--workers", "1")
    assert proc.exit_code == 0, proc.output
    assert "Closed-loop one-at-a-time" in proc.stdout and "5 *" in proc.stdout and "repl/ep" in proc.stdout
    assert "played 0, already done 6" in " ".join(proc.stdout.split())


@pytest.mark.parametrize("changes, args, words", [
    ({"agents": ["bayes-belief:full", "proagent"]}, ["--param", "cooldown=0:20:2"], "'proagent' runs no gate"),
    ({}, ["--param", "cooldwn=0:20:2"], "unknown parameter 'cooldwn'"),
    ({}, ["--param", "cooldown=20:0:2"], "LOW must be < HIGH"),
    ({}, ["--param", "cooldown=0:2.5:3"], "integer parameter"),
    ({}, ["--param", "window=1:5:3"], "only matters for model='windowed'"),
    ({"gate": {"cooldown": -2}}, ["--param", "tau_obs=0.1:0.3:2"], "greater than or equal to 0"),
    ({}, ["--param", "cooldown=0:20:2", "some.jsonl"], "takes no LOG arguments"),
    ({}, ["--param", "cooldown=0:20:2", "--base", "p.json"], "--base does not apply"),
    ({}, ["NOOUT", "--param", "cooldown=0:20:2"], "needs --out"),
])
def test_cli_closed_loop_bad_input_exits_2_before_any_episode(tmp_path, monkeypatch, changes, args, words):
    import beliefgate.eval.runner as runner

    def no_episode(*a, **k):
        raise AssertionError("an episode ran")

    monkeypatch.setattr(runner, "run_grid", no_episode)
    monkeypatch.setattr(runner, "play_episode", no_episode)
    grid = _write_grid(tmp_path / "grid.yaml", **changes)
    out = tmp_path / "out"
    extra = [] if "NOOUT" in args else ["--out", out, "--workers", "1"]
    proc = _cli("sensitivity", "oat", "--closed-loop", grid, *[a for a in args if a != "NOOUT"], *extra)
    assert proc.exit_code == 2, proc.output
    assert words in " ".join(proc.output.split())
    assert not out.exists()


def test_documented_example_grid_plans():
    """docs/examples/grid_sensitivity.yaml and the documented sweep validate (nothing is played)."""
    grid = Path(__file__).resolve().parents[1] / "docs" / "examples" / "grid_sensitivity.yaml"
    plan = sens.plan_closed_loop(grid, ["cooldown=0:20:3", "tau_obs=0.05,0.2,0.5"])
    assert plan.episodes_per_config == 20
    assert [c.dirname for c in plan.configs] == ["base", "cooldown=0", "cooldown=10", "cooldown=20",
                                                 "tau_obs=0.05", "tau_obs=0.5"]
