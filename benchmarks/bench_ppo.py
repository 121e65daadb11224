"""PPO benchmark: env-steps/s of training (rollout + gradient passes) against the bare
JaxMARL OvercookedV2 environment (vmapped, jitted, random joint actions), in the same process.

* bare env:      ``lax.scan`` over ``vmap(step)`` with uniform random actions, no network;
* rollout only:  the trainer's update with one epoch of one minibatch (mostly the rollout);
* training:      the trainer's update with the configured epochs and minibatches.

Usage: python benchmarks/bench_ppo.py [--quick] [--json] [--layout v2/cramped_room]
"""

from __future__ import annotations

import argparse
import json
import time


def _bare_env(layout: str, num_envs: int, steps: int, repeats: int) -> float:
    import jax

    from beliefgate.rl.ppo import make_env

    _, env = make_env(layout, 400)
    n_agents = env.num_agents

    def run(key):
        k_reset, key = jax.random.split(key)
        _, state = jax.vmap(env.reset)(jax.random.split(k_reset, num_envs))

        def body(carry, _):
            state, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            acts = jax.random.randint(k_act, (n_agents, num_envs), 0, env.num_actions)
            actions = {f"agent_{i}": acts[i] for i in range(n_agents)}
            _, state, reward, _, _ = jax.vmap(env.step)(jax.random.split(k_step, num_envs), state, actions)
            return (state, key), reward["agent_0"].sum()

        (_, _), r = jax.lax.scan(body, (state, key), None, steps)
        return r.sum()

    fn = jax.jit(run)
    fn(jax.random.PRNGKey(0)).block_until_ready()
    best = float("inf")
    for i in range(repeats):
        t0 = time.perf_counter()
        fn(jax.random.PRNGKey(i + 1)).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    return num_envs * steps / best


def _trainer_speed(config, repeats: int) -> float:
    import jax

    from beliefgate.rl.ppo import Trainer

    trainer = Trainer(config)
    state = trainer.init()
    state, _ = trainer.update(state)
    jax.block_until_ready(state)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        state, metrics = trainer.update(state)
        jax.block_until_ready(metrics)
        best = min(best, time.perf_counter() - t0)
    assert trainer.traces == 1
    return config.steps_per_update / best


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--layout", default="v2/cramped_room")
    args = parser.parse_args(argv)
    from beliefgate.rl.config import PPOConfig

    repeats = 2 if args.quick else 5
    base = dict(layout=args.layout, total_steps=10_000_000)
    if args.quick:
        base.update(num_envs=8, rollout_len=32)
    cfg = PPOConfig(**base)
    rows = [
        {"what": "bare env (random actions)", "num_envs": cfg.num_envs,
         "env_steps_per_s": _bare_env(args.layout, cfg.num_envs, cfg.rollout_len, repeats)},
        {"what": "rollout + 1 pass (epochs 1, minibatches 1)", "num_envs": cfg.num_envs,
         "env_steps_per_s": _trainer_speed(cfg.model_copy(update={"epochs": 1, "minibatches": 1}), repeats)},
        {"what": f"training (epochs {cfg.epochs}, minibatches {cfg.minibatches}, hidden {list(cfg.hidden)})",
         "num_envs": cfg.num_envs, "env_steps_per_s": _trainer_speed(cfg, repeats)},
    ]
    bare = rows[0]["env_steps_per_s"]
    for r in rows:
        r["fraction_of_bare"] = r["env_steps_per_s"] / bare
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"PPO on {args.layout}: env-steps/s (rollout {cfg.rollout_len} steps x {cfg.num_envs} envs)")
        for col in ("what", "env-steps/s", "of bare env"):
            table.add_column(col, justify="right")
        for r in rows:
            table.add_row(r["what"], f"{r['env_steps_per_s']:,.0f}", f"{r['fraction_of_bare']:.3f}")
        Console().print(table)
    return {"rows": rows}


if __name__ == "__main__":
    main()
