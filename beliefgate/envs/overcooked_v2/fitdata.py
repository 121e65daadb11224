"""OvercookedV2 trajectory logs -> the skill model's data (:class:`FitData`) and the goal (recipe)
model's data (:class:`~beliefgate.models.goal.model.GoalData`).

* :func:`load_logs` -- the ``overcooked_v2`` loader of the ``beliefgate.fitdata`` entry-point group
  (``beliefgate fit --domain overcooked_v2``, found from a log's ``v2/`` layout without the flag):
  the shared reader :func:`beliefgate.envs.fitdata.load_domain_logs` with the gate's own
  :class:`~.observer.V2Observer`, so a fit and the online gate read a V2 log identically;
* :func:`load_goal_logs` -- the same steps plus, per step, the recipe belief's evidence as the
  belief agents compute it (:meth:`~.domain.OvercookedV2Domain.goal_evidence`: the goal-conditioned
  skill log-weights, the goal-change flag, direct evidence as player ``viewer`` sees it), packed by
  :func:`beliefgate.models.goal.goal_data` for :func:`~beliefgate.models.goal.fit_goal`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from beliefgate.envs.fitdata import (FitDomain, load_domain_logs, modelled_side, read_trajectory,
                                     trajectory_steps)
from beliefgate.envs.overcooked_v2.layouts import ACTION_NAMES, STAY
from beliefgate.envs.overcooked_v2.observer import AMBIGUOUS_WEIGHT, V2Observer
from beliefgate.envs.overcooked_v2.state import V2StateError
from beliefgate.errors import InputError, LookupFailure
from beliefgate.models.data import FitData, FitDataError, PathLike, Progress


def _q_values(observer: V2Observer, state):
    return observer.controller.q_values(state, observer.partner)


#: what the shared loader needs from OvercookedV2
FIT_DOMAIN = FitDomain(
    name="overcooked_v2",
    observer=lambda layout, side, amb_w: V2Observer(layout, partner=side, ambiguous_weight=amb_w),
    q_values=_q_values, action_names=tuple(ACTION_NAMES), excluded_actions=(STAY,),
    default_ambiguous_weight=AMBIGUOUS_WEIGHT, step_errors=(V2StateError,))


def load_logs(paths: Sequence[PathLike], partner_side: Optional[int] = None, *,
              allow_incomplete: bool = False, ambiguous_weight: Optional[float] = None,
              progress: Optional[Progress] = None) -> FitData:
    """V2 trajectory logs -> the skill model's data of one player (the partner; default: the seat
    that is not the ego's on two players, ``partner_side`` on three). Errors as the classic loader's
    (:class:`FitDataError` naming the file, and the step for a bad pair of states)."""
    return load_domain_logs(FIT_DOMAIN, paths, partner_side, allow_incomplete=allow_incomplete,
                            ambiguous_weight=ambiguous_weight, progress=progress)


def load_goal_logs(paths: Sequence[PathLike], partner_side: Optional[int] = None, *,
                   viewer: Optional[int] = None, allow_incomplete: bool = False,
                   concentration: Optional[float] = None, use_view: bool = True):
    """V2 trajectory logs -> :class:`~beliefgate.models.goal.model.GoalData` of one player (the
    partner) for the goal (recipe) model: the skill model's arrays of :func:`load_logs`, plus per
    step the recipe evidence about the partner as player ``viewer`` (default: the ego seat) observes
    it -- the goal-conditioned skill log-weights ``[G, K]`` (``concentration``: default the domain's
    ``GOAL_CONCENTRATION``; the domain is reached through ``domain_for_layout``), the goal-change flag and the direct evidence (a delivered dish; a
    recipe the viewer sees, unless ``use_view`` is false). Every log must be on layouts with the
    same recipes. Raises :class:`FitDataError` naming the file."""
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.models.goal import goal_data

    paths = [Path(p) for p in paths]
    if not paths:
        raise FitDataError("no trajectory logs given")
    given = {}   # the domain's own concentration unless one is given
    if concentration is not None:
        if isinstance(concentration, bool) or not isinstance(concentration, (int, float)) \
                or not np.isfinite(concentration) or concentration < 0:
            raise FitDataError(f"concentration must be a finite number >= 0, got {concentration!r}")
        given["concentration"] = float(concentration)
    rows, goals = [], None
    for path in paths:
        traj = read_trajectory(path, allow_incomplete)
        side = modelled_side(path, traj, partner_side)
        players = len(traj.steps[0].state.players)
        see = traj.header.seat if viewer is None else viewer
        if isinstance(see, bool) or not isinstance(see, int) or not 0 <= see < players or see == side:
            raise FitDataError(f"{path}: viewer must be a player other than the partner {side} "
                               f"(0..{players - 1}), got {see!r}")
        layout = traj.header.layout
        try:
            observer = FIT_DOMAIN.observer(layout, side, AMBIGUOUS_WEIGHT)
            domain = domain_for_layout(layout)   # the seam: this module does not import the domain
            names = tuple(domain.goal_names(layout) or ())
        except (LookupFailure, InputError) as exc:
            raise FitDataError(f"{path}: {exc.args[0] if exc.args else exc}") from None
        if goals is None:
            goals = names
        elif names != goals:
            raise FitDataError(f"{path}: recipes {', '.join(names)} differ from the other logs' "
                               f"({', '.join(goals)})")
        steps = trajectory_steps(FIT_DOMAIN, path, traj, side, observer)
        if not np.any(steps.weight > 0):
            raise FitDataError(f"{path}: player {side} never acts in this log: there is nothing to fit")
        states = traj.states()
        skill_names = list(observer.library.names)
        w, change, direct = [], [], []
        for t in range(len(states) - 1):
            try:
                lw, flag, gl = domain.goal_evidence(states[t], states[t + 1], side, see, skill_names,
                                                    use_view=use_view, **given)
            except V2StateError as exc:
                raise FitDataError(f"{path}: step {t}: {exc}") from None
            w.append(lw)
            change.append(flag)
            direct.append(np.zeros(len(goals)) if gl is None else gl)
        rows.append((steps, np.asarray(w, float), np.asarray(change, float), np.asarray(direct, float)))
    horizon = max(len(r[0].weight) for r in rows)
    num_skills, num_actions = rows[0][0].q.shape[1:]
    batch = len(rows)
    q = np.zeros((batch, horizon, num_skills, num_actions))
    mask = np.ones((batch, horizon, num_actions), bool)
    weight = np.zeros((batch, horizon))
    feasible = np.ones((batch, horizon, num_skills), bool)
    completed = np.full((batch, horizon), -1, np.int64)
    valid = np.zeros((batch, horizon), bool)
    log_w = np.zeros((batch, horizon, len(goals), num_skills))
    flags = np.zeros((batch, horizon))
    direct_ll = np.zeros((batch, horizon, len(goals)))
    for b, (s, lw, flag, gl) in enumerate(rows):
        n = len(s.weight)
        q[b, :n], mask[b, :n], weight[b, :n], feasible[b, :n] = s.q, s.mask, s.weight, s.feasible
        completed[b, :n], valid[b, :n] = s.completed, True
        log_w[b, :n], flags[b, :n], direct_ll[b, :n] = lw, flag, gl
    return goal_data(q, mask, log_w, None, flags, direct_ll, weight=weight, feasible=feasible,
                     completed=completed, valid=valid)


def load_goal_fit_data(paths: Sequence[PathLike], partner_side: Optional[int] = None, *,
                       allow_incomplete: bool = False, **options):
    """V2 trajectory logs -> :class:`~beliefgate.models.goal.model.GoalFitData` for ``beliefgate fit
    --model goal`` (reached through :meth:`.domain.OvercookedV2Domain.load_goal_fit_data`): the
    :func:`load_goal_logs` data, the recipe names, the partner's skill names, the paths and the
    recipe active at each step of each log (-1 on padding). ``options``: those of
    :func:`load_goal_logs`. A layout without recipes raises :class:`FitDataError` naming the file."""
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.models.goal import GoalFitData

    paths = [Path(p) for p in paths]
    if not paths:
        raise FitDataError("no trajectory logs given")
    truth, goals, skills = [], None, None
    for path in paths:
        traj = read_trajectory(path, allow_incomplete)
        layout = traj.header.layout
        try:
            domain = domain_for_layout(layout)
            names = tuple(domain.goal_names(layout) or ())
            skills = skills or tuple(FIT_DOMAIN.observer(layout, modelled_side(path, traj, partner_side),
                                                         AMBIGUOUS_WEIGHT).library.names)
        except (LookupFailure, InputError) as exc:
            raise FitDataError(f"{path}: {exc.args[0] if exc.args else exc}") from None
        if not names:
            raise FitDataError(f"{path}: layout {layout} has no recipes: nothing for the goal model to infer")
        goals = goals or names
        states = traj.states()
        # the step rows are the transitions states[t] -> states[t + 1]: the recipe active at states[t]
        truth.append([goals.index(r) if r in goals else -1 for r in
                      ("-".join(map(str, domain.active_recipe(st))) for st in states[:-1])])
    data = load_goal_logs(paths, partner_side, allow_incomplete=allow_incomplete, **options)
    horizon = int(np.asarray(data.skill.valid).shape[-1])
    true_goal = np.full((len(paths), horizon), -1, np.int64)
    for b, row in enumerate(truth):
        true_goal[b, :len(row)] = row
    return GoalFitData(data, goals, skills, tuple(str(p) for p in paths), true_goal)


__all__ = ["FIT_DOMAIN", "load_goal_fit_data", "load_goal_logs", "load_logs"]
