"""Closed-loop one-at-a-time sweeps: the sweep played as real episodes of an evaluation
grid through the harness (:func:`beliefgate.eval.runner.run_grid`, any executor), each
configuration in its own resumable sub-directory, with bootstrap CIs over episodes."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.beliefs.config import GateParams
from beliefgate.eval.sensitivity.errors import RangeSpecError, SensitivityError
from beliefgate.eval.sensitivity.oat import oat_values
from beliefgate.eval.sensitivity.ranges import PARAMETERS, ParamRange, _fmt, _json_float, parse_ranges

# --------------------------------------------------------------------------- closed loop


#: Outputs of a closed-loop sweep, per episode, with their display labels.
CLOSED_LOOP_OUTPUTS: Dict[str, str] = {
    "reward": "reward",
    "deliveries": "deliveries",
    "replans": "replans / episode",
    "interrupts": "interrupts / episode",
    "gap_rate": "belief–action gap rate",
    "map_accuracy": "MAP accuracy (ego's gate)",
    "ref_map_accuracy": "MAP accuracy (reference gate)",
}
#: Where each closed-loop output comes from in the harness's results table
#: (``interrupts`` is counted in the episode's log instead).
CLOSED_LOOP_COLUMNS = {"reward": "reward", "deliveries": "deliveries", "replans": "replans",
                       "gap_rate": "gap_rate", "map_accuracy": "intent_accuracy", "ref_map_accuracy": "map_accuracy"}
#: Sub-directory of the base configuration (every parameter at the grid's ``gate:`` values or the defaults).
BASE_DIR = "base"
CLOSED_LOOP_FORMAT = "beliefgate.sensitivity-closed-loop/1"


@dataclass
class ClosedLoopConfig:
    """One gate configuration of a closed-loop sweep: the grid's ego ``gate`` overrides and its sub-directory."""

    dirname: str
    overrides: Dict[str, object]


@dataclass
class ClosedLoopPlan:
    """A validated closed-loop sweep: the grid, the base configuration, the ranges and
    every (parameter, value) with the configuration that plays it.

    ``blocks``: ``(param, value, is_default, dirname)`` in table order; every value
    equal to the base's is played once, in :data:`BASE_DIR`.
    """

    grid_path: Optional[str]
    spec: object                 # GridSpec as given (its own ``gate:``, if any)
    resolved: object             # ResolvedGrid of the base configuration
    base: GateParams
    base_overrides: Dict[str, object]
    ranges: List[ParamRange]
    blocks: List[Tuple[str, float, bool, str]]
    configs: List[ClosedLoopConfig]

    @property
    def episodes_per_config(self) -> int:
        return len(self.resolved.episodes)

    @property
    def total_episodes(self) -> int:
        return self.episodes_per_config * len(self.configs)

    def grid_record(self) -> dict:
        """What identifies the grid in every output: name, digest, design, seeds."""
        s = self.spec
        return {"name": s.name, "path": self.grid_path, "digest": s.digest(), "agents": list(s.agents),
                "layouts": list(s.layouts), "partners": [e.name for e in s.partner_entries],
                "seeds": s.seed_list, "seats": list(s.seats), "horizon": s.horizon,
                "episodes_per_config": self.episodes_per_config, "skipped": list(self.resolved.skipped)}

    def to_dict(self) -> dict:
        import beliefgate

        return {"format": CLOSED_LOOP_FORMAT, "version": beliefgate.__version__, "grid": self.grid_record(),
                "base": self.base.model_dump(mode="json"), "base_overrides": self.base_overrides,
                "ranges": [r.to_dict() for r in self.ranges],
                "configs": [{"dir": c.dirname, "gate": c.overrides} for c in self.configs],
                "blocks": [{"param": p, "value": v, "default": d, "dir": n} for p, v, d, n in self.blocks]}


def _config_dirname(name: str, value: float) -> str:
    v = int(value) if PARAMETERS[name].integer else float(value)
    return f"{name}={v}" if isinstance(v, int) else f"{name}={v:.10g}"


def plan_closed_loop(grid, params: Sequence, include_default: bool = True) -> ClosedLoopPlan:
    """Validate a closed-loop OAT sweep before any episode: the grid, the ranges, every configuration.

    ``grid``: a grid file path or a :class:`~beliefgate.eval.grid.GridSpec`; its
    ``gate:`` values (if any) are the base configuration, the other fields stay at
    the ``GateParams`` defaults. ``params``: range texts (``NAME=LOW:HIGH:N``,
    ``NAME=v1,v2,...``, parsed as for the replayed sweep) or :class:`ParamRange`
    objects. Raises :class:`~beliefgate.eval.grid.GridError` (bad grid, an agent
    that runs no gate) or :class:`RangeSpecError` (bad range), both ``ValueError``.
    """
    from beliefgate.eval.grid import GridError, GridSpec, load_grid, normalise_gate, resolve_grid

    path = None
    if isinstance(grid, GridSpec):
        spec = grid
    else:
        path = str(grid)
        spec = load_grid(grid)
    base_overrides = dict(spec.gate or {})
    base = GateParams().replace(**base_overrides)
    texts = [p for p in params if not isinstance(p, ParamRange)]
    ranges = parse_ranges(texts, "oat", base) if texts else []
    ranges += [p for p in params if isinstance(p, ParamRange)]
    if not ranges:
        raise RangeSpecError("give at least one parameter range (--param NAME=LOW:HIGH:N)")
    if len({r.name for r in ranges}) != len(ranges):
        raise RangeSpecError("a parameter is given twice")
    resolved = resolve_grid(spec.with_gate(base_overrides))
    if not resolved.episodes:
        raise GridError(f"the grid has no playable episode ({'; '.join(resolved.skipped) or 'empty'})")
    configs = {BASE_DIR: ClosedLoopConfig(BASE_DIR, resolved.spec.gate)}
    blocks: List[Tuple[str, float, bool, str]] = []
    for r in ranges:
        for v, is_default in oat_values(r, base, include_default):
            if is_default:
                blocks.append((r.name, v, True, BASE_DIR))
                continue
            typed = int(v) if PARAMETERS[r.name].integer else float(v)
            try:
                overrides = normalise_gate({**base_overrides, r.name: typed})
            except ValueError as exc:
                raise RangeSpecError(f"{r.name}={_fmt(v)}: {exc}") from None
            dirname = _config_dirname(r.name, v)
            known = configs.get(dirname)
            if known is not None and known.overrides != overrides:
                raise RangeSpecError(f"{r.name}: two values share the directory name {dirname!r}; use fewer digits")
            configs[dirname] = ClosedLoopConfig(dirname, overrides)
            blocks.append((r.name, v, False, dirname))
    used = {b[3] for b in blocks}
    return ClosedLoopPlan(path, spec, resolved, base, resolved.spec.gate, list(ranges), blocks,
                          [c for c in configs.values() if c.dirname in used])


def count_interrupts(log_path, seat: int) -> int:
    """Steps of a logged episode where the ego's trigger interrupted its running skill
    (``info[seat]["interrupt"]``; for BayesBelief ``full``/``no_prompt`` the gate's interrupts)."""
    import json

    n = 0
    with open(log_path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("kind") == "step":
                info = row.get("info") or []
                if len(info) > seat and info[seat].get("interrupt"):
                    n += 1
    return n


def count_vetoes(log_path, seat: int) -> Tuple[int, Dict[str, int]]:
    """The ego gate's firings in a logged episode (``gate_fired``) and, per filter, those a veto
    stopped (``gate_veto.filter``; see :func:`beliefgate.eval.metrics.gate_firings`)."""
    import json

    fired, vetoes = 0, {}
    with open(log_path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            info = (row.get("info") or []) if row.get("kind") == "step" else []
            if len(info) > seat and info[seat].get("gate_fired"):
                fired += 1
                veto = info[seat].get("gate_veto")
                if isinstance(veto, dict):
                    name = str(veto.get("filter", "?"))
                    vetoes[name] = vetoes.get(name, 0) + 1
    return fired, vetoes


def _bootstrap_stats(values: np.ndarray, n_boot: int, conf_level: float, seed: int, name: str) -> dict:
    """Mean, sd and percentile-bootstrap CI of the mean over episodes (NaN values skipped).

    The interval is :func:`beliefgate.eval.report.bootstrap_mean_ci` (resamples seeded by
    ``seed`` and ``name``); one episode, or identical values, give the degenerate interval
    ``[mean, mean]``.
    """
    from beliefgate.eval.report import bootstrap_mean_ci

    x = values[np.isfinite(values)]
    n = int(x.size)
    if n == 0:
        return {"n": 0, "mean": math.nan, "sd": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else 0.0
    if n == 1 or np.ptp(x) == 0.0:
        lo = hi = mean
    else:
        _, lo, hi = bootstrap_mean_ci(x, n_boot, conf_level, seed, name)
    return {"n": n, "mean": mean, "sd": sd, "ci_low": lo, "ci_high": hi}


@dataclass
class ClosedLoopRow:
    """One (parameter, value, agent) of a closed-loop sweep: per-output statistics over its episodes
    (``stats[output]``: ``n``, ``mean``, ``sd``, ``ci_low``, ``ci_high``)."""

    param: str
    value: float
    is_default: bool
    agent: str
    dirname: str
    episodes: int
    stats: Dict[str, dict]

    def mean(self, output: str) -> float:
        return self.stats[output]["mean"]


@dataclass
class ClosedLoopResult:
    """A closed-loop one-at-a-time sweep and everything that made it."""

    plan: ClosedLoopPlan
    out: Path
    rows: List[ClosedLoopRow]
    episodes: Dict[str, List[dict]]      # dirname -> per-episode records (config columns and outputs)
    runs: Dict[str, dict]                # dirname -> what run_grid did there
    failed: List[str]
    n_boot: int
    seed: int
    conf_level: float
    executor: str
    elapsed_s: float

    @property
    def agents(self) -> List[str]:
        return list(dict.fromkeys(r.agent for r in self.rows))

    @property
    def complete(self) -> bool:
        return not self.failed and all(len(v) == self.plan.episodes_per_config for v in self.episodes.values())

    def block(self, param: str, agent: Optional[str] = None) -> List[ClosedLoopRow]:
        return [r for r in self.rows if r.param == param and (agent is None or r.agent == agent)]

    def series(self, param: str, output: str, agent: str) -> Tuple[np.ndarray, ...]:
        """``(values, means, ci_low, ci_high)`` of one output along one parameter for one agent."""
        rows = self.block(param, agent)
        get = lambda k: np.array([r.stats[output][k] for r in rows])  # noqa: E731
        return np.array([r.value for r in rows]), get("mean"), get("ci_low"), get("ci_high")

    @property
    def warnings(self) -> List[str]:
        """One line per swept parameter whose every value left every agent without an interrupt: the
        sweep measured nothing there (with the gate's firings and the vetoes that stopped them)."""
        out = []
        for r in self.plan.ranges:
            block = self.block(r.name)
            if not block or any(row.stats["interrupts"]["mean"] != 0.0 for row in block):
                continue
            recs = [e for row in block for e in self.episodes.get(row.dirname, []) if e["agent"] == row.agent]
            fired = sum(int(e.get("gate_fired", 0)) for e in recs)
            vetoes: Dict[str, int] = {}
            for e in recs:
                for name, n in (e.get("vetoes") or {}).items():
                    vetoes[name] = vetoes.get(name, 0) + int(n)
            why = (f"the gate fired {fired} times and every firing was vetoed ("
                   + ", ".join(f"{k} {v}" for k, v in sorted(vetoes.items(), key=lambda kv: -kv[1])) + ")"
                   if fired else "the gate never fired")
            values = sorted({row.value for row in block})
            out.append(f"{r.name}: 0 interrupts for every value ({', '.join(f'{v:g}' for v in values)}) and "
                       f"every agent: {why}; this sweep measures nothing about {r.name}")
        return out

    def to_dict(self) -> dict:
        import beliefgate

        return {
            "kind": "sensitivity.oat.closed_loop",
            "warnings": self.warnings,
            "format": CLOSED_LOOP_FORMAT,
            "version": beliefgate.__version__,
            "grid": self.plan.grid_record(),
            "base": self.plan.base.model_dump(mode="json"),
            "base_overrides": self.plan.base_overrides,
            "ranges": [r.to_dict() for r in self.plan.ranges],
            "outputs": dict(CLOSED_LOOP_OUTPUTS),
            "bootstrap": {"resamples": self.n_boot, "seed": self.seed, "conf_level": self.conf_level,
                          "unit": "episode"},
            "out": str(self.out),
            "configs": [{"dir": c.dirname, "gate": c.overrides, **self.runs.get(c.dirname, {})}
                        for c in self.plan.configs],
            "rows": [{"param": r.param, "value": r.value, "default": r.is_default, "agent": r.agent,
                      "dir": r.dirname, "episodes": r.episodes,
                      **{k: {s: _json_float(v) if s != "n" else v for s, v in r.stats[k].items()}
                         for k in CLOSED_LOOP_OUTPUTS}} for r in self.rows],
            "episodes": {d: rows for d, rows in self.episodes.items()},
            "failed": self.failed,
            "complete": self.complete,
            "executor": self.executor,
            "elapsed_s": round(self.elapsed_s, 3),
        }


def _episode_record(row: dict, sub: Path) -> dict:
    rec = {k: row[k] for k in ("agent", "layout", "partner", "seed", "seat", "episode_key", "log")}
    rec["gate_params"] = row.get("gate_params", "")
    for out, col in CLOSED_LOOP_COLUMNS.items():
        rec[out] = float(row[col])
    rec["interrupts"] = float(count_interrupts(sub / row["log"], int(row["seat"])))
    rec["gate_fired"], rec["vetoes"] = count_vetoes(sub / row["log"], int(row["seat"]))
    return rec


def run_closed_loop_oat(plan: ClosedLoopPlan, out, executor=None,
                        progress: Optional[Callable[[int, int, str], None]] = None,
                        report: Optional[Callable[[str], None]] = None, n_boot: int = 2000, seed: int = 0,
                        conf_level: float = 0.95) -> ClosedLoopResult:
    """Play every configuration of ``plan`` through the evaluation harness and summarise it.

    Each configuration is the grid with its ``gate:`` set to that configuration,
    run by :func:`beliefgate.eval.runner.run_grid` into ``out/<dir>`` (``base``,
    ``tau_obs=0.1``, ``cooldown=20``, ...) with ``executor`` (default: this
    process). Every sub-directory is an ordinary resumable run directory: a rerun
    plays only what is missing. ``progress(done, total, label)`` counts episodes
    over all configurations (finished ones included); ``report(line)`` gets the
    harness's notes. Per (parameter, value, agent) every output of
    :data:`CLOSED_LOOP_OUTPUTS` gets its mean, sd and a percentile-bootstrap CI of
    the mean over episodes (``n_boot`` resamples, seeded by ``seed`` and the
    names). Writes ``out/sweep.json`` (the plan) first and ``out/sensitivity.json``
    (the result) last.
    """
    import json

    from beliefgate.eval.executors import InlineExecutor
    from beliefgate.eval.grid import regate
    from beliefgate.eval.runner import run_grid
    from beliefgate.fileio import atomic_write

    if n_boot < 10:
        raise SensitivityError(f"n_boot must be >= 10, got {n_boot}")
    if not 0.0 < conf_level < 1.0:
        raise SensitivityError(f"conf_level must lie in (0, 1), got {conf_level}")
    started = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "sweep.json", (json.dumps(plan.to_dict(), indent=1) + "\n").encode())
    executor = executor or InlineExecutor()
    per = plan.episodes_per_config
    total = plan.total_episodes
    episodes: Dict[str, List[dict]] = {}
    runs: Dict[str, dict] = {}
    failed: List[str] = []
    for i, cfg in enumerate(plan.configs):
        offset = i * per

        def sub_progress(done: int, todo: int, label: str, offset=offset, cfg=cfg) -> None:
            if progress is not None:
                progress(offset + (per - todo) + done, total, cfg.dirname)

        sub = out / cfg.dirname
        grid = regate(plan.resolved, cfg.overrides)
        summary = run_grid(grid, sub, executor, progress=sub_progress, report=report)
        failed.extend(f"{cfg.dirname}: {line}" for line in summary.failed)
        runs[cfg.dirname] = {"grid_digest": grid.spec.digest(), "ran": summary.ran,
                             "already_done": summary.skipped_done, "rescored": summary.rescored,
                             "failed": len(summary.failed), "wall_s": round(summary.wall_s, 3)}
        episodes[cfg.dirname] = [_episode_record(r, sub) for r in summary.rows]
    rows: List[ClosedLoopRow] = []
    agents = list(dict.fromkeys(ep.agent for ep in plan.resolved.episodes))
    for param, value, is_default, dirname in plan.blocks:
        for agent in agents:
            recs = [e for e in episodes[dirname] if e["agent"] == agent]
            stats = {}
            for k in CLOSED_LOOP_OUTPUTS:
                stats[k] = _bootstrap_stats(np.array([e[k] for e in recs], dtype=float), n_boot, conf_level,
                                            seed, f"{dirname}|{agent}|{k}")
            rows.append(ClosedLoopRow(param, float(value), is_default, agent, dirname, len(recs), stats))
    result = ClosedLoopResult(plan, out, rows, episodes, runs, failed, n_boot, seed, conf_level,
                              executor.description, time.perf_counter() - started)
    atomic_write(out / "sensitivity.json", (json.dumps(result.to_dict(), indent=1) + "\n").encode())
    return result



__all__ = ["CLOSED_LOOP_OUTPUTS", "CLOSED_LOOP_COLUMNS", "BASE_DIR", "CLOSED_LOOP_FORMAT", "ClosedLoopConfig",
           "ClosedLoopPlan", "plan_closed_loop", "count_interrupts", "count_vetoes", "ClosedLoopRow", "ClosedLoopResult",
           "run_closed_loop_oat"]
