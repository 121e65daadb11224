"""The flat state dict a generated policy tree reads (Co-pi-tree appendix A.9 schema).

:func:`flat_state` builds it from a :class:`~beliefgate.envs.overcooked.state.SymbolicState`
for the player in seat ``player`` (either seat). It holds only plain JSON data, so it can be
sent to the sandbox worker as is. Version :data:`FLAT_STATE_VERSION`; every key is listed in
:data:`FLAT_STATE_KEYS` and described below. A change of meaning or a removed key bumps the
version; a tree can read ``state["version"]``.

Keys
----
``version``
    :data:`FLAT_STATE_VERSION`.
``self_player``
    index of the controlled player (0 or 1); ``hold[self_player]`` is its own hold.
``hold``
    ``[player0_hold, player1_hold]``, each ``"empty"``, ``"onion"``, ``"dish"`` or ``"soup"``
    (the paper's layout, indexed by player).
``holdings``
    ``{"self": ..., "teammate": ...}``: the same two holds seen from the controlled player.
``pot``
    one dict per pot, in the layout's pot order: ``count`` (onions in it, 0-3), ``state``
    (``"idle"`` while filling or empty, ``"cooking"``, ``"ready"``) and ``timers`` (cook ticks
    left while cooking, 0 when ready, ``None`` when idle).
``any_soup_ready``
    some pot holds a ready soup.
``any_pot_not_full``
    some pot is idle with fewer than three onions.
``num_empty_counters``, ``num_onion_counters``, ``num_dish_counters``, ``num_soup_counters``
    counter cells that are empty / hold an onion / a dish / a plated soup (the paper lists the
    first three as optional Forced Coordination fields; here they are always present).
``reach_onion_counters``, ``reach_dish_counters``, ``reach_soup_counters``
    the same counts over the counters the controlled player can reach from where it stands
    (next to its floor region); equal to the totals where the floor is one region, smaller where
    a counter wall splits it (forced_coordination: an onion left on the far side is no onion).
``shared_empty_counters``, ``shared_onion_counters``, ``shared_dish_counters``
    counters both players can reach (the places an item is handed over) that are empty / hold an
    onion / a dish.
``teammate_last_completed_skill``
    the last skill the teammate visibly completed this episode (from its interaction events),
    or ``None``.
``teammate_last_inferred_skill``
    the caller's latest inference of the teammate's current skill, or ``None``: the tree's own
    previous prediction, or a belief filter's MAP skill (the Bayesian variant).
``self_last_skill``
    the skill the controlled player was executing before this decision (the tree's previous
    choice), or ``None`` at the start.

:func:`flat_state_text` renders the dict as one line of plain language (used in rollout
traces shown to the summarizer).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict

from beliefgate.envs.overcooked.kitchen import counter_sides
from beliefgate.envs.overcooked.layouts import layout_info
from beliefgate.envs.overcooked.state import POT_CAPACITY, SymbolicState
from beliefgate.errors import InputError

FLAT_STATE_VERSION = 1

HOLDS = ("empty", "onion", "dish", "soup")

FLAT_STATE_KEYS = (
    "version", "self_player", "hold", "holdings", "pot", "any_soup_ready", "any_pot_not_full",
    "num_empty_counters", "num_onion_counters", "num_dish_counters", "num_soup_counters",
    "reach_onion_counters", "reach_dish_counters", "reach_soup_counters", "shared_empty_counters",
    "shared_onion_counters", "shared_dish_counters",
    "teammate_last_completed_skill", "teammate_last_inferred_skill", "self_last_skill",
)


class FlatStateError(InputError):
    """A state that the flat schema cannot express (e.g. a tomato, or a bad seat)."""


class PotDict(TypedDict):
    count: int
    state: str
    timers: Optional[int]


class FlatState(TypedDict):
    """Type of the dict :func:`flat_state` returns (see the module docstring for meanings)."""

    version: int
    self_player: int
    hold: List[str]
    holdings: Dict[str, str]
    pot: List[PotDict]
    any_soup_ready: bool
    any_pot_not_full: bool
    num_empty_counters: int
    num_onion_counters: int
    num_dish_counters: int
    num_soup_counters: int
    reach_onion_counters: int
    reach_dish_counters: int
    reach_soup_counters: int
    shared_empty_counters: int
    shared_onion_counters: int
    shared_dish_counters: int
    teammate_last_completed_skill: Optional[str]
    teammate_last_inferred_skill: Optional[str]
    self_last_skill: Optional[str]


def _hold(held: Optional[str], player: int) -> str:
    value = "empty" if held is None else held
    if value not in HOLDS:
        raise FlatStateError(f"player {player} holds {held!r}; the flat state knows only {', '.join(HOLDS)}")
    return value


def flat_state(state: SymbolicState, player: int, *, teammate_last_completed_skill: Optional[str] = None,
               teammate_last_inferred_skill: Optional[str] = None,
               self_last_skill: Optional[str] = None) -> FlatState:
    """The flat dict of ``state`` as seen by ``player`` (two-player layouts)."""
    if len(state.players) != 2:
        raise FlatStateError(f"the flat state is defined for two players, got {len(state.players)}")
    if player not in (0, 1):
        raise FlatStateError(f"player must be 0 or 1, got {player!r}")
    hold = [_hold(p.held, i) for i, p in enumerate(state.players)]
    pots: List[PotDict] = []
    for pot in state.pots:
        if pot.ready:
            pots.append({"count": POT_CAPACITY, "state": "ready", "timers": 0})
        elif pot.cooking:
            pots.append({"count": POT_CAPACITY, "state": "cooking", "timers": int(pot.timer)})
        else:
            pots.append({"count": int(pot.ingredients), "state": "idle", "timers": None})
    objects = [o.name for o in state.counters]
    counters = len(layout_info(state.layout).counters)
    mine, shared, occupied = counter_sides(state, player)
    reach = [o.name for o in state.counters if o.position in mine]
    handed = [o.name for o in state.counters if o.position in shared]
    return {
        "version": FLAT_STATE_VERSION,
        "self_player": player,
        "hold": hold,
        "holdings": {"self": hold[player], "teammate": hold[1 - player]},
        "pot": pots,
        "any_soup_ready": any(p["state"] == "ready" for p in pots),
        "any_pot_not_full": any(p["state"] == "idle" and p["count"] < POT_CAPACITY for p in pots),
        "num_empty_counters": counters - len(objects),
        "num_onion_counters": objects.count("onion"),
        "num_dish_counters": objects.count("dish"),
        "num_soup_counters": objects.count("soup"),
        "reach_onion_counters": reach.count("onion"),
        "reach_dish_counters": reach.count("dish"),
        "reach_soup_counters": reach.count("soup"),
        "shared_empty_counters": len(shared - occupied),
        "shared_onion_counters": handed.count("onion"),
        "shared_dish_counters": handed.count("dish"),
        "teammate_last_completed_skill": teammate_last_completed_skill,
        "teammate_last_inferred_skill": teammate_last_inferred_skill,
        "self_last_skill": self_last_skill,
    }


def _pot_text(i: int, pot: Dict[str, Any]) -> str:
    if pot["state"] == "ready":
        return f"pot{i} ready"
    if pot["state"] == "cooking":
        return f"pot{i} cooking ({pot['timers']} left)"
    return f"pot{i} {pot['count']}/3 onions"


def flat_state_text(d: FlatState) -> str:
    """One line of plain language for a flat state (self's view)."""
    parts = [f"self holds {d['holdings']['self']}", f"teammate holds {d['holdings']['teammate']}"]
    parts += [_pot_text(i, p) for i, p in enumerate(d["pot"])]
    items = [f"{d[k]} {name}" for k, name in (("num_onion_counters", "onion"), ("num_dish_counters", "dish"),
                                               ("num_soup_counters", "soup")) if d[k]]
    if items:
        parts.append("on counters: " + ", ".join(items))
    if d["teammate_last_completed_skill"]:
        parts.append(f"teammate last completed {d['teammate_last_completed_skill']}")
    return "; ".join(parts)


def probe_states(layout: str, seat: int) -> List[Dict[str, Any]]:
    """Flat states covering every holding pair and the typical pot situations of ``layout``."""
    info = layout_info(layout)
    n_pots, n_counters = len(info.pots), len(info.counters)
    shared = info.shared_floor
    situations = [{"count": 0, "state": "idle", "timers": None}, {"count": 2, "state": "idle", "timers": None},
                  {"count": 3, "state": "cooking", "timers": 9}, {"count": 3, "state": "ready", "timers": 0}]
    last = (None, "pickup_onion", "put_onion_in_pot", "pickup_dish", "fill_dish_with_soup", "deliver_soup")
    states = []
    i = 0
    for own in HOLDS:
        for mate in HOLDS:
            for s, pot in enumerate(situations):
                pots = [dict(pot)] + [dict(situations[(s + j) % 4]) for j in range(1, n_pots)]
                hold = [own, mate] if seat == 0 else [mate, own]
                onions = i % 3
                states.append({
                    "version": FLAT_STATE_VERSION, "self_player": seat, "hold": hold,
                    "holdings": {"self": own, "teammate": mate}, "pot": pots,
                    "any_soup_ready": any(p["state"] == "ready" for p in pots),
                    "any_pot_not_full": any(p["state"] == "idle" and p["count"] < 3 for p in pots),
                    "num_empty_counters": max(n_counters - onions - (i % 2), 0), "num_onion_counters": onions,
                    "num_dish_counters": i % 2, "num_soup_counters": 0,
                    "reach_onion_counters": onions if shared or seat == i % 2 else 0,
                    "reach_dish_counters": i % 2 if shared else 0, "reach_soup_counters": 0,
                    "shared_empty_counters": max(n_counters - onions - (i % 2), 0) if shared else 2,
                    "shared_onion_counters": onions if shared else onions % 2,
                    "shared_dish_counters": i % 2 if shared else 0,
                    "teammate_last_completed_skill": last[i % len(last)],
                    "teammate_last_inferred_skill": last[(i + 2) % len(last)],
                    "self_last_skill": last[(i + 4) % len(last)],
                })
                i += 1
    return states
