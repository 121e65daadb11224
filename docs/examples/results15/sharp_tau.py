"""How far off is kappa at a very sharp judgment likelihood? One case against an independent reference.

Five branches, twelve judgments simulated at tau = 0.05 from utilities drawn from the prior (seed
101, a case a user's review found). The reference draws the utilities from the prior and weights
them by the exact judgment likelihood (self-normalised importance sampling; it does not use the
EP Gaussian the fast rule starts from), in chunks, and reports its own standard error. The fast
rule runs at its default 2048 points and at 16384; the judgments go in four orders.

``--overforge``: instead, ten random sets (3-6 branches, 3-11 judgments, seeds 3000+) at the
parameters OverForge's own kappa uses (``config.DEFAULT_KAPPA``: sigma0 0.3, tau 0.1, 128
points), its 128 points against the 2048 default, each against a 10^6-draw reference::

    python docs/examples/results15/sharp_tau.py [--draws 4000000] [--seed 101] [--overforge]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, from anywhere
from beliefgate import Judgment, Kappa, KappaParams  # noqa: E402

K, TAU, JUDGMENTS = 5, 0.05, 12


def case(seed: int) -> list:
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(K)
    out = []
    for _ in range(JUDGMENTS):
        a, b = (int(x) for x in rng.choice(K, 2, replace=False))
        out.append((a, b, int(rng.random() < 1.0 / (1.0 + np.exp(-(u[a] - u[b]) / TAU)))))
    return out


def reference(judgments: list, draws: int, seed: int, chunk: int = 200_000, k: int = K, tau: float = TAU) -> tuple:
    """Prior draws weighted by the exact likelihood: (probabilities, standard errors, ESS)."""
    rng = np.random.default_rng(seed)
    left = np.array([j[0] for j in judgments])
    right = np.array([j[1] for j in judgments])
    sign = np.array([1.0 if j[2] else -1.0 for j in judgments])
    log_w, best = [], []
    for start in range(0, draws, chunk):  # exactly `draws` draws, in chunks
        u = rng.standard_normal((min(chunk, draws - start), k))
        x = sign * (u[:, left] - u[:, right]) / tau
        log_w.append((np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x)))).sum(axis=1))
        best.append(u.argmax(axis=1))
    log_w, best = np.concatenate(log_w), np.concatenate(best)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    probs = np.bincount(best, weights=w, minlength=k)
    se = np.array([np.sqrt(np.sum(w * w * ((best == b) - probs[b]) ** 2)) for b in range(k)])
    return probs, se, float(1.0 / np.sum(w * w))


def overforge_sets(draws: int) -> dict:
    """OverForge's kappa (128 points) and the default rule (2048) against the reference on ten sets."""
    from beliefgate.agents.overforge.config import DEFAULT_KAPPA

    sigma0, tau = DEFAULT_KAPPA["sigma0"], DEFAULT_KAPPA["tau"]
    errors = {DEFAULT_KAPPA["num_points"]: [], 2048: []}
    for seed in range(3000, 3010):
        rng = np.random.default_rng(seed)
        k = int(rng.integers(3, 7))
        u = rng.standard_normal(k)  # utilities in prior sds: the judgments' scale is tau / sigma0
        judgments = []
        for _ in range(int(rng.integers(3, 12))):
            a, b = (int(x) for x in rng.choice(k, 2, replace=False))
            judgments.append((a, b, int(rng.random() < 1.0 / (1.0 + np.exp(-(u[a] - u[b]) * sigma0 / tau)))))
        ref, _, _ = reference(judgments, draws, seed=seed, k=k, tau=tau / sigma0)  # the argmax ignores the scale
        for points in errors:
            params = KappaParams(**{**DEFAULT_KAPPA, "num_points": points})
            info = Kappa([f"b{i}" for i in range(k)], params).update_many([Judgment(*j) for j in judgments])
            errors[points].append(float(np.abs(np.asarray(info.argmax_probs) - ref).max()))
    out = {str(p): {"mean_max_error": float(np.mean(v)), "worst": float(np.max(v))} for p, v in errors.items()}
    for p, v in out.items():
        print(f"OverForge's kappa parameters, {p} points: mean of per-set max error {v['mean_max_error']:.4f}, "
              f"worst {v['worst']:.4f} (10 sets)")
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=4_000_000, help="prior draws of the reference")
    ap.add_argument("--seed", type=int, default=101, help="seed of the simulated case")
    ap.add_argument("--overforge", action="store_true", help="OverForge's kappa parameters on ten random sets")
    args = ap.parse_args(argv)
    if args.overforge:
        return overforge_sets(min(args.draws, 1_000_000))
    judgments = case(args.seed)
    ref, se, ess = reference(judgments, args.draws, seed=7)
    out = {"config": {"K": K, "tau": TAU, "judgments": judgments, "draws": args.draws, "seed": args.seed},
           "reference": ref.round(4).tolist(), "reference_se": se.round(4).tolist(), "reference_ess": round(ess)}
    print(f"reference: {np.round(ref, 4).tolist()} (se up to {se.max():.4f}, ESS {ess:.0f})")
    for points in (2048, 16384):
        for order in range(4):
            idx = np.random.default_rng(order).permutation(len(judgments)) if order else np.arange(len(judgments))
            k = Kappa([f"b{i}" for i in range(K)], KappaParams(tau=TAU, num_points=points))
            info = k.update_many([Judgment(*judgments[i]) for i in idx])
            diff = np.abs(np.asarray(info.argmax_probs) - ref)
            worst = int(diff.argmax())
            err = float(diff[worst])
            z = err / float(se[worst]) if se[worst] > 0 else float("inf")  # in the reference's se of that branch
            out[f"{points}/{order}"] = {"probs": np.round(info.argmax_probs, 4).tolist(), "max_error": err,
                                        "ess": info.ess, "points_used": info.points}
            print(f"{points} points, order {order}: {np.round(info.argmax_probs, 4).tolist()} max error {err:.4f} "
                  f"({z:.0f} reference se), ess {info.ess:.3f} on {info.points} points")
    print(json.dumps(out["config"]))
    return out


if __name__ == "__main__":
    main()
