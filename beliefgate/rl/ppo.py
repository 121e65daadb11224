"""PPO on JaxMARL's OvercookedV2: vmapped environments, a ``lax.scan`` rollout, GAE and the
clipped objective, the whole update jitted once (:class:`Trainer`), and :func:`train`, the
resumable driver that writes the policy, its card, the learning curve and the training state.
"""

from __future__ import annotations

import csv
import math
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from beliefgate.errors import RuntimeFailure
from beliefgate.envs.overcooked_v2.policies.checkpoint import (CheckpointError, atomic_write, find_policies, load_params, save_policy,
                                      versions)
from beliefgate.rl.config import EVENTS, PPOConfig
from beliefgate.rl.events import (dish_drops, pot_distances, pot_potential, serve_distances, serve_potential,
                                  step_events)
from beliefgate.rl.layouts import LayoutNameError, resolve_layout
from beliefgate.envs.overcooked_v2.policies.network import ActorCritic

STATE_FILE = "state.msgpack"
POLICY_FILE = "policy.msgpack"
CURVE_COLUMNS = ("update", "env_steps", "mean_return", "episodes", "loss", "value_loss", "entropy",
                 "steps_per_s") + tuple(f"{e}_per_episode" for e in EVENTS)


@lru_cache(maxsize=32)
def make_env(layout: str, horizon: int):
    """``(canonical layout name, OvercookedV2 env)`` (cached: building one costs seconds)."""
    from jaxmarl.environments.overcooked_v2 import OvercookedV2

    name, spec = resolve_layout(layout)
    return name, OvercookedV2(layout=spec, max_steps=horizon)


class TrainingDiverged(RuntimeFailure):
    """A loss became NaN or infinite (the state saved before it is kept)."""


class TrainingGaveUp(RuntimeFailure):
    """No episode scored by ``PPOConfig.give_up_at`` env steps (the state, policy and curve are saved and
    ``OUT/GAVE_UP`` names the step)."""


GAVE_UP_FILE = "GAVE_UP"


def _strong(tree):
    """Every leaf strongly typed: JaxMARL's state has weakly typed ints, which a state read back
    from a file (always strong) would not match, and the update would be compiled again."""
    return jax.tree.map(lambda x: jax.lax.convert_element_type(x, jnp.asarray(x).dtype), tree)


@dataclass
class Pool:
    """FCP partners: stacked frozen parameters and where they came from."""

    params: Any
    files: List[str] = field(default_factory=list)


def load_pool(folder: str, layout: str, obs_shape) -> Pool:
    """Every policy under ``folder`` (checked against the layout and observation shape), stacked;
    :class:`CheckpointError` naming the folder or the file that does not fit."""
    root = Path(folder)
    if not root.is_dir():
        raise CheckpointError(f"pool_dir {folder}: not a directory")
    files = find_policies(root)
    if not files:
        raise CheckpointError(f"pool_dir {folder}: no policy checkpoints (*.msgpack with a .json card) in it")
    loaded = [load_params(f, layout=layout, obs_shape=obs_shape) for f in files]
    first = loaded[0][1]
    for f, (_, card) in zip(files, loaded):
        if tuple(card["hidden"]) != tuple(first["hidden"]) or card.get("conditioned_events"):
            raise CheckpointError(f"{f}: every pool member needs the same unconditioned network "
                                  f"(hidden {tuple(first['hidden'])})")
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *[p for p, _ in loaded])
    return Pool(params=stacked, files=[str(f) for f in files])


class Trainer:
    """The jitted PPO update of one config. ``init(seed)`` builds the training state (a pytree);
    ``update(state)`` runs one rollout of ``num_envs x rollout_len`` env steps and the epochs of
    minibatch gradient steps, returning ``(state, metrics)``. ``traces`` counts how often the update
    was traced (1 after any number of updates: no recompiles)."""

    def __init__(self, config: PPOConfig, pool: Optional[Pool] = None):
        self.config = config
        self.layout, self.env = make_env(config.layout, config.horizon)
        self.obs_shape = tuple(int(s) for s in self.env.obs_shape)
        self.num_agents = self.env.num_agents
        self.num_actions = int(self.env.num_actions)
        self.net = ActorCritic(num_actions=self.num_actions, hidden=tuple(config.hidden))
        self.static_grid = jnp.asarray(self.env.layout.static_objects)
        self.serve_dist = jnp.asarray(serve_distances(self.env.layout.static_objects))
        self.pot_dist = jnp.asarray(pot_distances(self.env.layout.static_objects))
        self.weights = jnp.asarray(config.weight_matrix() or [[0.0] * len(EVENTS)], jnp.float32)
        self.n_cond = len(EVENTS) if config.conditioned else 0
        if config.kind == "fcp" and self.num_agents != 2:
            raise LayoutNameError(f"layout {config.layout}: FCP here pairs an ego with one partner; the layout "
                                  f"seats {self.num_agents}")
        if config.kind == "fcp" and pool is None:
            pool = load_pool(config.pool_dir, self.layout, self.obs_shape)
        self.pool = pool
        self.traces = 0
        n_minibatch_steps = config.num_updates * config.epochs * config.minibatches
        lr = optax.linear_schedule(config.lr, 0.0, n_minibatch_steps) if config.anneal_lr else config.lr
        self.tx = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(lr, eps=1e-5))
        n = config.num_envs
        env_ids = jnp.arange(n)
        self.env_weights = self.weights[env_ids % self.weights.shape[0]]  # (N, E)
        self.ego_seat = (env_ids // (pool_size := (1 if pool is None else len(pool.files)))) % self.num_agents
        self.partner_idx = env_ids % pool_size
        # (N, A): which seats carry the env's event weights (input and reward); the others play the
        # zero-weight behaviour on the task reward (bp_partner "task")
        if config.bp_mode == "task":
            bp_seat = (env_ids // self.weights.shape[0]) % self.num_agents
            self.weight_mask = (jnp.arange(self.num_agents)[None, :] == bp_seat[:, None]).astype(jnp.float32)
        else:
            self.weight_mask = jnp.ones((n, self.num_agents), jnp.float32)
        self._update = jax.jit(self._update_fn)
        self._init = jax.jit(self._init_fn)
        self._compiled = None

    # ------------------------------------------------------------------ state
    def init(self, seed: Optional[int] = None) -> Dict[str, Any]:
        """The training state of ``seed`` (the config's by default), built by one jitted function
        (JaxMARL's reset run op by op costs tens of seconds of dispatch)."""
        cfg = self.config
        state = self._init(jax.random.PRNGKey(cfg.seed if seed is None else seed))
        if cfg.init_from:
            params = warm_start(state["params"], cfg.init_from, self.layout, self.obs_shape)
            state = _strong({**state, "params": params, "opt_state": self.tx.init(params)})
        return state

    def _init_fn(self, key):
        cfg = self.config
        key, k_net, k_env = jax.random.split(key, 3)
        params = self.net.init(k_net, jnp.zeros((1, self.input_size)))
        obs, env_state = jax.vmap(self.env.reset)(jax.random.split(k_env, cfg.num_envs))
        return _strong({
            "params": params,
            "opt_state": self.tx.init(params),
            "env_state": env_state,
            "obs": self._stack(obs),
            "key": key,
            "update": jnp.asarray(0, jnp.int32),
            "ep_return": jnp.zeros((cfg.num_envs,), jnp.float32),
            "ep_events": jnp.zeros((cfg.num_envs, len(EVENTS)), jnp.float32),
        })

    @property
    def input_size(self) -> int:
        return int(np.prod(self.obs_shape)) + self.n_cond

    def _stack(self, obs: Dict[str, Any]):
        return jnp.stack([obs[f"agent_{i}"] for i in range(self.num_agents)], axis=1)  # (N, A, H, W, C)

    def compile(self, state) -> float:
        """Compile the update for ``state``'s shapes ahead of time (once per trainer); the seconds it took."""
        if self._compiled is not None:
            return 0.0
        t0 = time.perf_counter()
        self._compiled = self._update.lower(state, None if self.pool is None else self.pool.params).compile()
        return time.perf_counter() - t0

    def update(self, state):
        """One update. After :meth:`compile` the compiled executable runs, which refuses (rather than
        recompiles for) a state of other shapes or dtypes."""
        fn = self._compiled if self._compiled is not None else self._update
        return fn(state, None if self.pool is None else self.pool.params)

    # ------------------------------------------------------------------ the jitted update
    def _inputs(self, obs):
        """(N, A, D): flattened observations (+ each env's event weights when conditioned)."""
        n = obs.shape[0]
        x = obs.reshape(n, self.num_agents, -1).astype(jnp.float32)
        if self.n_cond:
            w = self.env_weights[:, None, :] * self.weight_mask[:, :, None]  # (N, A, E)
            x = jnp.concatenate([x, w], axis=-1)
        return x

    def _env_step(self, key, state, actions):
        """One step with JaxMARL's dynamics, the events of the state pair and the auto-reset."""
        k_step, k_reset = jax.random.split(key)
        acts = {f"agent_{i}": actions[i] for i in range(self.num_agents)}
        obs_st, state_st, rewards, dones, infos = self.env.step_env(k_step, state, acts)
        events = step_events(self.static_grid, state, state_st)
        obs_re, state_re = self.env.reset(k_reset)
        done = dones["__all__"]
        new_state = jax.tree.map(lambda r, s: jnp.where(done, r, s), state_re, state_st)
        new_obs = {k: jnp.where(done, obs_re[k], obs_st[k]) for k in obs_st}
        shaped = jnp.stack([infos["shaped_reward"][f"agent_{i}"] for i in range(self.num_agents)])
        if self.config.dish_drop_refund:
            shaped = shaped - self.config.dish_drop_refund * dish_drops(self.static_grid, state, state_st)
        # potential-based shaping (PPOConfig.serve_shaping, .pot_shaping): gamma * phi(s') - phi(s)
        for coef, potential, dist in ((self.config.serve_shaping, serve_potential, self.serve_dist),
                                      (self.config.pot_shaping, pot_potential, self.pot_dist)):
            if coef:
                phi, phi2 = (coef * potential(dist, s) for s in (state, state_st))
                shaped = shaped + self.config.gamma * phi2 - phi
        return new_obs, new_state, rewards["agent_0"], shaped, done, events

    def _update_fn(self, state, pool_params):
        self.traces += 1  # runs only while tracing
        cfg = self.config
        n, a = cfg.num_envs, self.num_agents
        steps_done = state["update"].astype(jnp.float32) * cfg.steps_per_update
        if cfg.shaping_fraction > 0:
            shaping = jnp.clip(1.0 - steps_done / (cfg.shaping_fraction * cfg.total_steps), 0.0, 1.0)
        else:
            shaping = jnp.asarray(0.0)
        fcp = self.pool is not None

        def rollout_step(carry, _):
            params, env_state, obs, key, ep_ret, ep_ev, done_sum, done_n, ev_done = carry
            key, k_act, k_partner, k_step = jax.random.split(key, 4)
            x = self._inputs(obs)  # (N, A, D)
            logits, value = self.net.apply(params, x.reshape(n * a, -1))
            logits, value = logits.reshape(n, a, -1), value.reshape(n, a)
            action = jax.random.categorical(k_act, logits)
            logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[..., None], -1)[..., 0]
            if fcp:
                raw = obs.reshape(n, a, -1).astype(jnp.float32)
                partner_seat = (1 - self.ego_seat) if a == 2 else (self.ego_seat + 1) % a
                px = jnp.take_along_axis(raw, partner_seat[:, None, None], 1)[:, 0]
                plogits = jax.vmap(lambda p: self.net.apply(p, px)[0])(pool_params)  # (P, N, A)
                plogits = plogits[self.partner_idx, jnp.arange(n)]
                paction = jax.random.categorical(k_partner, plogits)
                action = jnp.where(jnp.arange(a)[None, :] == partner_seat[:, None], paction[:, None], action)
            keys = jax.random.split(k_step, n)
            obs2, env_state2, reward, shaped, done, events = jax.vmap(self._env_step)(keys, env_state, action)
            obs2 = self._stack(obs2)
            event_r = (jnp.einsum("nae,ne->na", events, self.env_weights) * self.weight_mask
                       if cfg.kind == "bp" else 0.0)
            r = reward[:, None] + shaping * shaped + event_r
            ep_ret = ep_ret + reward
            ep_ev = ep_ev + events.sum(1)
            done_sum = done_sum + jnp.sum(jnp.where(done, ep_ret, 0.0))
            done_n = done_n + jnp.sum(done)
            ev_done = ev_done + jnp.sum(jnp.where(done[:, None], ep_ev, 0.0), 0)
            ep_ret = jnp.where(done, 0.0, ep_ret)
            ep_ev = jnp.where(done[:, None], 0.0, ep_ev)
            transition = (x, action, logp, value, r, jnp.broadcast_to(done[:, None], (n, a)))
            return (params, env_state2, obs2, key, ep_ret, ep_ev, done_sum, done_n, ev_done), transition

        carry0 = (state["params"], state["env_state"], state["obs"], state["key"], state["ep_return"],
                  state["ep_events"], jnp.asarray(0.0), jnp.asarray(0, jnp.int32), jnp.zeros((len(EVENTS),)))
        carry, traj = jax.lax.scan(rollout_step, carry0, None, cfg.rollout_len)
        params, env_state, obs, key, ep_ret, ep_ev, done_sum, done_n, ev_done = carry
        _, last_value = self.net.apply(params, self._inputs(obs).reshape(n * a, -1))
        last_value = last_value.reshape(n, a)
        x, action, logp, value, reward, done = traj  # (T, N, A, ...)
        if fcp:  # only the ego's samples train
            seat = self.ego_seat[None, :, None]
            pick = lambda t: jnp.take_along_axis(t, seat.reshape(seat.shape + (1,) * (t.ndim - 3)), 2)  # noqa: E731
            x, action, logp, value, reward, done = map(pick, (x, action, logp, value, reward, done))
            last_value = jnp.take_along_axis(last_value, self.ego_seat[:, None], 1)

        def gae_step(carry, t):
            gae, next_value = carry
            v, r, d = t
            delta = r + cfg.gamma * next_value * (1.0 - d) - v
            gae = delta + cfg.gamma * cfg.gae_lambda * (1.0 - d) * gae
            return (gae, v), gae

        _, adv = jax.lax.scan(gae_step, (jnp.zeros_like(last_value), last_value),
                              (value, reward, done.astype(jnp.float32)), reverse=True)
        targets = adv + value
        batch = jax.tree.map(lambda t: t.reshape((-1,) + t.shape[3:]), (x, action, logp, value, adv, targets))
        size = batch[0].shape[0]
        mb = size // cfg.minibatches

        def loss_fn(params, mb_batch):
            bx, ba, blogp, bv, badv, btarget = mb_batch
            logits, v = self.net.apply(params, bx)
            logps = jax.nn.log_softmax(logits)
            new_logp = jnp.take_along_axis(logps, ba[:, None], -1)[:, 0]
            v_clipped = bv + jnp.clip(v - bv, -cfg.clip, cfg.clip)
            value_loss = 0.5 * jnp.maximum(jnp.square(v - btarget), jnp.square(v_clipped - btarget)).mean()
            ratio = jnp.exp(new_logp - blogp)
            nadv = (badv - badv.mean()) / (badv.std() + 1e-8)
            actor_loss = -jnp.minimum(ratio * nadv, jnp.clip(ratio, 1 - cfg.clip, 1 + cfg.clip) * nadv).mean()
            entropy = -(jnp.exp(logps) * logps).sum(-1).mean()
            total = actor_loss + cfg.vf_coef * value_loss - cfg.ent_coef * entropy
            return total, (value_loss, entropy)

        grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

        def epoch(carry, _):
            params, opt_state, key = carry
            key, k_perm = jax.random.split(key)
            perm = jax.random.permutation(k_perm, size)
            shuffled = jax.tree.map(lambda t: t[perm].reshape((cfg.minibatches, mb) + t.shape[1:]), batch)

            def minibatch(carry, mb_batch):
                params, opt_state = carry
                (loss, aux), grads = grad_fn(params, mb_batch)
                updates, opt_state = self.tx.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), (loss, *aux)

            (params, opt_state), losses = jax.lax.scan(minibatch, (params, opt_state), shuffled)
            return (params, opt_state, key), losses

        (params, opt_state, key), losses = jax.lax.scan(epoch, (params, state["opt_state"], key), None, cfg.epochs)
        loss, value_loss, entropy = (jnp.mean(v) for v in losses)
        new_state = _strong({"params": params, "opt_state": opt_state, "env_state": env_state, "obs": obs,
                             "key": key, "update": state["update"] + 1, "ep_return": ep_ret, "ep_events": ep_ev})
        episodes = jnp.maximum(done_n, 1)
        metrics = {
            "mean_return": jnp.where(done_n > 0, done_sum / episodes, jnp.nan),
            "episodes": done_n,
            "loss": loss, "value_loss": value_loss, "entropy": entropy,
            "events_per_episode": jnp.where(done_n > 0, ev_done / episodes, jnp.nan),
        }
        return new_state, metrics


def warm_start(params, path: str, layout: str, obs_shape) -> Any:
    """``params`` (a fresh init) with the values of the policy file ``path`` (checked: card, digest, the
    layout and observation shape): leaves of the same shape are copied; a first-layer kernel with more
    inputs than the file's (a reward-conditioned net started from an unconditioned one) gets the file's
    rows and zeros for the extra inputs. :class:`CheckpointError` naming the file for another network."""
    from flax.traverse_util import flatten_dict, unflatten_dict

    src, _ = load_params(Path(path), layout=layout, obs_shape=obs_shape)
    dst, got = flatten_dict(params), flatten_dict(src)
    if set(dst) != set(got):
        raise CheckpointError(f"init_from {path}: another network (layers {sorted('/'.join(k) for k in got)[:3]}...)")
    out = {}
    for k, d in dst.items():
        v = np.asarray(got[k], np.float32)
        if v.shape == tuple(d.shape):
            out[k] = jnp.asarray(v)
        elif v.ndim == 2 and len(d.shape) == 2 and v.shape[1] == d.shape[1] and v.shape[0] < d.shape[0]:
            out[k] = jnp.concatenate([jnp.asarray(v), jnp.zeros((d.shape[0] - v.shape[0], v.shape[1]), jnp.float32)])
        else:
            raise CheckpointError(f"init_from {path}: {'/'.join(k)} has shape {v.shape}, this network {tuple(d.shape)}")
    return unflatten_dict(out)


# ---------------------------------------------------------------------- the driver
@dataclass
class TrainResult:
    out: Path
    policy: Path
    updates: int
    env_steps: int
    final_return: float
    wall_time_s: float
    steps_per_s: float
    resumed_from: int
    curve: List[Dict[str, float]]
    compile_s: float = 0.0


def _config_json(config: PPOConfig) -> Dict[str, Any]:
    return config.model_dump(mode="json")


def _serialize_state(state, curve: List[List[float]], config: PPOConfig, wall: float) -> bytes:
    import json

    from flax import serialization

    leaves = [np.asarray(x) for x in jax.tree.leaves(state)]  # the env state holds chex dataclasses
    payload = {"state": {str(i): x for i, x in enumerate(leaves)},
               "curve": np.asarray(curve, dtype=np.float64).reshape(-1, len(CURVE_COLUMNS)),
               "config": json.dumps(_config_json(config), sort_keys=True), "wall_time_s": float(wall)}
    return serialization.msgpack_serialize(payload)


def load_state(path: Path, trainer: Trainer, config: PPOConfig):
    """``(state, curve rows, wall time)`` from ``path``; :class:`CheckpointError` naming the file
    when it is corrupt or was made by another config (naming the first field that differs)."""
    import json

    from flax import serialization

    try:
        raw = serialization.msgpack_restore(Path(path).read_bytes())
        saved = json.loads(raw["config"])
    except Exception as exc:  # noqa: BLE001 -- msgpack/json raise several unrelated types on bad bytes
        raise CheckpointError(f"{path}: not a training state ({type(exc).__name__}: {exc})") from None
    mine = _config_json(config)
    for key in sorted(set(saved) | set(mine)):
        if saved.get(key) != mine.get(key):
            raise CheckpointError(f"{path}: the saved run has {key}={saved.get(key)!r}, this one {mine.get(key)!r} "
                                  f"(resume with the same settings, or give another --out)")
    template = jax.eval_shape(trainer.init)
    want = jax.tree.leaves(template)
    saved_leaves = raw.get("state") if isinstance(raw.get("state"), dict) else {}
    got = [np.asarray(saved_leaves[str(i)]) if str(i) in saved_leaves else None for i in range(len(want))]
    if len(saved_leaves) != len(want) or any(g is None or g.shape != w.shape or g.dtype != w.dtype
                                             for g, w in zip(got, want)):
        raise CheckpointError(f"{path}: the training state's arrays do not fit this run (count, shape or dtype)")
    state = jax.tree.unflatten(jax.tree.structure(template), [jnp.asarray(g) for g in got])
    curve = [list(map(float, row)) for row in np.asarray(raw["curve"]).reshape(-1, len(CURVE_COLUMNS))]
    return state, curve, float(raw["wall_time_s"])


def _card(trainer: Trainer, config: PPOConfig, env_steps: int, updates: int, final_return: float,
          wall: float) -> Dict[str, Any]:
    from beliefgate.provenance import git_commit

    return {
        "layout": trainer.layout, "kind": config.kind, "seed": config.seed, "steps": env_steps, "updates": updates,
        "event_weights": config.event_weights,
        "conditioned_events": list(EVENTS) if trainer.n_cond else [],
        "final_return": None if math.isnan(final_return) else round(final_return, 3),
        "wall_time_s": round(wall, 2), "commit": git_commit(), "versions": versions(),
        "obs_shape": list(trainer.obs_shape), "num_actions": trainer.num_actions, "hidden": list(config.hidden),
        "horizon": config.horizon, "pool": [str(f) for f in trainer.pool.files] if trainer.pool else [],
        "config": _config_json(config),
    }


def _final_return(curve: List[List[float]], window: int = 5) -> float:
    """Mean of the last ``window`` logged returns (updates without a finished episode skipped)."""
    vals = [row[2] for row in curve if not math.isnan(row[2])]
    return float(np.mean(vals[-window:])) if vals else float("nan")


def write_curve(out: Path, curve: List[List[float]], title: str) -> None:
    """``curve.csv`` and ``curve.png`` (mean return against env steps)."""
    from io import StringIO

    from beliefgate.figures import pyplot, save_figure

    buf = StringIO()
    writer = csv.writer(buf)
    writer.writerow(CURVE_COLUMNS)
    for row in curve:
        writer.writerow([int(v) if i in (0, 1, 3) else ("" if math.isnan(v) else f"{v:.6g}")
                         for i, v in enumerate(row)])
    atomic_write(out / "curve.csv", buf.getvalue().encode())
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    pts = [(r[1], r[2]) for r in curve if not math.isnan(r[2])]
    if pts:
        ax.plot(*zip(*pts), lw=1.5)
    ax.set_xlabel("env steps")
    ax.set_ylabel("mean return per episode")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = out / ".curve.tmp.png"
    save_figure(fig, tmp)
    tmp.replace(out / "curve.png")


def train(config: PPOConfig, out: Path, resume: bool = False, stop_after: Optional[int] = None,
          on_update: Optional[Callable[[Dict[str, float]], None]] = None, trainer: Optional[Trainer] = None
          ) -> TrainResult:
    """Train ``config`` into ``out`` (created). ``resume``: continue from ``out/state.msgpack`` when
    it exists (a fresh start otherwise); without it an existing state is refused. ``stop_after``:
    stop after this many updates of this call (a simulated kill after the last checkpoint).
    ``on_update`` gets each update's curve row as a dict. Every bad input is refused before any
    training step."""
    out = Path(out)
    state_file = out / STATE_FILE
    if state_file.exists() and not resume:
        raise CheckpointError(f"{state_file}: a training state exists; pass --resume to continue it or give "
                              f"another --out")
    trainer = trainer or Trainer(config)
    curve: List[List[float]] = []
    wall_before = 0.0
    if resume and state_file.exists():
        state, curve, wall_before = load_state(state_file, trainer, config)
    else:
        state = trainer.init()
    out.mkdir(parents=True, exist_ok=True)
    start = int(state["update"])
    total = config.num_updates
    snapshot_at = ({max(1, round(total * (k + 1) / config.snapshots)) for k in range(config.snapshots)}
                   if config.snapshots else set())
    t0 = time.perf_counter()
    compile_s = trainer.compile(state) if start < total else 0.0  # in the wall time, not in steps/s
    last_saved = start
    done_this_call = 0

    def save(state, upto: int) -> None:
        wall = wall_before + time.perf_counter() - t0
        atomic_write(state_file, _serialize_state(state, curve, config, wall))
        card = _card(trainer, config, upto * config.steps_per_update, upto, _final_return(curve), wall)
        save_policy(out / POLICY_FILE, state["params"], card)
        write_curve(out, curve, f"{config.kind} on {trainer.layout}, seed {config.seed}")

    for u in range(start, total):
        if stop_after is not None and done_this_call >= stop_after:
            break
        t_u = time.perf_counter()
        state, metrics = trainer.update(state)
        metrics = jax.device_get(metrics)
        dt = time.perf_counter() - t_u
        row = [u + 1, (u + 1) * config.steps_per_update, float(metrics["mean_return"]), int(metrics["episodes"]),
               float(metrics["loss"]), float(metrics["value_loss"]), float(metrics["entropy"]),
               config.steps_per_update / dt] + [float(v) for v in metrics["events_per_episode"]]
        curve.append(row)
        done_this_call += 1
        if not all(math.isfinite(v) for v in row[4:7]):
            raise TrainingDiverged(f"update {u + 1}: a non-finite loss ({row[4]}, {row[5]}, {row[6]}); the last "
                                   f"good state is {state_file} (update {last_saved})")
        if config.give_up_at and row[1] >= config.give_up_at and not _final_return(curve) > 0:
            save(state, u + 1)
            message = (f"{out}: no episode of the last five logged updates scored by {row[1]:,} env steps "
                       f"(give_up_at {config.give_up_at:,}); gave up at update {u + 1}")
            atomic_write(out / GAVE_UP_FILE, (message + "\n").encode())
            raise TrainingGaveUp(message)
        if u + 1 in snapshot_at:
            wall = wall_before + time.perf_counter() - t0
            snap = out / "snapshots" / f"update_{u + 1:06d}{'.msgpack'}"
            snap.parent.mkdir(exist_ok=True)
            save_policy(snap, state["params"], _card(trainer, config, (u + 1) * config.steps_per_update, u + 1,
                                                     _final_return(curve), wall))
        if (u + 1) % config.checkpoint_every == 0 or u + 1 == total:
            save(state, u + 1)
            last_saved = u + 1
        if on_update is not None:
            on_update(dict(zip(CURVE_COLUMNS, row)))
    if last_saved != int(state["update"]) and stop_after is None:
        save(state, int(state["update"]))
    elapsed = time.perf_counter() - t0
    train_s = elapsed - compile_s
    trained = int(state["update"]) - start
    return TrainResult(out=out, policy=out / POLICY_FILE, updates=int(state["update"]),
                       env_steps=int(state["update"]) * config.steps_per_update, final_return=_final_return(curve),
                       wall_time_s=wall_before + elapsed,
                       steps_per_s=trained * config.steps_per_update / train_s if train_s > 0 and trained else 0.0,
                       resumed_from=start, curve=[dict(zip(CURVE_COLUMNS, r)) for r in curve], compile_s=compile_s)


__all__ = ["Trainer", "train", "load_pool", "load_state", "make_env", "TrainResult", "TrainingGaveUp", "CURVE_COLUMNS",
           "STATE_FILE", "POLICY_FILE", "GAVE_UP_FILE"]
