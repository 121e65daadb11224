"""Episode metrics computed from trajectory logs alone (SPEC §7).

Every metric is a function of one :class:`~beliefgate.envs.trajlog.Trajectory`
(what :func:`~beliefgate.envs.trajlog.read_log` returns) and documents its exact
definition. Conventions shared by all of them:

* The **ego** is player ``traj.header.seat``; the **partner** is the first other player (with two
  players, ``1 - seat``). With three or more players the pairwise metrics (duplicate skill,
  blocking, complementarity, gap, intent accuracy, the reference gate's accuracy) are those of the
  ego and that first teammate -- the one whose skill the ego's logged belief is about -- and the
  rollout oracle lets every further teammate wait.
* The game's specifics (skill library, delivery events, the interact action, what a blocked move
  is, the rollout dynamics) come from the layout's domain (:mod:`beliefgate.envs.domain`).
* Row ``t`` of the log holds the state ``s_t``, the joint action ``a_t`` taken in it,
  the reward and the interaction ``events`` of the transition ``s_t -> s_{t+1}``,
  each player's *true* active skill while choosing ``a_t`` (``skills``) and each
  agent's own diagnostics (``info``).
* Partner-belief quantities (``map_accuracy``, ``gap_rate``, ``comp3``) use a
  **reference gate** (default :class:`~beliefgate.beliefs.gate.GateParams`)
  replayed on the log by :func:`~beliefgate.eval.replay.replay`, the same for
  every agent, so that agents with and without a belief of their own are
  measured alike. ``intent_accuracy`` instead scores the ego's *own* logged
  prediction, and is undefined (NaN) for agents that log none.
* A rate whose denominator is empty is NaN (not 0): "no such step" is not "never".

:func:`episode_metrics` returns every metric of one log as a flat dict; the
evaluation runner stores one such row per episode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from beliefgate.envs.domain import SkillStatus, domain_for_layout
from beliefgate.envs.trajlog import Trajectory
from beliefgate.errors import InputError
from beliefgate.planners.errors import FALLBACK_REASONS
from beliefgate.planners.fallbacks import ROLES
from beliefgate.eval.replay import ReplayResult, replay

#: bump when a definition changes: stored metric rows of another version are recomputed
#: (2: the fallback columns; 3: effective replans, decision-point and oracle gap, oracle Comp@3;
#: 4: gap and Comp@3 ask the domain's complementarity first: OvercookedV2's knows the recipe)
METRICS_VERSION = 4

#: oracle complementarity: steps imagined per candidate ego skill, and the return margin
#: within which a skill counts as best (dish-progress units: one soup = 1)
ORACLE_HORIZON = 15
ORACLE_TOLERANCE = 1e-6
#: at most this many rows per episode are asked of the oracle for each oracle metric (evenly
#: spaced over the eligible rows, first and last included): each row costs one short rollout per
#: feasible ego skill (about 1 ms per imagined step on these machines)
ORACLE_MAX_POINTS = 8


@dataclass(frozen=True)
class MetricInfo:
    """How a metric is labelled in tables and which direction is better."""

    label: str
    better: str          # "higher", "lower" or "" (neither: a cost or a count to read in context)
    description: str

    @property
    def arrow(self) -> str:
        return {"higher": "↑", "lower": "↓"}.get(self.better, "")


#: every column :func:`episode_metrics` returns, in table order
METRICS: Dict[str, MetricInfo] = {
    "reward": MetricInfo("reward", "higher", "team reward of the episode"),
    "deliveries": MetricInfo("D", "higher", "soups delivered by either player"),
    "map_accuracy": MetricInfo("skill acc", "higher", "reference-gate MAP equals the partner's true skill"),
    "gap_rate": MetricInfo("gap", "lower",
                           "belief-action gap rate (per step; SPEC table, or the domain's: V2 by recipe needs)"),
    "gap_rate_decisions": MetricInfo("gap@dp", "lower",
                                     "belief-action gap rate at decision points (SPEC table, or the domain's)"),
    "oracle_gap_rate": MetricInfo("gap@oracle", "lower",
                                  "belief-action gap rate at decision points against the rollout oracle"),
    "comp3": MetricInfo("Comp@3", "higher", "complementary skill within 3 steps of a detected contradiction"),
    "oracle_comp3": MetricInfo("Comp@3 oracle", "higher",
                               "oracle-best skill within 3 steps of a detected contradiction"),
    "duplicate_rate": MetricInfo("dup", "lower", "share of steps both players pursue the same skill"),
    "replans": MetricInfo("replans", "", "interruptions of a running ego skill per episode"),
    "effective_replans": MetricInfo("eff. replans", "", "replans that changed the ego's skill per episode"),
    "effective_fraction": MetricInfo("eff. share", "higher", "share of replans that changed the ego's skill"),
    "llm_calls": MetricInfo("LLM calls", "", "ego LLM calls per episode"),
    "llm_calls_per_step": MetricInfo("c/s", "", "ego LLM calls per agent-step"),
    "failed_interaction_rate": MetricInfo("FI", "lower", "ego INTERACTs with no effect"),
    "blocking_rate": MetricInfo("MB", "lower", "ego steps whose move the partner blocked"),
    "intent_accuracy": MetricInfo("IA", "higher", "ego's own partner-skill prediction is right"),
    "abandoned": MetricInfo("Σ⁻", "lower", "ego sub-tasks abandoned per episode"),
    "fallbacks": MetricInfo("fallbacks", "lower", "ego LLM fallbacks per episode, all roles"),
    **{f"fallbacks_{role}": MetricInfo(f"fb {role}", "lower", f"ego {role} fallbacks per episode")
       for role in ROLES},
    **{f"fallback_{reason}": MetricInfo(f"fb {reason}", "lower", f"ego fallbacks for reason {reason} per episode")
       for reason in FALLBACK_REASONS},
    "steps": MetricInfo("steps", "", "logged steps"),
}


class MetricError(InputError):
    """A log cannot be scored (e.g. a seat that is not a player of the log)."""


def _players(traj: Trajectory) -> tuple[int, int]:
    """(ego, partner): the ego's seat and its first teammate's."""
    seat = traj.header.seat
    n = len(traj.header.agents)
    if n < 2:
        raise MetricError(f"metrics need at least two players, got {n} ({traj.header.agents})")
    if not 0 <= seat < n:
        raise MetricError(f"ego seat {seat} is not a player of this log")
    return seat, next(i for i in range(n) if i != seat)


def _library(traj: Trajectory):
    """The skill library of the log's domain and layout."""
    layout = traj.header.layout
    return domain_for_layout(layout).controller(layout).library


def _complementarity(traj: Trajectory):
    """``complementary(t, ego_skill, partner_skill)`` for row t of ``traj``: the domain's judgement on
    the logged (true) state (:meth:`Domain.complements`: the skill library's role table, SPEC §2;
    OvercookedV2: the kitchen's needs under the active recipe)."""
    layout = traj.header.layout
    domain = domain_for_layout(layout)
    controller = domain.controller(layout)
    ego = traj.header.seat

    def complementary(t: int, skill: str, partner_skill: str) -> bool:
        return domain.complements(traj.steps[t].state, ego, skill, partner_skill, controller)

    return complementary


def _nan_ratio(num: float, den: float) -> float:
    return float(num) / float(den) if den else float("nan")


def _summary(traj: Trajectory) -> Dict[str, object]:
    return traj.final.summary if traj.final is not None else {}


def _ego_counter(traj: Trajectory, key: str) -> int:
    """The ego's cumulative ``key`` counter: the final summary's value, else its last logged info."""
    summary = _summary(traj)
    if key in summary:
        return int(summary[key])
    seat = traj.header.seat
    for row in reversed(traj.steps):
        if seat < len(row.info) and key in row.info[seat]:
            return int(row.info[seat][key])
    return 0


def ego_skills(traj: Trajectory) -> List[Optional[str]]:
    """The ego's logged active skill per step (None when idle)."""
    seat = traj.header.seat
    return [row.skills[seat] for row in traj.steps]


def reference_replay(traj: Trajectory, params=None) -> ReplayResult:
    """The reference gate (``params``, default :class:`GateParams`) replayed on the partner of ``traj``."""
    _, partner = _players(traj)
    return replay(traj, params, partner=partner)


def _truth_names(ref: ReplayResult) -> List[Optional[str]]:
    return [ref.skill_names[int(k)] if k >= 0 else None for k in ref.truth]


# --------------------------------------------------------------------------- task outcome
def reward(traj: Trajectory) -> float:
    """Team reward: the sum of the logged per-step rewards ``Σ_t r_t``.

    Equals the episode's final score (the summary's ``reward``) for a complete log.
    """
    return float(sum(row.reward for row in traj.steps))


def deliveries(traj: Trajectory) -> int:
    """Soups delivered, D: the number of delivery events (Overcooked: ``deliver:soup``) of any player
    over all logged steps."""
    delivered = domain_for_layout(traj.header.layout).delivery_events
    return int(sum(ev.count(d) for row in traj.steps for ev in row.events for d in delivered))


# --------------------------------------------------------------------------- planning cost
def replans(traj: Trajectory) -> int:
    """Replans per episode: planner calls that interrupted an ego skill still running.

    The ego's own cumulative ``replans`` counter at the end of the episode (the
    final summary, else its last logged info). Planner calls after a completion,
    an invalid skill or a time-out are not replans.
    """
    return _ego_counter(traj, "replans")


def _ego_infos(traj: Trajectory) -> List[Dict[str, object]]:
    seat = traj.header.seat
    return [row.info[seat] if seat < len(row.info) else {} for row in traj.steps]


@dataclass(frozen=True)
class GateFirings:
    """What became of the ego gate's firings in one log (or summed over logs with ``+``):
    ``fired`` steps with ``gate_fired``, ``interrupts`` of those that interrupted the running skill,
    and ``vetoes``: per filter (``gate_veto.filter``: ``no_running_skill``, ``no_alternative``,
    ``still_complementary``, ``plan_stands``, ``condition``, ...) how many firings it stopped.
    ``logged`` is False for a log from before vetoes were logged (the counts are then 0);
    ``gated``: the ego kept a gate (a belief) at some step."""

    fired: int = 0
    interrupts: int = 0
    vetoes: Tuple[Tuple[str, int], ...] = ()
    logged: bool = False
    gated: bool = False

    def __add__(self, other: "GateFirings") -> "GateFirings":
        counts = dict(self.vetoes)
        for name, n in other.vetoes:
            counts[name] = counts.get(name, 0) + n
        return GateFirings(self.fired + other.fired, self.interrupts + other.interrupts,
                           tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
                           self.logged or other.logged, self.gated or other.gated)

    @property
    def vetoed(self) -> int:
        return sum(n for _, n in self.vetoes)

    def describe(self) -> str:
        """``18 gate firings: 0 interrupts, 18 vetoed (no_running_skill 12, plan_stands 6)``."""
        if not self.logged:
            return f"{self.fired} gate firings (vetoes not logged)"
        if not self.gated:
            return "no gate"
        text = f"{self.fired} gate firing{'s' if self.fired != 1 else ''}: {self.interrupts} interrupt" + (
            "s" if self.interrupts != 1 else "") + f", {self.vetoed} vetoed"
        if self.vetoes:
            text += " (" + ", ".join(f"{name} {n}" for name, n in self.vetoes) + ")"
        return text


    def why_identical(self) -> str:
        """Why a belief agent with these firings played the same episodes as a condition without
        interrupts: ``all 18 gate firings were vetoed (no_running_skill 12, plan_stands 6)``, ``its
        gate never fired``; "" when vetoes were not logged."""
        if not self.logged:
            return ""
        if not self.gated:
            return "it keeps no gate"
        if self.fired == 0:
            return "its gate never fired"
        vetoes = ", ".join(f"{name} {n}" for name, n in self.vetoes)
        share = "all" if self.vetoed == self.fired else f"{self.vetoed} of"
        return (f"{share} {self.fired} gate firing{'s were' if self.fired != 1 else ' was'} vetoed"
                + (f" ({vetoes})" if vetoes else ""))


def gate_firings(traj: Trajectory) -> GateFirings:
    """Count the ego gate's firings of a log and what stopped those that did not interrupt
    (the ``gate_veto`` the planning agent logs at each firing that did not become a replan)."""
    fired = interrupts = 0
    counts: Dict[str, int] = {}
    logged = gated = False
    for info in _ego_infos(traj):
        if "gate_veto" in info:
            logged = True
        if info.get("belief") is not None:
            gated = True
        if not info.get("gate_fired"):
            continue
        fired += 1
        veto = info.get("gate_veto")
        if isinstance(veto, dict):
            name = str(veto.get("filter", "?"))
            counts[name] = counts.get(name, 0) + 1
        elif info.get("interrupt"):
            interrupts += 1
    return GateFirings(fired, interrupts, (), logged, gated) + GateFirings(0, 0, tuple(counts.items()), logged, gated)


def effective_replans(traj: Trajectory) -> float:
    """Effective replans per episode: replans after which the ego runs a different skill.

    Counted from the log alone, the same for every agent: rows t >= 1 whose ego info says the
    planner call interrupted a running skill (``interrupt``) and where the ego's logged skill at
    t differs from its skill at t-1 (the one interrupted; a call that re-chose the running skill
    changed nothing the partner can see). NaN for a log whose ego logs no ``interrupt`` flag.
    """
    infos = _ego_infos(traj)
    if not any("interrupt" in i for i in infos):
        return float("nan")
    skills = ego_skills(traj)
    return float(sum(1 for t in range(1, len(skills))
                     if infos[t].get("interrupt") and skills[t] != skills[t - 1]))


def effective_fraction(traj: Trajectory) -> float:
    """Share of the ego's interrupts that changed its skill: ``effective_replans`` over the steps flagged
    ``interrupt`` (NaN without one). That count can exceed ``replans`` by interrupts that found no
    feasible skill and returned before a planner call (docs/eval.md)."""
    eff = effective_replans(traj)
    n = sum(1 for i in _ego_infos(traj) if i.get("interrupt"))
    return _nan_ratio(eff, n) if not math.isnan(eff) else float("nan")


def llm_calls(traj: Trajectory) -> int:
    """LLM calls per episode: the ego's cumulative ``llm_calls`` counter at the end (0 offline)."""
    return _ego_counter(traj, "llm_calls")


def llm_calls_per_step(traj: Trajectory) -> float:
    """LLM calls per agent-step, c/s: ``llm_calls(traj)`` divided by the number of logged ego steps."""
    return _nan_ratio(llm_calls(traj), len(traj.steps))


def fallback_counts(traj: Trajectory) -> Dict[str, float]:
    """The ego's LLM fallbacks: ``fallbacks`` (total), ``fallbacks_<role>`` and ``fallback_<reason>``.

    Counted from the ``fallback_events`` of the ego's logged info (one event per planner
    decision, judge or hypothesis call that fell back, with its role and reason). A log
    without any ``fallback_events`` (an older log) gives the total from the ego's cumulative
    ``fallbacks`` counter and NaN per role and reason (unknown); an agent that calls no
    model has zero everywhere.
    """
    seat = traj.header.seat
    infos = [row.info[seat] for row in traj.steps if seat < len(row.info)]
    roles = {f"fallbacks_{r}": 0.0 for r in ROLES}
    reasons = {f"fallback_{r}": 0.0 for r in FALLBACK_REASONS}
    if not any("fallback_events" in i for i in infos):
        nan = float("nan")
        total = float(_ego_counter(traj, "fallbacks"))
        return {"fallbacks": total, **{k: (0.0 if total == 0 else nan) for k in (*roles, *reasons)}}
    total = 0
    for info in infos:
        for event in info.get("fallback_events") or ():
            total += 1
            role, reason = f"fallbacks_{event.get('role')}", f"fallback_{event.get('reason')}"
            if role in roles:
                roles[role] += 1
            if reason in reasons:
                reasons[reason] += 1
    return {"fallbacks": float(total), **roles, **reasons}


# --------------------------------------------------------------------------- partner beliefs
def skill_accuracy(traj: Trajectory, reference: Optional[ReplayResult] = None) -> float:
    """Teammate-skill prediction accuracy (literal theory of mind).

    Over the steps t where the partner's true skill is known (``skills[partner]``
    not None), the share where the reference gate's MAP skill after seeing the
    partner's action ``a_t`` equals that true skill.
    """
    ref = reference if reference is not None else reference_replay(traj)
    known = ref.truth >= 0
    return float(np.mean(ref.map_skill[known] == ref.truth[known])) if known.any() else float("nan")


def belief_action_gap_rate(traj: Trajectory, reference: Optional[ReplayResult] = None,
                           confidence_floor: Optional[float] = None) -> float:
    """Share of decision points with a correct partner belief where the ego's skill is not complementary.

    Decision points: steps t where the ego has an active skill (it selects or
    continues one) and the partner's true skill is known. Of those, only steps
    where the reference gate's MAP equals the partner's true skill count (the
    belief was right) -- or, with ``confidence_floor``, steps where the reference
    gate's confidence is at least that floor. A gap is an ego skill that is not
    complementary (:meth:`SkillLibrary.is_complementary`) to the partner's true
    skill at t: stale, duplicate or non-complementary (SPEC §2); where the domain judges it from the
    true state (:func:`_complementarity`; OvercookedV2: by the kitchen's needs under the active
    recipe) the domain decides. NaN when no step counts.
    """
    complementary = _complementarity(traj)
    ref = reference if reference is not None else reference_replay(traj)
    truth = _truth_names(ref)
    gaps = total = 0
    for t, skill in enumerate(ego_skills(traj)):
        if skill is None or truth[t] is None:
            continue
        if confidence_floor is None:
            if ref.map_skill[t] != ref.truth[t]:
                continue
        elif ref.confidence[t] < confidence_floor:
            continue
        total += 1
        gaps += not complementary(t, skill, truth[t])
    return _nan_ratio(gaps, total)


def decision_points(traj: Trajectory, reference: Optional[ReplayResult] = None) -> List[int]:
    """The paper's high-level decision points: rows where the ego selects a skill or may continue one.

    Rows t where the ego's planner was called and it holds a skill afterwards (``replanned`` in
    its info: start, idle, completion, invalid, time-out or an interrupt) -- it *selects* -- and
    rows where the reference gate detected a contradiction on the partner's previous action
    (``interrupt`` at t-1) while the ego holds a skill -- it *continues* or replans.
    """
    ref = reference if reference is not None else reference_replay(traj)
    infos = _ego_infos(traj)
    skills = ego_skills(traj)
    out = []
    for t in range(len(skills)):
        if skills[t] is None:
            continue
        if infos[t].get("replanned") or (t >= 1 and bool(ref.interrupt[t - 1])):
            out.append(t)
    return out


def belief_action_gap_rate_decisions(traj: Trajectory, reference: Optional[ReplayResult] = None) -> float:
    """Belief–action gap rate at the paper's decision points (:func:`decision_points`), SPEC §2 table.

    Of the decision points where the partner's true skill is known and the reference MAP equals
    it, the share where the ego's skill is not complementary to the partner's true skill (as in
    :func:`belief_action_gap_rate`). NaN when none counts.
    """
    complementary = _complementarity(traj)
    ref = reference if reference is not None else reference_replay(traj)
    truth = _truth_names(ref)
    skills = ego_skills(traj)
    gaps = total = 0
    for t in decision_points(traj, ref):
        if truth[t] is None or ref.map_skill[t] != ref.truth[t]:
            continue
        total += 1
        gaps += not complementary(t, skills[t], truth[t])
    return _nan_ratio(gaps, total)


def _spread(rows: List[int], n: int = ORACLE_MAX_POINTS) -> List[int]:
    """At most ``n`` of ``rows``, evenly spaced (all of them when there are no more than ``n``)."""
    if len(rows) <= n:
        return list(rows)
    idx = np.unique(np.round(np.linspace(0, len(rows) - 1, n)).astype(int))
    return [rows[i] for i in idx]


class _Oracle:
    """Rollout oracle of complementarity: which ego skills give the highest short-horizon return.

    For row t of a log: every ego skill feasible in s_t (a reachable target) is imagined for
    :data:`ORACLE_HORIZON` steps in the real dynamics of the log's domain from the logged state s_t. The
    ego runs that skill through the shared executor, then, when it ends, the skill the kitchen
    needs most (need only, no belief; ties to library order). The partner plays its *true* skills:
    the sequence of distinct skills it logged from row t on, each through the executor (an
    infeasible one is skipped; none left: it fidgets). The return is the dish-progress gain
    (delivered soups count 1 each, partial soups and useful held items their share). The best
    skills are those within :data:`ORACLE_TOLERANCE` of the highest return; a row is
    *uninformative* (None) when fewer than two skills are feasible or all tie. Randomness
    (executor tie-breaks, fidgets) is seeded by the episode seed, t and the skill.
    """

    def __init__(self, traj: Trajectory, horizon: int = ORACLE_HORIZON):
        self.traj = traj
        self.ego, self.partner = _players(traj)
        self.players = len(traj.header.agents)
        self.horizon = int(horizon)
        layout = traj.header.layout
        self.domain = domain = domain_for_layout(layout)
        self.ctl = domain.controller(layout)
        self.sim = domain.make_env(layout, 10 ** 7, old_dynamics=bool(traj.header.config.get("old_dynamics", True)))
        self.names = self.ctl.library.names
        truth = [row.skills[self.partner] for row in traj.steps]
        self.truth = truth
        self._cache: Dict[int, Optional[frozenset]] = {}
        self.rollouts = 0

    def _partner_plan(self, t: int) -> List[int]:
        seq: List[int] = []
        for name in self.truth[t:]:
            if name is None:
                continue
            k = self.names.index(name)
            if not seq or seq[-1] != k:
                seq.append(k)
        return seq

    def _rollout(self, t: int, first: int) -> float:
        domain = self.domain
        rng = np.random.default_rng([int(self.traj.header.seed), int(t), int(first)])
        state = self.sim.set_state(self.traj.steps[t].state)
        start = domain.progress(state)
        ego_ex, partner_ex = domain.executor(self.ctl, self.ego, rng), domain.executor(self.ctl, self.partner, rng)
        ego_ex.start_in(state, first)
        ego_on: Optional[int] = first
        plan = self._partner_plan(t)
        partner_on: Optional[int] = None
        events: List[List[str]] = [[] for _ in range(self.players)]
        for _ in range(self.horizon):
            if ego_on is not None and ego_ex.update(state, events[self.ego]) is not SkillStatus.RUNNING:
                ego_on = None
            if ego_on is None:
                mask = self.ctl.feasible(state, self.ego, require_targets=True)
                needs = domain.skill_needs(state, self.ego, self.ctl, mask)
                if needs:
                    best = max(needs, key=lambda n: (min(needs[n], 1.0), -self.names.index(n)))
                    ego_on = self.names.index(best)
                    ego_ex.start_in(state, ego_on)
            if partner_on is not None and partner_ex.update(state, events[self.partner]) is not SkillStatus.RUNNING:
                partner_on = None
                if plan:
                    plan.pop(0)
            while partner_on is None and plan:
                if self.ctl.feasible(state, self.partner, require_targets=True)[plan[0]]:
                    partner_on = plan[0]
                    partner_ex.start(partner_on)
                else:
                    plan.pop(0)
            actions = [0] * self.players
            actions[self.ego] = int(ego_ex.act(state)) if ego_on is not None else domain.idle_action(state, self.ego, rng)
            actions[self.partner] = (int(partner_ex.act(state)) if partner_on is not None
                                     else domain.idle_action(state, self.partner, rng))
            for other in range(self.players):  # further teammates wait
                if other not in (self.ego, self.partner):
                    actions[other] = domain.idle_action(state, other, rng)
            result = self.sim.step(actions)
            events, state = result.events, result.state
        self.rollouts += 1
        return domain.progress(state) - start

    def best(self, t: int) -> Optional[frozenset]:
        """The names of the oracle-best ego skills at row t, or None when the row is uninformative."""
        if t in self._cache:
            return self._cache[t]
        state = self.traj.steps[t].state
        mask = self.ctl.feasible(state, self.ego, require_targets=True)
        cands = [k for k in range(len(self.names)) if mask[k]]
        out: Optional[frozenset] = None
        if len(cands) >= 2:
            returns = {k: self._rollout(t, k) for k in cands}
            top = max(returns.values())
            if min(returns.values()) < top - ORACLE_TOLERANCE:
                out = frozenset(self.names[k] for k, r in returns.items() if r >= top - ORACLE_TOLERANCE)
        self._cache[t] = out
        return out


def oracle_gap_rate(traj: Trajectory, reference: Optional[ReplayResult] = None,
                    oracle: Optional[_Oracle] = None) -> float:
    """Belief–action gap rate at decision points against the rollout oracle (not the planner's table).

    Of the decision points (:func:`decision_points`) where the partner's true skill is known, the
    reference MAP equals it and the oracle is informative (:class:`_Oracle`: at least two feasible
    ego skills whose imagined returns differ), the share where the ego's skill is not one of the
    oracle-best skills given the partner's true skills. At most :data:`ORACLE_MAX_POINTS`
    eligible decision points per episode are scored (evenly spaced). NaN when none counts.
    """
    ref = reference if reference is not None else reference_replay(traj)
    oracle = oracle if oracle is not None else _Oracle(traj)
    skills = ego_skills(traj)
    gaps = total = 0
    eligible = [t for t in decision_points(traj, ref) if ref.truth[t] >= 0 and ref.map_skill[t] == ref.truth[t]]
    for t in _spread(eligible):
        best = oracle.best(t)
        if best is None:
            continue
        total += 1
        gaps += skills[t] not in best
    return _nan_ratio(gaps, total)


def oracle_comp_at_k(traj: Trajectory, reference: Optional[ReplayResult] = None, k: int = 3,
                     oracle: Optional[_Oracle] = None) -> float:
    """Comp@k against the rollout oracle: after a detected contradiction, the ego on an oracle-best skill.

    Contradictions as in :func:`comp_at_k` (reference-gate interrupts at t; the window is rows
    t+1..t+k). The oracle is asked at row t+1, the first state the ego sees after the partner's
    contradicting action; the contradiction counts as recovered when at some row of the window
    the ego's skill is one of the oracle-best skills of row t+1. Contradictions whose row t+1 is
    uninformative for the oracle (or beyond the log) are not counted; at most
    :data:`ORACLE_MAX_POINTS` contradictions per episode are scored (evenly spaced). NaN when
    none counts.
    """
    if k < 1:
        raise MetricError(f"k must be >= 1, got {k}")
    ref = reference if reference is not None else reference_replay(traj)
    oracle = oracle if oracle is not None else _Oracle(traj)
    ego = ego_skills(traj)
    T = len(ego)
    hits = total = 0
    for t in _spread([int(t) for t in np.flatnonzero(ref.interrupt) if t + 1 < T]):
        best = oracle.best(t + 1)
        if best is None:
            continue
        total += 1
        hits += any(ego[u] in best for u in range(t + 1, min(t + k, T - 1) + 1))
    return _nan_ratio(hits, total)


def comp_at_k(traj: Trajectory, reference: Optional[ReplayResult] = None, k: int = 3,
              signal: str = "interrupt") -> float:
    """Comp@k: share of detected contradictions after which the ego is on a complementary skill within k steps.

    A detected contradiction is a step t where the reference gate fires
    (``signal="interrupt"``: the stable-MAP gate's interrupt, Eq. 12; or
    ``"contradiction"``: the raw ``l_t < tau_obs`` signal, Eq. 11) on the partner's
    action ``a_t``. The ego first sees that action at row t+1, so the window is
    rows ``u = t+1 .. t+k``. The contradiction counts as recovered when at some u
    in the window the ego has an active skill complementary to the partner's
    true skill at u. Contradictions whose window holds no row with a known
    partner skill (e.g. at the very end of the log) are not counted. NaN when
    none counts.
    """
    if k < 1:
        raise MetricError(f"k must be >= 1, got {k}")
    if signal not in ("interrupt", "contradiction"):
        raise MetricError(f"signal must be 'interrupt' or 'contradiction', got {signal!r}")
    complementary = _complementarity(traj)
    ref = reference if reference is not None else reference_replay(traj)
    fired = ref.interrupt if signal == "interrupt" else ref.contradiction
    truth = _truth_names(ref)
    ego = ego_skills(traj)
    T = len(ego)
    hits = total = 0
    for t in np.flatnonzero(fired):
        window = [u for u in range(t + 1, min(t + k, T - 1) + 1) if truth[u] is not None]
        if not window:
            continue
        total += 1
        hits += any(ego[u] is not None and complementary(u, ego[u], truth[u]) for u in window)
    return _nan_ratio(hits, total)


def partner_intent_accuracy(traj: Trajectory) -> float:
    """Partner-intent accuracy, IA: how often the ego's *own* prediction of the partner's skill is right.

    Over the steps t where the ego logged a prediction (``info[ego]["partner_map"]``,
    made from the states up to ``s_t``) and the partner's true skill at t is
    known, the share where they are equal: a one-step-ahead prediction of the
    skill the partner executes when both act at t. NaN for agents that log no
    prediction (no belief of their own).
    """
    ego, partner = _players(traj)
    hits = total = 0
    for row in traj.steps:
        guess = row.info[ego].get("partner_map") if ego < len(row.info) else None
        truth = row.skills[partner]
        if guess is None or truth is None:
            continue
        total += 1
        hits += guess == truth
    return _nan_ratio(hits, total)


# --------------------------------------------------------------------------- coordination
def duplicate_skill_rate(traj: Trajectory) -> float:
    """Duplicate-skill rate: over steps where both players have an active skill, the share with the same skill."""
    ego, partner = _players(traj)
    same = total = 0
    for row in traj.steps:
        a, b = row.skills[ego], row.skills[partner]
        if a is None or b is None:
            continue
        total += 1
        same += a == b
    return _nan_ratio(same, total)


def failed_interaction_rate(traj: Trajectory) -> float:
    """Failed-interaction rate, FI: the share of the ego's INTERACT actions that produced no interaction event.

    An INTERACT at row t fails when the ego's ``events`` of the transition
    ``s_t -> s_{t+1}`` are empty (nothing picked up, put down, potted, scooped or
    delivered). NaN when the ego never interacts.
    """
    ego, _ = _players(traj)
    interact = domain_for_layout(traj.header.layout).interact_action
    tried = failed = 0
    for row in traj.steps:
        if row.actions[ego] != interact:
            continue
        tried += 1
        failed += not row.events[ego]
    return _nan_ratio(failed, tried)


def blocking_rate(traj: Trajectory) -> float:
    """Blocking rate, MB: the share of the ego's steps on which its move was blocked by the partner.

    The ego's move at row t (N/S/E/W) is blocked when its target cell is a floor
    cell yet the ego's position in ``s_{t+1}`` is unchanged (``Domain.move_blocked``). With two players only
    the partner can cause that (it stands there, or both tried to enter one cell,
    or to swap). A move into a counter only turns the player: not blocked.
    Denominator: every logged ego step.
    """
    ego, _ = _players(traj)
    states = traj.states()
    domain = domain_for_layout(traj.header.layout)
    blocked = 0
    for t, row in enumerate(traj.steps):
        if t + 1 >= len(states):
            continue
        blocked += bool(domain.move_blocked(row.state, states[t + 1], ego, row.actions[ego]))
    return _nan_ratio(blocked, len(traj.steps))


def subtasks_abandoned(traj: Trajectory) -> int:
    """Sub-tasks abandoned, Σ⁻: ego skills that ended without their completion event.

    Counted at each row t >= 1 where the ego's active skill at t-1 was ψ, its skill
    at t is different (another skill or none), and ψ's completion event is not among
    the ego's events of the transition ``s_{t-1} -> s_t``. A skill still running
    when the log ends is not abandoned.
    """
    ego, _ = _players(traj)
    library = _library(traj)
    domain = domain_for_layout(traj.header.layout)
    names = library.names
    count = 0
    for prev, row in zip(traj.steps, traj.steps[1:]):
        before, after = prev.skills[ego], row.skills[ego]
        if before is None or before == after:
            continue
        done = {names[k] for k in domain.completed_skills(prev.events[ego], library)}
        count += before not in done
    return count


# --------------------------------------------------------------------------- everything
def episode_metrics(traj: Trajectory, reference: Optional[ReplayResult] = None,
                    params=None) -> Dict[str, float]:
    """Every metric of :data:`METRICS` for one log (floats; NaN where undefined).

    ``reference`` is the reference-gate replay (computed with ``params`` when not given).
    """
    ref = reference if reference is not None else reference_replay(traj, params)
    oracle = _Oracle(traj)
    out = {
        "reward": reward(traj),
        "deliveries": deliveries(traj),
        "map_accuracy": skill_accuracy(traj, ref),
        "gap_rate": belief_action_gap_rate(traj, ref),
        "gap_rate_decisions": belief_action_gap_rate_decisions(traj, ref),
        "oracle_gap_rate": oracle_gap_rate(traj, ref, oracle),
        "comp3": comp_at_k(traj, ref, k=3),
        "oracle_comp3": oracle_comp_at_k(traj, ref, 3, oracle),
        "duplicate_rate": duplicate_skill_rate(traj),
        "replans": replans(traj),
        "effective_replans": effective_replans(traj),
        "effective_fraction": effective_fraction(traj),
        "llm_calls": llm_calls(traj),
        "llm_calls_per_step": llm_calls_per_step(traj),
        "failed_interaction_rate": failed_interaction_rate(traj),
        "blocking_rate": blocking_rate(traj),
        "intent_accuracy": partner_intent_accuracy(traj),
        "abandoned": subtasks_abandoned(traj),
        **fallback_counts(traj),
        "steps": len(traj.steps),
    }
    return {k: float(v) for k, v in out.items()}


def is_missing(value) -> bool:
    """True for None and NaN (a metric that is undefined for an episode)."""
    return value is None or (isinstance(value, float) and math.isnan(value))
