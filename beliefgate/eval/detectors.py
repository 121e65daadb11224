"""Change detectors for hidden partner switches, run over recorded per-step evidence.

The switch benchmark (:mod:`beliefgate.eval.switches`) records, once per episode, the
partner's per-step evidence and one pass of a :class:`~beliefgate.Gate` over it, and
replays both through every detector here:

* :func:`stable_map_alarms` and :func:`threshold_alarms` step the gate's own decision
  functions (:func:`~beliefgate.beliefs.gates.stable_map_decide`,
  :func:`~beliefgate.beliefs.gates.changepoint_decide`) over the recorded belief, so one gate pass scores a whole sweep of decision
  parameters (the belief does not depend on them; ``tests/test_switches.py`` checks the
  replayed alarms against the gate's own ``Decision.interrupt`` / ``Decision.changepoint``);
* :func:`naive_alarms`: alarm whenever the observed action is unlikely under the
  pre-update MAP skill (no stability, confidence or cooldown);
* :func:`cusum_alarms`: Page's CUSUM on the log-likelihood ratio of every other feasible
  skill against the belief's MAP skill (parallel one-sided CUSUMs, one per alternative);
* :func:`bocpd_statistic`: Bayesian online change-point detection (Adams & MacKay 2007)
  with a constant hazard and a categorical segment model (the skill is fixed within a
  run and drawn from the smoothed prior at a change point); its alarm is the posterior
  probability of a change point in the last ``recent`` steps, thresholded like the
  change-point gate.

Everything is NumPy on small arrays in log space; nothing here knows Overcooked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from beliefgate.beliefs.gates import (
    ChangePointConfig,
    ChangePointState,
    StableMapConfig,
    changepoint_decide,
    stable_map_decide,
    stable_map_init,
)
from beliefgate.errors import InputError


class DetectorInputError(InputError):
    """A detector got arrays of the wrong shape or a parameter out of range."""


def _logsumexp(x: np.ndarray, axis=None) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):  # log(0) = -inf when every entry is -inf
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis) if axis is not None else float(out.reshape(()))


@dataclass
class EvidenceTrace:
    """One partner's evidence over an episode (domain-agnostic).

    ``loglik[t, k]`` = log-probability of what was observed at step t under skill k
    (untempered; the sum over consistent actions), ``weight[t]`` its tempering weight
    (0 = excluded step), ``completed[t]`` the skill the step visibly completed (-1: none),
    ``feasible[t, k]`` the skills whose preconditions held.
    """

    loglik: np.ndarray
    weight: np.ndarray
    completed: np.ndarray
    feasible: np.ndarray

    def __post_init__(self) -> None:
        self.loglik = np.asarray(self.loglik, dtype=float)
        T = self.loglik.shape[0] if self.loglik.ndim == 2 else -1
        if T < 0:
            raise DetectorInputError(f"loglik must be float[T, K], got shape {self.loglik.shape}")
        self.weight = np.asarray(self.weight, dtype=float)
        self.completed = np.asarray(self.completed, dtype=int)
        self.feasible = np.asarray(self.feasible, dtype=bool)
        for name, arr, shape in (("weight", self.weight, (T,)), ("completed", self.completed, (T,)),
                                 ("feasible", self.feasible, self.loglik.shape)):
            if arr.shape != shape:
                raise DetectorInputError(f"{name} must have shape {shape}, got {arr.shape}")

    @property
    def num_steps(self) -> int:
        return self.loglik.shape[0]

    @property
    def num_skills(self) -> int:
        return self.loglik.shape[1]

    @classmethod
    def from_steps(cls, steps: Sequence) -> "EvidenceTrace":
        """From a list of :class:`~beliefgate.beliefs.evidence.StepEvidence`."""
        if not steps:
            raise DetectorInputError("an evidence trace needs at least one step")
        K = np.asarray(steps[0].logprobs).shape[0]
        loglik = np.empty((len(steps), K))
        feasible = np.ones((len(steps), K), dtype=bool)
        weight = np.empty(len(steps))
        completed = np.full(len(steps), -1, dtype=int)
        for t, ev in enumerate(steps):
            lp = np.asarray(ev.logprobs, dtype=float)
            mask = np.asarray(ev.action_mask, dtype=bool)
            loglik[t] = _logsumexp(np.where(mask[None, :], lp, -np.inf), axis=1)
            weight[t] = float(ev.weight)
            if ev.completed is not None:
                completed[t] = int(ev.completed)
            if ev.feasible is not None:
                feasible[t] = np.asarray(ev.feasible, dtype=bool)
        return cls(loglik, weight, completed, feasible)


@dataclass
class BeliefTrace:
    """What one pass of the functional gate over recorded evidence reports at every step
    (:func:`belief_pass`; float[T] / int[T] / bool[T]). The one trace every replay reads: the
    switch benchmark's detectors, the sensitivity replays and the tests of both.

    ``map_skill``, ``confidence``, ``stable``: m_t, b(m_t) and stable_t of the pre-update
    belief; ``log_l``: r_t, the gate's log likelihood ratio at ``likelihood_scale`` 1 (its
    ``reference``; 0 where undefined); ``log_l_action``: log pi(a_t | m_t) / max_a pi(a | m_t)
    (the naive rule's ratio); ``cp_prob``: the change-point statistic (NaN when untracked);
    ``weight``: tempering weight; ``interrupt``, ``changepoint``: the gate's own alarms (for
    checking the replayed rules); ``post_map``, ``post_conf``: MAP and its probability after
    the update; ``switch_prob``: P(z_t != z_{t-1} | a_{0:t}) (NaN when untracked);
    ``posterior``: float[T, K] after each update; ``contradiction``: the stable-MAP gate's
    ``l_t < tau_obs``; ``l_t``: its ``exp(lambda r_t)``; ``gate_interrupt``: the interrupt of the
    gate ``GateParams.gate`` chose (``interrupt`` is the stable-MAP gate's own). ``conf`` and
    ``log_ratio`` are the sensitivity replay's names for ``confidence`` and ``log_l``.
    """

    map_skill: np.ndarray
    confidence: np.ndarray
    stable: np.ndarray
    log_l: np.ndarray
    log_l_action: np.ndarray
    cp_prob: np.ndarray
    weight: np.ndarray
    interrupt: np.ndarray
    changepoint: np.ndarray
    post_map: Optional[np.ndarray] = None
    post_conf: Optional[np.ndarray] = None
    switch_prob: Optional[np.ndarray] = None
    posterior: Optional[np.ndarray] = None
    contradiction: Optional[np.ndarray] = None
    l_t: Optional[np.ndarray] = None
    gate_interrupt: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.stable)

    @property
    def conf(self) -> np.ndarray:
        return self.confidence

    @property
    def log_ratio(self) -> np.ndarray:
        return self.log_l


def belief_pass(evidence: Sequence, skill_names: Sequence[str], params, replan: bool = False) -> BeliefTrace:
    """Run the gate's functional core (:func:`beliefgate.beliefs.core.make_gate`) once over
    recorded :class:`~beliefgate.beliefs.evidence.StepEvidence` and keep every step's
    :class:`BeliefTrace` columns. The gate's own interrupt starts its cooldown; with ``replan``
    the ego also replans on every interrupt (every cooldown starts, as
    :meth:`Gate.notify_replanned <beliefgate.beliefs.gate.Gate.notify_replanned>`), otherwise
    nothing else is fed back. Raises the core's
    :class:`~beliefgate.beliefs.errors.BeliefInputError` subclasses."""
    from beliefgate.beliefs.core import make_gate, notify_replanned

    gate = make_gate(params, len(skill_names), skill_names)
    reduce, advance = gate.reduce, gate.advance
    state = gate.init()
    lam = params.likelihood_scale
    T = len(evidence)
    map_skill, stable, post_map = (np.empty(T, dtype=np.int64) for _ in range(3))
    conf, log_l, log_la, cp_prob, weight, post_conf, switch_prob = (np.empty(T) for _ in range(7))
    interrupt, changepoint, contradiction, gate_interrupt = (np.empty(T, dtype=bool) for _ in range(4))
    l_t = np.empty(T)
    posterior = np.empty((T, len(skill_names)))
    for t, ev in enumerate(evidence):
        state, info = advance(state, reduce(ev))
        if replan and info.interrupt:
            state = notify_replanned(state)
        sm, cp, post = info.stable_map, info.changepoint, info.posterior
        posterior[t] = post
        contradiction[t], l_t[t], gate_interrupt[t] = sm.contradiction, sm.l_t, info.interrupt
        m = sm.map_skill
        map_skill[t], stable[t], conf[t] = m, sm.stable, sm.confidence
        log_l[t] = sm.log_l / lam if lam != 0 else _log_ratio(ev, m, params.reference)
        row = np.asarray(ev.logprobs[m], dtype=float)
        log_la[t] = float(row[np.asarray(ev.action_mask, dtype=bool)].max() - row.max())
        cp_prob[t], switch_prob[t], weight[t] = cp.prob, cp.switch_prob, info.weight
        interrupt[t], changepoint[t] = sm.interrupt, cp.fired
        k = int(post.argmax())
        post_map[t], post_conf[t] = k, post[k]
    return BeliefTrace(map_skill, conf, stable, log_l, log_la, cp_prob, weight, interrupt, changepoint,
                       post_map, post_conf, switch_prob, posterior, contradiction, l_t, gate_interrupt)


def _log_ratio(ev, m: int, reference: str) -> float:
    """r_t (log l_t at lambda = 1) for the given reference, from the evidence (only needed when the
    pass ran with lambda = 0, where the gate's log l_t is 0)."""
    lp = np.asarray(ev.logprobs, dtype=float)
    mask = np.asarray(ev.action_mask, dtype=bool)
    best = lp[:, mask].max(axis=1)
    if reference == "action":
        return float(best[m] - lp[m].max())
    feas = np.ones(lp.shape[0], dtype=bool) if ev.feasible is None else np.asarray(ev.feasible, dtype=bool)
    return float(best[m] - best[feas].max())


# ------------------------------------------------------------------------------ decision rules
def stable_map_alarms(b: BeliefTrace, tau_obs: float, confidence_floor: float, n_stable: int, cooldown: int,
                      likelihood_scale: float = 1.0) -> np.ndarray:
    """The stable-MAP gate's interrupts (SPEC §4) on a recorded belief, ego always active: the
    gate's own rule :func:`beliefgate.beliefs.gates.stable_map_decide` stepped over the trace."""
    if not 0.0 <= tau_obs <= 1.0 or likelihood_scale < 0 or cooldown < 0 or n_stable < 0:
        raise DetectorInputError(f"bad stable-MAP parameters tau_obs={tau_obs}, likelihood_scale={likelihood_scale}, "
                                 f"n_stable={n_stable}, cooldown={cooldown}")
    config = StableMapConfig.make(tau_obs, likelihood_scale, confidence_floor, n_stable, cooldown)
    state = stable_map_init()
    out = np.zeros(len(b.log_l), dtype=bool)
    columns = zip(b.map_skill.tolist(), b.confidence.tolist(), b.stable.tolist(), b.log_l.tolist(), b.weight.tolist())
    for t, (m, conf, stable, ratio, weight) in enumerate(columns):
        state, info = stable_map_decide(config, state, t, m, conf, stable, ratio, weight)
        out[t] = info.interrupt
    return out


def threshold_alarms(prob: np.ndarray, threshold: float, release: float, cooldown: int = 0) -> np.ndarray:
    """Fire when ``prob >= threshold`` while armed (then disarm until ``prob < release``), honouring a
    cooldown: the change-point gate's own rule :func:`beliefgate.beliefs.gates.changepoint_decide`
    stepped over ``prob``. NaN never fires."""
    if not 0.0 < threshold <= 1.0 or not 0.0 <= release <= threshold or cooldown < 0:
        raise DetectorInputError(f"need 0 < threshold <= 1, 0 <= release <= threshold, cooldown >= 0; got "
                                 f"threshold={threshold}, release={release}, cooldown={cooldown}")
    config = ChangePointConfig(math.nan, 1, float(threshold), float(release), int(cooldown))
    state = ChangePointState(None, 0, None)  # counters only: the statistic is given
    out = np.zeros(len(prob), dtype=bool)
    for t, p in enumerate(np.asarray(prob, dtype=float).tolist()):
        state, info = changepoint_decide(config, state, t, p)
        out[t] = info.fired
    return out


def naive_alarms(b: BeliefTrace, tau: float) -> np.ndarray:
    """Alarm whenever ``pi(a_t | m_t) / max_a pi(a | m_t) < tau`` (the naive rule)."""
    return (b.weight > 0) & (b.log_l_action < (np.log(tau) if tau > 0 else -np.inf))


# ------------------------------------------------------------------------------------- CUSUM
def cusum_statistic(ev: EvidenceTrace, reference: np.ndarray, h: Optional[float] = None):
    """Page's CUSUM of every other feasible skill against the reference skill: the CUSUM
    gate's own rule (:func:`beliefgate.beliefs.gates.cusum_update`) replayed over a recorded trace.

    ``S_t(k) = max(0, S_{t-1}(k) + w_t (loglik_t(k) - loglik_t(ref_t)))`` for feasible
    ``k != ref_t``; the statistic is ``max_k S_t(k)``. All ``S`` restart at 0 when the
    reference changes (the belief has absorbed the change), after a visible completion
    (a new segment), and -- with ``h`` -- after an alarm (``max_k S_t(k) >= h``).
    With ``reference`` = the gate's pre-update MAP these are the alarms of a
    ``GateParams(gate="cusum", cusum_h=h)`` gate with the ego always active. (Before the gate
    existed, a step whose observation was impossible under the reference left NaN sums that
    swallowed later alarms; the shared rule treats such a step as infinite evidence.)
    Returns ``(statistic float[T], alarms bool[T])``.
    """
    from beliefgate.beliefs.gates import CusumConfig, cusum_init, cusum_update

    reference = np.asarray(reference, dtype=int)
    T, K = ev.loglik.shape
    if reference.shape != (T,):
        raise DetectorInputError(f"reference must have shape ({T},), got {reference.shape}")
    if h is not None and not h > 0:
        raise DetectorInputError(f"CUSUM threshold h must be > 0, got {h}")
    config = CusumConfig(np.inf if h is None else float(h))
    state = cusum_init(K)
    stat = np.zeros(T)
    alarms = np.zeros(T, dtype=bool)
    refs, weights, completed = reference.tolist(), ev.weight.tolist(), ev.completed.tolist()
    for t in range(T):
        w = weights[t]
        ll = w * ev.loglik[t] if w > 0 else None
        state, info = cusum_update(config, state, refs[t], ll, ev.feasible[t], completed[t])
        stat[t] = info.statistic
        alarms[t] = info.fired  # never with h = None (the config's h is inf)
    return stat, alarms


def cusum_alarms(ev: EvidenceTrace, reference: np.ndarray, h: float) -> np.ndarray:
    return cusum_statistic(ev, reference, h)[1]


# -------------------------------------------------------------------------------------- BOCPD
@dataclass
class BOCPDResult:
    """``prob[t]`` = P(a hidden change point in the last ``recent`` steps | data up to t);
    ``pruned_mass`` = total posterior mass dropped by run pruning (reported, not hidden)."""

    prob: np.ndarray
    map_run_length: np.ndarray
    pruned_mass: float
    max_runs_kept: int


def bocpd_statistic(ev: EvidenceTrace, hazard: float = 0.05, alpha: float = 1.0, recent: int = 6,
                    max_runs: int = 400, prune_below: float = 1e-12) -> BOCPDResult:
    """Bayesian online change-point detection (Adams & MacKay 2007) over a skill sequence.

    Generative model: the partner's skill is constant within a run; at each step a new
    run starts with probability ``hazard`` and its skill is drawn from the smoothed prior
    ``pi0(k) ∝ n_k + alpha`` (``n_k`` = completions so far) restricted to feasible skills;
    the observation has likelihood ``exp(w_t * loglik_t(k))`` under skill k. The filter
    keeps, for every run still alive, ``log P(run, z = k | data)``; a skill that becomes
    infeasible in a run is redrawn within that run from ``pi0`` (the state announced it),
    and a visible completion starts one announced run at the next step (neither counts as
    a hidden change point). Runs below ``prune_below`` or beyond the ``max_runs`` most
    probable are dropped and their mass is added to ``pruned_mass``.
    """
    if not 0.0 < hazard < 1.0 or alpha <= 0 or recent < 1 or max_runs < 2:
        raise DetectorInputError(f"need 0 < hazard < 1, alpha > 0, recent >= 1, max_runs >= 2; got hazard={hazard}, "
                                 f"alpha={alpha}, recent={recent}, max_runs={max_runs}")
    T, K = ev.loglik.shape
    counts = np.zeros(K)
    log_h, log_1mh = np.log(hazard), np.log1p(-hazard)

    def log_prior(t: int) -> np.ndarray:
        p = (counts + alpha) * ev.feasible[t]
        with np.errstate(divide="ignore"):
            return np.log(p / p.sum())

    starts = np.array([0])            # start step of each run
    announced = 0                     # start of the last announced run (episode start / after a completion)
    lj = log_prior(0)[None, :]       # log P(run, z = k | data so far), before step 0's evidence
    prob = np.zeros(T)
    map_rl = np.zeros(T, dtype=int)
    pruned = 0.0
    kept_max = 1
    for t in range(T):
        lp0 = log_prior(t)
        if not (len(starts) == 1 and starts[0] == t):  # (a run that starts now is fresh: nothing to grow)
            total = _logsumexp(lj)  # grow every run, and open a new one at t
            lj = np.vstack([lj + log_1mh, (log_h + total) + lp0])
            starts = np.append(starts, t)
        # a skill that became infeasible is redrawn within its run (announced by the state)
        feas = ev.feasible[t]
        if not feas.all():
            lost = _logsumexp(np.where(feas[None, :], -np.inf, lj), axis=1)
            lj = np.where(feas[None, :], np.logaddexp(lj, lost[:, None] + lp0[None, :]), -np.inf)
        w = ev.weight[t]
        if w > 0:
            lj = lj + w * np.where(feas, ev.loglik[t], 0.0)[None, :]
        lj = lj - _logsumexp(lj)
        run_mass = np.exp(_logsumexp(lj, axis=1))
        hidden = (starts > announced) & (starts > t - recent)
        prob[t] = float(run_mass[hidden].sum())
        map_rl[t] = int(t - starts[int(run_mass.argmax())])
        # prune: negligible runs, then all but the most probable (the announced run is kept)
        keep = run_mass >= prune_below
        keep |= starts == announced
        if keep.sum() > max_runs:
            order = np.argsort(-run_mass)
            top = np.zeros_like(keep)
            top[order[:max_runs]] = True
            keep &= top
            keep |= starts == announced
        if not keep.all():
            pruned += float(run_mass[~keep].sum())
            lj, starts = lj[keep], starts[keep]
            lj = lj - _logsumexp(lj)
        kept_max = max(kept_max, len(starts))
        c = ev.completed[t]
        if c >= 0:
            counts[c] += 1
            if t + 1 < T:
                announced = t + 1
                starts = np.array([t + 1])
                lj = log_prior(t + 1)[None, :]
    return BOCPDResult(prob, map_rl, pruned, kept_max)


# ------------------------------------------------------------------------------------ scoring
# The one definition of the switch scores. A switch at step s is detected by the first alarm
# in [s, s + window); its delay is that alarm's step minus s (``window`` when missed); an
# alarm in no switch's window is a false alarm. Everything else (score_alarms here,
# beliefgate.eval.replay.score_switches, beliefgate.eval.sensitivity.replay.score_configs,
# the false-alarm masks of beliefgate.eval.switches) is a view of score_detections.

_UINT16_MAX = int(np.iinfo(np.uint16).max)


def _switch_mask(hidden_switch: np.ndarray, window: int) -> np.ndarray:
    hidden_switch = np.asarray(hidden_switch, dtype=bool)
    if hidden_switch.ndim != 1:
        raise DetectorInputError(f"switches must be bool[T], got shape {hidden_switch.shape}")
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise DetectorInputError(f"window must be an integer >= 1, got {window!r}")
    return hidden_switch


def _window_steps(hidden_switch: np.ndarray, window: int):
    """``(switches int[S], steps int[S, w], inside bool[S, w])``: row i holds the steps ``[s_i, s_i + window)``
    clipped to ``T - 1``, ``inside`` marks those before the end (``w = min(window, T)``: later ones never are)."""
    T = len(hidden_switch)
    switches = np.flatnonzero(hidden_switch)
    steps = switches[:, None] + np.arange(min(window, max(T, 1)))
    inside = steps < T
    return switches, np.minimum(steps, T - 1), inside


def _covered(T: int, steps: np.ndarray, inside: np.ndarray) -> np.ndarray:
    covered = np.zeros(T, dtype=bool)
    covered[steps[inside]] = True
    return covered


def switch_windows(hidden_switch: np.ndarray, window: int = 10) -> np.ndarray:
    """bool[T]: the steps within ``window`` steps after a hidden switch, ``[s, s + window)`` for every switch s
    (clipped at the end); an alarm outside them is a false alarm."""
    hidden_switch = _switch_mask(hidden_switch, window)
    _, steps, inside = _window_steps(hidden_switch, window)
    return _covered(len(hidden_switch), steps, inside)


@dataclass
class SwitchDetections:
    """Per-switch detection of the hidden switches by one alarm sequence (``alarms`` bool[T]) or by ``C``
    sequences at once (bool[T, C]): ``detected`` bool[S] / bool[S, C], ``delays`` int[S] / int[S, C] (a miss
    counts as the full window), ``false_alarms`` an int / int[C]; ``switches`` int[S] are the switch steps."""

    switches: np.ndarray
    detected: np.ndarray
    delays: np.ndarray
    false_alarms: np.ndarray
    steps: int


def score_detections(alarms: np.ndarray, hidden_switch: np.ndarray, window: int = 10) -> SwitchDetections:
    """Score ``alarms`` (bool[T], or bool[T, C]: one sequence per column) against ``hidden_switch`` (bool[T]).

    A switch at step s is detected by the first alarm in [s, s + window); its delay is that alarm's step
    minus s (``window`` when missed). An alarm in no switch's window is a false alarm.
    """
    alarms = np.asarray(alarms, dtype=bool)
    hidden_switch = _switch_mask(hidden_switch, window)
    if alarms.ndim not in (1, 2) or alarms.shape[0] != hidden_switch.shape[0]:
        raise DetectorInputError(f"alarms must be bool[T] or bool[T, C] for switches bool[T]; got alarms "
                                 f"{alarms.shape} and switches {hidden_switch.shape}")
    switches, steps, inside = _window_steps(hidden_switch, window)
    win = alarms[steps]                                    # [S, w] or [S, w, C]: every switch's window at once
    win &= inside.reshape(inside.shape + (1,) * (alarms.ndim - 1))
    detected = win.any(axis=1)
    delays = np.where(detected, win.argmax(axis=1), window)  # argmax: the first alarm in the window
    covered = _covered(len(hidden_switch), steps, inside)
    # count in uint16 while a column cannot overflow it (~2x faster than summing bools)
    count_dtype = np.uint16 if len(alarms) <= _UINT16_MAX else np.int64
    false_alarms = np.add.reduce(alarms[~covered].view(np.uint8), axis=0, dtype=count_dtype).astype(int)
    return SwitchDetections(switches, detected, delays, false_alarms, len(alarms))


@dataclass
class EpisodeScore:
    """Detection of the hidden switches of one episode by one alarm sequence."""

    delays: List[int]        # per switch; a miss counts as the full window
    detected: List[bool]     # per switch
    false_alarms: int
    steps: int


def score_alarms(alarms: np.ndarray, hidden_switch: np.ndarray, window: int = 10) -> EpisodeScore:
    """:func:`score_detections` of one alarm sequence (bool[T]), as plain lists per switch."""
    if np.ndim(alarms) != 1:
        raise DetectorInputError(f"alarms must be bool[T], got shape {np.shape(alarms)}")
    d = score_detections(alarms, hidden_switch, window)
    return EpisodeScore(d.delays.tolist(), d.detected.tolist(), int(d.false_alarms), d.steps)
