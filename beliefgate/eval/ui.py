"""Small presentation helpers shared by the evaluation commands (progress bars, executors, JSON)."""

from __future__ import annotations

from typing import Tuple


def progress_columns() -> Tuple:
    """The rich progress-bar columns of long episode runs: label, bar, n/N, elapsed, ETA."""
    from rich.progress import (BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    return (TextColumn("{task.description}", style="bold"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())


def start_executor(workers, scheduler, skipped=()):
    """Report the grid's skipped entries, then build the executor (exit 2 on a bad choice)."""
    from beliefgate.console import fail, say
    from beliefgate.eval.executors import ExecutorError, make_executor

    for line in skipped:
        say("skip:", line)
    try:
        return make_executor(workers, scheduler)
    except ExecutorError as exc:
        fail(str(exc))


def print_json(data: dict, plots=()) -> None:
    """Print a result dictionary as JSON on stdout, with the plot files written for it."""
    import json

    print(json.dumps({**data, "plots": [str(p) for p in plots]}, indent=2))
