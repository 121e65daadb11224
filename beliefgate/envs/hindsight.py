"""Hindsight skill labels: which skill was a player executing at each step?

Human players do not announce their skills, so the label of a step is read
backwards from what the player did next (the rule, also in ``docs/human_data.md``):

    The skill of player ``p`` at step ``t`` is the skill that ``p`` completes with
    its next *effective interaction* at a step ``u >= t``: the first step whose
    interaction events (``detect_events``: ``pickup:onion``, ``potting:onion``,
    ``pickup:dish``, ``pickup:soup``, ``deliver:soup``, ``drop:<obj>``, ...) list
    something for ``p``. The step of the interaction itself belongs to that skill.
    The skill is the library skill whose completion event matches
    (``completed_skills``).

A step is labelled ``None`` (idle / unknown, excluded from accuracy) when

* ``p`` makes no effective interaction for the rest of the log, or
* that interaction completes no skill of the library (e.g. ``pickup:plated_soup``,
  a plated soup taken from a counter, or anything with a tomato), or
* (optional, off by default) it lies more than ``max_lookahead`` steps ahead.

An interaction that only fails (INTERACT facing nothing useful) has no event and
does not end a skill. Labels are consistent with the held-object requirements by
construction: the object a player holds at ``t`` is the one it holds right
before its next interaction.

The rule is the same in every domain: the events are the domain's (``Domain.detect_events``), the
skill an interaction completes is the domain's ``completed_skills`` over its library
(:func:`domain_labels`). So a player that announces no skill -- a trained policy, a human -- gets
ground-truth skills in any game, and the metrics that need the partner's true skill (accuracy, gap,
Comp@3, duplicate rate) read them from the log like a scripted partner's.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Dict, List, Optional, Sequence

#: identifier of the labelling rule, recorded in converted logs
RULE = "next-effective-interaction/1"


def _library(library):
    if library is None:
        from beliefgate.skills import load_builtin

        return load_builtin("overcooked")
    return library


def hindsight_labels(events: Sequence[Sequence[Sequence[str]]], library=None,
                     max_lookahead: Optional[int] = None,
                     completed: Optional[Callable[[Sequence[str], object], List[int]]] = None
                     ) -> List[List[Optional[str]]]:
    """Hindsight labels ``labels[t][p]`` (skill name or ``None``) from per-step events.

    ``events[t][p]`` lists player ``p``'s interaction events of step ``t``
    (the ``events`` column of a trajectory log). ``max_lookahead`` (steps, >= 0)
    labels a step ``None`` when the completing interaction is further ahead.
    ``completed(events, library)`` gives the library indices of the skills an interaction
    completes (a domain's ``completed_skills``; default: classic Overcooked's, with its library).
    """
    if completed is None:
        from beliefgate.envs.overcooked.dynamics import completed_skills as completed
    library = _library(library)
    if max_lookahead is not None and max_lookahead < 0:
        raise ValueError(f"max_lookahead must be >= 0 or None, got {max_lookahead}")
    num_steps = len(events)
    if num_steps == 0:
        return []
    num_players = len(events[0])
    for t, row in enumerate(events):
        if len(row) != num_players:
            raise ValueError(f"step {t} has events for {len(row)} players, step 0 for {num_players}")
    labels: List[List[Optional[str]]] = [[None] * num_players for _ in range(num_steps)]
    for p in range(num_players):
        label: Optional[str] = None
        at: Optional[int] = None  # step of the interaction that defines `label`
        for t in range(num_steps - 1, -1, -1):
            evs = events[t][p]
            if evs:
                done = completed(evs, library)
                label = library.names[done[0]] if done else None
                at = t
            if label is not None and (max_lookahead is None or at - t <= max_lookahead):
                labels[t][p] = label
    return labels


def trajectory_labels(traj, library=None, max_lookahead: Optional[int] = None) -> List[List[Optional[str]]]:
    """Hindsight labels of a :class:`~beliefgate.envs.trajlog.Trajectory` (from its logged events)."""
    return hindsight_labels([row.events for row in traj.steps], library, max_lookahead)


def domain_labels(domain, layout: str, events: Sequence[Sequence[Sequence[str]]],
                  max_lookahead: Optional[int] = None) -> List[List[Optional[str]]]:
    """Hindsight labels of per-step ``events`` of an episode on ``layout`` in ``domain`` (a
    :class:`~beliefgate.envs.domain.Domain`): its library (``controller(layout).library``) and its
    ``completed_skills``."""
    library = domain.controller(layout).library
    return hindsight_labels(events, library, max_lookahead, completed=domain.completed_skills)


def relabel_seats(steps, seats: Sequence[int], labels: Sequence[Sequence[Optional[str]]]) -> int:
    """Write ``labels`` into the ``skills`` of the logged ``steps`` for ``seats`` (players that
    announce no skill); returns how many steps got a label."""
    written = 0
    for row, lab in zip(steps, labels):
        for seat in seats:
            row.skills[seat] = lab[seat]
            written += lab[seat] is not None
    return written


def label_counts(labels: Sequence[Sequence[Optional[str]]], player: Optional[int] = None) -> Dict[str, int]:
    """How many steps carry each label (``"unknown"`` for ``None``), for one player or all."""
    counts: Counter = Counter()
    for row in labels:
        for p, lab in enumerate(row):
            if player is None or p == player:
                counts[lab if lab is not None else "unknown"] += 1
    return dict(counts)
