"""The ``beliefgate`` command line.

Only this module reads the environment and prints; everything it calls is a
plain function that returns data.
"""

from __future__ import annotations

import json
import math
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, List, Optional

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import typer
from rich.table import Table

from beliefgate.console import (BoundaryGroup, check_output_path, option_items, console, err_console, fail as _fail,  # noqa: F401
                                check_figure_path, check_unique, load_input, progress_bar, say)  # (check_output_path, err_console re-exported)
from beliefgate.limits import MAX_HORIZON, MAX_RESAMPLES, MAX_SEED_COUNT

app = typer.Typer(
    help="beliefgate: partner-skill beliefs and belief-driven control signals for cooperative agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=BoundaryGroup,  # the one error boundary: one line + exit 2 (bad input) / 1 (failure); --debug: traceback
)


@app.callback()
def _main_options(
    debug: bool = typer.Option(False, "--debug", help="show the full traceback when a command fails "
                               "(also BELIEFGATE_DEBUG=1)"),
) -> None:
    """beliefgate: partner-skill beliefs and belief-driven control signals for cooperative agents."""


@app.command()
def layouts(as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table")) -> None:
    """List the layouts of every installed domain (backend and players; Overcooked's kitchens drawn)."""
    from beliefgate.envs.domain import domains

    rows = [d.describe_layout(name) for d in domains() for name in d.layouts()]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title="Layouts")
    for col in ("layout", "backend", "players", "size", "floor", "pots", "onions", "dishes", "serving", "grid"):
        table.add_column(col)

    def cell(r, key, fmt=str):
        return fmt(r[key]) if key in r else "-"

    for r in rows:
        table.add_row(r["name"], r["backend"], str(r["players"]), cell(r, "size", lambda v: "x".join(map(str, v))),
                      cell(r, "floor_cells"), cell(r, "pots", lambda v: str(len(v))),
                      cell(r, "onion_dispensers", lambda v: str(len(v))),
                      cell(r, "dish_dispensers", lambda v: str(len(v))), cell(r, "serving", lambda v: str(len(v))),
                      cell(r, "grid", "\n".join))
    console.print(table)


@app.command()
def partners(
    files: Optional[List[Path]] = typer.Argument(None, help="partner files (YAML/JSON) to validate and list too"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON list (each row with its full spec)"),
    schema: bool = typer.Option(False, "--schema", help="print the JSON schema of a partner file"),
) -> None:
    """List the partner population -- scripted, behaviour-cloned and trained (every name is also a valid
    --ego; a trained one also as ppo:NAME); partner files are validated (a trained one's checkpoint loaded)."""
    from beliefgate.envs.overcooked.layouts import LAYOUTS
    from beliefgate.envs.overcooked.partners import PARTNERS, load_partner, partner_schema

    if schema:
        print(json.dumps(partner_schema(), indent=2))
        return
    from beliefgate.envs.domain import domains
    from beliefgate.errors import InputError

    v2 = next((d for d in domains() if d.name == "overcooked_v2"), None)
    extra = []
    try:
        for f in files or []:
            if v2 is not None and v2.is_partner(str(f)):   # an OvercookedV2 partner file (scripted or trained)
                v2.check_partners([str(f)])
                from beliefgate.envs.overcooked_v2.partners import load_partner as load_v2

                extra.append(load_v2(f))
            else:
                extra.append(load_partner(f))
    except InputError as exc:   # a bad partner file or a checkpoint that does not load (CheckpointError)
        _fail(str(exc))
    rows = [p.summary() for p in PARTNERS.values()]
    rows.append({"name": "bc", "description": "behaviour cloning on the 2019 human data (bc = the episode's layout, "
                 "bc:<layout>)", "kind": "bc", "group": "human", "switches": False,
                 "layouts": list(LAYOUTS), "noise": 0.0, "source": "builtin", "spec": {}})
    for d in domains():  # other backends' partners (OvercookedV2's recipe-seeing cooks and trained policies)
        if hasattr(d, "partner_summaries"):
            rows += d.partner_summaries()
    rows += [p.summary() for p in extra]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title="Partners (`--json` for every field, `--schema` for the file format)")
    for col in ("name", "kind", "group", "switches", "layouts", "description"):
        table.add_column(col)
    for r in rows:
        kind = r["kind"] + (f" ({r['training']})" if r.get("training") else "")
        table.add_row(r["name"], kind, r["group"] or "-",
                      str(len(r["spec"]["switches"])) if r["switches"] else "no",
                      ",".join(r["layouts"] or ["any"]), r["description"])
    console.print(table)


@app.command()
def episode(
    layout: str = typer.Option(..., help="layout name (see `beliefgate layouts`)"),
    ego: Optional[str] = typer.Option(None, help="ego agent: bayes-belief[:full|no_replan|no_prompt|no_belief|paper], "
                                      "overforge, proagent, periodic-N, completion-held, llm-judge, hypothetical-minds, "
                                      "bc, policy-tree:FILE, any partner name (`beliefgate partners`) or a partner file "
                                      "(default: the layout's default partner, balanced on classic layouts)"),
    partner: Optional[List[str]] = typer.Option(
        None, help="partner name (see `beliefgate partners`) or partner file path; repeat it once per other "
        "player, in seat order (default: balanced in every other seat, or the domain's first partner)"),
    seed: int = typer.Option(0, min=0, help="episode seed (>= 0)"),
    horizon: int = typer.Option(400, min=1, max=MAX_HORIZON, help="episode length in steps"),
    seat: int = typer.Option(0, min=0, help="player slot of the ego (0 .. players - 1)"),
    log: Optional[Path] = typer.Option(None, help="write the trajectory log (JSONL) here (its folder must exist)"),
    llm_base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible server for LLM agents "
                                               "(default: $BELIEFGATE_LLM_BASE_URL; none = offline rule planner)"),
    llm_model: Optional[str] = typer.Option(None, help="model name (default: $BELIEFGATE_LLM_MODEL)"),
    llm_timeout: float = typer.Option(30.0, min=0.1, help="read timeout of one LLM request attempt, seconds"),
    llm_deadline: float = typer.Option(60.0, min=0.1, help="wall-clock limit of one LLM call, all retries included"),
    llm_budget: Optional[float] = typer.Option(None, min=0.1, help="LLM wall time allowed per episode, seconds "
                                               "(default: no limit); once spent, plans fall back to the rule"),
    llm_cache: Optional[Path] = typer.Option(None, help="directory for an on-disk LLM response cache"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as one JSON object"),
    env_option: Optional[List[str]] = typer.Option(
        None, "--env-option", help="an environment option of the layout's domain as KEY=VALUE (VALUE read as "
        "JSON where it parses, else text), repeatable; OvercookedV2: sample_recipe_on_delivery, agent_view_size, "
        "start_cooking_interaction, negative_rewards, indicate_successful_delivery, recipes"),
    memory: Optional[Path] = typer.Option(None, "--memory", help="partner-memory store (SQLite; created when "
                                          "missing): the ego starts from what it remembers of each partner and the "
                                          "episode is added to it (`beliefgate memory show PATH`)"),
    llm_teammates: bool = typer.Option(False, "--llm-teammates", help="give the model to every teammate that uses "
                                       "one too (self-play in words: every seat writes and reads its messages)"),
) -> None:
    """Play one episode on the real dynamics of the layout's domain and summarise it."""
    from beliefgate.envs.domain import (PartnerSpecError, PlayerCountError, UnknownLayoutError,
                                        UnknownPartnerError, check_seat, domain_for_layout)
    from beliefgate.eval.episode import partner_label, run_episode
    from beliefgate.planners.errors import PlannerConfigError

    try:
        domain = domain_for_layout(layout)
        layout = domain.resolve_layout(layout)
    except UnknownLayoutError as exc:
        _fail(f"--layout: {exc}")
    env_options = _env_options(env_option or [], domain, layout)
    players = domain.players(layout)
    ego = ego if ego is not None else domain.default_partner()
    partners = list(partner) if partner else [domain.default_partner()] * (players - 1)
    try:
        domain.check_players(layout, len(partners) + 1)
        check_seat(seat, players)
    except PlayerCountError as exc:
        _fail(f"{'--seat' if 'seat' in str(exc) else '--partner'}: {exc}")
    try:  # partner files are read and checked before anything runs
        domain.check_partners([n for n in (ego, *partners) if domain.is_partner(n)], horizon)
    except PartnerSpecError as exc:
        _fail(str(exc))
    check_output_path("--llm-cache", llm_cache, folder=True)

    llm = None
    base_url = llm_base_url or os.environ.get("BELIEFGATE_LLM_BASE_URL")
    if base_url:
        from beliefgate.planners.client import LLMClient, LLMSettings

        try:
            llm = LLMClient(LLMSettings(base_url=base_url, model=llm_model or os.environ.get("BELIEFGATE_LLM_MODEL", ""),
                                        api_key=os.environ.get("OPENAI_API_KEY", "not-needed"),
                                        timeout_s=llm_timeout, deadline_s=llm_deadline, budget_s=llm_budget,
                                        cache_dir=str(llm_cache) if llm_cache else None))
        except PlannerConfigError as exc:
            _fail(str(exc))
    _check_episode_inputs(ego, partners, log, llm, domain)
    if llm_teammates and llm is None:
        _fail("--llm-teammates: no model to give them (add --llm-base-url URL)")
    if memory is not None:  # the store's faults and an ego without a gate: one line, before anything runs
        from beliefgate.agents.memory import MemoryStore
        from beliefgate.agents.registry import make_agent

        if not getattr(make_agent(ego, domain=domain), "keeps_belief", False):
            _fail(f"--memory: ego {ego!r} keeps no partner belief (no gate), so a memory would have no effect")
        MemoryStore(memory).close()
    try:
        result = run_episode(layout, ego, partners, seed=seed, horizon=horizon, seat=seat, log_path=log, llm=llm,
                             env_options=env_options or None, memory=memory, llm_teammates=llm_teammates)
    except (UnknownLayoutError, UnknownPartnerError, PlannerConfigError) as exc:
        _fail(str(exc))
    summary = dict(result.summary)
    if ego.split(":", 1)[0] == "overforge":  # the PCM's own read-outs (kappa, commits, rollouts, latency)
        from beliefgate.eval.pcm import pcm_metrics

        summary["pcm"] = {k: (None if isinstance(v, float) and math.isnan(v) else v)
                          for k, v in pcm_metrics(result.trajectory).items()}
    from beliefgate.agents.planning import NO_LLM_SERVER
    from beliefgate.eval.metrics import gate_firings

    if any(f.get("detail") == NO_LLM_SERVER for f in summary.get("fallback_counts", {}).get("last", [])):
        err_console.print(f"note: {NO_LLM_SERVER} (counted as a planner fallback; give --llm-base-url URL "
                          "--llm-model M for a model)")
    firings = gate_firings(result.trajectory)
    if firings.gated:  # what became of the ego gate's firings: interrupts, and the vetoes per filter
        summary["gate"] = {"fired": firings.fired, "interrupts": firings.interrupts, "vetoes": dict(firings.vetoes)}
    if as_json:
        print(json.dumps(summary))
        return
    table = Table(title=f"episode {layout}: {ego} (seat {seat}) + {partner_label(partners)}, seed {seed}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key in ("deliveries", "reward", "steps", "replans", "llm_calls", "fallbacks", "wall_s"):
        table.add_row(key, str(summary[key]))
    for entry in (summary.get("memory") or {}).get("entries", ()):
        table.add_row(f"memory: {entry['partner']} (seat {entry['seat']})",
                      f"episode {entry['seq'] + 1}, {entry['recalled_episodes']} remembered")
    for key, value in summary.get("pcm", {}).items():
        table.add_row(key, "-" if value is None else f"{value:.3g}")
    if firings.gated:
        table.add_row("gate", firings.describe())
    if log is not None:
        table.add_row("log", str(log))
    console.print(table)


def _env_options(items: List[str], domain, layout: str) -> Dict[str, Any]:
    """``--env-option KEY=VALUE`` items as a dict, checked by the layout's domain before anything runs."""
    from beliefgate.errors import InputError

    out = option_items(items)
    if out:
        try:
            domain.check_env_options(layout, **out)
        except InputError as exc:
            _fail(f"--env-option: {exc}")
    return out


def _check_episode_inputs(ego: str, partners: List[str], log: Optional[Path], llm=None, domain=None) -> None:
    """Refuse bad agent names/options and an unusable --log before anything runs or is written.

    ``llm`` (the episode's client, or None) is handed to the agents that take one, so an
    option that needs a model (``overforge:llm``) is checked as it will be built.
    """
    from beliefgate.agents.registry import make_agent, uses_llm
    from beliefgate.errors import InputError, LookupFailure

    for flag, name in (("--ego", ego), *(("--partner", p) for p in partners)):
        try:
            make_agent(name, llm=llm if llm is not None and uses_llm(name) else None, domain=domain)
        except (InputError, LookupFailure) as exc:
            _fail(f"{flag} {name!r}: {exc}")
    if log is not None:
        check_output_path("--log", log)


@app.command()
def demo(
    seed: int = typer.Option(0, min=0, help="first seed"),
    seeds: int = typer.Option(3, min=1, max=MAX_SEED_COUNT, help="seeds per agent and partner in the agent comparison"),
    horizon: int = typer.Option(400, min=1, max=MAX_HORIZON, help="episode length"),
    partner: str = typer.Option("switch-sourcer-to-plater", help="partner for the per-layout gate tour"),
    out: Optional[Path] = typer.Option(None, help="directory for the tour's trajectory logs and report page "
                                       "(default: a temp dir, removed at the end unless --keep)"),
    keep: bool = typer.Option(False, "--keep", help="keep the temp dir of logs and the report page (with no --out)"),
) -> None:
    """Offline tour: belief-driven agents vs baselines with switching partners, then the belief agent on every layout."""
    from beliefgate.eval.demo import TOUR_EGO

    from beliefgate.envs.overcooked.partners import check_partners

    check_partners([partner], horizon)  # an unknown name or a bad partner file stops the tour before it starts
    _check_episode_inputs(TOUR_EGO, [partner], None)
    check_output_path("--out", out, folder=True)
    with demo_folder(out, keep) as out_dir:
        _demo_tour(seed, seeds, horizon, partner, out_dir)
    if out is None and not keep:
        console.print("Trajectory logs and report removed with their temp folder (keep them: --keep or --out DIR). "
                      "Next: `beliefgate switches`, `beliefgate episode --help`")
    else:
        console.print(f"Trajectory logs: {out_dir}; report page: {out_dir / 'report.html'}  "
                      "(next: `beliefgate switches`, `beliefgate episode --help`)")


@contextmanager
def demo_folder(out: Optional[Path], keep: bool):
    """The demo's folder: ``out`` when given (kept), else a fresh temp folder, removed on leaving
    (an error too) unless ``keep``."""
    import shutil
    import tempfile

    folder = out or Path(tempfile.mkdtemp(prefix="beliefgate-demo-"))
    try:
        yield folder
    finally:
        if out is None and not keep:
            shutil.rmtree(folder)


def _demo_tour(seed: int, seeds: int, horizon: int, partner: str, out_dir: Path) -> None:
    """The demo's body: the comparison, then the belief agent on every layout, logs and one report in ``out_dir``."""
    from beliefgate.eval.demo import (COMPARISON_CAPTION, TOUR_EGO, compare_agents, comparison_table,
                                      comparison_verdict, run_demo)
    from beliefgate.viewer.report import write_report

    if not err_console.is_interactive:  # progress_bar draws nothing here (make demo's log): say what is running
        from beliefgate.eval.demo import AGENT_COMPARISON, SWITCHERS

        err_console.print(f"demo: {len(AGENT_COMPARISON) * len(SWITCHERS) * seeds} episodes of {horizon} steps on "
                          "cramped_room, then one per layout")
    with progress_bar() as bar:
        task = bar.add_task("demo", total=None)

        def progress(i, n, label):
            bar.update(task, total=n, completed=i, description=label)

        agents = compare_agents(seeds=range(seed, seed + seeds), horizon=horizon, progress=progress)
        rows = run_demo(seed=seed, horizon=horizon, partner=partner, out_dir=out_dir, progress=progress)
    console.print(comparison_table(
        agents, f"cramped_room, role-switching partners, {seeds} seeds x 2 partners, {horizon} steps"))
    console.print(COMPARISON_CAPTION)
    console.print(comparison_verdict(agents), style="bold")
    table = Table(title=f"the belief agent on every layout: ego '{TOUR_EGO}' + '{partner}', seed {seed}")
    table.add_column("layout", no_wrap=True)
    for col in ("soups", "reward", "MAP acc", "conf", "gate fired", "replans", "vetoed"):
        table.add_column(col, justify="right")
    for r in rows:
        f = r["firings"]
        table.add_row(r["layout"], str(r["deliveries"]), f"{r['reward']:.0f}", f"{r['map_accuracy']:.2f}",
                      f"{r['mean_confidence']:.2f}", str(f.fired), str(f.interrupts), str(f.vetoed))
    console.print(table)
    console.print("MAP acc: share of the partner's steps (true skill known) where the reference gate's most probable "
                  "skill is the true one; conf: mean posterior of that skill; gate fired / replans / vetoed: the "
                  "ego's own gate, its firings that interrupted the running skill, and those a filter stopped.")
    total = sum((r["firings"] for r in rows[1:]), rows[0]["firings"]) if rows else None
    if total is not None and total.fired:
        console.print(f"Vetoes on the tour: {total.describe()}.")
    first = rows[0] if rows else None
    if first is not None and first["log"] != "-":
        write_report(first["log"], out_dir / "report.html")


@app.command()
def switches(
    seeds: int = typer.Option(4, min=1, max=MAX_SEED_COUNT, help="seeds per layout and partner (first-seed .. first-seed + N - 1)"),
    first_seed: int = typer.Option(0, "--first-seed", min=0, help="first seed (choose settings on seeds >= 1000)"),
    layouts_: Optional[List[str]] = typer.Option(None, "--layout", help="layouts (repeatable; default: four open layouts)"),
    partners_: Optional[List[str]] = typer.Option(None, "--partner", help="partner names or files (repeatable; "
                                                  "A+B on three players; default: the first layout's domain's "
                                                  "switchers: Overcooked's 12 shipped behaviour-preferring ones, "
                                                  "OvercookedV2's recipe-re-reading cooks)"),
    ego: Optional[str] = typer.Option(None, "--ego", help="the scored partner's teammate in seat 0 (and further "
                                      "seats) (default: the domain's: balanced; v2-server on v2/ layouts)"),
    env_option: Optional[List[str]] = typer.Option(
        None, "--env-option", help="an environment option of the layouts' domain as KEY=VALUE (repeatable; "
        "v2/ layouts default to sample_recipe_on_delivery=true, when their partners change course)"),
    horizon: int = typer.Option(400, min=10, max=MAX_HORIZON, help="episode length"),
    window: int = typer.Option(10, min=1, max=MAX_HORIZON, help="steps after a switch within which an alarm counts as a detection"),
    params_file: Optional[Path] = typer.Option(None, "--params", help="GateParams JSON (default: the defaults)"),
    n_boot: int = typer.Option(2000, min=100, max=MAX_RESAMPLES, help="bootstrap resamples per interval"),
    out: Optional[Path] = typer.Option(None, help="write the full JSON result (config included) here"),
    plot: Optional[Path] = typer.Option(None, help="write the false-alarm/delay trade-off PNG here"),
    md: Optional[Path] = typer.Option(None, help="write the summary table as Markdown here (for docs)"),
    cache: Optional[Path] = typer.Option(None, help="folder of played episodes to reuse (logged there on first use)"),
    tune: bool = typer.Option(False, "--tune", help="search gate settings on these seeds instead (see docs/switches.md)"),
    max_fa: float = typer.Option(1.0, min=0.0, help="false-alarm budget per 100 steps (best points, --tune)"),
    min_detection: float = typer.Option(0.9, min=0.0, max=1.0, help="detection target for --tune"),
    params_out: Optional[Path] = typer.Option(None, "--params-out", help="--tune: write the best stable-MAP "
                                              "setting as GateParams JSON here (pass it back with --params)"),
    as_json: bool = typer.Option(False, "--json", help="print the JSON result"),
) -> None:
    """Detection rate, delay and false alarms of the gates, CUSUM, BOCPD and the naive rule on hidden partner switches."""
    from beliefgate.beliefs.gate import GateParams
    from beliefgate.errors import InputError, LookupFailure
    from beliefgate.eval import switches as sw

    from beliefgate.envs.domain import layout_key, partner_key

    check_unique("--layout", layouts_, key=layout_key)
    check_unique("--partner", partners_, key=partner_key)
    if tune and (plot is not None or md is not None):
        _fail("--plot and --md draw a benchmark run, not a --tune search; run them without --tune")
    if params_out is not None and not tune:
        _fail("--params-out only applies with --tune (it writes the setting a --tune search recommends)")
    if tune and (cache is not None or params_file is not None):
        _fail("--cache and --params apply to a benchmark run, not to a --tune search (it plays its episodes "
              "afresh and searches the settings itself); run them without --tune")
    outputs = [(flag, path) for flag, path in (("--out", out), ("--plot", plot), ("--md", md),
                                                ("--params-out", params_out)) if path is not None]
    for flag, path in outputs:
        check_output_path(flag, path)
    check_figure_path("--plot", plot)
    from beliefgate.validation import repeats

    same_file = repeats(outputs, key=lambda output: output[1].resolve())
    if same_file:
        (first, _), (second, path) = same_file[0][1][:2]
        _fail(f"{first} and {second} name the same file {path}: the second would overwrite the first")
    check_output_path("--cache", cache, folder=True)
    params = load_input("--params", params_file, GateParams.load) if params_file else GateParams()
    seed_list = range(first_seed, first_seed + seeds)
    env_options = option_items(env_option or [])
    for layout in layouts_ or sw.DEFAULT_LAYOUTS:  # the layouts, then the options, before the first episode
        try:
            sw.benchmark_ego(layout, ego)
        except (InputError, LookupFailure) as exc:
            _fail(str(exc))
        try:
            sw.episode_options(layout, env_options)
        except InputError as exc:
            _fail(f"--env-option: {exc}")
    try:
        with progress_bar() as bar:
            task = bar.add_task("episodes", total=None)

            def progress(i, n, label):
                bar.update(task, total=n, completed=i, description=label)

            if tune:
                result = sw.tune_gate(layouts_ or sw.DEFAULT_LAYOUTS, partners_, seed_list, horizon, window,
                                      ego=ego, max_fa=max_fa, min_detection=min_detection, progress=progress,
                                      env_options=env_options or None)
            else:
                bench = sw.run_benchmark(params, layouts_ or sw.DEFAULT_LAYOUTS, partners_, seed_list, horizon,
                                         window, ego=ego, n_boot=n_boot, progress=progress, cache_dir=cache,
                                         env_options=env_options or None)
                result = bench.to_dict()
                for entry in bench.diagnostics.get("cache_replaced", ()):
                    say("note:", f"cache entry {entry} was played again and replaced")
    except (InputError, LookupFailure) as exc:
        _fail(str(exc))
    if out is not None:
        from beliefgate.fileio import atomic_write, json_safe

        atomic_write(out, (json.dumps(json_safe(result), indent=1, allow_nan=False) + "\n").encode())
    if tune:
        if params_out is not None:
            try:
                sw.recommended_params(result).save(params_out)
            except InputError as exc:
                _fail(str(exc))
        if as_json:
            print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))
        else:
            for line in sw.tuning_lines(result):
                console.print(line)
        return
    if plot is not None:
        sw.plot_tradeoff(bench, plot, max_fa=max_fa)
    if md is not None:
        md.write_text(sw.summary_markdown(bench, max_fa), encoding="utf-8")
    if as_json:
        print(json.dumps(result, indent=2))
        return
    console.print(sw.summary_table(bench, max_fa))
    for name in ("stable-MAP gate", "change-point gate"):
        g = bench.sweeps[name].operating_point
        naive = sw.naive_false_alarms_at(bench, g.mean_delay)
        if bench.switches == 0:
            console.print(f"{name}: {g.fa_per_100:.2f} false alarms/100 steps (no hidden switch to detect)")
        elif naive is None:
            console.print(f"{name}: delay {g.mean_delay:.2f} lies outside the naive rule's sweep")
        else:
            verdict = "fewer" if g.fa_per_100 < naive else "NOT fewer"
            console.print(f"{name}: {g.fa_per_100:.2f} false alarms/100 steps at delay {g.mean_delay:.2f}; "
                          f"the naive rule needs {naive:.2f} for the same delay: {verdict}")
    evidence = sw.evidence_text(bench)
    if evidence is not None:
        console.print(evidence + " The 'established' and 'identifiable' columns are the detection rates on "
                      "those switches alone.")
    if bench.switches < 200:
        console.print(f"note: only {bench.switches} hidden switches; use more seeds for tight intervals (>= 200)")
    console.print("Delay counts a missed switch as the full window; a hidden switch is a change of the partner's "
                  "true skill that no visible completion or vanished target announced.")


# ---------------------------------------------------------------------------- plug-in command groups
#: shared group for evaluation commands (`beliefgate eval ...`)
eval_app = typer.Typer(help="Evaluate agents and beliefs (episode grids, human data).", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
app.add_typer(__import__("beliefgate.policytree.cli", fromlist=["app"]).app, name="policytree")  # learn|distil|edit|run|show
app.add_typer(__import__("beliefgate.experiments.overforge_report", fromlist=["app"]).app, name="overforge")  # run|report
app.add_typer(__import__("beliefgate.rl.cli", fromlist=["app"]).app, name="train")  # ppo

#: modules that add their commands with ``register(app, eval_app)``; each keeps heavy
#: imports inside its command functions so that ``beliefgate --help`` stays fast
COMMAND_MODULES = (
    "beliefgate.models.cli",       # fit, diagnose, compare
    "beliefgate.eval.sensitivity.cli",  # sensitivity oat|global
    "beliefgate.serve.cli",        # serve
    "beliefgate.experiments.data_cli",  # data fetch-human, eval human
    "beliefgate.experiments.eval_cli",  # eval run|report
    "beliefgate.viewer.cli",       # report, play
    "beliefgate.experiments.memory_cli",  # memory show|erase
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
