"""Boundary checks shared by the filter, the skill model and the gate."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from beliefgate.models.errors import ShapeMismatchError


def as_bool(x, name: str, shape: Optional[Tuple[int, ...]] = None) -> np.ndarray:
    """``x`` as a boolean array; 0/1 numbers are accepted, anything else raises
    :class:`ShapeMismatchError` (as does a shape other than ``shape`` when given)."""
    arr = np.asarray(x)
    if arr.dtype != np.bool_:
        if not np.issubdtype(arr.dtype, np.number) or not np.all((arr == 0) | (arr == 1)):
            raise ShapeMismatchError(f"{name} must be boolean (or 0/1), got dtype {arr.dtype}")
        arr = arr.astype(bool)
    if shape is not None and arr.shape != tuple(shape):
        raise ShapeMismatchError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    return arr
