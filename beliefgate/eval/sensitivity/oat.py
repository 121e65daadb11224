"""One-at-a-time sweeps on replayed logs (the shape of BayesBelief's Table 7)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.beliefs.config import GateParams
from beliefgate.eval.sensitivity.configs import ConfigTable
from beliefgate.eval.sensitivity.errors import RangeSpecError
from beliefgate.eval.sensitivity.ranges import TABLE7_DIRECTIONS, ParamRange, _fmt, _json_float
from beliefgate.eval.sensitivity.replay import OUTPUTS, _available, evaluate_configs
from beliefgate.eval.sensitivity.traces import LoggedEpisode

# --------------------------------------------------------------------------- one-at-a-time


@dataclass
class OATRow:
    """One configuration of an OAT sweep: ``param`` set to ``value``, the rest at the base."""

    param: str
    value: float
    is_default: bool
    outputs: Dict[str, float]


@dataclass
class OATResult:
    """A one-at-a-time sweep and the configuration that made it."""

    base: GateParams
    ranges: List[ParamRange]
    rows: List[OATRow]
    episodes: List[dict]
    window: int
    outputs_available: List[str]
    elapsed_s: float

    def block(self, param: str) -> List[OATRow]:
        return [r for r in self.rows if r.param == param]

    def series(self, param: str, output: str) -> Tuple[np.ndarray, np.ndarray]:
        rows = self.block(param)
        return np.array([r.value for r in rows]), np.array([r.outputs[output] for r in rows])

    def to_dict(self) -> dict:
        import beliefgate

        return {
            "kind": "sensitivity.oat",
            "version": beliefgate.__version__,
            "base": self.base.model_dump(),
            "ranges": [r.to_dict() for r in self.ranges],
            "window": self.window,
            "episodes": self.episodes,
            "outputs": {k: OUTPUTS[k] for k in self.outputs_available},
            "rows": [{"param": r.param, "value": r.value, "default": r.is_default,
                      **{k: _json_float(r.outputs[k]) for k in self.outputs_available}} for r in self.rows],
            "elapsed_s": self.elapsed_s,
        }



def oat_values(r: ParamRange, base: GateParams, include_default: bool = True) -> List[Tuple[float, bool]]:
    """The values of one OAT block with their default flags (the base's value is
    added to the grid when missing and ``include_default``)."""
    default = getattr(base, r.name)
    vals = [float(v) for v in r.grid()]
    if include_default and default is not None and not any(v == float(default) for v in vals):
        vals = sorted(vals + [float(default)])
    return [(v, default is not None and v == float(default)) for v in vals]


def run_oat(episodes: Sequence[LoggedEpisode], ranges: Sequence[ParamRange], base: Optional[GateParams] = None,
            window: int = 10, include_default: bool = True,
            progress: Optional[Callable[[int, int, str], None]] = None) -> OATResult:
    """One-at-a-time sweep: every value of every range, the other fields at ``base``.

    All configurations of all ranges are evaluated in one :func:`evaluate_configs`
    call (so decision parameters share one belief pass per log).
    """
    base = base or GateParams()
    started = time.perf_counter()
    plan: List[Tuple[str, float, bool]] = []
    for r in ranges:
        plan.extend((r.name, v, d) for v, d in oat_values(r, base, include_default))
    values = {r.name: np.array([v if p == r.name else _base_float(base, r.name) for p, v, _ in plan])
              for r in ranges}
    configs = ConfigTable.from_values(base, values)
    for i in range(len(configs)):  # every configuration must be valid before work starts
        try:
            configs.params(i)
        except ValueError as exc:
            raise RangeSpecError(f"{plan[i][0]}={_fmt(plan[i][1])} gives invalid parameters: {exc}") from None
    outs = evaluate_configs(episodes, configs, window, progress)
    rows = [OATRow(p, v, d, {k: float(outs[k][i]) for k in OUTPUTS}) for i, (p, v, d) in enumerate(plan)]
    return OATResult(base, list(ranges), rows, [ep.summary() for ep in episodes], window, _available(episodes),
                     time.perf_counter() - started)


def _base_float(base: GateParams, name: str) -> float:
    v = getattr(base, name)
    return math.nan if v is None else float(v)


def table7_directions(result: OATResult, output: str = "interrupts_per_episode") -> Dict[str, dict]:
    """For each Table 7 parameter in ``result``: is ``output`` monotone in the
    paper's direction (non-decreasing for τ_obs and λ, non-increasing for c_floor
    and cooldown), and by how much does it change over the range?"""
    out = {}
    for name, sign in TABLE7_DIRECTIONS.items():
        if not result.block(name):
            continue
        _, y = result.series(name, output)
        diffs = np.diff(y) * sign
        out[name] = {"expected": "increase" if sign > 0 else "decrease", "monotone": bool(np.all(diffs >= 0)),
                     "change": float(y[-1] - y[0]), "values": y.tolist()}
    return out



__all__ = ["OATRow", "OATResult", "oat_values", "run_oat", "table7_directions"]
