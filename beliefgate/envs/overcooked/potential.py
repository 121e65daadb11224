"""Dish-progress potential and the symbolic state judge (the offline value components).

``dish_progress(state)`` measures how far the kitchen is towards served soups, in soups: a
served soup is 1 (the score / 20), a plated soup in a hand 0.8 (0.6 on a counter), a pot 0.15
per onion and 0.1 more once it cooks, an onion or a dish in a hand 0.05 while it is wanted
(held and staged onions up to the free pot slots, dishes up to the pots holding a soup or its
start), 0.03 when staged on a counter instead of held. Every link of the chain onion -> pot -> dish ->
soup -> serve raises it, so a rollout's gain ``dish_progress(s_d) - dish_progress(s_0)`` is a
progress score in soups.

The state judge gives each branch (strategy, first skill) an immediate value: the skill's
usefulness now (what the kitchen needs once the partner's believed skill is counted, plus its
complementarity to that skill) scaled by how strongly the strategy prefers it, discounted by
the steps to its nearest target (a one-skill symbolic lookahead).
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional, Sequence

import numpy as np

from beliefgate.envs.overcooked.state import POT_CAPACITY, SymbolicState

SOUP_VALUE = 20.0
PER_ONION = 0.15
COOKING_BONUS = 0.1
HELD = {"soup": 0.8}
WANTED_ITEM = 0.05
STAGED_SOUP = 0.6
STAGED_ITEM = 0.03
#: per-step discount of the judge's lookahead
JUDGE_DISCOUNT = 0.97
#: weight of complementarity to the partner's believed skill in a skill's usefulness
COMPLEMENT_WEIGHT = 0.5


def dish_progress(state: SymbolicState) -> float:
    """The dish-progress potential of ``state`` in soups (see the module docstring)."""
    value = float(state.score) / SOUP_VALUE
    missing = sum(POT_CAPACITY - p.ingredients for p in state.pots if not (p.cooking or p.ready))
    soups = sum(1 for p in state.pots if p.ingredients > 0 or p.cooking or p.ready)
    for pot in state.pots:
        value += PER_ONION * pot.ingredients + (COOKING_BONUS if (pot.cooking or pot.ready) else 0.0)
    held = [p.held for p in state.players]
    value += HELD["soup"] * held.count("soup") + STAGED_SOUP * sum(1 for o in state.counters if o.name == "soup")
    # items count only up to what the pots can use: a second onion for the last free slot, or a
    # dish for a soup another dish already covers, is no progress
    onions = [WANTED_ITEM] * held.count("onion") + [STAGED_ITEM] * sum(1 for o in state.counters if o.name == "onion")
    dishes = [WANTED_ITEM] * held.count("dish") + [STAGED_ITEM] * sum(1 for o in state.counters if o.name == "dish")
    value += sum(onions[:max(missing, 0)]) + sum(dishes[:soups])
    return value


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
