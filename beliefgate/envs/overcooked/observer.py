"""Overcooked observations -> :class:`~beliefgate.beliefs.evidence.StepEvidence` for the Gate.

``beliefgate.envs.overcooked.overcooked_gate(layout)`` (and ``Gate.for_domain("overcooked", ...)``)
uses this: each ``observe(state, next_state)``
infers the partner's primitive action(s) from the two states, evaluates the
likelihood controller for every skill, and reads completions from the
interaction events. Tempering: a step where nothing visible happened (STAY is
consistent) is excluded (weight 0); a put-down on a counter, which several
skills can explain (staging or passing), is tempered by ``ambiguous_weight``.

Feasibility: a skill is feasible when the partner's held object meets its
requirement and (with ``require_targets``, the default) it has a target the
partner can reach; a skill whose targets vanish (a pot fills up, a soup is
taken) is thereby dropped by the transition, like a completion.
"""

from __future__ import annotations

import numbers
from typing import Any, Dict, Optional, Union


from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.envs.evidence import observed_step_evidence
from beliefgate.envs.overcooked.controller import OvercookedController
from beliefgate.envs.overcooked.dynamics import completed_skills, detect_events, infer_actions
from beliefgate.envs.overcooked.layouts import layout_info, resolve_layout
from beliefgate.envs.overcooked.state import StateFormatError, SymbolicState
from beliefgate.envs.overcooked.tables import NUM_ACTIONS, STAY
from beliefgate.models.errors import InvalidParameterError
from beliefgate.skills.library import SkillLibrary

StateLike = Union[SymbolicState, Dict[str, Any], str]

#: BayesBelief's tempering weight for put-down / pass actions
AMBIGUOUS_WEIGHT = 0.35


def as_state(value: StateLike, layout: str) -> SymbolicState:
    """Accept a :class:`SymbolicState`, its dict or its JSON; check it belongs to ``layout``."""
    state = value if isinstance(value, SymbolicState) else SymbolicState.from_json(value)
    if state.layout != layout:
        raise StateFormatError(f"state is for layout {state.layout!r}, this gate observes {layout!r}")
    return state.validate_against_layout()


def check_partner_index(layout: str, partner) -> int:
    """``partner`` as a player index of ``layout`` (an int, not a bool, in ``[0, players)``), else
    :class:`~beliefgate.models.errors.InvalidParameterError` naming it."""
    players = len(layout_info(layout).start_positions)
    if isinstance(partner, bool) or not isinstance(partner, numbers.Integral) or not 0 <= partner < players:
        raise InvalidParameterError(f"partner index must be an integer in [0, {players}) on {layout}, "
                                    f"got {partner!r}")
    return int(partner)


class OvercookedObserver:
    """Turns consecutive Overcooked states into evidence about one partner."""

    def __init__(self, layout: str, params=None, partner: int = 1, library: Optional[SkillLibrary] = None,
                 ambiguous_weight: float = AMBIGUOUS_WEIGHT, other_blocks: bool = False,
                 require_targets: bool = True):
        self.layout = resolve_layout(layout)
        self.partner = check_partner_index(self.layout, partner)
        self.controller = OvercookedController.create(self.layout, library)
        self.library = self.controller.library
        self.beta = float(getattr(params, "beta", 2.0))
        self.epsilon = float(getattr(params, "epsilon", 0.1))
        self.ambiguous_weight = float(ambiguous_weight)
        self.other_blocks = other_blocks
        self.require_targets = require_targets
        self.num_actions = NUM_ACTIONS

    @property
    def skill_names(self):
        return self.library.names

    def evidence(self, state: StateLike, next_state: StateLike) -> StepEvidence:
        """Evidence about the partner's action between two consecutive states."""
        s0, s1 = as_state(state, self.layout), as_state(next_state, self.layout)
        if self.partner >= len(s0.players):
            raise StateFormatError(f"partner index {self.partner} but the state has {len(s0.players)} players")
        if s1.timestep != s0.timestep + 1:
            raise StateFormatError(f"states are not consecutive (timestep {s0.timestep} -> {s1.timestep})")
        actions = infer_actions(s0, s1, self.partner, step=s0.timestep)
        events = detect_events(s0, s1, step=s0.timestep)[self.partner]
        done = completed_skills(events, self.library)
        q = self.controller.q_values(s0, self.partner, self.other_blocks)
        feasible = self.controller.feasible(s0, self.partner, self.require_targets, q=q)
        return observed_step_evidence(actions, events, done, q, feasible, num_actions=NUM_ACTIONS, stay=STAY,
                                      ambiguous_weight=self.ambiguous_weight, beta=self.beta, epsilon=self.epsilon)
