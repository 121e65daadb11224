"""Benchmark of OverForge kappa (``python benchmarks/bench_kappa.py [--quick] [--fit]``).

* latency of one ``kappa_update`` at 8 branches (p50/p99 over random evidence streams of
  up to 20 judgments and 10 rollouts), by path, against the baseline a caller would
  otherwise run: a plain Monte-Carlo estimate of the same argmax probabilities; and the
  p50 at 512 and 2048 points of the quasi-random rule (the speed/accuracy trade-off);
* accuracy of the argmax probabilities against an independent slow Monte-Carlo reference
  (``monte_carlo_argmax``, 400k draws) on random evidence sets;
* ``--fit``: the NumPyro fit of 500 simulated decisions, 4 chains x 1000 draws: max r_hat and
  whether the simulated tau and sigma_r lie in their 90% intervals (minutes).

Every run prints and (``--json``) writes its configuration with the numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from beliefgate.beliefs.kappa import (  # noqa: E402
    Judgment,
    KappaParams,
    Rollout,
    kappa_info,
    kappa_init,
    kappa_update,
    monte_carlo_argmax,
)


def evidence_stream(rng, k: int, judgments: int, rollouts: int, values=(0.0, 1.0, 0.5, 1.0)):
    mu0, s0, tau, sr = values
    u = rng.normal(mu0, s0, k)
    out = []
    for _ in range(judgments):
        b, c = (int(x) for x in rng.choice(k, 2, replace=False))
        out.append(Judgment(b, c, int(rng.random() < 1 / (1 + math.exp(-(u[b] - u[c]) / tau)))))
    for _ in range(rollouts):
        b, d = int(rng.integers(k)), int(rng.integers(1, 4))
        out.append(Rollout(b, d, float(rng.normal(u[b], sr / math.sqrt(d)))))
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def latency(params: KappaParams, k: int, streams: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    times = {"all": [], "judgment": [], "rollout": []}
    baseline = []
    for _ in range(streams):
        state = kappa_init(params, [f"b{i}" for i in range(k)])
        for ev in evidence_stream(rng, k, 20, 10):
            t0 = time.perf_counter()
            state, _ = kappa_update(params, state, ev)
            dt = time.perf_counter() - t0
            times["all"].append(dt)
            times["judgment" if isinstance(ev, Judgment) else "rollout"].append(dt)
        t0 = time.perf_counter()
        monte_carlo_argmax(params, state, 20_000, seed=0)
        baseline.append(time.perf_counter() - t0)
    out = {name: {"p50_us": float(np.median(v) * 1e6), "p99_us": float(np.quantile(v, 0.99) * 1e6), "n": len(v)}
           for name, v in times.items()}
    out["baseline_mc20k"] = {"p50_us": float(np.median(baseline) * 1e6), "n": len(baseline)}
    return out


def accuracy(params: KappaParams, sets: int, seed: int, ref_draws: int) -> dict:
    rng = np.random.default_rng(seed)
    errs, by_method = [], {}
    for i in range(sets):
        k = int(rng.integers(2, 9))
        state = kappa_init(params, [f"b{j}" for j in range(k)])
        for ev in evidence_stream(rng, k, int(rng.integers(0, 21)), int(rng.integers(0, 11))):
            state, _ = kappa_update(params, state, ev)
        info = kappa_info(params, state)
        ref, se = monte_carlo_argmax(params, state, ref_draws, seed=i)
        err = float(np.max(np.abs(info.argmax_probs - ref)))
        errs.append(err)
        by_method.setdefault(info.method, []).append(err)
    return {"sets": sets, "max_abs_error": max(errs), "mean_max_abs_error": float(np.mean(errs)),
            "by_method": {m: {"n": len(v), "max": max(v), "mean": float(np.mean(v))} for m, v in by_method.items()},
            "reference": f"monte_carlo_argmax, {ref_draws} draws (its own se ~ {1 / math.sqrt(ref_draws):.1e})"}


def fit_check(seed: int) -> dict:
    import arviz as az
    import numpyro

    numpyro.set_host_device_count(4)
    from beliefgate.models.kappa import KappaFitConfig, decisions_from_records, fit_kappa, simulate_decisions

    truth = {"mu0": 0.3, "sigma0": 1.2, "tau": 0.7, "sigma_r": 0.8}
    decisions = decisions_from_records(simulate_decisions(500, truth, seed=seed))
    t0 = time.perf_counter()
    idata = fit_kappa(decisions, KappaFitConfig(chains=4, draws=1000, warmup=1000, seed=seed,
                                                chain_method="parallel"))
    wall = time.perf_counter() - t0
    summary = az.summary(idata, hdi_prob=0.9, round_to="none")
    rows = {name: {"mean": float(r["mean"]), "hdi_5%": float(r["hdi_5%"]), "hdi_95%": float(r["hdi_95%"]),
                   "r_hat": float(r["r_hat"]), "ess_bulk": float(r["ess_bulk"]),
                   "covers_truth": bool(r["hdi_5%"] <= truth[name] <= r["hdi_95%"])}
            for name, r in summary.iterrows()}
    return {"truth": truth, "decisions": 500, "chains": 4, "draws": 1000, "wall_s": round(wall, 1),
            "max_r_hat": float(summary["r_hat"].max()), "parameters": rows}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke-test sizes")
    ap.add_argument("--fit", action="store_true", help="also run the 500-decision NUTS fit (minutes)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args, _ = ap.parse_known_args(argv)
    params = KappaParams()
    config = {"params": params.model_dump(), "branches": 8, "quick": args.quick, "seed": args.seed,
              "python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine()}
    try:
        config["loadavg"] = [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        config["loadavg"] = None
    streams = 5 if args.quick else 60
    result = {"config": config,
              "latency": latency(params, 8, streams, args.seed),
              # the speed/accuracy trade-off of the quasi-random rule (same streams, same process)
              "latency_by_points": {n: latency(params.replace(num_points=n), 8, streams, args.seed)["all"]
                                    for n in (512, 2048) if n != params.num_points},
              "accuracy": accuracy(params, 5 if args.quick else 100, args.seed + 1, 50_000 if args.quick else 400_000)}
    if args.fit and not args.quick:
        result["fit"] = fit_check(args.seed)
    lat = result["latency"]
    print(f"kappa_update, 8 branches: p50 {lat['all']['p50_us']:.0f} us, p99 {lat['all']['p99_us']:.0f} us "
          f"(judgment p50 {lat['judgment']['p50_us']:.0f}, rollout p50 {lat['rollout']['p50_us']:.0f}); "
          f"baseline plain Monte Carlo (20k draws) p50 {lat['baseline_mc20k']['p50_us']:.0f} us; "
          f"load average {config['loadavg']}")
    by = result["latency_by_points"]
    by[params.num_points] = lat["all"]
    print("p50 by num_points: " + ", ".join(f"{n}: {v['p50_us']:.0f} us" for n, v in sorted(by.items())))
    acc = result["accuracy"]
    print(f"argmax probabilities vs {acc['reference']}: max |error| {acc['max_abs_error']:.4f}, mean of per-set max "
          f"{acc['mean_max_abs_error']:.4f} over {acc['sets']} sets; by path {json.dumps(acc['by_method'])}")
    if "fit" in result:
        f = result["fit"]
        print(f"fit of 500 decisions, 4 x 1000 draws: max r_hat {f['max_r_hat']:.4f}, "
              + ", ".join(f"{n}: {r['mean']:.3f} [{r['hdi_5%']:.3f}, {r['hdi_95%']:.3f}] covers={r['covers_truth']}"
                          for n, r in f["parameters"].items()) + f" ({f['wall_s']} s)")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
