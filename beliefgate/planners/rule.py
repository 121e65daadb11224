"""The offline rule planner: the complementary feasible skill given the posterior.

Score of an ego skill ``k``::

    usefulness(k) + w * P(k is complementary to the partner's skill)

``usefulness`` is what the kitchen still needs of ``k`` once the partner's
believed work is counted: for a pickup, ``clip(need(k) - b(k), 0, 1)`` -- a
partner believed to be fetching onions covers one onion of the need, so a
duplicate fetch stops being useful (what the partner visibly carries is already
in ``need``). ``w`` weighs complementarity (SPEC §2 table)
between skills of equal usefulness. Without a belief (``no_prompt``,
``no_belief``) the need counts alone. Ties go to the order of the feasible
list. No network, no key.

When the call comes from a contradiction interrupt (``reason`` in
:data:`CONTRADICTION_REASONS`: the belief gate, or a judge that saw a duplicate),
``w`` is ``interrupt_weight`` instead (default 5): the interrupt says the
partner no longer does what the ego's skill was chosen against, so the planner
puts complementarity before raw need -- the way the paper's planner is told to
pick a skill that complements the partner's new one. Generic triggers (a
timer, a completion, a held item) keep the ordinary weight.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from beliefgate.planners.errors import PlannerConfigError
from beliefgate.planners.types import PlanDecision, PlannerInput

COMPLEMENTARY_WEIGHT = 0.5
INTERRUPT_WEIGHT = 5.0
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
    (subtract ``b(k)``), ``"map"`` (subtract 1 when the confident MAP is ``k``) or ``"none"``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    complementary_weight: float = Field(COMPLEMENTARY_WEIGHT, ge=0)
    interrupt_weight: float = Field(INTERRUPT_WEIGHT, ge=0)
    min_confidence: float = Field(0.0, ge=0, le=1)
    useful_first: bool = False
    cover: Literal["posterior", "map", "none"] = "posterior"


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
                err = exc.errors()[0]
                where = err["loc"][0] if err["loc"] else "option"
                raise PlannerConfigError(f"{where}: {err['msg']}, got {err.get('input')!r}") from None
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
        scores = {}
        for k, skill in enumerate(inp.feasible):
            need = inp.needs.get(skill, 0.0)
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
