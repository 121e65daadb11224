"""Trained (PPO) players on the OvercookedV2 backend: partner files of ``kind: ppo`` and ego baselines.

A trained partner is a partner file (``format: beliefgate.v2partner/1``, ``kind: ppo``) naming a
checkpoint -- a ``policy.msgpack`` with its ``policy.json`` card, written by ``beliefgate train ppo``
-- by a path relative to the partner file. The checkpoints shipped with the package lie in
``trained/`` beside their partner files (``scripts/ship_checkpoint.py`` puts one there).

A :class:`TrainedPlayer` acts as it was trained: each step it encodes the symbolic state as
JaxMARL's observation of its seat (:func:`~.env.observations`: ``get_obs`` of the state, jitted once
per environment) and runs one jitted forward pass of its policy (sampling with a key drawn from the
episode seed, or the arg-max with ``greedy``). It announces no skill: its ground-truth skill is the
hindsight label (the skill its next interaction completes, :mod:`beliefgate.envs.hindsight`), which
the episode runner writes into the log (``skill_labels = "hindsight"``).

The policy runtime (network, policy files and cards, the jitted loader) is domain data in
:mod:`beliefgate.envs.overcooked_v2.policies`; the trainer (:mod:`beliefgate.rl`) imports it and this
domain, never the other way round.

Errors -- a missing, corrupt or foreign checkpoint (another layout or observation shape, an unknown
kind) -- are one line naming the file (``CheckpointError``, an ``InputError``: exit 2), raised when the
partner is checked or built, before any episode step.
"""

from __future__ import annotations

import hashlib
import threading
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Tuple

from pydantic import ConfigDict, Field, PrivateAttr

from beliefgate.envs.domain import PartnerLayoutError, PartnerSpecError, UnknownLayoutError, UnknownPartnerError
from beliefgate.envs.overcooked_v2.layouts import resolve_layout
from beliefgate.envs.overcooked_v2.policies.checkpoint import read_card
from beliefgate.envs.overcooked_v2.policies.loader import load_policy
from beliefgate.validation import CheckedModel

#: the loader of a checkpoint (``load_policy(path, layout=, weights=)``) and of its card
#: where the shipped checkpoints and their partner files lie (inside this package)
SHIPPED_DIR = "trained"
#: the ``kind`` of a trained partner file, and the training kinds a card may name
KIND = "ppo"
TRAINING_KINDS = ("sp", "bp", "fcp")


class TrainedPartnerSpec(CheckedModel):
    """A trained partner: a checkpoint and how to play it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    error_type = PartnerSpecError

    format: Literal["beliefgate.v2partner/1"] = "beliefgate.v2partner/1"
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    description: str = ""
    kind: Literal["ppo"] = KIND
    checkpoint: str = Field(min_length=1, description="the policy file (.msgpack, its .json card beside it), "
                            "relative to this partner file")
    greedy: bool = Field(False, description="play the arg-max action (else sample, as in training)")
    weights: Optional[Dict[str, float]] = Field(None, description="event weights of a reward-conditioned BP "
                                                "network (over its card's events)")
    group: Optional[str] = Field(None, description="report group (default: the card's training kind)")
    _source: str = PrivateAttr("builtin")
    _base: Optional[Path] = PrivateAttr(None)

    @property
    def path(self) -> Path:
        """The checkpoint file (resolved against the partner file's folder)."""
        p = Path(self.checkpoint)
        return p if p.is_absolute() or self._base is None else self._base / p

    def card(self) -> Dict[str, Any]:
        """The checkpoint's card (checked: format, kind, the fields a loader needs)."""
        if not self.path.is_file():
            raise PartnerSpecError(f"{self._source}: checkpoint {self.path}: no such policy file")
        return read_card(self.path)

    @property
    def role(self) -> str:
        """Its report group: ``group``, else the card's training kind (``sp``, ``bp``, ``fcp``)."""
        if self.group:
            return self.group
        return str(self.card()["kind"])

    @property
    def layouts(self) -> List[str]:
        return [str(self.card()["layout"])]

    def summary(self) -> Dict[str, object]:
        card = self.card()
        return {"name": self.name, "description": self.description, "kind": self.kind, "backend": "v2",
                "training": card["kind"], "group": self.group or card["kind"], "switches": False,
                "layouts": [card["layout"]], "noise": 0.0, "source": self._source,
                "checkpoint": str(self.path), "seed": card.get("seed"), "steps": card.get("steps"),
                "final_return": card.get("final_return"), "spec": self.model_dump(mode="json")}

    def digest(self) -> str:
        """A short hash of the spec and the checkpoint's bytes (changes when either does)."""
        h = hashlib.sha256(self.model_dump_json().encode())
        h.update(self.path.read_bytes() if self.path.is_file() else b"")
        return h.hexdigest()[:12]


def parse_trained(data: Dict[str, Any], source: str, base: Optional[Path]) -> TrainedPartnerSpec:
    """A trained partner spec from parsed partner-file data; its checkpoint resolved against ``base``."""
    spec = TrainedPartnerSpec.from_data(data, source)
    spec._source = source
    spec._base = base
    return spec


def read_partner_file(path: Path) -> Any:
    """The parsed contents of a partner file (YAML, or JSON by its suffix); one line naming it otherwise."""
    import json

    import yaml

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise PartnerSpecError(f"cannot read partner file {path}: {exc.strerror}") from None
    try:
        return json.loads(text) if Path(path).suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise PartnerSpecError(f"{path}: not valid {'JSON' if Path(path).suffix == '.json' else 'YAML'}: "
                               f"{exc}") from None


def shipped_specs() -> Dict[str, TrainedPartnerSpec]:
    """The partner files shipped in ``trained/`` (their checkpoints beside them)."""
    import yaml

    folder = resources.files("beliefgate.envs.overcooked_v2").joinpath(SHIPPED_DIR)
    out: Dict[str, TrainedPartnerSpec] = {}
    if not folder.is_dir():
        return out
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith((".yaml", ".yml")):
            spec = parse_trained(yaml.safe_load(entry.read_text()), f"{SHIPPED_DIR}/{entry.name}",
                                 Path(str(folder)))
            spec._source = "builtin"
            out[spec.name] = spec
    return out


# ---------------------------------------------------------------- policies
_POLICIES: Dict[Tuple, Any] = {}
_LOCK = threading.Lock()


def load(path: Path, layout: Optional[str] = None, weights: Optional[Dict[str, float]] = None):
    """The policy in ``path`` (checked against ``layout`` when given), loaded and jitted once per
    process per file contents: every later episode reuses the compiled forward pass."""
    path = Path(path)
    stat = path.stat() if path.is_file() else None
    key = (str(path.resolve()), stat.st_mtime_ns if stat else None, stat.st_size if stat else None,
           layout, tuple(sorted((weights or {}).items())))
    found = _POLICIES.get(key)
    if found is None:
        found = load_policy(path, layout=layout, weights=weights)
        with _LOCK:
            _POLICIES.setdefault(key, found)
            found = _POLICIES[key]
    return found


def card_layout(path: Path, card: Dict[str, Any]) -> str:
    """The card's layout as this domain names it; one line naming the file when it has no such layout."""
    try:
        return resolve_layout(str(card["layout"]))
    except UnknownLayoutError:
        raise PartnerSpecError(f"{path}: trained on layout {card['layout']!r}, which the v2 backend does not "
                               "have") from None


def check_spec(spec: TrainedPartnerSpec) -> None:
    """Load ``spec``'s checkpoint against its card's layout (corrupt, foreign or unknown kind: one
    line naming the file)."""
    card = spec.card()
    load(spec.path, layout=card_layout(spec.path, card), weights=spec.weights)


class TrainedPlayer:
    """A trained policy playing one seat (partner or ego)."""

    #: the log's skill column for this seat holds hindsight labels (written after the episode)
    skill_labels = "hindsight"

    def __init__(self, name: str, path: Path, greedy: bool = False, weights: Optional[Dict[str, float]] = None):
        self.name = name
        self.path = Path(path)
        self.greedy = bool(greedy)
        self.weights = weights
        card = read_card(self.path)
        self.card = card
        self.layout = card_layout(self.path, card)
        self.policy = load(self.path, layout=self.layout, weights=weights)

    def reset(self, layout: str, player: int, seed: int) -> None:
        import jax

        canonical = self._layout(layout)
        if canonical != self.layout:
            raise PartnerLayoutError(f"{self.name} ({self.path}) was trained on {self.layout}, not {canonical}")
        self.player = int(player)
        self.key = jax.random.PRNGKey(int(seed))
        self.steps = 0

    def act(self, state, my_events=()) -> int:
        import jax

        from beliefgate.envs.overcooked_v2.env import observations

        twin = self._twin
        obs = observations(state)[self.player] if twin is None else twin.observe(state, self.player)
        self.steps += 1
        if self.greedy:
            action = self.policy(obs)
        else:
            self.key, sub = jax.random.split(self.key)
            action = self.policy(obs, key=sub, greedy=False)
        return action if twin is None else twin.action(action)

    def info(self) -> Dict[str, object]:
        return {"skill": None, "replans": 0, "llm_calls": 0, "policy": self.card["kind"]}

    def _layout(self, layout: str) -> str:
        """The ``v2/`` layout ``layout`` plays as. Another domain's layout plays through that domain's
        ``jaxmarl_twin(layout) -> (v2 layout, observe(state, player), action(a))`` (the classic
        kitchens: :mod:`beliefgate.envs.overcooked.jaxmarl_bridge`), which then encodes its states
        and maps the policy's actions to its own."""
        self._twin = None
        try:
            return resolve_layout(layout)
        except UnknownLayoutError:
            from beliefgate.envs.domain import domain_for_layout

            find = getattr(domain_for_layout(layout), "jaxmarl_twin", None)
            if find is None:
                raise PartnerLayoutError(f"{self.name} ({self.path}) plays JaxMARL layouts; {layout} has no "
                                         "JaxMARL encoding") from None
            self._twin = find(layout)
            return self._twin[0]


def make_player(spec: TrainedPartnerSpec) -> TrainedPlayer:
    return TrainedPlayer(spec.name, spec.path, spec.greedy, spec.weights)


# ---------------------------------------------------------------- ego baselines (the agent table)
def _find(option: str) -> TrainedPartnerSpec | Path:
    specs = shipped_specs()
    if option in specs:
        return specs[option]
    path = Path(option)
    if path.suffix in (".yaml", ".yml", ".json") and path.is_file():
        data = read_partner_file(path)
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise PartnerSpecError(f"{path}: not a trained partner file (kind: {KIND})")
        return parse_trained(data, str(path), path.parent)
    if path.suffix == ".msgpack" or path.is_dir():
        file = path / "policy.msgpack" if path.is_dir() else path
        if not file.is_file():
            raise PartnerSpecError(f"ppo:{option}: no such policy file {file}")
        return file
    raise UnknownPartnerError(f"ppo:{option}: not a shipped trained partner ({', '.join(specs) or 'none'}) "
                              "nor a policy file (.msgpack), run folder or partner file")


def ppo_agent(option: str) -> TrainedPlayer:
    """``ppo:<name-or-path>``: a shipped trained partner's policy, a partner file, a policy file or a
    run folder, as the ego (sampling its actions, as it was trained)."""
    found = _find(option)
    if isinstance(found, TrainedPartnerSpec):
        player = make_player(found)
    else:
        player = TrainedPlayer(f"ppo:{option}", found)
    player.name = f"ppo:{option}"
    return player


def fcp_specs(layout: str) -> List[TrainedPartnerSpec]:
    """The shipped FCP checkpoints of ``layout`` (canonical name), by name."""
    canonical = resolve_layout(layout)
    return [s for s in shipped_specs().values() if s.card()["kind"] == "fcp" and s.layouts == [canonical]]


def fcp_agent(option: str) -> TrainedPlayer:
    """``fcp:<layout>``: the shipped FCP ego of a ``v2/`` layout (the first by name when several)."""
    specs = fcp_specs(option)
    if not specs:
        have = sorted({s.layouts[0] for s in shipped_specs().values() if s.card()["kind"] == "fcp"})
        raise UnknownPartnerError(f"fcp:{option}: no FCP checkpoint is shipped for {resolve_layout(option)} "
                                  f"(shipped for: {', '.join(have) or 'none yet'}; use ppo:PATH for a run of your own)")
    player = make_player(specs[0])
    player.name = f"fcp:{option}"
    return player


def ppo_digest(option: str) -> str:
    """A short hash of what ``ppo:<option>`` plays; checks the checkpoint (grids: before any episode)."""
    found = _find(option)
    if isinstance(found, TrainedPartnerSpec):
        check_spec(found)
        return found.digest()
    card = read_card(found)
    load(found, layout=card_layout(found, card))
    return hashlib.sha256(found.read_bytes()).hexdigest()[:12]


def fcp_digest(option: str) -> str:
    specs = fcp_specs(option)
    if not specs:
        fcp_agent(option)   # raises the error naming what is shipped
    check_spec(specs[0])
    return specs[0].digest()


__all__ = ["TrainedPartnerSpec", "TrainedPlayer", "parse_trained", "shipped_specs", "check_spec", "make_player",
           "ppo_agent", "fcp_agent", "ppo_digest", "fcp_digest", "KIND", "TRAINING_KINDS"]
