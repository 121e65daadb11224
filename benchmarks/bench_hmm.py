"""Benchmark: the public batched filter ``filter_batch`` vs dynamax, posteriors and log marginals.

For K in (6, 16, 64) skills, 1024 trajectories x 400 steps in float64 with random
log emissions, the identical sticky HMM (initial ``pi0``, transition
``(1 - h) I + h 1 pi0^T``) is filtered by

* ``dynamax``: ``jit(vmap(hmm_filter))`` on ``[B, T, K]`` emissions, returning filtered
  probabilities ``[B, T, K]`` and log marginals;
* ``ours``: :func:`beliefgate.beliefs.filter.filter_batch` (default ``method="scaled"``)
  on the same ``[B, T, K]`` arrays, returning ``posterior [B, T, K]`` and
  ``log_marginal`` (its host-side dispatch included; on a CPU the default shards the
  batch into row blocks run on every core and joined on the host);
* ``1 block``: ``filter_batch(..., shards=1)``, the same kernel as one device computation
  on one core (what the sharding buys);
* ``log``: ``filter_batch(..., method="log")``, the log-space reference (accuracy and a
  third timing).

Times are the best of ``--repeats`` rounds after a warm-up (implementations timed
round-robin within each round, so machine load affects all alike), with
``block_until_ready``. Reported: ratio dynamax / ours and the largest absolute
differences of log marginals and posteriors. Run::

    .venv/bin/python benchmarks/bench_hmm.py            # full sizes
    .venv/bin/python benchmarks/bench_hmm.py --quick    # tiny smoke run
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
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
    """``jit(vmap(hmm_filter))`` returning (filtered probs, log marginals), or None without dynamax."""
    try:
        from dynamax.hidden_markov_model import hmm_filter
    except ImportError:
        return None
    import jax

    def one(ll):
        post = hmm_filter(pi0, transition, ll)
        return post.filtered_probs, post.marginal_loglik

    return jax.jit(jax.vmap(one))


def run(batch: int, steps: int, skills: Sequence[int], hazard: float = 0.05,
        repeats: int = 5, seed: int = 0) -> list[dict]:
    """Time every implementation for each K; returns one result dict per K."""
    import jax
    import jax.numpy as jnp

    from beliefgate.beliefs import filter as F

    rows = []
    for num_skills in skills:
        rng = np.random.default_rng(seed + num_skills)
        counts = rng.integers(0, 5, num_skills).astype(float)
        alpha = 1.0
        pi0 = jnp.asarray((counts + alpha) / np.sum(counts + alpha))
        transition = (1.0 - hazard) * jnp.eye(num_skills) + hazard * pi0[None, :]
        log_em = 2.0 * rng.standard_normal((batch, steps, num_skills))
        params = F.FilterParams("hazard", hazard, alpha, None)
        obs = F.observations(log_em, prior_counts=np.tile(counts, (batch, 1)), batched=True)
        log_em_j = obs.loglik

        def ours():
            res = F.filter_batch(params, obs)
            return res.posterior, res.log_marginal

        def logspace():
            res = F.filter_batch(params, obs, method="log")
            return res.log_posterior, res.log_marginal

        def one_block():
            res = F.filter_batch(params, obs, shards=1)
            return res.posterior, res.log_marginal

        fns = {"ours": ours, "one_block": one_block}
        dyn = _dynamax_fn(pi0, transition)
        if dyn is not None:
            fns["dynamax"] = lambda: dyn(log_em_j)
        row = {"K": num_skills, "shards": F.default_shards(obs.loglik), "cores": F._usable_cores(),
               **_best_times(fns, repeats)}
        row.update(_best_times({"log": logspace}, min(repeats, 3)))
        post, lm = ours()
        ref_post, ref_lm = logspace()
        row["diff_log"] = float(jnp.max(jnp.abs(ref_lm - lm)))
        row["diff_post_log"] = float(jnp.max(jnp.abs(jnp.exp(ref_post) - post)))
        if dyn is not None:
            d_post, d_lm = fns["dynamax"]()
            row["diff_dynamax"] = float(jnp.max(jnp.abs(d_lm - lm)))
            row["diff_post_dynamax"] = float(jnp.max(jnp.abs(d_post - post)))
        rows.append(row)
        jax.clear_caches()
    return rows


def print_table(rows: list[dict], batch: int, steps: int) -> None:
    """Render the results with rich."""
    from rich.console import Console
    from rich.table import Table

    have_dyn = all("dynamax" in r for r in rows)
    table = Table(title=f"filter_batch vs dynamax: {batch} trajectories x {steps} steps, float64, "
                        "posteriors + log marginals, best times in ms")
    for col in ["K", "dynamax", "ours", "1 block", "log", "dyn/ours", "dyn/1 block", "|dlogZ| dyn",
                "|dlogZ| log", "|dpost| log"]:
        table.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        ms = lambda key: f"{1e3 * r[key]:.1f}" if key in r else "n/a"  # noqa: E731
        table.add_row(str(r["K"]), ms("dynamax"), ms("ours"), ms("one_block"), ms("log"),
                      f"{r['dynamax'] / r['ours']:.2f}x" if have_dyn else "n/a",
                      f"{r['dynamax'] / r['one_block']:.2f}x" if have_dyn else "n/a",
                      f"{r['diff_dynamax']:.1e}" if have_dyn else "n/a",
                      f"{r['diff_log']:.1e}", f"{r['diff_post_log']:.1e}")
    console = Console(width=132)
    console.print(table)
    console.print(f"ours: filter_batch (scaled kernel, {rows[0].get('shards', 1)} row blocks on "
                  f"{rows[0].get('cores', 1)} cores); 1 block: filter_batch(shards=1); log: "
                  "filter_batch(method='log'), the log-space reference; |d|: max abs difference "
                  "against ours.")
    if not have_dyn:
        console.print("dynamax is not installed (make bench, or pip install -e '.[bench]'): ratios omitted.",
                      markup=False)


def main(argv: Optional[Sequence[str]] = None) -> list[dict]:
    """CLI entry point; returns the result rows (used by the smoke test)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a smoke run")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--skills", type=int, nargs="+", default=[6, 16, 64])
    parser.add_argument("--hazard", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", help="write the rows here")
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
    if args.json:
        import json

        Path(args.json).write_text(json.dumps({"config": vars(args), "rows": rows}, indent=2) + "\n")
    return rows


if __name__ == "__main__":
    main()
