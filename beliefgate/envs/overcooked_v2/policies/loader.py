"""Load a trained policy: :func:`load_policy(path) <load_policy>` -> a jitted ``obs -> action``.

Imports no training code (no optax, no trainer): partners and ego baselines load policies with
this module alone. The card is checked against the layout (and so the observation shape) the
policy will play before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence

from beliefgate.envs.overcooked_v2.policies.checkpoint import CheckpointError, load_params


class Policy:
    """A loaded policy. ``policy(obs)`` -> the action (an int) of one player's observation
    (``(height, width, channels)``, JaxMARL's default encoding); ``greedy=False`` samples from the
    policy with ``key``. ``policy.batch(obs)`` takes a batch ``(B, h, w, c)``. One jitted forward
    pass per call. A reward-conditioned BP network needs ``weights`` (a dict over the card's events)."""

    def __init__(self, params: Any, card: Dict[str, Any], path: Path, weights: Optional[Mapping[str, float]] = None):
        import jax
        import jax.numpy as jnp

        from beliefgate.envs.overcooked_v2.policies.network import ActorCritic

        self.card, self.path = card, Path(path)
        self.layout = card["layout"]
        self.kind = card["kind"]
        self.obs_shape = tuple(card["obs_shape"])
        events = list(card.get("conditioned_events") or [])
        if events and weights is None:
            raise CheckpointError(f"{path}: a reward-conditioned policy; give event weights "
                                  f"(over {', '.join(events)})")
        if weights is not None and not events:
            raise CheckpointError(f"{path}: not a reward-conditioned policy; it takes no event weights")
        cond = None
        if events:
            unknown = sorted(set(weights) - set(events))
            if unknown:
                raise CheckpointError(f"{path}: unknown event {unknown[0]!r} in the weights (events: "
                                      f"{', '.join(events)})")
            cond = jnp.asarray([float(weights.get(e, 0.0)) for e in events], jnp.float32)
        self.weights = dict(weights or {})
        net = ActorCritic(num_actions=int(card["num_actions"]), hidden=tuple(card["hidden"]))
        params = jax.tree.map(jnp.asarray, params)
        shape = self.obs_shape

        def logits_fn(obs):
            x = obs.reshape((obs.shape[0], -1)).astype(jnp.float32)
            if cond is not None:
                x = jnp.concatenate([x, jnp.broadcast_to(cond, (x.shape[0], cond.shape[0]))], axis=-1)
            return net.apply(params, x)[0]

        self._greedy = jax.jit(lambda obs: jnp.argmax(logits_fn(obs), axis=-1))
        self._sample = jax.jit(lambda obs, key: jax.random.categorical(key, logits_fn(obs)))
        self._logits = jax.jit(logits_fn)
        #: the network, its parameters and the conditioning input (the event weights; empty when the
        #: network is not conditioned): ``net.apply(params, concat(obs.ravel(), cond))`` inside a
        #: caller's own ``jax.jit`` (batched rollouts: :mod:`beliefgate.rl.evaluate`)
        self.net, self.params = net, params
        self.cond = cond if cond is not None else jnp.zeros((0,), jnp.float32)
        self._shape = shape

    def _check(self, obs, batched: bool):
        import numpy as np

        obs = np.asarray(obs)
        want = self._shape if not batched else (obs.shape[0],) + self._shape if obs.ndim else self._shape
        if tuple(obs.shape) != tuple(want):
            raise CheckpointError(f"{self.path}: observation of shape {tuple(obs.shape)}, the policy takes "
                                  f"{self._shape} ({self.layout})")
        return obs

    def __call__(self, obs, key=None, greedy: bool = True) -> int:
        obs = self._check(obs, False)[None]
        out = self._greedy(obs) if greedy or key is None else self._sample(obs, key)
        return int(out[0])

    def batch(self, obs, key=None, greedy: bool = True):
        obs = self._check(obs, True)
        return self._greedy(obs) if greedy or key is None else self._sample(obs, key)

    def logits(self, obs):
        return self._logits(self._check(obs, True))


def load_policy(path: str | Path, layout: Optional[str] = None, obs_shape: Optional[Sequence[int]] = None,
                weights: Optional[Mapping[str, float]] = None) -> Policy:
    """The policy in ``path`` (a ``.msgpack`` file with its ``.json`` card), checked against
    ``layout`` (a ``v2/`` name, resolved to its canonical name by the OvercookedV2 domain; the
    observation shape is then that of the domain's env for it) and ``obs_shape`` when given:
    :class:`~beliefgate.envs.overcooked_v2.policies.checkpoint.CheckpointError` naming the file otherwise (corrupt, another
    layout or observation shape, an unknown format or kind)."""
    canonical = None
    if layout is not None:
        from beliefgate.envs.overcooked_v2.layouts import resolve_layout

        canonical = resolve_layout(layout)
        if obs_shape is None:
            obs_shape = layout_obs_shape(canonical)
    params, card = load_params(Path(path), layout=canonical, obs_shape=obs_shape)
    return Policy(params, card, Path(path), weights)


def layout_obs_shape(layout: str) -> tuple:
    """JaxMARL's default observation shape of a ``v2/`` layout, from the domain's env for it (the
    training env's options: the whole grid in view), built once per process."""
    from beliefgate.envs.overcooked_v2.env import compiled
    from beliefgate.envs.overcooked_v2.layouts import V2Options, layout_info

    return tuple(int(s) for s in compiled(layout_info(layout), V2Options()).env.obs_shape)


__all__ = ["Policy", "load_policy", "layout_obs_shape"]
