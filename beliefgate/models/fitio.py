"""NetCDF I/O shared by every fitted model (skill model, kappa): one place that reads and
writes an ArviZ ``InferenceData`` and the JSON record a fit carries in its attributes.

Each model passes its own attribute name, format string and error class, so a wrong
file fails with the model's own error and a message naming the path and the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence, Type, Union

import numpy as np


#: attribute of a fit's ``posterior_predictive`` / ``prior_predictive`` group (every model's): which group's
#: draws (flat indices, thinned evenly across chains) and which seed made the replications (JSON)
REPLICATION_ATTR = "beliefgate_replication"


def pick_draws(total: int, num: int):
    """Up to ``num`` flat draw indices out of ``total``, evenly spread (across chains)."""
    import numpy as np

    return np.unique(np.linspace(0, total - 1, min(num, total)).round().astype(int))


def stamp_record(idata, attr: str, record: dict, groups: Sequence[str] = ("posterior",)):
    """Store ``record`` as JSON under ``attr`` on ``idata`` and on each of ``groups``."""
    text = json.dumps(record, sort_keys=True, default=str)
    idata.attrs[attr] = text
    for group in groups:
        if group in idata.groups():
            getattr(idata, group).attrs[attr] = text
    return idata


def has_record(idata, attr: str) -> bool:
    """Whether ``idata`` carries a record under ``attr`` (on itself or its posterior)."""
    if attr in (getattr(idata, "attrs", {}) or {}):
        return True
    return "posterior" in idata.groups() and attr in idata.posterior.attrs


def read_record(idata, attr: str, fmt: str, error: Type[Exception], missing: str) -> dict:
    """The JSON record under ``attr``; ``error(missing)`` without one, ``error`` on another format."""
    text = (getattr(idata, "attrs", {}) or {}).get(attr)
    if text is None and "posterior" in idata.groups():
        text = idata.posterior.attrs.get(attr)
    if text is None:
        held = [k for k in list((getattr(idata, "attrs", {}) or {})) +
                (list(idata.posterior.attrs) if "posterior" in idata.groups() else [])
                if isinstance(k, str) and k.startswith("beliefgate_") and k != attr]
        if held:  # a fit of the other model: say so instead of "not a beliefgate fit"
            kind = ("a kappa fit (beliefgate fit --model kappa)" if "kappa" in held[0] else
                    "a goal fit (beliefgate fit --model goal)" if held[0] == "beliefgate_goal_fit" else
                    "a skill-model fit (beliefgate fit)" if held[0] == "beliefgate_fit" else f"a {held[0]!r} record")
            wanted = "a kappa fit" if "kappa" in attr else "a goal fit" if attr == "beliefgate_goal_fit" else "a skill-model fit" if attr == "beliefgate_fit" else attr
            raise error(f"this is {kind}; this command reads {wanted}")
        raise error(missing)
    try:
        record = json.loads(text)
    except (TypeError, ValueError) as exc:  # a damaged file: said, not an internal error
        raise error(f"its {attr!r} record is not valid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise error(f"its {attr!r} record is not a JSON object")
    if record.get("format") != fmt:
        raise error(f"unsupported fit format {record.get('format')!r} (expected {fmt})")
    return record


def stored_replication_record(idata, variables: Sequence[str], error: Type[Exception]):
    """``(group, draws, seed)`` of a fit's ``posterior_predictive`` group written with a replication
    record and holding ``variables``, or ``None`` without one; ``error`` when the record is damaged."""
    if "posterior_predictive" not in idata.groups():
        return None
    group = idata.posterior_predictive
    if REPLICATION_ATTR not in group.attrs or any(v not in group for v in variables):
        return None
    try:
        record = json.loads(group.attrs[REPLICATION_ATTR])
        draws, seed = np.asarray(record["draws"], int), int(record["seed"])
    except (TypeError, ValueError, KeyError) as exc:
        raise error(f"the fit's posterior_predictive record is damaged ({exc})") from None
    return group, draws, seed


def save_netcdf(idata, path: Union[str, Path]) -> Path:
    """Write ``idata`` as NetCDF (parent directories created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    idata.to_netcdf(str(path))
    return path


def read_netcdf(path: Union[str, Path], error: Type[Exception]):
    """An ``InferenceData`` read eagerly (the file is closed after); ``error`` with the reason."""
    import arviz as az

    from beliefgate.fileio import require_file

    path = require_file(path, error, "fit file")
    try:
        with az.rc_context({"data.load": "eager"}):
            return az.from_netcdf(str(path))
    except (OSError, ValueError) as exc:
        raise error(f"{path}: not a readable NetCDF fit ({exc})") from None


def require_groups(idata, path, groups: Sequence[str], error: Type[Exception], what: str = "the fit") -> None:
    """Raise ``error`` naming the groups of ``groups`` that ``idata`` lacks."""
    missing = [g for g in groups if g not in idata.groups()]
    if missing:
        raise error(f"{path}: {what} lacks the group(s) {', '.join(missing)}")


class FitFile:
    """The file format of one fitted model: where its record lives, what it must hold.

    ``attr``/``fmt``: the record's attribute name and format string; ``error``: the model's
    error class; ``missing``: the message for a file without the record; ``stamp_groups``:
    the groups the record is also stored on; ``groups``: the groups a loaded fit must have;
    ``what``: how messages name the fit.
    """

    def __init__(self, attr: str, fmt: str, error: Type[Exception], missing: str,
                 groups: Sequence[str], what: str, stamp_groups: Sequence[str] = ("posterior",)):
        self.attr, self.fmt, self.error, self.missing = attr, fmt, error, missing
        self.groups, self.what, self.stamp_groups = tuple(groups), what, tuple(stamp_groups)

    def stamp(self, idata, record: dict):
        return stamp_record(idata, self.attr, record, self.stamp_groups)

    def has(self, idata) -> bool:
        return has_record(idata, self.attr)

    def record(self, idata) -> dict:
        return read_record(idata, self.attr, self.fmt, self.error, self.missing)

    def save(self, idata, path: Union[str, Path]) -> Path:
        return save_netcdf(idata, path)

    def check(self, idata, path: Union[str, Path]):
        """``idata`` (read from ``path``) if it is a fit of this format; ``error`` with the reason."""
        try:
            record = self.record(idata)
        except self.error as exc:  # which file: a command may read several
            raise self.error(f"{path}: {exc}") from None
        require_groups(idata, path, self.groups, self.error, self.what)
        names = record.get("parameters")
        if isinstance(names, list) and "posterior" in idata.groups():
            lost = [str(n) for n in names if str(n) not in idata.posterior]
            if lost:  # a file edited or cut: diagnose crashed (KeyError) and compare ranked it anyway
                raise self.error(f"{path}: {self.what} lacks the posterior of {', '.join(lost)} (its record lists "
                                 f"{', '.join(str(n) for n in names)})")
        return idata

    def load(self, path: Union[str, Path]):
        """Read and validate a fit of this format; ``error`` with the reason."""
        return self.check(read_netcdf(path, self.error), path)
