"""V2 observations -> :class:`~beliefgate.beliefs.evidence.StepEvidence` for the gate, as the classic
observer does: the partner's consistent actions from two states, the controller's
``log pi(a | s, k)`` for every skill, the completed skill, feasibility, and the tempering weight
(0 when STAY is consistent -- nothing visible happened; ``ambiguous_weight`` for a put-down on a
counter, which staging and passing both explain).

Action inference (JaxMARL's motion): a changed cell is the move in that direction; a changed
direction in place is a move that only turned; an unchanged pose is STAY, an INTERACT (the only
action when the inventory changed) or a move into the faced cell when that cell is not free floor,
holds a teammate, or a teammate who stayed put next to it may have collided with the move.
"""

from __future__ import annotations

import numbers
from typing import Optional


from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.envs.evidence import observed_step_evidence
from beliefgate.envs.overcooked_v2.controller import V2Controller
from beliefgate.envs.overcooked_v2.layouts import ACTION_DIR, DIR_VEC, INTERACT, NUM_ACTIONS, STAY, layout_info
from beliefgate.envs.overcooked_v2.state import V2State, V2StateError, completion_matches, detect_events
from beliefgate.models.errors import InvalidParameterError
from beliefgate.skills.library import SkillLibrary

AMBIGUOUS_WEIGHT = 0.35


def infer_actions(s0: V2State, s1: V2State, player: int) -> frozenset:
    """The actions of ``player`` consistent with the step ``s0 -> s1``."""
    p0, p1 = s0.players[player], s1.players[player]
    if p0.position != p1.position:
        dx, dy = p1.position[0] - p0.position[0], p1.position[1] - p0.position[1]
        if (dx, dy) not in DIR_VEC:   # a logged pair no step can produce
            raise V2StateError(f"player {player} moves from {list(p0.position)} to {list(p1.position)} in one step")
        d = DIR_VEC.index((dx, dy))
        return frozenset({ACTION_DIR.index(d)})
    if p0.direction != p1.direction:
        return frozenset({ACTION_DIR.index(p1.direction)})
    if p0.inventory != p1.inventory:
        return frozenset({INTERACT})
    out = {STAY, INTERACT}
    front = p0.front
    others = {q.position for i, q in enumerate(s0.players) if i != player} | \
             {q.position for i, q in enumerate(s1.players) if i != player}
    # a move into a counter or a teammate keeps the pose; so does one that collided with a teammate
    # who stayed where it was next to the same cell (both moves are undone)
    contested = any(i != player and q0.position == q1.position and
                    abs(q0.position[0] - front[0]) + abs(q0.position[1] - front[1]) == 1
                    for i, (q0, q1) in enumerate(zip(s0.players, s1.players)))
    if not layout_info(s0.layout).is_floor(front) or front in others or contested:
        out.add(ACTION_DIR.index(p0.direction))
    return frozenset(out)


def completed_skills(events, library: SkillLibrary):
    """Indices of the skills of ``library`` that one player's ``events`` complete."""
    return [k for k, s in enumerate(library.skills) if s.completion and any(completion_matches(e, s.completion)
                                                                             for e in events)]


class V2Observer:
    """Turns consecutive V2 states into evidence about player ``partner``."""

    def __init__(self, layout: str, params=None, partner: int = 1, library: Optional[SkillLibrary] = None,
                 ambiguous_weight: float = AMBIGUOUS_WEIGHT, require_targets: bool = True):
        self.layout = layout_info(layout).name
        players = layout_info(self.layout).players
        if isinstance(partner, bool) or not isinstance(partner, numbers.Integral) or not 0 <= partner < players:
            raise InvalidParameterError(f"partner index must be an integer in [0, {players}) on {self.layout}, "
                                        f"got {partner!r}")
        self.partner = int(partner)
        self.controller = V2Controller.create(self.layout, library)
        self.library = self.controller.library
        self.beta = float(getattr(params, "beta", 2.0))
        self.epsilon = float(getattr(params, "epsilon", 0.1))
        self.ambiguous_weight = float(ambiguous_weight)
        self.require_targets = require_targets
        self.num_actions = NUM_ACTIONS

    @property
    def skill_names(self):
        return self.library.names

    def _state(self, value) -> V2State:
        state = value if isinstance(value, V2State) else V2State.from_json(value)
        if state.layout != self.layout:
            raise V2StateError(f"state is for layout {state.layout!r}, this gate observes {self.layout!r}")
        return state

    def evidence(self, state, next_state) -> StepEvidence:
        s0, s1 = self._state(state), self._state(next_state)
        if s1.timestep != s0.timestep + 1:
            raise V2StateError(f"states are not consecutive (timestep {s0.timestep} -> {s1.timestep})")
        actions = infer_actions(s0, s1, self.partner)
        events = detect_events(s0, s1)[self.partner]
        done = completed_skills(events, self.library)
        q = self.controller.q_values(s0, self.partner)
        feasible = self.controller.feasible(s0, self.partner, self.require_targets, q=q)
        return observed_step_evidence(actions, events, done, q, feasible, num_actions=NUM_ACTIONS, stay=STAY,
                                      ambiguous_weight=self.ambiguous_weight, beta=self.beta, epsilon=self.epsilon)
