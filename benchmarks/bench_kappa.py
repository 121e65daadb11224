"""Benchmark of OverForge kappa (``python benchmarks/bench_kappa.py [--quick] [--fit]``).

* latency of one ``kappa_update`` at 8 branches (p50/p99 over random evidence streams of
  up to 20 judgments and 10 rollouts), by path, against the baseline a caller would
  otherwise run: a plain Monte-Carlo estimate of the same argmax probabilities; and the
  p50 at 512 and 2048 points of the quasi-random rule (the speed/accuracy trade-off), and
  where the time goes (conditioning on the evidence vs the argmax rule, timed apart);
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


def judged_states(params: KappaParams, k: int, streams: int, seed: int) -> list:
    """Every state with at least one judged pair along ``streams`` of the benchmark's evidence
    streams (20 judgments, 10 rollouts each): the states the argmax rule is timed on."""
    rng = np.random.default_rng(seed)
    states = []
    for _ in range(streams):
        state = kappa_init(params, [f"b{i}" for i in range(k)])
        for ev in evidence_stream(rng, k, 20, 10):
            state, _ = kappa_update(params, state, ev)
            if len(state.pairs):
                states.append(state)
    return states


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


def parts(params: KappaParams, k: int, streams: int, seed: int) -> dict:
    """Where one update's time goes, on the same streams as :func:`latency`: conditioning on the
    evidence (the EP site refresh and rank-one update of a judgment; the exact Gaussian update
    of a rollout) and the argmax rule (``kappa_info``) on the conditioned state, timed apart."""
    from beliefgate.beliefs import kappa as K

    rng = np.random.default_rng(seed)
    times = {"condition_judgment": [], "condition_rollout": [], "argmax_rule": []}
    for _ in range(streams):
        state = kappa_init(params, [f"b{i}" for i in range(k)])
        for ev in evidence_stream(rng, k, 20, 10):
            t0 = time.perf_counter()
            if isinstance(ev, Judgment):
                new = K._add_judgment(params, state, ev)
            else:
                new = K._apply_rollouts(state, [K._rollout_terms(state, ev, params)])
            t1 = time.perf_counter()
            kappa_info(params, new)
            t2 = time.perf_counter()
            times["condition_judgment" if isinstance(ev, Judgment) else "condition_rollout"].append(t1 - t0)
            times["argmax_rule"].append(t2 - t1)
            state, _ = kappa_update(params, state, ev)
    return {name: {"p50_us": float(np.median(v) * 1e6), "n": len(v)} for name, v in times.items()}


def accuracy(params: KappaParams, sets: int, seed: int, ref_draws: int) -> dict:
    """Error of the argmax probabilities on random evidence sets simulated from the model at
    ``params`` (its mu0, sigma0, tau, sigma_r)."""
    rng = np.random.default_rng(seed)
    errs, by_method = [], {}
    values = (params.mu0, params.sigma0, params.tau, params.sigma_r)
    for i in range(sets):
        k = int(rng.integers(2, 9))
        state = kappa_init(params, [f"b{j}" for j in range(k)])
        for ev in evidence_stream(rng, k, int(rng.integers(0, 21)), int(rng.integers(0, 11)), values):
            state, _ = kappa_update(params, state, ev)
        info = kappa_info(params, state)
        ref, se = monte_carlo_argmax(params, state, ref_draws, seed=i)
        err = float(np.max(np.abs(info.argmax_probs - ref)))
        errs.append(err)
        by_method.setdefault(info.method, []).append(err)
    return {"sets": sets, "max_abs_error": max(errs), "mean_max_abs_error": float(np.mean(errs)),
            "by_method": {m: {"n": len(v), "max": max(v), "mean": float(np.mean(v))} for m, v in by_method.items()},
            "reference": f"monte_carlo_argmax, {ref_draws} draws (its own se ~ {1 / math.sqrt(ref_draws):.1e})"}


def _reference(params: KappaParams, state, draws: int, seed: int):
    """High-accuracy reference: EP run to convergence (8 sweeps), then ``draws`` importance
    draws with the exact judgment likelihood (``monte_carlo_argmax``)."""
    from beliefgate.beliefs.kappa import _ep_sweep

    for _ in range(8 if len(state.pairs) else 0):
        state = _ep_sweep(params, state)
    return monte_carlo_argmax(params, state, draws, seed=seed)


def _random_set(rng, k=None):
    k = int(rng.integers(2, 9)) if k is None else k
    return k, evidence_stream(rng, k, int(rng.integers(0, 21)), int(rng.integers(0, 11)))


def _build(params: KappaParams, k: int, stream):
    state = kappa_init(params, [f"b{j}" for j in range(k)])
    for ev in stream:
        state, _ = kappa_update(params, state, ev)
    return state


def tau_study(sets: int, seed: int, ref_draws: int, taus=(0.5, 0.2, 0.1)) -> dict:
    """Error of the default rule by the judgment temperature: for each tau, ``sets`` random
    evidence sets (3-8 branches, 1-20 judgments, 0-10 rollouts) simulated from the model at that
    tau, against :func:`_reference` with ``ref_draws`` draws (its standard error reported)."""
    out = {}
    for tau in taus:
        params = KappaParams(tau=tau)
        rng = np.random.default_rng(seed)
        errs, ses, ess, enlarged = [], [], [], 0
        for i in range(sets):
            k = int(rng.integers(3, 9))
            state = kappa_init(params, [f"b{j}" for j in range(k)])
            for ev in evidence_stream(rng, k, int(rng.integers(1, 21)), int(rng.integers(0, 11)),
                                      (params.mu0, params.sigma0, tau, params.sigma_r)):
                state, info = kappa_update(params, state, ev)
            ref, se = _reference(params, state, ref_draws, seed + i)
            errs.append(float(np.max(np.abs(info.argmax_probs - ref))))
            ses.append(float(np.max(se)))
            ess.append(info.ess)
            enlarged += info.points > params.num_points
        out[str(tau)] = {"sets": sets, "mean_max_abs_error": float(np.mean(errs)), "max_abs_error": max(errs),
                         "sets_above_0.005": int(sum(e > 0.005 for e in errs)), "reference_se_max": max(ses),
                         "ess_median": float(np.median(ess)), "rule_enlarged": int(enlarged)}
    return {"by_tau": out, "reference": f"EP to convergence + {ref_draws} importance draws", "seed": seed}


def points_study(sets: int, seed: int, ref_draws: int, points=(512, 1024, 2048, 4096)) -> dict:
    """Error of the argmax probabilities against :func:`_reference` by ``num_points``, also in
    units of the binomial sd of a 4000-draw indicator mean (what a 4 x 1000 NUTS check sees)."""
    rng = np.random.default_rng(seed)
    base = KappaParams()
    data = [_random_set(rng) for _ in range(sets)]
    refs = [_reference(base, _build(base, k, s), ref_draws, i + 1)[0] for i, (k, s) in enumerate(data)]
    out = {}
    for n in points:
        params = base.replace(num_points=n)
        errs, ratio = [], []
        for (k, s), ref in zip(data, refs):
            p = kappa_info(params, _build(params, k, s)).argmax_probs
            errs.append(float(np.max(np.abs(p - ref))))
            ratio.append(float(np.max(np.abs(p - ref) / np.sqrt(np.maximum(ref * (1 - ref), 1e-4) / 4000))))
        out[n] = {"mean_max_abs_error": float(np.mean(errs)), "max_abs_error": max(errs),
                  "median_err_over_sd4000": float(np.median(ratio)), "max_err_over_sd4000": max(ratio)}
    return {"sets": sets, "seed": seed, "reference": f"converged EP + {ref_draws} importance draws", "by_points": out}


def nuts_se_check(sets: int, seed: int, ref_draws: int) -> dict:
    """Is the NUTS standard error right? The reference and the fast rule against NUTS
    (4 x 1000 draws), z-scores with ArviZ's plug-in MCSE and with the null SE
    ``sqrt(p (1 - p) / ess)`` at the compared ``p``: counts outside 3 SE."""
    from beliefgate.models.kappa import nuts_argmax_probs

    rng = np.random.default_rng(seed)
    params = KappaParams()
    data = [_random_set(rng) for _ in range(sets)]
    triples = []
    for k, s in data:
        triples.append((k, [(e.left, e.right, e.y) for e in s if isinstance(e, Judgment)],
                        [(e.branch, e.depth, e.score) for e in s if isinstance(e, Rollout)]))
    nuts = nuts_argmax_probs({"mu0": 0.0, "sigma0": 1.0, "tau": 0.5, "sigma_r": 1.0}, triples, chains=4,
                             draws=1000, warmup=500, seed=seed)
    z = {f"{w}_{se}": [] for w in ("fast", "reference") for se in ("plugin_mcse", "null_se")}
    for i, ((k, s), n) in enumerate(zip(data, nuts)):
        state = _build(params, k, s)
        rel = float(np.median(n.ess[n.ess > 0])) / n.draws if np.any(n.ess > 0) else 1.0
        ess = np.where(n.ess > 0, n.ess, rel * n.draws)
        for name, p in (("fast", kappa_info(params, state).argmax_probs),
                        ("reference", _reference(params, state, ref_draws, i + 1)[0])):
            plug = np.where(n.mcse > 0, n.mcse, np.sqrt(p * (1 - p) / n.draws))
            null = np.sqrt(np.maximum(p * (1 - p), 0.5 / ess) / ess)
            with np.errstate(divide="ignore", invalid="ignore"):
                z[f"{name}_plugin_mcse"] += list(np.abs(p - n.probs) / plug)
            z[f"{name}_null_se"] += list(np.abs(p - n.probs) / null)
    from scipy.special import ndtr

    p3 = 2 * (1 - float(ndtr(3.0)))
    out = {"sets": sets, "seed": seed, "divergences": nuts[0].divergences}
    for key, v in z.items():
        v = np.array(v)
        v = v[np.isfinite(v)]
        out[key] = {"n": len(v), "outside_3se": int(np.sum(v > 3)), "chance": round(len(v) * p3, 2),
                    "max_abs_z": float(v.max()), "mean_z2": float(np.mean(v * v))}
    return out


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
    ap.add_argument("--points", action="store_true", help="also the error-by-num_points study (minutes)")
    ap.add_argument("--tau-study", action="store_true",
                    help="also the error by judgment temperature tau (0.5, 0.2, 0.1), seeds 2000+ (minutes)")
    ap.add_argument("--nuts-se", action="store_true", help="also the NUTS standard-error check (minutes)")
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
              "parts": parts(params, 8, streams, args.seed),
              "accuracy": accuracy(params, 5 if args.quick else 100, args.seed + 1, 50_000 if args.quick else 400_000)}
    if args.points:
        result["points"] = points_study(10 if args.quick else 40, 1000, 100_000 if args.quick else 1_000_000)
        print("error by num_points vs " + result["points"]["reference"] + ": "
              + json.dumps(result["points"]["by_points"]))
    if args.tau_study:
        result["tau_study"] = tau_study(5 if args.quick else 30, 2000, 200_000 if args.quick else 4_000_000)
        print("error by tau vs " + result["tau_study"]["reference"] + ": " + json.dumps(result["tau_study"]["by_tau"]))
    if args.nuts_se:
        result["nuts_se"] = nuts_se_check(5 if args.quick else 50, 11, 100_000 if args.quick else 1_000_000)
        print("NUTS standard-error check: " + json.dumps(result["nuts_se"]))
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
    pt = result["parts"]
    print(f"parts (p50): conditioning a judgment {pt['condition_judgment']['p50_us']:.0f} us, a rollout "
          f"{pt['condition_rollout']['p50_us']:.0f} us; the argmax rule {pt['argmax_rule']['p50_us']:.0f} us")
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
