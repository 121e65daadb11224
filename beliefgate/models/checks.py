"""Boundary checks shared by the filter, the skill model and the gate."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from beliefgate.models.errors import ShapeMismatchError


def as_array(x, name: str, dtype=None) -> np.ndarray:
    """``np.asarray(x[, dtype])``, or :class:`ShapeMismatchError` naming ``name`` where NumPy
    cannot make one array of it (ragged rows, text where numbers belong): a plain ValueError
    escaped to users from every boundary that took arrays."""
    try:
        return np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ShapeMismatchError(f"{name} must be one rectangular numeric array (ragged rows or non-numbers?), "
                                 f"got {type(x).__name__}: {str(exc).splitlines()[0]}") from None


def are_names(values) -> bool:
    """Whether ``values`` is a sequence of non-empty strings (one string is not: "abc" is not
    three names; numbers are not names)."""
    return not isinstance(values, (str, bytes)) and all(isinstance(n, str) and n.strip() for n in values)


def as_bool(x, name: str, shape: Optional[Tuple[int, ...]] = None) -> np.ndarray:
    """``x`` as a boolean array; 0/1 numbers are accepted, anything else raises
    :class:`ShapeMismatchError` (as does a shape other than ``shape`` when given)."""
    arr = as_array(x, name)
    if arr.dtype != np.bool_:
        if not np.issubdtype(arr.dtype, np.number) or not np.all((arr == 0) | (arr == 1)):
            raise ShapeMismatchError(f"{name} must be boolean (or 0/1), got dtype {arr.dtype}")
        arr = arr.astype(bool)
    if shape is not None and arr.shape != tuple(shape):
        raise ShapeMismatchError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    return arr
