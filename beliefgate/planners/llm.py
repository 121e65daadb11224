"""LLM planner: prompt from typed inputs, parse against the feasible set, re-ask, then fall back."""

from __future__ import annotations

import logging

from pydantic import BaseModel, ConfigDict, Field

from beliefgate.planners.client import skill_schema
from beliefgate.planners.errors import ModelOutputError, PlannerConfigError
from beliefgate.planners.model import ChatModel, ask
from beliefgate.planners.parse import parse_skill
from beliefgate.planners.prompts import planner_messages
from beliefgate.planners.rule import RulePlanner
from beliefgate.planners.types import Planner, PlanDecision, PlannerInput

log = logging.getLogger(__name__)

MAX_REASKS = 3


class LLMPlannerConfig(BaseModel):
    """Settings of :class:`LLMPlanner`: re-asks after an unusable reply, and the ``why`` length asked for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_reasks: int = Field(MAX_REASKS, ge=0, le=10)
    why_chars: int = Field(80, ge=0, le=1000)


def _reask(feasible):
    def message(reply: str, error: ModelOutputError) -> str:
        return ("That is not one of the allowed skills. Answer with JSON "
                '{"skill": NAME} where NAME is exactly one of: ' + ", ".join(feasible))
    return message


class LLMPlanner:
    """Asks the model for one skill; up to ``max_reasks`` re-asks on bad output; then the rule planner.

    A fallback is explicit: the decision's ``source`` is ``"fallback"`` and its ``fallback``
    says why (role ``planner``; reason ``unusable_reply``, ``unavailable``, ``deadline``...).
    ``fallbacks`` counts them for this planner's lifetime; agents count the decisions they get.
    """

    name = "llm"

    def __init__(self, client: ChatModel, max_reasks: int = MAX_REASKS, fallback: Planner | None = None,
                 config: LLMPlannerConfig | None = None):
        if not isinstance(client, ChatModel):
            raise PlannerConfigError(f"LLMPlanner needs a ChatModel, got {type(client).__name__}")
        self.client = client
        self.config = config or LLMPlannerConfig(max_reasks=max_reasks)
        self.fallback = fallback or RulePlanner()
        self.fallbacks = 0
        self.answers = 0

    @property
    def max_reasks(self) -> int:
        return self.config.max_reasks

    @property
    def llm_calls(self) -> int:
        """Model answers this planner received (cache hits included)."""
        return self.answers

    def choose(self, inp: PlannerInput) -> PlanDecision:
        schema = skill_schema(inp.feasible, {"why": {"type": "string", "maxLength": self.config.why_chars}})
        asked = ask(self.client, planner_messages(inp), lambda reply: parse_skill(reply, inp.feasible),
                    role="planner", output_schema=schema, reasks=self.config.max_reasks, reask=_reask(inp.feasible))
        self.answers += asked.answers
        if asked.ok:
            return PlanDecision(asked.value, "llm", asked.answers, asked.reply)
        self.fallbacks += 1
        log.warning("planner falls back to the rule planner: %s: %s", asked.fallback.reason, asked.fallback.detail)
        rule = self.fallback.choose(inp)
        return PlanDecision(rule.skill, "fallback", asked.answers, asked.reply,
                            note=f"{asked.fallback.reason}: {asked.fallback.detail}", fallback=asked.fallback)
