"""``beliefgate data ...`` (human data, BC proxy) and ``beliefgate eval human|bc``.

Heavy imports (pandas, jax, matplotlib) stay inside the command functions so that
``beliefgate --help`` stays fast. Importing this module registers the ``bc:<layout>``
agent (NumPy only at import time).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from beliefgate.console import check_output_path, console, fail as _fail, load_input, progress_bar, say
from beliefgate.limits import MAX_HORIZON, MAX_SEED_COUNT


data_app = typer.Typer(help="Real-partner data: the 2019 human-human Overcooked games and the BC human proxy.",
                       no_args_is_help=True)


def _progress_bar(label: str):
    """A rich progress bar on stderr and the ``progress(i, n, text)`` callback that drives it."""
    bar = progress_bar()
    task = bar.add_task(label, total=None)

    def progress(i: int, n: int, text: str) -> None:
        bar.update(task, total=n or None, completed=i, description=text)

    return bar, progress


def _layouts(layouts) -> list:
    """The canonical names of ``layouts`` (default: all five); an unknown one fails in one line."""
    from beliefgate.envs.overcooked.layouts import LAYOUTS, UnknownLayoutError, resolve_layout

    try:
        return [resolve_layout(x) for x in (layouts or LAYOUTS)]
    except UnknownLayoutError as exc:
        _fail(str(exc))


def _fmt(x, digits: int = 3) -> str:
    return "-" if x is None or x != x else f"{x:.{digits}f}"


# ----------------------------------------------------------------------------- data fetch-human
@data_app.command("fetch-human")
def fetch_human_cmd(
    force: bool = typer.Option(False, "--force", help="convert again even if the cache holds finished logs"),
    as_json: bool = typer.Option(False, "--json", help="print the conversion summary as JSON"),
) -> None:
    """Download the 2019 human-human Overcooked data (overcooked-ai==1.1.0 sdist, via pip) and convert it to logs.

    Idempotent and offline once fetched. Logs: <cache>/human_data/logs/<split>/<layout>/*.jsonl.
    """
    from beliefgate.envs.human_data import HumanDataError, fetch_human

    bar, progress = _progress_bar("human data")
    notes: List[str] = []

    def note(line: str) -> None:
        notes.append(line)
        say("note:", line, target=bar.console)

    try:
        with bar:
            ds, converted = fetch_human(force=force, progress=progress, report=note)
    except HumanDataError as exc:
        _fail(str(exc), code=1)
    m = ds.manifest
    summary = {
        "converted_now": converted, "converted_because": m.get("converted_because") if converted else None,
        "notes": notes, "logs_dir": str(ds.logs_dir), "source": m["source"],
        "layout_map": m["layout_map"], "layout_check": m["layout_check"], "label_rule": m["label_rule"],
        "splits": {s: {k: v for k, v in d.items() if k != "logs"} for s, d in m["splits"].items()},
    }
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    table = Table(title=f"2019 human-human games ({'converted now' if converted else 'already in the cache'})")
    for col in ("split", "layout", "study name", "games", "steps", "logs"):
        table.add_column(col, justify="left" if col in ("split", "layout", "study name") else "right")
    for split, d in m["splits"].items():
        for layout, row in sorted(d["by_layout"].items()):
            table.add_row(split, layout, row["study_layout"], str(row["games"]), str(row["steps"]), str(row["logs"]))
    console.print(table)
    for split, d in m["splits"].items():
        console.print(f"{split}: {d['games']} games, {d['steps']} steps; impossible transitions "
                      f"{d['impossible_steps']}, chain breaks {d['chain_breaks']}, logged actions not consistent "
                      f"with the states {d['action_mismatches']}, dropped short segments {d['dropped_segments']}")
    console.print(f"Logs: {ds.logs_dir}  (next: `beliefgate eval human --split test`)")


# ----------------------------------------------------------------------------- data train-bc
@data_app.command("train-bc")
def train_bc_cmd(
    layouts: Optional[List[str]] = typer.Option(None, "--layout",
                                                help="layouts to train (repeatable; default: all five)"),
    seed: int = typer.Option(0, min=0, help="training seed (initialisation and held-out game choice)"),
    force: bool = typer.Option(False, "--force", help="retrain even if a model of this version is cached"),
    as_json: bool = typer.Option(False, "--json", help="print the training records as JSON"),
) -> None:
    """Train the behaviour-cloned human proxy `bc:<layout>` on the train split (saved in the cache)."""
    from beliefgate.envs.overcooked.bc import BCModelError, BCPolicy, model_path, train_layout

    todo = _layouts(layouts)
    records = []
    bar, progress = _progress_bar("training")
    try:
        with bar:
            for layout in todo:
                path = model_path(layout)
                policy = None
                if path.is_file() and not force:
                    try:
                        policy = BCPolicy.load(path)
                    except BCModelError:
                        policy = None
                    if policy is not None and policy.meta.get("seed") != seed:
                        policy = None
                if policy is None:
                    policy = train_layout(layout, seed=seed, progress=progress)
                records.append({"layout": layout, "path": str(path), **{k: policy.meta.get(k) for k in (
                    "train_accuracy", "val_accuracy", "val_log_loss", "train_samples", "val_samples", "seed",
                    "feature_dim", "train_s")}})
    except BCModelError as exc:
        _fail(str(exc))
    if as_json:
        print(json.dumps(records, indent=2))
        return
    table = Table(title="BC human proxy (trained on the train split; validation = held-out train games)")
    for col in ("agent", "train acc", "val acc", "val log-loss", "samples", "train s"):
        table.add_column(col, justify="left" if col == "agent" else "right")
    for r in records:
        table.add_row(f"bc:{r['layout']}", _fmt(r["train_accuracy"]), _fmt(r["val_accuracy"]),
                      _fmt(r["val_log_loss"]), str(r["train_samples"]), _fmt(r["train_s"], 1))
    console.print(table)
    console.print("Play it: `beliefgate episode --layout cramped_room --ego bc:cramped_room --partner balanced`; "
                  "held-out test numbers: `beliefgate eval bc`.")


# ----------------------------------------------------------------------------- eval human
def eval_human_cmd(
    split: str = typer.Option("test", help="split to evaluate: test (default) or train"),
    layouts: Optional[List[str]] = typer.Option(None, "--layout", help="only these layouts (repeatable)"),
    plots: Optional[Path] = typer.Option(None, help="directory for the reliability diagrams "
                                         "(default: <cache>/human_eval/<split>)"),
    tune: bool = typer.Option(False, "--tune",
                              help="choose beta, epsilon, hazard again by the grid on the TRAIN split"),
    params_file: Optional[Path] = typer.Option(None, "--params", help="GateParams JSON: use its beta, epsilon, hazard"),
    as_json: bool = typer.Option(False, "--json", help="print {overall, by_layout, ...} as JSON"),
) -> None:
    """Skill inference on the human games: the filter vs held-object, last-completed and nearest-target baselines."""
    from beliefgate.envs.human_data import HumanDataDamagedError, HumanDataError
    from beliefgate.envs.overcooked.layouts import UnknownLayoutError
    from beliefgate.envs.overcooked.tables import cache_dir
    from beliefgate.experiments.human_eval import (HUMAN_PARAMS, METHODS, HumanEvalError, cached_tracks, evaluate_split,
                                       reliability_plots, result_json, select_params)

    if tune and params_file is not None:
        _fail("--tune and --params are exclusive")
    check_output_path("--plots", plots, folder=True)
    params = None
    if params_file is not None:
        from beliefgate.beliefs.gate import GateParams

        gp = load_input("--params", params_file, GateParams.load)
        params = {**HUMAN_PARAMS, "beta": gp.beta, "epsilon": gp.epsilon, "hazard": gp.hazard}
    bar, progress = _progress_bar("human evaluation")
    try:
        with bar:
            origin = None
            if tune:
                params, _ = select_params(cached_tracks("train", progress=progress), progress=progress)
                origin = "tuned on the train split (--tune)"
            elif params_file is not None:
                origin = f"given (--params {params_file})"
            result = evaluate_split(split, params, progress=progress, layouts=layouts, params_origin=origin)
            out = plots or (cache_dir() / "human_eval" / split)
            written = reliability_plots(result, out)
    except HumanDataDamagedError as exc:  # the cache, not the caller's input, is at fault
        _fail(str(exc), code=1)
    except (HumanDataError, HumanEvalError, UnknownLayoutError) as exc:
        _fail(str(exc))
    result.config["plots"] = [str(p) for p in written]
    if as_json:
        print(result_json(result))
        return
    p = result.params
    title = (f"Partner-skill inference on the {split} split (hindsight labels; beta={p['beta']}, "
             f"epsilon={p['epsilon']}, hazard={p['hazard']}, require_targets={p['require_targets']})")
    table = Table(title=title)
    table.add_column("layout", overflow="fold")
    table.add_column("method", no_wrap=True)
    for col in ("accuracy", "log-loss", "Brier", "ECE", "n"):
        table.add_column(col, justify="right")
    groups = [(lay, result.by_layout[lay]) for lay in sorted(result.by_layout)] + [("overall", result.overall)]
    for lay, scores in groups:
        for i, method in enumerate(METHODS):
            s = scores[method]
            lo, hi = result.accuracy_ci.get(method, {}).get(lay, [float("nan")] * 2)
            accuracy = _fmt(s["accuracy"]) + (f" [{_fmt(lo)}, {_fmt(hi)}]" if lo == lo else "")
            table.add_row(lay if i == 0 else "", method, accuracy, _fmt(s["log_loss"]), _fmt(s["brier"]),
                          _fmt(s["ece"]), str(s["n"]), end_section=i == len(METHODS) - 1)
    console.print(table)
    console.print("accuracy: [95% bootstrap interval over tracks, one partner in one game]. "
                  "held_object / last_completed: skill frequencies counted per layout on the train split; "
                  "nearest_target: uniform prior; one_step: the filter's likelihood without memory (ablation). "
                  "Unlabelled steps are skipped.")
    console.print(f"Reliability diagrams: {Path(written[0]).parent}")


# ----------------------------------------------------------------------------- eval bc
def eval_bc_cmd(
    layouts: Optional[List[str]] = typer.Option(None, "--layout", help="layouts (repeatable; default: all five)"),
    episodes: int = typer.Option(5, min=1, max=MAX_SEED_COUNT, help="episodes with the scripted partner per layout"),
    horizon: int = typer.Option(400, min=1, max=MAX_HORIZON, help="episode length"),
    partner: str = typer.Option("balanced", help="scripted partner to pair the BC proxy with"),
    seed: int = typer.Option(0, min=0, help="first episode seed"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Held-out test action accuracy of `bc:<layout>` and its reward with a scripted partner."""
    from beliefgate.envs.overcooked.bc import BCModelError, evaluate_accuracy, load_policy
    from beliefgate.envs.human_data import HumanDataError, load_dataset
    from beliefgate.envs.overcooked.partners import UnknownPartnerError
    from beliefgate.experiments.bc import evaluate_play

    todo = _layouts(layouts)
    rows = []
    bar, progress = _progress_bar("BC evaluation")
    try:
        with bar:
            ds = load_dataset()
            for i, layout in enumerate(todo):
                progress(i, len(todo), f"{layout}: model")
                policy = load_policy(layout)
                progress(i, len(todo), f"{layout}: test accuracy")
                acc = evaluate_accuracy(policy, ds.logs("test", layout))
                progress(i, len(todo), f"{layout}: {episodes} episodes with {partner}")
                play = evaluate_play(layout, partner, episodes, horizon, seed)
                ref = evaluate_play(layout, partner, episodes, horizon, seed, ego=partner)
                rows.append({"layout": layout, "test": acc, "play": play, "reference": ref})
    except (HumanDataError, BCModelError, UnknownPartnerError) as exc:
        _fail(str(exc))
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"BC human proxy: held-out test actions, and {episodes} x {horizon}-step episodes "
                        f"with {partner!r}")
    table.add_column("agent", overflow="fold")
    for col in ("test acc", "stay acc", "test LL", "freq LL", "reward", "sd", "ref"):
        table.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        t, p, ref = r["test"], r["play"], r["reference"]
        table.add_row(f"bc:{r['layout']}", _fmt(t["accuracy"]), _fmt(t["majority_accuracy"]), _fmt(t["log_loss"]),
                      _fmt(t["marginal_log_loss"]), f"{p['reward_mean']:.1f}", f"{p['reward_sd']:.1f}",
                      f"{ref['reward_mean']:.1f}")
    console.print(table)
    console.print(f"test acc / test LL: action accuracy and log-loss on both players of every test game; stay acc: "
                  f"always predicting the most frequent train action (STAY); freq LL: the train action frequencies. "
                  f"reward (sd): bc + {partner} (seat alternating), ref: {partner} + {partner}, same seeds; "
                  f"simulator units (20 per soup).")


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add `beliefgate data ...` and `beliefgate eval human|bc`."""
    app.add_typer(data_app, name="data")
    eval_app.command("human")(eval_human_cmd)
    eval_app.command("bc")(eval_bc_cmd)
