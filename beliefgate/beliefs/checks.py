"""Boundary checks, re-exported from :mod:`beliefgate.models.checks`."""

from beliefgate.models.checks import as_array, as_bool  # noqa: F401

__all__ = ["as_array", "as_bool"]
