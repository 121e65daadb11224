"""Overcooked trajectory logs -> the partner-skill model's data (:class:`FitData`).

:func:`load_logs` reads beliefgate trajectory logs (``beliefgate.envs.trajlog``)
and turns the chosen player's steps into the inputs of the partner-skill model of
``docs/model.md``: per step the Overcooked controller's action values
``Q[t, k, a]``, the actions consistent with the observed change, the tempering
weight, feasibility and visible completions. The per-step evidence comes from the
gate's own :class:`~beliefgate.envs.overcooked.observer.OvercookedObserver`
(:func:`q_and_evidence`), so a fitted model, the online gate, replays, the
human-data evaluation and the sensitivity traces read a log in exactly the same
way; only the action values (which the observer turns into log-probabilities at
fixed ``beta, epsilon``) are kept unreduced here, because fitting needs them as a
function of ``beta`` and ``epsilon``.

Registered as the ``overcooked`` loader of the ``beliefgate.fitdata`` entry-point
group (``beliefgate.models.data.load_logs`` dispatches here).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Optional, Sequence

import numpy as np

from beliefgate.envs.overcooked.dynamics import ImpossibleTransitionError
from beliefgate.envs.overcooked.layouts import UnknownLayoutError
from beliefgate.envs.overcooked.observer import AMBIGUOUS_WEIGHT, OvercookedObserver
from beliefgate.envs.overcooked.state import StateFormatError
from beliefgate.envs.overcooked.tables import ACTION_NAMES, STAY
from beliefgate.envs.trajlog import LogFormatError, TruncatedLogError, read_log
from beliefgate.fileio import require_file
from beliefgate.models.data import FitData, FitDataError, PathLike, Progress, pad_trajectories


class _Steps(NamedTuple):
    q: np.ndarray
    mask: np.ndarray
    weight: np.ndarray
    feasible: np.ndarray
    completed: np.ndarray
    ambiguous: np.ndarray
    action: np.ndarray
    true_skill: np.ndarray


def q_and_evidence(observer, state, next_state):
    """``(Q[K, A], StepEvidence)`` for the observer's player between two states.

    The evidence (consistent actions, tempering weight, completion, feasibility)
    is the Gate's own (:meth:`OvercookedObserver.evidence`); ``Q`` comes from the
    same controller, unreduced, so that ``beta`` and ``epsilon`` can be fitted.
    """
    evidence = observer.evidence(state, next_state)
    q = observer.controller.q_values(state, observer.partner, observer.other_blocks)
    return q, evidence


def _trajectory_steps(path: Path, traj, side: int, observer) -> _Steps:
    states = traj.states()
    num_steps = len(states) - 1
    library = observer.library
    index = {name: k for k, name in enumerate(library.names)}
    num_skills, num_actions = library.num_skills, observer.num_actions
    out = _Steps(
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
            q, ev = q_and_evidence(observer, states[t], states[t + 1])
        except (StateFormatError, ImpossibleTransitionError) as exc:
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


def load_logs(paths: Sequence[PathLike], partner_side: Optional[int] = None, *,
              allow_incomplete: bool = False, ambiguous_weight: Optional[float] = None,
              progress: Optional[Progress] = None) -> FitData:
    """Read trajectory logs and build the model data of one player (the partner).

    ``partner_side``: the player whose actions are modelled; default: the seat
    that is not the ego's (``1 - header.seat``). ``allow_incomplete`` accepts a
    log without its final row (its last step, which has no successor state, is
    dropped). ``ambiguous_weight`` overrides the observer's put-down weight
    (default 0.35). ``progress(i, n, label)`` is called after each log.

    Raises :class:`FitDataError` (naming the file) for an unreadable, corrupt,
    truncated or empty log, a bad ``partner_side``, inconsistent states, or a
    partner that never acts (every step has weight 0).
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise FitDataError("no trajectory logs given")
    if partner_side is not None and partner_side < 0:
        raise FitDataError(f"partner side must be >= 0, got {partner_side}")
    amb_w = AMBIGUOUS_WEIGHT if ambiguous_weight is None else float(ambiguous_weight)
    if not 0.0 < amb_w <= 1.0:
        raise FitDataError(f"ambiguous weight must lie in (0, 1], got {amb_w}")
    observers: dict = {}
    per_traj: list[_Steps] = []
    layouts, sides, names = [], [], None
    for i, path in enumerate(paths):
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
        num_players = len(traj.steps[0].state.players)
        side = (1 - traj.header.seat if num_players == 2 else None) if partner_side is None \
            else partner_side
        if side is None:
            raise FitDataError(f"{path}: {num_players} players; say which one with --partner-side")
        if not 0 <= side < num_players:
            raise FitDataError(f"{path}: partner side {side} but the log has {num_players} players")
        key = (traj.header.layout, side)
        if key not in observers:
            try:
                observers[key] = OvercookedObserver(traj.header.layout, partner=side,
                                                    ambiguous_weight=amb_w)
            except UnknownLayoutError as exc:
                raise FitDataError(f"{path}: {exc.args[0] if exc.args else exc}") from None
        observer = observers[key]
        if names is None:
            names = tuple(observer.library.names)
        elif tuple(observer.library.names) != names:
            raise FitDataError(f"{path}: skill library differs from the other logs'")
        steps = _trajectory_steps(path, traj, side, observer)
        if not np.any(steps.weight > 0):
            raise FitDataError(
                f"{path}: player {side} never acts in this log (all {len(steps.weight)} steps are "
                "excluded, e.g. STAY): there is nothing to fit; check --partner-side")
        per_traj.append(steps)
        layouts.append(traj.header.layout)
        sides.append(side)
        if progress is not None:
            progress(i + 1, len(paths), path.name)
    return pad_trajectories(per_traj, names, tuple(ACTION_NAMES), (STAY,), tuple(str(p) for p in paths),
                {"layouts": layouts, "partner_sides": sides, "ambiguous_weight": amb_w,
                 "domain": "overcooked"})


__all__ = ["q_and_evidence", "load_logs"]
