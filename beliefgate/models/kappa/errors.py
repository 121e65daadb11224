"""Every error of kappa: the online filter's input errors, the decisions data and the fit.

All are :class:`~beliefgate.errors.InputError` (``ValueError``) under the package's one root.
:class:`KappaInputError` and its subclasses carry ``field`` (the offending argument or request
field) and ``index`` (the position of the offending piece in what ``update_many`` was given);
the service turns them into 422 answers naming that field.
"""

from __future__ import annotations

from typing import Optional

from beliefgate.errors import InputError, LookupFailure
from beliefgate.limits import SizeLimitError
from beliefgate.validation import ParamError


class KappaInputError(InputError):
    """Base class: bad input to kappa. ``field`` names the offending argument / request field;
    ``index`` is the position of the offending piece in what ``update_many`` was given (else None)."""

    def __init__(self, message: str, field: Optional[str] = None):
        super().__init__(message)
        self.field = field
        self.index: Optional[int] = None


class UnknownBranchError(KappaInputError, LookupFailure):
    """A branch is neither one of the decision's branch names nor an index in range."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown branch"


class SelfJudgmentError(KappaInputError):
    """A branch was judged against itself."""


class JudgmentValueError(KappaInputError):
    """A judgment outcome ``y`` is not 0 or 1."""


class ExtremeEvidenceError(KappaInputError):
    """The evidence (with these parameters) is too extreme for float64: a posterior variance
    collapsed to zero, a site or probability came out non-finite, or the covariance lost
    positive definiteness. The state is unchanged; the request is refused, not approximated."""


class NonFiniteScoreError(KappaInputError):
    """A rollout score is NaN, infinite, not a number, or outside ``[-SCORE_BOUND, SCORE_BOUND]``
    (:data:`beliefgate.models.kappa.data.SCORE_BOUND`)."""


class DepthError(KappaInputError):
    """A rollout depth is not an integer in ``1..MAX_DEPTH``."""


class DuplicateBranchError(KappaInputError):
    """Two branches share a name (or one branch appears twice in a rollout round)."""


class TooManyBranchesError(KappaInputError, SizeLimitError):
    """More branches than :data:`beliefgate.limits.MAX_BRANCHES` (refused before the state is allocated)."""


class NoBranchError(KappaInputError):
    """A decision needs at least one branch."""


class BranchNameError(KappaInputError):
    """A branch name is not a non-empty string."""


class KappaParamError(KappaInputError, ParamError):
    """A :class:`~beliefgate.beliefs.kappa.KappaParams` field is outside its range (theta or
    nucleus_p outside (0, 1], ...). Also a :class:`~beliefgate.validation.ParamError`."""


class KappaStateError(KappaInputError):
    """A state handed to ``Kappa.restore`` that is not one of this object's (other branches,
    or ahead of its log)."""

    def __init__(self, message: str, field: Optional[str] = "state"):
        super().__init__(message, field)


class EvidenceTypeError(KappaInputError):
    """The evidence is not a :class:`Judgment`, :class:`Rollout` or :class:`RolloutRound`."""


class RoundLimitError(KappaInputError):
    """A rollout round beyond ``max_rounds``."""


class NotInNucleusError(KappaInputError):
    """A rollout round after the first names a branch outside the current nucleus."""


class KappaDataError(InputError):
    """A decisions file (or record) cannot be turned into model data."""


class KappaFitError(InputError):
    """A kappa fit cannot be configured, run or read."""


class KappaFitConfigError(ParamError, KappaFitError):
    """A :class:`~beliefgate.models.kappa.fit.KappaFitConfig` field is bad: one line naming the
    field and the value (``fixed: cannot fix unknown kappa parameter(s) ['gamma']; ...``).
    A :class:`KappaFitError`."""


__all__ = [
    "KappaInputError",
    "UnknownBranchError",
    "SelfJudgmentError",
    "JudgmentValueError",
    "ExtremeEvidenceError",
    "NonFiniteScoreError",
    "DepthError",
    "DuplicateBranchError",
    "NoBranchError",
    "TooManyBranchesError",
    "BranchNameError",
    "KappaParamError",
    "KappaStateError",
    "EvidenceTypeError",
    "RoundLimitError",
    "NotInNucleusError",
    "KappaDataError",
    "KappaFitError",
    "KappaFitConfigError",
]
