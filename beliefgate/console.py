"""The consoles and the error exit shared by every ``beliefgate`` command."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

#: tables and results (stdout)
console = Console()
#: progress, notes and errors (stderr), so that ``--json`` output stays clean
err_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code`` (2: bad user input)."""
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)
