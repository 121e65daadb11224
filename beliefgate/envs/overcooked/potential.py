"""Dish-progress potential: the Overcooked domain's progress (``Domain.progress``), OverForge's rollout value.

``dish_progress(state)`` measures how far the kitchen is towards served soups, in soups: a
served soup is 1 (the score / 20), a plated soup in a hand 0.8 (0.6 on a counter), a pot 0.15
per onion and 0.1 more once it cooks, an onion or a dish in a hand 0.05 while it is wanted
(held and staged onions up to the free pot slots, dishes up to the pots holding a soup or its
start), 0.03 when staged on a counter instead of held. Every link of the chain onion -> pot -> dish ->
soup -> serve raises it, so a rollout's gain ``dish_progress(s_d) - dish_progress(s_0)`` is a
progress score in soups.
"""

from __future__ import annotations

from beliefgate.envs.overcooked.state import POT_CAPACITY, SymbolicState

SOUP_VALUE = 20.0
PER_ONION = 0.15
COOKING_BONUS = 0.1
HELD = {"soup": 0.8}
WANTED_ITEM = 0.05
STAGED_SOUP = 0.6
STAGED_ITEM = 0.03


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
