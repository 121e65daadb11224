"""Deprecated alias of :mod:`beliefgate.eval.sensitivity.cli` (the ``beliefgate sensitivity``
commands moved into the sensitivity package); kept for this release."""

import warnings

from beliefgate.eval.sensitivity.cli import register  # noqa: F401

warnings.warn("beliefgate.eval.sensitivity_cli is deprecated; import beliefgate.eval.sensitivity.cli",
              DeprecationWarning, stacklevel=2)

__all__ = ["register"]
