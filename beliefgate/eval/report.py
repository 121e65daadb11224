"""Markdown report of a results table: the BayesBelief paper's Tables 1-4 and 10 with paired bootstrap CIs.

Input: the rows of a run directory's results table (:func:`beliefgate.eval.runner.load_results`).
A *condition* is an ego agent of the grid; a *setting* is a layout x partner group.

* Table 1 -- reward (mean ± sd over episodes) by setting, one column per condition;
* Table 2 -- mechanism metrics per layout and condition (skill accuracy, gap rate,
  Comp@3, duplicate rate, intent accuracy, FI, MB, Σ⁻, replans, LLM calls per step);
* Table 3 -- the BayesBelief ablations (``full``, ``no_replan``, ``no_prompt``,
  ``no_belief``): reward by setting;
* Table 4 -- replanning triggers (``full``, ``periodic-N``, ``completion-held``,
  ``llm-judge``): reward / replans per episode by setting;
* Table 10 -- mechanism metrics of ``full`` and ``no_replan`` by setting, with the paired
  ``full`` − ``no_replan`` reward and gap rate (its Table 8);
* LLM fallbacks -- per condition, fallbacks per episode by role (planner, judge,
  hypothesis) and their reasons (unusable reply, bad response, unavailable, rejected,
  deadline, budget, breaker open), when any episode fell back.

Each table is followed by the paired differences *condition − baseline* with a
95% bootstrap interval (:func:`paired_bootstrap`), and a sentence naming the
intervals that include zero (no reliable difference under this analysis).

Pairing: an episode of a condition is matched with the baseline's episode of the
same layout, partner, seat and seed (same seeds give both the same partner
randomness). The bootstrap resamples **matched seeds** (``unit="seed"``, default):
for each seed s, ``d_s`` is the mean difference over the matched (partner, seat)
pairs of the setting with that seed; the estimate is the mean of ``d_s`` and the
interval is the 2.5/97.5 percentiles of that mean over ``n_boot`` resamples of
the seeds with replacement. ``unit="episode"`` resamples matched episodes instead.
The resampling generator is seeded by ``seed`` and the comparison's name, so a
report is reproducible and does not depend on table order. Each difference also
carries a two-sided bootstrap p-value (:func:`bootstrap_p`, from the same
resamples); the p-values of one differences table are one family, adjusted
together by Holm's method (:func:`holm`) and printed beside the intervals.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.errors import InputError
from beliefgate.eval.metrics import METRICS
from beliefgate.planners.errors import FALLBACK_REASONS
from beliefgate.planners.fallbacks import ROLES

Row = Dict[str, Any]
PAIR_KEYS = ("layout", "partner", "seat", "seed")
ABLATIONS = ("full", "paper", "no_replan", "no_prompt", "no_belief")
MECHANISM = ("map_accuracy", "gap_rate", "gap_rate_decisions", "oracle_gap_rate", "comp3", "oracle_comp3",
             "duplicate_rate", "intent_accuracy", "failed_interaction_rate", "blocking_rate", "abandoned", "replans",
             "effective_replans", "effective_fraction", "llm_calls_per_step", "fallbacks")
#: the gap / recovery definitions every report compares (Table 2′)
GAP_METRICS = ("gap_rate", "gap_rate_decisions", "oracle_gap_rate", "comp3", "oracle_comp3", "duplicate_rate")


class ReportError(InputError):
    """A results table that cannot be reported as asked (e.g. an unknown baseline)."""


@dataclass(frozen=True)
class Diff:
    """A paired difference (condition − baseline) with its bootstrap interval."""

    mean: float
    lo: float
    hi: float
    units: int        # resampled units (seeds, or episodes)
    pairs: int        # matched episode pairs
    #: two-sided bootstrap p-value of "no difference" (:func:`bootstrap_p`); NaN without an interval
    p: float = float("nan")

    @property
    def has_interval(self) -> bool:
        return self.units >= 2 and math.isfinite(self.lo) and math.isfinite(self.hi)

    @property
    def includes_zero(self) -> bool:
        return self.has_interval and self.lo <= 0.0 <= self.hi

    def to_dict(self) -> Dict[str, Any]:
        """JSON-able (NaN as None)."""
        def num(x: float) -> Optional[float]:
            return None if math.isnan(x) else float(x)

        return {"mean": num(self.mean), "lo": num(self.lo), "hi": num(self.hi), "units": self.units,
                "pairs": self.pairs, "includes_zero": self.includes_zero, "p": num(self.p)}


def _stable_seed(seed: int, name: str) -> List[int]:
    return [int(seed), zlib.crc32(name.encode())]


def _bootstrap(values: Sequence[float], n_boot: int, level: float, seed: int,
               name: str) -> Tuple[float, float, float, float]:
    """Mean, percentile interval and two-sided p-value (:func:`bootstrap_p`) from one set of resamples."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return float("nan"), float("nan"), float("nan"), float("nan")
    mean = float(x.mean())
    if x.size < 2:
        return mean, float("nan"), float("nan"), float("nan")
    if not 0.0 < level < 1.0:
        raise ReportError(f"level must be in (0, 1), got {level}")
    rng = np.random.default_rng(_stable_seed(seed, name))
    idx = rng.integers(0, x.size, size=(int(n_boot), x.size))
    means = x[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return mean, float(lo), float(hi), bootstrap_p(means)


def bootstrap_p(means: np.ndarray) -> float:
    """Two-sided p-value of "the mean is 0" from bootstrap resamples of the mean (the interval inverted:
    the smallest two-sided level whose percentile interval reaches 0). With ``B`` resamples,
    ``p = min(1, 2 (1 + #{m* on the far side of 0}) / (B + 1))``, the far side being the one opposite
    the resampled means' bulk; the ``+1`` counts the observed sample among the resamples (Davison &
    Hinkley 1997, eq. 4.11), so the smallest reportable p is ``2 / (B + 1)``, never 0. Resamples equal
    to 0 count on both sides: identical episodes give ``p = 1``."""
    m = np.asarray(means, dtype=float)
    below, above = int(np.sum(m <= 0.0)), int(np.sum(m >= 0.0))
    return float(min(1.0, 2.0 * (1 + min(below, above)) / (m.size + 1)))


def holm(pvalues: Sequence[float]) -> List[float]:
    """Holm's step-down adjustment of a family of p-values (Holm 1979): the ``k``-th smallest of ``m``
    becomes ``max_{j<=k} min(1, (m - j + 1) p_(j))``; it controls the family-wise error rate.
    NaN entries (no test) stay NaN and do not count in ``m``."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if ok.size == 0:
        return out.tolist()
    order = ok[np.argsort(p[ok], kind="stable")]
    m = order.size
    adjusted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out[order] = adjusted
    return out.tolist()


def bootstrap_mean_ci(values: Sequence[float], n_boot: int = 10_000, level: float = 0.95,
                      seed: int = 0, name: str = "") -> Tuple[float, float, float]:
    """Mean of ``values`` and its percentile bootstrap interval (resampling the values with replacement).

    With fewer than two values the interval is (NaN, NaN).
    """
    return _bootstrap(values, n_boot, level, seed, name)[:3]


def same_rewards(rows: Iterable[Row], base_rows: Iterable[Row], metrics: Sequence[str] = ("reward",)) -> bool:
    """Every matched episode (layout, partner, seat, seed) has the same ``metrics`` in both (at least
    one pair): the two conditions played the same episodes as far as these columns tell."""
    base = {tuple(r[k] for k in PAIR_KEYS): r for r in base_rows}
    pairs = [(r, base[tuple(r[k] for k in PAIR_KEYS)]) for r in rows if tuple(r[k] for k in PAIR_KEYS) in base]
    return bool(pairs) and all(_same_value(a.get(m), b.get(m)) for a, b in pairs for m in metrics)


def _same_value(a, b) -> bool:
    if a is None or b is None:
        return a is b
    x, y = float(a), float(b)
    return x == y or (math.isnan(x) and math.isnan(y))


def gate_firings_by_condition(run_dir, rows: Iterable[Row], conditions: Sequence[str]) -> Dict[str, Any]:
    """Per condition, the ego gate's firings summed over its episodes' logs (``log`` column, relative
    to ``run_dir``) and the vetoes that stopped them (:class:`~beliefgate.eval.metrics.GateFirings`);
    a condition none of whose logs can be read is left out."""
    from pathlib import Path

    from beliefgate.envs.trajlog import read_log
    from beliefgate.errors import BeliefgateError
    from beliefgate.eval.metrics import GateFirings, gate_firings

    out: Dict[str, Any] = {}
    for r in rows:
        if r["agent"] not in conditions or not r.get("log"):
            continue
        try:
            traj = read_log(Path(run_dir) / str(r["log"]))
        except (OSError, BeliefgateError):
            continue  # a missing or unreadable log: the table's other rows still count (check_results says so)
        out[r["agent"]] = out.get(r["agent"], GateFirings()) + gate_firings(traj)
    return out


#: the columns two conditions must share on every matched episode to have "played the same episodes"
IDENTICAL_METRICS = ("reward", "deliveries", "gap_rate", "duplicate_rate", "replans", "steps")


def paired_bootstrap(cond: Iterable[Row], base: Iterable[Row], metric: str, unit: str = "seed",
                     n_boot: int = 10_000, level: float = 0.95, seed: int = 0, name: str = "") -> Diff:
    """Paired difference ``metric(cond) − metric(base)`` over matched episodes, with a bootstrap interval.

    Episodes are matched on layout, partner, seat and seed; a pair where either
    value is NaN is dropped. ``unit="seed"`` averages the pairs of each seed and
    resamples seeds; ``unit="episode"`` resamples pairs.
    """
    if unit not in ("seed", "episode"):
        raise ReportError(f"unit must be 'seed' or 'episode', got {unit!r}")
    base_by = {tuple(r[k] for k in PAIR_KEYS): r[metric] for r in base}
    per_unit: Dict[Any, List[float]] = {}
    pairs = 0
    for r in cond:
        key = tuple(r[k] for k in PAIR_KEYS)
        if key not in base_by:
            continue
        a, b = float(r[metric]), float(base_by[key])
        if math.isnan(a) or math.isnan(b):
            continue
        pairs += 1
        per_unit.setdefault(r["seed"] if unit == "seed" else key, []).append(a - b)
    values = [float(np.mean(v)) for _, v in sorted(per_unit.items(), key=lambda kv: str(kv[0]))]
    mean, lo, hi, p = _bootstrap(values, n_boot, level, seed, name)
    return Diff(mean, lo, hi, len(values), pairs, p)


# ------------------------------------------------------------------------------ formatting
def _fmt(metric: str, value: float, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    digits = 1 if metric in ("reward", "replans", "effective_replans", "deliveries", "abandoned", "llm_calls", "steps") \
        or metric.startswith("fallback") else 2
    if metric == "llm_calls_per_step":
        digits = 3
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _mean_sd(metric: str, values: List[float]) -> str:
    x = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if x.size == 0:
        return "–"
    if x.size == 1:
        return _fmt(metric, float(x[0]))
    return f"{_fmt(metric, float(x.mean()))} ± {_fmt(metric, float(x.std(ddof=1)))}"


def _nanmean(values: List[float]) -> float:
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else float("nan")


def _p(p: float) -> str:
    """A p-value as printed: three decimals, ``< 0.001`` below that."""
    if math.isnan(p):
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _diff_cell(metric: str, d: Diff, p_holm: float = float("nan")) -> str:
    if d.pairs == 0:
        return "–"
    if not d.has_interval:
        return f"{_fmt(metric, d.mean, True)} (n={d.units})"
    mark = " †" if d.includes_zero else ""
    text = f"{_fmt(metric, d.mean, True)} [{_fmt(metric, d.lo, True)}, {_fmt(metric, d.hi, True)}]{mark}"
    return text if math.isnan(p_holm) else f"{text} p={_p(p_holm)}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align_first: int = 1) -> str:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---"] * align_first + ["---:"] * (len(header) - align_first)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def condition_kind(name: str) -> Optional[str]:
    """``full``/``no_replan``/... for BayesBelief conditions, ``trigger`` for trigger baselines, else None."""
    if name == "bayes-belief":
        return "full"
    if name.startswith("bayes-belief:"):
        return name.split(":", 1)[1]
    if re.fullmatch(r"periodic(-\d+)?", name) or name in ("completion-held", "llm-judge"):
        return "trigger"
    return None


# ------------------------------------------------------------------------------ the report
class Report:
    """Builds the markdown and a JSON-able record of every paired difference."""

    def __init__(self, rows: List[Row], baseline: Optional[str] = None, conditions: Optional[List[str]] = None,
                 n_boot: int = 10_000, seed: int = 0, unit: str = "seed", level: float = 0.95,
                 title: str = "Evaluation report", source: str = "", description: str = "",
                 firings: Optional[Dict[str, Any]] = None):
        if not rows:
            raise ReportError("the results table is empty: no finished episodes to report")
        if n_boot < 100:
            raise ReportError(f"--bootstrap must be >= 100 resamples, got {n_boot}")
        if unit not in ("seed", "episode"):
            raise ReportError(f"unit must be 'seed' or 'episode', got {unit!r}")
        present = list(dict.fromkeys(r["agent"] for r in rows))
        self.conditions = [c for c in (conditions or present) if c in present] or present
        self.baseline = baseline or self.conditions[0]
        if self.baseline not in self.conditions:
            raise ReportError(f"baseline {self.baseline!r} is not a condition of these results; "
                              f"choose from: {', '.join(self.conditions)}")
        # a table written before a metric existed (e.g. the fallback columns) reports it as undefined
        rows = [{**{m: float("nan") for m in METRICS if m not in r}, **r} for r in rows]
        self.rows, self.n_boot, self.seed, self.unit, self.level = rows, n_boot, seed, unit, level
        self.title, self.source, self.description = title, source, description.strip()
        #: per condition, its gate's firings and vetoes read from the logs (``gate_firings_by_condition``)
        self.firings: Dict[str, Any] = dict(firings or {})
        self.layouts = list(dict.fromkeys(r["layout"] for r in rows))
        self.groups = list(dict.fromkeys(r["group"] for r in rows))
        self.settings = [(lay, g) for lay in self.layouts for g in self.groups
                         if any(r["layout"] == lay and r["group"] == g for r in rows)]
        self.diffs: List[Dict[str, Any]] = []

    # -------------------------------------------------------------- selection
    def _select(self, agent: str, layout: Optional[str] = None, group: Optional[str] = None) -> List[Row]:
        return [r for r in self.rows if r["agent"] == agent and (layout is None or r["layout"] == layout)
                and (group is None or r["group"] == group)]

    def _values(self, agent: str, metric: str, layout=None, group=None) -> List[float]:
        return [float(r[metric]) for r in self._select(agent, layout, group)]

    def diff(self, cond: str, metric: str, layout=None, group=None, baseline: Optional[str] = None) -> Diff:
        """``cond`` − ``baseline`` (default: the report's) on ``metric``, recorded in :attr:`diffs`."""
        return self._compare(cond, metric, layout, group, baseline)[0]

    def _compare(self, cond: str, metric: str, layout=None, group=None,
                 baseline: Optional[str] = None) -> Tuple[Diff, Dict[str, Any]]:
        """:meth:`diff` with its record (the dict appended to :attr:`diffs`)."""
        base = baseline or self.baseline
        name = f"{cond}|{base}|{metric}|{layout}|{group}"
        d = paired_bootstrap(self._select(cond, layout, group), self._select(base, layout, group), metric,
                             self.unit, self.n_boot, self.level, self.seed, name)
        record = {"condition": cond, "baseline": base, "metric": metric, "layout": layout, "group": group,
                  **d.to_dict()}
        self.diffs.append(record)
        return d, record

    @staticmethod
    def _setting(layout, group) -> str:
        return f"{layout} / {group}" if group is not None else (layout or "all (pooled)")

    def _zero_sentence(self, found: List[Tuple[str, str, str]], rows_of: Dict[str, List[str]], total: int) -> str:
        """``found``: (condition, metric, row) of the intervals that include zero; ``rows_of``: each
        condition's rows that have an interval."""
        if total == 0:
            return "_No paired comparison is possible (no condition besides the baseline, or no matched episodes)._"
        if not found:
            return f"Every one of the {total} intervals excludes zero."
        by: Dict[Tuple[str, str], List[str]] = {}
        for cond, metric, where in found:
            by.setdefault((cond, metric), []).append(where)
        parts = []
        for (c, m), where in by.items():
            rows = rows_of[c]
            if len(where) == len(rows):
                text = "every row"
            elif len(where) > len(rows) / 2:
                text = "every row but " + ", ".join(r for r in rows if r not in where)
            else:
                text = ", ".join(where)
            parts.append(f"`{c}` ({METRICS[m].label}): {text}")
        return (f"† The 95% interval includes zero in {len(found)} of {total} cells, so these differences are "
                f"not reliable under this analysis — " + "; ".join(parts) + ".")

    def _diff_table(self, conds: List[str], metric: str, per: str = "setting",
                    baseline: Optional[str] = None) -> List[str]:
        """A differences table (rows: settings + all) for one metric against ``baseline`` (default: the
        report's); returns markdown lines."""
        baseline = baseline or self.baseline
        conds = [c for c in conds if c != baseline]
        if not conds:
            return [f"_No condition to compare with the baseline `{baseline}` here._"]
        keys = (list(self.settings) if per == "setting" else [(lay, None) for lay in self.layouts])
        keys.append((None, None))
        # the table is one family of tests: its p-values are Holm-adjusted together
        compared = {(k, c): self._compare(c, metric, *k, baseline=baseline) for k in keys for c in conds}
        tested = [d.p if d.has_interval else float("nan") for d, _ in compared.values()]
        adjusted = dict(zip(compared, holm(tested)))
        for key, (_, record) in compared.items():
            record["p_holm"] = None if math.isnan(adjusted[key]) else adjusted[key]
        rows, found, total = [], [], 0
        rows_of: Dict[str, List[str]] = {c: [] for c in conds}
        for layout, group in keys:
            name = self._setting(layout, group)
            cells = [name if layout else "**all (pooled)**"]
            for c in conds:
                d = compared[((layout, group), c)][0]
                cells.append(_diff_cell(metric, d, adjusted[((layout, group), c)]))
                if d.has_interval:
                    total += 1
                    rows_of[c].append(name)
                    if d.includes_zero:
                        found.append((c, metric, name))
            rows.append(cells)
        header = ["setting"] + conds
        return [f"Each column: that condition − `{baseline}`, mean [95% CI] and the two-sided bootstrap p-value, "
                f"Holm-adjusted over the {total} tests of this table.", "", _table(header, rows), "",
                self._zero_sentence(found, rows_of, total)]

    # -------------------------------------------------------------- tables
    def table1(self) -> List[str]:
        out = ["## Table 1 — Reward by layout and partner group",
               "", "Mean ± sd of the team reward over episodes (partners of the group × seeds × seats); "
               "bold: best condition of the row.", ""]
        rows = []
        for layout, group in self.settings:
            means = {c: _nanmean(self._values(c, "reward", layout, group)) for c in self.conditions}
            finite = [m for m in means.values() if not math.isnan(m)]
            best = max(finite) if finite else None
            cells = [self._setting(layout, group)]
            for c in self.conditions:
                text = _mean_sd("reward", self._values(c, "reward", layout, group))
                cells.append(f"**{text}**" if best is not None and means[c] == best and len(self.conditions) > 1
                             else text)
            rows.append(cells)
        out += [_table(["setting"] + self.conditions, rows), ""]
        out += [f"**Table 1′** — paired reward differences against `{self.baseline}`.", ""]
        out += self._diff_table(self.conditions, "reward")
        return out

    def table2(self) -> List[str]:
        metrics = [m for m in MECHANISM if any(not math.isnan(float(r[m])) for r in self.rows)]
        out = ["## Table 2 — Mechanism metrics",
               "", "Mean over the episodes of each layout (all partner groups); NaN-valued episodes "
               "(metric undefined) are left out. Arrows: better direction.", ""]
        header = ["layout", "condition"] + [f"{METRICS[m].label} {METRICS[m].arrow}".strip() for m in metrics]
        rows = []
        for layout in self.layouts:
            for c in self.conditions:
                if not self._select(c, layout):
                    continue
                rows.append([layout, c] + [_fmt(m, _nanmean(self._values(c, m, layout))) for m in metrics])
        out += [_table(header, rows, align_first=2), ""]
        out += [f"**Table 2′** — paired differences against `{self.baseline}` per layout: belief–action gap "
                f"rate per step (SPEC table), at decision points (SPEC table) and at decision points against the "
                f"rollout oracle; Comp@3 (table and oracle); duplicate-skill rate.", ""]
        for m in [m for m in GAP_METRICS if any(not math.isnan(float(r[m])) for r in self.rows)]:
            out += [f"*{METRICS[m].label} {METRICS[m].arrow}*", ""]
            out += self._diff_table(self.conditions, m, per="layout")
            out.append("")
        return out

    def table3(self) -> List[str]:
        conds = [c for c in self.conditions if condition_kind(c) in ABLATIONS]
        conds.sort(key=lambda c: ABLATIONS.index(condition_kind(c)))
        out = ["## Table 3 — Posterior-guided control ablations", ""]
        if len(conds) < 2:
            return out + ["_Fewer than two BayesBelief conditions (full, no_replan, no_prompt, no_belief) "
                          "in these results._"]
        out += ["Mean ± sd of the team reward; `full` = posterior in the prompt + gate interrupts, "
                "`no_replan` = prompt only, `no_prompt` = interrupts only, `no_belief` = neither (with the "
                "default rule planner, `cover=\"none\"`, the posterior in the prompt changes nothing outside an "
                "interrupt, so `no_replan` plays `no_belief`'s episodes).", ""]
        rows = [[self._setting(lay, g)] + [_mean_sd("reward", self._values(c, "reward", lay, g)) for c in conds]
                for lay, g in self.settings]
        out += [_table(["setting"] + conds, rows), ""]
        out += self.veto_lines(conds)
        out += [f"**Table 3′** — paired belief–action gap-rate differences against `{self.baseline}` "
                f"(negative = smaller gap).", ""]
        out += self._diff_table(conds, "gap_rate")
        return out

    def table4(self) -> List[str]:
        conds = [c for c in self.conditions if condition_kind(c) in ("full", "paper", "trigger")]
        out = ["## Table 4 — Replanning triggers", ""]
        if len(conds) < 2:
            return out + ["_Fewer than two of full, periodic-N, completion-held, llm-judge in these results._"]
        out += ["Mean reward / mean replans / mean *effective* replans per episode (replans: interruptions of a "
                "running ego skill; effective: those after which the ego runs a different skill).", ""]
        rows = []
        for lay, g in self.settings:
            rows.append([self._setting(lay, g)] + [
                f"{_fmt('reward', _nanmean(self._values(c, 'reward', lay, g)))} / "
                f"{_fmt('replans', _nanmean(self._values(c, 'replans', lay, g)))} / "
                f"{_fmt('replans', _nanmean(self._values(c, 'effective_replans', lay, g)))}" for c in conds])
        rows.append(["**all (pooled)**"] + [
            f"{_fmt('reward', _nanmean(self._values(c, 'reward')))} / "
            f"{_fmt('replans', _nanmean(self._values(c, 'replans')))} / "
            f"{_fmt('replans', _nanmean(self._values(c, 'effective_replans')))}" for c in conds])
        out += [_table(["setting"] + conds, rows), ""]
        out += ["Effective fraction (all settings; effective replans / replans, pooled over episodes): " + ", ".join(
            f"`{c}` {self.effective_share(c)}" for c in conds) + ".", ""]
        out += [f"**Table 4′** — paired differences in replans per episode against `{self.baseline}`.", ""]
        out += self._diff_table(conds, "replans")
        return out

    def table10(self) -> List[str]:
        """BayesBelief's Table 10 (mechanism metrics of ``full`` and ``no_replan`` by setting) with its
        Table 8 (paired ``full`` − ``no_replan``)."""
        full = next((c for c in self.conditions if condition_kind(c) == "full"), None)
        no_replan = next((c for c in self.conditions if condition_kind(c) == "no_replan"), None)
        out = ["## Table 10 — Mechanism metrics of the gate's interrupts", ""]
        if full is None or no_replan is None:
            return out + ["_Needs both `bayes-belief:full` and `bayes-belief:no_replan` in these results._"]
        metrics = [m for m in ("map_accuracy", "gap_rate", "comp3", "duplicate_rate", "replans")
                   if any(not math.isnan(float(r[m])) for r in self._select(full) + self._select(no_replan))]
        out += [f"`{full}` (posterior in the prompt + interrupts) and `{no_replan}` (the same posterior, no "
                "interrupts): means over the setting's episodes, NaN-valued episodes left out.", ""]
        rows = [[self._setting(lay, g), c] + [_fmt(m, _nanmean(self._values(c, m, lay, g))) for m in metrics]
                for lay, g in self.settings for c in (full, no_replan)]
        header = ["setting", "condition"] + [f"{METRICS[m].label} {METRICS[m].arrow}".strip() for m in metrics]
        out += [_table(header, rows, align_first=2), ""]
        if self.baseline == no_replan:
            return out + [f"The paired `{full}` − `{no_replan}` differences (its Table 8) are Table 1′ (reward) and "
                          "Table 3′ (gap rate) above, whose baseline is `no_replan`."]
        for m in ("reward", "gap_rate"):
            out += [f"**Table 8′** — paired `{full}` − `{no_replan}`: {METRICS[m].label}.", ""]
            out += self._diff_table([full], m, baseline=no_replan) + [""]
        return out

    def effective_share(self, cond: str) -> str:
        """Pooled effective fraction of a condition: Σ effective replans / Σ replans ("–" without replans)."""
        rows = [r for r in self._select(cond) if not math.isnan(float(r["effective_replans"]))]
        if not rows:
            return "–"  # no episode logged the interrupt flag (a table from before effective replans)
        total = sum(float(r["replans"]) for r in rows)
        if not total:
            return "– (no replans)"
        return f"{sum(float(r['effective_replans']) for r in rows) / total:.2f}"

    def fallback_table(self) -> List[str]:
        """Fallbacks per episode by condition, role and reason (empty when nothing fell back)."""
        def values(c: str, m: str) -> List[float]:
            return self._values(c, m)

        if not any(_nanmean(values(c, "fallbacks")) > 0 for c in self.conditions):
            return []
        reasons = [r for r in FALLBACK_REASONS
                   if any(_nanmean(values(c, f"fallback_{r}")) > 0 for c in self.conditions)]
        out = ["## LLM fallbacks", "",
               "Mean per episode of the ego's model calls that fell back to the offline rule, by the role that "
               "called (planner, judge, hypothesis) and by reason; the reasons are in every episode log "
               "(`fallback_events`).", ""]
        header = ["condition", "episodes", "fallbacks"] + [f"{role}" for role in ROLES] + reasons
        rows = []
        for c in self.conditions:
            total = values(c, "fallbacks")
            rows.append([c, str(len(self._select(c))), _fmt("fallbacks", _nanmean(total))]
                        + [_fmt("fallbacks", _nanmean(values(c, f"fallbacks_{role}"))) for role in ROLES]
                        + [_fmt("fallbacks", _nanmean(values(c, f"fallback_{r}"))) for r in reasons])
        return out + [_table(header, rows), ""]

    def headline(self) -> List[str]:
        """Replans per episode of full vs periodic-10 vs completion-held; gap rate of full vs no_replan."""
        def find(kind: str, name: Optional[str] = None) -> Optional[str]:
            for c in self.conditions:
                if (name is not None and c == name) or (name is None and condition_kind(c) == kind):
                    return c
            return None

        full, no_replan = find("full"), find("no_replan")
        periodic, held = find("", "periodic-10"), find("", "completion-held")
        lines = []
        paper, no_belief = find("paper"), find("no_belief")
        trig = [c for c in (full, paper, periodic, held) if c is not None]
        if len(trig) >= 2:
            parts = [f"`{c}` {_fmt('replans', _nanmean(self._values(c, 'replans')))} "
                     f"({_fmt('replans', _nanmean(self._values(c, 'effective_replans')))} effective, "
                     f"share {self.effective_share(c)})" for c in trig]
            lines.append("- Replans per episode (all settings): " + ", ".join(parts) + ".")

        def paired(cond: str, base: str, metric: str, label: str) -> None:
            a, b = _nanmean(self._values(cond, metric)), _nanmean(self._values(base, metric))
            d = self.diff(cond, metric, baseline=base)
            ci = (f"[{_fmt(metric, d.lo, True)}, {_fmt(metric, d.hi, True)}]" if d.has_interval
                  else "(no interval)")
            lines.append(f"- {label}: `{cond}` {_fmt(metric, a)} vs `{base}` {_fmt(metric, b)} (paired difference "
                         f"{_fmt(metric, d.mean, True)} {ci}{'; the interval includes zero' if d.includes_zero else ''}).")

        if full is not None and no_belief is not None:
            paired(full, no_belief, "reward", "Reward, belief vs none")
        for cond in (full, paper):
            if cond is not None and no_replan is not None:
                paired(cond, no_replan, "gap_rate", "Belief–action gap rate (per step, SPEC table)")
                paired(cond, no_replan, "gap_rate_decisions", "Gap rate at decision points (SPEC table)")
                paired(cond, no_replan, "oracle_gap_rate", "Gap rate at decision points (rollout oracle)")
        return (["## Headline", ""] + lines) if lines else []

    def _layouts_text(self) -> str:
        """The layouts, each with its number of players where any has more than two."""
        from beliefgate.envs.domain import UnknownLayoutError, domain_for_layout

        players = {}
        for layout in self.layouts:
            try:
                players[layout] = domain_for_layout(layout).players(layout)
            except UnknownLayoutError:  # a layout of a domain not installed here: named as logged
                players[layout] = None
        if all(p in (2, None) for p in players.values()):
            return ", ".join(self.layouts)
        return ", ".join(f"{lay} ({p} players)" if p else lay for lay, p in players.items())

    def veto_lines(self, conds: Sequence[str]) -> List[str]:
        """The gate firings of each condition and what vetoed them, and one line per pair of conditions
        that played identical episodes saying why (its gate's firings were all vetoed, or it never fired)."""
        out = []
        counted = [c for c in conds if c in self.firings and self.firings[c].logged]
        if counted:
            out += ["Gate firings (from the logs): " + "; ".join(f"`{c}` {self.firings[c].describe()}"
                                                               for c in counted) + ".", ""]
        for i, a in enumerate(conds):
            for b in conds[i + 1:]:
                if not same_rewards(self._select(a), self._select(b), IDENTICAL_METRICS):
                    continue
                why = [f"`{c}`: {self.firings[c].why_identical()}" for c in (a, b)
                       if c in self.firings and self.firings[c].why_identical()]
                out += [f"`{a}` and `{b}` played identical episodes" + (f" ({'; '.join(why)})" if why else "")
                        + ": no matched episode differs in " + ", ".join(IDENTICAL_METRICS) + ".", ""]
        return out

    def markdown(self) -> str:
        n = len(self.rows)
        seeds = sorted({r["seed"] for r in self.rows})
        seats = sorted({r["seat"] for r in self.rows})
        versions = sorted({str(r.get("version", "")) for r in self.rows})
        horizons = sorted({r["horizon"] for r in self.rows})
        intro = [f"# {self.title}", ""] + ([self.description, ""] if self.description else []) + [
                 f"{n} episodes{f' from `{self.source}`' if self.source else ''}: conditions "
                 f"{', '.join(f'`{c}`' for c in self.conditions)}; layouts {self._layouts_text()}; partner groups "
                 f"{', '.join(self.groups)}; seeds {', '.join(map(str, seeds))}; ego seats "
                 f"{', '.join(map(str, seats))}; horizon {', '.join(map(str, horizons))}; beliefgate "
                 f"{', '.join(versions)}.", "",
                 f"Differences are *condition − `{self.baseline}`* over episodes matched on layout, partner, seat "
                 f"and seed, with {int(self.level * 100)}% percentile bootstrap intervals over matched "
                 f"{'seeds' if self.unit == 'seed' else 'episodes'} ({self.n_boot} resamples, seed {self.seed}). "
                 "An interval that includes zero is marked † and listed below its table. The intervals are not "
                 "corrected for multiple comparisons; the p-values beside them are (two-sided bootstrap p-values, "
                 "Holm-adjusted within each table, which controls the chance of any false finding in that table "
                 "at the printed level).", ""]
        fallbacks = self.fallback_table()
        parts = intro + self.headline() + [""] + self.table1() + [""] + self.table2() + [""] + self.table3() + \
            [""] + self.table4() + [""] + self.table10() + ([""] + fallbacks if fallbacks else []) + \
            ["", "## Metric definitions", ""]
        parts += [f"- **{info.label}** (`{name}`{', ' + info.better + ' is better' if info.better else ''}): "
                  f"{info.description}." for name, info in METRICS.items() if name != "steps"]
        parts += ["", "Exact definitions: `beliefgate/eval/metrics.py` and docs/eval.md."]
        return "\n".join(parts).rstrip() + "\n"


def build_report(rows: List[Row], baseline: Optional[str] = None, conditions: Optional[List[str]] = None,
                 n_boot: int = 10_000, seed: int = 0, unit: str = "seed", title: str = "Evaluation report",
                 source: str = "", description: str = "") -> Tuple[str, List[Dict[str, Any]]]:
    """The markdown report and the list of every paired difference it contains."""
    rep = Report(rows, baseline, conditions, n_boot, seed, unit, title=title, source=source, description=description)
    text = rep.markdown()
    return text, rep.diffs
