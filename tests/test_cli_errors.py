"""No command lets a traceback reach the user: the CLI's one error boundary (``beliefgate.console``).

``test_no_command_prints_a_traceback`` walks the whole typer/click command tree (so a command
added later is covered without touching this file) and runs every command in-process with a
table of bad arguments: an unknown option, and for every option a badly typed / out-of-range /
unusable value by its type. Any traceback, any ``internal error:`` line (an exception the
boundary did not expect) or an exit status other than 0/1/2 fails the test. A case that is
still running after a few seconds accepted its value and started real work: a failure, except
for the cases listed in :data:`VALID` (a valid value, e.g. a readable token file), which are not run.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest
import typer.main
from typer.testing import CliRunner

from beliefgate.cli import app
from beliefgate.console import INTERNAL_ERROR

#: seconds a case may run before it counts as "accepted the value and started working"
CASE_TIMEOUT_S = 15
#: (command path, option, value kind) cases whose value is valid, so the command starts real work
#: (a server, a benchmark): not run
VALID = {
    ("serve", "--token-file", "file"),  # any non-empty one-word file is a valid token: the server starts
    ("demo", "--out", "dir"),           # an existing output folder: the tour runs
    ("switches", "--cache", "dir"),     # an existing episode cache folder
    ("switches", "--out", "file"),      # an existing file is overwritten at the end
    ("switches", "--plot", "file"),
    ("switches", "--params-out", "file"),
    ("demo", "--out", "missing"),       # output folders are created with their parents (fileio.output_path_problem)
    ("switches", "--cache", "missing"),
}

#: values of required options so that the option under test is what the command sees
FILLERS = {"--layout": "cramped_room", "--partner": "balanced"}
#: options given small values (when not under test) so that a case that does run stays short
SHORT = {"--horizon": 10, "--seeds": 1, "--episodes": 1, "--n-boot": 100, "--bootstrap": 100}
#: imported before the walk: a timeout that interrupts a first import would leave it half done
HEAVY_IMPORTS = ("numpy", "pandas", "jax", "numpyro", "arviz", "matplotlib.pyplot", "fastapi", "uvicorn", "httpx",
                 "beliefgate.eval.episode", "beliefgate.eval.switches", "beliefgate.models.fit")


class _CaseTimeout(BaseException):
    """Raised by SIGALRM inside a case that ran too long (BaseException: no handler may swallow it)."""


def _commands(cmd, path: Tuple[str, ...] = ()) -> Iterator[Tuple[Tuple[str, ...], object]]:
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in sorted(subs.items()):
            yield from _commands(sub, path + (name,))
    else:
        yield path, cmd


def _garbage(tmp: Path) -> Path:
    """A file that is no JSON, YAML, log, token or image (rewritten: a case may have overwritten it)."""
    path = tmp / "garbage.bin"
    path.write_bytes(b"\x00\xffnot json, not yaml, not a log\n{[")
    return path


def _bad_values(kind: str, tmp: Path) -> List[Tuple[str, str]]:
    """(label, value) pairs that a command must reject or handle without a traceback."""
    garbage = _garbage(tmp)
    kind = kind.lower()
    if "bool" in kind:
        return []
    if "int" in kind:
        return [("text", "abc"), ("negative", "-1")]
    if "float" in kind:
        return [("text", "abc"), ("negative", "-1"), ("nan", "nan")]
    if "path" in kind:
        return [("missing", str(tmp / "missing" / "dir" / "x.jsonl")), ("dir", str(tmp)), ("file", str(garbage))]
    return [("bogus", "bogus:value")]


def _fill_required(cmd, skip: str, tmp: Path) -> List[str]:
    args: List[str] = []
    for p in cmd.params:
        if p.name == skip or p.param_type_name == "argument":
            continue  # arguments come last, added by the caller
        opt = p.opts[0]
        if p.required:
            args += [opt, FILLERS.get(opt, str(tmp / "out") if "path" in p.bare_type().lower() else "1")]
        elif opt in SHORT and not getattr(p, "multiple", False):
            args += [opt, str(max(SHORT[opt], p.min or 0))]
    return args


def _required_arguments(cmd, skip: str, value: str) -> List[str]:
    out = []
    for p in cmd.params:
        if p.param_type_name == "argument" and p.required:
            out.append(value if p.name == skip else "/nonexistent/input.jsonl")
    return out


def _cases(tmp: Path) -> Iterator[Tuple[Tuple[str, ...], str, str, List[str]]]:
    root = typer.main.get_command(app)
    for path, cmd in _commands(root):
        yield path, "--no-such-option", "unknown", [*path, "--no-such-option"]
        if path in LONG_RUNNING:  # a value that happens to be valid would serve forever in-process
            continue
        for p in cmd.params:
            if getattr(p, "is_flag", False):
                continue
            for label, value in _bad_values(p.bare_type(), tmp):
                if p.param_type_name == "argument":
                    args = [*path, *_fill_required(cmd, p.name, tmp), *_required_arguments(cmd, p.name, value)]
                    yield path, p.name, label, args
                else:
                    opt = p.opts[0]
                    args = [*path, *_fill_required(cmd, p.name, tmp), opt, value,
                            *_required_arguments(cmd, "", "")]
                    yield path, opt, label, args


#: commands that serve until stopped: the SIGALRM timeout cannot stop uvicorn's loop in-process,
#: so only their unknown-option case runs here (their own tests cover bad values).
LONG_RUNNING = {("play",)}


def _alarm(signum, frame):
    raise _CaseTimeout()


@pytest.fixture()
def isolated(tmp_path, monkeypatch):
    """An empty cache, no LLM server, and a scratch working directory."""
    monkeypatch.setenv("BELIEFGATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BELIEFGATE_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("BELIEFGATE_DEBUG", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    # CliRunner rebuilds the click tree of the whole app on every call (~0.1 s); build it once
    import typer.testing

    if hasattr(typer.testing, "_get_command"):
        command = typer.main.get_command(app)
        monkeypatch.setattr(typer.testing, "_get_command", lambda _app: command)
    return tmp_path


class _TimedOut:
    """The result of a case stopped by the timeout."""

    exception = _CaseTimeout()
    output = ""
    exit_code = None


def _invoke(args: List[str]):
    runner = CliRunner()
    old = signal.signal(signal.SIGALRM, _alarm)
    # re-fires every 0.5 s: an alarm raised inside a callback whose exceptions are ignored is not lost
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT_S, 0.5)
    try:
        return runner.invoke(app, args, catch_exceptions=True)
    except _CaseTimeout:
        return _TimedOut()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, old)


def _problem(result) -> str | None:
    text = result.output
    if isinstance(result, _TimedOut):
        return "still running after the timeout (the bad value was accepted)"
    if "Traceback (most recent call last)" in text:
        return "printed a traceback"
    if INTERNAL_ERROR in text:
        return "an unexpected exception reached the boundary"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"raised {type(result.exception).__name__}: {result.exception}"
    if result.exit_code not in (0, 1, 2):
        return f"exit status {result.exit_code}"
    if result.exit_code == 2 and sum(line.startswith("error:") for line in text.splitlines()) != 1:
        return "exit 2 without exactly one `error:` line"
    return None


def test_no_command_prints_a_traceback(isolated):
    failures: Dict[str, str] = {}
    n = 0
    import importlib

    for name in HEAVY_IMPORTS:
        importlib.import_module(name)
    for path, opt, label, args in _cases(isolated):
        n += 1
        if (" ".join(path), opt, label) in VALID:
            continue
        _garbage(isolated)
        result = _invoke(args)
        problem = _problem(result)
        if problem is not None:
            tail = " | ".join(result.output.strip().splitlines()[-3:])
            failures[f"beliefgate {' '.join(args)}"] = f"{problem}: {tail[:300]}"
    assert n > 200  # the walk reached every command (about 25) with several values each
    assert not (isolated / "missing").exists()  # no command created the missing folders
    assert not failures, "\n".join(f"{k}\n    -> {v}" for k, v in failures.items())


def test_walk_covers_every_registered_command():
    names = {" ".join(p) for p, _ in _commands(typer.main.get_command(app))}
    for expected in ("episode", "serve", "eval run", "eval report", "eval human", "data fetch-human", "layouts"):
        assert expected in names


# ----------------------------------------------------------------------------- the reported cases
@pytest.mark.parametrize("args, needle", [
    (["episode", "--layout", "cramped_room", "--seed", "-1"], "'--seed'"),
    (["episode", "--layout", "cramped_room", "--log", "{tmp}"], "is a directory"),
    (["episode", "--layout", "cramped_room", "--ego", "bayes-belief:bogus"], "'bogus'"),
    (["episode", "--layout", "cramped_room", "--ego", "periodic-0"], "period"),
    (["episode", "--layout", "cramped_room", "--log", "/nonexistent/dir/x.jsonl"], "/nonexistent/dir"),
    (["episode", "--layout", "moon_base", "--horizon", "3"], "moon_base"),
    (["serve", "--log-level", "bogus"], "'bogus'"),
    (["eval", "run", "/nonexistent/grid.yaml", "--out", "{tmp}/run"], "/nonexistent/grid.yaml"),
])
def test_bad_input_is_one_line_and_exit_2(isolated, args, needle):
    args = [a.replace("{tmp}", str(isolated)) for a in args]
    result = _invoke(args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], result.output
    assert not Path("/nonexistent").exists()  # --log under a missing folder creates nothing


def test_runtime_failure_is_one_line_exit_1_and_debug_shows_the_traceback(isolated):
    # the BC proxy needs the human data, which this empty cache does not hold
    args = ["episode", "--layout", "cramped_room", "--partner", "bc:cramped_room", "--horizon", "3"]
    result = _invoke(args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output
    assert lines[0].startswith("error:") and "fetch-human" in lines[0]
    debug = _invoke(["--debug", *args])
    assert debug.exit_code == 1 and "Traceback (most recent call last)" in debug.output
    assert "BCModelError" in debug.output and debug.output.strip().splitlines()[-1].startswith("error:")


def test_an_unexpected_exception_is_one_internal_error_line(isolated, monkeypatch):
    import beliefgate.eval.episode as episode

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(episode, "run_episode", broken)
    result = _invoke(["episode", "--layout", "cramped_room", "--horizon", "3"])
    assert result.exit_code == 1
    assert result.output.strip() == ("internal error: ZeroDivisionError: a bug (a bug in beliefgate; rerun with "
                                     "--debug for the traceback)")


def test_the_boundary_maps_error_kinds():
    from pydantic import BaseModel, Field, ValidationError

    from beliefgate.console import classify
    from beliefgate.errors import InputError, LookupFailure, RuntimeFailure

    class M(BaseModel):
        x: int = Field(ge=0)

    try:
        M(x=-3)
    except ValidationError as exc:
        code, msg = classify(exc)
    assert code == 2 and "x" in msg and "-3" in msg and "\n" not in msg
    assert classify(InputError("bad --x 3"))[0] == 2
    assert classify(LookupFailure("unknown layout 'moon'")) == (2, "unknown layout 'moon'")
    assert classify(RuntimeFailure("server down"))[0] == 1
    assert classify(IsADirectoryError(21, "Is a directory", "/tmp"))[0] == 1


def test_a_closed_pipe_is_not_an_error(tmp_path):
    """`beliefgate ... | head`: when the reader goes away the command stops quietly with the
    status of a process killed by SIGPIPE (141), not 'error: [Errno 32] Broken pipe'."""
    import subprocess
    import sys

    script = tmp_path / "pipe.py"
    script.write_text(
        "import beliefgate.eval.episode as episode\n"
        "def flood(*a, **k):\n"
        "    raise BrokenPipeError(32, 'Broken pipe')\n"
        "episode.run_episode = flood\n"
        "from beliefgate.cli import main\n"
        "main()\n")
    proc = subprocess.run([sys.executable, str(script), "episode", "--layout", "cramped_room", "--horizon", "3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 141 and "Broken pipe" not in proc.stderr and "error" not in proc.stderr, proc.stderr
