"""The sensitivity analyses' input errors (all :class:`beliefgate.errors.InputError`, so ``ValueError``)."""

from __future__ import annotations

from beliefgate.errors import InputError


class SensitivityError(InputError):
    """Base class of the sensitivity module's input errors."""


class RangeSpecError(SensitivityError):
    """A parameter range is malformed or invalid (bad syntax, LOW >= HIGH, ...)."""


class UnknownParameterError(RangeSpecError):
    """The range names no sweepable ``GateParams`` field."""


class IrrelevantParameterError(RangeSpecError):
    """The parameter cannot change any output under the base configuration."""



__all__ = ["SensitivityError", "RangeSpecError", "UnknownParameterError", "IrrelevantParameterError"]
