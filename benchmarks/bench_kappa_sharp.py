"""kappa at sharp judgment likelihoods: the NUTS fixture, the accuracy study and the speed bench.

``--make-fixture`` regenerates ``tests/fixtures/kappa_sharp_nuts.json``: random evidence sets at
tau in {0.01, 0.02, 0.05, 0.1, 0.2} (seeded, the same generator as
``tests/test_kappa_sharp.py``), each sampled with NUTS on the NumPyro model (4 chains x 2000
draws after 1000 warm-up; the argmax probabilities, their bulk ESS, r_hat, divergences).
The default run times one update at 8 branches (OverForge's parameters) and prints the
accuracy of OverForge's kappa on the sharp_tau sets::

    python benchmarks/bench_kappa_sharp.py [--make-fixture] [--streams 40]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIXTURE = ROOT / "tests" / "fixtures" / "kappa_sharp_nuts.json"
TAUS = (0.01, 0.02, 0.05, 0.1, 0.2)
SETS_PER_TAU = 4


def sharp_sets(tau: float, num: int, seed: int) -> list:
    """``num`` random decisions ``(K, judgments, rollouts)`` simulated at ``tau`` (mu0 0, sigma0 1,
    sigma_r 1): 3-8 branches, 1-12 judgments, 0-6 rollouts."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(num):
        k = int(rng.integers(3, 9))
        u = rng.standard_normal(k)
        judgments = []
        for _ in range(int(rng.integers(1, 13))):
            b, c = (int(x) for x in rng.choice(k, 2, replace=False))
            x = (u[b] - u[c]) / tau
            judgments.append((b, c, int(rng.random() < 0.5 * (1.0 + math.tanh(0.5 * x)))))
        rollouts = []
        for _ in range(int(rng.integers(0, 7))):
            b, d = int(rng.integers(k)), int(rng.integers(1, 4))
            rollouts.append((b, d, float(rng.normal(u[b], 1.0 / math.sqrt(d)))))
        out.append((k, judgments, rollouts))
    return out


def make_fixture(chains: int = 4, draws: int = 2000, warmup: int = 1000) -> dict:
    from beliefgate.models.kappa import nuts_argmax_probs

    records = []
    for n, tau in enumerate(TAUS):
        sets = sharp_sets(tau, SETS_PER_TAU, seed=4000 + n)
        values = {"mu0": 0.0, "sigma0": 1.0, "tau": tau, "sigma_r": 1.0}
        t0 = time.perf_counter()
        nuts = nuts_argmax_probs(values, sets, chains=chains, draws=draws, warmup=warmup, seed=n,
                                 target_accept=0.95)
        print(f"tau {tau}: NUTS {time.perf_counter() - t0:.1f} s, divergences {nuts[0].divergences}, "
              f"r_hat max {max(r.r_hat for r in nuts):.4f}", flush=True)
        for s, r in zip(sets, nuts):
            records.append({"tau": tau, "k": s[0], "judgments": s[1], "rollouts": s[2],
                            "probs": r.probs.round(6).tolist(), "ess": r.ess.round(1).tolist(),
                            "r_hat": round(r.r_hat, 5), "divergences": r.divergences, "draws": r.draws})
    data = {"made_by": "python benchmarks/bench_kappa_sharp.py --make-fixture",
            "chains": chains, "draws": draws, "warmup": warmup, "sets": records}
    FIXTURE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data


def defensive_reference(params, state, draws: int = 2_000_000, seed: int = 0, chunk: int = 250_000) -> tuple:
    """An independent consistent reference: pseudo-random draws, half from kappa's Gaussian ``q``, half
    from the exact Gaussian part (prior x rollouts), weighted by the exact posterior over that mixture.
    The weights are bounded (at most 2 / likelihood-free mass), so the estimate converges at the
    Monte-Carlo rate for every tau. Returns ``(probs, standard errors)``."""
    from beliefgate.beliefs import kappa as K

    rng = np.random.default_rng(seed)
    k = len(state.names)
    chol = np.linalg.cholesky(state.cov)
    lam = np.linalg.inv(state.cov)
    prec_b, h_b = K._base(params, state)
    m_b = h_b / prec_b
    log_w, top = [], []
    for start in range(0, draws, chunk):
        n = min(chunk, draws - start)
        u = np.vstack([rng.standard_normal((n // 2, k)) @ chol.T + state.mean,
                       rng.standard_normal((n - n // 2, k)) / np.sqrt(prec_b) + m_b])
        d = u - state.mean
        log_q = -0.5 * np.einsum("ij,jk,ik->i", d, lam, d) - np.log(np.diag(chol)).sum()
        log_base = (-0.5 * prec_b * (u - m_b) ** 2 + 0.5 * np.log(prec_b)).sum(axis=1)
        log_lik = K._pair_loglik(u @ state.design.T, state.wins[:, 0], state.wins[:, 1], params.tau).sum(axis=1)
        log_w.append(log_base + log_lik - np.logaddexp(log_q, log_base) + math.log(2.0))
        top.append(u.argmax(axis=1))
    log_w, top = np.concatenate(log_w), np.concatenate(top)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    probs = np.bincount(top, weights=w, minlength=k)
    se = np.array([math.sqrt(float(np.sum(w * w * ((top == b) - probs[b]) ** 2))) for b in range(k)])
    return probs, se


def defensive_rule(params, state, num_points: int, share: float = 0.25) -> tuple:
    """Candidate rule (not kappa's): the same quasi-random points over ``q`` plus ``share`` of them
    from the exact Gaussian part, balance-heuristic weights (bounded), the Rao-Blackwellised control
    variate on the ``q`` points scaled by their weight share. ``(probs, ess)``."""
    from scipy.special import ndtr

    from beliefgate.beliefs import kappa as K

    k = len(state.names)
    n_b = max(2, 2 * int(num_points * share / 2))
    z, zb = K._points(k, num_points, params.seed), K._points(k, n_b, params.seed + 1)
    chol = np.linalg.cholesky(state.cov)
    lam = state.lam
    d = np.diag(lam)
    both = z @ np.hstack([chol.T, (chol.T @ lam) / d])
    u = both[:, :k] + state.mean
    cond = u - both[:, k:]
    part = np.partition(u, k - 2, axis=1)
    rest = np.where(u >= part[:, k - 1:], part[:, k - 2:k - 1], part[:, k - 1:])
    rb = ndtr((cond - rest) * np.sqrt(d)).sum(axis=0)
    rb /= rb.sum()
    prec_b, h_b = K._base(params, state)
    m_b = h_b / prec_b
    uu = np.vstack([u, zb / np.sqrt(prec_b) + m_b])
    dd = uu - state.mean
    log_q = -0.5 * np.einsum("ij,jk,ik->i", dd, lam, dd) - np.log(np.diag(chol)).sum()
    log_base = (-0.5 * prec_b * (uu - m_b) ** 2 + 0.5 * np.log(prec_b)).sum(axis=1)
    log_lik = K._pair_loglik(uu @ state.design.T, state.wins[:, 0], state.wins[:, 1], params.tau).sum(axis=1)
    alpha = len(u) / len(uu)
    log_w = log_base + log_lik - np.logaddexp(math.log(alpha) + log_q, math.log1p(-alpha) + log_base)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    top = uu.argmax(axis=1)
    probs = np.bincount(top, weights=w, minlength=k)
    probs += w[:len(u)].sum() * (rb - np.bincount(top[:len(u)], minlength=k) / len(u))
    probs = np.clip(probs, 0.0, None)
    return probs / probs.sum(), float(1.0 / (len(w) * np.dot(w, w)))


def _build(params, k: int, judgments, rollouts=()):
    from beliefgate.beliefs.kappa import Judgment, Rollout, kappa_init, kappa_update

    state = kappa_init(params, [f"b{i}" for i in range(k)])
    for b, c, y in judgments:
        state, _ = kappa_update(params, state, Judgment(b, c, y))
    for b, d, r in rollouts:
        state, _ = kappa_update(params, state, Rollout(b, d, r))
    return state


def overforge_sets() -> list:
    """The ten evidence sets of ``docs/examples/results15/sharp_tau.py --overforge`` (seeds 3000-3009)."""
    from beliefgate.agents.overforge.config import DEFAULT_KAPPA

    scale = DEFAULT_KAPPA["sigma0"] / DEFAULT_KAPPA["tau"]
    out = []
    for seed in range(3000, 3010):
        rng = np.random.default_rng(seed)
        k = int(rng.integers(3, 7))
        u = rng.standard_normal(k)
        judgments = []
        for _ in range(int(rng.integers(3, 12))):
            a, b = (int(x) for x in rng.choice(k, 2, replace=False))
            judgments.append((a, b, int(rng.random() < 1.0 / (1.0 + np.exp(-(u[a] - u[b]) * scale)))))
        out.append((k, judgments))
    return out


def study(draws: int, points=(128, 512, 1024, 2048)) -> dict:
    """Per-set max error of kappa's rule and the defensive candidate against the reference, on
    OverForge's sets and on 12 random sets per tau in {0.5, 0.05, 0.01}."""
    from beliefgate.agents.overforge.config import DEFAULT_KAPPA
    from beliefgate.beliefs import kappa as K
    from beliefgate.beliefs.kappa import KappaParams

    cases = {"overforge": [(KappaParams(**{**DEFAULT_KAPPA, "num_points": 2048}), k, j, ()) for k, j in overforge_sets()]}
    for n, tau in enumerate((0.5, 0.05, 0.01)):
        cases[f"tau {tau}"] = [(KappaParams(tau=tau), *s) for s in sharp_sets(tau, 12, seed=5000 + n)]
    out = {}
    for name, sets in cases.items():
        errors, ses = {}, []
        for i, (params, k, judgments, rollouts) in enumerate(sets):
            state = _build(params, k, judgments, rollouts)
            ref, se = defensive_reference(params, state, draws, seed=i)
            ses.append(float(se.max()))
            for pts in points:
                p = params.model_copy(update={"num_points": pts})
                errors.setdefault(f"kappa {pts}", []).append(float(np.abs(K.kappa_info(p, state).argmax_probs - ref).max()))
                errors.setdefault(f"defensive {pts}", []).append(float(np.abs(defensive_rule(p, state, pts)[0] - ref).max()))
        out[name] = {r: {"mean": float(np.mean(v)), "worst": float(np.max(v))} for r, v in errors.items()}
        out[name]["reference_se_max"] = max(ses)
        print(f"{name} (reference se <= {max(ses):.4f}):", flush=True)
        for r, v in errors.items():
            print(f"  {r:15s} mean of per-set max error {np.mean(v):.4f}, worst {np.max(v):.4f}", flush=True)
    return out


def latency(streams: int, points=(128, 2048, (2048, 8192))) -> dict:
    """p50/p99 of one kappa_update at 8 branches with OverForge's parameters (10 judgments and 6
    rollouts per stream, judgments simulated at its tau), each rule in the same process: a point
    count, or ``(num_points, ess_points)`` for the ESS-driven size."""
    from beliefgate.agents.overforge.config import DEFAULT_KAPPA
    from beliefgate.beliefs.kappa import Judgment, KappaParams, Rollout, kappa_init, kappa_update

    rng = np.random.default_rng(0)
    evidence = []
    for _ in range(streams):
        u = rng.normal(0.0, DEFAULT_KAPPA["sigma0"], 8)
        stream = []
        for _ in range(10):
            b, c = (int(x) for x in rng.choice(8, 2, replace=False))
            stream.append(Judgment(b, c, int(rng.random() < 1.0 / (1.0 + np.exp(-(u[b] - u[c]) / DEFAULT_KAPPA["tau"])))))
        for _ in range(6):
            b = int(rng.integers(8))
            stream.append(Rollout(b, 1, float(rng.normal(u[b], DEFAULT_KAPPA["sigma_r"]))))
        rng.shuffle(stream)
        evidence.append(stream)
    def rule(p):
        num, ess = (p, 0) if isinstance(p, int) else p
        return KappaParams(**{**DEFAULT_KAPPA, "num_points": num, "ess_points": ess})

    times = {p: [] for p in points}
    for p in points:  # untimed warm-up: the rules' cached point sets (and the enlarged ones)
        params = rule(p)
        state = kappa_init(params, [f"b{i}" for i in range(8)])
        for ev in evidence[0]:
            state, _ = kappa_update(params, state, ev)
        for more in (8, 16, 32, 64, 128):
            kappa_update(params.model_copy(update={"num_points": min(more * params.num_points, 16384)}),
                         state, evidence[0][0])
    for stream in evidence:
        for p in points:  # interleaved: the load of the moment hits every rule alike
            params = rule(p)
            state = kappa_init(params, [f"b{i}" for i in range(8)])
            for ev in stream:
                t0 = time.perf_counter()
                state, _ = kappa_update(params, state, ev)
                times[p].append(time.perf_counter() - t0)
    out = {}
    for p, v in times.items():
        v = np.array(v) * 1e6
        out[str(p) if isinstance(p, int) else f"{p[0]}+ess_points={p[1]}"] = {"p50_us": float(np.median(v)), "p99_us": float(np.percentile(v, 99))}
    base = out[str(points[0])]["p50_us"]
    for p, v in out.items():
        print(f"{p} points: p50 {v['p50_us']:.0f} us, p99 {v['p99_us']:.0f} us "
              f"({v['p50_us'] / base:.2f}x the {points[0]}-point p50)", flush=True)
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--make-fixture", action="store_true", help="rerun NUTS and rewrite the test fixture")
    ap.add_argument("--study", action="store_true", help="the accuracy study (kappa's rule vs the defensive rule)")
    ap.add_argument("--draws", type=int, default=2_000_000, help="draws of the study's reference")
    ap.add_argument("--streams", type=int, default=40, help="evidence streams of the latency bench")
    args = ap.parse_args(argv)
    if args.make_fixture:
        return make_fixture()
    from beliefgate.beliefs.kappa import warm_up

    warm_up()
    out = {"latency": latency(args.streams)}
    if args.study:
        out["study"] = study(args.draws)
    return out


if __name__ == "__main__":
    main()
