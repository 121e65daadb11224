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
group (``beliefgate.models.data.load_logs`` dispatches here); the reading itself is
:func:`beliefgate.envs.fitdata.load_domain_logs`, shared with OvercookedV2.
"""

from __future__ import annotations

from typing import Optional, Sequence

from beliefgate.envs.fitdata import FitDomain, load_domain_logs
from beliefgate.envs.overcooked.dynamics import ImpossibleTransitionError
from beliefgate.envs.overcooked.observer import AMBIGUOUS_WEIGHT, OvercookedObserver
from beliefgate.envs.overcooked.state import StateFormatError
from beliefgate.envs.overcooked.tables import ACTION_NAMES, STAY
from beliefgate.models.data import FitData, PathLike, Progress


def _q_values(observer, state):
    return observer.controller.q_values(state, observer.partner, observer.other_blocks)


def q_and_evidence(observer, state, next_state):
    """``(Q[K, A], StepEvidence)`` for the observer's player between two states.

    The evidence (consistent actions, tempering weight, completion, feasibility)
    is the Gate's own (:meth:`OvercookedObserver.evidence`); ``Q`` comes from the
    same controller, unreduced, so that ``beta`` and ``epsilon`` can be fitted.
    """
    evidence = observer.evidence(state, next_state)
    return _q_values(observer, state), evidence


#: what the shared loader needs from the classic game
FIT_DOMAIN = FitDomain(
    name="overcooked",
    observer=lambda layout, side, amb_w: OvercookedObserver(layout, partner=side, ambiguous_weight=amb_w),
    q_values=_q_values, action_names=tuple(ACTION_NAMES), excluded_actions=(STAY,),
    default_ambiguous_weight=AMBIGUOUS_WEIGHT, step_errors=(StateFormatError, ImpossibleTransitionError))


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
    return load_domain_logs(FIT_DOMAIN, paths, partner_side, allow_incomplete=allow_incomplete,
                            ambiguous_weight=ambiguous_weight, progress=progress)


__all__ = ["FIT_DOMAIN", "q_and_evidence", "load_logs"]
