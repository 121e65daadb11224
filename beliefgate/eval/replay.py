"""Replay logged partner behaviour through a gate (offline, deterministic).

The partner's evidence (action log-probabilities, consistent actions, weights,
completions, feasibility) depends only on the log and the controller's
(beta, epsilon); :func:`partner_evidence` computes it once so that many gate
configurations can be replayed over the same sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.envs.domain import domain_for_layout
from beliefgate.envs.trajlog import Trajectory
from beliefgate.eval.detectors import belief_pass, score_alarms


@dataclass
class ReplayResult:
    """Per-step gate outputs aligned with the partner's ground truth.

    ``truth[t]`` is the partner's logged active skill at step t (-1 = unknown or
    idle); ``hidden_switch[t]`` marks a change of the true skill at t that no
    visible completion at t-1 announced.
    """

    layout: str
    partner: int
    skill_names: Sequence[str]
    posterior: np.ndarray        # float[T, K]
    map_skill: np.ndarray        # int[T]
    confidence: np.ndarray       # float[T]
    contradiction: np.ndarray    # bool[T]  (the naive rule: l_t < tau_obs)
    interrupt: np.ndarray        # bool[T]  (stable-MAP gate)
    changepoint: np.ndarray      # bool[T]  (change-point gate)
    changepoint_prob: np.ndarray  # float[T]
    truth: np.ndarray            # int[T]
    hidden_switch: np.ndarray    # bool[T]
    l_t: np.ndarray              # float[T]  the gate's l_t (its GateParams.reference)
    weight: np.ndarray           # float[T]  tempering weight (0 = excluded step)
    l_action: np.ndarray         # float[T]  pi(a_t | m_t) / max_a pi(a | m_t) under the pre-update MAP m_t

    def naive_alarms(self, tau: float) -> np.ndarray:
        """The naive rule: alarm whenever the observed action is unlikely under the MAP,
        ``pi(a_t | m_t) / max_a pi(a | m_t) < tau`` (no stability, confidence or cooldown)."""
        return (self.weight > 0) & (self.l_action < tau)

    @property
    def map_accuracy(self) -> float:
        known = self.truth >= 0
        return float(np.mean(self.map_skill[known] == self.truth[known])) if known.any() else float("nan")


def partner_evidence(traj: Trajectory, partner: int, params=None) -> List[StepEvidence]:
    """Evidence about ``partner`` at every logged step."""
    layout = traj.header.layout
    observer = domain_for_layout(layout).make_observer(params, layout=layout, partner=partner)
    states = traj.states()
    if len(states) < len(traj.steps) + 1:
        raise ValueError("the log needs its final state to replay the last step")
    return [observer.evidence(states[t], states[t + 1]) for t in range(len(traj.steps))]


def ground_truth(traj: Trajectory, partner: int, names: Sequence[str], min_segment: int = 3,
                 evidence: Optional[List[StepEvidence]] = None):
    """True skill indices (-1 unknown) and hidden-switch markers of the partner.

    A hidden switch at step t: the true skill changes from ``truth[t-1]`` to
    ``truth[t]`` without a visible completion of ``truth[t-1]`` at t-1, and the new
    skill then runs at least ``min_segment`` steps (a switch completed at once
    leaves nothing to detect and the completion itself resets the belief). With
    ``evidence``, a change away from a skill that had become infeasible (its targets
    vanished) is not hidden either: the state announces it.
    """
    index = {n: i for i, n in enumerate(names)}
    truth = np.array([index.get(row.skills[partner], -1) if row.skills[partner] else -1 for row in traj.steps])
    layout = traj.header.layout
    domain = domain_for_layout(layout)
    library = domain.controller(layout).library
    completed_skills = domain.completed_skills
    hidden = np.zeros(len(truth), dtype=bool)
    for t in range(1, len(truth)):
        prev, cur = truth[t - 1], truth[t]
        if prev >= 0 and cur >= 0 and prev != cur:
            done = completed_skills(traj.steps[t - 1].events[partner], library)
            if prev in done:
                continue
            if evidence is not None and evidence[t].feasible is not None and not evidence[t].feasible[prev]:
                continue
            # detectable: the new skill runs for at least `min_segment` steps before anything else
            seg = truth[t:t + min_segment]
            hidden[t] = len(seg) == min_segment and bool(np.all(seg == cur)) and not any(
                cur in completed_skills(traj.steps[u].events[partner], library)
                for u in range(t, t + min_segment - 1))
    return truth, hidden


def replay(traj: Trajectory, params=None, partner: Optional[int] = None,
           evidence: Optional[List[StepEvidence]] = None) -> ReplayResult:
    """Run a fresh gate over the partner's logged behaviour: the one belief pass
    (:func:`beliefgate.eval.detectors.belief_pass`) with the ego replanning on every interrupt,
    aligned with the partner's ground truth."""
    from beliefgate.beliefs.gate import GateParams

    params = params or GateParams()
    if partner is None:  # the ego's first teammate
        partner = next(i for i in range(len(traj.header.agents)) if i != traj.header.seat)
    layout = traj.header.layout
    observer_names = domain_for_layout(layout).make_observer(params, layout=layout, partner=partner).skill_names
    evidence = evidence if evidence is not None else partner_evidence(traj, partner, params)
    tr = belief_pass(evidence, list(observer_names), params, replan=True)
    truth, hidden = ground_truth(traj, partner, observer_names, evidence=evidence)
    return ReplayResult(traj.header.layout, partner, observer_names, tr.posterior, tr.post_map, tr.post_conf,
                        tr.contradiction, tr.gate_interrupt, tr.changepoint, tr.cp_prob, truth, hidden,
                        tr.l_t, tr.weight, np.exp(tr.log_l_action))


@dataclass
class SwitchScores:
    """Detection of hidden partner switches by one alarm sequence."""

    switches: int
    detected: int
    mean_delay: float          # over all switches; a miss counts as the full window
    false_alarms: int
    steps: int

    @property
    def detection_rate(self) -> float:
        return self.detected / self.switches if self.switches else float("nan")

    @property
    def false_alarms_per_100(self) -> float:
        return 100.0 * self.false_alarms / self.steps if self.steps else float("nan")

    def __add__(self, other: "SwitchScores") -> "SwitchScores":
        n = self.switches + other.switches
        total = sum(s.mean_delay * s.switches for s in (self, other) if s.switches)
        delay = total / n if n else float("nan")
        return SwitchScores(n, self.detected + other.detected, delay,
                            self.false_alarms + other.false_alarms, self.steps + other.steps)


def score_switches(alarms: np.ndarray, hidden_switch: np.ndarray, window: int = 10) -> SwitchScores:
    """Delay and false alarms of ``alarms`` (bool[T]) against the true hidden switches.

    A switch at step s is detected by the first alarm in [s, s + window); its delay
    is that alarm's step minus s (``window`` when missed). An alarm in no switch's
    window is a false alarm. The totals of :func:`beliefgate.eval.detectors.score_alarms`
    (same validation: :class:`~beliefgate.eval.detectors.DetectorInputError`).
    """
    sc = score_alarms(alarms, hidden_switch, window)
    mean_delay = float(np.mean(sc.delays)) if sc.delays else float("nan")
    return SwitchScores(len(sc.delays), sum(sc.detected), mean_delay, sc.false_alarms, sc.steps)
