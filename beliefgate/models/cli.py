"""``beliefgate fit``, ``beliefgate diagnose`` and ``beliefgate compare``.

Registered by :mod:`beliefgate.cli` through :func:`register`. Heavy imports (JAX,
NumPyro, ArviZ) happen inside the commands so that ``beliefgate --help`` stays fast.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table
from rich.text import Text

from beliefgate.console import check_not_input, check_output_path, console, err_console, fail as _fail, progress_bar, say
from beliefgate.limits import MAX_CHAINS, MAX_DRAWS, MAX_SVI_STEPS
from beliefgate.models.transitions import TRANSITIONS


#: ``--model``: every transition component's name (``models.transitions``), then ``kappa`` and ``goal``.
ModelChoice = Enum("ModelChoice", {**{name: name for name in TRANSITIONS}, "kappa": "kappa", "goal": "goal"},
                   type=str)


_MODEL_HELP = (" or ".join(f"{t.name} ({t.summary})" for t in TRANSITIONS.values())
               + " skill model, kappa (OverForge branch utilities: mu0, sigma0, tau, sigma_r), or goal "
                 "(the recipe model over OvercookedV2 logs: beta, epsilon, hazard; docs/goal.md)")


class MethodChoice(str, Enum):
    nuts = "nuts"
    svi = "svi"


class GuideChoice(str, Enum):
    normal = "normal"
    mvn = "mvn"


class ChainMethod(str, Enum):
    auto = "auto"
    parallel = "parallel"
    sequential = "sequential"
    vectorized = "vectorized"


def _no_warnings(method: str) -> str:
    """The all-clear line; for SVI it says what its r_hat and ESS do not show."""
    if method == "svi":
        return ("no warnings: the ELBO loss has settled, ESS >= 400, predictive check passed (SVI: r_hat and ESS "
                "are of i.i.d. guide draws; the guide's fit to the posterior is not checked: compare --method nuts)")
    return "no warnings: r_hat <= 1.01, ESS >= 400, no divergences, predictive check passed"


def _quiet_arviz() -> None:
    """Silence ArviZ's import notice, its one-chain log line and its Pareto-k warning.

    The commands report the same facts themselves (warnings list, compare's
    ``warning`` column).
    """
    import logging
    import warnings

    warnings.filterwarnings("ignore", module="arviz")
    warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")
    logging.getLogger("arviz").setLevel(logging.ERROR)
    import arviz

    # ArviZ logs through a Logger("arviz") of its own, outside logging's registry (getLogger above
    # does not reach it): "Shape validation failed" on every one-chain fit came through
    own = getattr(arviz, "_log", None)
    if isinstance(own, logging.Logger):
        own.setLevel(logging.ERROR)


def _parse_fixed(items: List[str]) -> dict:
    fixed = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            _fail(f"--fix takes NAME=VALUE (e.g. hazard=0), got {item!r}")
        if name.strip() in fixed:
            _fail(f"--fix {item!r}: {name.strip()} is already fixed (at {fixed[name.strip()]:g}); give each once")
        try:
            fixed[name.strip()] = float(value)
        except ValueError:
            _fail(f"--fix {item!r}: {value!r} is not a number")
    return fixed


def _fmt(value: float, digits: int = 3) -> str:
    import math

    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}"


def _print_summary(parameters) -> None:
    table = Table(title="Posterior summary (94% HDI)")
    for col in ("parameter", "mean", "sd", "hdi_low", "hdi_high", "ess_bulk", "ess_tail", "r_hat"):
        table.add_column(col, justify="left" if col == "parameter" else "right")
    from rich.markup import escape  # "beta[pickup_onion]" is not a style tag

    for name, row in parameters.items():
        table.add_row(escape(name), _fmt(row.mean), _fmt(row.sd), _fmt(row.hdi_low), _fmt(row.hdi_high),
                      _fmt(row.ess_bulk, 0), _fmt(row.ess_tail, 0), _fmt(row.r_hat))
    console.print(table)


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    """Add ``fit``, ``diagnose`` and ``compare`` to the main app."""

    def _command_options(ctx: typer.Context) -> dict:
        """Every option of the running command as given or defaulted (JSON-ready), for the record."""

        def plain(value):
            if isinstance(value, Enum):
                return value.value
            if isinstance(value, (list, tuple)):
                return [plain(v) for v in value]
            return str(value) if isinstance(value, Path) else value

        return {k: plain(v) for k, v in ctx.params.items()}

    @app.command("fit")
    def fit_command(
        ctx: typer.Context,
        logs: List[Path] = typer.Argument(..., help="trajectory logs (JSONL, `beliefgate episode --log`); "
                                          "with --model kappa: decisions JSONL (docs/kappa.md)"),
        model: ModelChoice = typer.Option(ModelChoice.hazard, help=_MODEL_HELP),
        method: MethodChoice = typer.Option(MethodChoice.nuts, help="nuts (MCMC) or svi (variational)"),
        out: Path = typer.Option(..., "--out", "-o", help="write the fit here (ArviZ NetCDF, e.g. fit.nc)"),
        partner_side: Optional[int] = typer.Option(None, min=0, help="player whose actions are modelled "
                                                   "(default: the seat that is not the ego's)"),
        chains: int = typer.Option(4, min=1, max=MAX_CHAINS, help="MCMC chains (SVI: draws are reported as chains x draws)"),
        draws: int = typer.Option(1000, min=1, max=MAX_DRAWS, help="posterior draws per chain"),
        warmup: int = typer.Option(1000, min=0, max=MAX_DRAWS, help="NUTS warm-up iterations per chain"),
        seed: int = typer.Option(0, min=0, help="random seed"),
        window: Optional[int] = typer.Option(None, min=1, help="windowed model: observed steps kept "
                                             "(default: whole segment)"),
        per_skill_beta: bool = typer.Option(False, "--per-skill-beta", help="one rationality beta per skill"),
        fit_weight: bool = typer.Option(False, "--fit-weight", help="infer the tempering weight of "
                                        "ambiguous (put-down) steps"),
        fix: List[str] = typer.Option([], "--fix", help="pin a parameter, NAME=VALUE (repeatable), "
                                      "e.g. --fix hazard=0"),
        chain_method: ChainMethod = typer.Option(ChainMethod.auto, help="how chains run; auto = parallel "
                                                 "(one virtual CPU device per chain) when JAX has not started "
                                                 "yet, else sequential"),
        target_accept: float = typer.Option(0.8, min=0.01, max=0.99, help="NUTS target acceptance"),
        svi_steps: int = typer.Option(2000, min=1, max=MAX_SVI_STEPS, help="SVI optimisation steps"),
        learning_rate: float = typer.Option(0.02, min=1e-6, help="SVI Adam learning rate"),
        guide: GuideChoice = typer.Option(GuideChoice.normal, help="SVI guide: normal (AutoNormal, "
                                          "independent) or mvn (AutoMultivariateNormal, correlated)"),
        x64: bool = typer.Option(False, "--x64/--no-x64", help="float64 JAX (slower, more precise)"),
        predictive_draws: int = typer.Option(100, min=0, max=MAX_DRAWS,
                                             help="posterior and prior draws whose replicated actions the fit "
                                                  "file stores (posterior_predictive, prior_predictive groups; "
                                                  "`diagnose` checks with them); 0: none"),
        allow_incomplete: bool = typer.Option(False, "--allow-incomplete",
                                              help="accept logs without their final row"),
        domain: Optional[str] = typer.Option(None, "--domain",
                                             help="whose logs these are: the loader a domain registers in the "
                                                  "'beliefgate.fitdata' entry-point group (called with paths, "
                                                  "partner side, allow_incomplete= and progress=); default: the "
                                                  "domain of the first log's layout (overcooked_v2 for v2/ "
                                                  "layouts), else overcooked"),
        progress: bool = typer.Option(True, "--progress/--no-progress", help="progress bars"),
        as_json: bool = typer.Option(False, "--json", help="print the fit's record and summary as JSON"),
    ) -> None:
        """Fit beta, epsilon, h (skills summed out by the forward algorithm) to the partner's actions,
        or, with --model kappa, mu0, sigma0, tau, sigma_r to logged OverForge decisions."""
        check_output_path("--out", out)  # before the logs are read and the fit runs
        check_not_input("--out", out, logs)
        # options of the other inference method did nothing but were written into the fit's record
        other = {"nuts": (("svi_steps", "--svi-steps"), ("learning_rate", "--learning-rate"), ("guide", "--guide")),
                 "svi": (("warmup", "--warmup"), ("target_accept", "--target-accept"),
                         ("chain_method", "--chain-method"))}[method.value]
        given = [flag for name, flag in other if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"]
        if given:
            _fail(f"{', '.join(given)}: not an option of --method {method.value}")
        _quiet_arviz()
        import numpyro  # before JAX creates its backend: one (virtual) CPU device per chain, so

        numpyro.set_host_device_count(max(1, chains))  # parallel chains share all the cores
        import jax

        if x64:
            jax.config.update("jax_enable_x64", True)
        method_name = chain_method.value
        if method_name == "auto":
            method_name = "parallel" if chains > 1 and jax.local_device_count() >= chains else "sequential"
        if model == ModelChoice.kappa:
            given = [name for name, value in (("--window", window), ("--per-skill-beta", per_skill_beta or None),
                                              ("--fit-weight", fit_weight or None), ("--partner-side", partner_side),
                                              ("--allow-incomplete", allow_incomplete or None),
                                              ("--domain", None if domain in (None, "overcooked") else domain))
                     if value is not None]
            if given:
                _fail(f"{', '.join(given)}: not an option of the kappa model")
            _fit_kappa(logs, out, method.value, chains, draws, warmup, seed, _parse_fixed(fix), method_name,
                       target_accept, svi_steps, learning_rate, guide.value, x64, progress, as_json,
                       _command_options(ctx), predictive_draws)
            return
        if model == ModelChoice.goal:
            given = [name for name, value in (("--window", window), ("--per-skill-beta", per_skill_beta or None),
                                              ("--fit-weight", fit_weight or None),
                                              ("--predictive-draws", predictive_draws if getattr(
                                                  ctx.get_parameter_source("predictive_draws"), "name", "")
                                                  == "COMMANDLINE" else None)) if value is not None]
            if given:
                _fail(f"{', '.join(given)}: not an option of the goal model")
            _fit_goal(logs, out, method.value, chains, draws, warmup, seed, _parse_fixed(fix), method_name,
                      target_accept, svi_steps, learning_rate, guide.value, x64, progress, as_json, partner_side,
                      allow_incomplete, domain, _command_options(ctx))
            return
        from beliefgate.models.fit import FitConfig, FitConfigError

        try:
            config = FitConfig(model=model.value, method=method.value, chains=chains, draws=draws,
                               warmup=warmup, seed=seed, window=window, per_skill_beta=per_skill_beta,
                               fit_weight=fit_weight, fixed=_parse_fixed(fix), chain_method=method_name,
                               target_accept=target_accept, svi_steps=svi_steps,
                               learning_rate=learning_rate, guide=guide.value, predictive_draws=predictive_draws)
        except FitConfigError as exc:
            _fail(str(exc))
        from beliefgate.models.data import FitDataError, detect_domain, load_logs

        domain = domain if domain is not None else detect_domain(logs)
        try:
            with progress_bar(disable=not progress) as bar:
                task = bar.add_task("reading logs", total=len(logs))

                def tick(i, n, label):
                    bar.update(task, completed=i, description=f"reading {label}")

                data = load_logs(logs, partner_side, domain=domain, allow_incomplete=allow_incomplete,
                                 progress=tick)
        except FitDataError as exc:
            _fail(str(exc))
        err_console.print(f"fitting the {config.model} model by {config.method.upper()} on "
                          f"{data.num_trajectories} trajectories, {data.num_steps} steps "
                          f"({config.chains} chains x {config.draws} draws, {config.chain_method})")
        from beliefgate.models.fit import FIT_FILE, fit

        command = {"argv": ["beliefgate", "fit", *[str(p) for p in logs]], "out": str(out),
                   "partner_side": partner_side, "x64": x64, "options": _command_options(ctx)}
        _run_fit(lambda: fit(data, config, progress=progress, extra_attrs={"command": command}), FIT_FILE, out,
                 as_json, drop=("sources",))

    @app.command("diagnose")
    def diagnose_command(
        ctx: typer.Context,
        fit_file: Path = typer.Argument(..., help="a fit written by `beliefgate fit`"),
        as_json: bool = typer.Option(False, "--json", help='print {"parameters", "divergences", "warnings"}'),
        plots: Optional[Path] = typer.Option(None, "--plots", help="write trace, rank, predictive-check and "
                                             "calibration plots (PNG) and diagnosis.json here"),
        ppc_draws: int = typer.Option(100, min=1, max=MAX_DRAWS, help="posterior draws used by the predictive check "
                                      "(given: new replications instead of those the fit file stores)"),
        seed: int = typer.Option(0, min=0, help="seed of the predictive replications (given: new replications "
                                 "instead of those the fit file stores)"),
        ppc: bool = typer.Option(True, "--ppc/--no-ppc", help="run the posterior predictive check"),
        calibrate: bool = typer.Option(True, "--calibration/--no-calibration",
                                       help="score the filtered posterior against logged skills"),
        strict: bool = typer.Option(False, "--strict", help="exit with status 1 when there is any warning"),
    ) -> None:
        """Convergence summary and warnings, posterior predictive check, calibration of the filter."""
        check_output_path("--plots", plots, folder=True)
        _quiet_arviz()
        from beliefgate.models.data import FitDataError
        from beliefgate.models.diagnose import diagnose, write_plots
        from beliefgate.models.fit import FIT_FILE, FitError
        from beliefgate.models.fitio import read_netcdf
        from beliefgate.models.goal import GoalFitError, goal_fit_file
        from beliefgate.models.kappa import KAPPA_FIT_FILE, KappaFitError

        # a skill-model fit's own replications (its posterior_predictive group) unless other ones are asked for
        fresh = any(getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"
                    for name in ("ppc_draws", "seed"))
        try:  # read once; the record says which model's fit it is
            idata = read_netcdf(fit_file, KappaFitError)
            post = getattr(idata, "posterior", None)
            total = int(post.sizes["chain"] * post.sizes["draw"]) if post is not None else 0

            def note_draws() -> None:  # once the file is known to be a fit
                if ppc and 0 < total < ppc_draws and (fresh or "posterior_predictive" not in idata.groups()):
                    say("note:", f"--ppc-draws {ppc_draws} is more than the fit's {total} draws: the predictive "
                                 f"check uses all {total}")

            if KAPPA_FIT_FILE.has(idata):
                checked = KAPPA_FIT_FILE.check(idata, fit_file)
                note_draws()
                _diagnose_kappa(checked, as_json, plots, ppc_draws, seed, ppc, strict, fresh)
                return
            goal_file = goal_fit_file()
            if goal_file.has(idata):
                if plots is not None:
                    _fail("--plots: not an option for a goal fit (diagnose prints its summary and recipe accuracy)")
                _diagnose_goal(goal_file.check(idata, fit_file), as_json, strict)
                return
        except (KappaFitError, GoalFitError) as exc:
            _fail(str(exc))
        try:
            FIT_FILE.check(idata, fit_file)
            note_draws()
            with err_console.status("diagnosing (convergence summary"
                                    + (", predictive check" if ppc else "")
                                    + (", calibration" if calibrate else "") + ")"):
                result = diagnose(idata, ppc_draws=ppc_draws, seed=seed, predictive=ppc, calibrate=calibrate,
                                  stored=False if fresh else None)
        except (FitError, FitDataError) as exc:
            _fail(str(exc))
        written = []
        if plots is not None:
            with err_console.status(Text(f"writing plots to {plots}")):
                written = write_plots(idata, result, plots)
        if as_json:
            print(json.dumps(result.to_json_dict()))
        else:
            _print_diagnosis(result, written)
        if strict and result.warnings:
            raise typer.Exit(1)

    @app.command("compare")
    def compare_command(
        fits: List[Path] = typer.Argument(..., help="two or more fits of the same logs"),
        as_json: bool = typer.Option(False, "--json", help="print the comparison as JSON"),
    ) -> None:
        """LOO comparison (elpd, se, stacking weights) of model variants fitted to the same logs."""
        _quiet_arviz()
        from beliefgate.models.compare import compare_files, variant_name
        from beliefgate.models.fit import FitError

        try:
            result = compare_files(fits)
        except FitError as exc:
            _fail(str(exc))
        if as_json:
            print(json.dumps(result.to_dict(), default=str))
            return
        table = Table(title=f"PSIS-LOO over {result.num_trajectories} trajectories (higher elpd is better)")
        for col in ("rank", "fit", "variant", "elpd_loo", "se", "elpd_diff", "dse", "p_loo", "weight", "warning"):
            table.add_column(col, justify="left" if col in ("fit", "variant") else "right")
        for r in result.rows:
            variant = variant_name({"config": result.configs[r.name]})
            # Text: "hazard[h=0]" and file names are data, not rich markup (the brackets vanished)
            table.add_row(str(r.rank), Text(r.name), Text(variant), f"{r.elpd_loo:.1f}", f"{r.se:.1f}", f"{r.elpd_diff:.1f}",
                          f"{r.dse:.1f}", f"{r.p_loo:.1f}", f"{r.weight:.2f}", "yes" if r.warning else "")
        console.print(table)
        console.print(Text(result.verdict() + "."))
        for line in result.warnings():
            err_console.print(Text(f"warning: {line}"), style="bold yellow")


def _fit_kappa(logs, out, method, chains, draws, warmup, seed, fixed, chain_method, target_accept, svi_steps,
               learning_rate, guide, x64, progress, as_json, options, predictive_draws=100) -> None:
    """``beliefgate fit --model kappa``: read decisions, fit, write the NetCDF, print the summary."""
    from beliefgate.models.kappa import (KAPPA_FIT_FILE, KappaDataError, KappaFitConfig, KappaFitConfigError,
                                         fit_kappa, read_decisions)

    try:
        config = KappaFitConfig(fixed=fixed, method=method, chains=chains, draws=draws, warmup=warmup, seed=seed,
                                chain_method=chain_method, target_accept=target_accept, svi_steps=svi_steps,
                                learning_rate=learning_rate, guide=guide, predictive_draws=predictive_draws)
    except KappaFitConfigError as exc:
        _fail(str(exc))
    try:
        decisions = read_decisions(logs)
    except KappaDataError as exc:
        _fail(str(exc))
    d = decisions.data
    err_console.print(f"fitting the kappa model by {config.method.upper()} on {decisions.num_decisions} decisions "
                      f"({d.num_branches} branches, {len(d.j_y)} judgments, {len(d.r_score)} rollouts; "
                      f"{config.chains} chains x {config.draws} draws, {config.chain_method})")
    command = {"argv": ["beliefgate", "fit", "--model", "kappa", *[str(p) for p in logs]], "out": str(out),
               "x64": x64, "options": options}
    _run_fit(lambda: fit_kappa(decisions, config, progress=progress, extra_attrs={"command": command}),
             KAPPA_FIT_FILE, out, as_json, drop=("sources", "branches", "decision_ids"))


def _fit_goal(logs, out, method, chains, draws, warmup, seed, fixed, chain_method, target_accept, svi_steps,
              learning_rate, guide, x64, progress, as_json, partner_side, allow_incomplete, domain, options) -> None:
    """``beliefgate fit --model goal``: the goal model's data from the logs' domain (its
    ``load_goal_fit_data``), fit, write the NetCDF, print the summary."""
    from beliefgate.models.data import FitDataError, detect_domain, load_goal_logs
    from beliefgate.models.goal import GoalFitConfig, GoalFitError, fit_goal, goal_fit_file

    try:
        config = GoalFitConfig(method=method, chains=chains, draws=draws, warmup=warmup, seed=seed, fixed=fixed,
                               chain_method=chain_method, target_accept=target_accept, svi_steps=svi_steps,
                               learning_rate=learning_rate, guide=guide)
    except GoalFitError as exc:
        _fail(str(exc))
    domain = domain if domain is not None else detect_domain(logs)
    try:
        with err_console.status("reading logs (recipe evidence)", spinner="dots") if progress else _null():
            loaded = load_goal_logs(logs, partner_side, domain=domain, allow_incomplete=allow_incomplete)
    except FitDataError as exc:
        _fail(str(exc))
    valid = loaded.data.skill.valid
    err_console.print(f"fitting the goal model by {config.method.upper()} on {valid.shape[0]} trajectories, "
                      f"{int(valid.sum())} steps, recipes {', '.join(loaded.goal_names)} "
                      f"({config.chains} chains x {config.draws} draws)")
    command = {"argv": ["beliefgate", "fit", "--model", "goal", *[str(p) for p in logs]], "out": str(out),
               "partner_side": partner_side, "x64": x64, "domain": domain, "options": options}
    _run_fit(lambda: fit_goal(loaded, config, progress=progress, extra_attrs={"command": command}),
             goal_fit_file(), out, as_json, drop=("sources",))


def _null():
    import contextlib

    return contextlib.nullcontext()


def _diagnose_goal(idata, as_json, strict) -> None:
    """``beliefgate diagnose`` on a goal fit: summary, warnings, recipe-MAP accuracy of the filter."""
    from beliefgate.models.diagnose import diagnose_goal

    with err_console.status("diagnosing the goal fit (summary, recipe accuracy)"):
        result = diagnose_goal(idata)
    if as_json:
        print(json.dumps(result))
    else:
        from beliefgate.models.diagnose import ParameterSummary

        _print_summary({k: ParameterSummary(**v) for k, v in result["parameters"].items()})
        console.print(f"goal fit: method {result['method']}, {result['chains']} chains x {result['draws']} draws, "
                      f"divergences: {result['divergences']}")
        acc = result["recipe_accuracy"]
        if acc is not None:
            table = Table(title="Recipe MAP of the filtered goal posterior vs the logged recipe")
            for col in ("parameters", "steps", "MAP accuracy", "after first evidence"):
                table.add_column(col, justify="left" if col == "parameters" else "right")
            for name in ("fitted", "defaults"):
                row = acc[name]
                table.add_row(name + (" (median)" if name == "fitted" else ""), str(row["steps"]),
                              _fmt(row["accuracy"]), _fmt(row["accuracy_after_evidence"]))
            console.print(table)
        for w in result["warnings"]:
            say("warning:", w, "bold yellow")
        if not result["warnings"]:
            console.print(_no_warnings(result["method"]).replace(", predictive check passed", ""))
    if strict and result["warnings"]:
        raise typer.Exit(1)


def _run_fit(run, file, out: Path, as_json: bool, drop: tuple) -> None:
    """Run a fit (``run()``), write it with its :class:`~beliefgate.models.fitio.FitFile`, print
    the summary table (or the JSON record without the ``drop`` keys)."""
    from beliefgate.models.diagnose import summarize

    try:
        idata = run()
    except file.error as exc:
        _fail(str(exc))
    file.save(idata, out)
    parameters = summarize(idata)
    if as_json:
        record = file.record(idata)
        for key in drop:
            record.pop(key, None)
        record["out"] = str(out)
        record["summary"] = {k: v._asdict() for k, v in parameters.items()}
        print(json.dumps(record, default=str))
        return
    _print_summary(parameters)
    console.print(f"wrote {out}  (next: `beliefgate diagnose {out}`)")


def _diagnose_kappa(idata, as_json, plots, ppc_draws, seed, ppc, strict, fresh=False) -> None:
    """``beliefgate diagnose`` on a kappa fit (``idata``, already read and checked)."""
    from beliefgate.models.diagnose import diagnose_kappa, write_kappa_plots
    from beliefgate.models.kappa import KappaFitError

    try:
        with err_console.status("diagnosing the kappa fit (summary" + (", predictive check" if ppc else "") + ")"):
            result = diagnose_kappa(idata, ppc_draws=ppc_draws, seed=seed, predictive=ppc,
                                    stored=False if fresh else None)
    except KappaFitError as exc:
        _fail(str(exc))
    written = []
    if plots is not None:
        with err_console.status(Text(f"writing plots to {plots}")):
            written = write_kappa_plots(idata, result, plots)
    if as_json:
        print(json.dumps(result.to_json_dict()))
    else:
        _print_summary(result.parameters)
        console.print(f"kappa fit: method {result.method}, {result.chains} chains x {result.draws} draws, "
                      f"divergences: {result.divergences}")
        if result.checks:
            settings = result.settings or {}
            table = Table(title=f"Posterior predictive check (replicated decisions, same structure; "
                                f"{settings.get('ppc_draws')} draws, replications "
                                + ("stored in the fit file" if settings.get("replications") == "stored" else "drawn now")
                                + f", seed {settings.get('seed')})")
            for col in ("statistic", "observed", "replicated", "90% band", "ppp"):
                table.add_column(col, justify="left" if col == "statistic" else "right")
            for c in result.checks:
                table.add_row(c.name, f"{c.observed:.3f}", f"{c.replicated_mean:.3f}", f"[{c.low:.3f}, {c.high:.3f}]",
                              f"{c.ppp:.3f}")
            console.print(table)
        for w in result.warnings:
            say("warning:", w, "bold yellow")
        if not result.warnings:
            console.print(_no_warnings(result.method))
        for path in written:
            console.print(f"wrote {path}")
    if strict and result.warnings:
        raise typer.Exit(1)


def _print_diagnosis(result, written) -> None:
    _print_summary(result.parameters)
    console.print(f"method {result.method}, {result.chains} chains x {result.draws} draws, "
                  f"divergences: {result.divergences}")
    settings = result.settings or {}
    if result.predictive:
        console.print(f"predictive check: {settings.get('ppc_draws')} posterior draws, replications "
                      + ("stored in the fit file" if settings.get("replications") == "stored" else "drawn now")
                      + f" (seed {settings.get('seed')})")
    for view in result.predictive:
        table = Table(title=f"Posterior predictive check, {view.view} view: ppp {view.ppp:.3f}, "
                            f"TV {view.tv:.3f}, X^2 {view.chi2_observed:.1f} obs / {view.chi2_replicated:.1f} rep")
        table.add_column("skill-state bucket")
        table.add_column("steps", justify="right")
        table.add_column("TV", justify="right")
        for name in view.actions:
            table.add_column(name + "\nobs / pred", justify="right")
        for b in view.buckets:
            table.add_row(b.label, str(b.steps), f"{b.tv:.3f}",
                          *(f"{o:.2f} / {p:.2f}" for o, p in zip(b.observed, b.predicted)))
        console.print(table)
    if result.calibration is not None:
        cal = result.calibration
        table = Table(title=f"Calibration of the filtered skill posterior ({cal.fitted.n} steps with known skill)")
        for col in ("parameters", "MAP accuracy", "Brier", "log loss", "ECE"):
            table.add_column(col, justify="left" if col == "parameters" else "right")
        for name, row in (("fitted (" + cal.point + ")", cal.fitted), ("package defaults", cal.defaults)):
            table.add_row(name, f"{row.accuracy:.3f}", f"{row.brier:.3f}", f"{row.log_loss:.3f}", f"{row.ece:.3f}")
        console.print(table)
        for name, row in (("fitted", cal.fitted), ("defaults", cal.defaults)):
            if row.floored:
                say("note:", f"{name}: {row.floored} of {row.n} steps gave the logged skill probability "
                             "< 1e-12 (e.g. a label the filter deems infeasible); each adds 27.6 to the log-loss sum")
    if result.warnings:
        for w in result.warnings:
            say("warning:", w, "bold yellow")
    else:
        console.print(_no_warnings(result.method))
    for path in written:
        console.print(f"wrote {path}")


__all__ = ["register"]
