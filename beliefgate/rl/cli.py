"""``beliefgate train ...``: train policies on JaxMARL's OvercookedV2 dynamics.

Heavy imports (JAX, the trainer) stay inside the command so that ``beliefgate --help`` stays fast.
Every bad input (a setting, the layout, event weights, the pool, a saved state) is refused with one
line and exit 2 before the first training step.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import List, Optional

import typer

from beliefgate.console import check_output_path, console, err_console, load_input, progress_bar, say

app = typer.Typer(help="Train policies (PPO in JAX on JaxMARL's OvercookedV2: self-play, behaviour "
                       "preference, FCP).", no_args_is_help=True)


@app.command()
def ppo(
    layout: str = typer.Option(..., help="OvercookedV2 layout, v2/<name> (e.g. v2/cramped_room)"),
    kind: str = typer.Option("sp", help="sp (self-play), bp (behaviour preference: --weights), "
                             "fcp (against the policies under --pool)"),
    steps: int = typer.Option(..., min=1, help="environment steps to train (each moves every player once)"),
    seed: int = typer.Option(0, min=0, help="training seed"),
    out: Path = typer.Option(..., help="output folder: policy.msgpack + policy.json (card), curve.csv/png, "
                             "state.msgpack (resumable)"),
    resume: bool = typer.Option(False, "--resume", help="continue the run saved in --out (a fresh start "
                                "when there is none)"),
    weights: Optional[List[str]] = typer.Option(None, "--weights", help="bp: event weights EVENT=W,... "
                                                "(repeat for one reward-conditioned network over the grid)"),
    pool: Optional[Path] = typer.Option(None, "--pool", help="fcp: folder of SP policies (e.g. their snapshots/)"),
    config: Optional[Path] = typer.Option(None, "--config", help="JSON file of further PPOConfig fields "
                                          "(num_envs, lr, epochs, hidden, ...); the options above win"),
    snapshots: Optional[int] = typer.Option(None, min=0, max=100, help="save policy snapshots at this many "
                                            "evenly spaced stages (an FCP pool)"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Train a PPO policy (resumable: checkpoints every few updates, atomically)."""
    from beliefgate.fileio import read_text
    from beliefgate.rl.config import PPOConfig, PPOConfigError, parse_weights

    check_output_path("--out", out, folder=True)
    extra = {}
    if config is not None:
        text = load_input("--config", config, read_text)
        try:
            extra = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PPOConfigError(f"--config {config}: not JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(extra, dict):
            raise PPOConfigError(f"--config {config}: a JSON object of PPOConfig fields, got {type(extra).__name__}")
    fields = {**extra, "layout": layout, "kind": kind, "total_steps": steps, "seed": seed}
    if weights:
        fields["event_weights"] = [parse_weights(w) for w in weights]
    if pool is not None:
        fields["pool_dir"] = str(pool)
    if snapshots is not None:
        fields["snapshots"] = snapshots
    cfg = PPOConfig.from_data(fields, source=str(config) if config else None)
    from beliefgate.rl.layouts import resolve_layout

    resolve_layout(cfg.layout)  # a misspelt layout is refused before JAX and the trainer load

    from beliefgate.rl.ppo import Trainer, train  # JAX loads here

    trainer = Trainer(cfg)  # resolves the layout, loads and checks the pool: before any training step
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with progress_bar(TextColumn("[bold]{task.description}"), BarColumn(),
                      TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"),
                      TextColumn("return {task.fields[ret]}"), TextColumn("{task.fields[sps]} steps/s"),
                      TimeElapsedColumn(), TimeRemainingColumn()) as bar:
        task = bar.add_task(f"{cfg.kind} {trainer.layout}", total=cfg.num_updates * cfg.steps_per_update,
                            ret="-", sps="-")
        last = {"ret": float("nan")}
        every = max(1, cfg.num_updates // 10)

        def on_update(row):
            if not math.isnan(row["mean_return"]):
                last["ret"] = row["mean_return"]
            bar.update(task, completed=row["env_steps"], ret=f"{last['ret']:.1f}", sps=f"{row['steps_per_s']:,.0f}")
            if not err_console.is_interactive and int(row["update"]) % every == 0:
                say("progress:", f"update {int(row['update'])}/{cfg.num_updates}, {int(row['env_steps']):,} steps, "
                    f"return {last['ret']:.1f}, {row['steps_per_s']:,.0f} steps/s", "cyan")

        result = train(cfg, out, resume=resume, on_update=on_update, trainer=trainer)
    summary = {"policy": str(result.policy), "layout": trainer.layout, "kind": cfg.kind, "seed": cfg.seed,
               "updates": result.updates, "env_steps": result.env_steps,
               "final_return": None if math.isnan(result.final_return) else round(result.final_return, 2),
               "wall_time_s": round(result.wall_time_s, 1), "compile_s": round(result.compile_s, 1), "steps_per_s": round(result.steps_per_s),
               "resumed_from_update": result.resumed_from}
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    console.print(f"{cfg.kind} on {trainer.layout}: {result.env_steps:,} steps ({result.updates} updates), "
                  f"final return {summary['final_return']}, {summary['steps_per_s']:,} steps/s -> {result.policy}",
                  highlight=False, soft_wrap=True)


__all__ = ["app"]
