"""Trajectory logs of a grid-world domain -> the partner-skill model's data (:class:`FitData`).

One loader for every domain whose observer is the gate's (classic Overcooked, OvercookedV2): per
step of the chosen player it keeps the controller's action values ``Q[t, k, a]`` unreduced (fitting
needs them as a function of ``beta`` and ``epsilon``) beside the observer's own evidence (consistent
actions, tempering weight, feasibility, visible completion), so a fitted model and the online gate
read a log identically. A domain supplies how to build its observer and read ``Q`` from it
(:class:`FitDomain`); ``envs/overcooked/fitdata.py`` and ``envs/overcooked_v2/fitdata.py`` are the two
instances, registered in the ``beliefgate.fitdata`` entry-point group.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple, Optional, Sequence, Tuple, Type

import numpy as np

from beliefgate.envs.trajlog import LogFormatError, TruncatedLogError, read_log
from beliefgate.errors import InputError, LookupFailure
from beliefgate.fileio import require_file
from beliefgate.models.data import FitData, FitDataError, PathLike, Progress, pad_trajectories


class Steps(NamedTuple):
    """One trajectory's per-step arrays (``[T, ...]``), as :func:`pad_trajectories` takes them."""

    q: np.ndarray
    mask: np.ndarray
    weight: np.ndarray
    feasible: np.ndarray
    completed: np.ndarray
    ambiguous: np.ndarray
    action: np.ndarray
    true_skill: np.ndarray


@dataclass(frozen=True)
class FitDomain:
    """What the loader needs from one domain.

    ``observer(layout, side, ambiguous_weight)`` builds the gate's observer of player ``side``
    (``.library``, ``.num_actions``, ``.evidence(s0, s1)``); ``q_values(observer, state)`` its
    controller's ``Q[K, A]`` in ``state``; ``step_errors``: the exceptions a bad pair of logged
    states raises (named with the file and step).
    """

    name: str
    observer: Callable
    q_values: Callable
    action_names: Tuple[str, ...]
    excluded_actions: Tuple[int, ...]
    default_ambiguous_weight: float
    step_errors: Tuple[Type[BaseException], ...]


def q_and_evidence(domain: FitDomain, observer, state, next_state):
    """``(Q[K, A], StepEvidence)`` for the observer's player between two states: the evidence is the
    gate's own, ``Q`` comes from the same controller, unreduced."""
    evidence = observer.evidence(state, next_state)
    return domain.q_values(observer, state), evidence


def trajectory_steps(domain: FitDomain, path: Path, traj, side: int, observer) -> Steps:
    """The model's per-step arrays of player ``side`` in one logged trajectory."""
    states = traj.states()
    num_steps = len(states) - 1
    library = observer.library
    index = {name: k for k, name in enumerate(library.names)}
    num_skills, num_actions = library.num_skills, observer.num_actions
    out = Steps(
        q=np.zeros((num_steps, num_skills, num_actions)),
        mask=np.zeros((num_steps, num_actions), bool),
        weight=np.zeros(num_steps),
        feasible=np.zeros((num_steps, num_skills), bool),
        completed=np.full(num_steps, -1, np.int64),
        ambiguous=np.zeros(num_steps, bool),
        action=np.full(num_steps, -1, np.int32),
        true_skill=np.full(num_steps, -1, np.int32),
    )
    for t in range(num_steps):
        try:
            q, ev = q_and_evidence(domain, observer, states[t], states[t + 1])
        except domain.step_errors as exc:
            raise FitDataError(f"{path}: step {t}: {exc}") from None
        out.q[t], out.mask[t], out.weight[t], out.feasible[t] = q, ev.action_mask, ev.weight, ev.feasible
        out.completed[t] = -1 if ev.completed is None else int(ev.completed)
        out.ambiguous[t] = 0.0 < ev.weight < 1.0
        row = traj.steps[t]
        if side < len(row.actions) and 0 <= row.actions[side] < num_actions \
                and ev.action_mask[row.actions[side]]:
            out.action[t] = row.actions[side]
        if side < len(row.skills) and row.skills[side] in index:
            out.true_skill[t] = index[row.skills[side]]
    return out


def read_trajectory(path: Path, allow_incomplete: bool):
    """A log for fitting: read, with its problems as :class:`FitDataError` naming the file."""
    require_file(path, FitDataError, "trajectory log")
    try:
        traj = read_log(path, allow_incomplete=allow_incomplete)
    except TruncatedLogError as exc:
        raise FitDataError(f"truncated trajectory log (interrupted run? --allow-incomplete keeps "
                           f"its finished steps): {exc}") from None
    except LogFormatError as exc:
        raise FitDataError(f"corrupt trajectory log: {exc}") from None
    if not traj.steps or len(traj.states()) < 2:
        raise FitDataError(f"{path}: the log has no steps (empty episode)")
    return traj


def modelled_side(path: Path, traj, partner_side: Optional[int]) -> int:
    """The player whose actions are modelled: ``partner_side``, else the seat that is not the ego's
    (two players only)."""
    num_players = len(traj.steps[0].state.players)
    side = (1 - traj.header.seat if num_players == 2 else None) if partner_side is None else partner_side
    if side is None:
        raise FitDataError(f"{path}: {num_players} players; say which one with --partner-side")
    if not 0 <= side < num_players:
        raise FitDataError(f"{path}: partner side {side} but the log has {num_players} players")
    return side


def load_domain_logs(domain: FitDomain, paths: Sequence[PathLike], partner_side: Optional[int] = None, *,
                     allow_incomplete: bool = False, ambiguous_weight: Optional[float] = None,
                     progress: Optional[Progress] = None) -> FitData:
    """Read trajectory logs of ``domain`` and build the model data of one player (the partner).

    ``partner_side``: the player whose actions are modelled; default: the seat that is not the
    ego's (``1 - header.seat``; a log with more players needs it). ``allow_incomplete`` accepts a
    log without its final row (its last step, which has no successor state, is dropped).
    ``ambiguous_weight`` overrides the observer's put-down weight. ``progress(i, n, label)`` is
    called after each log.

    Raises :class:`FitDataError` (naming the file) for an unreadable, corrupt, truncated or empty
    log, a bad ``partner_side``, a layout the domain does not play, inconsistent states, or a
    partner that never acts (every step has weight 0).
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise FitDataError("no trajectory logs given")
    if partner_side is not None and partner_side < 0:
        raise FitDataError(f"partner side must be >= 0, got {partner_side}")
    amb_w = domain.default_ambiguous_weight if ambiguous_weight is None else float(ambiguous_weight)
    if not 0.0 < amb_w <= 1.0:
        raise FitDataError(f"ambiguous weight must lie in (0, 1], got {amb_w}")
    observers: dict = {}
    per_traj: list = []
    layouts, sides, names = [], [], None
    for i, path in enumerate(paths):
        traj = read_trajectory(path, allow_incomplete)
        side = modelled_side(path, traj, partner_side)
        key = (traj.header.layout, side)
        if key not in observers:
            try:
                observers[key] = domain.observer(traj.header.layout, side, amb_w)
            except (LookupFailure, InputError) as exc:
                raise FitDataError(f"{path}: {exc.args[0] if exc.args else exc}") from None
        observer = observers[key]
        if names is None:
            names = tuple(observer.library.names)
        elif tuple(observer.library.names) != names:
            raise FitDataError(f"{path}: skill library differs from the other logs'")
        steps = trajectory_steps(domain, path, traj, side, observer)
        if not np.any(steps.weight > 0):
            raise FitDataError(
                f"{path}: player {side} never acts in this log (all {len(steps.weight)} steps are "
                "excluded, e.g. STAY): there is nothing to fit; check --partner-side")
        per_traj.append(steps)
        layouts.append(traj.header.layout)
        sides.append(side)
        if progress is not None:
            progress(i + 1, len(paths), path.name)
    return pad_trajectories(per_traj, names, domain.action_names, domain.excluded_actions,
                            tuple(str(p) for p in paths),
                            {"layouts": layouts, "partner_sides": sides, "ambiguous_weight": amb_w,
                             "domain": domain.name})


__all__ = ["FitDomain", "Steps", "load_domain_logs", "modelled_side", "q_and_evidence", "read_trajectory",
           "trajectory_steps"]
