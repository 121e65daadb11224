"""The strategy library as data: roles / divisions of labour the OverForge ego can hold.

A :class:`Strategy` is a weight per skill (how strongly the strategy prefers to start it; 0 =
only when nothing else can start) and the roles it claims. The shipped library is
``strategies.yaml`` beside this module; :func:`load_strategies` reads that file or another one of
the same format and checks it against the skill library (unknown skills or roles are an
:class:`StrategyFileError` naming them).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Dict, Optional, Tuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from beliefgate.errors import InputError, LookupFailure
from beliefgate.skills import load_builtin

STRATEGY_FORMAT = "beliefgate.overforge.strategies/1"
#: the strategy of the ``-hierarchy`` ablation: one flat branch set over every skill
FLAT = "flat"


class StrategyFileError(InputError):
    """A strategy file that cannot be read or names an unknown skill or role."""


class UnknownStrategyError(LookupFailure):
    """A strategy name that is not in the library (``overforge:pinned=chef``)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown strategy"


class Strategy(BaseModel):
    """One division of labour: skill weights and claimed roles."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1)
    description: str = ""
    roles: Tuple[str, ...] = ()
    weights: Dict[str, float]

    def weight(self, skill: str) -> float:
        return float(self.weights.get(skill, 0.0))

    @property
    def top_weight(self) -> float:
        return max(self.weights.values(), default=1.0) or 1.0


class _StrategyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = STRATEGY_FORMAT
    strategies: Dict[str, Dict]


class StrategyLibrary:
    """Strategies by name, in file order."""

    def __init__(self, strategies: Tuple[Strategy, ...]):
        if not strategies:
            raise StrategyFileError("a strategy library needs at least one strategy")
        self.strategies = tuple(strategies)
        self._by = {s.name: s for s in strategies}

    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(self._by)

    def __getitem__(self, name: str) -> Strategy:
        try:
            return self._by[name]
        except KeyError:
            raise UnknownStrategyError(f"unknown strategy {name!r}; choose from {', '.join(self._by)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._by


def flat_strategy(library=None) -> Strategy:
    """Every skill of ``library`` (default: the classic Overcooked library) weighted 1 (the
    ``-hierarchy`` ablation's single branch set)."""
    library = library if library is not None else load_builtin("overcooked")
    return Strategy(name=FLAT, description="no strategic layer", roles=(),
                    weights={n: 1.0 for n in library.names})


def _expand(names, have) -> list:
    """Names with ``{i}`` expanded to the ones ``have`` holds (every ingredient index that gives a
    known name); a name without ``{i}`` is kept as it is."""
    out = []
    for n in names:
        if "{i}" not in n:
            out.append(n)
            continue
        out += [n.replace("{i}", str(i)) for i in range(10) if n.replace("{i}", str(i)) in have]
    return out


def parse_strategies(data: object, source: str = "strategies", library=None,
                     layout_specific: bool = False) -> StrategyLibrary:
    """A :class:`StrategyLibrary` from the parsed YAML/JSON of a strategy file, checked against
    ``library`` (default: the classic Overcooked skill library). Skill and role names may hold
    ``{i}`` (every ingredient of ``library``; a pattern that matches no skill or role is dropped).
    ``layout_specific``: ``library`` is one layout's (OvercookedV2 builds a library per layout), so a
    weight of a skill it lacks (a recipe button where there is none) is dropped, not refused; the
    tests check that every name of a shipped file exists in some layout's library."""
    library = library if library is not None else load_builtin("overcooked")
    try:
        spec = _StrategyFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise StrategyFileError(f"{source}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    if spec.format != STRATEGY_FORMAT:
        raise StrategyFileError(f"{source}: format {spec.format!r}, expected {STRATEGY_FORMAT!r}")
    roles = {s.role for s in library.skills}
    out = []
    for name, body in spec.strategies.items():
        if name == FLAT:
            raise StrategyFileError(f"{source}: strategy name {FLAT!r} is reserved for the -hierarchy ablation")
        if isinstance(body, dict):   # {i} patterns against this library's skills and roles
            body = dict(body)
            if isinstance(body.get("weights"), dict):
                body["weights"] = {n: w for k, w in body["weights"].items() for n in _expand([k], library.names)
                                   if not (layout_specific and n not in library.names)}
            if isinstance(body.get("roles"), (list, tuple)):
                body["roles"] = _expand([str(r) for r in body["roles"]], roles)
        try:
            strat = Strategy(name=name, **body)
        except (ValidationError, TypeError) as exc:
            raise StrategyFileError(f"{source}: strategy {name!r}: {str(exc).splitlines()[0]}") from None
        for skill, w in strat.weights.items():
            if skill not in library.names:
                raise StrategyFileError(f"{source}: strategy {name!r} weights unknown skill {skill!r}")
            if w < 0:
                raise StrategyFileError(f"{source}: strategy {name!r} weight of {skill!r} is negative ({w})")
        for role in strat.roles:
            if role not in roles:
                raise StrategyFileError(f"{source}: strategy {name!r} claims unknown role {role!r}")
        out.append(strat)
    return StrategyLibrary(tuple(out))


def load_strategies(path: Optional[str | Path] = None) -> StrategyLibrary:
    """The shipped library (``path=None``) or the strategy file at ``path``."""
    if path is None:
        return _builtin()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise StrategyFileError(f"cannot read strategy file {str(p)!r}: {exc.strerror}") from None
    return parse_strategies(yaml.safe_load(text), str(p))


def strategies_for(domain: str, library) -> StrategyLibrary:
    """The shipped strategy library of a domain: ``strategies_<domain>.yaml`` beside this module
    expanded over ``library`` (a layout's skill library) where there is one, else the classic
    ``strategies.yaml``."""
    name = f"strategies_{domain}.yaml"
    found = resources.files("beliefgate.agents.overforge").joinpath(name)
    if not found.is_file():
        return _builtin()
    key = (name, tuple(library.names), tuple(s.role for s in library.skills))
    found_lib = _BY_LIBRARY.get(key)
    if found_lib is None:
        text = found.read_text(encoding="utf-8")
        found_lib = _BY_LIBRARY.setdefault(key, parse_strategies(yaml.safe_load(text), name, library,
                                                                     layout_specific=True))
    return found_lib


#: parsed domain strategy files by (file, skill names, roles)
_BY_LIBRARY: Dict[tuple, StrategyLibrary] = {}


@lru_cache(maxsize=1)
def _builtin() -> StrategyLibrary:
    text = resources.files("beliefgate.agents.overforge").joinpath("strategies.yaml").read_text(encoding="utf-8")
    return parse_strategies(yaml.safe_load(text), "strategies.yaml")
