"""Would XLA (on the CPU or on a GPU) meet issue 15's 100 us? The kappa argmax rule under jax.jit.

The same arithmetic as ``beliefgate.beliefs.kappa._probs_qmc`` (same quasi-random points, same
Rao-Blackwellised term, same importance log-weights and control variate), written in
``jax.numpy`` with the judged pairs padded to k (k - 1) / 2 (a padded pair has no wins and a
zero site, so it adds nothing), jitted once, and timed against the NumPy rule state by state in
one process on the states of the benchmark's evidence streams (8 branches, 20 judgments and 10
rollouts per stream, tuning seed 1000). Two timings per rule size on JAX's default backend:

* ``one state``: one call per state, inputs sent and the probabilities brought back to the
  host (what one ``kappa_update`` would pay);
* ``batched``: every state in one ``vmap``-ed call, divided by the number of states (what a
  caller scoring many decisions at once would pay per decision).

Only the argmax rule is timed (the EP conditioning of a judgment costs ~190 us on its own,
docs/kappa.md). It is a measurement, not an estimator beliefgate uses::

    python docs/examples/results15/jax_rule.py [--streams 20] [--seed 1000] [--points 2048 16384]
    JAX_PLATFORMS=cuda python docs/examples/results15/jax_rule.py     # on a GPU
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, from anywhere
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.scipy.special import ndtr  # noqa: E402

from benchmarks.bench_accel import positive  # noqa: E402
from benchmarks.bench_kappa import judged_states  # noqa: E402
from beliefgate import KappaParams  # noqa: E402
from beliefgate.beliefs import kappa as K  # noqa: E402

jax.config.update("jax_enable_x64", True)


def rule(z, m, cov, lam, design, wins, site_p, site_nu, tau):
    """``_probs_qmc``'s estimate (before its final clip and renormalisation) in jax.numpy."""
    k, n = m.shape[0], z.shape[0]
    chol = jnp.linalg.cholesky(cov)
    d = jnp.diag(lam)
    both = z @ jnp.hstack([chol.T, (chol.T @ lam) / d])
    u = both[:, :k] + m
    cond = u - both[:, k:]  # E[U_b | U_-b] at each point
    top = jnp.argmax(u, axis=1)
    two = jax.lax.top_k(u, 2)[0]
    rest = jnp.where(u >= two[:, :1], two[:, 1:2], two[:, :1])  # max over the others
    rb = ndtr((cond - rest) * jnp.sqrt(d)).sum(axis=0)
    rb = rb / rb.sum()
    x = u @ (design.T / tau)
    n_all = wins[:, 0] + wins[:, 1]
    lin = -wins[:, 1] - tau * site_nu
    quad = 0.5 * tau * tau * site_p
    log_sig = jnp.minimum(x, 0.0) - jnp.log1p(jnp.exp(-jnp.abs(x)))
    log_w = log_sig @ n_all + x @ lin + (x * x) @ quad
    w = jnp.exp(log_w - log_w.max())
    w = w / w.sum()
    return rb + jax.ops.segment_sum(w - 1.0 / n, top, num_segments=k)


def padded(state, tau: float) -> tuple:
    """The state's arrays with the judged pairs padded to k (k - 1) / 2 rows."""
    k = len(state.names)
    full = k * (k - 1) // 2
    pad = full - len(state.pairs)
    design = np.vstack([np.asarray(state.design, float), np.zeros((pad, k))])
    wins = np.vstack([np.asarray(state.wins, float), np.zeros((pad, 2))])
    site_p = np.concatenate([state.site_p, np.zeros(pad)])
    site_nu = np.concatenate([state.site_nu, np.zeros(pad)])
    return (np.asarray(state.mean), np.asarray(state.cov), np.asarray(state.lam), design, wins, site_p, site_nu,
            np.float64(tau))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--streams", type=positive, default=20, help="evidence streams (30 updates each)")
    ap.add_argument("--seed", type=int, default=1000, help="seed of the streams (tuning seeds are >= 1000)")
    ap.add_argument("--points", type=positive, nargs="+", default=[2048, 16384], help="sizes of the rule")
    args = ap.parse_args(argv)
    params = KappaParams()
    states = judged_states(params, 8, args.streams, args.seed)
    device = jax.devices()[0]
    out = {"config": {"streams": args.streams, "seed": args.seed, "states": len(states), "jax": jax.__version__,
                      "backend": jax.default_backend(), "device": str(device.device_kind)}}
    one = jax.jit(rule)
    many = jax.jit(jax.vmap(rule, in_axes=(None, 0, 0, 0, 0, 0, 0, 0, None)))
    arrays = [padded(s, params.tau) for s in states]
    stacked = [np.stack([a[i] for a in arrays]) for i in range(7)]
    for n in args.points:
        z = jnp.asarray(K._points(8, n, params.seed))
        ref = [K._probs_qmc(params, s, n)[0] for s in states]
        got = [np.asarray(one(z, *a)) for a in arrays]  # compiles once (fixed shapes)
        diff = max(float(np.abs(r - g).max()) for r, g in zip(ref, got))
        t_np, t_one = [], []
        for s, a in zip(states, arrays):  # alternate state by state: the machine's phase hits both alike
            t0 = time.perf_counter()
            K._probs_qmc(params, s, n)
            t_np.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            np.asarray(one(z, *a))
            t_one.append(time.perf_counter() - t0)
        batch = np.asarray(many(z, *stacked, params.tau))  # compile
        starts = []
        for _ in range(5):
            t0 = time.perf_counter()
            batch = np.asarray(many(z, *stacked, params.tau))
            starts.append(time.perf_counter() - t0)
        diff_b = float(np.abs(np.stack(ref) - batch).max())
        row = {"numpy rule p50 us": round(1e6 * float(np.median(t_np)), 1),
               "jax one state p50 us": round(1e6 * float(np.median(t_one)), 1),
               "jax batched per state us": round(1e6 * min(starts) / len(states), 2),
               "max |numpy - jax|": max(diff, diff_b)}
        out[str(n)] = row
        print(f"{n} points: " + ", ".join(f"{k} {v}" for k, v in row.items() if k.endswith("us"))
              + f"; max |numpy - jax| {row['max |numpy - jax|']:.1e}", flush=True)
    print(json.dumps(out["config"]))
    return out


if __name__ == "__main__":
    main()
