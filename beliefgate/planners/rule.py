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
"""

from __future__ import annotations

from beliefgate.planners.errors import PlannerConfigError
from beliefgate.planners.types import PlanDecision, PlannerInput

COMPLEMENTARY_WEIGHT = 0.5


class RulePlanner:
    """Deterministic planner used offline and as the LLM planners' fallback."""

    name = "rule"
    llm_calls = 0

    def __init__(self, complementary_weight: float = COMPLEMENTARY_WEIGHT):
        self.complementary_weight = complementary_weight

    def choose(self, inp: PlannerInput) -> PlanDecision:
        if not inp.feasible:
            raise PlannerConfigError("the planner needs at least one feasible skill")
        scores = {}
        for k, skill in enumerate(inp.feasible):
            need = inp.needs.get(skill, 0.0)
            comp = 0.0
            if inp.belief is not None:
                if skill.startswith("pickup"):  # a partner believed to fetch the same covers one unit
                    need -= inp.belief.posterior.get(skill, 0.0)
                comp = sum(p for partner, p in inp.belief.posterior.items()
                           if skill in inp.complementary.get(partner, ()))
            scores[skill] = min(max(need, 0.0), 1.0) + self.complementary_weight * comp - 1e-6 * k
        best = max(scores, key=scores.get)
        note = f"score {scores[best]:.2f}" + (f" vs partner MAP {inp.belief.map_skill}" if inp.belief else "")
        return PlanDecision(best, "rule", note=note)
