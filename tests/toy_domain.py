"""A second game behind the domain seam, written only against beliefgate's public interfaces.

An orchard on a small open grid: an apple tree ``A`` and a berry bush ``B`` in the top corners and a
basket ``K`` at the bottom. A player standing on a tree or bush with empty hands picks its fruit
with INTERACT; one standing on the basket with fruit delivers it (+1). Players do not block each
other. Three skills -- pick an apple, pick a berry, deliver -- with roles ``apples``, ``berries`` and
``delivery`` (apples and berries complement each other). The partner's skill is a latent the
gate infers from its moves, exactly as in Overcooked: the likelihood controller is a Boltzmann
policy over one-step distance gains to the skill's target.

Nothing here imports ``beliefgate.envs.overcooked`` or ``overcooked``: it is the test that the seam is
real (tests/test_domain_seam.py plays it through the episode runner with bayes-belief and the gate).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.envs.domain import Domain, SkillStatus, UnknownLayoutError
from beliefgate.models.controllers.boltzmann import boltzmann_logprobs
from beliefgate.skills.library import SkillLibrary

MOVES = ((0, -1), (0, 1), (1, 0), (-1, 0))  # north, south, east, west
STAY, INTERACT = 4, 5
LAYOUTS = {
    "orchard": {"size": (5, 3), "A": (0, 0), "B": (4, 0), "K": (2, 2), "starts": ((1, 1), (3, 1))},
    "orchard_3p": {"size": (5, 3), "A": (0, 0), "B": (4, 0), "K": (2, 2), "starts": ((1, 1), (3, 1), (2, 1))},
}
LIBRARY = SkillLibrary.from_dict({
    "domain": "orchard", "roles": ["apples", "berries", "delivery"], "held_objects": ["apple", "berry"],
    "skills": [
        {"name": "pick_apple", "role": "apples", "requires": "empty", "targets": "A", "completion": "pickup:apple"},
        {"name": "pick_berry", "role": "berries", "requires": "empty", "targets": "B", "completion": "pickup:berry"},
        {"name": "deliver", "role": "delivery", "requires": "any", "targets": "K", "completion": "deliver"},
    ],
    "complementary": {"apples": ["berries", "delivery"], "berries": ["apples", "delivery"],
                      "delivery": ["apples", "berries"]},
})


@dataclass(frozen=True)
class Player:
    position: Tuple[int, int]
    held: Optional[str] = None


@dataclass(frozen=True)
class OrchardState:
    layout: str
    timestep: int
    score: float
    players: Tuple[Player, ...]

    def model_dump(self, mode: str = "json") -> Dict[str, Any]:
        return {"layout": self.layout, "timestep": self.timestep, "score": self.score,
                "players": [{"position": list(p.position), "held": p.held} for p in self.players]}

    def to_json(self) -> str:
        return json.dumps(self.model_dump())

    @classmethod
    def from_json(cls, data: Any) -> "OrchardState":
        d = json.loads(data) if isinstance(data, str) else data
        return cls(d["layout"], int(d["timestep"]), float(d["score"]),
                   tuple(Player(tuple(p["position"]), p["held"]) for p in d["players"]))


@dataclass
class StepResult:
    state: OrchardState
    reward: float
    done: bool
    events: List[List[str]]


def _events(prev: OrchardState, nxt: OrchardState) -> List[List[str]]:
    out: List[List[str]] = []
    for a, b in zip(prev.players, nxt.players):
        if a.held is None and b.held is not None:
            out.append([f"pickup:{b.held}"])
        elif a.held is not None and b.held is None:
            out.append(["deliver"])
        else:
            out.append([])
    return out


class OrchardEnv:
    def __init__(self, layout: str, horizon: int):
        self.layout, self.horizon = layout, horizon
        self.num_players = len(LAYOUTS[layout]["starts"])
        self.score = 0.0
        self.state = self.reset()

    def reset(self) -> OrchardState:
        self.score = 0.0
        self.state = OrchardState(self.layout, 0, 0.0, tuple(Player(p) for p in LAYOUTS[self.layout]["starts"]))
        return self.state

    def step(self, actions: Sequence[int]) -> StepResult:
        geo = LAYOUTS[self.layout]
        w, h = geo["size"]
        reward = 0.0
        players = []
        for p, a in zip(self.state.players, actions):
            pos, held = p.position, p.held
            if a < 4:
                x, y = pos[0] + MOVES[a][0], pos[1] + MOVES[a][1]
                if 0 <= x < w and 0 <= y < h:
                    pos = (x, y)
            elif a == INTERACT:
                if held is None and pos == geo["A"]:
                    held = "apple"
                elif held is None and pos == geo["B"]:
                    held = "berry"
                elif held is not None and pos == geo["K"]:
                    held, reward = None, reward + 1.0
            players.append(Player(pos, held))
        prev = self.state
        self.score += reward
        self.state = OrchardState(self.layout, prev.timestep + 1, self.score, tuple(players))
        return StepResult(self.state, reward, self.state.timestep >= self.horizon, _events(prev, self.state))


def _target(layout: str, skill: str) -> Tuple[int, int]:
    return LAYOUTS[layout][LIBRARY[skill].targets]


def _dist(a, b) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


class OrchardController:
    """Q(s, a; k) = minus the distance to skill k's target after action a (INTERACT on target: +1)."""

    def __init__(self, layout: str):
        self.layout = layout
        self.library = LIBRARY

    def q_values(self, state: OrchardState, player: int) -> np.ndarray:
        w, h = LAYOUTS[self.layout]["size"]
        pos = state.players[player].position
        q = np.zeros((LIBRARY.num_skills, 6))
        for k, skill in enumerate(LIBRARY.names):
            target = _target(self.layout, skill)
            for a in range(6):
                nxt = pos
                if a < 4:
                    x, y = pos[0] + MOVES[a][0], pos[1] + MOVES[a][1]
                    nxt = (x, y) if 0 <= x < w and 0 <= y < h else pos
                q[k, a] = -_dist(nxt, target) + (1.0 if a == INTERACT and pos == target else 0.0)
                if a == INTERACT and pos != target:
                    q[k, a] -= 1.0
        return q

    def feasible(self, state: OrchardState, player: int, require_targets: bool = True, q=None) -> np.ndarray:
        held = state.players[player].held
        return np.array([LIBRARY.requirement_met(k, held) for k in range(LIBRARY.num_skills)])


class OrchardObserver:
    def __init__(self, layout: str, params=None, partner: int = 1):
        self.layout, self.partner = layout, partner
        self.controller = OrchardController(layout)
        self.beta = float(getattr(params, "beta", 2.0))
        self.epsilon = float(getattr(params, "epsilon", 0.1))

    @property
    def skill_names(self):
        return LIBRARY.names

    def evidence(self, state, next_state) -> StepEvidence:
        s0, s1 = OrchardState.from_json(state) if not isinstance(state, OrchardState) else state, next_state
        a0, a1 = s0.players[self.partner], s1.players[self.partner]
        mask = np.zeros(6, dtype=bool)
        if a0.held != a1.held:
            mask[INTERACT] = True
        elif a0.position != a1.position:
            d = (a1.position[0] - a0.position[0], a1.position[1] - a0.position[1])
            mask[MOVES.index(d)] = True
        else:
            mask[[STAY, INTERACT]] = True
            mask[:4] = True  # a bump into the wall looks the same
        events = _events(s0, s1)[self.partner]
        done = [k for k, s in enumerate(LIBRARY.skills) if s.completion in events]
        return StepEvidence(boltzmann_logprobs(self.controller.q_values(s0, self.partner), self.beta, self.epsilon),
                            mask, 0.0 if mask.all() else 1.0, done[0] if done else None,
                            self.controller.feasible(s0, self.partner))


class OrchardExecutor:
    def __init__(self, controller: OrchardController, player: int, rng):
        self.controller, self.player, self.rng = controller, player, rng
        self.library = LIBRARY
        self.skill: Optional[int] = None

    def start_in(self, state, skill) -> None:
        self.skill = LIBRARY.index(skill)

    def stop(self) -> None:
        self.skill = None

    def update(self, state: OrchardState, my_events: Sequence[str]) -> SkillStatus:
        if self.skill is None:
            return SkillStatus.INVALID
        if LIBRARY.skills[self.skill].completion in my_events:
            return SkillStatus.COMPLETED
        if not LIBRARY.requirement_met(self.skill, state.players[self.player].held):
            return SkillStatus.INVALID
        return SkillStatus.RUNNING

    def act(self, state: OrchardState) -> int:
        q = self.controller.q_values(state, self.player)[self.skill]
        return int(np.argmax(q))


class ScriptedPicker:
    """Picks ``fruit`` and delivers it, again and again; a switcher changes fruit at ``switch_at``."""

    def __init__(self, name: str, fruit: str, switch_at: Optional[int] = None):
        self.name, self.fruit, self.switch_at = name, fruit, switch_at

    def reset(self, layout: str, player: int, seed: int) -> None:
        self.layout, self.player = layout, player
        self.controller = OrchardController(layout)
        self.skill: Optional[str] = None

    def act(self, state: OrchardState, my_events: Sequence[str] = ()) -> int:
        fruit = self.fruit
        if self.switch_at is not None and state.timestep >= self.switch_at:
            fruit = "berry" if self.fruit == "apple" else "apple"
        self.skill = "deliver" if state.players[self.player].held else f"pick_{fruit}"
        return int(np.argmax(self.controller.q_values(state, self.player)[LIBRARY.index(self.skill)]))

    def info(self) -> Dict[str, object]:
        return {"skill": self.skill, "replans": 0, "llm_calls": 0}


PARTNERS = {"apple-picker": ("apple", None), "berry-picker": ("berry", None), "apple-then-berry": ("apple", 25)}


class OrchardDomain(Domain):
    name = "orchard"
    backend = "toy"
    default_horizon = 60
    action_names = ("north", "south", "east", "west", "stay", "interact")
    delivery_events = ("deliver",)

    def layouts(self):
        return tuple(LAYOUTS)

    def resolve_layout(self, name):
        if name not in LAYOUTS:
            raise UnknownLayoutError(f"unknown orchard layout {name!r}")
        return name

    def layout_info(self, layout):
        return LAYOUTS[self.resolve_layout(layout)]

    def players(self, layout):
        return len(self.layout_info(layout)["starts"])

    def make_env(self, layout, horizon, **options):
        return OrchardEnv(self.resolve_layout(layout), horizon)

    def state_from_json(self, data):
        return data if isinstance(data, OrchardState) else OrchardState.from_json(data)

    def detect_events(self, prev, state):
        return _events(prev, state)

    def completed_skills(self, events, library):
        return [k for k, s in enumerate(library.skills) if s.completion in events]

    def make_observer(self, params=None, layout=None, partner=1, **options):
        return OrchardObserver(layout or "orchard", params, partner)

    def controller(self, layout):
        return OrchardController(self.resolve_layout(layout))

    def executor(self, controller, player, rng):
        return OrchardExecutor(controller, player, rng)

    def idle_action(self, state, player, rng):
        return STAY

    def skill_needs(self, state, player, controller, feasible=None, **options):
        held = state.players[player].held
        names = LIBRARY.names
        return {n: (1.0 if (n == "deliver") == (held is not None) else 0.0)
                for k, n in enumerate(names) if feasible is None or feasible[k]}

    def scene_text(self, state, ego):
        me = state.players[ego]
        return f"Orchard step {state.timestep}: you at {me.position} holding {me.held or 'nothing'}."

    def progress(self, state):
        return float(state.score) + 0.5 * sum(p.held is not None for p in state.players)

    def flat_state(self, state, player, **options):
        return {"held": state.players[player].held or "nothing"}

    def render_layout(self, layout):
        geo = LAYOUTS[self.resolve_layout(layout)]
        w, h = geo["size"]
        rows = [[" "] * w for _ in range(h)]
        for key, char in (("A", "O"), ("B", "D"), ("K", "S")):  # drawn as dispensers and a serving cell
            x, y = geo[key]
            rows[y][x] = char
        return {"name": layout, "terrain": ["".join(r) for r in rows], "pots": []}

    def render_frame(self, state):
        code = {None: 0, "apple": 1, "berry": 3}
        return [state.timestep, state.score,
                [[p.position[0], p.position[1], 0, code[p.held]] for p in state.players], [], []]

    def partner_names(self):
        return tuple(PARTNERS)

    def make_partner(self, name):
        fruit, switch = PARTNERS[name]
        return ScriptedPicker(name, fruit, switch)

    def partner_restriction(self, name, layout):
        return None


DOMAIN = OrchardDomain()

