"""Scripted V2 partners that see the recipe (the ego may not): partner files in ``partner_data/``.

A partner file (YAML or JSON, ``format: beliefgate.v2partner/1``) names a role -- ``cook`` (fetch
the recipe's ingredients, cook, plate and deliver), ``fetcher`` (only the ingredients) or ``server``
(only plates and dishes) -- the order it fetches a recipe's ingredients in, whether it is
``adaptive`` (re-reads the recipe every step, so it changes course when the recipe is resampled)
or commits to the recipe it read when it started a dish until that dish is served, an action
noise, optionally the layouts it plays, and whether it ``tells`` its teammates the recipe (an
``inform`` with ``goal`` each time the recipe it sees changes; it hears nothing).
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Tuple

import numpy as np
from pydantic import ConfigDict, Field, PrivateAttr

from beliefgate.envs.domain import PartnerSpecError, SkillStatus, UnknownPartnerError
from beliefgate.envs.overcooked_v2.controller import controller_for
from beliefgate.envs.overcooked_v2.executor import V2Executor, fidget
from beliefgate.envs.overcooked_v2.layouts import NUM_ACTIONS, layout_names, resolve_layout
from beliefgate.envs.overcooked_v2.state import V2State
from beliefgate.envs.overcooked_v2.trained_agents import (KIND as TRAINED_KIND, TrainedPartnerSpec, check_spec,
                                                          make_player, parse_trained, read_partner_file,
                                                          shipped_specs)
from beliefgate.validation import CheckedModel

FORMAT = "beliefgate.v2partner/1"


class V2PartnerSpec(CheckedModel):
    """One scripted V2 partner."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    error_type = PartnerSpecError

    format: Literal["beliefgate.v2partner/1"] = FORMAT
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    description: str = ""
    kind: Literal["scripted"] = "scripted"
    role: Literal["cook", "fetcher", "server"] = "cook"
    order: Literal["ascending", "descending"] = Field("ascending", description="the order it fetches a "
                                                      "recipe's ingredients in")
    adaptive: bool = Field(False, description="re-read the recipe every step (else commit to it per dish)")
    noise: float = Field(0.0, ge=0.0, lt=1.0, description="probability of a random action each step")
    layouts: Optional[List[str]] = Field(None, description="the v2 layouts it plays (default: all)")
    tells: bool = Field(False, description="tell the teammates the recipe each time it changes (inform with goal)")
    _source: str = PrivateAttr("builtin")

    def summary(self) -> Dict[str, object]:
        return {"name": self.name, "description": self.description, "kind": self.kind, "backend": "v2",
                "group": self.role, "switches": False, "layouts": list(self.layouts) if self.layouts else None,
                "noise": self.noise, "source": self._source, "spec": self.model_dump(mode="json")}


def _parse(data: Any, source: str, base: Optional[Path] = None) -> V2PartnerSpec | TrainedPartnerSpec:
    if not isinstance(data, dict):
        raise PartnerSpecError(f"{source}: a v2 partner must be a mapping, got {type(data).__name__}")
    kind = data.get("kind", "scripted")
    if kind == TRAINED_KIND:   # a trained policy: its checkpoint relative to the file
        return parse_trained(data, source, base)
    if kind != "scripted":
        raise PartnerSpecError(f"{source}: kind {kind!r} is not a v2 partner kind (scripted, {TRAINED_KIND})")
    spec = V2PartnerSpec.from_data(data, source)
    for name in spec.layouts or []:
        if name not in layout_names():
            raise PartnerSpecError(f"{source}: layouts: unknown v2 layout {name!r}")
    spec._source = source
    return spec


def load_partner(path: str | Path) -> V2PartnerSpec | TrainedPartnerSpec:
    """A partner file (YAML or JSON), validated (a trained one's checkpoint relative to the file)."""
    path = Path(path)
    return _parse(read_partner_file(path), str(path), path.parent)


def _shipped() -> Dict[str, V2PartnerSpec]:
    import yaml

    out: Dict[str, V2PartnerSpec] = {}
    folder = resources.files("beliefgate.envs.overcooked_v2").joinpath("partner_data")
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith((".yaml", ".yml")):
            spec = _parse(yaml.safe_load(entry.read_text()), f"partner_data/{entry.name}")
            spec._source = "builtin"
            out[spec.name] = spec
    return out


#: every shipped v2 partner: the scripted cooks, then the trained policies of ``trained/``
PARTNERS: Dict[str, V2PartnerSpec | TrainedPartnerSpec] = {**_shipped(), **shipped_specs()}


def is_partner_file(name: str) -> bool:
    """Whether ``name`` is the path of a v2 partner file (``format: beliefgate.v2partner/1``)."""
    path = Path(name)
    if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
        return False
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PartnerSpecError(f"cannot read partner file {path}: {exc.strerror}") from None
    # this backend's format tag: the file is parsed (and refused, if bad) as ours; any other file --
    # another backend's, or not text at all -- is left to the domain whose it is, which names what is wrong
    return FORMAT.encode() in data


def get_partner(name: str) -> V2PartnerSpec | TrainedPartnerSpec:
    spec = PARTNERS.get(name)
    if spec is None and is_partner_file(name):
        spec = load_partner(name)
    if spec is None:
        raise UnknownPartnerError(f"unknown v2 partner {name!r}; the v2 backend has {', '.join(PARTNERS)}")
    return spec


def check_partner(name: str) -> None:
    """Refuse, before any episode, an unknown partner or a trained one whose checkpoint does not load."""
    spec = get_partner(name)
    if isinstance(spec, TrainedPartnerSpec):
        check_spec(spec)


def file_digest(name: str) -> Optional[str]:
    """A short hash of a trained partner's spec and checkpoint bytes (grids rerun a cell when either
    changes); None for a scripted one."""
    spec = PARTNERS.get(name)
    if spec is None and is_partner_file(name):
        spec = load_partner(name)
    return spec.digest() if isinstance(spec, TrainedPartnerSpec) else None


def layout_restriction(name: str, layout: str) -> Optional[str]:
    spec = PARTNERS.get(name)
    if spec is None and is_partner_file(name):
        spec = load_partner(name)
    if spec is None or not spec.layouts or resolve_layout(layout) in spec.layouts:
        return None
    return f"it plays only {', '.join(spec.layouts)}"


def spec_digest(spec: V2PartnerSpec) -> str:
    text = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class RecipeCook:
    """A scripted partner that reads the true recipe from the state (private information)."""

    def __init__(self, spec: V2PartnerSpec):
        self.spec = spec
        self.name = spec.name

    def reset(self, layout: str, player: int, seed: int) -> None:
        self.layout = resolve_layout(layout)
        self.player = player
        self.rng = np.random.default_rng(seed)
        self.controller = controller_for(self.layout)
        self.executor = V2Executor(self.controller, player, self.rng)
        self.committed: Optional[Tuple[int, ...]] = None
        self.active_skill: Optional[str] = None
        self.recipe_changes = 0
        self._last_recipe: Optional[int] = None

    # ------------------------------------------------------------ decisions
    def _recipe(self, state: V2State) -> Tuple[int, ...]:
        if self._last_recipe is not None and state.recipe != self._last_recipe:
            self.recipe_changes += 1
        self._last_recipe = state.recipe
        if not any(p.ingredients for p in state.pots):
            self.committed = None  # no dish started: read the recipe afresh
        if self.spec.adaptive or self.committed is None:
            self.committed = tuple(state.recipe_ingredients)
        return self.committed

    def _next_ingredient(self, state: V2State, recipe: Tuple[int, ...]) -> Optional[int]:
        pots = [p for p in state.pots if p.idle and not p.full]
        if not pots:
            return None
        pot = max(pots, key=lambda p: len(p.ingredients))
        rest = list(recipe)
        for i in pot.ingredients:
            if i in rest:
                rest.remove(i)
        carried = [p.held for i, p in enumerate(state.players) if i != self.player]
        for i in list(rest):
            if f"ingredient_{i}" in carried:
                rest.remove(i)
                carried.remove(f"ingredient_{i}")
        if not rest:
            return None
        order = sorted(rest, reverse=self.spec.order == "descending")
        return order[0]

    def _wants(self, state: V2State) -> List[str]:
        """The skills it would run now, best first."""
        role = self.spec.role
        me = state.players[self.player]
        held = me.held
        recipe = self._recipe(state)
        if held == "dish":
            return ["deliver_dish", "place_on_counter"]
        if held == "plate":
            return ["plate_soup", "place_on_counter"] if any(p.ingredients for p in state.pots) else ["place_on_counter"]
        if held is not None and held.startswith("ingredient_"):
            return [f"put_{held}_in_pot", "place_on_counter"]
        wants: List[str] = []
        if state.start_cooking_interaction and role in ("cook", "fetcher") and \
                any(p.idle and (p.full or tuple(sorted(p.ingredients)) == tuple(sorted(recipe))) for p in state.pots):
            wants.append("start_cooking")   # pots cook only when started by hand
        soup = any(p.cooking or p.cooked for p in state.pots)
        plated = any(p.held in ("plate", "dish") for i, p in enumerate(state.players) if i != self.player)
        if role in ("cook", "server") and soup and not plated:
            wants.append("pickup_plate")
        if role in ("cook", "fetcher"):
            nxt = self._next_ingredient(state, recipe)
            if nxt is not None:
                wants.append(f"pickup_ingredient_{nxt}")
        if role == "server" and not wants and any(p.full for p in state.pots) and not plated:
            wants.append("pickup_plate")
        return wants

    def act(self, state: V2State, my_events=()) -> int:
        names = self.controller.library.names
        choice = None
        for skill in self._wants(state):
            if skill in names and self.executor.reachable(state, skill):
                choice = skill
                break
        if choice != self.active_skill or (choice is not None and
                                           self.executor.update(state, my_events) != SkillStatus.RUNNING):
            self.active_skill = choice
            if choice is None:
                self.executor.stop()
            else:
                self.executor.start(choice)
        if self.spec.noise > 0 and self.rng.random() < self.spec.noise:
            return int(self.rng.integers(0, NUM_ACTIONS))
        if choice is None:
            return fidget(state, self.player, self.rng)
        return self.executor.act(state)

    def info(self) -> Dict[str, object]:
        return {"skill": self.active_skill, "replans": 0, "llm_calls": 0,
                "recipe": list(self.committed) if self.committed is not None else None}


class TellingCook(RecipeCook):
    """A :class:`RecipeCook` that tells its teammates the recipe it reads whenever it changes (the
    ``tells`` option): one ``inform`` with ``goal``, sent after the step it first reads the new
    recipe. It talks on the message channel but ignores what it hears."""

    def reset(self, layout: str, player: int, seed: int) -> None:
        super().reset(layout, player, seed)
        self._told: Optional[int] = None
        self._outbox: List[Any] = []
        self.told = 0

    def act(self, state: V2State, my_events=()) -> int:
        if state.recipe != self._told:
            from beliefgate.envs.messages import Inform
            from beliefgate.envs.overcooked_v2.kitchen import recipe_name

            self._told = state.recipe
            self._outbox = [Inform(goal=recipe_name(state.recipe_ingredients))]
            self.told += 1
        return super().act(state, my_events)

    def hear(self, messages) -> None:
        """It hears nothing (a scripted convention that only tells)."""

    def messages_out(self) -> List[Any]:
        out, self._outbox = self._outbox, []
        return out

    def info(self) -> Dict[str, object]:
        return {**super().info(), "goals_told": self.told}


def make_scripted(name: str):
    """A fresh partner of ``name``: a :class:`RecipeCook` (a :class:`TellingCook` when it tells), or a
    trained policy's player."""
    spec = get_partner(name)
    if isinstance(spec, TrainedPartnerSpec):
        return make_player(spec)
    return TellingCook(spec) if spec.tells else RecipeCook(spec)
