"""The offline rule planner: a useful feasible skill, the posterior used only where it is safe.

Score of an ego skill ``k`` (defaults: :class:`RulePlannerConfig`)::

    [need'(k) > 0] * big  +  need'(k)  +  w * P(k is complementary to the partner's skill)

``need(k)`` is what the kitchen still needs of ``k`` (``skill_needs``; what the partner
visibly carries is already counted), clipped to [0, 1]. ``useful_first``: a skill the kitchen
needs always beats one it does not -- complementarity only orders useful skills. ``w`` is 0 on
ordinary calls (``complementary_weight``) and ``interrupt_weight`` (5) after a contradiction
interrupt (``reason`` in :data:`CONTRADICTION_REASONS`: the belief gate, or a judge that saw a
duplicate): the interrupt says the partner no longer does what the ego's skill was chosen
against, so among the useful skills the planner picks the one complementary to the partner's
new skill. The belief is acted on only when its MAP has at least ``min_confidence`` (0.8) mass.
``cover`` (default ``"none"``) says whether a believed fetch of the same item lowers a pickup's
need: ``"map"`` lowers it by one unit when the confident MAP says the partner is fetching the
same item, ``"posterior"`` by the posterior mass. Ties go to the order of the feasible list. No
network, no key.

Where the agent keeps a goal belief (OvercookedV2's recipe), a confident MAP goal
(``min_goal_confidence``) replaces the needs by the needs under that goal
(``PlannerInput.goal_needs``): the ego fetches what the believed recipe needs.

So by default the skill posterior changes a choice only after a contradiction interrupt: on
ordinary calls this planner plans as without a belief. That is measured, not assumed
(``docs/examples/results17/tune_cover.py``, five layouts, seeds 1000-1003 with the 12 BP
switchers and 1000-1004 with six scripted partners; reward minus the same planner without a
belief, paired 95% CI): every use of the posterior on ordinary calls
lowered reward -- ``cover="map"`` with the belief as context only -4.2 [-7.8, -1.1] on the 12
switching BP partners and -3.1 [-5.9, -0.4] on six scripted partners (coordination_ring -11.6
and -11.4: the ring's two pots want both players on onions, and a confident "partner fetches
onions" sent the ego elsewhere), ``cover`` on dishes only -1.2 [-3.0, +0.3], and complementarity
as a tie-breaker (``w = 0.5``) or the posterior subtracted from every pickup's need lost more
(issue 17, docs/results_gap.md). With ``cover="none"`` the gate's interrupts are the belief's
only effect: +0.4 [-0.5, +1.5] and +0.5 [-0.1, +1.5] over no belief, against -0.6 and +0.5
with ``cover="map"``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from beliefgate.planners.errors import PlannerConfigError
from beliefgate.planners.types import PlanDecision, PlannerInput
from beliefgate.validation import param_error

COMPLEMENTARY_WEIGHT = 0.0
INTERRUPT_WEIGHT = 5.0
#: the belief is acted on only when its MAP has at least this mass (chosen on seeds 1000-1001)
MIN_CONFIDENCE = 0.8
#: planning reasons that assert the partner's skill contradicts the ego's plan
CONTRADICTION_REASONS = ("gate", "judge")


class RulePlannerConfig(BaseModel):
    """How :class:`RulePlanner` weighs need against the posterior (every field finite).

    ``complementary_weight`` / ``interrupt_weight``: the complementarity weight ``w`` of an
    ordinary call / a contradiction interrupt (>= 0).
    ``min_confidence``: the posterior is used only when its most probable skill has at least
    this mass; below it the call is planned as without a belief (0 = always use it).
    ``useful_first``: complementarity only orders skills the kitchen needs (need > 0 after the
    partner's believed work is counted); it never promotes a skill nobody needs over a useful one.
    ``cover``: how the partner's believed work lowers a pickup's need -- ``"posterior"``
    (subtract ``b(k)``), ``"map"`` (subtract 1 when the confident MAP is ``k``) or ``"none"``
    (default: the belief never lowers a need; see the module docstring for why).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    complementary_weight: float = Field(COMPLEMENTARY_WEIGHT, ge=0)
    interrupt_weight: float = Field(INTERRUPT_WEIGHT, ge=0)
    min_confidence: float = Field(MIN_CONFIDENCE, ge=0, le=1)
    useful_first: bool = True
    cover: Literal["posterior", "map", "none"] = "none"
    min_goal_confidence: float = Field(MIN_CONFIDENCE, ge=0, le=1)


class RulePlanner:
    """Deterministic planner used offline and as the LLM planners' fallback."""

    name = "rule"
    llm_calls = 0

    def __init__(self, complementary_weight: float = COMPLEMENTARY_WEIGHT,
                 interrupt_weight: float = INTERRUPT_WEIGHT, config: RulePlannerConfig | None = None,
                 **options):
        if config is None:
            try:
                config = RulePlannerConfig(complementary_weight=complementary_weight,
                                           interrupt_weight=interrupt_weight, **options)
            except ValidationError as exc:
                raise param_error(exc, PlannerConfigError, "option", model=RulePlannerConfig) from None
        self.config = config
        self.complementary_weight = config.complementary_weight
        self.interrupt_weight = config.interrupt_weight

    def choose(self, inp: PlannerInput) -> PlanDecision:
        if not inp.feasible:
            raise PlannerConfigError("the planner needs at least one feasible skill")
        cfg = self.config
        weight = self.interrupt_weight if inp.reason in CONTRADICTION_REASONS else self.complementary_weight
        belief = inp.belief
        if belief is not None and belief.confidence < cfg.min_confidence:
            belief = None  # not confident enough to act on: plan as without a belief
        needs = inp.needs
        goal = inp.goal
        if goal is not None and goal.confidence >= cfg.min_goal_confidence and goal.map_goal in inp.goal_needs:
            needs = inp.goal_needs[goal.map_goal]  # plan for the goal the teammates are believed to pursue
        scores = {}
        for k, skill in enumerate(inp.feasible):
            need = needs.get(skill, 0.0)
            comp = 0.0
            if belief is not None:
                if skill.startswith("pickup"):  # a partner believed to fetch the same covers one unit
                    if cfg.cover == "posterior":
                        need -= belief.posterior.get(skill, 0.0)
                    elif cfg.cover == "map" and belief.map_skill == skill:
                        need -= 1.0
                comp = sum(p for partner, p in belief.posterior.items()
                           if skill in inp.complementary.get(partner, ()))
            need = min(max(need, 0.0), 1.0)
            useful = 2.0 * (1.0 + weight) if (cfg.useful_first and need > 0) else 0.0
            scores[skill] = useful + need + weight * comp - 1e-6 * k
        best = max(scores, key=scores.get)
        note = f"score {scores[best]:.2f} (w={weight:g})" + (f" vs partner MAP {belief.map_skill}" if belief else "")
        return PlanDecision(best, "rule", note=note)
