"""Faults of ``beliefgate eval run``: a SIGKILLed runner leaves no process behind; a run directory
of another grid is refused unless ``--force`` (its results are moved aside, never deleted)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from beliefgate.eval.grid import parse_grid, resolve_grid
from beliefgate.eval.runner import RunDirMismatchError, check_run_dir, load_results, run_grid

BIN = Path(sys.executable).parent / "beliefgate"
TINY = {"name": "tiny-a", "agents": ["periodic-10"], "layouts": ["cramped_room"], "partners": ["plater"],
        "seeds": [0], "seats": [0], "horizon": 10}


# ----------------------------------------------------------------------------- another grid, same --out
def _cli(*args):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    return CliRunner().invoke(app, list(args))


def test_another_grid_is_refused_unless_force_and_the_old_results_are_kept(tmp_path):
    out = tmp_path / "run"
    first = run_grid(parse_grid(TINY), out)
    assert first.ran == 1
    old_grid = (out / "grid.json").read_bytes()
    old_rows = json.dumps(load_results(out), sort_keys=True)  # (NaN metrics compare equal as text)
    other = tmp_path / "b.yaml"
    other.write_text(yaml.safe_dump({**TINY, "name": "tiny-b", "seeds": [1]}), encoding="utf-8")

    refused = _cli("eval", "run", str(other), "--out", str(out), "--workers", "1")
    assert refused.exit_code == 2, refused.output
    assert "holds the results of another grid ('tiny-a'" in refused.output and "--force" in refused.output
    assert (out / "grid.json").read_bytes() == old_grid  # untouched
    assert json.dumps(load_results(out), sort_keys=True) == old_rows
    # the same grid again is a resume, not "another grid"
    same = tmp_path / "a.yaml"
    same.write_text(yaml.safe_dump(TINY), encoding="utf-8")
    resumed = _cli("eval", "run", str(same), "--out", str(out), "--workers", "1", "--json")
    assert resumed.exit_code == 0 and json.loads(resumed.stdout)["skipped_done"] == 1

    forced = _cli("eval", "run", str(other), "--out", str(out), "--workers", "1", "--force", "--json")
    assert forced.exit_code == 0, forced.output
    summary = json.loads(forced.stdout)
    assert summary["ran"] == 1 and any("moved them to" in n for n in summary["notes"])
    [aside] = list(out.glob("superseded-*"))
    assert (aside / "grid.json").read_bytes() == old_grid  # the old grid and its results are kept
    assert json.dumps(load_results(aside), sort_keys=True) == old_rows and list(aside.glob("episodes/*/*.jsonl"))
    assert json.loads((out / "grid.json").read_text())["spec"]["name"] == "tiny-b"
    assert [r["seed"] for r in load_results(out)] == [1]


def test_the_library_refuses_on_request_and_otherwise_moves_aside(tmp_path):
    run_grid(parse_grid(TINY), tmp_path)
    other = resolve_grid(parse_grid({**TINY, "horizon": 11}))
    with pytest.raises(RunDirMismatchError, match="another grid"):
        run_grid(other, tmp_path, other_grid="refuse")
    with pytest.raises(RunDirMismatchError):
        check_run_dir(tmp_path, other)
    notes = []
    summary = run_grid(other, tmp_path, report=notes.append)
    assert summary.ran == 1 and summary.skipped_done == 0 and any("superseded-" in n for n in notes)
    assert check_run_dir(tmp_path, other) is None  # now this grid's directory


# ----------------------------------------------------------------------------- kill -9 the runner
def _alive(proc) -> bool:
    import psutil

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("executor", [[], ["--scheduler", "local"]], ids=["process-pool", "dask-local"])
def test_sigkilled_runner_leaves_no_worker_or_resource_tracker(tmp_path, executor):
    psutil = pytest.importorskip("psutil")
    if executor:
        pytest.importorskip("distributed")
    grid = tmp_path / "grid.yaml"
    # enough long episodes that both workers are busy when the runner is killed
    grid.write_text(yaml.safe_dump({**TINY, "agents": ["bayes-belief:full"], "seeds": list(range(8)),
                                    "horizon": 400}), encoding="utf-8")
    proc = subprocess.Popen([str(BIN), "eval", "run", str(grid), "--out", str(tmp_path / "run"), "--workers", "2",
                             *executor],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    children = []
    try:
        runner = psutil.Process(proc.pid)
        deadline = time.monotonic() + 120
        workers = []
        while time.monotonic() < deadline and proc.poll() is None:
            children = runner.children(recursive=True)
            workers = [c for c in children if "spawn_main" in " ".join(c.cmdline())
                       and "resource_tracker" not in " ".join(c.cmdline())]
            if len(workers) >= 2:
                break
            time.sleep(0.2)
        assert len(workers) >= 2, f"the pool did not start: {[c.cmdline() for c in children]}"
        time.sleep(2.0)  # the workers are importing or playing
        children = runner.children(recursive=True)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(c) for c in children):
            time.sleep(0.2)
        survivors = [(c.pid, c.cmdline()) for c in children if _alive(c)]
        assert not survivors, f"alive 10 s after the runner was killed: {survivors}"
    finally:
        if proc.poll() is None:
            proc.kill()
        for c in children:  # never leave anything behind, even when the test fails
            if _alive(c):
                c.kill()
