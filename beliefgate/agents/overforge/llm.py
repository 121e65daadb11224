"""The LLM roles of the OverForge agent: strategy proposer and pairwise judge.

Both go through the planner layer (:func:`beliefgate.planners.model.ask` via
:meth:`~beliefgate.agents.planning.PlanningAgent.ask_model`), with their prompts as template
files in ``prompts/`` beside this module, structured output as a JSON schema, and every answer
counted in the agent's ``llm_calls``. A call without a usable answer falls back to the offline
component (the proposer's ranking, the state judge's order), recorded in the agent's
:class:`~beliefgate.planners.fallbacks.FallbackLog` under the role ``strategy`` or ``judge``.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence

from beliefgate.agents.overforge.record import Branch
from beliefgate.planners.errors import ModelOutputError
from beliefgate.planners.parse import _json_object
from beliefgate.planners.prompts import render_from

STRATEGY_SCHEMA = {"type": "object", "properties": {"strategy": {"type": "string"}, "why": {"type": "string"}},
                   "required": ["strategy"]}
PAIR_SCHEMA = {"type": "object", "properties": {"better": {"type": "string", "enum": ["A", "B"]},
                                                "why": {"type": "string"}}, "required": ["better"]}


def render(name: str, **fields: str) -> str:
    return render_from("beliefgate.agents.overforge", name, **fields)


def belief_words(posterior: Optional[Dict[str, float]]) -> str:
    if not posterior:
        return "unknown yet"
    ranked = sorted(posterior.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} ({v:.0%})" for k, v in ranked if v >= 0.05)


def parse_strategy(reply: str, names: Sequence[str]) -> str:
    obj = _json_object(reply or "")
    value = str(obj.get("strategy", "")).strip().lower() if obj else (reply or "").strip().lower()
    hits = [n for n in names if n == value] or [n for n in names if n in value]
    if len(hits) != 1:
        raise ModelOutputError(f"no single strategy of {', '.join(names)} in the reply", reply)
    return hits[0]


def parse_pair(reply: str) -> int:
    """0 for plan A, 1 for plan B."""
    obj = _json_object(reply or "")
    value = str(obj.get("better", "")).strip().upper() if obj else (reply or "").strip().upper()
    if value in ("A", "PLAN A"):
        return 0
    if value in ("B", "PLAN B"):
        return 1
    raise ModelOutputError("the reply names neither plan A nor plan B", reply)


class LLMRoles:
    """The agent's model-backed proposer and judge (each falls back to the offline one, counted)."""

    def __init__(self, agent, client):
        self.agent = agent
        self.client = client

    def propose_strategy(self, scene: str, posterior, current: Optional[str], ranked: Sequence[str]) -> Optional[str]:
        """A strategy name, or None (fallback to the offline ranking, recorded)."""
        lib = self.agent.strategies
        listing = "\n".join(f"- {n}: {lib[n].description}" for n in lib.names)
        user = render("strategy_user", scene=scene, belief=belief_words(posterior), current=current or "none yet",
                      strategies=listing)
        messages = [{"role": "system", "content": render("strategy_system")}, {"role": "user", "content": user}]
        asked = self.agent.ask_model(self.client, messages, lambda r: parse_strategy(r, lib.names), role="strategy",
                                     output_schema=STRATEGY_SCHEMA)
        return asked.value if asked.ok else None

    def judge_pair(self, scene: str, a: Branch, b: Branch) -> Optional[int]:
        """0 when branch ``a`` is judged better than ``b``, 1 for ``b``; None when the model gives
        no usable answer (recorded; the caller uses the offline judge)."""
        (ga, sa), (gb, sb) = a, b
        desc = {g: (self.agent.strategy_of(g).description or g) for g in (ga, gb)}
        user = render("pair_user", scene=scene, belief=belief_words(self.agent._posterior()), strategy_a=ga,
                      desc_a=desc[ga], skill_a=sa, strategy_b=gb, desc_b=desc[gb], skill_b=sb)
        messages = [{"role": "system", "content": render("pair_system")}, {"role": "user", "content": user}]
        asked = self.agent.ask_model(self.client, messages, parse_pair, role="judge", output_schema=PAIR_SCHEMA)
        return asked.value if asked.ok else None
