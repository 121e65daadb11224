"""Likelihood controllers: approximate low-level policies pi_hat(a | s, skill).

A controller turns per-skill action values ``Q[..., K, A]`` into action
log-probabilities. The Boltzmann controller here is domain-agnostic; a domain
(e.g. :mod:`beliefgate.envs.overcooked`) supplies the Q-values.
"""

from beliefgate.models.controllers.boltzmann import (
    boltzmann_logprobs,
    boltzmann_logprobs_jax,
)

__all__ = ["boltzmann_logprobs", "boltzmann_logprobs_jax"]
