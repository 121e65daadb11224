"""Examples are tests too: every documented example runs and says what the docs promise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"


def run_example(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_gate_quickstart():
    proc = run_example("gate_quickstart.py")
    assert proc.returncode == 0, proc.stderr
    assert "INTERRUPT" in proc.stdout
    assert "interrupts at steps: [" in proc.stdout and "interrupts at steps: []" not in proc.stdout


def test_kappa_trace_example(tmp_path):
    """The worked example of docs/kappa.md: kappa rises past theta as evidence for `a` arrives."""
    out = tmp_path / "trace.png"
    proc = run_example("kappa_trace.py", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    kappas = [float(r[-4]) for r in rows]
    assert kappas[0] < 0.6 < kappas[-1] and rows[-1][-1] == "True" and rows[0][-1] == "False"


def test_native_rule_measurement_says_what_it_needs_or_agrees_with_the_numpy_rule():
    """docs/examples/results15/native_rule.py (docs/kappa.md, "Native code does not change this"):
    without Numba (not a dependency) one line says what to install; with it, the compiled rule
    gives the NumPy rule's numbers to rounding."""
    import importlib.util

    proc = run_example("results15/native_rule.py", "--streams", "1")
    if importlib.util.find_spec("numba") is None:
        assert proc.returncode == 1 and proc.stderr.strip().splitlines() == [
            "error: this measurement needs Numba (pip install numba); beliefgate itself does not"]
    else:
        assert proc.returncode == 0, proc.stderr
        diffs = [float(line.rsplit(" ", 1)[1]) for line in proc.stdout.splitlines() if "points:" in line]
        assert len(diffs) == 2 and max(diffs) < 1e-12


def test_belief_counterfactual_leaves_the_episode_as_it_was():
    """docs/examples/results16/belief_counterfactual.py searches every decision a second time with the
    other imagined partner: the episode (reward, every decision record) is the plain overforge one."""
    import importlib.util

    from beliefgate.eval.episode import run_episode

    spec = importlib.util.spec_from_file_location("belief_counterfactual",
                                                  EXAMPLES / "results16" / "belief_counterfactual.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cell = ("coordination_ring", "switch-sourcer-to-plater", 1000, 40)
    rows = mod.play(cell)
    plain = run_episode("coordination_ring", "overforge", "switch-sourcer-to-plater", seed=1000, horizon=40)
    pcm = [row.info[0]["pcm"] for row in plain.trajectory.steps if row.info[0].get("pcm")]
    searched = [r for r in pcm if r["depth"]]
    assert rows and len(rows) == len(searched)
    assert all(r["reward"] == plain.summary["reward"] for r in rows)
    for r, rec in zip(rows, searched):
        assert (r["best"], r["kappa"], r["commit"], r["depth"]) == (rec["best"], rec["kappa"], rec["committed"],
                                                                    rec["depth"])
        assert r["mode"] == "belief" and r["other"] == "uniform" and r["best_other"] in rec["branches"]
    table = mod.summarize(rows)
    assert table[-1]["partner"] == "all" and table[-1]["decisions"] == len(rows)
    assert 0.0 <= table[-1]["branch_differs"] <= 1.0
    json.dumps(rows)


def test_compose_by_layout_takes_each_arms_episodes_on_its_layouts(tmp_path):
    """docs/examples/results16/compose_by_layout.py (how `uncommitted=auto` was chosen): the
    composed arm is one arm's episodes on the named layouts and the other's elsewhere."""
    from typer.testing import CliRunner

    from beliefgate.cli import app
    from beliefgate.eval.runner import load_results

    grid = tmp_path / "grid.yaml"
    grid.write_text("name: tiny\nagents: ['overforge:-rollouts', 'bayes-belief:no_belief']\n"
                    "layouts: [cramped_room, forced_coordination]\npartners: [plater]\n"
                    "seeds: {start: 1000, count: 1}\nseats: [0]\nhorizon: 60\n")
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["overforge", "run", str(grid), "--out", str(out), "--workers", "1"])
    assert res.exit_code == 0, res.output
    reward = {(r["agent"], r["layout"]): r["reward"] for r in load_results(out)}
    proc = run_example("results16/compose_by_layout.py", str(out), "overforge:-rollouts", "bayes-belief:no_belief",
                       "cramped_room", "overforge:-rollouts")
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("composed"))
    want = (reward["bayes-belief:no_belief", "cramped_room"] + reward["overforge:-rollouts", "forced_coordination"]) / 2
    assert f"reward={want:.1f}" in line and "n=  2" in line, (line, reward)
    assert f"crampe={reward['bayes-belief:no_belief', 'cramped_room']:.0f}" in line
    proc = run_example("results16/compose_by_layout.py", str(out), "overforge:-rollouts", "bayes-belief:no_belief",
                       "nowhere", "overforge:-rollouts")
    assert proc.returncode != 0 and "nowhere" in proc.stderr


def test_compare_gates_pairs_two_gate_settings_on_the_same_cells(tmp_path):
    """docs/examples/results17/compare_gates.py: a grid played with the default gate and its twin
    with GateParams(gate="cusum") are paired cell by cell; the CUSUM arm's line carries the paired
    differences against bayes-belief:full."""
    from typer.testing import CliRunner

    from beliefgate.cli import app
    from beliefgate.eval.runner import load_results

    body = ("agents: ['bayes-belief:full']\nlayouts: [coordination_ring]\npartners: [bp-g1-dish-hi-eager-hi]\n"
            "seeds: {start: 1000, count: 2}\nseats: [0]\nhorizon: 80\n")
    runs = {}
    for name, extra in (("base", ""), ("cusum", "gate: {gate: cusum, cusum_h: 2.0}\n")):
        grid = tmp_path / f"{name}.yaml"
        grid.write_text(f"name: {name}\n" + body + extra)
        runs[name] = tmp_path / name
        res = CliRunner().invoke(app, ["eval", "run", str(grid), "--out", str(runs[name]), "--workers", "1"])
        assert res.exit_code == 0, res.output
    proc = run_example("results17/compare_gates.py", str(runs["base"]), str(runs["cusum"]))
    assert proc.returncode == 0, proc.stderr
    assert "matched episodes per arm 2" in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.startswith("bayes-belief:full+cusum"))
    base = load_results(runs["base"])
    cusum = load_results(runs["cusum"])
    diff = sum(c["reward"] for c in cusum) / 2 - sum(b["reward"] for b in base) / 2
    assert f"reward={sum(c['reward'] for c in cusum) / 2:.3f} ({diff:+.3f} [" in line, line
    (tmp_path / "empty").mkdir()
    proc = run_example("results17/compare_gates.py", str(runs["base"]), str(tmp_path / "empty"))
    assert proc.returncode != 0 and "empty" in proc.stderr and "Traceback" not in proc.stderr


def test_select_gate_checks_replays_and_applies_its_rule(tmp_path):
    """docs/examples/results17/select_gate.py (issue 17 item 3): `check` finds a replayed episode
    equal to its recording even when the grid spells the same gate settings out (other episode
    keys); `decide` pairs a candidate against the defaults cell by cell,
    and keeps the defaults when no candidate's interval lies above 0."""
    from typer.testing import CliRunner

    from beliefgate.cli import app
    from beliefgate.eval.runner import load_results

    body = ("agents: ['bayes-belief:full']\nlayouts: [coordination_ring]\npartners: [bp-g1-dish-hi-eager-hi]\n"
            "seeds: {start: 1000, count: 3}\nseats: [0]\nhorizon: 60\n")
    runs = {}
    for name, extra in (("base", ""), ("spelled", "gate: {beta: 2.0, epsilon: 0.1, tau_obs: 0.2}\n"),
                        ("loose", "gate: {tau_obs: 0.9, confidence_floor: 0.0, n_stable: 0, cooldown: 0}\n")):
        grid = tmp_path / f"{name}.yaml"
        grid.write_text(f"name: {name}\n" + body + extra)
        runs[name] = tmp_path / name
        res = CliRunner().invoke(app, ["eval", "run", str(grid), "--out", str(runs[name]), "--workers", "1"])
        assert res.exit_code == 0, res.output
    proc = run_example("results17/select_gate.py", "check", str(runs["base"]), str(runs["spelled"]))
    assert proc.returncode == 0 and "3 of 3 re-played episodes equal" in proc.stdout, proc.stdout + proc.stderr
    proc = run_example("results17/select_gate.py", "decide", str(runs["base"]), f"same={runs['spelled']}",
                       f"loose={runs['loose']}")
    assert proc.returncode == 0, proc.stderr
    same = next(x for x in proc.stdout.splitlines() if x.startswith("same"))
    assert "pooled n=3: +0.00" in same
    base = {r["seed"]: r["reward"] for r in load_results(runs["base"])}
    loose = load_results(runs["loose"])
    gain = sum(r["reward"] - base[r["seed"]] for r in loose) / 3
    line = next(x for x in proc.stdout.splitlines() if x.startswith("loose"))
    assert f"pooled n=3: {gain:+.2f} [" in line, line
    assert "decision: the defaults stay" in proc.stdout or gain > 0


def test_jax_rule_measurement_agrees_with_the_numpy_rule():
    """docs/examples/results15/jax_rule.py (docs/accelerator.md): the argmax rule under jax.jit, one state at
    a time and vmap-ed over all states, gives the NumPy rule's numbers to rounding."""
    proc = run_example("results15/jax_rule.py", "--streams", "1", "--points", "512")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "points:" in line]
    assert len(lines) == 1 and float(lines[0].rsplit(" ", 1)[1]) < 1e-12


@pytest.mark.slow  # a benchmark script's smoke run: `make test-slow` / `make bench`, not the default suite
def test_accelerator_benchmark_smoke(tmp_path):
    """benchmarks/bench_accel.py --quick --cpu-only: every part measured in the CPU child (no accelerator
    asked for), the table printed, the JSON written with the configuration."""

    out = tmp_path / "accel.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_accel.py"), "--quick",
                           "--cpu-only", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    cpu = result["cpu"]
    assert cpu["platform"] == "cpu" and "accel" not in result and result["config"]["quick"]
    assert cpu["filter"][0]["s"] > 0 and cpu["kappa_fit"]["max_rhat"] > 0 and cpu["skill_fit"]["min_bulk_ess"] > 0
    assert "--cpu-only: CPU only (no ratios)" in proc.stdout


def test_sharp_tau_measurement_runs_and_finds_the_documented_gap():
    """docs/examples/results15/sharp_tau.py (docs/kappa.md, "At τ = 0.05 it is worse"): at a small
    reference the fast rule is still off by more than 0.005 in that case, with collapsed weights."""
    proc = run_example("results15/sharp_tau.py", "--draws", "400000")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "points, order" in line]
    assert len(lines) == 8
    errors = [float(line.split("max error ")[1].split()[0]) for line in lines]
    assert min(errors) > 0.005 and all("ess 0.0" in line or "ess 0.1" in line for line in lines)
