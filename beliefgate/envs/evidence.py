"""The rule that turns one observed step of a partner into :class:`StepEvidence`, shared by every
grid-world domain's observer (classic Overcooked and OvercookedV2 write only how they read actions,
events, completions, Q-values and feasibility from their own states).

* the actions consistent with the two states form the action mask;
* a step where the partner may have stood still carries no evidence (weight 0), one where it put
  something down is ambiguous (``ambiguous_weight``): dropping is what many skills end with;
* the likelihood of each skill is the Boltzmann controller's over the domain's Q-values;
* with no feasible skill (nothing to pursue), every skill stays possible.
"""

from __future__ import annotations

from typing import Collection, Sequence

import numpy as np

from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.models.controllers.boltzmann import boltzmann_logprobs


def observed_step_evidence(actions: Collection[int], events: Sequence[str], completed: Sequence[int], q,
                           feasible: np.ndarray, *, num_actions: int, stay: int, ambiguous_weight: float,
                           beta: float, epsilon: float) -> StepEvidence:
    """Evidence of one partner step: ``actions`` consistent with the two states, the partner's
    ``events`` (``drop:...`` marks a put-down), the indices of the skills the step ``completed``,
    the domain's Q-values ``q`` [K, A] and ``feasible`` [K] (modified in place when all False)."""
    mask = np.zeros(num_actions, dtype=bool)
    mask[list(actions)] = True
    if stay in actions:
        weight = 0.0
    elif any(e.startswith("drop:") for e in events):
        weight = ambiguous_weight
    else:
        weight = 1.0
    if not feasible.any():  # nothing to pursue (e.g. idle): every skill stays possible
        feasible[:] = True
    return StepEvidence(logprobs=boltzmann_logprobs(q, beta, epsilon), action_mask=mask, weight=weight,
                        completed=completed[0] if completed else None, feasible=feasible)


__all__ = ["observed_step_evidence"]
