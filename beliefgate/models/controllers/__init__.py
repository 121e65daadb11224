"""Likelihood controllers: approximate low-level policies pi_hat(a | s, skill).

A controller turns per-skill action values ``Q[..., K, A]`` into action
log-probabilities; every controller follows the :class:`Controller` protocol. The
Boltzmann controller here is domain-agnostic; a domain (e.g.
:mod:`beliefgate.envs.overcooked`) supplies the Q-values.
"""

from typing import Protocol

from beliefgate.models.controllers.boltzmann import (
    boltzmann_logprobs,
    boltzmann_logprobs_jax,
    boltzmann_logprobs_xp,
)


class Controller(Protocol):
    """``(q [..., K, A], beta, epsilon) -> log pi_hat [..., K, A]`` (rows normalised, traceable)."""

    def __call__(self, q, beta, epsilon): ...


__all__ = ["Controller", "boltzmann_logprobs", "boltzmann_logprobs_jax", "boltzmann_logprobs_xp"]
