"""OverForge's symbolic state judge (an offline value component of the PCM).

The judge gives each branch (strategy, first skill) an immediate value: the skill's usefulness
now (what the kitchen needs once the partner's believed skill is counted, plus its
complementarity to that skill) scaled by how strongly the strategy prefers it, discounted by the
steps to its nearest target (a one-skill symbolic lookahead). The needs come from the layout's
domain (``Domain.skill_needs``); the rollouts' value is the domain's ``progress``.
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional, Sequence

import numpy as np

#: per-step discount of the judge's lookahead
JUDGE_DISCOUNT = 0.97
#: weight of complementarity to the partner's believed skill in a skill's usefulness
COMPLEMENT_WEIGHT = 0.5


def usefulness(skills: Sequence[str], needs: Mapping[str, float], posterior: Optional[Mapping[str, float]],
               complementary: Mapping[str, Sequence[str]]) -> Dict[str, float]:
    """Per feasible skill: need once the partner's believed work is counted, plus complementarity."""
    out = {}
    for skill in skills:
        need = float(needs.get(skill, 0.0))
        comp = 0.0
        if posterior is not None:
            if skill.startswith("pickup"):
                need -= float(posterior.get(skill, 0.0))
            comp = sum(float(p) for partner, p in posterior.items() if skill in complementary.get(partner, ()))
        out[skill] = min(max(need, 0.0), 1.0) + COMPLEMENT_WEIGHT * comp
    return out


def immediate_value(use: float, weight: float, top_weight: float, steps: float) -> float:
    """The judge's value of one branch: usefulness x strategy preference, discounted by the steps."""
    if not np.isfinite(steps):
        return 0.0
    return (0.1 + use) * (weight / top_weight) * JUDGE_DISCOUNT ** float(steps)
