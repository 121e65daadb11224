"""Replaying ``C`` configurations on logged episodes: the batched gate decision over a
belief trace, the column-wise switch scores and :func:`evaluate_configs`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from beliefgate.beliefs.errors import BeliefInputError
from beliefgate.beliefs.gates import (
    ChangePointState,
    changepoint_decide,
    changepoint_notify_replanned,
    CHANGEPOINT,
    STABLE_MAP,
    gate_driver,
    stable_map_decide,
    stable_map_init,
    stable_map_notify_replanned,
)
from beliefgate.eval.detectors import score_detections
from beliefgate.eval.sensitivity.configs import ConfigTable, DecisionColumns
from beliefgate.eval.sensitivity.errors import SensitivityError
from beliefgate.eval.sensitivity.ranges import BELIEF_PARAMS
from beliefgate.eval.sensitivity.traces import BeliefTrace, LoggedEpisode, belief_params, belief_trace

#: Outputs measured per configuration, with their display labels.
OUTPUTS: Dict[str, str] = {
    "interrupts_per_episode": "interrupts / episode",
    "detection_delay": "detection delay (steps)",
    "false_alarms_per_100": "false alarms / 100 steps",
    "detection_rate": "detection rate",
    "map_accuracy": "MAP accuracy",
    "mean_confidence": "mean confidence",
}
#: Outputs that need the logs' ground truth.
TRUTH_OUTPUTS = ("detection_delay", "false_alarms_per_100", "detection_rate", "map_accuracy")


# --------------------------------------------------------------------------- the batched gate

GATE_MODES = ("stable_map", "changepoint", "either")


def vectorised_interrupts(trace: BeliefTrace, dec: DecisionColumns, mode: str = "stable_map") -> np.ndarray:
    """Interrupts of ``C`` gate configurations on one belief sequence: bool[T, C].

    The gate's own decision rules (:func:`beliefgate.beliefs.gates.stable_map_decide`,
    :func:`~beliefgate.beliefs.gates.changepoint_decide`, combined by the mode's driver
    :func:`~beliefgate.beliefs.gates.gate_driver`) stepped once per step of the
    trace with every configuration field and counter a ``[C]`` array, the ego always
    active and a replan after every interrupt (both cooldowns restart, as
    :meth:`Gate.notify_replanned <beliefgate.beliefs.gate.Gate.notify_replanned>` does in
    :func:`beliefgate.eval.replay.replay`). Column ``c`` equals the scalar gate run with
    configuration ``c`` (``tests/test_sensitivity.py``).
    """
    if mode not in GATE_MODES:
        raise SensitivityError(f"unknown gate mode {mode!r}; use one of {', '.join(GATE_MODES)}")
    T, C = len(trace), len(dec)
    out = np.zeros((T, C), dtype=bool)
    if T == 0 or C == 0:
        return out
    driver = gate_driver(mode)
    use_sm, use_cp = STABLE_MAP.slot in driver.slots, CHANGEPOINT.slot in driver.slots
    sm_config, cp_config = dec.stable_map, dec.changepoint
    sm_state = stable_map_init()                     # scalar start values broadcast to [C]
    cp_state = ChangePointState(None, 0, None)      # counters only: the trace holds the filter's statistic
    map_skill = (trace.map_skill if trace.map_skill is not None else np.full(T, -1)).tolist()
    stable, conf, ratio, weight = (a.tolist() for a in (trace.stable, trace.conf, trace.log_ratio, trace.weight))
    cp_prob = trace.cp_prob.tolist()
    sm_fired = cp_fired = False
    for t in range(T):
        if use_sm:
            sm_state, sm_info = stable_map_decide(sm_config, sm_state, t, map_skill[t], conf[t], stable[t],
                                                  ratio[t], weight[t])
            sm_fired = sm_info.interrupt
        if use_cp:
            cp_state, cp_info = changepoint_decide(cp_config, cp_state, t, cp_prob[t])
            cp_fired = cp_info.fired
        interrupt = driver.interrupt((sm_fired, cp_fired, False))
        if interrupt is False:
            continue
        out[t] = interrupt
        # the ego replans on every interrupt: both cooldowns start at t
        sm_state = stable_map_notify_replanned(sm_state, t, interrupt)
        cp_state = changepoint_notify_replanned(cp_state, t, interrupt)
    return out


# --------------------------------------------------------------------------- evaluation


@dataclass
class _Totals:
    """Per-configuration accumulators (arrays of shape [C])."""

    n: int
    episodes: int = 0
    interrupts: np.ndarray = None
    switches: int = 0
    detected: np.ndarray = None
    delay_sum: np.ndarray = None
    false_alarms: np.ndarray = None
    truth_steps: int = 0
    map_correct: np.ndarray = None
    map_known: np.ndarray = None
    conf_sum: np.ndarray = None
    steps: int = 0

    def __post_init__(self):
        z = lambda: np.zeros(self.n)  # noqa: E731
        self.interrupts, self.detected, self.delay_sum, self.false_alarms = z(), z(), z(), z()
        self.map_correct, self.map_known, self.conf_sum = z(), z(), z()

    def outputs(self) -> Dict[str, np.ndarray]:
        nan = np.full(self.n, math.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            return {
                "interrupts_per_episode": self.interrupts / max(self.episodes, 1),
                "detection_delay": self.delay_sum / self.switches if self.switches else nan,
                "false_alarms_per_100": 100.0 * self.false_alarms / self.truth_steps if self.truth_steps else nan,
                "detection_rate": self.detected / self.switches if self.switches else nan,
                "map_accuracy": np.where(self.map_known > 0, self.map_correct / np.maximum(self.map_known, 1), nan),
                "mean_confidence": self.conf_sum / max(self.steps, 1),
            }


def score_configs(alarms: np.ndarray, hidden: np.ndarray, window: int):
    """:func:`~beliefgate.eval.detectors.score_detections` of every column of ``alarms`` (bool[T, C]),
    summed over the switches: ``(detected, delay_sum, false_alarms)``, each float[C]."""
    d = score_detections(alarms, hidden, window)
    return (d.detected.sum(axis=0).astype(float), d.delays.sum(axis=0).astype(float),
            d.false_alarms.astype(float))


def evaluate_configs(episodes: Sequence[LoggedEpisode], configs: ConfigTable, window: int = 10,
                     progress: Optional[Callable[[int, int, str], None]] = None) -> Dict[str, np.ndarray]:
    """Replay every episode under every configuration; returns ``OUTPUTS`` -> float[C].

    One belief pass per (belief group, episode), then :func:`vectorised_interrupts`
    over the group's configurations. Detection scores pool all switches and steps
    of the episodes that carry ground truth (a missed switch counts ``window``).
    """
    if not episodes:
        raise SensitivityError("no episodes to replay")
    if window < 1:
        raise SensitivityError(f"detection window must be >= 1, got {window}")
    C = len(configs)
    base = configs.base
    totals = _Totals(C)
    groups = configs.belief_groups()
    # evidence keys outermost so that each episode's evidence is computed once per (beta, epsilon)
    order = sorted(groups, key=lambda k: (k[BELIEF_PARAMS.index("beta")], k[BELIEF_PARAMS.index("epsilon")]))
    jobs = len(order) * len(episodes)
    done = 0
    beta_i, eps_i = BELIEF_PARAMS.index("beta"), BELIEF_PARAMS.index("epsilon")
    last_evidence_key = None
    for key in order:
        idx = groups[key]
        dec = configs.decision_columns(idx)
        bparams = belief_params(base, key)
        ekey = (key[beta_i], key[eps_i])
        base_ekey = (float(base.beta), float(base.epsilon))
        if last_evidence_key is not None and ekey != last_evidence_key and last_evidence_key != base_ekey:
            for ep in episodes:  # free the previous (beta, epsilon)'s evidence (the base's stays cached)
                ep._evidence.pop((float(last_evidence_key[0]), float(last_evidence_key[1])), None)
        last_evidence_key = ekey
        for ep in episodes:
            if progress is not None:
                progress(done, jobs, f"{Path(ep.name).name} ({len(idx)} configs)")
            try:
                trace = belief_trace(ep.evidence(*ekey), ep.skill_names, bparams)
            except BeliefInputError as exc:
                changed = {n: v for n, v in zip(BELIEF_PARAMS, key) if v != getattr(base, n)}
                raise SensitivityError(f"{ep.name}: the belief pass failed with {changed or 'the base parameters'}: "
                                       f"{exc}") from exc
            alarms = vectorised_interrupts(trace, dec, base.gate.kind)
            totals.interrupts[idx] += alarms.sum(axis=0)
            totals.conf_sum[idx] += float(trace.post_conf.sum())
            if ep.has_truth:
                det, dsum, fa = score_configs(alarms, ep.hidden, window)
                totals.detected[idx] += det
                totals.delay_sum[idx] += dsum
                totals.false_alarms[idx] += fa
                known = ep.truth >= 0
                totals.map_correct[idx] += float(np.sum(trace.post_map[known] == ep.truth[known]))
                totals.map_known[idx] += float(known.sum())
            done += 1
    for ep in episodes:
        totals.episodes += 1
        totals.steps += ep.steps
        if ep.has_truth:
            totals.switches += int(ep.hidden.sum())
            totals.truth_steps += ep.steps
    if progress is not None:
        progress(jobs, jobs, "done")
    return totals.outputs()


def count_belief_passes(configs: ConfigTable, episodes: int) -> int:
    """How many scalar belief passes :func:`evaluate_configs` will run."""
    return len(configs.belief_groups()) * episodes


def unavailable_outputs(episodes: Sequence[LoggedEpisode]) -> Dict[str, str]:
    """The outputs these logs cannot give, each with why: the truth outputs without logged true
    skills, detection without a hidden switch."""
    truth = any(ep.has_truth for ep in episodes)
    switches = any(ep.has_truth and ep.hidden.any() for ep in episodes)
    out = {}
    for k in OUTPUTS:
        if k in TRUTH_OUTPUTS and not truth:
            out[k] = "the logs carry no true partner skills"
        elif k in ("detection_delay", "detection_rate") and not switches:
            out[k] = "these logs hold no hidden switch"
    return out


def _available(episodes: Sequence[LoggedEpisode]) -> List[str]:
    missing = unavailable_outputs(episodes)
    return [k for k in OUTPUTS if k not in missing]




__all__ = ["OUTPUTS", "TRUTH_OUTPUTS", "vectorised_interrupts", "score_configs", "evaluate_configs",
           "count_belief_passes"]
