"""Exceptions raised at the boundaries of the belief filters and skill models.

Every class derives from :class:`BeliefInputError`, itself a ``ValueError``, so a
caller can catch the whole family or one specific kind. They are raised by the
non-jitted entry points (``beliefgate.beliefs.filter.update``, ``filter``,
``observations``, ``beliefgate.models.skill_model.skill_data`` ...) after checking
concrete inputs; the jitted cores never validate.
"""

from __future__ import annotations
from beliefgate.errors import InputError


from beliefgate.skills.library import UnknownSkillError as _LibraryUnknownSkill


class BeliefInputError(InputError):
    """Base class: an input to a belief filter or skill model is malformed."""


class ShapeMismatchError(BeliefInputError):
    """An array has the wrong rank, length or number of skills/actions."""


class NonFiniteLoglikError(BeliefInputError):
    """A log-likelihood is NaN or ``+inf`` (``-inf`` is allowed: probability zero)."""


class NoFeasibleSkillError(BeliefInputError):
    """At some (valid) step no skill is feasible, so the transition is undefined."""


class CompletedIndexError(BeliefInputError):
    """A ``completed`` skill index lies outside ``[-1, K)`` (-1 means none)."""


class InvalidParameterError(BeliefInputError):
    """A model parameter is outside its support (e.g. hazard not in [0, 1])."""


class ImpossibleObservationError(BeliefInputError):
    """The observation has probability zero under every skill the model allows.

    Raised after an update whose log normaliser is ``-inf``: the posterior would
    be undefined (0/0), so the caller must fix the likelihood (e.g. use
    ``epsilon > 0``) or the feasibility mask.
    """


class UnsupportedModelError(BeliefInputError):
    """The requested operation is not defined for this filter variant."""


__all__ = [
    "BeliefInputError",
    "ShapeMismatchError",
    "NonFiniteLoglikError",
    "NoFeasibleSkillError",
    "CompletedIndexError",
    "InvalidParameterError",
    "ImpossibleObservationError",
    "UnsupportedModelError",
    "ActionIndexError",
    "UnknownSkillError",
    "InvalidWeightError",
]


class ActionIndexError(BeliefInputError):
    """The observed action index is outside ``[0, A)`` or the action mask selects nothing."""


class UnknownSkillError(CompletedIndexError, _LibraryUnknownSkill):
    """A skill is neither a known skill name nor an index in range.

    Also a :class:`beliefgate.skills.UnknownSkillError`, so one ``except`` catches an
    unknown skill wherever it was named.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown skill"


class InvalidWeightError(BeliefInputError):
    """A tempering weight is not a finite number ``>= 0``."""
