"""LLM planner: prompt from typed inputs, parse against the feasible set, re-ask, then fall back."""

from __future__ import annotations

import logging

from beliefgate.planners.client import skill_schema
from beliefgate.planners.errors import LLMUnavailableError, ModelOutputError
from beliefgate.planners.parse import parse_skill
from beliefgate.planners.prompts import planner_messages
from beliefgate.planners.rule import RulePlanner
from beliefgate.planners.types import PlanDecision, PlannerInput

log = logging.getLogger(__name__)

MAX_REASKS = 3


class LLMPlanner:
    """Asks the model for one skill; up to ``max_reasks`` re-asks on bad output; then the rule planner.

    A fallback is explicit: the decision's ``source`` is ``"fallback"`` and
    ``fallbacks`` counts them (it shows up in the episode metrics).
    """

    name = "llm"

    def __init__(self, client, max_reasks: int = MAX_REASKS, fallback=None):
        self.client = client
        self.max_reasks = max_reasks
        self.fallback = fallback or RulePlanner()
        self.fallbacks = 0

    @property
    def llm_calls(self) -> int:
        return self.client.ledger.calls("planner")

    def choose(self, inp: PlannerInput) -> PlanDecision:
        messages = planner_messages(inp)
        schema = skill_schema(inp.feasible, {"why": {"type": "string", "maxLength": 80}})
        reply = ""
        attempts = 0
        try:
            for attempt in range(self.max_reasks + 1):
                attempts += 1
                reply = self.client.chat(messages, role="planner", schema=schema)
                try:
                    return PlanDecision(parse_skill(reply, inp.feasible), "llm", attempts, reply)
                except ModelOutputError as exc:
                    log.info("planner reply unusable (%s); re-asking", exc)
                    messages = messages + [
                        {"role": "assistant", "content": reply},
                        {"role": "user", "content": "That is not one of the allowed skills. Answer with JSON "
                                                    '{"skill": NAME} where NAME is exactly one of: '
                                                    + ", ".join(inp.feasible)},
                    ]
            why = f"no allowed skill after {attempts} answers"
        except LLMUnavailableError as exc:
            why = f"LLM unavailable: {exc}"
        self.fallbacks += 1
        log.warning("planner falls back to the rule planner: %s", why)
        rule = self.fallback.choose(inp)
        return PlanDecision(rule.skill, "fallback", attempts, reply, note=why)
