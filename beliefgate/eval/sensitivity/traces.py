"""Logged episodes and belief traces: what one pass of the gate's belief over a log
gives the decision replay (:mod:`beliefgate.eval.sensitivity.replay`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.beliefs.config import GateParams
from beliefgate.beliefs.gates import CHANGEPOINT, gate_driver
from beliefgate.errors import InputError, LookupFailure
from beliefgate.eval.detectors import BeliefTrace as _BeliefTrace, belief_pass
from beliefgate.eval.sensitivity.errors import SensitivityError
from beliefgate.eval.sensitivity.ranges import BELIEF_PARAMS


@dataclass
class LoggedEpisode:
    """One logged episode prepared for replays of one partner.

    ``truth[t]``: the partner's true skill index (-1 unknown); ``hidden[t]``: a
    hidden switch at ``t`` (:func:`beliefgate.eval.replay.ground_truth`);
    ``has_truth``: the log carries the partner's skills at all.
    """

    name: str
    trajectory: object
    partner: int
    skill_names: Tuple[str, ...]
    truth: np.ndarray
    hidden: np.ndarray
    has_truth: bool
    _evidence: Dict[tuple, list] = field(default_factory=dict, repr=False)

    @property
    def steps(self) -> int:
        return len(self.truth)

    def evidence(self, beta: float, epsilon: float) -> list:
        """The partner's per-step evidence under the controller's (beta, epsilon), cached."""
        key = (float(beta), float(epsilon))
        if key not in self._evidence:
            from beliefgate.eval.replay import partner_evidence

            self._evidence[key] = partner_evidence(self.trajectory, self.partner,
                                                   GateParams(controller={"beta": key[0], "epsilon": key[1]}))
        return self._evidence[key]

    def summary(self) -> dict:
        h = self.trajectory.header
        return {"name": self.name, "layout": h.layout, "seed": h.seed, "partner": self.partner,
                "partner_agent": h.partner, "steps": self.steps, "hidden_switches": int(self.hidden.sum()),
                "has_truth": self.has_truth}


def prepare_episode(trajectory, name: str = "episode", partner: Optional[int] = None,
                    base: Optional[GateParams] = None) -> LoggedEpisode:
    """Wrap a :class:`~beliefgate.envs.trajlog.Trajectory` for sensitivity replays.

    ``partner`` defaults to the player who is not the ego (``1 - header.seat``).
    """
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.eval.replay import ground_truth

    base = base or GateParams()
    h = trajectory.header
    players = len(h.agents)
    if partner is None:
        partner = 1 - h.seat if players == 2 else None
        if partner is None:
            raise SensitivityError(f"{name}: {players} players; say which one is the partner")
    if not 0 <= partner < players or partner == h.seat:
        raise SensitivityError(f"{name}: partner must be a player index other than the ego seat {h.seat}, "
                               f"got {partner}")
    if trajectory.final is None:
        raise SensitivityError(f"{name}: the log has no final state (the last step cannot be replayed)")
    try:  # an unknown layout or an impossible step: said with the log's name (a folder holds many)
        names = tuple(domain_for_layout(h.layout).make_observer(base, layout=h.layout, partner=partner).skill_names)
        ep = LoggedEpisode(name, trajectory, partner, names, np.zeros(0, int), np.zeros(0, bool), False)
        ev = ep.evidence(base.beta, base.epsilon)
    except (InputError, LookupFailure) as exc:
        raise SensitivityError(f"{name}: {exc}") from exc
    truth, hidden = ground_truth(trajectory, partner, names, evidence=ev)
    ep.truth, ep.hidden = truth, hidden
    ep.has_truth = bool(np.any(truth >= 0))
    return ep


def resolve_log_paths(items: Sequence[str]) -> List[Path]:
    """Log files from paths (a directory stands for its ``*.jsonl`` files, sorted)."""
    out: List[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            found = sorted(p.glob("*.jsonl"))
            if not found:
                raise SensitivityError(f"{p}: directory holds no *.jsonl logs")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise SensitivityError(f"{p}: no such log file or directory")
    if not out:
        raise SensitivityError("give at least one trajectory log")
    return out


def load_episodes(paths: Sequence[Path], partner: Optional[int] = None, base: Optional[GateParams] = None,
                  progress: Optional[Callable[[int, int, str], None]] = None) -> List[LoggedEpisode]:
    """Read and prepare logs (:func:`beliefgate.envs.trajlog.read_log` errors name the line)."""
    from beliefgate.envs.trajlog import read_log

    episodes = []
    for i, p in enumerate(paths):
        if progress is not None:
            progress(i, len(paths), f"reading {Path(p).name}")
        episodes.append(prepare_episode(read_log(p), str(p), partner, base))
    return episodes


#: The one belief trace (:class:`beliefgate.eval.detectors.BeliefTrace`; ``conf`` and ``log_ratio``
#: name its ``confidence`` and ``log_l``).
BeliefTrace = _BeliefTrace


def belief_params(base: GateParams, key: Optional[tuple] = None) -> GateParams:
    """Parameters of the belief pass for one belief key (``None``: the base's)."""
    changes = {} if key is None else dict(zip(BELIEF_PARAMS, key))
    needs_cp = CHANGEPOINT.slot in gate_driver(base.gate.kind).slots
    return base.replace(**changes, likelihood_scale=1.0, track_changepoint=needs_cp)


def belief_trace(evidence: list, skill_names: Sequence[str], params: GateParams) -> BeliefTrace:
    """The belief pass the decision replay reads (:func:`beliefgate.eval.detectors.belief_pass`).

    ``params.likelihood_scale`` must be 1 so that the logged ``log l_t`` is ``r_t``.
    Raises the core's :class:`~beliefgate.beliefs.errors.BeliefInputError` subclasses.
    """
    if params.likelihood_scale != 1.0:
        raise SensitivityError("belief_trace needs likelihood_scale = 1 (then log l_t = r_t)")
    return belief_pass(evidence, skill_names, params)


__all__ = ["LoggedEpisode", "prepare_episode", "resolve_log_paths", "load_episodes", "BeliefTrace", "belief_params",
           "belief_trace"]
