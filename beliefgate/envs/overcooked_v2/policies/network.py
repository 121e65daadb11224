"""The actor-critic: two MLPs (policy and value) on the flattened observation.

Why an MLP and not a CNN: on these 2 CPU cores one gradient pass of a two-layer 3x3 CNN costs about
87 us per sample, an MLP of the same width about a tenth (docs/training.md has the measurement), and
the gradient passes, not the game, set the training speed. OvercookedV2's full-grid observation
(height x width x 30 on the one-ingredient layouts) is small enough to flatten.
"""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax.numpy as jnp
import numpy as np


class ActorCritic(nn.Module):
    """``(logits, value)`` of a batch of flattened observations (conditioned BP: weights appended)."""

    num_actions: int
    hidden: Sequence[int] = (64, 64)

    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], -1)).astype(jnp.float32)
        a = x
        for i, h in enumerate(self.hidden):
            a = nn.tanh(nn.Dense(h, kernel_init=nn.initializers.orthogonal(np.sqrt(2)), name=f"actor_{i}")(a))
        logits = nn.Dense(self.num_actions, kernel_init=nn.initializers.orthogonal(0.01), name="actor_out")(a)
        v = x
        for i, h in enumerate(self.hidden):
            v = nn.tanh(nn.Dense(h, kernel_init=nn.initializers.orthogonal(np.sqrt(2)), name=f"critic_{i}")(v))
        value = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0), name="critic_out")(v)
        return logits, value[:, 0]


def input_size(obs_shape: Sequence[int], conditioned_events: int = 0) -> int:
    """Length of the network's input: the flattened observation (plus the event weights)."""
    return int(np.prod(obs_shape)) + int(conditioned_events)


__all__ = ["ActorCritic", "input_size"]
