"""The domain -> belief boundary: what one observed partner step contributes.

A domain (Overcooked, or a caller's own) turns an observation into a
:class:`StepEvidence`; filters and gates in :mod:`beliefgate.beliefs` consume it
and never look at domain states themselves.

Time convention: ``StepEvidence`` for step ``t`` describes the partner action
``a_t`` taken in state ``s_t``. ``completed`` names the skill that ``a_t``
visibly finished (seen in ``s_{t+1}``); it therefore changes the transition from
``z_t`` to ``z_{t+1}`` (stay term dropped, completion count incremented), not the
belief about ``z_t``.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np


class StepEvidence(NamedTuple):
    """One observed partner step, in domain-agnostic form.

    Fields
    ------
    logprobs : float[K, A]
        ``log pi_hat(a | s_t, k)`` for every skill ``k`` and action ``a``; rows are
        normalised distributions over actions.
    action_mask : bool[A]
        Actions consistent with the observed change ``s_t -> s_{t+1}``
        (usually exactly one). The observation likelihood under skill ``k`` is
        ``sum_{a in mask} pi_hat(a | s_t, k)``.
    weight : float
        Tempering weight ``w`` >= 0 applied to that log-likelihood (0 excludes the
        step from the belief update, e.g. STAY; 0.35 for ambiguous put-downs).
    completed : int or None
        Index of the skill the action visibly completed, if any.
    feasible : bool[K] or None
        Skills whose preconditions hold in ``s_t`` (``None`` = all feasible).
    """

    logprobs: np.ndarray
    action_mask: np.ndarray
    weight: float = 1.0
    completed: Optional[int] = None
    feasible: Optional[np.ndarray] = None
