"""The switch benchmark: how well do the gates and standard change detectors find hidden partner switches?

For every (layout, partner, seed) it plays one scripted episode on the layout's real dynamics
(in seat 0 the domain's ``switch_ego``: ``balanced`` in Overcooked, ``v2-server`` in OvercookedV2,
under the domain's ``switch_env_options``: V2 resamples the recipe on delivery, which is when its
recipe-seeing partners change course), computes the partner's per-step evidence once
(:func:`beliefgate.eval.replay.partner_evidence`), finds the partner's *hidden* switches
(a change of its true skill that no visible completion or vanished target announced:
:func:`beliefgate.eval.replay.ground_truth`), runs one pass of the functional gate over
the evidence (:func:`beliefgate.eval.detectors.belief_pass`, the one belief trace the
sensitivity replays read too), and replays the recording through every detector of
:mod:`beliefgate.eval.detectors`:

* ``stable-MAP gate`` -- swept over ``tau_obs`` (the other fields from the given
  :class:`~beliefgate.GateParams`); its operating point is the given parameters;
* ``change-point gate`` -- swept over ``cp_threshold`` (``cp_release`` keeps its ratio);
* ``naive threshold`` -- ``pi(a_t | m_t) / max_a pi(a | m_t) < tau``, swept over ``tau``;
* ``CUSUM (LLR)`` -- Page's CUSUM of the other skills' log-likelihood ratio against the
  belief's MAP skill, swept over its threshold ``h``;
* ``BOCPD`` -- Adams & MacKay's online change-point posterior (hazard ``params.hazard``,
  "recent" = ``params.cp_horizon`` steps), swept over its alarm threshold.

Scores: a switch at step s is detected by the first alarm in [s, s + window); delay =
that alarm's step minus s (a miss counts as ``window``); an alarm in no switch's window
is a false alarm. Percentile bootstrap 95% intervals (:func:`beliefgate.eval.report.bootstrap_mean_ci`)
resample switches for the detection rate and delay, and episodes for false alarms per
100 steps.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.errors import InputError
from beliefgate.provenance import git_commit
from beliefgate.eval.detectors import (
    BeliefTrace,
    belief_pass,
    EvidenceTrace,
    bocpd_statistic,
    cusum_alarms,
    naive_alarms,
    score_alarms,
    stable_map_alarms,
    switch_windows,
    threshold_alarms,
)

SWITCHES_FORMAT = "beliefgate.switches/2"
DEFAULT_LAYOUTS = ("cramped_room", "asymmetric_advantages", "coordination_ring", "counter_circuit")
#: the sweeps (every method's curve)
GATE_TAUS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7)
CP_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
NAIVE_TAUS = (0.01, 0.02, 0.03, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5)
CUSUM_HS = (0.5, 1.0, 1.5, 2.0, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 8.0, 10.0)
BOCPD_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
METHODS = ("stable-MAP gate", "change-point gate", "naive threshold", "CUSUM (LLR)", "BOCPD")


class SwitchBenchmarkError(InputError):
    """Bad benchmark settings (no episodes, an unknown method, a bad window)."""


def default_partners(layouts: Sequence[str] = DEFAULT_LAYOUTS) -> Tuple[str, ...]:
    """The domain's switching population (Overcooked: the 12 shipped behaviour-preferring switchers)."""
    from beliefgate.envs.domain import domain_for_layout

    return domain_for_layout(layouts[0]).switching_partners()


# ------------------------------------------------------------------------------ recording
@dataclass
class EpisodeTrace:
    """One episode's partner evidence and hidden switches (everything the detectors need)."""

    layout: str
    partner: str
    seed: int
    skill_names: Tuple[str, ...]
    steps: list                    # StepEvidence per step (for gate passes)
    evidence: EvidenceTrace
    hidden: np.ndarray             # bool[T]
    truth: np.ndarray              # int[T], the partner's true skill (-1: idle or unknown)

    @property
    def num_switches(self) -> int:
        return int(self.hidden.sum())


def record_episode(layout: str, partner: str, seed: int, horizon: int = 400, ego: Optional[str] = None,
                   params=None, env_options: Optional[Dict[str, Any]] = None) -> EpisodeTrace:
    """Play one episode (ego in seat 0: the domain's ``switch_ego`` unless given) and record the
    partner's evidence (``params.beta``, ``params.epsilon``)."""
    traj = play_cached(layout, partner, seed, horizon, benchmark_ego(layout, ego), env_options=env_options)
    return trace_of(traj, partner, seed, params)


def benchmark_ego(layout: str, ego: Optional[str] = None) -> str:
    """``ego``, or the agent the layout's domain seats beside the partner it scores (``switch_ego``)."""
    from beliefgate.envs.domain import domain_for_layout

    if ego is not None:
        return ego
    domain = domain_for_layout(layout)
    if not domain.switch_ego:
        raise SwitchBenchmarkError(f"the {domain.name} domain names no benchmark ego for {layout}: give ego=")
    return domain.switch_ego


def episode_options(layout: str, env_options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The environment options of the benchmark's episodes on ``layout``: the domain's
    ``switch_env_options`` updated by ``env_options``, checked by the domain (one line naming the field)."""
    from beliefgate.envs.domain import domain_for_layout

    domain = domain_for_layout(layout)
    options = {**domain.switch_env_options(layout), **(env_options or {})}
    if options:
        domain.check_env_options(domain.resolve_layout(layout), **options)
    return options


def seat_partners(layout: str, partner: str, ego: str) -> Optional[str]:
    """The partners of one benchmark episode on ``layout``: ``partner`` when it names one per other
    player (``A+B`` on three players), one name padded with ``ego`` in the further seats (the scored
    partner stays in seat 1), else None (the entry does not fit the layout and is left out)."""
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.eval.episode import PARTNER_SEP, partner_list

    others = domain_for_layout(layout).players(layout) - 1
    names = partner_list(partner)
    if len(names) == others:
        return partner
    if len(names) == 1:
        return PARTNER_SEP.join([names[0]] + [ego] * (others - 1))
    return None


def trace_of(traj, partner: str, seed: int, params=None) -> EpisodeTrace:
    """The partner's (seat 1) evidence and hidden switches in a logged episode."""
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.eval.replay import ground_truth, partner_evidence

    steps = partner_evidence(traj, 1, params)
    layout = traj.header.layout
    names = tuple(domain_for_layout(layout).make_observer(params, layout=layout, partner=1).skill_names)
    truth, hidden = ground_truth(traj, 1, names, evidence=steps)
    return EpisodeTrace(traj.header.layout, partner, seed, names, steps, EvidenceTrace.from_steps(steps), hidden,
                        truth)


def gate_pass(trace: EpisodeTrace, params) -> BeliefTrace:
    """One pass of the functional gate over the recorded evidence
    (:func:`beliefgate.eval.detectors.belief_pass`): the stable-MAP interrupt starts its own
    cooldown; nothing else is fed back (the benchmark scores each gate's alarms on their own)."""
    return belief_pass(trace.steps, list(trace.skill_names), params)


# -------------------------------------------------------------------------------- scoring
@dataclass
class PointStats:
    """One detector setting scored over the whole benchmark."""

    value: float
    switches: int
    detected: int
    detection_rate: float
    detection_ci: Tuple[float, float]
    mean_delay: float
    delay_ci: Tuple[float, float]
    delay_detected: float
    false_alarms: int
    steps: int
    fa_per_100: float
    fa_ci: Tuple[float, float]
    #: detection on the subsets of :data:`SUBSETS`: ``{name: (switches, detected, rate)}``
    by_subset: Dict[str, Tuple[int, int, float]] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        def num(x):
            return None if x is None or (isinstance(x, float) and math.isnan(x)) else x

        return {"value": self.value, "switches": self.switches, "detected": self.detected,
                "detection_by_subset": {k: {"switches": n, "detected": d, "detection_rate": num(r)}
                                        for k, (n, d, r) in self.by_subset.items()},
                "detection_rate": num(self.detection_rate), "detection_ci": [num(v) for v in self.detection_ci],
                "mean_delay": num(self.mean_delay), "delay_ci": [num(v) for v in self.delay_ci],
                "delay_detected": num(self.delay_detected), "false_alarms": self.false_alarms, "steps": self.steps,
                "false_alarms_per_100_steps": num(self.fa_per_100), "false_alarms_ci": [num(v) for v in self.fa_ci]}


def summarise(scores: Sequence, value: float, n_boot: int = 2000, seed: int = 0, name: str = "",
              subsets: Optional[Dict[str, Sequence[np.ndarray]]] = None) -> PointStats:
    """Pool per-episode :class:`~beliefgate.eval.detectors.EpisodeScore` s, with bootstrap intervals.

    ``subsets`` (``{name: [bool[S_e] per episode]}``, in switch order) adds the detection rate on
    those switches alone (:attr:`PointStats.by_subset`).
    """
    from beliefgate.eval.report import bootstrap_mean_ci

    detected = [float(d) for s in scores for d in s.detected]
    delays = [float(d) for s in scores for d in s.delays]
    fa_rates = [100.0 * s.false_alarms / s.steps for s in scores if s.steps]
    rate, rlo, rhi = bootstrap_mean_ci(detected, n_boot=n_boot, seed=seed, name=name + "/detection")
    delay, dlo, dhi = bootstrap_mean_ci(delays, n_boot=n_boot, seed=seed, name=name + "/delay")
    _, flo, fhi = bootstrap_mean_ci(fa_rates, n_boot=n_boot, seed=seed, name=name + "/fa")
    hit = [dl for s in scores for dl, ok in zip(s.delays, s.detected) if ok]
    steps = sum(s.steps for s in scores)
    fas = sum(s.false_alarms for s in scores)
    by_subset = {}
    for key, masks in (subsets or {}).items():
        if len(masks) != len(scores):
            raise SwitchBenchmarkError(f"subset {key!r}: {len(masks)} masks for {len(scores)} episodes")
        hits = [bool(d) for s, m in zip(scores, masks) for d, keep in zip(s.detected, m) if keep]
        by_subset[key] = (len(hits), int(sum(hits)), float(np.mean(hits)) if hits else float("nan"))
    return PointStats(float(value), len(detected), int(sum(detected)), rate, (rlo, rhi), delay, (dlo, dhi),
                      float(np.mean(hit)) if hit else float("nan"), fas, steps,
                      100.0 * fas / steps if steps else float("nan"), (flo, fhi), by_subset)


# ------------------------------------------------------------------------------- methods
@dataclass
class Sweep:
    """One method's curve: the swept parameter and the scored points (in sweep order)."""

    method: str
    parameter: str
    points: List[PointStats]
    operating_point: Optional[PointStats] = None
    settings: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"parameter": self.parameter, "settings": self.settings,
                "operating_point": self.operating_point.to_dict() if self.operating_point else None,
                "points": [p.to_dict() for p in self.points]}


AlarmFn = Callable[[EpisodeTrace, BeliefTrace, Any], np.ndarray]


def method_alarms(params, cache: Dict[Tuple[int, str], Any]) -> Dict[str, Tuple[str, Sequence[float], AlarmFn]]:
    """Each method's swept parameter, its values and ``alarms(trace, belief, value)``."""
    ratio = params.cp_release / params.cp_threshold

    def stable(trace, belief, tau):
        return stable_map_alarms(belief, tau, params.confidence_floor, params.n_stable, params.cooldown,
                                 params.likelihood_scale)

    def cp(trace, belief, thr):
        return threshold_alarms(belief.cp_prob, thr, thr * ratio, params.cp_cooldown)

    def naive(trace, belief, tau):
        return naive_alarms(belief, tau)

    def cusum(trace, belief, h):
        return cusum_alarms(trace.evidence, belief.map_skill, h)

    def bocpd(trace, belief, thr):
        key = (id(trace), "bocpd")
        if key not in cache:
            cache[key] = bocpd_statistic(trace.evidence, hazard=params.hazard, alpha=params.alpha,
                                         recent=params.cp_horizon)
        return threshold_alarms(cache[key].prob, thr, thr * ratio)

    return {
        "stable-MAP gate": ("tau_obs", GATE_TAUS, stable),
        "change-point gate": ("cp_threshold", CP_THRESHOLDS, cp),
        "naive threshold": ("tau", NAIVE_TAUS, naive),
        "CUSUM (LLR)": ("h", CUSUM_HS, cusum),
        "BOCPD": ("threshold", BOCPD_THRESHOLDS, bocpd),
    }


@dataclass
class SwitchBenchmark:
    """The benchmark's result: every method's curve plus the configuration that made it."""

    config: Dict[str, Any]
    episodes: int
    switches: int
    steps: int
    sweeps: Dict[str, Sweep]
    per_episode: List[Dict[str, Any]]
    bocpd_pruned_mass: float = 0.0
    diagnostics: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"format": SWITCHES_FORMAT, "config": self.config, "episodes": self.episodes,
                "switches": self.switches, "steps": self.steps, "bocpd_pruned_mass": self.bocpd_pruned_mass,
                "diagnostics": self.diagnostics,
                "methods": {name: sw.to_dict() for name, sw in self.sweeps.items()},
                "per_episode": self.per_episode}

    def best_point(self, method: str, max_fa: float = 1.0) -> Optional[PointStats]:
        """The setting with the highest detection rate (then the lowest delay) at ``<= max_fa`` false alarms/100
        steps, among the settings that detect at least one switch (None when none does: a setting that
        never alarms meets any false-alarm budget and is no "best")."""
        ok = [p for p in self.sweeps[method].points if p.fa_per_100 <= max_fa and p.detected > 0]
        return max(ok, key=lambda p: (p.detection_rate, -p.mean_delay)) if ok else None

    @property
    def seed_count(self) -> int:
        return len(self.config.get("seeds") or [])


def check_names(partners: Sequence[str], ego: str) -> None:
    """Every partner and the ego build as agents (an unknown name fails before any episode; ``A+B``
    names two partners)."""
    from beliefgate.agents.registry import make_agent
    from beliefgate.eval.episode import partner_list

    for name in dict.fromkeys([ego, *(n for p in partners for n in partner_list(p))]):
        make_agent(name)


def play_cached(layout: str, partner: str, seed: int, horizon: int, ego: str, cache_dir: Optional[Path] = None,
                replaced: Optional[List[str]] = None, env_options: Optional[Dict[str, Any]] = None):
    """The episode's trajectory: played now, or read from ``cache_dir`` where an earlier run logged it.

    The cache file name carries everything that determines the episode (layout, partner and
    a digest of its spec, seed, horizon, ego, package version), so changed partners never hit
    an old entry; delete the folder after changing the dynamics or the agents' code. An entry
    that cannot be read, is incomplete or whose header is another episode's (a copied file) is
    played again and replaced; its name is appended to ``replaced``. Each run writes under its
    own temporary name, so runs sharing a cache do not collide. ``env_options`` (the domain's
    environment options) enter the file's digest when given.
    """
    import os

    import beliefgate
    from beliefgate.console import one_line
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.envs.trajlog import LogFormatError, read_log
    from beliefgate.eval.episode import partner_list, run_episode
    from beliefgate.eval.grid import slug

    options = dict(env_options or {})
    if cache_dir is None:
        return run_episode(layout, ego, partner, seed=seed, horizon=horizon, seat=0,
                           env_options=options or None).trajectory
    domain = domain_for_layout(layout)
    spec = "+".join(domain.partner_fingerprint(p) for p in partner_list(partner))
    key = f"{spec}|{beliefgate.__version__}" + (f"|{json.dumps(options, sort_keys=True)}" if options else "")
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    path = Path(cache_dir) / f"{slug(layout)}__{slug(partner)}__seed{seed}__h{horizon}__{slug(ego)}__{digest}.jsonl"
    if path.exists():
        try:
            traj = read_log(path)
        except (LogFormatError, OSError, UnicodeDecodeError) as exc:
            why = one_line(str(exc))
        else:
            h = traj.header
            why = "it holds another episode"
            if (h.layout, h.partner, h.seed, h.horizon, h.ego, h.seat) == (layout, partner, seed, horizon, ego, 0):
                return traj
        if replaced is not None:
            replaced.append(f"{path.name} ({why})")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        traj = run_episode(layout, ego, partner, seed=seed, horizon=horizon, seat=0, log_path=tmp,
                           env_options=options or None).trajectory
        tmp.replace(path)
    finally:  # an interrupted or failed play leaves no partial file behind
        tmp.unlink(missing_ok=True)
    return traj


def check_partner_files(partners: Sequence[str], horizon: int) -> None:
    """Read and check every partner file among ``partners`` (its switch windows fit ``horizon``)
    through its domain, before any episode; other names are left to the agent registry."""
    from beliefgate.envs.domain import partner_domain

    for name in partners:
        owner = partner_domain(name)
        if owner is not None:
            owner.check_partners([name], horizon)


def playable(layouts: Sequence[str], partners: Sequence[str], ego: Optional[str] = None) -> List[Tuple[str, str]]:
    """(layout, partner) pairs to play, layouts resolved; a partner restricted to other layouts
    (its spec's ``layouts``) is left out there. On a layout with more players one partner name is
    padded with the benchmark's ego (:func:`seat_partners`); an entry naming another number of
    partners is left out."""
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.eval.episode import partner_list

    out = []
    for layout in layouts:
        d = domain_for_layout(layout)
        layout = d.resolve_layout(layout)
        for p in partners:
            seated = seat_partners(layout, p, benchmark_ego(layout, ego))
            if seated is not None and all(d.partner_restriction(n, layout) is None for n in partner_list(seated)):
                out.append((layout, seated))
    return out


def record_all(layouts: Sequence[str], partners: Sequence[str], seeds: Iterable[int], horizon: int = 400,
               ego: Optional[str] = None, params=None, progress=None, cache_dir: Optional[Path] = None,
               replaced: Optional[List[str]] = None, env_options: Optional[Dict[str, Any]] = None
               ) -> List[EpisodeTrace]:
    """Record every (layout, partner, seed) episode; partners restricted to other layouts are left out.
    ``ego`` defaults to each layout's domain's ``switch_ego``; ``env_options`` update the domain's
    ``switch_env_options``."""
    seeds = list(seeds)
    if not seeds or not partners or not layouts:
        raise SwitchBenchmarkError("give at least one layout, one partner and one seed")
    jobs = benchmark_jobs(layouts, partners, seeds, horizon, ego, env_options)
    traces = []
    for i, (layout, partner, seed, who, options) in enumerate(jobs):
        if progress is not None:
            progress(i, len(jobs), f"{layout} / {partner} / seed {seed}")
        traj = play_cached(layout, partner, seed, horizon, who, cache_dir, replaced, options)
        traces.append(trace_of(traj, partner, seed, params))
    return traces


def benchmark_jobs(layouts: Sequence[str], partners: Sequence[str], seeds: Sequence[int], horizon: int,
                   ego: Optional[str] = None, env_options: Optional[Dict[str, Any]] = None) -> List[tuple]:
    """``(layout, partners, seed, ego, env_options)`` of every benchmark episode, every name, file and
    option checked first (before any episode)."""
    from beliefgate.envs.domain import resolve_layout

    egos = {resolve_layout(layout): benchmark_ego(layout, ego) for layout in layouts}
    options = {resolve_layout(layout): episode_options(layout, env_options) for layout in layouts}
    for name in dict.fromkeys(egos.values()):
        check_names(partners, name)
    check_partner_files(partners, horizon)
    return [(layout, p, s, egos[layout], options[layout]) for layout, p in playable(layouts, partners, ego)
            for s in seeds]


def evaluate_traces(traces: Sequence[EpisodeTrace], params, window: int = 10, n_boot: int = 2000,
                    methods: Sequence[str] = METHODS, config: Optional[Dict[str, Any]] = None,
                    beliefs: Optional[List[BeliefTrace]] = None) -> SwitchBenchmark:
    """Score every method's sweep on recorded episodes (one gate pass each at ``params``)."""
    if window < 1:
        raise SwitchBenchmarkError(f"window must be >= 1, got {window}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise SwitchBenchmarkError(f"unknown method(s) {unknown}; methods: {', '.join(METHODS)}")
    if not traces:
        raise SwitchBenchmarkError("no episodes to score")
    beliefs = beliefs if beliefs is not None else [gate_pass(tr, params) for tr in traces]
    cache: Dict[Tuple[int, str], Any] = {}
    table = method_alarms(params, cache)
    per_switch = [switch_evidence(tr, window) for tr in traces]
    subsets = {key: [rule(e) for e in per_switch] for key, rule in SUBSETS.items()}
    sweeps: Dict[str, Sweep] = {}
    for name in methods:
        parameter, values, fn = table[name]
        points = []
        for v in values:
            scores = [score_alarms(fn(tr, b, v), tr.hidden, window) for tr, b in zip(traces, beliefs)]
            points.append(summarise(scores, v, n_boot, name=f"{name}/{v}", subsets=subsets))
        operating = None
        if name == "stable-MAP gate":
            scores = [score_alarms(b.interrupt, tr.hidden, window) for tr, b in zip(traces, beliefs)]
            operating = summarise(scores, params.tau_obs, n_boot, name=f"{name}/operating", subsets=subsets)
        elif name == "change-point gate":
            scores = [score_alarms(b.changepoint, tr.hidden, window) for tr, b in zip(traces, beliefs)]
            operating = summarise(scores, params.cp_threshold, n_boot, name=f"{name}/operating", subsets=subsets)
        elif name == "CUSUM (LLR)":  # the CUSUM gate (GateParams.gate = "cusum") at the given cusum_h
            scores = [score_alarms(cusum_alarms(tr.evidence, b.map_skill, params.cusum_h), tr.hidden, window)
                      for tr, b in zip(traces, beliefs)]
            operating = summarise(scores, params.cusum_h, n_boot, name=f"{name}/operating", subsets=subsets)
        settings = {"stable-MAP gate": {k: getattr(params, k) for k in ("confidence_floor", "n_stable", "cooldown",
                                                                         "likelihood_scale", "reference")},
                    "change-point gate": {"cp_release/cp_threshold": params.cp_release / params.cp_threshold,
                                          "cp_cooldown": params.cp_cooldown, "cp_horizon": params.cp_horizon},
                    "naive threshold": {},
                    "CUSUM (LLR)": {"reference": "pre-update MAP skill"},
                    "BOCPD": {"hazard": params.hazard, "alpha": params.alpha, "recent": params.cp_horizon,
                              "release/threshold": params.cp_release / params.cp_threshold}}[name]
        sweeps[name] = Sweep(name, parameter, points, operating, settings)
    pruned = sum(v.pruned_mass for v in cache.values())
    diagnostics = {"separability": separability(traces, window, per_switch=per_switch),
                   **belief_diagnostics(traces, beliefs, window)}
    per_episode = [{"layout": tr.layout, "partner": tr.partner, "seed": tr.seed, "switches": tr.num_switches,
                    "steps": len(tr.hidden)} for tr in traces]
    return SwitchBenchmark(dict(config or {}), len(traces), sum(tr.num_switches for tr in traces),
                           sum(len(tr.hidden) for tr in traces), sweeps, per_episode, pruned, diagnostics)


def belief_diagnostics(traces: Sequence[EpisodeTrace], beliefs: Sequence[BeliefTrace], window: int = 10
                       ) -> Dict[str, Any]:
    """Where the stable-MAP gate's false alarms come from: how often its pre-update MAP is the true skill,
    and which share of its false alarms (at the given settings) fall on steps where the MAP was right."""
    known = right = 0
    fa = fa_right = 0
    for tr, b in zip(traces, beliefs):
        k = tr.truth >= 0
        known += int(k.sum())
        right += int(np.sum(b.map_skill[k] == tr.truth[k]))
        false = b.interrupt & ~switch_windows(tr.hidden, window)
        fa += int(false.sum())
        fa_right += int(np.sum(false & (b.map_skill == tr.truth)))
    return {"pre_update_map_accuracy": right / known if known else None,
            "stable_map_false_alarms": fa,
            "share_of_false_alarms_with_correct_map": fa_right / fa if fa else None}


def run_benchmark(params=None, layouts: Sequence[str] = DEFAULT_LAYOUTS, partners: Optional[Sequence[str]] = None,
                  seeds: Iterable[int] = range(4), horizon: int = 400, window: int = 10, ego: Optional[str] = None,
                  n_boot: int = 2000, methods: Sequence[str] = METHODS, progress=None,
                  cache_dir: Optional[Path] = None, env_options: Optional[Dict[str, Any]] = None) -> SwitchBenchmark:
    """Record the episodes and score every method (the ``beliefgate switches`` command)."""
    from beliefgate import GateParams

    params = params or GateParams()
    partners = tuple(partners) if partners else default_partners(layouts)
    seeds = list(seeds)
    replaced: List[str] = []
    traces = record_all(layouts, partners, seeds, horizon, ego, params, progress, cache_dir, replaced, env_options)
    config = {"layouts": list(layouts), "partners": list(partners), "seeds": seeds, "horizon": horizon,
              "window": window, "ego": _ego_config(layouts, ego), "ego_seat": 0, "n_boot": n_boot,
              "methods": list(methods),
              "gate_params": params.model_dump(mode="json"), "commit": git_commit(),
              "sweeps": {"stable-MAP gate": list(GATE_TAUS), "change-point gate": list(CP_THRESHOLDS),
                         "naive threshold": list(NAIVE_TAUS), "CUSUM (LLR)": list(CUSUM_HS),
                         "BOCPD": list(BOCPD_THRESHOLDS)}}
    config.update(partner_files(partners))
    options = {layout: episode_options(layout, env_options) for layout in layouts}
    if any(options.values()):  # only where a domain plays its switches under options (the V2 recipe draw)
        config["env_options"] = options
    config["digest"] = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:12]
    bench = evaluate_traces(traces, params, window, n_boot, methods, config)
    if replaced:  # cache entries played again (unreadable, incomplete or another episode's)
        bench.diagnostics["cache_replaced"] = replaced
    return bench


def _ego_config(layouts: Sequence[str], ego: Optional[str]) -> Any:
    """The ego a result records: one name, or ``{layout: name}`` where the layouts' domains differ."""
    egos = {layout: benchmark_ego(layout, ego) for layout in layouts}
    names = set(egos.values())
    return names.pop() if len(names) == 1 else egos


def partner_files(partners: Sequence[str]) -> Dict[str, Any]:
    """``{"partner_files": {name: digest}}`` for the partners given as files (their validated spec's
    hash, as grids key their episodes), so that a result says which version of a file made it;
    empty without file partners (the configs of named partners are unchanged)."""
    from beliefgate.eval.grid import partner_file_digest

    digests = {p: partner_file_digest(p) for p in partners}
    files = {p: d for p, d in digests.items() if d is not None}
    return {"partner_files": files} if files else {}


# ------------------------------------------------------------------------------------ tuning
#: the tuning grid: belief settings need a gate pass each (beta/epsilon also new evidence);
#: decision settings are replayed on the recorded belief
TUNE_BELIEF = {"beta_epsilon": [(2.0, 0.1), (1.0, 0.1), (4.0, 0.1), (4.0, 0.05)],
               "hazard": [0.01, 0.02, 0.05, 0.1], "reference": ["skill", "action"]}
TUNE_STABLE = {"tau_obs": list(GATE_TAUS), "confidence_floor": [0.5, 0.7, 0.8, 0.9],
               "n_stable": [0, 1, 2, 4], "cooldown": [0, 5, 10]}
TUNE_CP = {"cp_threshold": list(CP_THRESHOLDS), "release_ratio": [0.5, 0.67, 1.0], "cp_cooldown": [0, 10, 20],
           "cp_horizon": [6, 10]}


def _pooled(scores) -> Tuple[float, float, float]:
    det = [d for s in scores for d in s.detected]
    delays = [d for s in scores for d in s.delays]
    steps = sum(s.steps for s in scores)
    return (float(np.mean(det)) if det else float("nan"), float(np.mean(delays)) if delays else float("nan"),
            100.0 * sum(s.false_alarms for s in scores) / steps)


def tune_gate(layouts: Sequence[str] = DEFAULT_LAYOUTS, partners: Optional[Sequence[str]] = None,
              seeds: Iterable[int] = range(1000, 1003), horizon: int = 400, window: int = 10,
              ego: Optional[str] = None, max_fa: float = 1.0, min_detection: float = 0.9, belief_grid=None,
              stable_grid=None, cp_grid=None, progress=None, env_options: Optional[Dict[str, Any]] = None
              ) -> Dict[str, Any]:
    """Search gate settings for ``<= max_fa`` false alarms per 100 steps at ``>= min_detection`` detection.

    Plays the episodes once, recomputes the evidence for every (beta, epsilon), runs one
    gate pass per belief setting and replays every decision setting on it. Returns every
    scored setting, the best stable-MAP and change-point settings under the false-alarm
    budget (highest detection, then lowest delay), whether the target is met, and the
    separability of the evidence (:func:`separability`). Choose settings on seeds other
    than the ones you report on.
    """
    from itertools import product

    from beliefgate import GateParams
    from beliefgate.eval.episode import run_episode

    belief_grid = belief_grid or TUNE_BELIEF
    stable_grid = stable_grid or TUNE_STABLE
    cp_grid = cp_grid or TUNE_CP
    partners = tuple(partners) if partners else default_partners(layouts)
    seeds = list(seeds)
    base = GateParams()
    jobs = benchmark_jobs(layouts, partners, seeds, horizon, ego, env_options)
    if not jobs:
        raise SwitchBenchmarkError("no episodes to tune on: every partner is restricted to other layouts, "
                                   "or no seed was given")
    trajs = []
    for i, (lay, p, sd, who, options) in enumerate(jobs):
        if progress is not None:
            progress(i, len(jobs), f"play {lay} / {p} / seed {sd}")
        trajs.append((p, sd, run_episode(lay, who, p, seed=sd, horizon=horizon, seat=0,
                                         env_options=options or None).trajectory))
    rows: List[Dict[str, Any]] = []
    sep = None
    # one gate pass per (beta, epsilon, hazard, cp_horizon): the MAP, its confidence and stability and the
    # change-point statistic do not depend on the reference, and the "action" reference's log ratio is the
    # recorded log_l_action (tests/test_switches.py checks both)
    passes = [(be, h, L) for be in belief_grid["beta_epsilon"] for h in belief_grid["hazard"]
              for L in cp_grid["cp_horizon"]]
    traces_by_be: Dict[Tuple[float, float], List[EpisodeTrace]] = {}
    for j, ((beta, eps), hazard, L) in enumerate(passes):
        if progress is not None:
            progress(j, len(passes), f"beta={beta} eps={eps} hazard={hazard} cp_horizon={L}")
        if (beta, eps) not in traces_by_be:
            ev_params = base.replace(beta=beta, epsilon=eps)
            traces_by_be[(beta, eps)] = [trace_of(t, p, sd, ev_params) for p, sd, t in trajs]
        traces = traces_by_be[(beta, eps)]
        if j == 0 and not any(tr.num_switches for tr in traces):
            raise SwitchBenchmarkError(f"no hidden switch in these {len(traces)} episodes: detection rates are "
                                       "undefined and there is nothing to tune on (use switching partners, more "
                                       "seeds or a longer horizon)")
        if sep is None:
            sep = separability(traces, window)
        params = base.replace(beta=beta, epsilon=eps, hazard=hazard, reference="skill", cp_horizon=L)
        beliefs = [gate_pass(tr, params) for tr in traces]
        if L == cp_grid["cp_horizon"][0]:
            for ref in belief_grid["reference"]:
                refd = beliefs if ref == "skill" else [replace(b, log_l=b.log_l_action) for b in beliefs]
                belief = {"beta": beta, "epsilon": eps, "hazard": hazard, "reference": ref}
                for tau, cf, ns, cd in product(*(stable_grid[k] for k in ("tau_obs", "confidence_floor",
                                                                          "n_stable", "cooldown"))):
                    scores = [score_alarms(stable_map_alarms(b, tau, cf, ns, cd), tr.hidden, window)
                              for tr, b in zip(traces, refd)]
                    det, delay, fa = _pooled(scores)
                    rows.append({"gate": "stable_map", **belief, "tau_obs": tau, "confidence_floor": cf,
                                 "n_stable": ns, "cooldown": cd, "detection_rate": det, "mean_delay": delay,
                                 "fa_per_100": fa})
        belief = {"beta": beta, "epsilon": eps, "hazard": hazard}
        for thr, rr, cd in product(*(cp_grid[k] for k in ("cp_threshold", "release_ratio", "cp_cooldown"))):
            scores = [score_alarms(threshold_alarms(b.cp_prob, thr, thr * rr, cd), tr.hidden, window)
                      for tr, b in zip(traces, beliefs)]
            det, delay, fa = _pooled(scores)
            rows.append({"gate": "changepoint", **belief, "cp_horizon": L, "cp_threshold": thr,
                         "cp_release": round(thr * rr, 6), "cp_cooldown": cd, "detection_rate": det,
                         "mean_delay": delay, "fa_per_100": fa})

    def best(gate: str) -> Optional[Dict[str, Any]]:  # among the settings that detect anything
        ok = [r for r in rows if r["gate"] == gate and r["fa_per_100"] <= max_fa and r["detection_rate"] > 0]
        return max(ok, key=lambda r: (r["detection_rate"], -r["mean_delay"])) if ok else None

    def frontier(gate: str) -> List[Dict[str, Any]]:
        """The Pareto front (false alarms down, detection up)."""
        pts = sorted((r for r in rows if r["gate"] == gate), key=lambda r: (r["fa_per_100"], -r["detection_rate"]))
        out, top = [], -1.0
        for r in pts:
            if r["detection_rate"] > top:
                out.append(r)
                top = r["detection_rate"]
        return out

    first = next(iter(traces_by_be.values()))
    result = {
        "config": {**partner_files(partners), "layouts": list(layouts), "partners": list(partners), "seeds": seeds,
                   "horizon": horizon,
                   "window": window, "ego": _ego_config(layouts, ego), "max_fa": max_fa,
                   "min_detection": min_detection,
                   "belief_grid": {k: [list(v) if isinstance(v, tuple) else v for v in vs]
                                   for k, vs in belief_grid.items()},
                   "stable_grid": stable_grid, "cp_grid": cp_grid, "commit": git_commit(),
                   **({"env_options": {j[0]: j[4] for j in jobs}} if any(j[4] for j in jobs) else {})},
        "episodes": len(trajs), "switches": sum(tr.num_switches for tr in first),
        "steps": sum(len(tr.hidden) for tr in first),
        "best": {"stable_map": best("stable_map"), "changepoint": best("changepoint")},
        "frontier": {"stable_map": frontier("stable_map"), "changepoint": frontier("changepoint")},
        "separability": sep,
        "rows": rows,
    }
    result["target_met"] = any(b is not None and b["detection_rate"] >= min_detection
                               for b in result["best"].values())
    return result


def recommended_params(tuning: Dict[str, Any], gate: str = "stable_map"):
    """:class:`~beliefgate.GateParams` of a tuning result's best setting for ``gate`` (defaults elsewhere)."""
    from beliefgate import GateParams

    row = tuning["best"].get(gate)
    if row is None:
        raise SwitchBenchmarkError(f"the tuning found no {gate} setting within its false-alarm budget that "
                                   "detects any switch")
    keys = ("beta", "epsilon", "hazard", "reference", "tau_obs", "confidence_floor", "n_stable", "cooldown",
            "cp_horizon", "cp_threshold", "cp_release", "cp_cooldown")
    fields = {k: row[k] for k in keys if k in row}
    if gate == "changepoint":
        fields["gate"] = "changepoint"
    return GateParams().replace(**fields)  # flat names, as the tuning's rows carry them


# ------------------------------------------------------------------------------ separability
#: a switch is *established* when the old skill had run at least this many steps before it
#: (the same minimum :func:`beliefgate.eval.replay.ground_truth` asks of the new skill)
ESTABLISHED_STEPS = 3
#: both halves of an *identifiable* switch favour their true skill by more than this log ratio (10:1)
IDENTIFIABLE_LLR = math.log(10.0)


@dataclass
class SwitchEvidence:
    """What the evidence says about each hidden switch of one episode, with the true skills known
    (old ``o`` = true skill before the switch, new ``n`` after); arrays in switch order.

    ``pre_steps``: how long ``o`` had run (back to its start or the last visible completion);
    ``pre_llr``: ``sum w_t (loglik_t(o) - loglik_t(n))`` over those steps (does the evidence
    before the switch tell the old skill from the new one?); ``post_llr``: ``sum w_t
    (loglik_t(n) - loglik_t(o))`` over ``[s, s + window)`` while ``n`` still runs;
    ``first_positive``: the first step of that window (from 0) where the running sum is > 0 (-1: never).
    """

    steps: np.ndarray
    pre_steps: np.ndarray
    pre_llr: np.ndarray
    post_llr: np.ndarray
    first_positive: np.ndarray

    @property
    def established(self) -> np.ndarray:
        return self.pre_steps >= ESTABLISHED_STEPS

    @property
    def identifiable(self) -> np.ndarray:
        return (self.pre_llr > IDENTIFIABLE_LLR) & (self.post_llr > IDENTIFIABLE_LLR)


def switch_evidence(trace: EpisodeTrace, window: int = 10) -> SwitchEvidence:
    """:class:`SwitchEvidence` of every hidden switch of ``trace`` (no belief involved)."""
    ev, truth = trace.evidence, trace.truth
    switches = np.flatnonzero(trace.hidden)
    pre_steps, pre_llr, post_llr, first_positive = [], [], [], []
    for s in switches:
        o, n = int(truth[s - 1]), int(truth[s])
        r = s - 1
        while r > 0 and truth[r - 1] == o and ev.completed[r - 1] < 0:
            r -= 1
        pre_steps.append(s - r)
        used = ev.weight[r:s] > 0  # an excluded step (weight 0) carries no evidence, whatever its loglik
        pre_llr.append(float(np.sum(ev.weight[r:s][used] * (ev.loglik[r:s, o][used] - ev.loglik[r:s, n][used]))))
        total, first = 0.0, -1
        for t in range(s, min(s + window, len(truth))):
            if truth[t] != n:
                break
            if ev.weight[t] > 0:
                total += ev.weight[t] * (ev.loglik[t, n] - ev.loglik[t, o])
            if first < 0 and total > 0:
                first = t - s
        post_llr.append(total)
        first_positive.append(first)
    return SwitchEvidence(switches, np.asarray(pre_steps, dtype=int), np.asarray(pre_llr, dtype=float),
                          np.asarray(post_llr, dtype=float), np.asarray(first_positive, dtype=int))


#: the switch subsets every scored point also reports (``PointStats.by_subset``)
SUBSETS: Dict[str, Callable[[SwitchEvidence], np.ndarray]] = {
    "established": lambda e: e.established,
    "identifiable": lambda e: e.identifiable,
}


def separability(traces: Sequence[EpisodeTrace], window: int = 10,
                 taus: Sequence[float] = (0.05, 0.1, 0.2),
                 per_switch: Optional[Sequence[SwitchEvidence]] = None) -> Dict[str, Any]:
    """How much the evidence itself allows, measured with the true skills (no belief involved).

    * after the switch: the oracle log-likelihood ratio of :class:`SwitchEvidence`
      (``post_llr``): a switch whose ratio stays at or below 0 is invisible to any detector
      that compares the two skills;
    * before it: ``pre_llr``. A change is only visible as a change when the actions before it
      favour the old skill over the new one; a switch whose old skill ran one step, or whose
      pre-switch actions fit the new skill as well, looks to any detector like a partner that
      was doing the new skill all along. ``share_identifiable`` = both halves above log 10
      (:data:`IDENTIFIABLE_LLR`): a ceiling, measured, on what a detector can be asked to find;
    * on every other step with a known true skill, how often a single action is
      ``tau`` times likelier under another feasible skill than under the true one -- the
      false-alarm floor of a one-step contradiction rule even with a perfect belief.
    """
    per_switch = per_switch if per_switch is not None else [switch_evidence(tr, window) for tr in traces]
    counts = {tau: 0 for tau in taus}
    steps = 0
    for tr in traces:
        ev, truth = tr.evidence, tr.truth
        covered = switch_windows(tr.hidden, window)
        for t in np.flatnonzero((truth >= 0) & ~covered & (ev.weight > 0)):
            k = int(truth[t])
            alt = np.where(ev.feasible[t], ev.loglik[t], -np.inf)
            alt[k] = -np.inf
            gap = ev.loglik[t, k] - alt.max()
            steps += 1
            for tau in taus:
                counts[tau] += bool(gap < np.log(tau))

    def cat(key):
        return np.concatenate([getattr(e, key) for e in per_switch]) if per_switch else np.zeros(0)

    llr, pre, pre_n, fp = cat("post_llr"), cat("pre_llr"), cat("pre_steps"), cat("first_positive")
    ident, est = cat("identifiable"), cat("established")

    def share(mask):
        return float(np.mean(mask)) if llr.size else None

    return {
        "switches": int(llr.size),
        "oracle_llr_median": float(np.median(llr)) if llr.size else None,
        "share_llr_le_0": share(llr <= 0),
        "share_llr_gt_log10": share(llr > IDENTIFIABLE_LLR),
        "share_positive_within_3": share((fp >= 0) & (fp < 3)),
        "pre_steps_median": float(np.median(pre_n)) if llr.size else None,
        "share_pre_one_step": share(pre_n == 1),
        "share_established": share(est),
        "share_pre_llr_gt_log10": share(pre > IDENTIFIABLE_LLR),
        "share_identifiable": share(ident),
        "share_identifiable_of_established": float(np.mean(ident[est])) if est.any() else None,
        "evidence_steps": steps,
        "true_skill_contradiction_per_100_steps": {str(tau): 100.0 * counts[tau] / steps if steps else None
                                                  for tau in taus},
    }


# ---------------------------------------------------------------------------------- figure
STYLES = {"stable-MAP gate": ("tab:blue", "o"), "change-point gate": ("tab:orange", "s"),
          "naive threshold": ("tab:gray", "x"), "CUSUM (LLR)": ("tab:green", "^"), "BOCPD": ("tab:purple", "D")}


def plot_tradeoff(bench: SwitchBenchmark, path: str | Path, max_fa: float = 1.0, min_detection: float = 0.9) -> Path:
    """False alarms per 100 steps against mean delay (left) and detection rate (right), every method."""
    from beliefgate.figures import pyplot, save_figure

    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for name, sw in bench.sweeps.items():
        color, marker = STYLES.get(name, ("black", "."))
        pts = sorted(sw.points, key=lambda p: p.mean_delay)
        ax1.plot([p.mean_delay for p in pts], [p.fa_per_100 for p in pts], marker=marker, color=color, label=name,
                 lw=1.2, ms=5)
        pts = sorted(sw.points, key=lambda p: p.fa_per_100)
        ax2.plot([p.fa_per_100 for p in pts], [p.detection_rate for p in pts], marker=marker, color=color,
                 label=name, lw=1.2, ms=5)
        op = sw.operating_point
        if op is not None:
            for ax, x, y, xe, ye in ((ax1, op.mean_delay, op.fa_per_100, op.delay_ci, op.fa_ci),
                                     (ax2, op.fa_per_100, op.detection_rate, op.fa_ci, op.detection_ci)):
                ax.errorbar([x], [y], xerr=[[x - xe[0]], [xe[1] - x]], yerr=[[y - ye[0]], [ye[1] - y]],
                            fmt=marker, color=color, ms=11, mfc="white", mew=2, capsize=3)
    ax1.axhline(max_fa, color="red", ls=":", lw=1)
    ax1.set_xlabel(f"mean delay (steps; a miss counts {bench.config.get('window', '?')})")
    ax1.set_ylabel("false alarms per 100 steps")
    ax1.set_yscale("symlog", linthresh=0.1)
    ax1.set_ylim(bottom=0)
    ax1.set_title("false alarms vs delay (open markers: the gates' given settings"
                  + (", 95% CI)" if bench.episodes > 1 else "; one episode: no CI)"))
    ax2.axvline(max_fa, color="red", ls=":", lw=1)
    ax2.axhline(min_detection, color="red", ls=":", lw=1)
    ax2.set_xscale("symlog", linthresh=0.1)
    ax2.set_xlim(left=0)
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_xlabel("false alarms per 100 steps")
    ax2.set_ylabel(f"detection rate within {bench.config.get('window', '?')} steps")
    ax2.set_title("detection vs false alarms (target: upper left of the red lines)")
    ax2.legend(loc="lower right", fontsize=8)
    cfg = bench.config
    fig.suptitle(f"{bench.switches} hidden switches in {bench.episodes} episodes; seeds "
                 f"{_seed_text(cfg.get('seeds', []))}, {len(cfg.get('partners', []))} partners, "
                 f"{len(cfg.get('layouts', []))} layout(s) (commit {cfg.get('commit') or '?'})", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def _seed_text(seeds: Sequence[int]) -> str:
    seeds = list(seeds)
    if seeds and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return ",".join(map(str, seeds))


# ------------------------------------------------------------------------------ text output
def _ci(x: float, ci: Tuple[float, float], fmt: str = "{:.2f}") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    lo, hi = ci
    if lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return fmt.format(x)
    return f"{fmt.format(x)} [{fmt.format(lo)}, {fmt.format(hi)}]"


#: fewer seeds than this and the summary says they are too few to choose a setting on
MIN_CHOOSING_SEEDS = 10


def summary_rows(bench: SwitchBenchmark, max_fa: float = 1.0) -> Tuple[str, List[str], List[List[str]]]:
    """``(title, columns, rows)``: the gates at their given settings and every method's best point within
    ``max_fa``, with the detection rate on each subset of :data:`SUBSETS` (what :func:`summary_table`
    and :func:`summary_markdown` print)."""
    window = bench.config.get("window", "?")
    title = (f"{bench.switches} hidden switches in {bench.episodes} episodes ({bench.steps} steps); "
             f"detection within {window} steps; "
             + ("95% bootstrap CIs" if bench.episodes > 1 else "one episode: no bootstrap CIs")
             + (f"; only {bench.seed_count} seed{'s' if bench.seed_count != 1 else ''}: too few to choose a setting "
                f"(choose on >= {MIN_CHOOSING_SEEDS} seeds >= 1000, report on seeds 0-19)"
                if 0 < bench.seed_count < MIN_CHOOSING_SEEDS else ""))
    sizes = next((p.by_subset for sw in bench.sweeps.values() for p in sw.points if p.by_subset), {})
    keys = [key for key in SUBSETS if key in sizes]
    columns = ["method", "setting", "detection", *[f"{key} ({sizes[key][0]})" for key in keys], "mean delay",
               "false alarms / 100 steps"]
    rows: List[List[str]] = []

    def row(name: str, label: str, p: PointStats) -> None:
        subset = [_ci(p.by_subset[key][2], (None, None), "{:.1%}") if key in p.by_subset else "-" for key in keys]
        rows.append([name, label, _ci(p.detection_rate, p.detection_ci, "{:.1%}"), *subset,
                     _ci(p.mean_delay, p.delay_ci), _ci(p.fa_per_100, p.fa_ci)])

    for name, sw in bench.sweeps.items():
        if sw.operating_point is not None:
            row(name, f"given: {sw.parameter}={sw.operating_point.value:g}", sw.operating_point)
        best = bench.best_point(name, max_fa)
        if best is None:
            rows.append([name, f"no {sw.parameter} within {max_fa:g} FA/100 detects any switch",
                         *["-"] * (len(columns) - 2)])
        else:
            row(name, f"best at <= {max_fa:g} FA/100: {sw.parameter}={best.value:g}", best)
    return title, columns, rows


def summary_table(bench: SwitchBenchmark, max_fa: float = 1.0):
    """A rich table of :func:`summary_rows`."""
    from rich.table import Table

    title, columns, rows = summary_rows(bench, max_fa)
    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="left" if col in ("method", "setting") else "right")
    for r in rows:
        table.add_row(*r)
    return table


def summary_markdown(bench: SwitchBenchmark, max_fa: float = 1.0) -> str:
    """:func:`summary_rows` as a Markdown block headed by what made it (seeds, layouts, commit), with the
    evidence's own limits (:func:`separability`) under the table."""
    title, columns, rows = summary_rows(bench, max_fa)
    cfg = bench.config
    lines = [f"{title}. Seeds {_seed_text(cfg.get('seeds', []))}, layouts {', '.join(cfg.get('layouts', []))}, "
             f"{len(cfg.get('partners', []))} partners, commit {cfg.get('commit') or '?'}.", "",
             "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(c.replace("<=", "≤") for c in r) + " |" for r in rows]
    text = evidence_text(bench)
    if text is not None:
        lines += ["", text]
    return "\n".join(lines) + "\n"


def evidence_text(bench: SwitchBenchmark) -> Optional[str]:
    """One sentence on what the evidence itself allows (:func:`separability`, true skills known) and
    the belief's accuracy, ``"-"`` for what it cannot say; ``None`` without the diagnostics."""
    sep = bench.diagnostics.get("separability") or {}
    if sep.get("share_identifiable") is None:
        return None

    def f(x, fmt: str) -> str:
        return "-" if x is None else fmt.format(x)

    floor = sep["true_skill_contradiction_per_100_steps"]
    return (f"Evidence (true skills known): {f(sep['share_identifiable'], '{:.1%}')} of the switches "
            f"identifiable (oracle LLR > log 10 before and after), {f(sep['share_established'], '{:.1%}')} "
            f"established (old skill ran ≥ {ESTABLISHED_STEPS} steps; "
            f"{f(sep['share_identifiable_of_established'], '{:.1%}')} of those identifiable); the old skill "
            f"ran one step before {f(sep['share_pre_one_step'], '{:.1%}')}; after the switch "
            f"{f(sep['share_llr_gt_log10'], '{:.1%}')} reach LLR > log 10 (median "
            f"{f(sep['oracle_llr_median'], '{:.2f}')}); one action contradicts the true skill "
            "(tau 0.05/0.1/0.2) " + "/".join(f(floor[k], "{:.2f}") for k in sorted(floor, key=float))
            + f" times per 100 steps; pre-update MAP accuracy "
              f"{f(bench.diagnostics.get('pre_update_map_accuracy'), '{:.3f}')}.")


def naive_false_alarms_at(bench: SwitchBenchmark, delay: float) -> Optional[float]:
    """False alarms per 100 steps of the naive rule at a mean delay (piecewise-linear in delay; None outside)."""
    pts = sorted((p.mean_delay, p.fa_per_100) for p in bench.sweeps["naive threshold"].points)
    for (d0, f0), (d1, f1) in zip(pts, pts[1:]):
        if d0 <= delay <= d1:
            return f0 if d1 == d0 else f0 + (delay - d0) / (d1 - d0) * (f1 - f0)
    return None


def tuning_lines(result: Dict[str, Any]) -> List[str]:
    """What a tuning run found, in a few lines."""
    cfg = result["config"]
    lines = [f"tuning on seeds {_seed_text(cfg['seeds'])}: {result['switches']} hidden switches in "
             f"{result['episodes']} episodes, {len(result['rows'])} settings scored"]
    for gate, best in result["best"].items():
        if best is None:
            lines.append(f"{gate}: no setting within {cfg['max_fa']:g} false alarms / 100 steps")
            continue
        keys = [k for k in best if k not in ("gate", "detection_rate", "mean_delay", "fa_per_100")]
        lines.append(f"{gate}: best within {cfg['max_fa']:g} FA/100: detection {best['detection_rate']:.1%}, delay "
                     f"{best['mean_delay']:.2f}, {best['fa_per_100']:.2f} FA/100 at "
                     + ", ".join(f"{k}={best[k]}" for k in keys))
    verdict = "met" if result["target_met"] else "NOT met"
    lines.append(f"target (>= {cfg['min_detection']:.0%} detection at <= {cfg['max_fa']:g} FA/100): {verdict}")
    sep = result.get("separability") or {}
    if sep:
        floor = sep["true_skill_contradiction_per_100_steps"]
        lines.append(f"evidence: median oracle LLR of a switch over the window {sep['oracle_llr_median']:.2f}; "
                     f"{sep['share_positive_within_3']:.0%} of switches favour the new skill within 3 steps; with the "
                     f"true skill known, one action contradicts it (tau 0.05/0.1/0.2) "
                     + "/".join(f"{floor[k]:.2f}" for k in sorted(floor, key=float)) + " times per 100 steps")
        if sep.get("share_identifiable") is not None:
            lines.append(f"identifiable switches (both halves' oracle LLR > log 10): {sep['share_identifiable']:.0%}; "
                         f"the old skill ran one step before {sep['share_pre_one_step']:.0%} of them")
    return lines
