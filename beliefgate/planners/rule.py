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

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from beliefgate.planners.errors import PlannerConfigError
from beliefgate.planners.types import PlanDecision, PlannerInput

COMPLEMENTARY_WEIGHT = 0.5
INTERRUPT_WEIGHT = 5.0
#: planning reasons that assert the partner's skill contradicts the ego's plan
CONTRADICTION_REASONS = ("gate", "judge")


class RulePlannerConfig(BaseModel):
    """The two complementarity weights of :class:`RulePlanner` (finite, >= 0)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    complementary_weight: float = Field(COMPLEMENTARY_WEIGHT, ge=0)
    interrupt_weight: float = Field(INTERRUPT_WEIGHT, ge=0)


class RulePlanner:
    """Deterministic planner used offline and as the LLM planners' fallback."""

    name = "rule"
    llm_calls = 0

    def __init__(self, complementary_weight: float = COMPLEMENTARY_WEIGHT,
                 interrupt_weight: float = INTERRUPT_WEIGHT, config: RulePlannerConfig | None = None):
        if config is None:
            try:
                config = RulePlannerConfig(complementary_weight=complementary_weight, interrupt_weight=interrupt_weight)
            except ValidationError as exc:
                err = exc.errors()[0]
                raise PlannerConfigError(f"{err['loc'][0]} must be a finite number >= 0, "
                                         f"got {err.get('input')!r}") from None
        self.config = config
        self.complementary_weight = config.complementary_weight
        self.interrupt_weight = config.interrupt_weight

    def choose(self, inp: PlannerInput) -> PlanDecision:
        if not inp.feasible:
            raise PlannerConfigError("the planner needs at least one feasible skill")
        weight = self.interrupt_weight if inp.reason in CONTRADICTION_REASONS else self.complementary_weight
        scores = {}
        for k, skill in enumerate(inp.feasible):
            need = inp.needs.get(skill, 0.0)
            comp = 0.0
            if inp.belief is not None:
                if skill.startswith("pickup"):  # a partner believed to fetch the same covers one unit
                    need -= inp.belief.posterior.get(skill, 0.0)
                comp = sum(p for partner, p in inp.belief.posterior.items()
                           if skill in inp.complementary.get(partner, ()))
            scores[skill] = min(max(need, 0.0), 1.0) + weight * comp - 1e-6 * k
        best = max(scores, key=scores.get)
        note = f"score {scores[best]:.2f} (w={weight:g})" + (f" vs partner MAP {inp.belief.map_skill}" if inp.belief else "")
        return PlanDecision(best, "rule", note=note)
