"""``C`` gate configurations as columns: :class:`ConfigTable` (every sweepable field
per configuration) and :class:`DecisionColumns` (the gates' decision configurations
with ``[C]`` fields, what the batched decision rules of :mod:`beliefgate.beliefs.gates` read)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Sequence

import numpy as np

from beliefgate.beliefs.config import GateParams
from beliefgate.beliefs.gates import ChangePointConfig, StableMapConfig
from beliefgate.eval.sensitivity.errors import SensitivityError, UnknownParameterError
from beliefgate.eval.sensitivity.ranges import BELIEF_PARAMS, DECISION_PARAMS, PARAMETERS

# --------------------------------------------------------------------------- configurations


@dataclass
class ConfigTable:
    """``C`` gate configurations: ``base`` with the sweepable fields given per row.

    ``columns[name]`` is float[C] for every name of :data:`PARAMETERS` (integer
    fields hold integral floats; ``window`` is NaN where ``None``).
    """

    base: GateParams
    columns: Dict[str, np.ndarray]

    @classmethod
    def from_values(cls, base: GateParams, values: Mapping[str, np.ndarray]) -> "ConfigTable":
        sizes = {len(np.atleast_1d(v)) for v in values.values()}
        if len(sizes) > 1:
            raise SensitivityError(f"columns of different lengths: {sorted(sizes)}")
        n = sizes.pop() if sizes else 1
        cols = {}
        for name, spec in PARAMETERS.items():
            if name in values:
                col = np.asarray(values[name], dtype=float).reshape(n)
            else:
                b = getattr(base, name)
                col = np.full(n, math.nan if b is None else float(b))
            cols[name] = col
        unknown = set(values) - set(PARAMETERS)
        if unknown:
            raise UnknownParameterError(f"unknown parameters {sorted(unknown)}")
        return cls(base, cols)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    def value(self, name: str, i: int):
        v = float(self.columns[name][i])
        if math.isnan(v):
            return None
        return int(v) if PARAMETERS[name].integer else v

    def params(self, i: int) -> GateParams:
        """Configuration ``i`` as a validated :class:`GateParams`."""
        return self.base.replace(**{n: self.value(n, i) for n in PARAMETERS})

    def belief_key(self, i: int) -> tuple:
        return tuple(self.value(n, i) for n in BELIEF_PARAMS)

    def belief_groups(self) -> Dict[tuple, np.ndarray]:
        """Configuration indices grouped by their belief-side parameters."""
        mat = np.stack([self.columns[n] for n in BELIEF_PARAMS], axis=1)
        mat = np.where(np.isnan(mat), -1.0, mat)
        _, first, inverse = np.unique(mat, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        return {self.belief_key(int(first[g])): np.flatnonzero(inverse == g) for g in range(len(first))}

    def decision_columns(self, idx: Optional[np.ndarray] = None) -> "DecisionColumns":
        cols = {n: (self.columns[n] if idx is None else self.columns[n][idx])
                for n in DECISION_PARAMS + ("hazard", "cp_horizon")}
        return DecisionColumns.from_columns(cols)


@dataclass
class DecisionColumns:
    """The decision configurations of ``C`` gates, each field an array of shape ``[C]``.

    ``stable_map``: a :class:`~beliefgate.beliefs.gates.StableMapConfig` built by
    ``StableMapConfig.make`` from the columns (``log tau`` per entry with
    :func:`math.log`, as for one configuration); ``changepoint``: a
    :class:`~beliefgate.beliefs.gates.ChangePointConfig` (``hazard`` and ``horizon`` are
    belief-side: they shape the trace the decisions read, not the decisions).
    """

    stable_map: StableMapConfig
    changepoint: ChangePointConfig

    @classmethod
    def from_columns(cls, cols: Mapping[str, np.ndarray]) -> "DecisionColumns":
        """From ``{name: float[C]}`` for every decision parameter (``hazard``/``cp_horizon``
        default to NaN / 0 where missing: the decision rules never read them)."""
        f = lambda k: np.asarray(cols[k], dtype=np.float64)  # noqa: E731
        n = len(f("tau_obs"))
        sm = StableMapConfig.make(f("tau_obs"), f("likelihood_scale"), f("confidence_floor"), f("n_stable"),
                                  f("cooldown"))
        hazard = f("hazard") if "hazard" in cols else np.full(n, math.nan)
        horizon = f("cp_horizon").astype(np.int64) if "cp_horizon" in cols else np.zeros(n, dtype=np.int64)
        cp = ChangePointConfig(hazard, horizon, f("cp_threshold"), f("cp_release"),
                               f("cp_cooldown").astype(np.int64))
        return cls(sm, cp)

    @classmethod
    def from_params(cls, params: Sequence[GateParams]) -> "DecisionColumns":
        names = DECISION_PARAMS + ("hazard", "cp_horizon")
        return cls.from_columns({n: np.array([float(getattr(p, n)) for p in params]) for n in names})

    def __len__(self) -> int:
        return len(self.stable_map.likelihood_scale)


__all__ = ["ConfigTable", "DecisionColumns"]
