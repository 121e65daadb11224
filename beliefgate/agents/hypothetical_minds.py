"""Hypothetical Minds: a store of partner hypotheses scored by Rescorla-Wagner updates.

Each hypothesis is a strategy sentence, a predicted partner skill, a score ``v``
and its creation step. When the partner completes a skill, every hypothesis is
scored against it: ``v <- v + 0.3 (+1 - v)`` if it predicted that skill, else
``v <- v + 0.3 (-1 - v)``. When the best score exceeds 0.7 the agent reuses that
hypothesis; otherwise it asks for a new one (an LLM call with role
``hypothesis``; offline, the gate's most likely skill stands in for the model).
The planner sees the best hypothesis as its belief about the partner; the agent
replans when its skill ends or when the best hypothesis changes its prediction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from pydantic import Field

from beliefgate.agents.planning import AgentConfig, PlanningAgent, planner_for, without_model
from beliefgate.planners.model import ChatModel
from beliefgate.planners.types import BeliefBlock, Planner

LEARNING_RATE = 0.3
REUSE_THRESHOLD = 0.7
TOP_M = 3


class HypothesisConfig(AgentConfig):
    """Rescorla-Wagner learning rate, the score above which the best hypothesis is reused, and how
    many of the best hypotheses the model is shown."""

    learning_rate: float = Field(LEARNING_RATE, gt=0.0, le=1.0)
    reuse_threshold: float = Field(REUSE_THRESHOLD, ge=-1.0, le=1.0)
    top_m: int = Field(TOP_M, ge=1, le=20)


@dataclass
class Hypothesis:
    strategy: str
    skill: str
    score: float
    created: int


class HypotheticalMindsAgent(PlanningAgent):
    keeps_belief = True      # offline hypotheses come from the gate's posterior
    belief_in_prompt = True

    def __init__(self, client: Optional[ChatModel] = None, planner: Optional[Planner] = None, params=None,
                 config: Optional[HypothesisConfig] = None):
        super().__init__("hypothetical-minds", planner, params)
        self.client = client
        self.config = config or HypothesisConfig()

    def reset(self, layout, player, seed):
        super().reset(layout, player, seed)
        self.store: List[Hypothesis] = []
        self.events: List[str] = []
        self.generated = 0
        self._predicted: Optional[str] = None

    @property
    def best(self) -> Optional[Hypothesis]:
        return max(self.store, key=lambda h: h.score) if self.store else None

    def _score(self, completed: List[str]) -> None:
        for h in self.store:
            target = 1.0 if h.skill in completed else -1.0
            h.score += self.config.learning_rate * (target - h.score)

    def _generate(self, state) -> None:
        self.generated += 1
        names = self.library.names
        if self.client is None:
            if self.decision is None:
                return
            skill = self.decision.map_name
            self.store.append(Hypothesis(f"the partner keeps doing {skill}", skill, 0.0, state.timestep))
            return
        from beliefgate.planners.client import skill_schema
        from beliefgate.planners.parse import _json_object, parse_skill
        from beliefgate.planners.prompts import render

        tops = sorted(self.store, key=lambda h: -h.score)[:self.config.top_m]
        user = render("hypothesis_user", scene=self.domain.scene_text(state, self.player),
                      events="\n".join(self.events[-12:]) or "none yet", skills=", ".join(names),
                      hypotheses="\n".join(f"- {h.strategy} -> {h.skill} ({h.score:+.2f})" for h in tops) or "- none")
        messages = [{"role": "system", "content": render("hypothesis_system")}, {"role": "user", "content": user}]
        schema = skill_schema(names, {"strategy": {"type": "string", "maxLength": 120}}, ("strategy",))
        asked = self.ask_model(self.client, messages, lambda reply: parse_skill(reply, names), role="hypothesis",
                               output_schema=schema)
        if asked.ok:  # else a counted `hypothesis` fallback: the store is unchanged, the old best stands
            obj = _json_object(asked.reply) or {}
            strategy = str(obj.get("strategy", asked.reply))[:200]
            self.store.append(Hypothesis(strategy, asked.value, 0.0, state.timestep))

    def act(self, state, my_events=()):
        if self.prev is not None:
            p = state.players[self.partner]
            for e in self._partner_events(state):
                self.events.append(f"({state.timestep}, {e}, {p.position}, {p.held or 'nothing'})")
        return super().act(state, my_events)

    def _partner_events(self, state):
        return self.domain.detect_events(self.prev, state)[self.partner]

    def trigger(self, state, decision, partner_events):
        done = [self.library.names[k] for k in self.domain.completed_skills(partner_events, self.library)]
        if done:
            self._score(done)
        if done or not self.store:
            best = self.best
            if best is None or best.score <= self.config.reuse_threshold:
                self._generate(state)
        best = self.best
        prediction = best.skill if best is not None else None
        changed = prediction is not None and self._predicted is not None and prediction != self._predicted
        self._predicted = prediction
        return "hypothesis" if changed else None

    def belief_block(self, gate_signal):
        best = self.best
        if best is None:
            return super().belief_block(gate_signal)
        conf = (best.score + 1.0) / 2.0
        rest = (1.0 - conf) / max(len(self.library.names) - 1, 1)
        posterior = {n: (conf if n == best.skill else rest) for n in self.library.names}
        return BeliefBlock(posterior, best.skill, conf, gate_signal)


def hypothetical_minds_agent(option: Optional[str], *, llm: Optional[ChatModel] = None,
                             gate_params=None) -> HypotheticalMindsAgent:
    """``hypothetical-minds``: hypotheses and plans from the same model (offline: the gate's MAP)."""
    return without_model(HypotheticalMindsAgent(client=llm, planner=planner_for(llm), params=gate_params), llm)
