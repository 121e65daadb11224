"""Would native code meet issue 15's 100 us? The kappa argmax rule compiled with Numba.

The same arithmetic as ``beliefgate.beliefs.kappa._probs_qmc`` (same quasi-random points, same
Rao-Blackwellised term, same importance log-weights; the final normalisations stay in NumPy),
compiled with Numba, and timed against the NumPy rule in one process on the states of the
benchmark's evidence streams (8 branches, 20 judgments and 10 rollouts per stream, tuning seed
1000). Three compiled variants split the per-point cost: the two k x k products only, plus the
normal cdfs, plus the logistic likelihoods (the full rule). The last two variants are not
estimators; they are timed only. Numba is not a dependency of beliefgate:

    pip install numba        # 0.68.1 measured
    python docs/examples/results15/native_rule.py [--streams 20] [--seed 1000]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

try:
    import numba
except ImportError:
    sys.exit("error: this measurement needs Numba (pip install numba); beliefgate itself does not")

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, from anywhere
from benchmarks.bench_accel import positive  # noqa: E402
from benchmarks.bench_kappa import judged_states  # noqa: E402
from beliefgate import KappaParams  # noqa: E402
from beliefgate.beliefs import kappa as K  # noqa: E402


@numba.njit(cache=False)
def _rule(z, m, chol, a_cond, d, pi, pj, n_all, lin, quad, tau, with_cdf, with_lik):
    n, k = z.shape
    rb = np.zeros(k)
    log_w = np.zeros(n)
    top = np.empty(n, np.int64)
    u = np.empty(k)
    c = np.empty(k)
    sq = np.sqrt(d)
    x_max = 0.0
    for r in range(n):
        for b in range(k):
            s = m[b]
            t = 0.0
            for j in range(k):
                s += z[r, j] * chol[b, j]
                t += z[r, j] * a_cond[j, b]
            u[b] = s
            c[b] = s - t  # E[U_b | U_-b] at this point
        i1 = 0
        for b in range(1, k):
            if u[b] > u[i1]:
                i1 = b
        v2 = -np.inf
        for b in range(k):
            if b != i1 and u[b] > v2:
                v2 = u[b]
        top[r] = i1
        if with_cdf:
            for b in range(k):
                a = (c[b] - (v2 if b == i1 else u[i1])) * sq[b]
                rb[b] += 0.5 * math.erfc(-a / math.sqrt(2.0))
        if with_lik:
            lw = 0.0
            for p in range(pi.shape[0]):
                x = (u[pi[p]] - u[pj[p]]) / tau
                ax = abs(x)
                x_max = max(x_max, ax)
                lw += n_all[p] * (min(x, 0.0) - math.log1p(math.exp(-ax))) + x * lin[p] + x * x * quad[p]
            log_w[r] = lw
    return rb, log_w, top, x_max


def compiled_rule(params: KappaParams, state, num_points: int, with_cdf=True, with_lik=True):
    m, cov, lam = state.mean, state.cov, state.lam
    k = len(m)
    z = K._points(k, num_points, params.seed)
    chol = np.linalg.cholesky(cov)
    d = np.ascontiguousarray(np.diag(lam))
    tau = params.tau
    n_all = (state.wins[:, 0] + state.wins[:, 1]).astype(np.float64)
    lin = -state.wins[:, 1] - tau * state.site_nu
    quad = 0.5 * tau * tau * state.site_p
    rb, log_w, top, _ = _rule(z, m, chol, (chol.T @ lam) / d, d, np.ascontiguousarray(state.pairs[:, 0]),
                              np.ascontiguousarray(state.pairs[:, 1]), n_all, lin, quad, tau, with_cdf, with_lik)
    rb = rb / rb.sum() if with_cdf else rb
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    n = len(w)
    return rb + np.bincount(top, weights=w - 1.0 / n, minlength=k)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--streams", type=positive, default=20, help="evidence streams (30 updates each)")
    ap.add_argument("--seed", type=int, default=1000, help="seed of the streams (tuning seeds are >= 1000)")
    args = ap.parse_args(argv)
    params = KappaParams()
    states = judged_states(params, 8, args.streams, args.seed)
    out = {"config": {"streams": args.streams, "seed": args.seed, "numba": numba.__version__,
                      "numpy": np.__version__, "states": len(states),
                      "median_pairs": float(np.median([len(s.pairs) for s in states]))}}
    variants = {"numpy rule": lambda s, n: K._probs_qmc(params, s, n)[0],
                "compiled, products only": lambda s, n: compiled_rule(params, s, n, False, False),
                "compiled, + normal cdfs": lambda s, n: compiled_rule(params, s, n, True, False),
                "compiled, full rule": lambda s, n: compiled_rule(params, s, n, True, True)}
    for name, fn in variants.items():
        fn(states[0], 512)  # compile / warm
    for n in (512, 2048):
        diff = max(float(np.abs(K._probs_qmc(params, s, n)[0] - compiled_rule(params, s, n)).max()) for s in states)
        times = {name: [] for name in variants}
        for s in states:  # alternate the variants state by state: the machine's phase hits all alike
            for name, fn in variants.items():
                t0 = time.perf_counter()
                fn(s, n)
                times[name].append(time.perf_counter() - t0)
        row = {name: round(1e6 * float(np.median(t)), 1) for name, t in times.items()}
        row["max |numpy - compiled|"] = diff
        out[str(n)] = row
        print(f"{n} points: " + ", ".join(f"{k} {v} us" for k, v in row.items() if k in times)
              + f"; max |numpy - compiled| {diff:.1e}")
    print(json.dumps(out["config"]))
    return out


if __name__ == "__main__":
    main()
