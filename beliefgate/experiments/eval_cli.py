"""``beliefgate eval run|report``: evaluation grids and their report.

Registered by :mod:`beliefgate.cli` through :func:`register`. Heavy imports stay
inside the commands so that ``beliefgate --help`` stays fast. Bad input (grid
file, names, scheduler address, baseline) exits with code 2 and a message on
stderr before any episode runs; failed episodes exit with code 1 after the
results table is written; an interrupted run exits with 130 and keeps every
finished episode.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from beliefgate.console import check_output_path, console, err_console, fail as _fail, progress_bar, report_line, say
from beliefgate.limits import MAX_RESAMPLES


def _fmt(value: float, digits: int = 2) -> str:
    return "–" if value != value else f"{value:.{digits}f}"


def _summary_table(rows, title: str) -> Table:
    from rich import box

    from beliefgate.eval.runner import summarize

    table = Table(title=title, box=box.SIMPLE_HEAD)
    table.add_column("condition", overflow="fold")
    cols = [("episodes", "n", 0), ("reward", "reward", 1), ("deliveries", "D", 2), ("replans", "repl", 1),
            ("map_accuracy", "acc", 2), ("gap_rate", "gap", 2), ("comp3", "C@3", 2),
            ("duplicate_rate", "dup", 2), ("intent_accuracy", "IA", 2)]
    for _, label, _ in cols:
        table.add_column(label, justify="right", no_wrap=True)
    for entry in summarize(rows):
        table.add_row(entry["agent"], *[str(entry[k]) if k == "episodes" else _fmt(entry[k], d) for k, _, d in cols])
    table.caption = ("n episodes; D soups; repl replans/episode; acc teammate-skill accuracy; gap belief-action gap "
                     "rate; C@3 Comp@3; dup duplicate-skill rate; IA partner-intent accuracy")
    return table


def _write_report(out_dir: Path, path: Path, baseline: Optional[str], n_boot: int, seed: int, unit: str):
    from beliefgate.eval.report import Report, ReportError, gate_firings_by_condition
    from beliefgate.eval.runner import RunError, check_results, load_grid_record, load_results

    try:
        rows = load_results(out_dir)
        record = load_grid_record(out_dir)
        note = check_results(rows, record, out_dir)
        if note is not None:
            say("note:", f"{note}; the report covers the finished episodes only")
        spec = record.get("spec", {})
        title = f"Evaluation report: {spec.get('name', 'grid')}"
        description = spec.get("description", "")
        if note is not None:
            description = (description + "\n\n" if description else "") + f"**{note[0].upper() + note[1:]}.**"
        rep = Report(rows, baseline, record.get("conditions"), n_boot, seed, unit, title=title, source=str(out_dir),
                     description=description)
        rep.firings = gate_firings_by_condition(out_dir, rows, rep.conditions)
        text = rep.markdown()
    except (RunError, ReportError) as exc:
        _fail(str(exc))
    if path is not None:  # checked by check_output_path before any work
        from beliefgate.fileio import atomic_write

        atomic_write(path, text.encode("utf-8"), make_parents=False)
    return text, rep


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``eval run`` and ``eval report`` to the shared ``eval`` group."""

    @eval_app.command("run")
    def run(
        grid: Path = typer.Argument(..., help="grid file (YAML or JSON; see docs/eval.md)"),
        out: Path = typer.Option(..., "--out", help="run directory (created; rerun the same command to resume)"),
        workers: Optional[int] = typer.Option(None, "--workers", min=1,
                                              help="worker processes (default: CPU count; 1 = this process)"),
        scheduler: Optional[str] = typer.Option(None, "--scheduler",
                                                help="Dask: 'local' (a LocalCluster on 127.0.0.1) or the address "
                                                     "of an existing scheduler, e.g. tcp://10.0.0.5:8786"),
        report: Optional[Path] = typer.Option(None, "--report", help="also write the markdown report here"),
        baseline: Optional[str] = typer.Option(None, "--baseline", help="baseline condition of --report "
                                               "(default: the grid's first agent)"),
        as_json: bool = typer.Option(False, "--json", help="print the run summary as JSON"),
        force: bool = typer.Option(False, "--force", help="run into a directory that holds another grid's results "
                                   "(they are moved into DIR/superseded-<digest>-<time>/, not deleted)"),
        memory: Optional[Path] = typer.Option(None, "--memory", help="partner-memory store (SQLite; created when "
                                              "missing): every agent with a gate plays each (condition, layout, "
                                              "partner, seat) sequence with memory, in seed order"),
    ) -> None:
        """Play a grid of agents x layouts x partners x seeds x seats; write logs and a results table."""
        check_output_path("--out", out, folder=True)  # outputs first: nothing runs for a bad path
        check_output_path("--report", report)

        from beliefgate.eval.grid import GridError, load_grid, resolve_grid
        from contextlib import ExitStack

        from beliefgate.eval.runner import RunError, check_run_dir, lock_run_dir, run_grid
        from beliefgate.eval.ui import progress_columns, start_executor

        try:
            spec = load_grid(grid)
            resolved = resolve_grid(spec)
        except GridError as exc:
            _fail(str(exc))
        if not resolved.episodes:
            _fail(f"{grid}: the grid has no playable episode ({'; '.join(resolved.skipped) or 'empty'})")
        if memory is not None:  # the store's faults: one line, before any worker starts
            from beliefgate.agents.memory import MemoryStore

            MemoryStore(memory).close()
        if baseline is not None and baseline not in resolved.conditions:
            _fail(f"--baseline {baseline!r} is not an agent of the grid; choose from {', '.join(resolved.conditions)}")
        run_lock = ExitStack()  # one run per --out: taken before any worker starts, held to the end
        try:
            run_lock.enter_context(lock_run_dir(out))
            if not force:
                check_run_dir(out, resolved)
        except RunError as exc:
            run_lock.close()
            _fail(str(exc))
        api_key = os.environ.get("OPENAI_API_KEY") if spec.llm is not None else None
        executor = start_executor(workers, scheduler, resolved.skipped)
        columns = progress_columns()
        try:
            with run_lock, executor, progress_bar(*columns) as bar:
                task = bar.add_task("episodes", total=None)
                err_console.print(f"{len(resolved.episodes)} episodes on {executor.description} -> {out}")

                def progress(done: int, total: int, label: str) -> None:
                    bar.update(task, total=total, completed=done, description="episodes")

                def note(line: str) -> None:
                    report_line(line, bar.console)

                summary = run_grid(resolved, out, executor, progress=progress, report=note, api_key=api_key,
                                   other_grid="aside" if force else "refuse", memory=memory)
        except KeyboardInterrupt:
            say("interrupted:", f"finished episodes are kept in {out}; rerun the same command to continue",
                "bold yellow")
            raise typer.Exit(130)
        except RunError as exc:
            _fail(str(exc))
        if report is not None:
            _write_report(out, report, baseline, 10_000, 0, "seed")
        if as_json:
            data = summary.to_dict()
            data["skipped_grid_cells"] = resolved.skipped
            print(json.dumps(data, indent=2))
        else:
            console.print(_summary_table(summary.rows, f"{spec.name}: {len(summary.rows)}/{summary.episodes} "
                                                       f"episodes, means over layouts, partners, seeds and seats"))
            console.print(f"played {summary.ran}, already done {summary.skipped_done}, re-scored "
                          f"{summary.rescored}, failed {len(summary.failed)} in {summary.wall_s:.1f} s "
                          f"({summary.executor})")
            total, hit = summary.fallbacks
            if total:
                say("note:", f"{total} fallbacks in {hit} of {len(summary.rows)} episodes (model or tree calls "
                             f"answered by the fallback; `beliefgate eval report {out}` counts them by role and reason)")
            console.print("results: " + ", ".join(str(p) for p in summary.tables)
                          + (f"; report: {report}" if report is not None else "")
                          + f"  (next: `beliefgate eval report {out}`)")
        if summary.failed:
            raise typer.Exit(1)

    @eval_app.command("report")
    def report_cmd(
        run_dir: Path = typer.Argument(..., help="run directory of `beliefgate eval run`"),
        baseline: Optional[str] = typer.Option(None, "--baseline",
                                               help="condition the others are compared with (default: the grid's "
                                                    "first agent)"),
        out: Optional[Path] = typer.Option(None, "--out", help="write the markdown here instead of printing it"),
        n_boot: int = typer.Option(10_000, "--bootstrap", min=100, max=MAX_RESAMPLES, help="bootstrap resamples"),
        seed: int = typer.Option(0, "--seed", min=0, help="seed of the bootstrap resampling"),
        unit: str = typer.Option("seed", "--unit", help="bootstrap unit: 'seed' (matched seeds) or 'episode'"),
        as_json: bool = typer.Option(False, "--json", help="print every paired difference as JSON"),
        html: bool = typer.Option(False, "--html", help="also write one self-contained HTML report per "
                                                        "episode (RUN_DIR/reports/index.html links them)"),
    ) -> None:
        """Markdown tables (BayesBelief Tables 1-4) with paired bootstrap CIs against a baseline."""
        if not run_dir.is_dir():
            _fail(f"{run_dir} is not a directory (give the --out of `beliefgate eval run`)")
        if unit not in ("seed", "episode"):
            _fail(f"--unit must be 'seed' or 'episode', got {unit!r}")
        check_output_path("--out", out)
        if html:
            check_output_path("--html", run_dir / "reports", folder=True)
        text, rep = _write_report(run_dir, out, baseline, n_boot, seed, unit)
        if as_json:
            print(json.dumps({"baseline": rep.baseline, "conditions": rep.conditions, "bootstrap": n_boot,
                              "seed": seed, "unit": unit, "differences": rep.diffs}, indent=2))
        elif out is None:
            print(text, end="")
        else:
            console.print(f"report written to {out}")
        if html:
            from beliefgate.viewer.report import write_episode_reports

            res = write_episode_reports(run_dir)
            failed = len(res["failed"])
            console.print(f"{len(res['reports'])} episode reports: {res['index']}"
                          + (f" ({failed} logs could not be read; listed in the index)" if failed else ""))
