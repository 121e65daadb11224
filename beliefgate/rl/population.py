"""The behaviour-preference population as data (``bp_population.yaml`` beside this module).

Three groups, each two *crossed* events with a low and a high weight (the 2 x 2 gives four
behaviours) and *fixed* events whose weight every behaviour of the group shares: twelve weight sets
over :data:`~beliefgate.rl.config.EVENTS`. A behaviour is named ``bp-<group>-<a>-<b>`` with ``a``
and ``b`` the settings (``lo``/``hi``) of the group's first and second crossed event, e.g.
``bp-cooking-hi-lo``; its partner on a layout is ``bp-<group>-<a>-<b>-<layout>``.

``python -m beliefgate.rl.population`` prints one ``EVENT=W,...`` line per behaviour (the
``--weights`` of one reward-conditioned training run over the population).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import ClassVar, Dict, List, Literal, Optional

from pydantic import ConfigDict, Field, field_validator

from beliefgate.errors import InputError
from beliefgate.rl.config import EVENTS
from beliefgate.validation import CheckedModel

SETTINGS = ("lo", "hi")


class PopulationError(InputError):
    """A malformed population file (one line naming the field)."""


class Levels(CheckedModel):
    error_type: ClassVar = PopulationError
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    lo: float
    hi: float


class Group(CheckedModel):
    error_type: ClassVar = PopulationError
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    crossed: Dict[str, Levels] = Field(min_length=2, max_length=2)
    fixed: Dict[str, float] = Field(default_factory=dict)

    @field_validator("crossed", "fixed")
    @classmethod
    def _known(cls, value):
        unknown = sorted(set(value) - set(EVENTS))
        if unknown:
            raise ValueError(f"unknown event {unknown[0]!r} (events: {', '.join(EVENTS)})")
        return value


class Population(CheckedModel):
    error_type: ClassVar = PopulationError
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    format: Literal["beliefgate.bp_population/1"]
    groups: Dict[str, Group] = Field(min_length=1)

    @field_validator("groups")
    @classmethod
    def _names(cls, value):
        import re

        for name, group in value.items():
            if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
                raise ValueError(f"group name {name!r}: lower-case letters, digits and '_'")
            both = sorted(set(group.crossed) & set(group.fixed))
            if both:
                raise ValueError(f"group {name}: event {both[0]!r} is both crossed and fixed")
        return value

    def behaviours(self) -> List["Behaviour"]:
        """The population in a fixed order: groups as listed, then (a, b) in lo-lo, lo-hi, hi-lo, hi-hi."""
        out = []
        for gname, group in self.groups.items():
            (ea, la), (eb, lb) = group.crossed.items()
            for sa in SETTINGS:
                for sb in SETTINGS:
                    weights = {**group.fixed, ea: getattr(la, sa), eb: getattr(lb, sb)}
                    weights = {e: float(weights[e]) for e in EVENTS if e in weights}
                    out.append(Behaviour(name=f"bp-{gname}-{sa}-{sb}", group=gname, settings={ea: sa, eb: sb},
                                         weights=weights))
        return out

    def behaviour(self, name: str) -> "Behaviour":
        found = {b.name: b for b in self.behaviours()}
        if name not in found:
            raise PopulationError(f"unknown behaviour {name!r} (known: {', '.join(found)})")
        return found[name]


@dataclass(frozen=True)
class Behaviour:
    name: str
    group: str
    #: each crossed event's setting, ``lo`` or ``hi``
    settings: Dict[str, str]
    #: the reward weight per event (crossed and fixed; absent events weigh 0)
    weights: Dict[str, float]

    def weights_arg(self) -> str:
        """``EVENT=W,...``: the ``--weights`` of ``beliefgate train ppo``."""
        return ",".join(f"{e}={w:g}" for e, w in self.weights.items())

    def partner_name(self, layout: str) -> str:
        """The shipped partner of this behaviour on ``layout`` (``v2/`` prefix dropped)."""
        return f"{self.name}-{layout.split('/', 1)[-1]}"


def load_population(path: Optional[Path] = None) -> Population:
    """The population in ``path`` (default: the package's ``bp_population.yaml``)."""
    import yaml

    if path is None:
        text = resources.files("beliefgate.rl").joinpath("bp_population.yaml").read_text()
        source = "bp_population.yaml"
    else:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise PopulationError(f"cannot read population file {path}: {exc.strerror}") from None
        source = str(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PopulationError(f"{source}: not valid YAML: {exc}") from None
    return Population.from_data(data, source)


def main() -> int:
    for b in load_population().behaviours():
        print(b.weights_arg())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["Population", "Behaviour", "PopulationError", "load_population", "SETTINGS"]
