"""Benchmark: the same JAX work on the host CPU and on an accelerator of the same machine.

Each part runs once per JAX platform, in a fresh child process per platform (``JAX_PLATFORMS``
set before JAX starts, so each child sees one backend only); the parent reports the ratio
CPU / accelerator and checks that the two platforms agree:

* ``filter``: :func:`beliefgate.beliefs.filter.filter_batch` (the scaled kernel; on a CPU its
  default row blocks over every core) on random log emissions ``[B, T, K]`` in float64, the
  best of ``--repeats`` timed calls after a warm-up; agreement = largest difference of the
  log marginals between the platforms;
* ``kappa_fit``: :func:`beliefgate.models.kappa.fit_kappa` (NUTS) on 500 decisions simulated at
  tau = 0.7, sigma_r = 0.8, mu0 = 0.3, sigma0 = 1.2 (seed 1000): wall time (compilation
  included), largest r_hat, and whether every truth lies in its 90% interval;
* ``skill_fit``: :func:`beliefgate.models.fit.fit` (NUTS, skills summed out by the forward
  scan) on synthetic ``from_arrays`` data (random Q tables, actions simulated from the model at
  beta = 2.5, epsilon = 0.1, hazard = 0.08; 50 trajectories x 400 steps): wall time, largest
  r_hat, smallest bulk ESS, ESS/s.

Both fits: 4 chains x 300 draws after 300 warm-up by default (``--draws``, ``--warmup``).

Chains: ``parallel`` over one virtual device per chain on a CPU, ``vectorized`` on an
accelerator (one device). Without an accelerator the script runs the CPU child only and says
so. Run::

    .venv/bin/python benchmarks/bench_accel.py            # full sizes (minutes)
    .venv/bin/python benchmarks/bench_accel.py --quick    # smoke sizes
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
KAPPA_TRUTH = {"tau": 0.7, "sigma_r": 0.8, "mu0": 0.3, "sigma0": 1.2}
SKILL_TRUTH = {"beta": 2.5, "epsilon": 0.1, "hazard": 0.08}


def positive(text: str) -> int:
    """An integer >= 1 (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def bench_filter(batches: Sequence[int], steps: int, skills: Sequence[int], repeats: int,
                 out_dir: Path, tag: str) -> list[dict]:
    from bench_hmm import _best_times  # the child runs as a script from this folder

    from beliefgate.beliefs import filter as F

    rows = []
    for batch in batches:
        for k in skills:
            rng = np.random.default_rng(1000 + k)
            counts = rng.integers(0, 5, k).astype(float)
            log_em = 2.0 * rng.standard_normal((batch, steps, k))
            params = F.FilterParams("hazard", 0.05, 1.0, None)
            obs = F.observations(log_em, prior_counts=np.tile(counts, (batch, 1)), batched=True)

            def run():
                res = F.filter_batch(params, obs)
                return res.posterior, res.log_marginal

            seconds = _best_times({"filter": run}, repeats)["filter"]
            _, lm = run()
            np.save(out_dir / f"lm_{tag}_{batch}_{k}.npy", np.asarray(lm))
            rows.append({"B": batch, "T": steps, "K": k, "s": seconds,
                         "shards": F.default_shards(obs.loglik)})
    return rows


def bench_kappa_fit(num: int, chains: int, draws: int, warmup: int, chain_method: str) -> dict:
    import arviz as az

    from beliefgate.models.kappa import KappaFitConfig, decisions_from_records, fit_kappa, simulate_decisions

    decisions = decisions_from_records(simulate_decisions(num, KAPPA_TRUTH, seed=1000))
    config = KappaFitConfig(chains=chains, draws=draws, warmup=warmup, chain_method=chain_method, seed=1000)
    start = time.perf_counter()
    idata = fit_kappa(decisions, config)
    wall = time.perf_counter() - start
    rhat = az.rhat(idata.posterior)
    hdi = az.hdi(idata.posterior, hdi_prob=0.9)
    inside = {name: bool(float(hdi[name][0]) <= truth <= float(hdi[name][1]))
              for name, truth in KAPPA_TRUTH.items() if name in hdi}
    return {"wall_s": wall, "max_rhat": float(max(float(rhat[v]) for v in rhat.data_vars)),
            "truth_inside_90": inside, "decisions": num}


def _skill_data(trajectories: int, steps: int, skills: int, actions: int, seed: int):
    from beliefgate.models.data import from_arrays, simulate

    rng = np.random.default_rng(seed)
    q = rng.standard_normal((trajectories, steps, skills, actions))
    data = from_arrays(q, np.ones((trajectories, steps, actions), bool))
    return simulate(data, {**SKILL_TRUTH, "alpha": 1.0}, seed)


def bench_skill_fit(trajectories: int, steps: int, chains: int, draws: int, warmup: int,
                    chain_method: str) -> dict:
    import arviz as az

    from beliefgate.models.fit import FitConfig, fit

    data = _skill_data(trajectories, steps, 6, 6, 1000)
    config = FitConfig(chains=chains, draws=draws, warmup=warmup, chain_method=chain_method, seed=1000)
    start = time.perf_counter()
    idata = fit(data, config)
    wall = time.perf_counter() - start
    names = [n for n in ("beta", "epsilon", "hazard") if n in idata.posterior]
    post = idata.posterior[names]
    rhat = az.rhat(post)
    ess = az.ess(post, method="bulk")
    min_ess = float(min(float(ess[n]) for n in names))
    return {"wall_s": wall, "max_rhat": float(max(float(rhat[n]) for n in names)), "min_bulk_ess": min_ess,
            "ess_per_s": min_ess / wall, "trajectories": trajectories, "steps": steps,
            "means": {n: float(post[n].mean()) for n in names}}


def child(args) -> int:
    import jax

    platform = jax.default_backend()
    device = str(jax.devices()[0].device_kind)
    chain_method = "parallel" if platform == "cpu" else "vectorized"
    out = {"platform": platform, "device": device, "devices": jax.local_device_count(),
           "cpus": os.cpu_count(), "chain_method": chain_method, "chains": args.chains, "jax": jax.__version__}
    target = Path(args.child_json)

    failed = []

    def part(name: str, fn, *fn_args) -> None:  # each part is kept as soon as it is measured
        try:
            value = fn(*fn_args)
        except Exception as exc:  # noqa: BLE001 - recorded and reported; the other parts still run
            failed.append(name)
            value = {"error": f"{type(exc).__name__}: {exc}"}
        out[name] = value
        target.write_text(json.dumps(out, indent=2) + "\n")
        print(f"[{platform}] {name}: {json.dumps(value)}", flush=True)

    jax.config.update("jax_enable_x64", True)
    part("filter", bench_filter, args.batches, args.steps, args.skills, args.repeats, Path(args.out_dir), platform)
    jax.config.update("jax_enable_x64", False)  # the fits run as `beliefgate fit` does by default
    if not args.no_fits:
        part("kappa_fit", bench_kappa_fit, args.decisions, args.chains, args.draws, args.warmup, chain_method)
        part("skill_fit", bench_skill_fit, args.trajectories, args.steps, args.chains, args.draws, args.warmup,
             chain_method)
    return 1 if failed else 0


def _run_child(platform: str, argv: list[str], out_dir: Path, chains: int) -> Optional[dict]:
    env = dict(os.environ, JAX_PLATFORMS=platform)
    if platform == "cpu":
        flag = f"--xla_force_host_platform_device_count={chains}"
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flag).strip()
    target = out_dir / f"{platform}.json"
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv, "--child-json", str(target),
                           "--out-dir", str(out_dir)], env=env)
    if not target.exists():
        print(f"[{platform}] not measured (exit status {proc.returncode})", flush=True)
        return None
    if proc.returncode != 0:
        print(f"[{platform}] stopped early (exit status {proc.returncode}): the parts measured so far follow",
              flush=True)
    result = json.loads(target.read_text())
    result["child_wall_s"] = time.perf_counter() - started
    return result


def accelerator_platform() -> Optional[str]:
    """``cuda`` or ``rocm`` when a child process can start that JAX backend, else None."""
    for name in ("cuda", "rocm"):
        env = dict(os.environ, JAX_PLATFORMS=name)
        proc = subprocess.run([sys.executable, "-c", "import jax; print(jax.default_backend())"], env=env,
                              capture_output=True, text=True)
        if proc.returncode == 0 and proc.stdout.strip() in ("gpu", name):
            return name
    return None


def print_table(results: dict, agreement: dict, cpu_only: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table

    cpu, acc = results.get("cpu"), results.get("accel")
    console = Console(width=140)
    table = Table(title="filter_batch, float64, posteriors + log marginals: best time in ms")
    for col in ("B", "T", "K", "CPU", "accelerator", "CPU / acc", "|dlogZ|"):
        table.add_column(col, justify="right")
    rows = cpu.get("filter") if isinstance(cpu.get("filter"), list) else []
    for i, row in enumerate(rows):
        other = acc["filter"][i] if acc and isinstance(acc.get("filter"), list) else None
        key = f"{row['B']}_{row['K']}"
        table.add_row(str(row["B"]), str(row["T"]), str(row["K"]), f"{1e3 * row['s']:.1f}",
                      f"{1e3 * other['s']:.1f}" if other else "n/a",
                      f"{row['s'] / other['s']:.2f}x" if other else "n/a",
                      f"{agreement[key]:.1e}" if key in agreement else "n/a")
    console.print(table)
    if "kappa_fit" in cpu or "skill_fit" in cpu:
        fits = Table(title=f"NUTS fits (compilation included), {cpu['chains']} chains")
        for col in ("fit", "platform", "chain method", "wall s", "CPU / acc", "max r_hat", "min bulk ESS", "ESS/s",
                    "truths in 90%"):
            fits.add_column(col, justify="right")
        for part in ("kappa_fit", "skill_fit"):
            for name, res in (("CPU", cpu), ("accelerator", acc)):
                if not res or part not in res or "error" in res[part]:
                    continue
                r = res[part]
                base = cpu.get(part, {})
                ratio = (f"{base['wall_s'] / r['wall_s']:.2f}x" if name == "accelerator" and "wall_s" in base else "")
                inside = r.get("truth_inside_90")
                fits.add_row(part, name, res["chain_method"], f"{r['wall_s']:.1f}", ratio, f"{r['max_rhat']:.4f}",
                             f"{r['min_bulk_ess']:.0f}" if "min_bulk_ess" in r else "",
                             f"{r['ess_per_s']:.1f}" if "ess_per_s" in r else "",
                             (f"{sum(inside.values())}/{len(inside)}" if inside else ""))
        console.print(fits)
    for name, res in (("CPU", cpu), ("accelerator", acc)):
        if res:
            console.print(f"{name}: {res['device']} ({res['platform']}, {res['devices']} JAX devices, "
                          f"{res['cpus']} host cores, JAX {res['jax']})", markup=False)
    for name, res in (("CPU", cpu), ("accelerator", acc)):
        for key, value in (res or {}).items():
            if isinstance(value, dict) and "error" in value:
                console.print(f"{name} {key} failed: {value['error']}", markup=False)
    if not acc:
        why = "--cpu-only" if cpu_only else "no accelerator backend could start here"
        console.print(f"{why}: CPU only (no ratios).", markup=False)


def main(argv: Optional[Sequence[str]] = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke sizes (replace every size option below)")
    parser.add_argument("--batches", type=positive, nargs="+", default=[1024, 8192], help="filter: batch sizes B")
    parser.add_argument("--steps", type=positive, default=400, help="filter and skill fit: steps T per trajectory")
    parser.add_argument("--skills", type=positive, nargs="+", default=[6, 64], help="filter: numbers of skills K")
    parser.add_argument("--repeats", type=positive, default=5, help="filter: timed calls (the best is kept)")
    parser.add_argument("--decisions", type=positive, default=500, help="kappa fit: simulated decisions")
    parser.add_argument("--trajectories", type=positive, default=50, help="skill fit: synthetic trajectories")
    parser.add_argument("--chains", type=positive, default=4, help="both fits: NUTS chains")
    parser.add_argument("--draws", type=positive, default=300, help="both fits: draws per chain")
    parser.add_argument("--warmup", type=positive, default=300, help="both fits: warm-up steps per chain")
    parser.add_argument("--no-fits", action="store_true", help="only the filter")
    parser.add_argument("--cpu-only", action="store_true", help="do not look for an accelerator")
    parser.add_argument("--json", type=Path, default=None, help="write the results here (its folder must exist)")
    parser.add_argument("--child-json", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out-dir", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.json is not None and (args.json.is_dir() or not args.json.resolve().parent.is_dir()):
        parser.error(f"--json {args.json}: not a file in an existing folder")  # before minutes of measuring
    if args.quick:
        args.batches, args.steps, args.skills, args.repeats = [16], 40, [3], 1
        args.decisions, args.trajectories, args.draws, args.warmup, args.chains = 20, 8, 50, 50, 2
    if args.child_json:
        sys.exit(child(args))
    forwarded = [a for a in (argv if argv is not None else sys.argv[1:])
                 if a not in ("--json", str(args.json)) and a != "--cpu-only"]
    if args.quick and "--quick" not in forwarded:
        forwarded.append("--quick")
    results: dict = {"config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                                if k not in ("child_json", "out_dir")}}
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = Path(tmp)
        accel = None if args.cpu_only else accelerator_platform()
        results["cpu"] = _run_child("cpu", forwarded, out_dir, args.chains)
        if results["cpu"] is None:
            raise SystemExit(1)
        if accel:
            results["accel"] = _run_child(accel, forwarded, out_dir, args.chains)
        agreement = {}
        if results.get("accel"):
            tag = results["accel"]["platform"]
            both = all(isinstance(results[s].get("filter"), list) for s in ("cpu", "accel"))
            for row in results["cpu"]["filter"] if both else []:
                a = np.load(out_dir / f"lm_cpu_{row['B']}_{row['K']}.npy")
                b = np.load(out_dir / f"lm_{tag}_{row['B']}_{row['K']}.npy")
                agreement[f"{row['B']}_{row['K']}"] = float(np.max(np.abs(a - b)))
        results["filter_agreement"] = agreement
    print_table(results, agreement, args.cpu_only)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
