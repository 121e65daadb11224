"""A behaviour-cloned human proxy: ``bc:<layout>`` plays like the 2019 study's people.

Part of the Overcooked domain (a partner made from the domain's own human data, like its scripted
partners); the agent table's ``bc`` row names :func:`bc_agent` by string.

One small policy per layout, trained on the study's TRAIN split
(:mod:`beliefgate.envs.human_data`): a two-layer MLP (tanh, :data:`HIDDEN` units)
with a softmax over the six actions, fitted by full-batch Adam with weight decay
on the cross-entropy of the humans' logged actions (both players of every game).
Training stops at the step with the best log-loss on held-out TRAIN games
(:data:`VAL_FRACTION` of the games of the layout); the test split is only used for
reporting.

Features (:class:`Featurizer`, symbolic state only; version :data:`FEATURE_VERSION`):
own cell (one-hot over floor cells), orientation and held object; the same for the
other player and its offset; per pot: onions / 3, cooking, ready, ticks left / 20;
per counter: onion / dish / soup on it; for each of the six skills the controller's
action values ``Q_k(s, a)`` relative to the best action (clipped to [-4, 0], /4),
the distance to the skill's nearest target (clipped at 20, /20) and whether the
held object allows the skill; the agent's own previous action (one-hot, with a
"none" slot).

Play: the action is *sampled* from the policy (seeded). Humans wait, and a
deterministic clone of waiting can wait forever; as in the BC agents of the
Overcooked-AI literature, an "unstuck" rule takes a random free move when the
agent's pose and held object have not changed for :data:`STUCK_STEPS` steps.

The trained model is a versioned artefact in the cache:
``<cache>/bc/v<BC_VERSION>/<layout>.npz`` (weights + a JSON ``meta`` record of the
training run: data hash, feature version, seed, sizes, accuracies). ``bc:<layout>``
loads it, or trains it on first use when the human data has been fetched.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from beliefgate.errors import RuntimeFailure
from beliefgate.envs.overcooked.controller import controller_for
from beliefgate.envs.overcooked.layouts import DIRECTIONS, LAYOUTS, layout_info, resolve_layout
from beliefgate.envs.overcooked.state import SymbolicState
from beliefgate.envs.overcooked.tables import NUM_ACTIONS, STAY, cache_dir

BC_VERSION = 1
FEATURE_VERSION = 1
ARTEFACT_FORMAT = "beliefgate.bc/1"
HIDDEN = 64
VAL_FRACTION = 0.2
STUCK_STEPS = 8
HELD = (None, "onion", "dish", "soup", "tomato")

Progress = Callable[[int, int, str], None]


class BCModelError(RuntimeFailure):
    """A BC model is missing, stale or unreadable, or cannot be trained."""


# ----------------------------------------------------------------------------- features
class Featurizer:
    """Symbolic state -> float32 feature vector for one player on one layout."""

    def __init__(self, layout: str):
        self.layout = resolve_layout(layout)
        info = layout_info(self.layout)
        self.info = info
        self.controller = controller_for(self.layout)
        self.library = self.controller.library
        self.floor = {c: i for i, c in enumerate(info.floor)}
        self.counters = {c: i for i, c in enumerate(info.counters)}
        self.pots = info.pots
        F, C, P, K = len(info.floor), len(info.counters), len(info.pots), self.library.num_skills
        self.sizes = {"self_cell": F, "self_dir": 4, "self_held": len(HELD), "other_cell": F, "other_dir": 4,
                      "other_held": len(HELD), "other_offset": 2, "pots": 4 * P, "counters": 3 * C,
                      "q": K * NUM_ACTIONS, "dist": K, "held_ok": K, "prev_action": NUM_ACTIONS + 1}
        self.dim = int(sum(self.sizes.values()))
        self._held_ok = np.array([[self.library.requirement_met(k, h) for k in range(K)] for h in HELD], np.float32)

    def __call__(self, state: SymbolicState, player: int, prev_action: Optional[int] = None) -> np.ndarray:
        info = self.info
        out = np.zeros(self.dim, np.float32)
        pos = 0

        def one_hot(index: int, size: int) -> None:
            nonlocal pos
            if 0 <= index < size:
                out[pos + index] = 1.0
            pos += size

        me = state.players[player]
        other = state.players[1 - player] if len(state.players) > 1 else me
        for p in (me, other):
            one_hot(self.floor.get(p.position, -1), len(self.floor))
            one_hot(DIRECTIONS.index(p.orientation), 4)
            one_hot(HELD.index(p.held) if p.held in HELD else len(HELD) - 1, len(HELD))
        out[pos] = (other.position[0] - me.position[0]) / info.width
        out[pos + 1] = (other.position[1] - me.position[1]) / info.height
        pos += 2
        for cell in self.pots:
            pot = state.pot_at(cell)
            if pot is not None:
                out[pos:pos + 4] = (pot.ingredients / 3.0, float(pot.cooking), float(pot.ready), pot.timer / 20.0)
            pos += 4
        slots = {"onion": 0, "dish": 1, "soup": 2}
        for obj in state.counters:
            c = self.counters.get(obj.position)
            if c is not None and obj.name in slots:
                out[pos + 3 * c + slots[obj.name]] = 1.0
        pos += 3 * len(self.counters)
        q = self.controller.q_values(state, player)
        rel = q - q.max(axis=1, keepdims=True)
        rel = np.where(np.isfinite(rel), np.clip(rel, -4.0, 0.0), -4.0) / 4.0
        out[pos:pos + q.size] = rel.ravel()
        pos += q.size
        dist = -q[:, STAY] - 1.0
        flat = np.all(q == 0.0, axis=1)
        dist = np.where(flat | ~np.isfinite(dist), 20.0, np.clip(dist, 0.0, 20.0)) / 20.0
        out[pos:pos + len(dist)] = dist
        pos += len(dist)
        h = HELD.index(me.held) if me.held in HELD else len(HELD) - 1
        out[pos:pos + self._held_ok.shape[1]] = self._held_ok[h]
        pos += self._held_ok.shape[1]
        one_hot(NUM_ACTIONS if prev_action is None else int(prev_action), NUM_ACTIONS + 1)
        if pos != self.dim:  # pragma: no cover - construction invariant
            raise RuntimeFailure(f"feature layout mismatch: wrote {pos} of {self.dim}")
        return out


def dataset_from_logs(paths: Sequence[Path], layout: str,
                      progress: Optional[Progress] = None) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features X [N, D], actions y [N] and game ids g [N] of both players of every log."""
    from beliefgate.envs.trajlog import read_log

    feat = Featurizer(layout)
    xs, ys, gs = [], [], []
    for i, path in enumerate(paths):
        if progress is not None:
            progress(i, len(paths), f"features {layout}: {Path(path).name}")
        traj = read_log(path)
        if traj.header.layout != feat.layout:
            raise BCModelError(f"{path} is a {traj.header.layout} log, expected {feat.layout}")
        for p in range(len(traj.steps[0].state.players) if traj.steps else 0):
            prev = None
            for row in traj.steps:
                xs.append(feat(row.state, p, prev))
                ys.append(row.actions[p])
                gs.append(i)
                prev = row.actions[p]
    if not xs:
        raise BCModelError(f"no steps to learn from for {layout}")
    return np.stack(xs), np.asarray(ys, np.int32), np.asarray(gs, np.int32)


# ----------------------------------------------------------------------------- the model
@dataclass
class BCPolicy:
    """MLP weights and the record of how they were made."""

    layout: str
    weights: Dict[str, np.ndarray]
    meta: Dict[str, Any] = field(default_factory=dict)

    def logits(self, x: np.ndarray) -> np.ndarray:
        w = self.weights
        h = np.tanh(x @ w["w1"] + w["b1"])
        h = np.tanh(h @ w["w2"] + w["b2"])
        return h @ w["w3"] + w["b3"]

    def probs(self, x: np.ndarray) -> np.ndarray:
        z = self.logits(np.atleast_2d(x).astype(np.float64))
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, meta=np.asarray(json.dumps(self.meta)), **self.weights)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "BCPolicy":
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                weights = {k: z[k] for k in ("w1", "b1", "w2", "b2", "w3", "b3")}
        except (OSError, KeyError, ValueError) as exc:
            raise BCModelError(f"cannot read BC model {path}: {exc}") from None
        if meta.get("format") != ARTEFACT_FORMAT or meta.get("bc_version") != BC_VERSION \
                or meta.get("feature_version") != FEATURE_VERSION:
            raise BCModelError(f"{path} is a BC model of another version ({meta.get('format')}, "
                               f"bc {meta.get('bc_version')}, features {meta.get('feature_version')}); "
                               "retrain with `beliefgate data train-bc --force`")
        return cls(meta["layout"], weights, meta)


def model_path(layout: str, cache: Optional[str | Path] = None) -> Path:
    root = Path(cache) if cache is not None else cache_dir()
    return root / "bc" / f"v{BC_VERSION}" / f"{resolve_layout(layout)}.npz"


def _init(key, dims):
    import jax

    params = {}
    keys = jax.random.split(key, len(dims) - 1)
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:]), start=1):
        params[f"w{i}"] = jax.random.normal(keys[i - 1], (a, b)) * np.sqrt(1.0 / a)
        params[f"b{i}"] = jax.numpy.zeros(b)
    return params


def train_policy(x: np.ndarray, y: np.ndarray, groups: np.ndarray, layout: str, seed: int = 0,
                 max_steps: int = 400, lr: float = 1e-2, weight_decay: float = 1e-4, hidden: int = HIDDEN,
                 val_fraction: float = VAL_FRACTION, eval_every: int = 10,
                 progress: Optional[Progress] = None) -> BCPolicy:
    """Fit the MLP by full-batch Adam; keep the step with the best held-out-game log-loss."""
    import jax
    import jax.numpy as jnp

    if max_steps < 1 or lr <= 0 or weight_decay < 0 or hidden < 1:
        raise BCModelError("max_steps, lr and hidden must be positive and weight_decay >= 0")
    if not 0.0 < val_fraction < 1.0:
        raise BCModelError(f"val_fraction must lie in (0, 1), got {val_fraction}")
    games = np.unique(groups)
    rng = np.random.default_rng(seed)
    n_val = max(1, int(round(val_fraction * len(games)))) if len(games) > 1 else 0
    val_games = set(rng.permutation(games)[:n_val].tolist())
    is_val = np.isin(groups, list(val_games))
    if not is_val.any():  # a single game: hold out its last fifth of steps
        is_val = np.zeros(len(y), bool)
        is_val[int(0.8 * len(y)):] = True
    xt, yt, xv, yv = x[~is_val], y[~is_val], x[is_val], y[is_val]
    dims = (x.shape[1], hidden, hidden, NUM_ACTIONS)
    params = _init(jax.random.PRNGKey(seed), dims)

    def forward(p, xb):
        h = jnp.tanh(xb @ p["w1"] + p["b1"])
        h = jnp.tanh(h @ p["w2"] + p["b2"])
        return h @ p["w3"] + p["b3"]

    def nll(p, xb, yb):
        logp = jax.nn.log_softmax(forward(p, xb))
        return -jnp.mean(jnp.take_along_axis(logp, yb[:, None], axis=1))

    def loss(p, xb, yb):
        l2 = sum(jnp.sum(p[k] ** 2) for k in p if k.startswith("w"))
        return nll(p, xb, yb) + weight_decay * l2

    b1, b2, eps = 0.9, 0.999, 1e-8

    @jax.jit
    def step(p, m, v, i, xb, yb):
        g = jax.grad(loss)(p, xb, yb)
        m = jax.tree_util.tree_map(lambda a, b: b1 * a + (1 - b1) * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: b2 * a + (1 - b2) * b * b, v, g)
        mh = jax.tree_util.tree_map(lambda a: a / (1 - b1 ** i), m)
        vh = jax.tree_util.tree_map(lambda a: a / (1 - b2 ** i), v)
        p = jax.tree_util.tree_map(lambda a, b, c: a - lr * b / (jnp.sqrt(c) + eps), p, mh, vh)
        return p, m, v

    val_nll = jax.jit(nll)
    xt_j, yt_j, xv_j, yv_j = jnp.asarray(xt), jnp.asarray(yt), jnp.asarray(xv), jnp.asarray(yv)
    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)
    best = (float("inf"), 0, params)
    started = time.perf_counter()
    for i in range(1, max_steps + 1):
        params, m, v = step(params, m, v, float(i), xt_j, yt_j)
        if i % eval_every == 0 or i == max_steps:
            vl = float(val_nll(params, xv_j, yv_j))
            if vl < best[0]:
                best = (vl, i, params)
            if progress is not None:
                progress(i, max_steps, f"{layout}: step {i}, held-out log-loss {vl:.3f}")
    weights = {k: np.asarray(val, np.float64) for k, val in best[2].items()}
    policy = BCPolicy(resolve_layout(layout), weights)
    acc = lambda xs, ys: float(np.mean(policy.probs(xs).argmax(axis=1) == ys)) if len(ys) else float("nan")  # noqa: E731
    policy.meta = {
        "format": ARTEFACT_FORMAT, "bc_version": BC_VERSION, "feature_version": FEATURE_VERSION,
        "layout": policy.layout, "feature_dim": int(x.shape[1]), "hidden": hidden, "seed": seed,
        "optimizer": {"name": "adam (full batch)", "lr": lr, "weight_decay": weight_decay, "max_steps": max_steps,
                      "best_step": best[1]},
        "train_samples": int(len(yt)), "val_samples": int(len(yv)), "train_games": int(len(games) - len(val_games)),
        "val_games": int(len(val_games)), "val_log_loss": best[0],
        "train_accuracy": acc(xt, yt), "val_accuracy": acc(xv, yv),
        "train_action_freq": (np.bincount(y, minlength=NUM_ACTIONS) / len(y)).round(6).tolist(),
        "train_s": round(time.perf_counter() - started, 2),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return policy


def train_layout(layout: str, seed: int = 0, cache: Optional[str | Path] = None,
                 progress: Optional[Progress] = None, **kwargs) -> BCPolicy:
    """Train ``bc:<layout>`` on the converted TRAIN split and save it in the cache."""
    from beliefgate.envs.human_data import HumanDataMissingError, load_dataset

    layout = resolve_layout(layout)
    try:
        ds = load_dataset(cache)
    except HumanDataMissingError as exc:
        raise BCModelError(f"cannot train bc:{layout}: {exc}") from None
    paths = ds.logs("train", layout)
    if not paths:
        raise BCModelError(f"the train split has no {layout} games")
    x, y, g = dataset_from_logs(paths, layout, progress)
    policy = train_policy(x, y, g, layout, seed=seed, progress=progress, **kwargs)
    policy.meta["data"] = {"source": ds.manifest["source"]["requirement"],
                           "sdist_sha256": ds.manifest["source"]["sha256"], "split": "train",
                           "games": len(paths), "manifest_created": ds.manifest["created"]}
    policy.save(model_path(layout, cache))
    _load_cached.cache_clear()
    return policy


@lru_cache(maxsize=None)
def _load_cached(path: str) -> BCPolicy:
    return BCPolicy.load(path)


def load_policy(layout: str, cache: Optional[str | Path] = None, train_if_missing: bool = True) -> BCPolicy:
    """The saved ``bc:<layout>`` model; trained on first use when the human data is in the cache."""
    layout = resolve_layout(layout)
    path = model_path(layout, cache)
    if path.is_file():
        try:
            return _load_cached(str(path))
        except BCModelError:
            if not train_if_missing:
                raise
    if not train_if_missing:
        raise BCModelError(f"no BC model for {layout} at {path}; run `beliefgate data train-bc --layout {layout}`")
    return train_layout(layout, cache=cache)


def evaluate_accuracy(policy: BCPolicy, paths: Sequence[Path]) -> Dict[str, float]:
    """Held-out action accuracy and log-loss of a policy on logs (both players), with the majority baseline."""
    x, y, _ = dataset_from_logs(paths, policy.layout)
    p = policy.probs(x)
    freq = np.asarray(policy.meta.get("train_action_freq") or np.full(NUM_ACTIONS, 1.0 / NUM_ACTIONS))
    majority = int(freq.argmax())
    moving = y != STAY
    return {"accuracy": float(np.mean(p.argmax(axis=1) == y)),
            "log_loss": float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-12, 1.0)))),
            "accuracy_non_stay": (float(np.mean(p[moving].argmax(axis=1) == y[moving])) if moving.any()
                                  else float("nan")),
            "majority_action": majority, "majority_accuracy": float(np.mean(y == majority)),
            "marginal_log_loss": float(-np.mean(np.log(np.clip(freq[y], 1e-12, 1.0)))),
            "n": int(len(y))}


# ----------------------------------------------------------------------------- the agent
class BCAgent:
    """Episode-runner agent that samples actions from a behaviour-cloned human policy."""

    replans = 0
    llm_calls = 0

    def __init__(self, layout: Optional[str] = None, policy: Optional[BCPolicy] = None,
                 stuck_steps: int = STUCK_STEPS, cache: Optional[str | Path] = None):
        self.model_layout = resolve_layout(layout) if layout else None
        self.name = f"bc:{self.model_layout}" if self.model_layout else "bc"
        self._policy = policy
        self.stuck_steps = int(stuck_steps)
        self.cache = cache

    def reset(self, layout: str, player: int, seed: int) -> None:
        layout = resolve_layout(layout)
        if self.model_layout is not None and layout != self.model_layout:
            raise BCModelError(f"{self.name} was trained on {self.model_layout}, not {layout}; use bc:{layout}")
        if self._policy is None or self._policy.layout != layout:
            self._policy = load_policy(layout, self.cache)
        self.layout = layout
        self.player = player
        self.rng = np.random.default_rng(seed)
        self.featurizer = Featurizer(layout)
        self.prev_action: Optional[int] = None
        self._last_key = None
        self._same = 0

    def act(self, state: SymbolicState, my_events: Sequence[str] = ()) -> int:
        me = state.players[self.player]
        key = (me.position, me.orientation, me.held)
        self._same = self._same + 1 if key == self._last_key else 0
        self._last_key = key
        if self.stuck_steps and self._same >= self.stuck_steps:
            action = self._unstick(state)
            self._same = 0
        else:
            p = self._policy.probs(self.featurizer(state, self.player, self.prev_action))[0]
            action = int(self.rng.choice(NUM_ACTIONS, p=p))
        self.prev_action = action
        return action

    def _unstick(self, state: SymbolicState) -> int:
        info = layout_info(self.layout)
        me = state.players[self.player].position
        others = {p.position for i, p in enumerate(state.players) if i != self.player}
        free = [a for a, (dx, dy) in enumerate(DIRECTIONS)
                if info.is_floor((me[0] + dx, me[1] + dy)) and (me[0] + dx, me[1] + dy) not in others]
        return int(self.rng.choice(free)) if free else int(self.rng.integers(0, 4))

    def info(self) -> Dict[str, object]:
        return {"skill": None, "replans": 0, "llm_calls": 0}


def make_bc_agent(name: str) -> BCAgent:
    """Factory for ``bc`` (model of the episode's layout) and ``bc:<layout>`` by full name."""
    return bc_agent(name.split(":", 1)[1] if ":" in name else None)


def bc_agent(option: Optional[str] = None) -> BCAgent:
    """The agent table's factory: ``bc`` (``option`` None: the episode's layout) or ``bc:<layout>``."""
    name = "bc" if option is None else f"bc:{option}"
    if option is not None:
        try:
            option = resolve_layout(option)
        except KeyError:
            from beliefgate.envs.domain import UnknownPartnerError

            raise UnknownPartnerError(f"unknown BC layout in {name!r}; use bc:<layout> with one of "
                                      f"{', '.join(LAYOUTS)}") from None
    return BCAgent(option)

