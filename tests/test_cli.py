"""The command line, run as a user runs it (a subprocess of the installed console script)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent / "beliefgate"


def run(*args, check=True, env=None):
    proc = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=300, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"beliefgate {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.mark.parametrize("sub", ["layouts", "partners", "episode", "demo", "switches"])
def test_help_on_every_subcommand(sub):
    out = run(sub, "--help").stdout
    assert "Usage" in out and sub in out


def test_partners_json_schema():
    rows = json.loads(run("partners", "--json").stdout)
    assert len(rows) >= 8
    for r in rows:
        assert {"name", "description", "switches", "layouts"} <= set(r)
        assert isinstance(r["switches"], bool)
        assert r["layouts"] is None or isinstance(r["layouts"], list)
    assert sum(r["switches"] for r in rows) >= 2


def test_layouts_json():
    rows = json.loads(run("layouts", "--json").stdout)
    classic = [r for r in rows if r["backend"] == "classic"]
    assert [r["name"] for r in classic] == ["cramped_room", "asymmetric_advantages", "coordination_ring",
                                            "forced_coordination", "counter_circuit", "cramped_room_3p",
                                            "asymmetric_advantages_3p"]
    assert [r["players"] for r in classic] == [2, 2, 2, 2, 2, 3, 3]
    # the OvercookedV2 backend's layouts follow where its entry point is installed
    others = rows[len(classic):]
    assert rows[:len(classic)] == classic and all(r["backend"] == "v2" and r["name"].startswith("v2/")
                                                  for r in others)


def test_episode_json_and_log(tmp_path):
    log = tmp_path / "ep.jsonl"
    out = run("episode", "--layout", "forced_coordination", "--ego", "balanced", "--partner", "counter-passer",
              "--seed", "4", "--horizon", "400", "--log", str(log), "--json").stdout
    summary = json.loads(out)
    assert {"deliveries", "reward", "steps", "replans", "llm_calls"} <= set(summary)
    assert summary["steps"] == 400 and summary["replans"] == 0 and summary["llm_calls"] == 0
    assert summary["deliveries"] >= 1
    from beliefgate.envs.trajlog import read_log

    assert read_log(log).final.summary["deliveries"] == summary["deliveries"]


def test_bad_names_are_clear_errors():
    proc = run("episode", "--layout", "moon_base", check=False)
    assert proc.returncode == 2 and "unknown layout 'moon_base'" in proc.stderr
    proc = run("episode", "--layout", "cramped_room", "--partner", "robot", check=False)
    assert proc.returncode == 2 and "unknown agent 'robot'" in proc.stderr


def test_demo_end_to_end(tmp_path):
    """The newcomer's first command: every layout played, logged and read by the gate."""
    out = run("demo", "--horizon", "150", "--seed", "1", "--seeds", "1", "--out", str(tmp_path)).stdout
    for agent in ("bayes-belief", "bayes-belief:no_replan", "periodic-10"):
        assert agent in out
    for layout in ("cramped_room", "asymmetric_advantages", "coordination_ring", "forced_coordination",
                   "counter_circuit"):
        assert layout in out
        assert (tmp_path / f"{layout}_seed1.jsonl").exists()
    assert "MAP acc" in out and "vetoed" in out
    assert (tmp_path / "report.html").exists()  # the tour ends on a report page of the belief agent
    for column in ("effective/ep", "gap/step", "gap@dp", "gap@oracle"):  # the comparison, with its caption
        assert column in out
    assert "Mean [95% CI over seeds]" in out
    flat = " ".join(out.split())
    # one seed: no interval; if the gate never fired, the conditions were one policy and it says that instead
    assert "What it means: bayes-belief reward" in out
    assert "too few seeds for an interval" in flat or "it never replanned here, so it played the same episodes" in flat


def test_demo_folder_is_removed_unless_kept_or_named(tmp_path, monkeypatch):
    """`make demo` left a 1.3 MB beliefgate-demo-* folder in the temp directory on every run."""
    import tempfile

    from beliefgate.cli import demo_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with demo_folder(None, keep=False) as folder:
        (folder / "log.jsonl").write_text("{}")
    assert not folder.exists()
    with pytest.raises(RuntimeError), demo_folder(None, keep=False) as folder:
        raise RuntimeError("an episode failed")
    assert not folder.exists()  # removed on an error too
    with demo_folder(None, keep=True) as kept:
        (kept / "log.jsonl").write_text("{}")
    named = tmp_path / "mine"
    with demo_folder(named, keep=False) as folder:
        assert folder == named
    assert (kept / "log.jsonl").exists()


@pytest.mark.slow
def test_demo_removes_its_temp_folder_unless_asked_to_keep_it(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = run("demo", "--horizon", "5", "--seeds", "1", env=env).stdout
    assert not list(tmp_path.glob("beliefgate-demo-*")) and "--keep" in out
    run("demo", "--horizon", "5", "--seeds", "1", "--keep", env=env)
    kept = list(tmp_path.glob("beliefgate-demo-*"))
    assert len(kept) == 1 and (kept[0] / "cramped_room_seed0.jsonl").exists()


def test_episode_with_an_llm_only_agent_takes_the_model_flags():
    """`episode --ego overforge:llm --llm-base-url URL` builds the agent with its client (the input
    check used to build it without one and refuse it); without a URL it is one clear line."""
    import socket

    with socket.socket() as s:  # a loopback port with nothing listening: every call fails fast
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run("episode", "--layout", "cramped_room", "--ego", "overforge:llm", "--partner", "balanced",
               "--seed", "1000", "--horizon", "3", "--llm-base-url", f"http://127.0.0.1:{port}/v1",
               "--llm-model", "none", "--llm-deadline", "2", "--json")
    summary = json.loads(proc.stdout)
    assert summary["ego"] == "overforge:llm" and summary["steps"] == 3
    assert summary["llm_calls"] == 0 < summary["fallbacks"]
    reasons = summary["fallback_counts"]["by_reason"]
    assert sum(reasons[r] for r in ("unavailable", "deadline", "breaker_open")) == summary["fallbacks"]
    bad = run("episode", "--layout", "cramped_room", "--ego", "overforge:llm", "--partner", "balanced",
              "--horizon", "3", check=False)
    assert bad.returncode != 0 and "needs a model" in bad.stderr and "Traceback" not in bad.stderr
