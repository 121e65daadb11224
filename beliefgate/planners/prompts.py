"""Prompt templates (package files) rendered by one function from typed inputs."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from string import Template
from typing import Dict, List, Optional

from beliefgate.planners.errors import PlannerConfigError
from beliefgate.planners.types import BeliefBlock, GoalBlock, PlannerInput

_REASONS = {
    "start": "the episode starts",
    "idle": "you have no skill",
    "completed": "your last skill is done",
    "invalid": "your last skill can no longer be done",
    "timed_out": "your last skill took too long",
    "gate": "your partner's behaviour contradicts what you believed it was doing",
    "periodic": "a periodic check",
    "partner_completed": "your partner just finished a skill",
    "partner_holding": "your partner just picked something up",
    "judge": "a reviewer suggested reconsidering",
    "hypothesis": "your hypothesis about the partner changed",
    "recipe": "what your partner does says the recipe is not the one you planned for",
}


@lru_cache(maxsize=None)
def package_template(package: str, name: str) -> Template:
    """The template file ``prompts/NAME.txt`` of ``package`` (the planners', OverForge's, the agents')."""
    try:
        text = resources.files(package).joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlannerConfigError(f"no prompt template named {name!r} in {package}") from None
    return Template(text)


def render_from(package: str, name: str, **fields: str) -> str:
    """Render a template of ``package``; a missing field is a :class:`PlannerConfigError`."""
    try:
        return package_template(package, name).substitute(**fields)
    except KeyError as exc:
        raise PlannerConfigError(f"template {name!r} needs field {exc.args[0]!r}") from None


def template(name: str) -> Template:
    """The template file ``beliefgate/planners/prompts/NAME.txt``."""
    return package_template("beliefgate.planners", name)


def render(name: str, **fields: str) -> str:
    """Render a planner template; a missing field is a :class:`PlannerConfigError`."""
    return render_from("beliefgate.planners", name, **fields)


def belief_text(belief: Optional[BeliefBlock]) -> str:
    if belief is None:
        return ""
    ranked = sorted(belief.posterior.items(), key=lambda kv: -kv[1])
    gate = f" Signal: {_REASONS.get(belief.gate, belief.gate)}." if belief.gate else ""
    return render("belief_block", posterior=", ".join(f"{k} {v:.2f}" for k, v in ranked if v >= 0.01),
                  map_skill=belief.map_skill, confidence=f"{belief.confidence:.2f}", band=belief.band, gate=gate)


def goal_text(goal: Optional[GoalBlock], goal_needs: Optional[Dict[str, Dict[str, float]]] = None) -> str:
    """The goal (recipe) belief as one paragraph ("" without one)."""
    if goal is None:
        return ""
    ranked = sorted(goal.posterior.items(), key=lambda kv: -kv[1])
    text = (f"\nWhat your teammates are cooking for (inferred from what they do): {goal.map_goal} with probability "
            f"{goal.confidence:.2f} (" + ", ".join(f"{k} {v:.2f}" for k, v in ranked) + ").")
    needs = (goal_needs or {}).get(goal.map_goal)
    if needs:
        text += (f" Were it {goal.map_goal}, the kitchen would need: "
                 + (", ".join(f"{k} x{v:g}" for k, v in needs.items() if v > 0) or "nothing urgent") + ".")
    return text


def planner_messages(inp: PlannerInput) -> List[Dict[str, str]]:
    """System + user messages for one planning decision."""
    history = "\n".join(f"- step {t.timestep}: {t.skill} ({_REASONS.get(t.reason, t.reason)})"
                        for t in inp.history) or "- none yet"
    needs = ", ".join(f"{k} x{v:g}" for k, v in inp.needs.items() if v > 0) or "nothing urgent"
    user = render("planner_user", scene=inp.scene, reason=_REASONS.get(inp.reason, inp.reason),
                  belief=belief_text(inp.belief) + goal_text(inp.goal, inp.goal_needs), history=history, needs=needs,
                  feasible="\n".join(f"{i + 1}. {s}" for i, s in enumerate(inp.feasible)))
    return [{"role": "system", "content": render("planner_system")}, {"role": "user", "content": user}]


def judge_messages(scene: str, current: str, partner_actions: str, belief: Optional[BeliefBlock]):
    user = render("judge_user", scene=scene, current=current, partner_actions=partner_actions,
                  belief=belief_text(belief))
    return [{"role": "system", "content": render("judge_system")}, {"role": "user", "content": user}]
