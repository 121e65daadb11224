"""Boundary checks, re-exported from :mod:`beliefgate.models.checks`."""

from beliefgate.models.checks import are_names, as_array, as_bool  # noqa: F401

__all__ = ["are_names", "as_array", "as_bool"]
