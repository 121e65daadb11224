"""``beliefgate policytree ...``: learn, distil or edit a policy tree, play one with no LLM.

Heavy imports stay inside the commands so that ``beliefgate --help`` stays fast.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import List, Optional

import typer

from beliefgate.console import check_output_path, check_unique, console, err_console, fail, option_items, progress_bar
from beliefgate.limits import MAX_HORIZON, MAX_SEED_COUNT

app = typer.Typer(help="Co-pi-tree: distil the planner into an executable, sandboxed policy tree.",
                  no_args_is_help=True)


def _llm_client(base_url: Optional[str], model: Optional[str], timeout: float, deadline: float, max_tokens: int,
                cache: Optional[Path], temperature: float = 0.0):
    from beliefgate.planners.client import LLMClient, LLMSettings
    from beliefgate.planners.errors import PlannerConfigError

    url = base_url or os.environ.get("BELIEFGATE_LLM_BASE_URL")
    if not url:
        fail("learning needs an OpenAI-compatible server: --llm-base-url or $BELIEFGATE_LLM_BASE_URL")
    try:
        settings = LLMSettings(base_url=url, model=model or os.environ.get("BELIEFGATE_LLM_MODEL", ""),
                               api_key=os.environ.get("OPENAI_API_KEY", "not-needed"), timeout_s=timeout,
                               deadline_s=max(deadline, timeout), max_tokens=max_tokens, cache_dir=str(cache) if cache else None,
                               temperature=temperature)
    except PlannerConfigError as exc:
        fail(str(exc))
    return LLMClient(settings)


@app.command()
def learn(
    layout: str = typer.Option(..., help="layout (see `beliefgate layouts`)"),
    partner: str = typer.Option(..., help="source partner for the rollouts (see `beliefgate partners`)"),
    out: Path = typer.Option(Path("runs/pt"), help="run directory (resumed when it exists)"),
    llm_base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible server (default $BELIEFGATE_LLM_BASE_URL)"),
    llm_model: Optional[str] = typer.Option(None, help="model name (default $BELIEFGATE_LLM_MODEL)"),
    llm_timeout: float = typer.Option(120.0, min=0.1, help="read timeout of one LLM request attempt (s)"),
    llm_deadline: float = typer.Option(600.0, min=0.1, help="wall clock of one LLM call, retries included (s)"),
    llm_max_tokens: int = typer.Option(1024, min=16, help="longest answer per LLM request"),
    llm_cache: Optional[Path] = typer.Option(None, help="on-disk LLM response cache directory"),
    iterations: int = typer.Option(10, min=1, help="refinement iterations"),
    seed: int = typer.Option(0, min=0, help="first rollout seed (rollouts use seed .. seed+N-1)"),
    rollouts: int = typer.Option(5, min=1, max=MAX_SEED_COUNT, help="episodes per candidate tree"),
    horizon: int = typer.Option(400, min=1, max=MAX_HORIZON, help="episode length"),
    seat: int = typer.Option(0, min=0, max=1, help="seat of the tree's cook"),
    repairs: int = typer.Option(2, min=0, max=5, help="repair prompts per iteration"),
    start: str = typer.Option("llm", help="'llm' (the model writes the first tree) or 'seed' (start from the seed tree)"),
    max_prompt_chars: int = typer.Option(12000, min=2000, help="prompt budget (long parts are clipped)"),
    as_json: bool = typer.Option(False, "--json", help="print the run summary as JSON"),
) -> None:
    """Run (or resume) the planner -> coder -> rollouts -> summarizer loop; writes OUT/best.py."""
    check_output_path("--out", out, folder=True)
    check_output_path("--llm-cache", llm_cache, folder=True)
    from beliefgate.errors import BeliefgateError
    from beliefgate.policytree.learn import learn as run_learn

    client = _llm_client(llm_base_url, llm_model, llm_timeout, llm_deadline, llm_max_tokens, llm_cache)
    info = {"base_url": client.settings.base_url, "model": client.settings.model,
            "max_tokens": client.settings.max_tokens, "temperature": client.settings.temperature}

    def progress(k, n, status):
        reward = status.get("reward")
        err_console.print(f"iteration {k}/{n}: source {status.get('source')}, "
                          f"reward {'-' if reward is None else f'{reward:g}'}, "
                          f"{'accepted' if status.get('accepted') else 'reverted'} ({status.get('reason')}), "
                          f"NQ {status.get('queries_after')}")

    try:
        summary = run_learn(layout, partner, client, out, llm_info=info, progress=progress, seat=seat,
                            iterations=iterations, rollouts=rollouts, horizon=horizon, seed=seed, repairs=repairs,
                            start=start, max_prompt_chars=max_prompt_chars)
    except BeliefgateError as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    console.print(f"best tree: {summary['best']} (iteration {summary['best_iteration']}, "
                  f"mean reward {summary['best_reward']:g}); NQ {summary['nq']} "
                  f"({summary['nq_failed']} without an answer); counts {summary['counts']}")


@app.command()
def distil(
    layout: str = typer.Option(..., help="a two-seat layout, classic or v2/ (see `beliefgate layouts`)"),
    partner: List[str] = typer.Option(..., help="partner(s) played in distillation (repeat for several)"),
    teacher: str = typer.Option("overforge", help="the agent whose choices label the states"),
    out: Path = typer.Option(Path("runs/distil"), help="run directory (resumed when it exists)"),
    iterations: int = typer.Option(8, help="DAgger iterations (0: the teacher or seed tree plays)"),
    episodes: Optional[int] = typer.Option(None, help="episodes played and labelled per iteration (partners and "
                                                      "seats in turn; default: every partner from both seats)"),
    rollouts: int = typer.Option(36, help="reward episodes per candidate tree (accept/revert; partners and seats "
                                          "in turn)"),
    horizon: int = typer.Option(400, help="episode length"),
    depth: int = typer.Option(6, help="largest depth of each CART"),
    min_leaf: int = typer.Option(5, help="fewest labelled states in a leaf"),
    seed: int = typer.Option(1000, help="first rollout seed; the played episodes use SEED+100 on"),
    start: str = typer.Option("teacher", help="who plays iteration 0: 'teacher' or 'seed' (the layout's seed tree)"),
    no_partner_tree: bool = typer.Option(False, "--no-partner-tree",
                                         help="ablation -PI: no partner-inference tree (a constant prediction)"),
    no_partner_feature: bool = typer.Option(False, "--no-partner-feature",
                                            help="ablation w/o P: the self tree does not read the predicted partner skill"),
    no_aggregate: bool = typer.Option(False, "--no-aggregate",
                                      help="ablation w/o R: each iteration fits its own labels only"),
    balance: bool = typer.Option(False, "--balance-classes",
                                 help="weight each skill inversely to its frequency when fitting"),
    no_belief: bool = typer.Option(False, "--no-belief",
                                   help="ablation: the trees do not read the agent's recipe belief (V2 layouts "
                                        "with several recipes)"),
    gate: bool = typer.Option(False, "--gate",
                              help="the trees play with the belief gate (policy-tree:PATH:bayes) and read its MAP "
                                   "teammate skill"),
    env_option: Optional[List[str]] = typer.Option(
        None, "--env-option", help="an environment option of every episode as KEY=VALUE (repeatable; VALUE read "
                                   "as JSON), e.g. agent_view_size=1 for a hidden recipe on a V2 layout"),
    as_json: bool = typer.Option(False, "--json", help="print the run summary as JSON"),
) -> None:
    """Distil a teacher agent into a sandboxed policy tree (DAgger + CART); writes OUT/best.py."""
    check_output_path("--out", out, folder=True)
    from beliefgate.errors import BeliefgateError
    from beliefgate.policytree.distil import DistilConfig, Distiller

    def progress(k, n, status):
        reward = status.get("reward")
        err_console.print(f"iteration {k}/{n - 1}: played {status.get('played')}, {status.get('states')} states "
                          f"({status.get('total_states')} pooled), agreement {status.get('agreement')}, "
                          f"fit {status.get('fit_agreement')}, leaves {status.get('partner_leaves')}+"
                          f"{status.get('self_leaves')}, reward {'-' if reward is None else f'{reward:g}'}, "
                          f"{'accepted' if status.get('accepted') else 'reverted'} ({status.get('seconds')} s)")

    try:
        cfg = DistilConfig(layout=layout, partners=tuple(partner), teacher=teacher, iterations=iterations,
                           episodes=episodes, rollouts=rollouts, horizon=horizon, depth=depth, min_leaf=min_leaf,
                           seed=seed, start=start, partner_tree=not no_partner_tree,
                           partner_feature=not no_partner_feature, aggregate=not no_aggregate, balance=balance,
                           belief=not no_belief, gate=gate, env_options=option_items(env_option or []))
        summary = Distiller(cfg, out).run(progress)
    except BeliefgateError as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    console.print(f"best tree: {summary['best']} (iteration {summary['best_iteration']}, "
                  f"mean reward {summary['best_reward']:g}); teacher decisions {summary['nq']}; "
                  f"counts {summary['counts']}")


@app.command()
def edit(
    source: str = typer.Option(..., "--from", help="the tree to edit: a distillation or edit run dir, a policy JSON "
                                                   "(best_policy.json) or a tree file emitted by distillation"),
    layout: str = typer.Option(..., help="layout (the tree's own)"),
    partner: List[str] = typer.Option(..., help="partner(s) of the reward rollouts (repeat for several)"),
    out: Path = typer.Option(Path("runs/pt_edit"), help="run directory (resumed when it exists)"),
    llm_base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible server (default $BELIEFGATE_LLM_BASE_URL)"),
    llm_model: Optional[str] = typer.Option(None, help="model name (default $BELIEFGATE_LLM_MODEL)"),
    llm_timeout: float = typer.Option(300.0, min=0.1, help="read timeout of one LLM request attempt (s)"),
    llm_deadline: float = typer.Option(600.0, min=0.1, help="wall clock of one LLM call, retries included (s)"),
    llm_max_tokens: int = typer.Option(160, min=16, help="longest answer per LLM request (an edit takes ~60 tokens)"),
    llm_temperature: float = typer.Option(0.8, min=0.0, max=2.0,
                                          help="sampling temperature (0: the same prompt gives the same edit)"),
    llm_cache: Optional[Path] = typer.Option(None, help="on-disk LLM response cache directory"),
    iterations: int = typer.Option(10, min=1, help="edits asked (iteration 0 plays the starting tree)"),
    rollouts: int = typer.Option(8, min=1, max=MAX_SEED_COUNT,
                                 help="reward episodes per candidate (partners and seats in turn)"),
    horizon: int = typer.Option(400, min=1, max=MAX_HORIZON, help="episode length"),
    seed: int = typer.Option(1000, min=0, help="first rollout seed (rollouts use seed .. seed+N-1)"),
    max_prompt_chars: int = typer.Option(12000, min=1500, help="prompt budget (long parts are clipped)"),
    op: Optional[List[str]] = typer.Option(None, "--op", help="offer only this edit operation (repeat; default all: "
                                                             "insert_rule, delete_rule, reorder_rules, "
                                                             "change_threshold, swap_skill)"),
    as_json: bool = typer.Option(False, "--json", help="print the run summary as JSON"),
) -> None:
    """Ask an LLM for JSON-schema-constrained edits of a distilled tree; keep those that raise the reward."""
    check_output_path("--out", out, folder=True)
    check_output_path("--llm-cache", llm_cache, folder=True)
    from beliefgate.envs.domain import partner_key
    from beliefgate.errors import BeliefgateError
    from beliefgate.policytree.edits import Editor, prepare

    check_unique("--partner", partner, key=partner_key)

    try:
        cfg, start = prepare(source, layout, partner, iterations=iterations, rollouts=rollouts, horizon=horizon,
                             seed=seed, max_prompt_chars=max_prompt_chars, **({"ops": tuple(op)} if op else {}))
    except BeliefgateError as exc:
        fail(str(exc))
    client = _llm_client(llm_base_url, llm_model, llm_timeout, llm_deadline, llm_max_tokens, llm_cache,
                         llm_temperature)
    info = {"base_url": client.settings.base_url, "model": client.settings.model,
            "max_tokens": client.settings.max_tokens, "temperature": client.settings.temperature}

    def progress(k, n, status):
        reward = status.get("reward")
        err_console.print(f"iteration {k}/{n}: {status.get('edit') or '(starting tree)'} -> {status.get('outcome')}, "
                          f"reward {'-' if reward is None else f'{reward:g}'} ({status.get('seconds')} s)")

    try:
        summary = Editor(cfg, client, out, start, info).run(progress)
    except BeliefgateError as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    best = summary["best_reward"]
    console.print(f"best tree: {summary['best']} (iteration {summary['best_iteration']}, mean reward "
                  f"{'-' if best is None else f'{best:g}'}; starting tree {summary['reward_before']}); "
                  f"NQ {summary['nq']}; counts {summary['counts']}")


def _fmt(x: float, digits: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


@app.command()
def run(
    tree: str = typer.Argument(..., help="tree file (e.g. runs/pt/best.py), seed:LAYOUT or distilled:LAYOUT"),
    layout: List[str] = typer.Option(..., help="layout(s) to play on (repeat for a transfer table)"),
    partner: List[str] = typer.Option(..., help="partner(s)"),
    seeds: int = typer.Option(20, min=1, max=MAX_SEED_COUNT, help="episodes per setting (seeds SEED .. SEED+N-1)"),
    seed: int = typer.Option(0, min=0, help="first seed"),
    seat: str = typer.Option("0", help="seat of the tree: 0, 1 or both"),
    horizon: int = typer.Option(400, min=1, max=MAX_HORIZON, help="episode length"),
    bayes: bool = typer.Option(False, help="teammate_last_inferred_skill from the belief gate's MAP"),
    as_json: bool = typer.Option(False, "--json", help="print JSON rows"),
) -> None:
    """Play a tree with zero LLM calls; mean reward with 95% bootstrap CIs per setting."""
    from rich.table import Table

    from beliefgate.errors import BeliefgateError
    from beliefgate.policytree.agent import check_tree_source, parse_spec
    from beliefgate.policytree.evaluate import evaluate_tree, summarize

    from beliefgate.envs.domain import layout_key, partner_key

    check_unique("--layout", layout, key=layout_key)
    check_unique("--partner", partner, key=partner_key)
    seats = {"0": (0,), "1": (1,), "both": (0, 1)}.get(seat)
    if seats is None:
        fail(f"--seat must be 0, 1 or both, got {seat!r}")
    spec = tree + (":bayes" if bayes else "")
    try:
        check_tree_source(parse_spec(spec)[0])  # a bad file fails here, naming it, before any episode
        with progress_bar() as bar:
            task = bar.add_task("episodes", total=None)
            rows = evaluate_tree(spec, layout, partner, range(seed, seed + seeds), seats, horizon,
                                 progress=lambda i, n, label: bar.update(task, total=n, completed=i,
                                                                         description=label))
    except BeliefgateError as exc:
        fail(str(exc))
    table_rows = summarize(rows)
    if as_json:
        print(json.dumps({"tree": spec, "seeds": [seed, seed + seeds - 1], "horizon": horizon, "rows": table_rows},
                         indent=2))
        return
    table = Table(title=f"{spec}: {seeds} seeds from {seed}, {horizon} steps, zero LLM calls")
    for col in ("layout", "partner", "seat", "reward", "95% CI", "soups", "IA", "tree errors", "not exec/ep",
                "p50 us", "p99 us", "LLM calls"):
        table.add_column(col, justify="left" if col in ("layout", "partner") else "right")
    for r in table_rows:
        table.add_row(r["layout"], r["partner"], str(r["seat"]), _fmt(r["reward"]),
                      f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]", _fmt(r["deliveries"], 2),
                      _fmt(r["intent_accuracy"], 3), str(r["tree_errors"]), _fmt(r["not_executable_per_ep"]),
                      _fmt(r["latency_p50_us"]), _fmt(r["latency_p99_us"]), str(r["llm_calls"]))
    console.print(table)
    console.print("IA: share of steps where the tree's predicted partner skill is the partner's true skill; "
                  "latency: flat state + sandbox call per decision.")


@app.command()
def show(tree: str = typer.Argument(..., help="tree file, seed:LAYOUT or distilled:LAYOUT")) -> None:
    """Print a tree as text (its two-part description)."""
    from beliefgate.errors import BeliefgateError
    from beliefgate.policytree.agent import check_tree_source
    from beliefgate.policytree.seeds import tree_text

    try:  # validated as `policytree run` validates it: a file the sandbox refuses is an error here too
        text = tree_text(check_tree_source(tree))
    except BeliefgateError as exc:
        fail(str(exc))
    print(text or "(this tree file has no textual description)")
