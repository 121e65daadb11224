"""Bad input reported by the reviewer: every case is one ``error:`` line naming the bad value and
the option or file, exit status 2, no traceback or ``internal error:``, and nothing created.

The cases run in-process (typer's CliRunner) and are all refused before any real work, so
each takes well under a second. Output paths under ``/proc`` stand for "a folder in which
nothing can be created" (no permission bits help there: the check must try it).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import List

import pytest
import typer.main
import typer.testing
from typer.testing import CliRunner

from beliefgate.cli import app
from beliefgate.console import INTERNAL_ERROR

PROC = Path("/proc")
needs_proc = pytest.mark.skipif(not PROC.is_dir(), reason="needs /proc (a folder nothing can be created in)")


@pytest.fixture()
def work(tmp_path, monkeypatch):
    """A scratch working directory with the files the cases name; no LLM server, an empty cache."""
    monkeypatch.setenv("BELIEFGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BELIEFGATE_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("BELIEFGATE_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    binary = bytes(range(128, 256)) * 2
    (tmp_path / "png.json").write_bytes(binary)
    (tmp_path / "fake.png").write_bytes(binary)
    (tmp_path / "adir").mkdir()
    (tmp_path / "o1").mkdir()
    (tmp_path / "syn.py").write_text("def f(:\n")
    (tmp_path / "bad.json").write_text("{\n")
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "g.yaml").write_text("name: tiny\nagents: [balanced]\nlayouts: [cramped_room]\npartners: [balanced]\n"
                                     "seeds: {start: 0, count: 1}\nseats: [0]\nhorizon: 10\n")
    (tmp_path / "ev1").mkdir()  # a run directory: results are written by the cases that need them
    (tmp_path / "ep.jsonl").write_text("{}\n")  # never read: every case fails before the logs
    command = typer.main.get_command(app)  # CliRunner would rebuild the click tree on every call
    if hasattr(typer.testing, "_get_command"):
        monkeypatch.setattr(typer.testing, "_get_command", lambda _app: command)
    return tmp_path


#: seconds a case may run: every one is refused before any work, so one still running accepted its value
CASE_TIMEOUT_S = 60


class _CaseTimeout(BaseException):
    """Raised by SIGALRM in a case that ran too long (BaseException: no handler may swallow it)."""


def _alarm(signum, frame):
    raise _CaseTimeout()


def _run(args: List[str]):
    old = signal.signal(signal.SIGALRM, _alarm)
    # re-fires every 0.5 s: an alarm raised inside a callback whose exceptions are ignored is not lost
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT_S, 0.5)
    try:
        return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=True)
    except _CaseTimeout:
        pytest.fail(f"beliefgate {' '.join(map(str, args))}: still running after {CASE_TIMEOUT_S} s "
                    "(the bad value was accepted)")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, old)


def _one_error_line(result, *needles: str) -> str:
    lines = result.output.splitlines()
    assert "Traceback" not in result.output and INTERNAL_ERROR not in result.output, result.output
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error:"), lines  # no blank line before it either
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _created(root: Path, before: set) -> set:
    return {p.relative_to(root) for p in root.rglob("*")} - before


def _snapshot(root: Path) -> set:
    return {p.relative_to(root) for p in root.rglob("*")}


# ------------------------------------------------------------------ 1. binary file where text is expected
@pytest.mark.parametrize("args, needle", [
    (["partners", "png.json"], "png.json: not UTF-8 text"),
    (["episode", "--layout", "cramped_room", "--horizon", "5", "--partner", "png.json"], "png.json: not UTF-8 text"),
    (["policytree", "show", "fake.png"], "fake.png: not UTF-8 text"),
    (["policytree", "run", "fake.png", "--layout", "cramped_room", "--partner", "balanced", "--seeds", "1",
      "--horizon", "5"], "fake.png: not UTF-8 text"),
    (["switches", "--params", "png.json", "--seeds", "1", "--horizon", "10"], "--params png.json"),
])
def test_a_binary_file_is_named_not_an_internal_error(work, args, needle):
    _one_error_line(_run(args), needle)


# ------------------------------------------------------------------ 2. negative seeds, checked up front
@pytest.mark.parametrize("args", [
    ["policytree", "run", "seed:cramped_room", "--layout", "cramped_room", "--partner", "balanced", "--seeds", "1",
     "--horizon", "5", "--seed", "-5"],
    ["sensitivity", "global", "ep.jsonl", "--n", "4", "--resamples", "10", "--params", "tau_obs=0.02:0.7",
     "--seed", "-5"],
    ["sensitivity", "oat", "ep.jsonl", "--param", "tau_obs=0.02:0.7:3", "--seed", "-5"],
    ["fit", "ep.jsonl", "-o", "x.nc", "--seed", "-5"],
    ["diagnose", "x.nc", "--seed", "-5"],
    ["eval", "report", "ev1", "--seed", "-5"],
    ["eval", "bc", "--seed", "-5"],
    ["data", "train-bc", "--seed", "-5"],
])
def test_a_negative_seed_is_refused_before_any_work(work, args):
    _one_error_line(_run(args), "--seed", "-5")


# ------------------------------------------------------------------ 3. a corrupt results table
@pytest.mark.parametrize("content", [b"", b"PAR1 this is not parquet"])
def test_a_corrupt_results_parquet_is_an_input_error_naming_it(work, content):
    (work / "ev1" / "results.parquet").write_bytes(content)
    _one_error_line(_run(["eval", "report", "ev1"]), "results.parquet")


# ------------------------------------------------------------------ 4. unbounded counts
HUGE = "99999999999999999999"


@pytest.mark.parametrize("args, needle", [
    (["fit", "ep.jsonl", "-o", "x.nc", "--svi-steps", HUGE], "--svi-steps"),
    (["fit", "ep.jsonl", "-o", "x.nc", "--draws", HUGE], "--draws"),
    (["sensitivity", "oat", "ep.jsonl", "--param", "tau_obs=0.02:0.7:999999999999"], "999999999999"),
    (["sensitivity", "global", "ep.jsonl", "--n", HUGE, "--params", "tau_obs=0.02:0.7"], "--n"),
    (["episode", "--layout", "cramped_room", "--horizon", HUGE], "--horizon"),
    (["episode", "--layout", "cramped_room", "--horizon", "100001"], "100001"),
    (["switches", "--seeds", HUGE], "--seeds"),
])
def test_counts_have_an_upper_bound(work, args, needle):
    _one_error_line(_run(args), needle)


def test_one_horizon_cap_for_the_cli_and_the_files():
    from beliefgate.envs.overcooked.partners import PartnerSpec
    from beliefgate.eval.grid import GridSpec
    from beliefgate.limits import MAX_HORIZON

    def le(model, field):
        return next(m.le for m in model.model_fields[field].metadata if getattr(m, "le", None) is not None)

    assert le(GridSpec, "horizon") == le(PartnerSpec, "horizon") == MAX_HORIZON == 100_000
    ok = _run(["episode", "--layout", "cramped_room", "--horizon", str(MAX_HORIZON + 1)])
    assert ok.exit_code == 2 and str(MAX_HORIZON) in ok.output


# ------------------------------------------------------------------ 5 and 6. outputs checked before any work
@needs_proc
@pytest.mark.parametrize("args, needle", [
    (["switches", "--seeds", "1", "--horizon", "10", "--out", "o1/r.json", "--md", "o1/r.md", "--plot",
      "/proc/x.png"], "--plot /proc/x.png"),
    (["switches", "--seeds", "1", "--horizon", "10", "--tune", "--out", "o1/r.json", "--params-out",
      "/proc/x.json"], "--params-out /proc/x.json"),
    (["switches", "--seeds", "1", "--horizon", "10", "--out", "/proc/x.json"], "--out /proc/x.json"),
    (["switches", "--seeds", "1", "--horizon", "10", "--cache", "/proc/cx"], "--cache /proc/cx"),
    (["fit", "ep.jsonl", "-o", "/proc/x.nc"], "--out /proc/x.nc"),
    (["eval", "run", "g.yaml", "--out", "ev2", "--workers", "1", "--report", "/proc/x.md"], "--report /proc/x.md"),
    (["eval", "report", "ev1", "--out", "/proc/x.md"], "--out /proc/x.md"),
    (["overforge", "report", "ev1", "--md", "/proc/r.md", "--img", "imgx"], "--md /proc/r.md"),
    (["overforge", "run", "g.yaml", "--out", "/proc/ofx", "--workers", "1"], "--out /proc/ofx"),
    (["episode", "--layout", "cramped_room", "--horizon", "5", "--log", "/proc/x.jsonl"], "--log /proc/x.jsonl"),
    (["demo", "--seeds", "1", "--horizon", "10", "--out", "/proc/demox"], "--out /proc/demox"),
    (["diagnose", "x.nc", "--plots", "/proc/diagx"], "--plots /proc/diagx"),
    (["sensitivity", "oat", "ep.jsonl", "--param", "tau_obs=0.02:0.7:3", "--plots", "/proc/px"], "--plots /proc/px"),
    (["sensitivity", "global", "ep.jsonl", "--n", "4", "--params", "tau_obs=0.02:0.7", "--plots", "/proc/px"],
     "--plots /proc/px"),
])
def test_an_output_nothing_can_be_created_in_is_refused_first(work, args, needle):
    before = _snapshot(work)
    _one_error_line(_run(args), needle)
    assert not _created(work, before)  # no o1/r.json, no ev2/, no imgx/


@pytest.mark.parametrize("args, needle", [
    (["fit", "ep.jsonl", "-o", "{tmp}/nonexist/x.nc"], "/nonexist"),
    (["eval", "run", "g.yaml", "--out", "ev2", "--workers", "1", "--report", "{tmp}/nonexist/r.md"], "/nonexist"),
    (["eval", "report", "ev1", "--out", "{tmp}/nonexist/x.md"], "/nonexist"),
    (["diagnose", "x.nc", "--plots", "fake.png"], "--plots fake.png"),
    (["sensitivity", "oat", "ep.jsonl", "--param", "tau_obs=0.02:0.7:3", "--plots", "fake.png"], "--plots fake.png"),
    (["episode", "--layout", "cramped_room", "--horizon", "5", "--llm-base-url", "http://127.0.0.1:9",
      "--llm-model", "m", "--llm-cache", "fake.png"], "--llm-cache fake.png"),
    (["eval", "report", "ev1", "--out", "adir"], "--out adir"),
])
def test_a_missing_folder_or_the_wrong_kind_of_path_is_refused_first(work, args, needle):
    args = [a.replace("{tmp}", str(work)) for a in args]
    before = _snapshot(work)
    line = _one_error_line(_run(args), needle)
    assert "Errno" not in line
    assert not _created(work, before)  # /nonexist is not created, nor is ev2/


# ------------------------------------------------------------------ 7. no blank line before the error
@pytest.mark.parametrize("args", [
    ["switches", "--seeds", "1", "--horizon", "10", "--layout", "nope"],
    ["policytree", "run", "seed:cramped_room", "--layout", "nope", "--partner", "balanced", "--seeds", "1",
     "--horizon", "5"],
    ["eval", "human", "--layout", "nope"],
    ["sensitivity", "oat", "ep.jsonl", "--param", "tau_obs=0.1:0.3:2"],  # ep.jsonl is no trajectory log
    ["sensitivity", "global", "ep.jsonl", "--n", "4", "--params", "tau_obs=0.1:0.3"],
])
def test_an_error_after_a_progress_bar_is_still_one_line(work, args):
    result = _run(args)
    assert result.exit_code == 2 and result.output.splitlines()[0].startswith("error:"), repr(result.output)
    assert len(result.output.splitlines()) == 1, repr(result.output)


# ------------------------------------------------------------------ 8. messages name the value and the file
@pytest.mark.parametrize("args, needles", [
    (["switches", "--seeds", "1", "--horizon", "10", "--params", "bad.json"], ("--params", "bad.json")),
    (["episode", "--layout", "cramped_room", "--horizon", "-3"], ("--horizon", "-3")),
    (["episode", "--layout", "cramped_room", "--llm-timeout", "nan"], ("--llm-timeout", "nan")),
    (["fit", "adir", "-o", "x.nc"], ("adir", "is a directory")),
    (["diagnose", "adir"], ("adir", "is a directory")),
    (["compare", "adir", "fake.png"], ("adir", "is a directory")),
    (["policytree", "show", "adir"], ("adir", "is a directory")),
    (["overforge", "report", "fake.png", "--md", "r.md"], ("fake.png", "not a run directory")),
    (["policytree", "run", "syn.py", "--layout", "cramped_room", "--partner", "balanced", "--seeds", "1",
      "--horizon", "5"], ("syn.py", "syntax")),
    (["overforge", "run", "g.yaml", "--out", "ofy", "--seeds", "0"], ("--seeds", "0")),
])
def test_the_message_names_the_value_and_the_file(work, args, needles):
    line = _one_error_line(_run(args), *needles)
    assert "no such file" not in line and "does not exist" not in line


# ------------------------------------------------------------------ 9. no option silently ignored
@pytest.mark.parametrize("args, needles", [
    (["switches", "--seeds", "1", "--horizon", "10", "--params-out", "pp.json"], ("--params-out", "--tune")),
    (["sensitivity", "global", "ep.jsonl", "--n", "3", "--params", "tau_obs=0.02:0.7"], ("--n", "power of 2", "3")),
    (["overforge", "run", "g.yaml", "--out", "ofz", "--layouts", "coordination_ring"],
     ("--layouts", "coordination_ring")),
    (["overforge", "run", "g.yaml", "--out", "ofz", "--partners", "plater"], ("--partners", "plater")),
    (["overforge", "run", "g.yaml", "--out", "ofz", "--seeds", "2"], ("--seeds", "2")),
    (["policytree", "show", "syn.py"], ("syn.py", "syntax")),
    (["policytree", "show", "bad.json"], ("bad.json",)),
    (["policytree", "show", "empty.py"], ("empty.py", "empty")),
])
def test_options_and_files_are_not_silently_ignored(work, args, needles):
    before = _snapshot(work)
    _one_error_line(_run(args), *needles)
    assert not _created(work, before)


def test_play_help_shows_the_tick_rate_range():
    result = CliRunner().invoke(app, ["play", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    line = next(line for line in result.output.splitlines() if "--tick-hz" in line)
    assert "0.5" in line and "60" in line, line


def test_policytree_show_still_prints_a_valid_tree(work):
    result = _run(["policytree", "show", "seed:cramped_room"])
    assert result.exit_code == 0 and result.output.strip(), result.output
