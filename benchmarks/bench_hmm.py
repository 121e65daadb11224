"""Benchmark: batched sticky-HMM log marginal likelihood, beliefgate vs dynamax.

For K in (6, 16, 64) skills, 1024 trajectories x 400 steps in float64 with random
log emissions, the identical sticky HMM (initial ``pi0``, transition
``(1 - h) I + h 1 pi0^T``) is evaluated by

* ``dynamax``: ``jit(vmap(hmm_filter))`` on batch-major ``[B, T, K]`` emissions;
* ``ours [T,K,B]``: :func:`beliefgate.beliefs.fast_hmm.sticky_log_marginal_tkb` on
  time-major emissions (the layout the kernel is written for);
* ``ours [B,T,K]``: :func:`beliefgate.beliefs.fast_hmm.sticky_log_marginal`, the
  same kernel including the transpose from dynamax's layout;
* ``exact``: the log-space hazard filter :func:`beliefgate.beliefs.filter.filter_batch`
  on the same data (the accuracy reference; also used when dynamax is missing).

Times are the best of ``--repeats`` rounds after a warm-up (implementations
timed round-robin within each round), with ``block_until_ready``. The table shows the ratio dynamax / ours and the largest
absolute difference between log marginals. Run::

    .venv/bin/python benchmarks/bench_hmm.py            # full sizes
    .venv/bin/python benchmarks/bench_hmm.py --quick    # tiny smoke run
"""

from __future__ import annotations

import argparse
import time
from typing import Callable, Optional, Sequence

import numpy as np


def _best_times(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best wall time (s) per function: one warm-up each, then ``repeats`` rounds.

    The functions are timed round-robin within each round, so a change in machine
    load affects all of them alike.
    """
    import jax

    for fn in fns.values():
        jax.block_until_ready(fn())
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def _dynamax_fn(pi0, transition):
    """``jit(vmap(hmm_filter))`` returning log marginals, or None without dynamax."""
    try:
        from dynamax.hidden_markov_model import hmm_filter
    except ImportError:
        return None
    import jax

    return jax.jit(jax.vmap(lambda ll: hmm_filter(pi0, transition, ll).marginal_loglik))


def run(batch: int, steps: int, skills: Sequence[int], hazard: float = 0.05,
        repeats: int = 5, seed: int = 0) -> list[dict]:
    """Time every implementation for each K; returns one result dict per K."""
    import jax
    import jax.numpy as jnp

    from beliefgate.beliefs import filter as F
    from beliefgate.beliefs.fast_hmm import sticky_log_marginal, sticky_log_marginal_tkb

    rows = []
    for num_skills in skills:
        rng = np.random.default_rng(seed + num_skills)
        counts = rng.integers(0, 5, num_skills).astype(float)
        alpha = 1.0
        pi0_np = (counts + alpha) / np.sum(counts + alpha)
        pi0 = jnp.asarray(pi0_np)
        h = jnp.asarray(hazard)
        transition = (1.0 - hazard) * jnp.eye(num_skills) + hazard * pi0[None, :]
        log_em_btk = jnp.asarray(2.0 * rng.standard_normal((batch, steps, num_skills)))
        log_em_tkb = jnp.asarray(
            np.ascontiguousarray(np.transpose(np.asarray(log_em_btk), (1, 2, 0))))

        params = F.FilterParams("hazard", hazard, alpha, None)
        obs = F.observations(log_em_btk, prior_counts=np.tile(counts, (batch, 1)), batched=True)
        fns = {"ours_tkb": lambda: sticky_log_marginal_tkb(log_em_tkb, pi0, h),
               "ours_btk": lambda: sticky_log_marginal(log_em_btk, pi0, h)}
        dyn = _dynamax_fn(pi0, transition)
        if dyn is not None:
            fns["dynamax"] = lambda: dyn(log_em_btk)
        row = {"K": num_skills, **_best_times(fns, repeats)}
        # The exact log-space filter is the accuracy reference; time it a few times only.
        row.update(_best_times({"exact": lambda: F.filter_batch(params, obs).log_marginal},
                               min(repeats, 3)))

        ours_tkb = fns["ours_tkb"]()
        row["diff_exact"] = float(jnp.max(jnp.abs(F.filter_batch(params, obs).log_marginal
                                                  - ours_tkb)))
        row["diff_btk"] = float(jnp.max(jnp.abs(fns["ours_btk"]() - ours_tkb)))
        if dyn is not None:
            row["diff_dynamax"] = float(jnp.max(jnp.abs(fns["dynamax"]() - ours_tkb)))
        rows.append(row)
        jax.clear_caches()
    return rows


def print_table(rows: list[dict], batch: int, steps: int) -> None:
    """Render the results with rich."""
    from rich.console import Console
    from rich.table import Table

    have_dyn = all("dynamax" in r for r in rows)
    table = Table(title=f"Sticky-HMM log marginal: {batch} trajectories x {steps} steps, "
                        "float64, best times in ms")
    for col in ["K", "dynamax", "ours TKB", "ours BTK", "exact", "dyn/TKB", "dyn/BTK",
                "|d| dynamax", "|d| exact"]:
        table.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        ms = lambda key: f"{1e3 * r[key]:.1f}" if key in r else "n/a"  # noqa: E731
        ratio = lambda key: f"{r['dynamax'] / r[key]:.2f}x" if have_dyn else "n/a"  # noqa: E731
        table.add_row(str(r["K"]), ms("dynamax"), ms("ours_tkb"), ms("ours_btk"), ms("exact"),
                      ratio("ours_tkb"), ratio("ours_btk"),
                      f"{r['diff_dynamax']:.1e}" if have_dyn else "n/a",
                      f"{r['diff_exact']:.1e}")
    console = Console(width=112)
    console.print(table)
    console.print("TKB: kernel on time-major [T, K, B] data; BTK: same kernel family on "
                  "dynamax's [B, T, K] layout; exact: log-space filter_batch; |d|: max abs "
                  "difference of log marginals against the TKB result.")
    if not have_dyn:
        console.print("dynamax is not installed (pip install '.[bench]'): ratios omitted.")


def main(argv: Optional[Sequence[str]] = None) -> list[dict]:
    """CLI entry point; returns the result rows (used by the smoke test)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a smoke run")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--skills", type=int, nargs="+", default=[6, 16, 64])
    parser.add_argument("--hazard", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    if args.quick:
        args.batch, args.steps, args.skills, args.repeats = 16, 40, [3, 5], 2

    import jax

    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        rows = run(args.batch, args.steps, args.skills, args.hazard, args.repeats)
    finally:
        jax.config.update("jax_enable_x64", previous)
    print_table(rows, args.batch, args.steps)
    return rows


if __name__ == "__main__":
    main()
