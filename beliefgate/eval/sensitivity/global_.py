"""Global sensitivity analyses with SALib: Sobol indices and Morris elementary effects,
of any function of named parameters (:func:`run_global`) or of the gate on replayed logs
(:func:`run_gate_global`). (``global`` is a Python keyword, hence the module's name.)"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.beliefs.config import GateParams
from beliefgate.eval.sensitivity.configs import ConfigTable
from beliefgate.eval.sensitivity.errors import SensitivityError
from beliefgate.eval.sensitivity.ranges import ParamRange, _json_float, prepare_global_ranges
from beliefgate.eval.sensitivity.replay import (OUTPUTS, _available, count_belief_passes, evaluate_configs,
                                                unavailable_outputs)
from beliefgate.eval.sensitivity.traces import LoggedEpisode

# --------------------------------------------------------------------------- global


Evaluator = Callable[[Dict[str, np.ndarray]], Dict[str, np.ndarray]]


@dataclass
class GlobalResult:
    """A global sensitivity analysis (Sobol or Morris) and the settings that made it.

    ``indices[output]``: Sobol ``S1``, ``S1_conf``, ``ST``, ``ST_conf`` (and ``S2``,
    ``S2_conf`` with second order), or Morris ``mu``, ``mu_star``, ``sigma``,
    ``mu_star_conf``, each float[D] in the order of ``ranges``; ``constant``:
    outputs with no variance over the sample (their indices are undefined, NaN);
    ``summary[output]``: mean, std, min and max over the sample. With
    ``keep_samples``: ``samples`` (unit hypercube, float[rows, D]), ``values``
    (``{name: float[rows]}``) and ``outputs`` (``{output: float[rows]}``).
    """

    method: str
    ranges: List[ParamRange]
    n: int
    seed: int
    num_configs: int
    settings: dict
    indices: Dict[str, Dict[str, np.ndarray]]
    constant: List[str]
    summary: Dict[str, dict]
    elapsed_s: float
    samples: Optional[np.ndarray] = field(default=None, repr=False)
    values: Optional[Dict[str, np.ndarray]] = field(default=None, repr=False)
    outputs: Optional[Dict[str, np.ndarray]] = field(default=None, repr=False)
    context: dict = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)

    @property
    def names(self) -> List[str]:
        return [r.name for r in self.ranges]

    def to_dict(self) -> dict:
        import beliefgate

        def conv(v):
            a = np.asarray(v, dtype=float)
            return [conv(x) for x in a] if a.ndim else _json_float(a)

        return {
            "kind": f"sensitivity.{self.method}",
            "version": beliefgate.__version__,
            "method": self.method, "n": self.n, "seed": self.seed, "num_configs": self.num_configs,
            "ranges": [r.to_dict() for r in self.ranges],
            "settings": self.settings,
            "indices": {out: {k: conv(v) for k, v in d.items()} for out, d in self.indices.items()},
            "constant": self.constant,
            "summary": {o: {k: _json_float(v) for k, v in s.items()} for o, s in self.summary.items()},
            "elapsed_s": self.elapsed_s,
            "warnings": list(self.warnings),
            **self.context,
        }


def global_sample(ranges: Sequence[ParamRange], method: str, n: int, seed: int, second_order: bool = False,
                  num_levels: int = 4) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
    """SALib sample on the unit hypercube and its mapping to parameter values.

    Sobol: ``SALib.sample.sobol.sample`` (Saltelli's scheme, scrambled Sobol'
    sequence), ``n (D + 2)`` rows (``n (2D + 2)`` with second order). Morris:
    ``SALib.sample.morris.sample``, ``n`` trajectories of ``D + 1`` points on a
    ``num_levels`` grid. Returns ``(unit [rows, D], values {name: float[rows]})``.
    """
    problem = _problem(ranges)
    if method == "sobol":
        from SALib.sample import sobol as sobol_sample

        if n < 2:
            raise SensitivityError(f"Sobol needs N >= 2, got {n}")
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*power of 2.*")
            warnings.filterwarnings("ignore", message=".*balance properties.*")
            unit = sobol_sample.sample(problem, n, calc_second_order=second_order, scramble=True, seed=seed)
    elif method == "morris":
        from SALib.sample import morris as morris_sample

        if n < 2:
            raise SensitivityError(f"Morris needs N >= 2 trajectories, got {n}")
        if num_levels < 2 or num_levels % 2:
            raise SensitivityError(f"Morris needs an even number of levels >= 2, got {num_levels}")
        unit = morris_sample.sample(problem, n, num_levels=num_levels, seed=seed)
    else:
        raise SensitivityError(f"unknown method {method!r}; use 'sobol' or 'morris'")
    values = {r.name: r.from_unit(unit[:, j]) for j, r in enumerate(ranges)}
    return unit, values


def _problem(ranges: Sequence[ParamRange]) -> dict:
    return {"num_vars": len(ranges), "names": [r.name for r in ranges], "bounds": [[0.0, 1.0]] * len(ranges)}


def run_global(ranges: Sequence[ParamRange], evaluate: Evaluator, method: str = "sobol", n: int = 1024,
               seed: int = 0, second_order: bool = False, num_levels: int = 4, resamples: int = 100,
               conf_level: float = 0.95, keep_samples: bool = False) -> GlobalResult:
    """Global sensitivity analysis of ``evaluate`` over ``ranges`` with SALib.

    Samples the unit hypercube (:func:`global_sample`), maps it to values with
    each range's rule (:meth:`ParamRange.from_unit`), calls ``evaluate`` once with
    every configuration (``{name: float[rows]}`` -> ``{output: float[rows]}``), and
    analyses each output: Sobol first-order and total indices with bootstrap
    confidence intervals (half-widths at ``conf_level``), or Morris ``μ``, ``μ*``,
    ``σ`` and the CI of ``μ*`` (elementary effects per unit of the *normalised*
    input, i.e. per whole range on its scale). Indices do not depend on the
    monotone unit-to-value map, so they refer to the parameters themselves.
    """
    if not ranges:
        raise SensitivityError("no parameter ranges")
    names = [r.name for r in ranges]
    if len(set(names)) != len(names):
        raise SensitivityError(f"duplicate parameter names in {names}")
    if not 0.0 < conf_level < 1.0:
        raise SensitivityError(f"conf_level must lie in (0, 1), got {conf_level}")
    started = time.perf_counter()
    unit, values = global_sample(ranges, method, n, seed, second_order, num_levels)
    outputs = evaluate(values)
    problem = _problem(ranges)
    indices, constant, summary = {}, [], {}
    for name, y in outputs.items():
        y = np.asarray(y, dtype=float)
        if y.shape != (unit.shape[0],):
            raise SensitivityError(f"output {name!r} has shape {y.shape}, expected ({unit.shape[0]},)")
        finite = np.isfinite(y)
        summary[name] = {"mean": float(np.mean(y)) if finite.all() else math.nan,
                         "std": float(np.std(y)) if finite.all() else math.nan,
                         "min": float(np.min(y)) if finite.all() else math.nan,
                         "max": float(np.max(y)) if finite.all() else math.nan}
        if not finite.all() or np.ptp(y) == 0.0:
            constant.append(name)
            keys = (("S1", "S1_conf", "ST", "ST_conf") if method == "sobol"
                    else ("mu", "mu_star", "sigma", "mu_star_conf"))
            indices[name] = {k: np.full(len(ranges), math.nan) for k in keys}
            continue
        if method == "sobol":
            from SALib.analyze import sobol as sobol_analyze

            # SALib seeds its bootstrap only for a truthy seed (seed 0 drew from the global RNG: the
            # CIs changed run to run); a SeedSequence is truthy and default_rng(SeedSequence(s)) is
            # default_rng(s), so every seed, 0 included, gives the same CIs on every run
            si = sobol_analyze.analyze(problem, y, calc_second_order=second_order, num_resamples=resamples,
                                       conf_level=conf_level, print_to_console=False,
                                       seed=np.random.SeedSequence(seed))
            keys = ("S1", "S1_conf", "ST", "ST_conf") + (("S2", "S2_conf") if second_order else ())
        else:
            from SALib.analyze import morris as morris_analyze

            si = morris_analyze.analyze(problem, unit, y, num_resamples=resamples, conf_level=conf_level,
                                        print_to_console=False, num_levels=num_levels, seed=seed)
            keys = ("mu", "mu_star", "sigma", "mu_star_conf")
        indices[name] = {k: np.asarray(si[k], dtype=float) for k in keys}
    settings = {"second_order": second_order, "num_levels": num_levels if method == "morris" else None,
                "resamples": resamples, "conf_level": conf_level}
    warnings = sobol_warnings(indices, names, n, constant) if method == "sobol" else []
    return GlobalResult(method, list(ranges), n, seed, unit.shape[0], settings, indices, constant, summary,
                        time.perf_counter() - started, unit if keep_samples else None,
                        values if keep_samples else None, outputs if keep_samples else None, warnings=warnings)


#: below this base sample size Saltelli's estimators are mostly noise (a warning, not a refusal)
SOBOL_MIN_N = 64


def sobol_warnings(indices: Dict[str, Dict[str, np.ndarray]], names: Sequence[str], n: int,
                   constant: Sequence[str] = ()) -> List[str]:
    """What makes Sobol estimates unusable: too small an ``n``, and estimates outside what the
    indices can be (``S1`` or ``ST`` outside [0, 1], ``ST < S1``) by more than their intervals."""
    out = []
    if n < SOBOL_MIN_N:
        out.append(f"--n {n} < {SOBOL_MIN_N}: Sobol estimates at this size are mostly noise")
    for output, idx in indices.items():
        if output in constant:
            continue
        for j, name in enumerate(names):
            s1, c1, st, ct = (float(idx[k][j]) for k in ("S1", "S1_conf", "ST", "ST_conf"))
            slack1, slackt = (c if math.isfinite(c) else 0.0 for c in (c1, ct))
            bad = []
            if not -slack1 <= s1 <= 1.0 + slack1:
                bad.append(f"S1 {s1:.3f} outside [0, 1]")
            if not -slackt <= st <= 1.0 + slackt:
                bad.append(f"ST {st:.3f} outside [0, 1]")
            if st + slackt < s1 - slack1:
                bad.append(f"ST {st:.3f} below S1 {s1:.3f}")
            if bad:
                out.append(f"{output} / {name}: {', '.join(bad)} beyond their intervals: raise --n")
    return out


class GateReplayEvaluator:
    """The gate as a function of its parameters, for :func:`run_global`: replays
    ``episodes`` under every configuration (:func:`evaluate_configs`) and returns
    the available outputs."""

    def __init__(self, episodes: Sequence[LoggedEpisode], base: Optional[GateParams] = None, window: int = 10,
                 progress: Optional[Callable[[int, int, str], None]] = None):
        self.episodes = list(episodes)
        self.base = base or GateParams()
        self.window = window
        self.progress = progress
        self.outputs = _available(self.episodes)
        self.last_configs: Optional[ConfigTable] = None

    def __call__(self, values: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        configs = ConfigTable.from_values(self.base, values)
        self.last_configs = configs
        outs = evaluate_configs(self.episodes, configs, self.window, self.progress)
        return {k: outs[k] for k in self.outputs}


def run_gate_global(episodes: Sequence[LoggedEpisode], ranges: Sequence[ParamRange], method: str = "sobol",
                    n: int = 1024, seed: int = 0, base: Optional[GateParams] = None, window: int = 10,
                    second_order: bool = False, num_levels: int = 4, belief_levels: Optional[int] = 8,
                    resamples: int = 100, conf_level: float = 0.95,
                    progress: Optional[Callable[[int, int, str], None]] = None,
                    keep_samples: bool = False) -> GlobalResult:
    """Global analysis of the gate on logged episodes (see :func:`run_global`).

    ``belief_levels``: Sobol quantises continuous belief-side parameters (hazard,
    alpha, beta, epsilon) to this many equally likely levels so that the number of
    belief passes stays bounded (``None``/0: one pass per distinct sampled value).
    """
    base = base or GateParams()
    ranges = prepare_global_ranges(ranges, method, belief_levels)
    evaluator = GateReplayEvaluator(episodes, base, window, progress)
    result = run_global(ranges, evaluator, method, n, seed, second_order, num_levels, resamples, conf_level,
                        keep_samples)
    result.settings.update({"window": window, "belief_levels": belief_levels or None})
    result.context = {"base": base.model_dump(), "episodes": [ep.summary() for ep in episodes],
                      "outputs": {k: OUTPUTS[k] for k in evaluator.outputs},
                      "belief_passes": (count_belief_passes(evaluator.last_configs, len(episodes))
                                        if evaluator.last_configs is not None else 0),
                      "not_computed": unavailable_outputs(episodes)}
    return result


__all__ = ["Evaluator", "GlobalResult", "global_sample", "run_global", "GateReplayEvaluator", "run_gate_global"]
