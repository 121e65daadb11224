"""The ``beliefgate`` command line.

Only this module reads the environment and prints; everything it calls is a
plain function that returns data.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import List, Optional

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import typer
from rich.table import Table

from beliefgate.console import console, err_console, fail as _fail

app = typer.Typer(
    help="beliefgate: partner-skill beliefs and belief-driven control signals for cooperative agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def layouts(as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table")) -> None:
    """List the supported Overcooked layouts."""
    from beliefgate.envs.overcooked.layouts import LAYOUTS, layout_info

    rows = [layout_info(name).describe() for name in LAYOUTS]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title="Overcooked layouts")
    for col in ("layout", "size", "floor", "pots", "onions", "dishes", "serving", "grid"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], "x".join(map(str, r["size"])), str(r["floor_cells"]), str(len(r["pots"])),
                      str(len(r["onion_dispensers"])), str(len(r["dish_dispensers"])), str(len(r["serving"])),
                      "\n".join(r["grid"]))
    console.print(table)


@app.command()
def partners(as_json: bool = typer.Option(False, "--json", help="print a JSON list")) -> None:
    """List the scripted partner population (every name is also a valid --ego)."""
    from beliefgate.envs.overcooked.partners import PARTNERS

    rows = [p.summary() for p in PARTNERS.values()]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title="Scripted partners")
    for col in ("name", "switches", "layouts", "description"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], "yes" if r["switches"] else "no", ",".join(r["layouts"] or ["any"]), r["description"])
    console.print(table)


@app.command()
def episode(
    layout: str = typer.Option(..., help="layout name (see `beliefgate layouts`)"),
    ego: str = typer.Option("balanced", help="ego agent name"),
    partner: str = typer.Option("balanced", help="partner name (see `beliefgate partners`)"),
    seed: int = typer.Option(0, help="episode seed"),
    horizon: int = typer.Option(400, min=1, help="episode length in steps"),
    seat: int = typer.Option(0, min=0, max=1, help="player slot of the ego (0 or 1)"),
    log: Optional[Path] = typer.Option(None, help="write the trajectory log (JSONL) here"),
    llm_base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible server for LLM agents "
                                               "(default: $BELIEFGATE_LLM_BASE_URL; none = offline rule planner)"),
    llm_model: Optional[str] = typer.Option(None, help="model name (default: $BELIEFGATE_LLM_MODEL)"),
    llm_timeout: float = typer.Option(30.0, min=0.1, help="seconds per LLM request"),
    llm_cache: Optional[Path] = typer.Option(None, help="directory for an on-disk LLM response cache"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as one JSON object"),
) -> None:
    """Play one episode on the real Overcooked dynamics and summarise it."""
    from beliefgate.envs.overcooked.layouts import UnknownLayoutError
    from beliefgate.envs.overcooked.partners import UnknownPartnerError
    from beliefgate.eval.episode import run_episode
    from beliefgate.planners.errors import PlannerConfigError

    llm = None
    base_url = llm_base_url or os.environ.get("BELIEFGATE_LLM_BASE_URL")
    if base_url:
        from beliefgate.planners.client import LLMClient, LLMSettings

        try:
            llm = LLMClient(LLMSettings(base_url=base_url, model=llm_model or os.environ.get("BELIEFGATE_LLM_MODEL", ""),
                                        api_key=os.environ.get("OPENAI_API_KEY", "not-needed"),
                                        timeout_s=llm_timeout, cache_dir=str(llm_cache) if llm_cache else None))
        except PlannerConfigError as exc:
            _fail(str(exc))
    try:
        result = run_episode(layout, ego, partner, seed=seed, horizon=horizon, seat=seat, log_path=log, llm=llm)
    except (UnknownLayoutError, UnknownPartnerError, PlannerConfigError) as exc:
        _fail(str(exc))
    if as_json:
        print(json.dumps(result.summary))
        return
    table = Table(title=f"episode {layout}: {ego} (seat {seat}) + {partner}, seed {seed}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in ("deliveries", "reward", "steps", "replans", "llm_calls", "wall_s"):
        table.add_row(key, str(result.summary[key]))
    if log is not None:
        table.add_row("log", str(log))
    console.print(table)


@app.command()
def demo(
    seed: int = typer.Option(0, help="first seed"),
    seeds: int = typer.Option(3, min=1, help="seeds per agent and partner in the agent comparison"),
    horizon: int = typer.Option(400, min=1, help="episode length"),
    partner: str = typer.Option("switch-sourcer-to-plater", help="partner for the per-layout gate tour"),
    out: Optional[Path] = typer.Option(None, help="directory for the tour's trajectory logs (default: a temp dir)"),
) -> None:
    """Offline tour: belief-driven agents vs baselines with switching partners, then the gate on every layout."""
    import tempfile

    from rich.progress import Progress

    from beliefgate.eval.demo import compare_agents, run_demo

    out_dir = out or Path(tempfile.mkdtemp(prefix="beliefgate-demo-"))
    with Progress(console=err_console, transient=True) as bar:
        task = bar.add_task("demo", total=None)

        def progress(i, n, label):
            bar.update(task, total=n, completed=i, description=label)

        agents = compare_agents(seeds=range(seed, seed + seeds), horizon=horizon, progress=progress)
        rows = run_demo(seed=seed, horizon=horizon, partner=partner, out_dir=out_dir, progress=progress)
    table = Table(title=f"cramped_room, role-switching partners, {seeds} seeds x 2 partners, {horizon} steps")
    table.add_column("agent", no_wrap=True)
    for col in ("reward", "soups", "replans/ep", "MAP acc", "gap rate"):
        table.add_column(col, justify="right")
    for r in agents:
        table.add_row(r["agent"], f"{r['reward']:.1f}", f"{r['deliveries']:.2f}", f"{r['replans']:.1f}",
                      f"{r['map_accuracy']:.3f}", f"{r['gap_rate']:.3f}")
    console.print(table)
    console.print("replans/ep: interruptions of a running skill; gap rate: share of steps with a correct partner "
                  "belief where the ego's skill is not complementary to the partner's true skill.")
    table = Table(title=f"the gate on every layout: ego 'balanced' + '{partner}', seed {seed}")
    table.add_column("layout", no_wrap=True)
    for col in ("soups", "reward", "MAP acc", "conf", "interrupts", "change-pts"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r["layout"], str(r["deliveries"]), f"{r['reward']:.0f}", f"{r['map_accuracy']:.2f}",
                      f"{r['mean_confidence']:.2f}", str(r["interrupts"]), str(r["changepoints"]))
    console.print(table)
    console.print("MAP acc: share of the partner's steps (true skill known) where the gate's most probable skill "
                  "is the true one; conf: mean posterior of that skill.")
    console.print(f"Trajectory logs: {out_dir}  (next: `beliefgate switches`, `beliefgate episode --help`)")


@app.command()
def switches(
    seeds: int = typer.Option(8, min=1, help="seeds per layout and partner (0..N-1)"),
    layouts_: Optional[List[str]] = typer.Option(None, "--layout", help="layouts (repeatable; default: four open layouts)"),
    partners_: Optional[List[str]] = typer.Option(None, "--partner", help="partners (repeatable; default: the two switchers)"),
    horizon: int = typer.Option(400, min=10, help="episode length"),
    window: int = typer.Option(10, min=1, help="steps after a switch within which an alarm counts as a detection"),
    params_file: Optional[Path] = typer.Option(None, "--params", help="GateParams JSON (default: the defaults)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Detection delay and false alarms of the gates vs the naive rule on hidden partner switches."""
    from rich.progress import Progress

    from beliefgate.beliefs.gate import GateParams
    from beliefgate.eval.switches import DEFAULT_LAYOUTS, DEFAULT_PARTNERS, evaluate_switches

    params = GateParams.load(params_file) if params_file else GateParams()
    with Progress(console=err_console, transient=True) as bar:
        task = bar.add_task("episodes", total=None)

        def progress(i, n, label):
            bar.update(task, total=n, completed=i, description=label)

        report = evaluate_switches(params, layouts=layouts_ or DEFAULT_LAYOUTS, partners=partners_ or DEFAULT_PARTNERS,
                                   seeds=range(seeds), horizon=horizon, window=window, progress=progress)
    data = report.to_dict()
    data["params"] = params.model_dump()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    table = Table(title=f"Hidden partner switches: {report.episodes} episodes, detection window {window} steps")
    for col in ("method", "switches", "detected", "mean delay", "false alarms / 100 steps"):
        table.add_column(col, justify="left" if col == "method" else "right")
    for name, sc in report.rows.items():
        table.add_row(name, str(sc.switches), f"{sc.detection_rate:.0%}", f"{sc.mean_delay:.2f}",
                      f"{sc.false_alarms_per_100:.2f}")
    console.print(table)
    for gate in ("stable-map gate", "change-point gate"):
        g = report.rows[gate]
        naive = report.naive_false_alarms_at(g.mean_delay)
        if naive is None:
            console.print(f"{gate}: delay {g.mean_delay:.2f} lies outside the naive rule's sweep")
        else:
            verdict = "fewer" if g.false_alarms_per_100 < naive else "NOT fewer"
            console.print(f"{gate}: {g.false_alarms_per_100:.2f} false alarms/100 steps at delay {g.mean_delay:.2f}; "
                          f"the naive rule needs {naive:.2f} for the same delay: {verdict}")
    console.print("Delay counts a missed switch as the full window; a hidden switch is a change of the partner's "
                  "true skill that no visible completion or vanished target announced.")


# ---------------------------------------------------------------------------- plug-in command groups
#: shared group for evaluation commands (`beliefgate eval ...`)
eval_app = typer.Typer(help="Evaluate agents and beliefs (episode grids, human data).", no_args_is_help=True)
app.add_typer(eval_app, name="eval")

#: modules that add their commands with ``register(app, eval_app)``; each keeps heavy
#: imports inside its command functions so that ``beliefgate --help`` stays fast
COMMAND_MODULES = (
    "beliefgate.models.cli",       # fit, diagnose, compare
    "beliefgate.eval.sensitivity_cli",  # sensitivity oat|global
    "beliefgate.serve.cli",        # serve
    "beliefgate.envs.data_cli",    # data fetch-human, eval human
    "beliefgate.eval.cli",         # eval run|report
    "beliefgate.viewer.cli",       # report, play
)


def _register_command_modules() -> None:
    import importlib

    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that feature is not part of this checkout
                continue
            raise
        module.register(app, eval_app)


_register_command_modules()


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
