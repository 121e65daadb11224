"""The consoles, the error exit and the error boundary shared by every ``beliefgate`` command.

:class:`BoundaryGroup` is the click group class of the root ``beliefgate`` app. Every
command (also those of sub-groups and of modules registered later) runs inside its
``invoke``, so one place turns every error into one line on stderr and an exit status:

* 2 -- bad input: :class:`~beliefgate.errors.InputError`, :class:`~beliefgate.errors.LookupFailure`,
  a pydantic ``ValidationError``, and click's usage errors (bad option values, unknown options);
* 1 -- a runtime failure: :class:`~beliefgate.errors.RuntimeFailure` (any other
  :class:`~beliefgate.errors.BeliefgateError` too) and ``OSError``;
* 1 -- anything else is a bug: ``internal error: <type>: <message>``.

``beliefgate --debug ...`` (or ``BELIEFGATE_DEBUG=1``) prints the traceback before that line.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional, Sequence, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer import _click as tclick  # typer >= 0.24 vendors click: its exceptions are typer's own classes
from typer.core import TyperGroup

try:  # the stand-alone click package (a dependency of dask); its usage errors count as bad input too
    import click as _click_pkg
except ImportError:  # pragma: no cover - click is not installed
    _click_pkg = None

#: click exceptions (typer's vendored and, when installed, the stand-alone package's)
_CLICK_EXCEPTIONS = tuple(c for c in (tclick.exceptions.ClickException,
                                      getattr(_click_pkg, "ClickException", None)) if c is not None)
_BAD_PARAMETER = tuple(c for c in (tclick.exceptions.BadParameter, getattr(_click_pkg, "BadParameter", None))
                       if c is not None)
_PASS_THROUGH = (typer.Exit, typer.Abort, tclick.exceptions.ClickException, KeyboardInterrupt)

def _piped_width() -> Optional[int]:
    """Width for stdout: the terminal's; at least 140 when piped to a file or a program
    (``$COLUMNS`` if wider), where rich would otherwise assume 80 and cut the wider tables'
    headers."""
    if sys.stdout.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    return max(140, int(columns)) if columns.isdigit() else 140


T = TypeVar("T")

#: tables and results (stdout)
console = Console(width=_piped_width())
#: progress, notes and errors (stderr), so that ``--json`` output stays clean
err_console = Console(stderr=True)

#: prefix of the line an unexpected exception (a bug) prints; tests look for it
INTERNAL_ERROR = "internal error:"


def one_line(message: str) -> str:
    """``message`` with its lines joined by ``; `` (an error is one line)."""
    parts = [p.strip() for p in str(message).splitlines() if p.strip()]
    return "; ".join(parts) if parts else "(no message)"


def _print_error(message: str, label: str = "error:") -> None:
    # soft_wrap: never break the line at the console width; Text: the message is not rich markup
    err_console.print(Text.assemble((label, "bold red"), " ", one_line(message)), soft_wrap=True, highlight=False)


def say(label: str, message: str, style: str = "yellow", target: Optional[Console] = None) -> None:
    """Print ``label message`` with only the label styled: ``message`` (paths, names, a tree's
    text) is never read as rich markup, so ``[/red]`` in it prints as written."""
    (target or err_console).print(Text.assemble((label, style), " " if label else "", str(message)),
                                  soft_wrap=True, highlight=False)


def say_failure(line: str, target: Optional[Console] = None) -> None:
    """A failed episode's line, whole, in bold red (never read as markup)."""
    (target or err_console).print(Text(line, style="bold red"), soft_wrap=True, highlight=False)


def report_line(line: str, target: Optional[Console] = None) -> None:
    """A grid runner's report line: ``FAILED ...`` in bold red, anything else as a note."""
    if line.startswith("FAILED"):
        say_failure(line, target)
    else:
        say("note:", line, "yellow", target)


#: figure formats the ``--plot``-style options write (matplotlib's, by file suffix)
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")


def check_figure_path(flag: str, path: Optional[Path]) -> None:
    """A figure file must end in a format matplotlib writes: checked before any work, so that a
    long run does not end in an error (``.txt``) or write another file than the one named (``fig``
    without a suffix becomes ``fig.png``)."""
    if path is not None and Path(path).suffix.lower() not in FIGURE_SUFFIXES:
        fail(f"{flag} {path}: a figure file needs one of the suffixes {', '.join(FIGURE_SUFFIXES)}")


def check_unique(flag: str, values: Optional[Sequence[str]], shown: Optional[str] = None,
                 key: Optional[Callable[[str], str]] = None) -> None:
    """Refuse a repeated value of a repeatable option (a layout given twice would pool the same
    episodes twice and narrow every interval); ``shown``: how the user wrote the values; ``key``:
    what makes two spellings the same thing (a layout's alias, a file's resolved path)."""
    from beliefgate.validation import repeats

    repeated = repeats(values, key)
    if repeated:
        where = f"{flag} {shown!r}" if shown is not None else flag
        text = ", ".join(k if len(set(vs)) == 1 else f"{k} (as {', '.join(dict.fromkeys(vs))})"
                         for k, vs in sorted(repeated))
        fail(f"{where}: {text} given more than once")


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` (one line) on stderr and exit with ``code`` (2: bad user input)."""
    _print_error(message)
    raise typer.Exit(code)


def option_items(items, flag: str = "--env-option") -> dict:
    """``KEY=VALUE`` items (``--env-option``) as a dict, VALUE read as JSON (else kept as text); a
    malformed item exits 2 naming ``flag``."""
    import json

    out = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            fail(f"{flag} must be KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(text)
        except json.JSONDecodeError:
            out[key.strip()] = text
    return out


def check_output_path(flag: str, path: Optional[Path], folder: bool = False) -> None:
    """Refuse an output path that cannot be written, before any work: one line naming ``flag``
    and ``path``, exit 2. The one check of every command's output files and folders (see
    :func:`beliefgate.fileio.output_path_problem`): a file path that is a directory, a folder
    path that is a file, a file's parent folder that does not exist (no directory tree is
    created from a typo in a file name; output *folders* are created with their parents), or
    a folder in which nothing can be created (``/proc``, a read-only mount)."""
    from beliefgate.fileio import output_path_problem

    if path is None:
        return
    problem = output_path_problem(path, folder=folder)
    if problem is not None:
        fail(f"{flag} {path}: {problem}")


def check_not_input(flag: str, out: Optional[Path], inputs: Sequence[Path]) -> None:
    """Refuse an output path that names one of the command's input files (``report ep.jsonl -o
    ep.jsonl`` replaced the log by its own page): one line, exit 2, before any work."""
    if out is None:
        return
    for source in inputs:
        try:
            same = os.path.samefile(out, source) if out.exists() and source.exists() else \
                out.resolve() == source.resolve()
        except OSError:
            continue  # an input that cannot be read is refused by its own loader, naming it
        if same:
            fail(f"{flag} {out}: is the input {source}; writing there would destroy it (give another path)")


def load_input(flag: str, path: Path, loader: Callable[[Path], T]) -> T:
    """``loader(path)`` for an input file named by ``flag``; a bad file (missing, not text, invalid:
    any :class:`~beliefgate.errors.InputError`) is one line naming ``flag`` and ``path``, exit 2."""
    from beliefgate.errors import InputError

    try:
        return loader(path)
    except InputError as exc:
        message = str(exc)
        if message.startswith(str(path)):  # "PATH: not UTF-8 text (...)"
            fail(f"{flag} {message}")
        fail(f"{flag}: {message}" if str(path) in message else f"{flag} {path}: {message}")


def progress_bar(*columns: Any, disable: bool = False):
    """A transient rich progress bar on stderr (``columns``: rich's default when none).

    It is drawn only on an interactive terminal: elsewhere (a pipe, a file, a test) rich draws
    nothing but ends with an empty line, which would make an error that follows two lines.
    """
    from rich.progress import Progress

    return Progress(*columns, console=err_console, transient=True,
                    disable=disable or not err_console.is_interactive)


def validation_message(exc: Any) -> str:
    """One line for a pydantic ``ValidationError`` that reached the boundary: the model's name, then
    :func:`beliefgate.validation.describe` (the first error's field, reason and value, the rest counted)."""
    from beliefgate.validation import describe

    return describe(exc, None, source=exc.title).message


def classify(exc: BaseException) -> tuple[int, str]:
    """``(exit status, one-line message)`` of an exception that reached the boundary."""
    from pydantic import ValidationError

    from beliefgate.errors import BeliefgateError, InputError, LookupFailure

    if isinstance(exc, ValidationError):
        return 2, validation_message(exc)
    if isinstance(exc, _CLICK_EXCEPTIONS):
        return (2 if isinstance(exc, _BAD_PARAMETER) or exc.exit_code == 2 else 1), exc.format_message()
    if isinstance(exc, (InputError, LookupFailure)):
        return 2, str(exc)
    if isinstance(exc, BeliefgateError):
        return 1, str(exc)
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) not in str(exc) else ""
        return 1, f"{exc}{where}"
    return 1, f"{type(exc).__name__}: {exc} (a bug in beliefgate; rerun with --debug for the traceback)"


def _debug_requested(ctx: Optional[tclick.Context]) -> bool:
    import os

    if os.environ.get("BELIEFGATE_DEBUG", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    while ctx is not None:
        if ctx.params.get("debug"):
            return True
        ctx = ctx.parent
    return False


class BoundaryGroup(TyperGroup):
    """The root group: runs every command inside the error boundary (see the module docstring)."""

    def invoke(self, ctx: tclick.Context) -> Any:
        try:
            return super().invoke(ctx)
        except _PASS_THROUGH:
            raise  # click's own exits and usage errors: handled (as one line) by main()
        except BrokenPipeError:  # the reader went away (`... | head`): not an error of ours
            _exit_broken_pipe()
        except Exception as exc:  # noqa: BLE001 -- the CLI's one error boundary: every error becomes one line + a status
            code, message = classify(exc)
            if _debug_requested(ctx):
                traceback.print_exception(exc, file=sys.stderr)
            internal = code == 1 and not isinstance(exc, OSError) and not _is_beliefgate(exc)
            _print_error(message, INTERNAL_ERROR if internal else "error:")
            raise typer.Exit(code) from None

    def main(self, args: Optional[Sequence[str]] = None, prog_name: Optional[str] = None,
             complete_var: Optional[str] = None, standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                              **extra)
        except BrokenPipeError:  # `beliefgate ... --help | head`
            _exit_broken_pipe()
        except tclick.exceptions.NoArgsIsHelpError as exc:  # `beliefgate` / `beliefgate eval`: the help text
            exc.show()
            code = exc.exit_code
        except tclick.exceptions.ClickException as exc:  # usage errors: one line naming the value + where help is
            hint = ""
            ctx = getattr(exc, "ctx", None)
            if ctx is not None and isinstance(exc, tclick.exceptions.UsageError):
                hint = f" (see `{ctx.command_path} --help`)"
            _print_error(exc.format_message() + _given_value(exc) + hint)
            code = exc.exit_code
        except typer.Abort:
            _print_error("aborted")
            code = 1
        else:
            if not standalone_mode:
                return rv
            code = rv if type(rv) is int else 0  # typer returns the exit status of a raised typer.Exit
        if not standalone_mode:
            return code
        sys.exit(code)


def _exit_broken_pipe() -> None:
    """Stop quietly when stdout's reader has closed the pipe (``| head``), with the status a
    process killed by SIGPIPE has (141); stdout goes to /dev/null so the exit flush cannot fail."""
    import io
    import os

    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):  # no real stdout (a test runner's buffer)
        fd = None
    if fd is not None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    sys.exit(141)


def _given_value(exc: BaseException) -> str:
    """``, got VALUE`` for a bad option value that typer checked with pydantic (whose message,
    ``Input should be greater than or equal to 1``, does not say what was given); else ``""``."""
    from pydantic import ValidationError

    cause = exc.__cause__
    if not isinstance(cause, ValidationError) or not cause.errors():
        return ""
    first = cause.errors()[0]
    if "input" not in first:
        return ""
    value = first["input"]
    return f", got {value if isinstance(value, str) else repr(value)}"


def _is_beliefgate(exc: BaseException) -> bool:
    from beliefgate.errors import BeliefgateError

    return isinstance(exc, BeliefgateError)


__all__ = ["console", "err_console", "fail", "one_line", "check_output_path", "load_input", "progress_bar",
           "classify", "validation_message", "BoundaryGroup", "INTERNAL_ERROR"]
