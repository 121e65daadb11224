"""Compare fitted model variants by PSIS-LOO (``arviz.compare``) over trajectories.

Each fit stores ``log_lik[chain, draw, trajectory]``: the log marginal likelihood
of a whole trajectory. Steps within a trajectory are dependent (the skill
persists), so the unit left out is a trajectory, and the comparison is valid only
between fits of *the same* trajectories: :func:`compare_fits` refuses fits whose
data fingerprints differ. Fits with a free tempering weight use a normalised
likelihood on ambiguous steps and are not comparable with fits that temper by a
fixed weight (refused as well), unless the data have no ambiguous steps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Mapping, NamedTuple, Sequence, Union

from beliefgate.models.fit import FitError, fit_record, load_fit


class CompareRow(NamedTuple):
    """One model of the comparison (``arviz.compare`` columns, log scale: higher is better)."""

    name: str
    rank: int
    elpd_loo: float
    se: float
    elpd_diff: float
    dse: float
    p_loo: float
    weight: float
    warning: bool


class Comparison(NamedTuple):
    """The comparison table (best first) and the fits' configurations."""

    rows: List[CompareRow]
    configs: Dict[str, dict]
    num_trajectories: int

    @property
    def best(self) -> str:
        return self.rows[0].name

    def verdict(self) -> str:
        """The reading of the two best fits by the usual ELPD guidance: a difference under
        :data:`SMALL_ELPD_DIFF` is "no clear difference"; above it, clear only when it also exceeds
        twice its standard error (``dse``)."""
        best, second = self.rows[0], self.rows[1]
        d, dse = second.elpd_diff, second.dse
        numbers = f"elpd_diff {d:.1f}, dse {dse:.1f}"
        if abs(d) < SMALL_ELPD_DIFF:
            return (f"no clear difference between '{best.name}' and '{second.name}' ({numbers}: |elpd_diff| < "
                    f"{SMALL_ELPD_DIFF:g})")
        if d > 2 * dse:
            return f"'{best.name}' is clearly better than '{second.name}' ({numbers}: above {SMALL_ELPD_DIFF:g} and 2 dse)"
        return (f"'{best.name}' may be better than '{second.name}', but the difference is uncertain ({numbers}: "
                "within 2 dse)")

    def warnings(self) -> List[str]:
        """What makes this comparison unreliable: Pareto k > 0.7 in a fit, too few LOO units."""
        out = []
        flagged = [r.name for r in self.rows if r.warning]
        if flagged:
            out.append(f"Pareto k > 0.7 for some trajectory in {', '.join(repr(n) for n in flagged)}: PSIS-LOO is "
                       "unreliable there (the elpd and its se may be far off); refit with more trajectories or "
                       "check the influential ones")
        if self.num_trajectories < MIN_LOO_UNITS:
            out.append(f"only {self.num_trajectories} LOO unit{'s' if self.num_trajectories != 1 else ''} "
                       f"(trajectories): with fewer than ~{MIN_LOO_UNITS} the se of the difference is unreliable; "
                       "fit on more logs")
        return out

    def to_dict(self) -> dict:
        return {"models": [r._asdict() for r in self.rows], "configs": self.configs,
                "num_trajectories": self.num_trajectories, "verdict": self.verdict(), "warnings": self.warnings()}


#: |elpd_diff| below this is a small difference whatever its se (the LOO guidance's 4)
SMALL_ELPD_DIFF = 4.0
#: fewer LOO units (trajectories) than this and the se of an elpd difference is not to be trusted
MIN_LOO_UNITS = 10


def variant_name(record: Mapping) -> str:
    """A short label of a fit's model variant (``hazard``, ``windowed:5``, ``hazard[h=0]``, ...)."""
    cfg = record["config"]
    name = cfg["model"] + (f":{cfg['window']}" if cfg.get("window") else "")
    extras = [f"{k}={v:g}" for k, v in sorted(cfg.get("fixed", {}).items())]
    if cfg.get("per_skill_beta"):
        extras.append("beta/skill")
    if cfg.get("fit_weight"):
        extras.append("w")
    return name + (f"[{','.join(extras)}]" if extras else "") + f" {cfg['method']}"


def compare_fits(fits: Mapping[str, object]) -> Comparison:
    """PSIS-LOO comparison of named InferenceData fits (stacking weights); best first.

    Raises :class:`FitError` for fewer than two fits or fits of different data.
    """
    import arviz as az

    if len(fits) < 2:
        raise FitError("compare needs at least two fits")
    records = {name: fit_record(idata) for name, idata in fits.items()}
    prints = {r["data_fingerprint"] for r in records.values()}
    if len(prints) != 1:
        detail = ", ".join(f"{n}: {r['num_trajectories']} trajectories, data {r['data_fingerprint'][:10]}"
                           for n, r in records.items())
        raise FitError(f"the fits are of different data, LOO cannot compare them ({detail}); "
                       "fit every variant on the same logs")
    ambiguous = any(_has_ambiguous(idata) for idata in fits.values())
    free = {bool(r["config"].get("fit_weight")) for r in records.values()}
    if ambiguous and len(free) > 1:
        raise FitError("fits with a free tempering weight (normalised likelihood on ambiguous steps) "
                       "cannot be compared with fits that use a fixed tempering weight")
    table = az.compare(dict(fits), ic="loo", method="stacking", scale="log")
    rows = []
    for name, row in table.iterrows():
        rows.append(CompareRow(str(name), int(row["rank"]), float(row["elpd_loo"]), float(row["se"]),
                               float(row["elpd_diff"]), float(row["dse"]), float(row["p_loo"]),
                               float(row["weight"]), bool(row["warning"])))
    return Comparison(rows, {n: r["config"] for n, r in records.items()},
                      int(next(iter(records.values()))["num_trajectories"]))


def _has_ambiguous(idata) -> bool:
    import numpy as np

    if "constant_data" not in idata.groups() or "ambiguous" not in idata.constant_data:
        return False
    return bool(np.asarray(idata.constant_data["ambiguous"].values).any())


def compare_files(paths: Sequence[Union[str, Path]]) -> Comparison:
    """Load fits from NetCDF files and compare them; names are the file stems (made unique)."""
    fits: Dict[str, object] = {}
    for path in paths:
        path = Path(path)
        name = path.stem
        n = 2
        while name in fits:
            name = f"{path.stem}~{n}"
            n += 1
        fits[name] = load_fit(path)
    return compare_fits(fits)


__all__ = ["CompareRow", "Comparison", "compare_fits", "compare_files", "variant_name", "SMALL_ELPD_DIFF",
           "MIN_LOO_UNITS"]
