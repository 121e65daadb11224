"""Per-player events of one OvercookedV2 step, derived from the state pair inside the jitted step.

JaxMARL returns only a summed shaped reward per player (no events), so each player's events are
read off its held item before and after the step and the static object it faces (an interaction
never moves or turns a player, so the facing cell after the step is the one it acted on):

==================  ===============================================  =========================
event               held before -> after                             facing
==================  ===============================================  =========================
ingredient_pickup   nothing -> an ingredient                         an ingredient pile
pot_placement       an ingredient -> nothing                         a pot
plate_pickup        nothing -> a clean plate                         the plate pile
soup_pickup         a clean plate -> a plated (cooked) dish          a pot
delivery            a cooked dish -> nothing                         a serving cell
counter_placement   anything -> nothing                              a counter
==================  ===============================================  =========================

A cooked dish taken back from a counter counts as no event (not a soup pickup from a pot), and so
does an ingredient or a plate taken back from a counter: pickups count only from the piles. With
counter pickups counted, "put it down, take it back" earns a pickup every two steps (~200 per
400-step episode, measured by ``scripts/measure_bp_farming.py``; a self-play team that cooks makes
~40 ingredient and ~13 plate pickups), so any positive pickup weight above ~1.2 paid more for that
loop than for cooking. From the piles, a pickup brings a new item into the kitchen, and the
counters it can be left on are few, so a positive pickup weight buys at most a stockpile.
``counter_placement`` still counts every put-down (a hand-over cannot be told from a loop without
tracking items), so its weights in the BP population are never positive.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from beliefgate.rl.config import EVENTS


def _faced(static_grid, state):
    """``(players,)``: the static object each player faces in ``state`` (the cell an interaction acts on)."""
    fwd = jax.vmap(lambda agent: agent.get_fwd_pos())(state.agents)  # one agent at a time: it is not batched
    return static_grid[fwd.y, fwd.x]


def step_events(static_grid, prev_state, next_state, counter_pickups: bool = False):
    """``(players, len(EVENTS))`` float counts (0/1) of each player's events in ``prev -> next``.

    ``static_grid``: the layout's ``(height, width)`` static objects (they never change).
    ``counter_pickups``: count an ingredient or plate taken from a counter as a pickup too (the
    farmable rule, kept only for the measurement in ``scripts/measure_bp_farming.py``)."""
    from jaxmarl.environments.overcooked_v2.common import DynamicObject, StaticObject

    before = prev_state.agents.inventory
    after = next_state.agents.inventory
    faced = _faced(static_grid, next_state)
    from_pile = StaticObject.is_ingredient_pile(faced) | counter_pickups
    from_plates = (faced == StaticObject.PLATE_PILE) | counter_pickups
    empty_before, empty_after = before == 0, after == 0
    ingredient_before = DynamicObject.is_ingredient(before)
    cooked_before = (before & DynamicObject.COOKED) != 0
    columns = {
        "ingredient_pickup": empty_before & DynamicObject.is_ingredient(after) & from_pile,
        "pot_placement": ingredient_before & empty_after & (faced == StaticObject.POT),
        "plate_pickup": empty_before & (after == DynamicObject.PLATE) & from_plates,
        "soup_pickup": (before == DynamicObject.PLATE) & ((after & DynamicObject.COOKED) != 0)
                       & (faced == StaticObject.POT),
        "delivery": cooked_before & empty_after & (faced == StaticObject.GOAL),
        "counter_placement": ~empty_before & empty_after & (faced == StaticObject.WALL),
    }
    return jnp.stack([columns[e] for e in EVENTS], axis=-1).astype(jnp.float32)


def dish_drops(static_grid, prev_state, next_state):
    """``(players,)`` 0/1: a player put a cooked dish down on a counter in ``prev -> next``.

    Not an event of :data:`EVENTS` (no BP weight names it): the trainer charges it back against
    JaxMARL's shaped dish pickup (``PPOConfig.dish_drop_refund``), so "cook, take the soup out,
    leave it on a counter" no longer earns shaped reward without a delivery."""
    from jaxmarl.environments.overcooked_v2.common import DynamicObject, StaticObject

    before, after = prev_state.agents.inventory, next_state.agents.inventory
    faced = _faced(static_grid, next_state)
    return (((before & DynamicObject.COOKED) != 0) & (after == 0) & (faced == StaticObject.WALL)).astype(jnp.float32)


def cell_distances(static_grid, target: int) -> "np.ndarray":
    """``(height, width)`` moves from each free cell to the nearest cell next to a ``target`` cell (a
    JaxMARL ``StaticObject`` code; breadth-first over the free cells, players ignored), the largest
    finite distance + 1 elsewhere."""
    import numpy as np
    from collections import deque

    from jaxmarl.environments.overcooked_v2.common import StaticObject

    grid = np.asarray(static_grid)
    h, w = grid.shape
    free = grid == StaticObject.EMPTY
    steps = ((0, 1), (0, -1), (1, 0), (-1, 0))
    dist = np.full((h, w), -1, np.int32)
    # the target cells are the sources at distance -1 (never free, so never given a distance): the
    # free cells next to them get 0
    todo = deque((y, x, -1) for y, x in zip(*np.nonzero(grid == target)))
    while todo:
        y, x, d = todo.popleft()
        for dy, dx in steps:
            ny, nx = y + dy, x + dx
            if 0 <= ny < h and 0 <= nx < w and free[ny, nx] and dist[ny, nx] < 0:
                dist[ny, nx] = d + 1
                todo.append((ny, nx, d + 1))
    far = int(dist.max()) + 1
    return np.where(dist < 0, far, dist).astype(np.float32)


def serve_distances(static_grid) -> "np.ndarray":
    """:func:`cell_distances` to the serving cells (``PPOConfig.serve_shaping``)."""
    from jaxmarl.environments.overcooked_v2.common import StaticObject

    return cell_distances(static_grid, StaticObject.GOAL)


def pot_distances(static_grid) -> "np.ndarray":
    """:func:`cell_distances` to the pots (``PPOConfig.pot_shaping``)."""
    from jaxmarl.environments.overcooked_v2.common import StaticObject

    return cell_distances(static_grid, StaticObject.POT)


def _toward(distances, state, holding):
    """``(players,)``: ``D - d`` for each player with ``holding`` true (``d`` its distance, ``D`` the
    largest), 0 for the others."""
    agents = state.agents
    d = distances[agents.pos.y, agents.pos.x]
    return jnp.where(holding, jnp.max(distances) - d, 0.0)


def serve_potential(distances, state):
    """``(players,)``: a player holding a cooked dish has potential ``D - d`` (``d`` its distance to the
    serving cells, ``D`` the largest), any other player 0 -- the potential of ``PPOConfig.serve_shaping``."""
    from jaxmarl.environments.overcooked_v2.common import DynamicObject

    return _toward(distances, state, (state.agents.inventory & DynamicObject.COOKED) != 0)


def pot_potential(distances, state):
    """``(players,)``: a player holding what a pot takes next -- a raw ingredient, or an empty plate to
    take a soup out with -- has potential ``D - d`` (``d`` its distance to the pots), any other player 0:
    the potential of ``PPOConfig.pot_shaping``."""
    from jaxmarl.environments.overcooked_v2.common import DynamicObject

    inv = state.agents.inventory
    return _toward(distances, state, (inv == DynamicObject.PLATE) | DynamicObject.is_ingredient(inv))


__all__ = ["cell_distances", "dish_drops", "pot_distances", "pot_potential", "serve_distances",
           "serve_potential", "step_events"]
