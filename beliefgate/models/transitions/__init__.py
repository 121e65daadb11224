"""Transition components of the skill model (the dynamax idea: a model = prior + transition +
likelihood controller). Each transition lives in its own module with its predict step written
once over an array namespace; the filters (NumPy online gate, JAX filter, NumPyro likelihood)
look the component up by name and dispatch on it instead of branching on the model string.

* :data:`~beliefgate.models.transitions.hazard.HAZARD` -- sticky switching with hazard ``h``;
* :data:`~beliefgate.models.transitions.windowed.WINDOWED` -- the paper's segment product.
"""

from __future__ import annotations

from beliefgate.models.errors import InvalidParameterError
from beliefgate.models.transitions.hazard import HAZARD, MIN_HAZARD, HazardTransition
from beliefgate.models.transitions.windowed import WINDOWED, WindowedTransition

#: Every transition by its model name (``FilterParams.model``, ``GateParams.model``).
TRANSITIONS = {t.name: t for t in (HAZARD, WINDOWED)}
#: The model names, in a fixed order.
MODELS = tuple(TRANSITIONS)


def get_transition(model: str):
    """The transition component named ``model``; :class:`InvalidParameterError` naming it otherwise."""
    try:
        return TRANSITIONS[model]
    except (KeyError, TypeError):
        raise InvalidParameterError(f"unknown filter model {model!r}; use one of {MODELS}") from None


__all__ = ["TRANSITIONS", "MODELS", "get_transition", "HAZARD", "WINDOWED", "HazardTransition",
           "WindowedTransition", "MIN_HAZARD"]
