"""Run the OverForge grid and write ``docs/results_overforge.md`` with its Figure-16 PNGs.

::

    python -m beliefgate.experiments.overforge_report run docs/examples/grid_overforge.yaml --out runs/overforge \\
        --workers 2 [--seeds 3] [--agents a,b] [--partners p,q] [--layouts l,m] [--seats 0,1]
    python -m beliefgate.experiments.overforge_report report runs/overforge [more run dirs] \\
        --md docs/results_overforge.md --img docs/img

``run`` plays the grid through :func:`beliefgate.eval.runner.run_grid` (resumable; episodes in
seed-major order so that an interrupted run leaves complete matched sets), in a spawned process
pool whose workers add the ``overforge`` row to the agent table until the table carries it.
The options cut the grid to what the machine allows (``--seeds``, ``--layouts``, ``--partners`` and
``--seats`` select part of the grid's design and refuse values outside it; ``--agents`` names the
arms to play on that design, e.g. a variant of an agent); the subset is recorded in the run's
``grid.json``. ``report`` reads the results tables and the episode logs (the PCM decision records)
and writes a table shaped like OverForge's Tables 5/6 (D, FI, MB, Sigma-minus, IA, kappa-bar,
commit rate, c/s per arm and layout), pooled paired-bootstrap reward differences of ``overforge``
against every other arm (:func:`beliefgate.eval.report.paired_bootstrap`), decision latency, and
three PNGs shaped like its Figure 16 (kappa histogram with the theta line, rollout depth used,
cumulative gap between the two best utilities, per arm).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import typer

from beliefgate.console import BoundaryGroup, check_output_path, check_unique, fail
from beliefgate.limits import MAX_SEED_COUNT

app = typer.Typer(add_completion=False, cls=BoundaryGroup, no_args_is_help=True,
                  help="OverForge grid and report (docs/results_overforge.md).")

PAPER = {"kappa_mean": 0.34, "commit_rate": 0.12}
TABLE_METRICS = (("deliveries", "D↑"), ("failed_interaction_rate", "FI↓"), ("blocking_rate", "MB↓"),
                 ("abandoned", "Σ⁻↓"), ("intent_accuracy", "IA↑"), ("kappa_mean", "κ̄"), ("commit_rate", "cmt"),
                 ("llm_calls_per_step", "c/s"))


def _split(value: Optional[str]):
    """Comma-separated names; a piece that is an option (``-belief``, ``samples=4``) continues the
    name before it, so ``overforge:samples=4,-belief,bayes-belief:full`` is two names."""
    if value is None:
        return None
    names: List[str] = []
    for piece in (v.strip() for v in value.split(",")):
        if not piece:
            continue
        option = piece.startswith("-") or ("=" in piece and ":" not in piece.split("=", 1)[0])
        if option and names and ":" in names[-1]:
            names[-1] += "," + piece
        else:
            names.append(piece)
    return names


def _subset(flag: str, value: Optional[str], available: Optional[List[str]]) -> Optional[List[str]]:
    """The names of ``value`` (comma-separated), each once, all among the grid's ``available``
    (``None``: any name)."""
    wanted = _split(value)
    if wanted is None:
        return None
    if not wanted:
        fail(f"{flag} {value!r}: no names given")
    check_unique(flag, wanted, value)
    outside = [w for w in wanted if available is not None and w not in available]
    if outside:
        fail(f"{flag} {', '.join(outside)}: not in the grid (it has {', '.join(available)}); "
             f"{flag} only selects part of the grid")
    return wanted


@app.command()
def run(grid: Path = typer.Argument(..., help="grid file (YAML or JSON; docs/examples/grid_overforge*.yaml)"),
        out: Path = typer.Option(..., "--out", help="run directory (created; rerun to resume)"),
        workers: int = typer.Option(2, "--workers", min=1, help="worker processes"),
        seeds: Optional[int] = typer.Option(None, "--seeds", min=1, max=MAX_SEED_COUNT,
                                            help="first N seeds of the grid only"),
        agents: Optional[str] = typer.Option(None, "--agents", help="comma-separated agents to play on the "
                                             "grid's design instead of its own (any agent name, e.g. a variant "
                                             "overforge:uncommitted=rule)"),
        partners: Optional[str] = typer.Option(None, "--partners", help="comma-separated partners of the grid only"),
        layouts: Optional[str] = typer.Option(None, "--layouts", help="comma-separated layouts of the grid only"),
        seats: Optional[str] = typer.Option(None, "--seats", help="comma-separated seats of the grid only"),
        force: bool = typer.Option(False, "--force", help="run into a directory that holds another grid's (or "
                                   "another subset's) results: they are moved into OUT/superseded-<digest>-<time>/, "
                                   "not deleted")):
    """Play (part of) the grid into OUT.

    A subset (--seeds, --agents, --partners, --layouts, --seats) is a grid of its own: rerunning the
    same command resumes it; a different subset or the whole grid goes to another --out (the report
    reads several directories), or replaces the results there with --force.
    """
    from beliefgate.eval.executors import make_executor
    from beliefgate.eval.grid import SeedRange, load_grid, resolve_grid
    from beliefgate.eval.runner import RunError, check_run_dir, run_grid

    check_output_path("--out", out, folder=True)
    spec = load_grid(grid)
    update: Dict[str, object] = {}
    if seeds is not None:
        s = spec.seeds
        available = s.count if isinstance(s, SeedRange) else len(s)
        if seeds > available:
            fail(f"--seeds {seeds}: the grid has only {available} seed(s)")
        update["seeds"] = SeedRange(start=s.start, count=seeds) if isinstance(s, SeedRange) else list(s)[:seeds]
    chosen = _subset("--agents", agents, None)  # the arms compared: any agent (names checked by resolve_grid)
    if chosen is not None:
        update["agents"] = chosen
    chosen = _subset("--layouts", layouts, list(spec.layouts))
    if chosen is not None:
        update["layouts"] = chosen
    chosen = _subset("--partners", partners, [e.name for e in spec.partner_entries])
    if chosen is not None:  # the grid's entries, with their options (group, optional)
        update["partners"] = [p for p, e in zip(spec.partners, spec.partner_entries) if e.name in chosen]
    chosen = _subset("--seats", seats, [str(x) for x in spec.seats])
    if chosen is not None:
        update["seats"] = [int(v) for v in chosen]
    if update:
        spec = spec.model_validate({**spec.model_dump(), **{k: (v.model_dump() if hasattr(v, "model_dump") else v)
                                                            for k, v in update.items()},
                                    "name": spec.name + "-subset"})
    resolved = resolve_grid(spec)
    resolved.episodes.sort(key=lambda e: (e.seed, e.seat, e.layout, e.partner, e.agent))
    if not force:
        try:  # before any worker starts: finished results of another grid are never moved silently
            check_run_dir(out, resolved)
        except RunError as exc:
            fail(f"{exc}" + (" (a subset of the grid is a grid of its own: the same options resume it)"
                             if update else ""))
    try:
        with make_executor(workers) as ex:
            summary = run_grid(resolved, out, executor=ex,
                               progress=lambda d, t, label: typer.echo(f"[{d}/{t}] {label}"),
                               report=lambda line: typer.echo(f"note: {line}"),
                               other_grid="aside" if force else "refuse")
    except RunError as exc:
        fail(str(exc))
    typer.echo(f"{summary.ran} played, {summary.skipped_done} already done, {len(summary.failed)} failed, "
               f"{summary.wall_s:.0f} s")


#: what makes two result rows the same episode of a grid
EPISODE_KEY = ("agent", "layout", "partner", "seed", "seat", "horizon")


def _load(dirs: List[Path]):
    """Rows and decision records of every finished episode in ``dirs``. A later directory's
    episode replaces an earlier one with the same :data:`EPISODE_KEY` (re-running part of a grid
    after a change of default, say); ``replaced`` counts, per (earlier, later) directory pair,
    the episodes so replaced, so that the report can say which numbers come from where. The
    decision records are the typed ones (:class:`~beliefgate.agents.overforge.record.PCMDecision`)."""
    from beliefgate.envs.trajlog import read_log
    from beliefgate.eval.pcm import decisions, pcm_metrics
    from beliefgate.eval.runner import load_results

    kept: Dict[tuple, tuple] = {}
    replaced: Dict[tuple, int] = {}
    for d in dirs:
        for r in load_results(d):
            key = tuple(r[k] for k in EPISODE_KEY)
            if key in kept:
                pair = (str(kept[key][0]), str(d))
                replaced[pair] = replaced.get(pair, 0) + 1
            kept[key] = (d, r)
    rows, records = [], {}
    for d, r in kept.values():  # logs are read only for the episodes kept
        r = dict(r)
        if r["agent"].startswith("overforge"):
            traj = read_log(Path(d) / r["log"])
            r.update(pcm_metrics(traj))
            records.setdefault(r["agent"], []).extend(decisions(traj))
        else:
            for key in ("kappa_mean", "commit_rate", "depth_mean", "gap_mean", "latency_p50_ms", "latency_p99_ms"):
                r[key] = float("nan")
        rows.append(r)
    return rows, records, replaced


def _cell(values: List[float]) -> str:
    x = np.array([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if x.size == 0:
        return "–"
    return f"{x.mean():.2f} ± {x.std(ddof=1):.2f}" if x.size > 1 else f"{x.mean():.2f}"


def _figures(records: Dict[str, list], theta: float, img: Path, command: str, prefix: str = "overforge") -> List[Path]:
    from beliefgate.figures import pyplot, save_figure as save

    plt = pyplot()
    arms = sorted(records)
    paths = []
    # constrained layout: the figure title gets its own row above the panels' titles (tight_layout let
    # them overlap), and every axis label stays inside the canvas
    fig, axes = plt.subplots(1, len(arms), figsize=(3.2 * len(arms), 2.8), squeeze=False, sharey=True,
                             layout="constrained")
    for ax, arm in zip(axes[0], arms):
        k = [r.kappa for r in records[arm]]
        ax.hist(k, bins=np.linspace(0, 1, 21), color="#4477aa")
        ax.axvline(theta, color="#cc3311", ls="--", label=f"θ = {theta:g}")
        ax.set_title(arm, fontsize=8)
        ax.set_xlabel("κ")
    axes[0][0].set_ylabel("decisions")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("(a) confidence κ per decision", fontsize=9)
    paths.append(save(fig, img / f"{prefix}_kappa.png", bbox_inches="tight"))
    fig, ax = plt.subplots(figsize=(5, 3), layout="constrained")
    width = 0.8 / max(len(arms), 1)
    for i, arm in enumerate(arms):
        d = np.array([r.depth for r in records[arm]])
        counts = [np.mean(d == v) if d.size else 0 for v in range(4)]
        ax.bar(np.arange(4) + i * width, counts, width, label=arm)
    ax.set_xticks(np.arange(4) + 0.4 - width / 2, ["0", "1", "2", "3"])
    ax.set_xlabel("rollout rounds used")
    ax.set_ylabel("share of decisions")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, not on them
    ax.set_title("(b) rollout depth used", fontsize=9)
    paths.append(save(fig, img / f"{prefix}_depth.png", bbox_inches="tight"))
    fig, ax = plt.subplots(figsize=(5, 3), layout="constrained")
    # arms whose curves coincide (e.g. overforge and overforge:-belief) stay visible: each its own dash
    # pattern and width, the later ones drawn thinner on top
    styles = ["-", "--", ":", "-.", (0, (5, 1, 1, 1))]
    for i, arm in enumerate(arms):
        g = [r.gap for r in records[arm] if r.gap is not None]
        ax.plot(np.cumsum(g), label=arm, ls=styles[i % len(styles)], lw=max(0.8, 2.4 - 0.4 * i))
    ax.set_xlabel("decision (pooled over episodes)")
    ax.set_ylabel("cumulative gap of the two best E[U]")
    ax.legend(fontsize=6)
    ax.set_title("(c) cumulative utility gap", fontsize=9)
    paths.append(save(fig, img / f"{prefix}_gap.png", bbox_inches="tight"))
    return paths


@app.command()
def report(dirs: List[Path] = typer.Argument(..., help="run directories of `beliefgate overforge run`"),
           md: Path = typer.Option(..., "--md", help="the Markdown report to write "
                                                     "(docs/results_overforge.md regenerates the project's page)"),
           img: Optional[Path] = typer.Option(None, "--img", help="folder of the PNGs (default: img/ beside --md)"),
           base: str = typer.Option("overforge", "--arm", help="the arm every other arm is paired against "
                                    "(an agent of the runs)"),
           prefix: str = typer.Option("overforge", "--prefix",
                                      help="figure names: PREFIX_kappa.png, PREFIX_depth.png, PREFIX_gap.png"),
           notes: Optional[Path] = typer.Option(None, "--notes",
                                                help="a Markdown file placed under the title (the runs and what "
                                                     "they mean), so that regenerating keeps it")):
    """Write the Table 5/6-shaped report and the Figure-16 PNGs from run directories."""
    from beliefgate.eval.report import paired_bootstrap

    for d in dirs:
        if not d.exists():
            fail(f"run directory {d} does not exist (play a grid into it with `run`)")
        if not d.is_dir():
            fail(f"{d} is not a run directory but a file (give the --out of `run`)")
    if notes is not None and not notes.is_file():
        fail(f"--notes {notes}: no such file")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", prefix):
        fail(f"--prefix {prefix!r}: letters, digits, '_', '.' and '-' only (it names files in --img)")
    check_output_path("--md", md)
    img = md.parent / "img" if img is None else img
    check_output_path("--img", img, folder=True)
    rows, records, replaced = _load(dirs)
    if not rows:
        fail(f"no finished episodes in {', '.join(str(d) for d in dirs)}")
    img.mkdir(parents=True, exist_ok=True)
    arms = sorted({r["agent"] for r in rows}, key=lambda a: (not a.startswith("overforge"), a))
    if base not in arms:
        fail(f"--arm {base!r} is not an agent of these runs; choose from {', '.join(arms)}")
    layouts = sorted({r["layout"] for r in rows})
    command = ("beliefgate overforge report " + " ".join(str(d) for d in dirs)
               + f" --md {md} --img {img}" + (f" --arm {base}" if base != "overforge" else "")
               + (f" --prefix {prefix}" if prefix != "overforge" else "")
               + (f" --notes {notes}" if notes is not None else ""))
    lines = ["# OverForge PCM: results", "",
             f"Made by `{command}` from the run directories listed below, on the current code.", ""]
    if replaced:
        lines += ["Episodes replaced by a later run directory (same agent, layout, partner, seed, seat): "
                  + "; ".join(f"{n} of `{a}` by `{b}`" for (a, b), n in sorted(replaced.items())) + ".", ""]
    if notes is not None:
        lines += [notes.read_text(encoding="utf-8").rstrip(), ""]
    n_ep = {a: sum(r["agent"] == a for r in rows) for a in arms}
    seeds = sorted({r["seed"] for r in rows})
    lines += [f"Episodes per arm: " + ", ".join(f"{a} {n_ep[a]}" for a in arms) + f"; seeds {seeds}; "
              f"partners {sorted({r['partner'] for r in rows})}; seats {sorted({r['seat'] for r in rows})}; "
              f"horizon {sorted({r['horizon'] for r in rows})}.", ""]
    lines += [f"## Pooled reward: `{base}` minus each arm (paired over layout, partner, seat, seed)", "",
              "Paired bootstrap 95% intervals (`beliefgate.eval.report.paired_bootstrap`, 10,000 resamples), "
              "resampling matched episodes (unit = episode) and, where there are enough seeds, seeds.", "",
              "| arm | pairs | Δ reward (episodes) | 95% CI | Δ reward (seeds) | 95% CI (seeds) |", "|---|---|---|---|---|---|"]
    ref = [r for r in rows if r["agent"] == base]
    for arm in arms:
        if arm == base:
            continue
        other = [r for r in rows if r["agent"] == arm]
        de = paired_bootstrap(ref, other, "reward", unit="episode", name=arm)
        ds = paired_bootstrap(ref, other, "reward", unit="seed", name=arm)
        lines.append(f"| {arm} | {de.pairs} | {de.mean:+.1f} | [{de.lo:+.1f}, {de.hi:+.1f}] | {ds.mean:+.1f} | "
                     f"[{ds.lo:+.1f}, {ds.hi:+.1f}] ({ds.units} seeds) |")
    partners = sorted({r["partner"] for r in rows})
    if len(partners) > 1:
        lines += ["", f"## By partner: `{base}` minus each arm (paired over layout, seat, seed)", "",
                  "Paired bootstrap 95% intervals over matched episodes of that partner; a blank cell: no "
                  "matched episode.", "",
                  "| arm | " + " | ".join(partners) + " |", "|---|" + "---|" * len(partners)]
        for arm in arms:
            if arm == base:
                continue
            cells = []
            for partner in partners:
                mine = [r for r in ref if r["partner"] == partner]
                other = [r for r in rows if r["agent"] == arm and r["partner"] == partner]
                if not mine or not other:
                    cells.append("")
                    continue
                d = paired_bootstrap(mine, other, "reward", unit="episode", name=arm)
                cells.append(f"{d.mean:+.1f} [{d.lo:+.1f}, {d.hi:+.1f}] (n {d.pairs})" if d.pairs else "")
            lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    lines += ["", "## Table 5/6 shape: per arm and layout (mean ± sd over episodes)", "",
              "| arm | layout | n | reward | " + " | ".join(h for _, h in TABLE_METRICS) + " |",
              "|---|---|---|---|" + "---|" * len(TABLE_METRICS)]
    for arm in arms:
        for lay in layouts:
            sel = [r for r in rows if r["agent"] == arm and r["layout"] == lay]
            if not sel:
                continue
            cells = [_cell([r.get(m) for r in sel]) for m, _ in TABLE_METRICS]
            lines.append(f"| {arm} | {lay} | {len(sel)} | {_cell([r['reward'] for r in sel])} | " + " | ".join(cells) + " |")
    lines += ["", "## Metacognition side by side with the paper (pooled over decisions)", "",
              "| arm | decisions | κ̄ | commit | single-branch share | rollout rounds used | gap E[U] | p50 ms | p99 ms |",
              "|---|---|---|---|---|---|---|---|---|"]
    for arm in sorted(records):
        recs = records[arm]
        if not recs:
            continue
        k = np.array([r.kappa for r in recs])
        t = np.array([r.time_ms for r in recs])
        gaps = [r.gap for r in recs if r.gap is not None]
        lines.append(f"| {arm} | {len(recs)} | {k.mean():.3f} | {np.mean([r.committed for r in recs]):.3f} | "
                     f"{np.mean([len(r.branches) == 1 for r in recs]):.3f} | {np.mean([r.depth for r in recs]):.2f} | "
                     f"{(np.mean(gaps) if gaps else float('nan')):.3f} | {np.percentile(t, 50):.0f} | {np.percentile(t, 99):.0f} |")
    lines.append(f"| paper (Full PCM, Table 6) | – | ≈{PAPER['kappa_mean']} | ≈{PAPER['commit_rate']} | – | – | – | – | – |")
    theta = next((r.kappa_params.theta for recs in records.values() for r in recs), 0.6)
    paths = _figures(records, theta, img, command, prefix) if records else []
    lines += ["", "## Figure 16 shape", ""] + [f"![{p.stem}](img/{p.name})" for p in paths]
    lines += ["", "Run directories: " + ", ".join(f"`{d}`" for d in dirs), ""]
    from beliefgate.fileio import atomic_write

    atomic_write(md, ("\n".join(lines) + "\n").encode("utf-8"), make_parents=False)
    typer.echo(f"wrote {md} and {len(paths)} figures")


if __name__ == "__main__":
    app()
