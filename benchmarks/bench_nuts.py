"""Benchmark: NUTS on the partner-skill model, marginalised filter vs NumPyro scan + enumeration.

The same posterior (beta, epsilon, h of the hazard model in ``docs/model.md``) is
sampled twice on the same data:

* ``marginalised``: :func:`beliefgate.models.fit.fit`, skills summed out by the
  online filter's forward scan (one ``numpyro.factor`` per batch);
* ``enumerated``: the model written the textbook NumPyro way, a discrete skill
  site per step inside ``numpyro.contrib.control_flow.scan`` with
  ``infer={"enumerate": "parallel"}`` (needs ``funsor``), under a plate over
  trajectories; NumPyro enumerates the skills out itself.

Before timing, the script checks that both log densities agree at random
parameters. Data: scripted Overcooked episodes (four layouts) give the states,
feasibility and completions; actions are simulated from the model at
``beta=2.5, epsilon=0.1, h=0.08``. Default sizes: 200 trajectories x 400 steps,
4 chains x 1000 draws (1000 warm-up). ``ESS/s`` is the smallest bulk ESS over
the three parameters divided by the wall time of the whole MCMC run
(compilation included).

The enumerated baseline costs about 12x more per gradient, so its full protocol
(4 x 1000 draws, 1000 warm-up) takes hours on a small CPU. By default
(``--baseline warm``) it starts from the marginalised run's adaptation: the
final step size, the diagonal mass matrix estimated from the marginalised draws
(the posterior is the same, checked above) and each chain's last draw; it then
re-adapts the step size over ``--baseline-warmup`` (50) steps and draws
``--baseline-draws`` (100). Its warm-up is therefore barely charged, so the
reported ESS/s ratio *understates* the marginalised model's advantage;
``projected_full_wall_s`` is the baseline's measured seconds per iteration times
the full protocol's iterations. ``--baseline cold --baseline-fraction 1`` runs the
baseline's own full protocol. Chains run in parallel
on CPU cores (the script sets the host device count before JAX starts; when JAX
is already running, e.g. under ``benchmarks/run_all.py``, it re-runs itself in a
fresh process). Run::

    .venv/bin/python benchmarks/bench_nuts.py            # full sizes (long: tens of minutes on 2 cores)
    .venv/bin/python benchmarks/bench_nuts.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

TRUTH = {"beta": 2.5, "epsilon": 0.1, "hazard": 0.08}
LAYOUTS = [("cramped_room", "balanced"), ("coordination_ring", "switch-sourcer-to-plater"),
           ("asymmetric_advantages", "plater"), ("counter_circuit", "onion-sourcer")]


def _jax_started() -> bool:
    """Whether JAX has created its backends (then the host device count can no longer change)."""
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge
    except ImportError:  # pragma: no cover - layout of a future JAX
        return True
    return bool(getattr(xla_bridge, "_backends", {}))


def make_data(trajectories: int, steps: int, episodes: int, seed: int):
    """Scripted episodes -> FitData tiled to ``trajectories`` rows, actions simulated at TRUTH."""
    from beliefgate.eval.episode import run_episode
    from beliefgate.models.data import load_logs, simulate, subset

    with tempfile.TemporaryDirectory(prefix="bench-nuts-") as tmp:
        paths = []
        for i in range(episodes):
            layout, partner = LAYOUTS[i % len(LAYOUTS)]
            path = Path(tmp) / f"{i}.jsonl"
            run_episode(layout, "balanced", partner, seed=seed + i, horizon=steps, log_path=path)
            paths.append(path)
        data = load_logs(paths)
    tiled = subset(data, [i % episodes for i in range(trajectories)])
    return simulate(tiled, TRUTH, seed)


def transition_logits(feasible, completed, valid, prior_counts, hazard, alpha):
    """Per-step transition logits ``[B, T, K, K]`` of the hazard model (``docs/model.md``).

    Row ``i`` of step ``t`` is ``p(z_t | z_{t-1} = i)``: the forced switch
    ``pi0 * feasible / S`` after a completion, at ``t = 0`` or when ``i`` is
    infeasible, else ``((1 - h) [i == j] + h pi0(j)) feasible(j) / Z_i``; the
    identity at padding steps. Zero probabilities become a logit of -1e30 (no
    ``-inf``, so gradients stay finite).
    """
    import jax
    import jax.numpy as jnp

    num_skills = feasible.shape[-1]
    done = jax.nn.one_hot(jnp.where(valid, completed, -1), num_skills, dtype=prior_counts.dtype)
    counts = prior_counts[:, None, :] + jnp.cumsum(done, axis=1) - done  # completions before t
    pi0 = (counts + alpha) / jnp.sum(counts + alpha, axis=-1, keepdims=True)
    f = feasible.astype(pi0.dtype)
    forced = pi0 * f / jnp.sum(pi0 * f, axis=-1, keepdims=True)  # [B, T, K]
    eye = jnp.eye(num_skills, dtype=pi0.dtype)
    sticky = ((1.0 - hazard) * eye + hazard * pi0[..., None, :]) * f[..., None, :]
    sticky = sticky / jnp.sum(sticky, axis=-1, keepdims=True)
    prev_done = jnp.pad(jnp.where(valid, completed, -1)[:, :-1] >= 0, ((0, 0), (1, 0)), constant_values=True)
    use_forced = prev_done[..., None, None] | ~feasible[..., :, None]
    probs = jnp.where(use_forced, forced[..., None, :], sticky)
    probs = jnp.where(valid[..., None, None], probs, eye)
    return jnp.where(probs > 0, jnp.log(jnp.where(probs > 0, probs, 1.0)), -1e30)


def enumerated_model(q, action_mask, weight, feasible, completed, valid, prior_counts):
    """The hazard model with a discrete skill per step, enumerated by NumPyro (scan + funsor)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.contrib.control_flow import scan
    from numpyro.ops.indexing import Vindex

    from beliefgate.models.params import PARAMS, sample_params
    from beliefgate.models.skill_model import SkillData, controller_loglik

    values = sample_params(PARAMS)
    data = SkillData(q, action_mask, weight, feasible, completed, prior_counts, valid)
    loglik = controller_loglik(data, values["beta"], values["epsilon"])  # [B, T, K]
    logits = transition_logits(feasible, completed, valid, prior_counts, values["hazard"], values["alpha"])
    num_traj = q.shape[0]
    rows = jnp.arange(num_traj)
    zeros = jnp.zeros(num_traj, q.dtype)

    def step(z_prev, xs):
        mat, ll = xs  # [B, K, K], [B, K]
        with numpyro.plate("trajectory", num_traj, dim=-1):
            z = numpyro.sample("z", dist.Categorical(logits=Vindex(mat)[rows, z_prev, :]),
                               infer={"enumerate": "parallel"})
            # the tempered action term as an observed Delta (a `numpyro.factor` inside an
            # enumerated scan loses its time dimension in NumPyro 0.22)
            term = Vindex(ll)[rows, z]
            numpyro.sample("a", dist.Delta(jnp.zeros_like(term), log_density=term), obs=zeros)
        return z, None

    scan(step, jnp.zeros(num_traj, jnp.int32), (jnp.swapaxes(logits, 0, 1), jnp.swapaxes(loglik, 0, 1)))


def _enum_args(data):
    s = data.skill
    return (s.q, s.action_mask, s.weight, s.feasible, s.completed, s.valid, s.prior_counts)


def potentials(data) -> dict:
    """The potential energy (negative log density, unconstrained parameters) of both models."""
    import jax
    from numpyro.infer.util import initialize_model

    from beliefgate.models.fit import FitConfig, belief_model, prepare

    key = jax.random.PRNGKey(0)  # only initialises the sites: the potentials do not depend on it
    return {
        "marginalised": initialize_model(key, lambda i: belief_model(i, FitConfig()),
                                         model_args=(prepare(data),))[1],
        "enumerated": initialize_model(key, enumerated_model, model_args=_enum_args(data))[1],
    }


def check_same_density(potential: dict, trials: int = 3, seed: int = 0) -> float:
    """Largest |difference| of the two potential energies at random parameters."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(trials):
        z = {"beta": rng.normal(0.5, 0.3), "epsilon": rng.normal(-2.0, 0.3), "hazard": rng.normal(-2.5, 0.3)}
        worst = max(worst, abs(float(potential["marginalised"](z)) - float(potential["enumerated"](z))))
    return worst


def time_gradients(potential: dict, repeats: int = 20) -> dict:
    """Milliseconds per potential-energy gradient of both models (compiled, after a warm-up call)."""
    import jax
    import jax.numpy as jnp

    z = {"beta": jnp.asarray(0.9), "epsilon": jnp.asarray(-2.2), "hazard": jnp.asarray(-2.4)}
    out = {}
    for name, fn in potential.items():
        grad = jax.jit(jax.value_and_grad(fn))
        jax.block_until_ready(grad(z))  # compile
        started = time.perf_counter()
        for _ in range(repeats):
            jax.block_until_ready(grad(z))
        out[name] = 1000.0 * (time.perf_counter() - started) / repeats
    return out


def _min_ess(idata, names=("beta", "epsilon", "hazard")) -> float:
    import arviz as az

    ess = az.ess(idata, var_names=list(names))
    return float(min(float(ess[n].values) for n in names))


def run_marginalised(data, chains, draws, warmup, chain_method, seed):
    from beliefgate.models.fit import FitConfig, fit

    started = time.perf_counter()
    idata = fit(data, FitConfig(chains=chains, draws=draws, warmup=warmup, chain_method=chain_method, seed=seed))
    wall = time.perf_counter() - started
    return {**_result(idata, wall, chains, draws, warmup), "idata": idata}


def warm_start(idata, data) -> dict:
    """The marginalised run's adaptation, to start the baseline from (same posterior, same sites).

    ``step_size``: median over chains of the final adapted step size;
    ``inverse_mass_matrix``: the variance of every unconstrained parameter over all
    draws (the diagonal NumPyro's windowed adaptation estimates);
    ``init_params``: each chain's last draw, unconstrained.
    """
    import jax.numpy as jnp
    from numpyro.infer.util import get_transforms

    from beliefgate.models.fit import FitConfig, belief_model, prepare

    names = ("beta", "epsilon", "hazard")  # sorted: NumPyro ravels the latent dict in key order
    post = idata.posterior
    means = {n: jnp.asarray(float(post[n].mean())) for n in names}
    transforms = get_transforms(lambda i: belief_model(i, FitConfig()), (prepare(data),), {}, means)
    unconstrained = {n: np.asarray(transforms[n].inv(jnp.asarray(post[n].values))) for n in names}
    step = idata.sample_stats["step_size"].values[:, -1] if "step_size" in idata.sample_stats else None
    return {
        "step_size": float(np.median(step)) if step is not None else 1.0,
        "inverse_mass_matrix": np.array([unconstrained[n].var() for n in names]),
        "init_params": {n: jnp.asarray(unconstrained[n][:, -1]) for n in names},
    }


def run_enumerated(data, chains, draws, warmup, chain_method, seed, start: Optional[dict] = None):
    """NUTS on the enumerated model; ``start`` (:func:`warm_start`) skips mass-matrix adaptation."""
    import arviz as az
    import jax
    from numpyro.infer import MCMC, NUTS

    started = time.perf_counter()
    if start is None:
        kernel = NUTS(enumerated_model)
        init = None
    else:
        kernel = NUTS(enumerated_model, step_size=start["step_size"],
                      inverse_mass_matrix=start["inverse_mass_matrix"], adapt_mass_matrix=False)
        init = start["init_params"] if chains > 1 else {k: v[0] for k, v in start["init_params"].items()}
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains,
                chain_method=chain_method, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), *_enum_args(data), init_params=init,
             extra_fields=("diverging", "num_steps"))
    # run() returns once the work is dispatched (JAX runs asynchronously): wait for the draws,
    # as fit() does when it converts them, or the clock stops before the sampling ends
    jax.block_until_ready((mcmc.get_samples(), mcmc.get_extra_fields()))
    wall = time.perf_counter() - started
    idata = az.from_numpyro(mcmc, log_likelihood=False)
    result = _result(idata, wall, chains, draws, warmup)
    result["start"] = "cold" if start is None else "warm"
    return result


def _result(idata, wall, chains, draws, warmup) -> dict:
    post = idata.posterior
    ess = _min_ess(idata)
    return {
        "wall_s": wall,
        "chains": chains, "draws": draws, "warmup": warmup,
        "min_ess_bulk": ess,
        "ess_per_s": ess / wall,
        "divergences": int(idata.sample_stats["diverging"].values.sum()),
        "mean_leapfrog_steps": float(idata.sample_stats["n_steps"].values.mean()),
        "posterior_mean": {k: float(post[k].mean()) for k in ("beta", "epsilon", "hazard")},
    }


def run(args) -> dict:
    import jax

    chain_method = "parallel" if jax.local_device_count() >= args.chains else "sequential"
    t0 = time.perf_counter()
    data = make_data(args.trajectories, args.steps, args.episodes, args.seed)
    prep = time.perf_counter() - t0
    potential = potentials(data)
    gap = check_same_density(potential)
    if gap > 1e-3 * max(1.0, float(data.num_steps) / 1000):
        raise SystemExit(f"the two models disagree: |potential difference| = {gap:.3g}")
    grads = time_gradients(potential)
    print(f"data {prep:.1f} s, density gap {gap:.2g}, ms per gradient {grads}", file=sys.stderr, flush=True)
    if args.gradients_only:
        return {"trajectories": args.trajectories, "steps": args.steps, "density_gap": gap,
                "gradient_ms": grads, "ratio_gradient": grads["enumerated"] / grads["marginalised"],
                "x64": bool(jax.config.jax_enable_x64)}
    ours = run_marginalised(data, args.chains, args.draws, args.warmup, chain_method, args.seed)
    ours_idata = ours.pop("idata")
    print("marginalised: " + json.dumps(ours), file=sys.stderr, flush=True)  # partial result of a long run
    if args.baseline == "warm":
        enum = run_enumerated(data, args.chains, args.baseline_draws, args.baseline_warmup, chain_method,
                              args.seed, warm_start(ours_idata, data))
    else:
        b_draws = max(10, int(round(args.draws * args.baseline_fraction)))
        b_warmup = max(10, int(round(args.warmup * args.baseline_fraction)))
        enum = run_enumerated(data, args.chains, b_draws, b_warmup, chain_method, args.seed)
    # what the baseline would take at the marginalised run's protocol, at its own measured pace
    enum["projected_full_wall_s"] = enum["wall_s"] / (enum["draws"] + enum["warmup"]) * (args.draws + args.warmup)
    return {
        "trajectories": args.trajectories, "steps": args.steps, "chain_method": chain_method,
        "devices": jax.local_device_count(), "data_s": prep, "density_gap": gap,
        "truth": TRUTH, "marginalised": ours, "enumerated": enum, "gradient_ms": grads,
        "ratio_ess_per_s": ours["ess_per_s"] / enum["ess_per_s"],
        "ratio_gradient": grads["enumerated"] / grads["marginalised"],
        "x64": bool(jax.config.jax_enable_x64), "argv": sys.argv[1:], "config": vars(args),
    }


def print_table(result: dict) -> None:
    grads = result["gradient_ms"]
    if "marginalised" not in result:
        print(f"{result['trajectories']} trajectories x {result['steps']} steps: ms per gradient "
              f"marginalised {grads['marginalised']:.1f}, enumerated {grads['enumerated']:.1f} "
              f"({result['ratio_gradient']:.1f}x); log densities agree to {result['density_gap']:.2g}")
        return
    print(f"NUTS on {result['trajectories']} trajectories x {result['steps']} steps "
          f"({result['chain_method']} chains on {result['devices']} device(s)); "
          f"log densities agree to {result['density_gap']:.2g}")
    head = f"{'model':<14}{'chains x draws':>16}{'wall s':>10}{'min ESS':>10}{'ESS/s':>10}{'leapfrog':>10}{'div':>5}"
    print(head)
    print("-" * len(head))
    for name in ("marginalised", "enumerated"):
        r = result[name]
        print(f"{name:<14}{r['chains']:>7} x {r['draws']:<6}{r['wall_s']:>10.1f}{r['min_ess_bulk']:>10.0f}"
              f"{r['ess_per_s']:>10.2f}{r['mean_leapfrog_steps']:>10.1f}{r['divergences']:>5}")
    enum = result["enumerated"]
    if enum.get("start") == "warm":
        print(f"enumerated baseline started from the marginalised run's adaptation ({enum['warmup']} step-size "
              f"warm-up steps): its ESS/s is an upper bound, the ratio below a lower bound")
    print(f"enumerated at the full protocol ({result['marginalised']['warmup']} + {result['marginalised']['draws']}"
          f" iterations), projected from its pace: {enum['projected_full_wall_s']:.0f} s")
    print(f"ms per gradient: marginalised {grads['marginalised']:.1f}, enumerated {grads['enumerated']:.1f}")
    print(f"ESS/s ratio marginalised / enumerated: {result['ratio_ess_per_s']:.1f}x "
          f"(truth beta={TRUTH['beta']}, epsilon={TRUTH['epsilon']}, h={TRUTH['hazard']}; "
          f"posterior means {result['marginalised']['posterior_mean']})")


def main(argv: Optional[Sequence[str]] = None) -> dict:
    """CLI entry point; returns the result dict."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke sizes")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    parser.add_argument("--trajectories", type=int, default=200)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--episodes", type=int, default=20, help="distinct scripted episodes (tiled)")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--baseline", choices=("warm", "cold"), default="warm",
                        help="warm: the baseline starts from the marginalised run's adapted step size, "
                             "diagonal mass matrix and last draws, and runs --baseline-warmup/--baseline-draws; "
                             "cold: it adapts itself over --baseline-fraction of the warm-up and draws")
    parser.add_argument("--baseline-draws", type=int, default=100)
    parser.add_argument("--baseline-warmup", type=int, default=50,
                        help="warm baseline: step-size re-adaptation steps (mass matrix kept)")
    parser.add_argument("--baseline-fraction", type=float, default=1.0,
                        help="cold baseline: share of --draws and --warmup it runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gradients-only", action="store_true",
                        help="time the two models' gradients only (no NUTS run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.trajectories, args.steps, args.episodes = 4, 40, 2
        args.chains, args.draws, args.warmup = 2, 60, 60
        args.baseline_draws, args.baseline_warmup, args.baseline_fraction = 60, 20, 1.0
    if _jax_started():  # under run_all.py: a fresh process can still use one device per chain
        cmd = [sys.executable, str(Path(__file__).resolve()), *(argv if argv is not None else sys.argv[1:])]
        if "--json" not in cmd:
            cmd.append("--json")
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise SystemExit(proc.returncode)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    else:
        import numpyro

        numpyro.set_host_device_count(max(1, args.chains))  # one (virtual) CPU device per chain
        result = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
    return result


if __name__ == "__main__":
    main()
