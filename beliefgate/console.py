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
from typing import Any, NoReturn, Optional, Sequence

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


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` (one line) on stderr and exit with ``code`` (2: bad user input)."""
    _print_error(message)
    raise typer.Exit(code)


def check_output_path(flag: str, path: Optional[Path], folder: bool = False) -> None:
    """Refuse an output path that cannot be written, before any work: a file path that is a
    directory (or a folder path that is a file), or one whose parent folder does not exist
    (beliefgate creates no directory trees from a typo)."""
    if path is None:
        return
    if folder:
        if path.exists() and not path.is_dir():
            fail(f"{flag} {path} exists and is not a directory")
    elif path.is_dir():
        fail(f"{flag} {path} is a directory; give a file path such as {path / ('out' + (path.suffix or '.json'))}")
    parent = path.parent if str(path.parent) else Path(".")
    if not path.exists() and not parent.is_dir():
        fail(f"{flag} {path}: the folder {parent} does not exist (create it first)")


def validation_message(exc: Any) -> str:
    """One line for a pydantic ``ValidationError``: the first error's location, message and input."""
    errors = exc.errors()
    if not errors:
        return str(exc)
    first = errors[0]
    loc = ".".join(str(x) for x in first.get("loc", ())) or exc.title
    text = f"{exc.title}: {loc}: {first.get('msg')}"
    if "input" in first and not isinstance(first["input"], dict):
        text += f", got {first['input']!r}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more error(s))"
    return text


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
        except tclick.exceptions.NoArgsIsHelpError as exc:  # `beliefgate` / `beliefgate eval`: the help text
            exc.show()
            code = exc.exit_code
        except tclick.exceptions.ClickException as exc:  # usage errors: one line naming the value + where help is
            hint = ""
            ctx = getattr(exc, "ctx", None)
            if ctx is not None and isinstance(exc, tclick.exceptions.UsageError):
                hint = f" (see `{ctx.command_path} --help`)"
            _print_error(exc.format_message() + hint)
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


def _is_beliefgate(exc: BaseException) -> bool:
    from beliefgate.errors import BeliefgateError

    return isinstance(exc, BeliefgateError)


__all__ = ["console", "err_console", "fail", "one_line", "classify", "validation_message", "BoundaryGroup",
           "INTERNAL_ERROR"]
