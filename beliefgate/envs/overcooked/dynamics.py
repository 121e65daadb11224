"""What happened between two consecutive symbolic states.

* :func:`infer_actions` -- the set of primitive actions of one player consistent
  with the change (usually exactly one; "nothing visible changed" keeps every
  consistent action: STAY, an INTERACT without effect, a blocked move).
* :func:`detect_events` -- the interaction events of each player
  (``pickup:onion``, ``potting:onion``, ``pickup:soup``, ``deliver:soup``,
  ``drop:dish``, ...), from which skill completions are read.

An impossible change (a teleport, an object appearing from nowhere, a held
object changing without an interaction) raises :class:`ImpossibleTransitionError`
naming the step.
"""

from __future__ import annotations
from beliefgate.errors import InputError

from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from beliefgate.envs.overcooked.layouts import DIRECTIONS, LayoutInfo, Pos, layout_info
from beliefgate.envs.overcooked.state import PlayerView, SymbolicState
from beliefgate.envs.overcooked.tables import ACTION_NAMES, INTERACT, STAY

INGREDIENTS = ("onion", "tomato")
DISPENSED = {"O": "onion", "T": "tomato", "D": "dish"}


class ImpossibleTransitionError(InputError):
    """Two consecutive states that no joint action of the game can connect."""

    def __init__(self, message: str, step: Optional[int] = None, player: Optional[int] = None):
        where = f"step {step}" if step is not None else "transition"
        if player is not None:
            where += f", player {player}"
        super().__init__(f"{where}: {message}")
        self.step = step
        self.player = player


def _add(p: Pos, d: Pos) -> Pos:
    return (p[0] + d[0], p[1] + d[1])


def _held_event(before: Optional[str], after: Optional[str], faced_kind: str) -> Optional[str]:
    """The event a held-object change at a faced cell of kind ``faced_kind`` means, or None if impossible."""
    if before is None and after is not None:
        if faced_kind in DISPENSED and DISPENSED[faced_kind] == after:
            return f"pickup:{after}"
        if faced_kind == "X":
            return "pickup:plated_soup" if after == "soup" else f"pickup:{after}"
        return None
    if before is not None and after is None:
        if faced_kind == "X":
            return f"drop:{before}"
        if faced_kind == "P" and before in INGREDIENTS:
            return f"potting:{before}"
        if faced_kind == "S" and before == "soup":
            return "deliver:soup"
        return None
    if before == "dish" and after == "soup" and faced_kind == "P":
        return "pickup:soup"
    return None


def _interact_would_act(player: PlayerView, state: SymbolicState, info: LayoutInfo) -> bool:
    """Would an INTERACT of ``player`` in ``state`` have a visible effect (old dynamics)?"""
    cell = player.facing
    kind = info.kind(cell)
    held = player.held
    if kind == "X":
        on_counter = state.counter_object(cell)
        return (held is not None and on_counter is None) or (held is None and on_counter is not None)
    if kind in DISPENSED:
        return held is None
    if kind == "P":
        pot = state.pot_at(cell)
        if pot is None:
            return False
        if held == "dish":
            return pot.ready
        if held in INGREDIENTS:
            return not pot.full
        return False
    if kind == "S":
        return held == "soup"
    return False


def infer_actions(prev: SymbolicState, nxt: SymbolicState, player: int,
                  step: Optional[int] = None) -> FrozenSet[int]:
    """Actions of ``player`` (indices in Overcooked order N, S, E, W, STAY, INTERACT) consistent with ``prev -> nxt``."""
    _check_pair(prev, nxt, step)
    info = layout_info(prev.layout)
    a, b = prev.players[player], nxt.players[player]
    if a.position != b.position:
        delta = (b.position[0] - a.position[0], b.position[1] - a.position[1])
        if delta not in DIRECTIONS or delta != b.orientation:
            raise ImpossibleTransitionError(
                f"moved from {a.position} to {b.position} facing {b.orientation}: not one step", step, player)
        if a.held != b.held:
            raise ImpossibleTransitionError("held object changed while moving", step, player)
        return frozenset({DIRECTIONS.index(delta)})
    if a.orientation != b.orientation:
        if a.held != b.held:
            raise ImpossibleTransitionError("held object changed while turning", step, player)
        return frozenset({DIRECTIONS.index(b.orientation)})
    faced = a.facing
    kind = info.kind(faced)
    if a.held != b.held:
        if _held_event(a.held, b.held, kind) is None:
            raise ImpossibleTransitionError(
                f"held object {a.held!r} -> {b.held!r} facing a {kind!r} cell at {faced}", step, player)
        return frozenset({INTERACT})
    # Same pose, same held object: did the player still act on the faced cell?
    if kind == "P":
        pa, pb = prev.pot_at(faced), nxt.pot_at(faced)
        if pa is not None and pb is not None and a.held is None and not pa.cooking and pb.cooking \
                and pa.ingredients == pb.ingredients and pa.ingredients > 0 and not _auto_cook(pa):
            return frozenset({INTERACT})  # new dynamics: interact starts cooking
    options = {STAY}
    if not _interact_would_act(a, prev, info) or _shared_target(prev, nxt, player, faced):
        options.add(INTERACT)
    if _move_blocked_possible(prev, nxt, player, a.orientation, info):
        options.add(DIRECTIONS.index(a.orientation))
    return frozenset(options)


def _auto_cook(pot) -> bool:
    return pot.ingredients >= 3


def _shared_target(prev: SymbolicState, nxt: SymbolicState, player: int, cell: Pos) -> bool:
    """Another player acting on the same cell this step can pre-empt this player's INTERACT."""
    for j, (pa, pb) in enumerate(zip(prev.players, nxt.players)):
        if j != player and pa.facing == cell and pa.position == pb.position and pa.held != pb.held:
            return True
    return False


def _move_blocked_possible(prev: SymbolicState, nxt: SymbolicState, player: int,
                           direction: Pos, info: LayoutInfo) -> bool:
    me = prev.players[player].position
    target = _add(me, direction)
    if not info.is_floor(target):
        return True
    for j, (pa, pb) in enumerate(zip(prev.players, nxt.players)):
        if j == player:
            continue
        if target in (pa.position, pb.position):
            return True
        # a simultaneous attempt on the same cell, or a swap attempt, reverts both moves
        if pa.position == pb.position and _add(pb.position, pb.orientation) in (target, me):
            return True
    if len(prev.players) > 2:  # a collision among the others reverts everyone
        return any(pa.position == pb.position for pa, pb in zip(prev.players, nxt.players))
    return False


def _check_pair(prev: SymbolicState, nxt: SymbolicState, step: Optional[int]) -> None:
    if prev.layout != nxt.layout:
        raise ImpossibleTransitionError(f"layout changed from {prev.layout} to {nxt.layout}", step)
    if len(prev.players) != len(nxt.players):
        raise ImpossibleTransitionError("number of players changed", step)


def detect_events(prev: SymbolicState, nxt: SymbolicState, step: Optional[int] = None) -> List[List[str]]:
    """Per-player interaction events of ``prev -> nxt``; checks the world change is explained.

    Raises :class:`ImpossibleTransitionError` when counters or pots change in a way
    no player's interaction explains (e.g. an object appearing from nowhere).
    """
    _check_pair(prev, nxt, step)
    info = layout_info(prev.layout)
    events: List[List[str]] = [[] for _ in prev.players]
    explained_counters: Dict[Pos, str] = {}
    explained_pots: Dict[Pos, List[Tuple[int, str]]] = {}  # (player, event) in player order
    for i, (a, b) in enumerate(zip(prev.players, nxt.players)):
        if a.held == b.held or a.position != b.position or a.orientation != b.orientation:
            if a.held != b.held:
                raise ImpossibleTransitionError("held object changed without an interaction", step, i)
            continue
        kind = info.kind(a.facing)
        ev = _held_event(a.held, b.held, kind)
        if ev is None:
            raise ImpossibleTransitionError(
                f"held object {a.held!r} -> {b.held!r} facing a {kind!r} cell", step, i)
        events[i].append(ev)
        if kind == "X":
            explained_counters[a.facing] = ev
        elif kind == "P":
            explained_pots.setdefault(a.facing, []).append((i, ev))
    _check_counters(prev, nxt, explained_counters, step)
    _check_pots(prev, nxt, explained_pots, events, info, step)
    return events


def _check_counters(prev, nxt, explained, step) -> None:
    before, after = prev.counter_dict(), nxt.counter_dict()
    for cell in set(before) | set(after):
        if before.get(cell) == after.get(cell):
            continue
        ev = explained.get(cell)
        if ev is None:
            what = (f"a {after[cell]} appeared from nowhere" if cell not in before
                    else f"the {before[cell]} vanished" if cell not in after
                    else f"{before[cell]} turned into {after[cell]}")
            raise ImpossibleTransitionError(f"counter {cell}: {what}", step)


def _check_pots(prev, nxt, explained, events, info, step) -> None:
    for pa in prev.pots:
        pb = nxt.pot_at(pa.position)
        if pb is None:
            raise ImpossibleTransitionError(f"pot {pa.position} disappeared", step)
        evs = explained.get(pa.position, [])
        potters = [i for i, e in evs if e.startswith("potting:")]
        potted = len(potters)
        scoopers = [i for i, e in evs if e == "pickup:soup"]
        if scoopers:
            if len(scoopers) > 1 or not pa.ready:
                raise ImpossibleTransitionError(
                    f"pot {pa.position}: soup removed without a single dish pickup of a ready soup", step)
            # the simulator resolves interactions in player order: a player after the scooper can
            # put an onion into the pot it has just emptied; one before it met a full pot
            if any(i < scoopers[0] for i in potters) or pb.ingredients != potted:
                raise ImpossibleTransitionError(
                    f"pot {pa.position}: ingredients {pa.ingredients} -> {pb.ingredients} after the soup was "
                    f"taken by player {scoopers[0]} and onions potted by players {potters}", step)
        elif pb.ingredients != pa.ingredients + potted:
            raise ImpossibleTransitionError(
                f"pot {pa.position}: ingredients {pa.ingredients} -> {pb.ingredients} "
                f"but {potted} onion(s) were potted", step)
        if not pa.cooking and pb.cooking and not _auto_cook(pb):
            raise ImpossibleTransitionError(f"pot {pa.position} started cooking with {pb.ingredients} onions", step)


def action_name(action: int) -> str:
    return ACTION_NAMES[action]


def completion_matches(event: str, completion: str) -> bool:
    """Does an event (``drop:dish``) satisfy a skill's completion name (``drop:any``)?"""
    if event == completion:
        return True
    kind, _, obj = completion.partition(":")
    return obj == "any" and event.startswith(kind + ":")


def completed_skills(events: Sequence[str], library) -> List[int]:
    """Indices of the library skills whose completion event appears in ``events``."""
    return [k for k, s in enumerate(library.skills) if any(completion_matches(e, s.completion) for e in events)]
