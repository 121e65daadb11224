"""Hostile files and runs at the command line (issue #47, red-team findings 5, 7, 8, 9): each refused with exit 2
and one line, before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from beliefgate.cli import app

DEPTH = 100_000
DIGITS = 5_000


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_line_exit_2(res, *needles):
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), res.output
    assert "internal error" not in res.output and "Traceback" not in res.output
    for needle in needles:
        assert needle in lines[0], res.output
    return lines[0]


def _hostile_data_files(folder: Path) -> dict:
    """Files that Python's parsers give up on: nesting deeper than the recursion limit, an integer of more
    than 4,300 digits; in YAML (flow and block) and JSON."""
    block = "".join("  " * i + "k:\n" for i in range(3000)) + "  " * 3000 + "v\n"
    files = {
        "deep_flow.yaml": "horizon: 10\nx: " + "[" * DEPTH + "]" * DEPTH + "\n",
        "deep_block.yaml": block,
        "bigint.yaml": "horizon: " + "9" * DIGITS + "\n",
        "deep.json": '{"x": ' + "[" * DEPTH + "]" * DEPTH + "}",
        "deep_150.json": '{"x": ' + "[" * 150 + "]" * 150 + "}",  # within Python's recursion limit, over ours
        "bigint.json": '{"horizon": ' + "9" * DIGITS + "}",
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return {name: folder / name for name in files}


@pytest.mark.parametrize("command", ["partners", "eval run"])
def test_deep_or_huge_data_files_are_refused_in_one_line(tmp_path, command):
    for name, path in _hostile_data_files(tmp_path).items():
        args = [path] if command == "partners" else ["run", path, "--out", tmp_path / "out"]
        res = _cli(*(["partners"] if command == "partners" else ["eval"]), *args)
        line = _one_line_exit_2(res, name)
        assert ("nested too deeply" in line) if "deep" in name else ("more than 4300 digits" in line), line
    assert not (tmp_path / "out").exists()


def test_deep_or_huge_lines_in_a_log_are_refused_by_report(tmp_path):
    header = '{"kind": "header", "layout": "cramped_room", "horizon": 5, "seed": 0, "agents": ["a", "b"], '
    cases = {
        "deep.jsonl": header + '"version": "x", "config": {"x": ' + "[" * DEPTH + "]" * DEPTH + "}}\n",
        "bigint.jsonl": header + '"version": "x", "seed2": ' + "9" * DIGITS + "}\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        line = _one_line_exit_2(_cli("report", tmp_path / name, "-o", tmp_path / "r.html"), f"{name}:1:")
        assert ("nested too deeply" in line) if "deep" in name else ("more than 4300 digits" in line), line
    assert not (tmp_path / "r.html").exists()


# --------------------------------------------------------------------------- diagnose --strict (finding 7)
def test_convergence_warnings_name_a_summary_that_is_not_finite():
    import math

    from beliefgate.models.diagnose import ParameterSummary, convergence_warnings

    nan = math.nan
    ok = ParameterSummary(1.0, 0.1, 0.8, 1.2, 1500.0, 1200.0, 1.002)
    for method in ("svi", "nuts"):
        assert convergence_warnings({"beta": ok}, 0, 4, 1000, method) == []
        all_nan = ParameterSummary(nan, nan, nan, nan, nan, nan, nan)
        warnings = convergence_warnings({"beta": all_nan, "epsilon": ok}, 0, 4, 1000, method)
        assert any(w.startswith("beta: posterior summary not finite (mean nan") for w in warnings), warnings
        assert not any(w.startswith("epsilon") for w in warnings)
        inf_sd = ok._replace(sd=math.inf)
        assert any("not finite (sd inf)" in w for w in convergence_warnings({"hazard": inf_sd}, 0, 4, 1000, method))


@pytest.mark.slow  # an SVI fit and three diagnose runs: ~70 s on the 2-core machine
def test_diagnose_strict_fails_on_a_posterior_of_nan(tmp_path):
    import numpy as np

    from beliefgate.eval.episode import run_episode
    from beliefgate.models.data import load_logs
    from beliefgate.models.fit import FitConfig, fit, save_fit

    log = tmp_path / "ep.jsonl"
    run_episode("cramped_room", "balanced", "switch-sourcer-to-plater", seed=4, horizon=80, log_path=log)
    idata = fit(load_logs([log]), FitConfig(method="svi", chains=2, draws=40, svi_steps=200, seed=0))
    good = save_fit(idata, tmp_path / "good.nc")
    res = _cli("diagnose", good, "--no-ppc", "--no-calibration", "--strict")
    assert "not finite" not in res.output, res.output
    clean = {name: idata.posterior[name].copy(deep=True) for name in idata.posterior.data_vars}
    for name in idata.posterior.data_vars:
        idata.posterior[name] = clean[name].copy(data=np.full(clean[name].shape, np.nan))
    res = _cli("diagnose", save_fit(idata, tmp_path / "nan.nc"), "--no-ppc", "--no-calibration", "--strict")
    assert res.exit_code == 1, res.output
    assert "not finite" in res.output and "beta" in res.output, res.output
    # one parameter's summary alone is not finite (a single bad draw): still a failure
    for name in idata.posterior.data_vars:
        idata.posterior[name] = clean[name]
    values = clean["epsilon"].values.copy()
    values[0, 3] = np.inf
    idata.posterior["epsilon"] = clean["epsilon"].copy(data=values)
    res = _cli("diagnose", save_fit(idata, tmp_path / "inf.nc"), "--no-ppc", "--no-calibration", "--strict")
    assert res.exit_code == 1 and "epsilon" in res.output and "not finite" in res.output, res.output


# --------------------------------------------------------------------------- eval run: refused trees (finding 8)
TREE_THAT_IMPORTS = '''import os


def PredictTeammateThenPlan(state):
    return "wait"
'''


def test_eval_run_refuses_a_tree_the_sandbox_refuses_before_any_episode(tmp_path):
    tree = tmp_path / "imports.py"
    tree.write_text(TREE_THAT_IMPORTS, encoding="utf-8")
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"agents: [balanced, 'policy-tree:{tree}']\nlayouts: [cramped_room]\npartners: [balanced]\n"
                    "seeds: {start: 0, count: 1}\nseats: [0]\nhorizon: 20\n", encoding="utf-8")
    out = tmp_path / "run"
    line = _one_line_exit_2(_cli("eval", "run", grid, "--out", out, "--workers", 1), str(tree))
    assert "import" in line, line
    assert not out.exists()


# --------------------------------------------------------------------------- eval run: one run per --out (finding 9)
SMALL_GRID = ("agents: [balanced]\nlayouts: [cramped_room]\npartners: [balanced]\nseeds: {start: 0, count: 1}\n"
              "seats: [0]\nhorizon: 10\n")


def _hold_run_lock(out: Path):
    """Another process holding the run directory's lock as ``eval run`` takes it (until its stdin closes)."""
    import subprocess
    import sys

    code = ("import sys\nfrom beliefgate.eval.runner import lock_run_dir\n"
            f"with lock_run_dir({str(out)!r}):\n    print('held', flush=True)\n    sys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_two_eval_runs_on_one_out_exclude_each_other(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(SMALL_GRID, encoding="utf-8")
    out = tmp_path / "run"
    holder = _hold_run_lock(out)
    try:
        line = _one_line_exit_2(_cli("eval", "run", grid, "--out", out, "--workers", 1), str(out), str(holder.pid))
        assert "another" in line
        assert not list(out.rglob("*.jsonl")) and not (out / "grid.json").exists()
        from beliefgate.eval.runner import RunLockedError, run_grid
        from beliefgate.eval.grid import load_grid

        with pytest.raises(RunLockedError, match=str(holder.pid)):  # the library refuses too
            run_grid(load_grid(grid), out)
    finally:
        holder.stdin.close()
        holder.wait(10)
    res = _cli("eval", "run", grid, "--out", out, "--workers", 1)
    assert res.exit_code == 0, res.output
    assert len(list(out.rglob("*.jsonl"))) == 1


def test_a_killed_runs_lock_is_not_stale(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(SMALL_GRID, encoding="utf-8")
    out = tmp_path / "run"
    holder = _hold_run_lock(out)
    holder.kill()  # no clean-up: the lock file stays, with the dead process's pid
    holder.wait(10)
    holder.stdin.close()
    holder.stdout.close()
    assert any(p.name.endswith(".lock") for p in out.iterdir())
    res = _cli("eval", "run", grid, "--out", out, "--workers", 1)
    assert res.exit_code == 0, res.output
