"""Scripted partner population with the ground-truth active skill at every step.

A partner is *data*: a :class:`PartnerSpec` (pydantic, loaded from a YAML or JSON
file or built in Python) names one or more *styles* -- preference weights over the
skills it chooses between, plus a few behaviour switches -- and an optional schedule
of mid-episode style changes whose times are drawn (seeded) inside a window. The
partner executes its skills through the shared
:class:`~beliefgate.envs.overcooked.executor.Executor`, so its active skill is known
at every step; every partner is also usable as an ego agent.

Partners are found by name (the Python-defined originals and the shipped
behaviour-preferring population in ``partner_data/``) or by the path of a partner
file (any name ending in ``.yaml``, ``.yml`` or ``.json``)::

    name: my-partner
    description: fetches dishes, then turns to onions
    group: logistics
    horizon: 400                       # the episode length the switch windows are written for
    styles:
      plating: {weights: {pickup_dish: 4.0, pickup_onion: 1.0}, eager_plating: true}
      cooking: {weights: {pickup_dish: 0.25, pickup_onion: 1.0}}
    start: plating                     # default: the first style
    switches:
      - {window: [60, 140], to: cooking}    # switch at a step drawn uniformly in [60, 140]
      - {window: [180, 260], to: plating}

How a style chooses (the weights): at every choice point the useful, reachable skills
compete with probability proportional to their weights; a skill of weight 0 is only a
fallback (tried when nothing of positive weight can start). The choice points are

* empty hands: ``pickup_onion`` vs ``pickup_dish`` (default weights 1, 1);
* holding an onion: ``put_onion_in_pot`` vs ``place_obj_on_counter`` (default 1, 0:
  a positive staging weight hands onions over on counters);

a dish is always used on a soup when one is ready or cooking, and a soup always
delivered when it can be (a staged soup is lost: no skill picks one up), with
``place_obj_on_counter`` as their fallback.

Bad files raise a :class:`PartnerSpecError` (an :class:`~beliefgate.errors.InputError`)
naming the field, before any episode: :class:`UnknownPartnerFieldError`,
:class:`PartnerWeightError`, :class:`SwitchWindowError`, :class:`UnknownPartnerSkillError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterator, List, Literal, Optional, Sequence, Tuple

import numpy as np
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_serializer, model_validator
from pydantic_core import PydanticCustomError

from beliefgate.envs.domain import PartnerLayoutError, PartnerSpecError, UnknownPartnerError  # noqa: F401 (re-exported)
from beliefgate.envs.overcooked.controller import OvercookedController, controller_for
from beliefgate.envs.overcooked.executor import Executor, SkillStatus, fidget
from beliefgate.envs.overcooked.layouts import DIRECTIONS, Pos, layout_info
from beliefgate.envs.overcooked.partner_talk import TalkingMixin, TalkSpec
from beliefgate.envs.overcooked.state import POT_CAPACITY, SymbolicState
from beliefgate.limits import MAX_HORIZON
from beliefgate.validation import CheckedModel

PARTNER_FORMAT = "beliefgate.partner/1"
#: file suffixes that make a partner name a path
PARTNER_SUFFIXES = (".yaml", ".yml", ".json")
#: the skills a scripted partner chooses between, and their weights when a style does not set them
DEFAULT_WEIGHTS: Dict[str, float] = {"pickup_onion": 1.0, "pickup_dish": 1.0,
                                     "put_onion_in_pot": 1.0, "place_obj_on_counter": 0.0}
MAX_WEIGHT = 100.0


class UnknownPartnerFieldError(PartnerSpecError):
    """A partner file has a field the schema does not define."""


class PartnerWeightError(PartnerSpecError):
    """A preference weight outside [0, MAX_WEIGHT] (or not finite)."""


class SwitchWindowError(PartnerSpecError):
    """A switch window that is empty, overlaps another, or lies outside the horizon."""


def layout_restriction(name: str, layout: str) -> Optional[str]:
    """Why partner ``name`` does not play on ``layout`` (its spec lists other layouts), or ``None``
    (it plays there, or ``name`` is not a scripted partner). ``layout`` is a classic name."""
    spec = PARTNERS.get(name) if isinstance(name, str) else None
    if spec is not None and spec.layouts and layout not in spec.layouts:
        return f"it only plays {', '.join(spec.layouts)}"
    return None


class UnknownPartnerSkillError(PartnerSpecError):
    """A weight for a skill the skill library lacks (or one the scripted partner never chooses)."""


@lru_cache(maxsize=None)
def _library_skills() -> Tuple[str, ...]:
    from beliefgate.skills import load_builtin

    return load_builtin("overcooked").names


class PartnerModel(CheckedModel):
    """Base of the partner file's models: a bad value is a :class:`PartnerSpecError` listing
    every error, of the subclass its kind names (the first error of a kind picks it)."""

    error_type = PartnerSpecError
    error_kinds = {"extra_forbidden": UnknownPartnerFieldError, "partner_weight": PartnerWeightError,
                   "switch_window": SwitchWindowError, "partner_skill": UnknownPartnerSkillError}
    all_errors = True


class PartnerStyle(PartnerModel):
    """How a partner chooses while this style is active."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: Dict[str, float] = Field(default_factory=dict, description=(
        "preference weight per skill at its choice point (0..100; missing skills take DEFAULT_WEIGHTS)"))
    stage_extra_onions: bool = Field(False, description="fetch onions beyond the pots' needs and stage them on counters")
    eager_plating: bool = Field(False, description="fetch a dish as soon as a pot holds two onions")
    pass_on_counters: bool = Field(False, description="put items down only on counters shared by two floor regions")

    @field_validator("weights", mode="before")
    @classmethod
    def _weights(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        skills = _library_skills()
        for skill, w in v.items():
            if skill not in skills:
                raise PydanticCustomError("partner_skill", "'{skill}' is not a skill of the overcooked library ({known})",
                                          {"skill": skill, "known": ", ".join(skills)})
            if skill not in DEFAULT_WEIGHTS:
                raise PydanticCustomError(
                    "partner_skill", "'{skill}' is never chosen against another skill by a scripted partner; "
                    "weights apply to {choosable}", {"skill": skill, "choosable": ", ".join(DEFAULT_WEIGHTS)})
            if isinstance(w, bool) or not isinstance(w, (int, float)):
                raise PydanticCustomError("partner_weight", "{skill}: a weight must be a number, got {w}",
                                          {"skill": skill, "w": repr(w)})
            if not (0.0 <= float(w) <= MAX_WEIGHT):
                raise PydanticCustomError("partner_weight", "{skill}: weight {w} is outside [0, {mx}]",
                                          {"skill": skill, "w": repr(w), "mx": f"{MAX_WEIGHT:g}"})
        return {k: float(w) for k, w in v.items()}

    def weight(self, skill: str) -> float:
        return self.weights.get(skill, DEFAULT_WEIGHTS[skill])

    @property
    def prefer(self) -> Tuple[float, float]:
        """(onion, dish) weights of the empty-handed choice."""
        return self.weight("pickup_onion"), self.weight("pickup_dish")


class SwitchSpec(PartnerModel):
    """A mid-episode style change at a step drawn uniformly in ``window`` (inclusive)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window: Tuple[int, int] = Field(description="[first, last] step at which the switch may happen (inclusive)")
    to: str = Field(min_length=1, description="name of the style switched to")
    trigger: Literal["time", "choice"] = Field("time", description=(
        "'time': switch at the drawn step; 'choice': from the drawn step on, switch at the first step at which the "
        "new style's weights favour another useful skill than the running one, at the window's last step at the latest"))

    @field_validator("window")
    @classmethod
    def _window(cls, v: Tuple[int, int]) -> Tuple[int, int]:
        lo, hi = v
        if lo < 1 or hi < lo:
            raise PydanticCustomError("switch_window", "window {v} must satisfy 1 <= first <= last", {"v": list(v)})
        return v


class PartnerSpec(PartnerModel):
    """A scripted partner: named styles, a starting style, and an optional switch schedule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str = Field(PARTNER_FORMAT, description=f"file format tag ({PARTNER_FORMAT})")
    name: str = Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    group: Optional[str] = Field(None, min_length=1, description="report group (default: from the starting weights)")
    styles: Dict[str, PartnerStyle] = Field(min_length=1, description="named styles")
    start: Optional[str] = Field(None, description="the starting style (default: the first one)")
    switches: List[SwitchSpec] = Field(default_factory=list, description="style changes, in time order")
    horizon: int = Field(400, ge=2, le=MAX_HORIZON, description="episode length the switch windows are written for")
    noise: float = Field(0.0, ge=0.0, le=1.0, description="probability of replacing an action by a random move")
    layouts: Optional[List[str]] = Field(None, min_length=1, description="layouts it plays (default: all)")
    talk: Optional[TalkSpec] = Field(None, description="what it says and how it answers (partner_talk.py)")

    _source: Optional[str] = PrivateAttr(None)
    #: one of the package's own data files (used by name), not a file a user gave by path
    _shipped: bool = PrivateAttr(False)

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        # a partner without a talk block dumps (and so fingerprints) exactly as before the block existed
        out = handler(self)
        if isinstance(out, dict) and out.get("talk", 0) is None:
            del out["talk"]
        return out

    @field_validator("format")
    @classmethod
    def _format(cls, v: str) -> str:
        if v != PARTNER_FORMAT:
            raise ValueError(f"unsupported partner format {v!r}; this version reads {PARTNER_FORMAT!r}")
        return v

    @field_validator("layouts")
    @classmethod
    def _layouts(cls, v: Optional[List[str]]) -> Optional[List[str]]:
        if v is None:
            return v
        from beliefgate.envs.overcooked.layouts import UnknownLayoutError, resolve_layout

        out = []
        for name in v:
            try:
                out.append(resolve_layout(name))
            except UnknownLayoutError as exc:
                raise ValueError(str(exc)) from None
        return out

    @model_validator(mode="after")
    def _schedule(self) -> "PartnerSpec":
        names = list(self.styles)
        if self.start is not None and self.start not in self.styles:
            raise ValueError(f"start: no style named {self.start!r} (styles: {', '.join(names)})")
        current = self.start_style_name
        last = 0
        for i, sw in enumerate(self.switches):
            lo, hi = sw.window
            if sw.to not in self.styles:
                raise ValueError(f"switches.{i}.to: no style named {sw.to!r} (styles: {', '.join(names)})")
            if sw.to == current:
                raise ValueError(f"switches.{i}.to: {sw.to!r} is already the active style at that point")
            if hi >= self.horizon:
                raise PydanticCustomError(
                    "switch_window", "switches.{i}.window: {w} lies outside the horizon {h} (steps 1..{hm})",
                    {"i": i, "w": [lo, hi], "h": self.horizon, "hm": self.horizon - 1})
            if lo <= last and i > 0:
                raise PydanticCustomError(
                    "switch_window", "switches.{i}.window: {w} starts before the previous window ends (step {last})",
                    {"i": i, "w": [lo, hi], "last": last})
            last, current = hi, sw.to
        return self

    # ------------------------------------------------------------------ views
    @property
    def start_style_name(self) -> str:
        return self.start if self.start is not None else next(iter(self.styles))

    @property
    def start_style(self) -> PartnerStyle:
        return self.styles[self.start_style_name]

    @property
    def prefer(self) -> Tuple[float, float]:
        """(onion, dish) weights of the starting style."""
        return self.start_style.prefer

    @property
    def switches_style(self) -> bool:
        return bool(self.switches)

    @property
    def source(self) -> Optional[str]:
        """The file this spec was read from (``None`` for the Python-defined partners)."""
        return self._source

    def check_horizon(self, horizon: int) -> None:
        """Raise :class:`SwitchWindowError` if an episode of ``horizon`` steps ends before a switch window does.

        Applies to partners read from a file given by path; registered partners (the
        Python-defined originals and the shipped population, used by name) are written for
        400-step episodes and in shorter ones simply make the switches the episode reaches.
        """
        if self._source is None or self._shipped:
            return
        for i, sw in enumerate(self.switches):
            if sw.window[1] >= horizon:
                raise SwitchWindowError(
                    f"partner {self.name!r} ({self._source}): switches.{i}.window {list(sw.window)} lies outside "
                    f"the episode horizon {horizon} (steps 1..{horizon - 1})")

    def summary(self) -> Dict[str, object]:
        """One row of ``beliefgate partners --json``: the headline fields and the whole spec."""
        return {
            "name": self.name,
            "description": self.description,
            "kind": "scripted",
            "group": self.group,
            "switches": bool(self.switches),
            "layouts": list(self.layouts) if self.layouts else None,
            "noise": self.noise,
            "source": self._source or "builtin",
            "spec": self.model_dump(mode="json"),
        }


def parse_partner(data: Any, source: str = "partner") -> PartnerSpec:
    """Validate already-parsed partner data (a mapping); errors name ``source`` and the field."""
    if not isinstance(data, dict):
        raise PartnerSpecError(f"{source}: a partner must be a mapping with at least name and styles, "
                               f"got {type(data).__name__}")
    spec = PartnerSpec.from_data(data, source)
    spec._source = source
    return spec


def load_partner(path: str | Path) -> PartnerSpec:
    """Read a partner file (``.yaml``/``.yml`` or ``.json``) and validate it."""

    path = Path(path)
    if path.suffix.lower() not in PARTNER_SUFFIXES:
        raise PartnerSpecError(f"partner file {path}: the name must end in {', '.join(PARTNER_SUFFIXES)}")
    from beliefgate.fileio import DataSyntaxError, parse_data, read_text

    text = read_text(path, PartnerSpecError, "partner file")
    is_json = path.suffix.lower() == ".json"
    try:
        data = parse_data(text, "json" if is_json else "yaml")
    except DataSyntaxError as exc:
        raise PartnerSpecError(f"{path}: not valid {'JSON' if is_json else 'YAML'}: {exc}") from None
    return parse_partner(data, str(path))


def partner_key(name: str) -> str:
    """What makes two partner names the same partner: a file's resolved path (``./p.yaml`` and
    ``../x/p.yaml`` or a symlink to it are one file), otherwise the name itself."""
    if not is_partner_path(name):
        return name
    try:
        return str(Path(name).resolve())
    except (OSError, RuntimeError):  # unreadable or a link loop: reported when the file is read
        return name


def is_partner_path(name: str) -> bool:
    """Does ``name`` refer to a partner file (rather than a registered name)? A name with an
    agent scheme (``policy-tree:tree.json``, ``bc:...``) is an agent spec, never a file."""
    return (isinstance(name, str) and name.lower().endswith(PARTNER_SUFFIXES)
            and _AGENT_SCHEME.match(name) is None)


#: ``scheme:`` at the start of an agent spec (a partner file's own path never has one)
_AGENT_SCHEME = re.compile(r"[a-z][a-z0-9_-]*:")


def _style(onion: float, dish: float, **flags) -> PartnerStyle:
    return PartnerStyle(weights={"pickup_onion": onion, "pickup_dish": dish}, **flags)


_SOURCING = _style(4.0, 0.5, stage_extra_onions=True)
_PLATING = _style(0.5, 4.0, eager_plating=True)

#: the Python-defined originals (their behaviour is unchanged since before partners were data)
_BUILTIN: Dict[str, PartnerSpec] = {
    p.name: p
    for p in [
        PartnerSpec(name="onion-sourcer", description="ingredient-preferring: fetches and pots onions, stages spare "
                    "onions on counters", styles={"sourcing": _SOURCING}),
        PartnerSpec(name="plater", description="plating-preferring: fetches dishes early and scoops soups",
                    styles={"plating": _PLATING}),
        PartnerSpec(name="server", description="serving-preferring: plates and delivers ready soups, helps with "
                    "onions otherwise", styles={"serving": _style(1.0, 3.0)}),
        PartnerSpec(name="balanced", description="no role preference: does whatever the kitchen needs next",
                    styles={"balanced": _style(1.0, 1.0)}),
        PartnerSpec(name="counter-passer", description="passes onions and dishes over shared counters "
                    "(forced_coordination)", styles={"passing": _style(2.0, 1.0, pass_on_counters=True)},
                    layouts=["forced_coordination"]),
        PartnerSpec(name="noisy", description="balanced, but 20% of its actions are random moves",
                    styles={"balanced": _style(1.0, 1.0)}, noise=0.2),
        PartnerSpec(name="switch-sourcer-to-plater", description="starts ingredient-preferring, switches to plating "
                    "at a seeded step", styles={"sourcing": _SOURCING, "plating": _PLATING},
                    switches=[SwitchSpec(window=(100, 250), to="plating")]),
        PartnerSpec(name="switch-plater-to-sourcer", description="starts plating-preferring, switches to "
                    "ingredients at a seeded step", styles={"plating": _PLATING, "sourcing": _SOURCING},
                    switches=[SwitchSpec(window=(100, 250), to="sourcing")]),
    ]
}

PARTNER_DATA = "partner_data"
#: the shipped partners that talk (a folder of its own: ``partner_data`` is the BP switching population)
TALK_DATA = "partner_talk_data"


def _shipped_folder(name: str, taken) -> Dict[str, PartnerSpec]:
    folder = resources.files("beliefgate.envs.overcooked").joinpath(name)
    out: Dict[str, PartnerSpec] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.lower().endswith(PARTNER_SUFFIXES):
            continue
        with resources.as_file(entry) as path:
            spec = load_partner(path)
        spec._source = f"{name}/{entry.name}"
        spec._shipped = True
        if spec.name in out or spec.name in taken:
            raise PartnerSpecError(f"{spec._source}: partner name {spec.name!r} is used twice")
        out[spec.name] = spec
    return out


@lru_cache(maxsize=None)
def shipped_partners() -> Dict[str, PartnerSpec]:
    """The partner files shipped in ``beliefgate/envs/overcooked/partner_data/`` by name (sorted)."""
    return _shipped_folder(PARTNER_DATA, _BUILTIN)


@lru_cache(maxsize=None)
def talking_partners() -> Dict[str, PartnerSpec]:
    """The talking partners shipped in ``beliefgate/envs/overcooked/partner_talk_data/`` by name (sorted)."""
    return _shipped_folder(TALK_DATA, {**_BUILTIN, **shipped_partners()})


class PartnerRegistry(Mapping):
    """Partners by name, plus partner files by path.

    Iterating gives the registered names (the originals, then the shipped population);
    ``name in PARTNERS`` is also true for any name ending in a partner-file suffix, and
    ``PARTNERS[path]`` reads and validates that file (cached by path and modification
    time), raising :class:`PartnerSpecError` for a missing or bad file.
    """

    def __init__(self, builtin: Dict[str, PartnerSpec]):
        self._builtin = builtin
        self._files: Dict[Tuple[str, float], PartnerSpec] = {}

    def _names(self) -> Dict[str, PartnerSpec]:
        return {**self._builtin, **shipped_partners(), **talking_partners()}

    def __getitem__(self, name: str) -> PartnerSpec:
        if not isinstance(name, str):
            raise KeyError(name)
        if name in self._builtin:
            return self._builtin[name]
        shipped = shipped_partners()
        if name in shipped:
            return shipped[name]
        talking = talking_partners()
        if name in talking:
            return talking[name]
        if is_partner_path(name):
            path = Path(name)
            try:
                st = path.stat()  # a rewrite within one clock tick still changes the size or the inode
                key = (str(path.resolve()), st.st_mtime_ns, st.st_size, st.st_ino)
            except OSError as exc:
                raise PartnerSpecError(f"cannot read partner file {name}: {exc.strerror or exc}") from None
            except RuntimeError:  # Python < 3.13 raises this for a symlink loop
                raise PartnerSpecError(f"cannot read partner file {name}: a symbolic link loop") from None
            if key not in self._files:
                self._files[key] = load_partner(path)
            return self._files[key]
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._builtin or name in shipped_partners()
                                          or name in talking_partners() or is_partner_path(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


PARTNERS = PartnerRegistry(_BUILTIN)


def get_partner(name: str) -> PartnerSpec:
    """The partner called ``name``, or read from the partner file at path ``name``."""
    try:
        return PARTNERS[name]
    except KeyError:
        raise UnknownPartnerError(f"unknown partner {name!r}; available: {', '.join(PARTNERS)} "
                                  f"(or the path of a partner file)") from None


@lru_cache(maxsize=None)
def _regions(layout: str) -> Tuple[FrozenSet[Pos], ...]:
    """Connected components of the floor (each :meth:`LayoutInfo.region`)."""
    info = layout_info(layout)
    left, comps = set(info.floor), []
    while left:
        comp = info.region(min(left))
        comps.append(comp)
        left -= comp
    return tuple(comps)


@lru_cache(maxsize=None)
def shared_counters(layout: str) -> FrozenSet[Pos]:
    """Counters adjacent to two floor regions (passing places); all counters if the floor is one region."""
    info = layout_info(layout)
    regions = _regions(layout)
    if len(regions) == 1:
        return frozenset(info.counters)
    shared = set()
    for c in info.counters:
        touching = {i for i, r in enumerate(regions) for d in DIRECTIONS if (c[0] + d[0], c[1] + d[1]) in r}
        if len(touching) >= 2:
            shared.add(c)
    return frozenset(shared)


class ScriptedAgent:
    """A scripted player: chooses skills by rule, executes them, logs its active skill."""

    replans = 0
    llm_calls = 0

    def __init__(self, spec: PartnerSpec):
        self.spec = spec
        self.name = spec.name

    # ------------------------------------------------------------------ API
    def reset(self, layout: str, player: int, seed: int) -> None:
        self.layout = layout
        self.player = player
        self.rng = np.random.default_rng(seed)
        self.controller: OvercookedController = controller_for(layout)
        self.library = self.controller.library
        self.executor = Executor(self.controller, player, self.rng)
        self.active: Optional[int] = None
        self.style_name = self.spec.start_style_name
        self.style: PartnerStyle = self.spec.start_style
        #: the drawn step of every scheduled switch (in schedule order) and how many have happened
        self.switch_times: List[int] = [int(self.rng.integers(lo, hi + 1)) for lo, hi in
                                        (sw.window for sw in self.spec.switches)]
        self.switches_done = 0
        self.my_drops: set = set()
        self.skill_choices = 0

    @property
    def active_skill(self) -> Optional[str]:
        return self.library.names[self.active] if self.active is not None else None

    def act(self, state: SymbolicState, my_events: Sequence[str] = ()) -> int:
        """Choose this step's action; ``my_events`` are this player's events of the last step."""
        self._note_drops(state, my_events)
        while self.switches_done < len(self.switch_times) and self._switch_due(state):
            self._switch(state, self.spec.switches[self.switches_done].to)
            self.switches_done += 1
        if self.active is not None:
            status = self.executor.update(state, my_events)
            if status is not SkillStatus.RUNNING:
                self.active = None
        if self.active is None:
            self._choose(state)
        action = self.executor.act(state) if self.active is not None else self._idle_action(state)
        if self.spec.noise > 0 and self.rng.random() < self.spec.noise:
            action = int(self.rng.integers(0, 4))
        return action

    def info(self) -> Dict[str, object]:
        return {"skill": self.active_skill, "replans": 0, "llm_calls": 0}

    @property
    def switch_at(self) -> Optional[int]:
        """The drawn step of the first scheduled switch (``None`` without switches)."""
        return self.switch_times[0] if self.switch_times else None

    def _switch_due(self, state: SymbolicState) -> bool:
        sw = self.spec.switches[self.switches_done]
        t = state.timestep
        if t < self.switch_times[self.switches_done]:
            return False
        if sw.trigger == "time" or t >= sw.window[1]:
            return True
        return self._would_change(state, self.spec.styles[sw.to])

    def _would_change(self, state: SymbolicState, new: PartnerStyle) -> bool:
        """Would ``new`` prefer another useful skill to the one running now (the 'choice' trigger)?"""
        if self.active is None:
            return False
        skill = self.library.names[self.active]
        held = state.players[self.player].held
        old, self.style = self.style, new  # usefulness under the new style's options
        try:
            if skill == "pickup_onion":
                return new.weight("pickup_dish") > new.weight("pickup_onion") and self._dish_useful(state)
            if skill == "pickup_dish":
                return new.weight("pickup_onion") > new.weight("pickup_dish") and self._onion_useful(state)
            if skill == "put_onion_in_pot":
                return new.weight("place_obj_on_counter") > new.weight("put_onion_in_pot")
            if skill == "place_obj_on_counter" and held == "onion":
                return new.weight("put_onion_in_pot") > new.weight("place_obj_on_counter")
            return False
        finally:
            self.style = old

    def _switch(self, state: SymbolicState, style: str) -> None:
        """A hidden switch: drop the current skill mid-way and choose under the new style."""
        self.style_name, self.style = style, self.spec.styles[style]
        self.active = None
        self.executor.stop()
        held = state.players[self.player].held
        onion_w, dish_w = self.style.prefer
        # an item of the abandoned role is put down to free the hands for the new one
        if (held == "onion" and dish_w > onion_w) or (held == "dish" and onion_w > dish_w):
            self._start("place_obj_on_counter", state)

    # ------------------------------------------------------------- choosing
    def _note_drops(self, state: SymbolicState, my_events: Sequence[str]) -> None:
        me = state.players[self.player]
        if any(e.startswith("drop:") for e in my_events):
            self.my_drops.add(me.facing)
        on_counters = set(state.counter_dict())
        self.my_drops &= on_counters

    def _start(self, skill: str, state: SymbolicState, allowed=None, override=None) -> bool:
        k = self.library.index(skill)
        excluded = self.my_drops if skill.startswith("pickup") else ()
        if not self.library.requirement_met(k, state.players[self.player].held):
            return False
        if not self.executor.reachable(state, k, allowed, excluded, override):
            return False
        self.executor.start(k, allowed, excluded, override)
        self.active = k
        self.skill_choices += 1
        return True

    def _choose(self, state: SymbolicState) -> None:
        held = state.players[self.player].held
        passing = shared_counters(self.layout) if (self.style.pass_on_counters or len(_regions(self.layout)) > 1) else None
        if held == "onion":
            pot_w, stage_w = self.style.weight("put_onion_in_pot"), self.style.weight("place_obj_on_counter")
            if stage_w > 0 and not self._teammate_can_pot(state):
                stage_w = 0.0  # nobody to hand over to (forced_coordination's pot side): pot it
            if stage_w > 0 and pot_w > 0 and self.rng.random() < stage_w / (pot_w + stage_w):
                # a staging style hands the onion over on a counter
                if self._start("place_obj_on_counter", state, allowed=passing):
                    return
            elif pot_w == 0 and stage_w > 0 and self._start("place_obj_on_counter", state, allowed=passing):
                return
            if not self._start("put_onion_in_pot", state):
                self._start("place_obj_on_counter", state, allowed=passing)
            return
        if held == "dish":
            if self._start("fill_dish_with_soup", state):
                return
            # no soup cooking yet: wait by a pot, unless onions are needed and nobody brings them
            onions_missing = any(not p.full for p in state.pots) and self._others_holding(state, "onion") == 0
            if not onions_missing and self._start("fill_dish_with_soup", state, override=self.layout_pots()):
                return  # (no pot holds anything yet: wait by any pot)
            self._start("place_obj_on_counter", state, allowed=passing)
            return
        if held == "soup":
            if not self._start("deliver_soup", state):
                self._start("place_obj_on_counter", state, allowed=passing)
            return
        if held is not None:  # e.g. a tomato: put it away
            self._start("place_obj_on_counter", state)
            return
        onion_w, dish_w = self.style.prefer
        options = []
        if self._onion_useful(state):
            options.append(("pickup_onion", onion_w))
        if self._dish_useful(state):
            options.append(("pickup_dish", dish_w))
        fallbacks = [name for name, w in options if w == 0]  # weight 0: only when nothing else can start
        options = [(name, w) for name, w in options if w > 0]
        while options:
            weights = np.array([w for _, w in options], dtype=float)
            i = int(self.rng.choice(len(options), p=weights / weights.sum()))
            if self._start(options[i][0], state):
                return
            options.pop(i)
        for name in fallbacks:
            if self._start(name, state):
                return
        self.active = None  # nothing useful: idle this step

    def _idle_action(self, state: SymbolicState) -> int:
        """Nothing useful to do: step away from a nearby teammate (so as not to block), else stay."""
        me = state.players[self.player].position
        others = [p.position for i, p in enumerate(state.players) if i != self.player]
        near = [o for o in others if abs(o[0] - me[0]) + abs(o[1] - me[1]) <= 2]
        if not near:
            return fidget(state, self.player, self.rng)
        info = layout_info(self.layout)

        def gap(cell):
            return min(abs(o[0] - cell[0]) + abs(o[1] - cell[1]) for o in near)

        moves = []
        for a, (dx, dy) in enumerate(DIRECTIONS):
            cell = (me[0] + dx, me[1] + dy)
            if info.is_floor(cell) and cell not in others:
                moves.append((gap(cell), a))
        if not moves:
            return fidget(state, self.player, self.rng)
        best = max(g for g, _ in moves)
        if best <= gap(me) and self.rng.random() < 0.5:
            return fidget(state, self.player, self.rng)
        return int(self.rng.choice([a for g, a in moves if g == best]))

    def layout_pots(self) -> Tuple[Pos, ...]:
        return layout_info(self.layout).pots

    def _can_reach(self, state: SymbolicState, cells, player: Optional[int] = None) -> bool:
        """Can ``player`` (default: this partner) reach one of ``cells`` (ignoring other players)?"""
        me = state.players[self.player if player is None else player]
        tables = self.controller.tables
        pose = tables.pose(me.position, me.orientation)
        idx = [tables.inter_index[c] for c in cells]
        return bool(idx) and bool(np.isfinite(tables.dist[idx, pose]).any())

    def _teammate_can_pot(self, state: SymbolicState) -> bool:
        """Can another player reach a pot? (Not on forced_coordination's supply side.)"""
        pots = self.layout_pots()
        return any(self._can_reach(state, pots, i) for i in range(len(state.players)) if i != self.player)

    def _others_holding(self, state: SymbolicState, name: str) -> int:
        return sum(1 for i, p in enumerate(state.players) if i != self.player and p.held == name)

    def _onion_useful(self, state: SymbolicState) -> bool:
        missing = sum(POT_CAPACITY - p.ingredients for p in state.pots if not p.full)
        in_flight = self._others_holding(state, "onion")
        on_counters = sum(1 for o in state.counters if o.name == "onion" and o.position not in self.my_drops)
        if self._can_reach(state, self.layout_pots()):
            need = missing - in_flight
            if self.style.weight("place_obj_on_counter") > 0 and self._teammate_can_pot(state):
                # a staging style counts the onions on counters as on their way to a pot -- while a
                # teammate can carry them there; where none can (forced_coordination's pot side)
                # they are this partner's to pot, so they do not lower its need
                need -= sum(1 for o in state.counters if o.name == "onion")
            if self.style.stage_extra_onions:
                need += max(0, 2 - on_counters)
            return need > 0
        return missing - in_flight - on_counters > 0

    def _dish_useful(self, state: SymbolicState) -> bool:
        eager_from = 2 if self.style.eager_plating else POT_CAPACITY
        coming = sum(1 for p in state.pots if p.full or p.ingredients >= eager_from)
        dishes_out = self._others_holding(state, "dish")
        on_counters = sum(1 for o in state.counters if o.name == "dish" and o.position not in self.my_drops)
        if self._can_reach(state, self.layout_pots()):
            return coming - dishes_out > 0
        return coming - dishes_out - on_counters > 0


class TalkingScriptedAgent(TalkingMixin, ScriptedAgent):
    """A scripted partner with a ``talk:`` block: proposes a split, answers, follows requests."""


def make_scripted(name: str) -> ScriptedAgent:
    spec = get_partner(name)
    return TalkingScriptedAgent(spec) if spec.talk is not None else ScriptedAgent(spec)


def check_partners(names: Sequence[str], horizon: int) -> None:
    """Validate every scripted-partner name or partner file among ``names`` for episodes of ``horizon`` steps.

    Reads each partner file (raising its :class:`PartnerSpecError`) and checks that its
    switch windows fit the horizon (:class:`SwitchWindowError`); other names are left to
    the agent registry. Call it before any episode runs.
    """
    for name in names:
        if name in PARTNERS:
            PARTNERS[name].check_horizon(horizon)


def partner_schema() -> Dict[str, Any]:
    """The JSON schema of a partner file (``beliefgate partners --schema``)."""
    return PartnerSpec.model_json_schema()
