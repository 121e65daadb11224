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
#: Model parameters some transition reads (``component.params``); a transition without one of
#: them has no such parameter (it is neither sampled, fixed nor reported).
TRANSITION_PARAMS = tuple(dict.fromkeys(p for t in TRANSITIONS.values() for p in t.params))


def get_transition(model: str):
    """The transition component named ``model``; :class:`InvalidParameterError` naming it otherwise."""
    try:
        return TRANSITIONS[model]
    except (KeyError, TypeError):
        raise InvalidParameterError(f"unknown filter model {model!r}; use one of {MODELS}") from None


def unused_params(model: str) -> tuple:
    """The transition parameters (:data:`TRANSITION_PARAMS`) the model ``model`` does not have
    (``("hazard",)`` for the windowed model)."""
    own = get_transition(model).params
    return tuple(p for p in TRANSITION_PARAMS if p not in own)


def models_with_option(option: str) -> tuple:
    """The models to which the configuration field ``option`` applies (``component.options``)."""
    return tuple(name for name, t in TRANSITIONS.items() if option in t.options)


__all__ = ["TRANSITIONS", "MODELS", "TRANSITION_PARAMS", "unused_params", "models_with_option", "get_transition", "HAZARD", "WINDOWED", "HazardTransition",
           "WindowedTransition", "MIN_HAZARD"]
