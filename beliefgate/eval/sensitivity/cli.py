"""``beliefgate sensitivity oat|global``: sensitivity analyses of the gate on trajectory logs
(and ``oat --closed-loop GRID.yaml``: the one-at-a-time sweep played through the evaluation harness).

Registered by :mod:`beliefgate.cli` through :func:`register` (``beliefgate.eval.sensitivity_cli``
is its deprecated alias). Heavy imports (NumPy
work, SALib, matplotlib) stay inside the commands so that ``beliefgate --help``
stays fast. Everything is validated (ranges, logs, base parameters) before any
replay starts; bad input exits with code 2 and a message on stderr.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from beliefgate.console import (check_output_path, console, err_console, fail as _fail, load_input, progress_bar,
                                report_line, say, say_failure)
from beliefgate.limits import MAX_GLOBAL_N, MAX_HORIZON, MAX_OAT_VALUES, MAX_RESAMPLES
from beliefgate.eval.ui import print_json, progress_columns, start_executor


LOGS_HELP = ("trajectory logs (JSONL from `beliefgate episode --log`) or directories of them; parameter "
             "ranges NAME=... may also follow --param(s) here")


SHORT_OUTPUTS = {"interrupts_per_episode": "intr/ep", "detection_delay": "delay",
                 "false_alarms_per_100": "FA/100", "detection_rate": "detected",
                 "map_accuracy": "MAP acc", "mean_confidence": "conf"}


def _split_args(logs: List[str], params: List[str]):
    """Positional arguments that look like ``NAME=...`` and are not files are ranges
    (so ``--params a=0:1 b=2:3 LOG`` works as written in the docs)."""
    from beliefgate.eval.sensitivity import looks_like_range

    paths, ranges = [], list(params)
    for item in logs:
        if looks_like_range(item) and not Path(item).exists():
            ranges.append(item)
        else:
            paths.append(item)
    return paths, ranges


def _load_base(path: Optional[Path]):
    from beliefgate.beliefs.gate import GateParams

    if path is None:
        return GateParams()
    return load_input("--base", path, GateParams.load)


def _prepare(logs: List[str], params: List[str], base_path: Optional[Path], partner: Optional[int], mode: str):
    """Validate ranges and logs, then read the logs (progress on stderr)."""
    from beliefgate.envs.trajlog import LogFormatError
    from beliefgate.eval.sensitivity import SensitivityError, load_episodes, parse_ranges, resolve_log_paths

    paths, texts = _split_args(logs, params)
    base = _load_base(base_path)
    try:
        ranges = parse_ranges(texts, mode, base)
        files = resolve_log_paths(paths)
    except SensitivityError as exc:
        _fail(str(exc))
    try:
        with progress_bar() as bar:
            task = bar.add_task("reading logs", total=len(files))

            def progress(i, n, label):
                bar.update(task, total=n, completed=i, description=label)

            episodes = load_episodes(files, partner, base, progress)
    except (LogFormatError, SensitivityError) as exc:
        _fail(str(exc))
    return base, ranges, episodes


def _run_with_bar(label: str, fn):
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with progress_bar(TextColumn("[progress.description]{task.description}"), BarColumn(),
                      TextColumn("{task.completed}/{task.total} belief passes"), TimeElapsedColumn(),
                      TimeRemainingColumn()) as bar:
        task = bar.add_task(label, total=None)

        def progress(i, n, text):
            bar.update(task, total=n, completed=i, description=f"{label}: {text}")

        return fn(progress)


def _cell(x: float, fmt: str = ".2f") -> str:
    return "—" if x is None or not math.isfinite(x) else format(x, fmt)


CLOSED_LOOP_SHORT = {"reward": "reward", "deliveries": "D", "replans": "repl/ep", "interrupts": "intr/ep",
                     "gap_rate": "gap", "map_accuracy": "MAP acc", "ref_map_accuracy": "ref acc"}


#: outputs of the closed-loop table (the JSON and the plots also hold ``ref_map_accuracy``)
CLOSED_LOOP_TABLE = ("reward", "deliveries", "replans", "interrupts", "gap_rate", "map_accuracy")


def _ci_cell(stats: dict, wide: bool) -> str:
    """``mean ±h`` (h: half the CI width), on two lines when the console is narrow."""
    m, lo, hi = stats["mean"], stats["ci_low"], stats["ci_high"]
    if m is None or not math.isfinite(m):
        return "—"
    return f"{m:.2f}{' ' if wide else chr(10)}±{(hi - lo) / 2:.2f}"


def _closed_loop(grid: Path, logs: List[str], params: List[str], base_path: Optional[Path],
                 partner: Optional[int], include_default: bool, out: Optional[Path], workers: Optional[int],
                 scheduler: Optional[str], n_boot: int, seed: int, as_json: bool, plots: Optional[Path]) -> None:
    """``oat --closed-loop GRID.yaml``: validate everything, then play the sweep through the harness."""
    from beliefgate.eval.grid import GridError
    from beliefgate.eval.runner import RunError
    from beliefgate.eval.sensitivity import (SensitivityError, plan_closed_loop, plot_closed_loop,
                                             run_closed_loop_oat)

    paths, texts = _split_args(logs, params)
    if paths:
        _fail(f"--closed-loop plays the grid's episodes and takes no LOG arguments (got {', '.join(paths)})")
    if base_path is not None:
        _fail("--base does not apply with --closed-loop: put the base configuration in the grid's `gate:` mapping")
    if partner is not None:
        _fail("--partner does not apply with --closed-loop (the partner is the grid's)")
    if out is None:
        _fail("--closed-loop needs --out DIR (one resumable run directory per configuration)")
    check_output_path("--out", out, folder=True)
    try:
        plan = plan_closed_loop(grid, texts, include_default)
    except (GridError, SensitivityError) as exc:
        _fail(str(exc))
    executor = start_executor(workers, scheduler, plan.resolved.skipped)
    columns = progress_columns()
    try:
        with executor, progress_bar(*columns) as bar:
            task = bar.add_task("episodes", total=plan.total_episodes)
            err_console.print(f"{len(plan.configs)} configurations × {plan.episodes_per_config} episodes on "
                              f"{executor.description} -> {out}")

            def progress(done: int, total: int, label: str) -> None:
                bar.update(task, total=total, completed=done, description=label)

            def note(line: str) -> None:
                report_line(line, bar.console)

            result = run_closed_loop_oat(plan, out, executor, progress=progress, report=note, n_boot=n_boot,
                                         seed=seed)
    except KeyboardInterrupt:
        say("interrupted:", f"finished episodes are kept in {out}; rerun the same command to continue",
            "bold yellow")
        raise typer.Exit(130) from None
    except (RunError, SensitivityError) as exc:
        _fail(str(exc))
    written = plot_closed_loop(result, plots) if plots is not None else []
    if as_json:
        data = result.to_dict()
        print_json(data, written)
    else:
        from rich import box

        g = plan.grid_record()
        multi = len(result.agents) > 1
        wide = console.width >= 110 + (24 if multi else 0)
        table = Table(title=f"Closed-loop one-at-a-time sensitivity: grid {g['name']} ({g['digest']}), "
                            f"{plan.episodes_per_config} episodes per value (defaults marked *)",
                      box=box.SIMPLE_HEAD)
        table.add_column("parameter", no_wrap=True)
        table.add_column("value", justify="right", no_wrap=True)
        if multi:
            table.add_column("agent", no_wrap=True)
        for k in CLOSED_LOOP_TABLE:
            table.add_column(CLOSED_LOOP_SHORT[k], justify="right", no_wrap=True)
        for r in plan.ranges:
            block = result.block(r.name)
            for j, row in enumerate(block):
                first = j == 0 or block[j - 1].value != row.value
                v = (f"{row.value:g}" + (" *" if row.is_default else "")) if first else ""
                cells = [_ci_cell(row.stats[k], wide) for k in CLOSED_LOOP_TABLE]
                table.add_row(r.name if j == 0 else "", v, *([row.agent] if multi else []), *cells,
                              style="bold" if row.is_default else None, end_section=j == len(block) - 1)
        table.caption = (f"mean ± half the {int(round(result.conf_level * 100))}% bootstrap CI over episodes "
                         f"({result.n_boot} resamples, seed {result.seed}); seeds {g['seeds']}, seats {g['seats']}, "
                         f"horizon {g['horizon']}; D deliveries, repl replans, intr interrupts, gap belief–action "
                         "gap rate, MAP acc of the ego's own gate (reference-gate accuracy in the JSON)")
        console.print(table)
        ran = sum(v["ran"] for v in result.runs.values())
        done = sum(v["already_done"] for v in result.runs.values())
        console.print(f"played {ran}, already done {done}, failed {len(result.failed)} in {result.elapsed_s:.1f} s "
                      f"({result.executor}); results: {out / 'sensitivity.json'} and one run directory per "
                      f"configuration ({', '.join(c.dirname for c in plan.configs)})")
        for p in written:
            console.print(f"plot: {p}")
        for w in result.warnings:
            say("warning:", w, "bold yellow")
    if result.failed:
        for line in result.failed:
            say_failure(line)
        raise typer.Exit(1)


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add the ``sensitivity`` group (``oat``, ``global``) to the main app."""
    sens = typer.Typer(help="Sensitivity analyses of the gate on logged partner behaviour "
                            "(one-at-a-time; global Sobol / Morris).", no_args_is_help=True)
    app.add_typer(sens, name="sensitivity")

    @sens.command("oat")
    def oat(
        logs: Optional[List[str]] = typer.Argument(None, metavar="LOG...", help=LOGS_HELP),
        param: List[str] = typer.Option(
            [], "--param", "--params", "-p",
            help="NAME=LOW:HIGH:N (N values; add :log or :lin to fix the scale) or NAME=v1,v2,... (repeatable)"),
        base_path: Optional[Path] = typer.Option(None, "--base", help="GateParams JSON for the fixed fields "
                                                                      "(default: the defaults)"),
        partner: Optional[int] = typer.Option(None, help="player index of the partner (default: the non-ego seat)"),
        detect_window: int = typer.Option(10, min=1, max=MAX_HORIZON, help="steps after a hidden switch in which an "
                                                          "interrupt counts as its detection"),
        include_default: bool = typer.Option(True, "--include-default/--no-include-default",
                                             help="add the default value to each grid when missing"),
        closed_loop: Optional[Path] = typer.Option(
            None, "--closed-loop", metavar="GRID.yaml",
            help="play the sweep as real episodes of this evaluation grid (the harness of `beliefgate eval run`) "
                 "instead of replaying logs; needs --out"),
        out: Optional[Path] = typer.Option(None, "--out", metavar="DIR",
                                           help="--closed-loop: run directory, one resumable sub-directory per "
                                                "configuration (rerun the same command to resume)"),
        workers: Optional[int] = typer.Option(None, "--workers", min=1,
                                              help="--closed-loop: worker processes (default: CPU count; "
                                                   "1 = this process)"),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDR|local",
                                                help="--closed-loop: Dask 'local' (LocalCluster on 127.0.0.1) or "
                                                     "a scheduler address"),
        n_boot: int = typer.Option(2000, "--bootstrap", min=10, max=MAX_RESAMPLES,
                                   help="--closed-loop: bootstrap resamples of the per-value CIs"),
        seed: int = typer.Option(0, "--seed", min=0, help="--closed-loop: seed of the bootstrap resampling"),
        as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
        plots: Optional[Path] = typer.Option(None, "--plots", metavar="DIR", help="write one line plot per "
                                                                                  "parameter here"),
    ) -> None:
        """One-at-a-time sweep of gate parameters on replayed logs (a table shaped like BayesBelief's Table 7).

        Each value of each --param is replayed with the other fields at the base
        configuration; reports interrupts per episode, detection delay, detection
        rate and false alarms per 100 steps against the partner's hidden skill
        switches (when the logs carry the true skills), MAP accuracy and mean
        confidence. With --closed-loop GRID.yaml every value is instead played as
        real episodes of the grid (its ego agents get the gate parameters; the base
        is the grid's `gate:` mapping or the defaults), reporting reward,
        deliveries, replans and interrupts per episode, the belief–action gap rate
        and MAP accuracy with bootstrap CIs. Examples:

            beliefgate sensitivity oat logs/ --param tau_obs=0.02:0.7:6 --param cooldown=0:20:5

            beliefgate sensitivity oat --closed-loop docs/examples/grid_sensitivity.yaml \\
                --param cooldown=0:20:3 --out runs/sens
        """
        from beliefgate.eval.sensitivity import SensitivityError, plot_oat, run_oat, table7_directions

        check_output_path("--plots", plots, folder=True)
        if closed_loop is not None:
            _closed_loop(closed_loop, logs or [], param, base_path, partner, include_default, out, workers,
                         scheduler, n_boot, seed, as_json, plots)
            return
        for flag, value in (("--out", out), ("--workers", workers), ("--scheduler", scheduler)):
            if value is not None:
                _fail(f"{flag} only applies with --closed-loop GRID.yaml")
        base, ranges, episodes = _prepare(logs or [], param, base_path, partner, "oat")
        try:
            result = _run_with_bar("replaying", lambda progress: run_oat(
                episodes, ranges, base, detect_window, include_default, progress))
        except SensitivityError as exc:
            _fail(str(exc))
        written = plot_oat(result, plots) if plots is not None else []
        if as_json:
            data = result.to_dict()
            data["table7_directions"] = table7_directions(result)
            print_json(data, written)
            return
        outs = result.outputs_available
        switches = sum(e["hidden_switches"] for e in result.episodes)
        table = Table(title=f"One-at-a-time sensitivity: {len(result.episodes)} episodes, {switches} hidden "
                            f"switches (defaults marked *)")
        table.add_column("parameter", no_wrap=True)
        table.add_column("value", justify="right", no_wrap=True)
        for k in outs:
            table.add_column(SHORT_OUTPUTS[k], justify="right", no_wrap=True)
        for r in ranges:
            block = result.block(r.name)
            for j, row in enumerate(block):
                v = f"{row.value:g}" + (" *" if row.is_default else "")
                cells = [_cell(row.outputs[k], ".0%" if k in ("detection_rate", "map_accuracy") else ".2f")
                         for k in outs]
                style = "bold" if row.is_default else None
                table.add_row(r.name if j == 0 else "", v, *cells, style=style,
                              end_section=j == len(block) - 1)
        console.print(table)
        for name, d in table7_directions(result).items():
            mark = "holds" if d["monotone"] else "does NOT hold"
            console.print(f"Table 7 direction for {name} (interrupts {d['expected']} with it): {mark} "
                          f"({d['values'][0]:.2f} -> {d['values'][-1]:.2f} per episode)")
        if "detection_delay" in outs:
            console.print(f"delay: mean steps from a hidden switch to the first interrupt within {detect_window} "
                          "steps (a miss counts the whole window); FA: interrupts outside every switch's window.")
        elif "false_alarms_per_100" in outs:
            console.print("These logs hold no hidden switch: every interrupt counts as a false alarm.")
        else:
            console.print("These logs carry no ground-truth skills: only interrupts and confidence are reported.")
        for p in written:
            console.print(f"plot: {p}")

    @sens.command("global")
    def global_(
        logs: List[str] = typer.Argument(..., metavar="LOG...", help=LOGS_HELP),
        method: str = typer.Option("sobol", help="sobol (first-order and total indices with CIs) or morris "
                                                 "(μ*, σ)"),
        params: List[str] = typer.Option(
            [], "--params", "--param", "-p",
            help="NAME=LOW:HIGH[:log|:lin] (repeatable, or several after one --params)"),
        n: int = typer.Option(1024, "--n", min=2, max=MAX_GLOBAL_N,
                               help="Sobol: base sample size N, a power of 2 (N (D+2) configurations); "
                                    "Morris: trajectories (N (D+1) configurations)"),
        seed: int = typer.Option(0, min=0, help="seed of the sample and of the bootstrap CIs"),
        base_path: Optional[Path] = typer.Option(None, "--base", help="GateParams JSON for the fixed fields"),
        partner: Optional[int] = typer.Option(None, help="player index of the partner (default: the non-ego seat)"),
        detect_window: int = typer.Option(10, min=1, max=MAX_HORIZON, help="detection window after a hidden switch (steps)"),
        second_order: bool = typer.Option(False, "--second-order", help="Sobol: also second-order indices "
                                                                        "(N (2D+2) configurations)"),
        levels: int = typer.Option(4, "--levels", min=2, max=MAX_OAT_VALUES, help="Morris: grid levels (even)"),
        belief_levels: int = typer.Option(
            8, "--belief-levels", min=0, max=MAX_OAT_VALUES,
            help="Sobol: equally likely levels for continuous belief-side parameters (hazard, alpha, beta, "
                 "epsilon), each costing a belief pass per log; 0 = continuous"),
        resamples: int = typer.Option(100, min=10, max=MAX_RESAMPLES, help="bootstrap resamples for the CIs"),
        conf_level: float = typer.Option(0.95, min=0.5, max=0.999, help="confidence level of the CIs"),
        as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
        plots: Optional[Path] = typer.Option(None, "--plots", metavar="DIR",
                                             help="write bar and heat-map plots here"),
    ) -> None:
        """Global sensitivity of the gate's outputs to its parameters (SALib Sobol or Morris) on replayed logs.

        Every sampled configuration is replayed on every log, vectorised over
        configurations. Integer parameters take every integer of their range
        with equal mass; ranges spanning two decades or more are log-scaled
        unless :lin is given (docs/sensitivity.md). Example:

            beliefgate sensitivity global logs/ --method sobol --n 1024 \\
                --params tau_obs=0.02:0.7 likelihood_scale=0.25:4 confidence_floor=0.3:0.99 n_stable=0:4 cooldown=0:20
        """
        from beliefgate.eval.sensitivity import SensitivityError, plot_global, run_gate_global

        if method not in ("sobol", "morris"):
            _fail(f"--method must be 'sobol' or 'morris', got {method!r}")
        if method == "morris" and levels % 2:
            _fail(f"--levels must be even, got {levels}")
        if method == "sobol" and n & (n - 1):
            _fail(f"--n must be a power of 2 for Sobol sampling (Saltelli's scheme), got {n}; "
                  f"e.g. {1 << (n.bit_length() - 1)} or {1 << n.bit_length()}")
        check_output_path("--plots", plots, folder=True)
        base, ranges, episodes = _prepare(logs, params, base_path, partner, "global")
        d = len(ranges)
        rows = n * ((2 * d + 2) if second_order else (d + 2)) if method == "sobol" else n * (d + 1)
        err_console.print(f"{method}: {rows} configurations × {len(episodes)} logs")
        try:
            result = _run_with_bar("replaying", lambda progress: run_gate_global(
                episodes, ranges, method, n, seed, base, detect_window, second_order, levels,
                belief_levels or None, resamples, conf_level, progress))
        except SensitivityError as exc:
            _fail(str(exc))
        written = plot_global(result, plots) if plots is not None else []
        if as_json:
            data = result.to_dict()
            print_json(data, written)
            return
        pct = int(round(conf_level * 100))
        table = Table(title=f"{method.capitalize()}: {result.num_configs} configurations × {len(episodes)} logs "
                            f"(± = {pct}% CI half-width)")
        table.add_column("output", no_wrap=True)
        table.add_column("parameter", no_wrap=True)
        if method == "sobol":
            cols = (("S1", "first order S1"), ("S1_conf", "±"), ("ST", "total ST"), ("ST_conf", "±"))
        else:
            cols = (("mu_star", "μ*"), ("mu_star_conf", "±"), ("sigma", "σ"), ("mu", "μ"))
        for _, label in cols:
            table.add_column(label, justify="right", no_wrap=True)
        live = [o for o in result.indices if o not in result.constant]
        for o in live:
            idx = result.indices[o]
            for j, name in enumerate(result.names):
                table.add_row(SHORT_OUTPUTS.get(o, o) if j == 0 else "", name,
                              *[_cell(idx[key][j], ".3f") for key, _ in cols],
                              end_section=j == len(result.names) - 1)
        console.print(table)
        if result.constant:
            console.print(f"constant over the sample (no index): {', '.join(result.constant)} "
                          "(no sampled configuration changed them)")
        reasons: dict = {}
        for output, why in result.context.get("not_computed", {}).items():
            reasons.setdefault(why, []).append(output)
        for why, outputs in reasons.items():
            console.print(f"not computed: {', '.join(outputs)} ({why})")
        for w in result.warnings:
            say("warning:", w, "bold yellow")
        console.print(f"{result.context.get('belief_passes', 0)} belief passes; {result.elapsed_s:.1f} s.")
        for p in written:
            console.print(f"plot: {p}")
