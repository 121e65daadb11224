"""The flat baseline of issue 45: a planner that talks, without OverForge's PCM (``flat``).

OverForge's paper measures its metacognitive controller against *flat* LLM agents that plan and
chat but keep no strategies, rollouts or commitment (MindForge-like). Offline, the flat agent here
is ``bayes-belief:full`` -- the skill and goal beliefs, the rule planner (an LLM planner with
``--llm-base-url``), the gate's interrupts -- with the message channel:

* it tells its teammates the goal it sees (an OvercookedV2 recipe at the indicator), once per
  redraw, and reads a teammate's goal claim into its goal belief (true with probability
  :data:`~beliefgate.beliefs.goal.CLAIM_TRUST`, OverForge's ``trust=`` default), exactly as OverForge does
  (:meth:`~beliefgate.agents.planning.PlanningAgent.goal_to_tell`, ``hear_goals``);
* it answers a request addressed to it: ``accept`` when the kitchen needs the requested skill of it
  now (it then runs that skill at its next planning call, if still feasible), else ``decline``
  (reason ``not needed``);
* it declines every role proposal (reason ``no roles``): it plans one skill at a time and holds no
  role, so accepting would be a promise it does not keep.

It proposes nothing and requests nothing. With every message off (``flat:-messages``) it is
``bayes-belief:full``.
"""

from __future__ import annotations

from typing import Any, List, Optional

from beliefgate.agents.planning import AgentConfigError, BayesBeliefAgent, Choice, planner_for
from beliefgate.beliefs.gate import GateParams
from beliefgate.beliefs.goal import CLAIM_TRUST
from beliefgate.envs.messages import Accept, Decline, Inform, Propose, Request, request_seat
from beliefgate.planners.model import ChatModel

class FlatAgent(BayesBeliefAgent):
    """``bayes-belief:full`` that tells and hears goals and answers requests and proposals."""

    def __init__(self, messages: bool = True, planner=None, params: Optional[GateParams] = None):
        super().__init__("full", planner, params)
        self.name = "flat" if messages else "flat:-messages"
        self.messages = messages

    def reset(self, layout: str, player: int, seed: int) -> None:
        super().reset(layout, player, seed)
        self.goal_claim_trust = CLAIM_TRUST if self.messages else None
        self._outbox: List[Any] = []
        self._requested: Optional[str] = None
        # (the goals told are the step info's ``goals_told``, counted by ``goal_to_tell``)
        self.talk_counts = {"heard": 0, "accepted": 0, "declined": 0, "followed": 0}

    # ------------------------------------------------------------------ the Talks protocol
    def hear(self, messages) -> None:
        if not self.messages:
            return
        messages = self.words_in(messages)
        self.hear_goals(messages)
        for msg in messages:
            self.talk_counts["heard"] += 1
            if isinstance(msg, Propose) and self.player in msg.roles:
                self._answer(msg, False, "no roles")
            elif isinstance(msg, Request) and request_seat(msg) == self.player:
                ok = self._needed(msg.skill)
                self._answer(msg, ok, "" if ok else "not needed")
                if ok:
                    self._requested = msg.skill

    def messages_out(self):
        return self.words_out([self._outbox.pop(0)] if self._outbox else [])

    def on_sent(self, message) -> None:
        self.words_sent(message)

    def _answer(self, msg, ok: bool, reason: str) -> None:
        self._outbox.append(Accept(reply_to=msg.id, to=msg.sender) if ok else
                            Decline(reply_to=msg.id, to=msg.sender, reason=reason))
        self.talk_counts["accepted" if ok else "declined"] += 1

    def _needed(self, skill: str) -> bool:
        state = self.prev
        if state is None or skill not in self.library.names:
            return False
        mask = self.controller.feasible(state, self.player, require_targets=True)
        return self.domain.skill_needs(state, self.player, self.controller, mask).get(skill, 0.0) > 0

    # ------------------------------------------------------------------ acting
    def act(self, state, my_events=()) -> int:
        action = super().act(state, my_events)
        if self.messages:
            goal = self.goal_to_tell(state)
            if goal is not None:   # a seen recipe goes first: it is news only until the next redraw
                self._outbox.insert(0, Inform(goal=goal))
        return action

    def choose(self, state, reason: str) -> Optional[Choice]:
        asked, self._requested = self._requested, None
        if asked is not None:
            mask = self.controller.feasible(state, self.player, require_targets=True)
            if mask[self.library.index(asked)]:
                self.talk_counts["followed"] += 1
                return Choice(asked, "request", note="a teammate asked for it")
        return super().choose(state, reason)

    def step_info(self):
        out = super().step_info()
        if self.messages:
            out["talk"] = dict(self.talk_counts)
        return out


def flat_agent(option: Optional[str], *, llm: Optional[ChatModel] = None,
               gate_params: Optional[GateParams] = None) -> FlatAgent:
    """``flat`` (talks) or ``flat:-messages`` (``bayes-belief:full`` under another name)."""
    if option not in (None, "-messages"):
        raise AgentConfigError(f"unknown flat option {option!r}; use flat or flat:-messages")
    agent = FlatAgent(messages=option is None, planner=planner_for(llm), params=gate_params)
    if llm is not None and agent.messages:   # an agent with a model talks in words
        agent.speak_with(llm)
    return agent
