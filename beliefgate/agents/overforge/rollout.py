"""The forward model: imagine a branch in the real dynamics of the layout's domain.

A :class:`BranchRollout` copies the decision's state into its own environment of the domain
(``Domain.make_env``, continued with ``set_state``) and steps the game's real dynamics. The ego follows the branch: its first skill through the shared
executor, then, whenever a skill ends, the feasible skill its strategy prefers most among the
useful ones. The partner follows the executor too, on a skill drawn from the belief: the gate's
predictive posterior restricted to the partner's feasible skills, with the branch's own imagined
filter observing every imagined step so the posterior is the filter's own along the imagined trajectory (drawn anew
when the partner's skill ends); ``mix`` tempers that draw towards the uniform choice
(``(1 - mix) posterior + mix uniform``). The ``-belief`` ablation draws the partner's skill
uniformly over its feasible skills instead (and runs no imagined filter). With more than two
players each teammate given in ``teammates`` is drawn from its own gate's posterior and filtered by
its own imagined filter (one gate per teammate); a teammate without one draws uniformly. Where the
domain names goals (OvercookedV2's recipes) the rollout runs under an imagined goal
(``Domain.with_goal``) and teammates prefer the skills it needs. :func:`extend_together` steps many
rollouts in lockstep, in one call of the domain's batch stepper where it has one. ``extend(steps)``
continues the same imagined trajectory, so later rounds deepen the branch; the score is the
value gain (``Domain.rollout_value``, by default ``Domain.progress``) since the decision.

The imagined filter is functional: a rollout starts from the live gate's state at the decision
(a :class:`~beliefgate.beliefs.core.GateState` value, :attr:`Gate.state`) and carries its own
state forward with the gate's functions (:class:`ImaginedFilter`: ``make_gate`` over the gate's
parameters, and the gate's observer), so no rollout reads, mutates or restores the live gate.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from beliefgate.beliefs.core import make_gate
from beliefgate.beliefs.gate import Gate, GateState
from beliefgate.envs.domain import Domain, SkillStatus, State

#: an imagined episode never ends by the horizon
IMAGINED_HORIZON = 10 ** 7


class ImaginedFilter:
    """A gate's filter as pure functions, for imagined trajectories: ``step(gate_state, s, s')``
    is what ``gate.observe(s, s')`` would do to a gate holding ``gate_state``, returned as a
    new state and the predictive posterior, and the gate itself is never touched. The states
    come from the live gate (:attr:`Gate.state`, which carries its completion counts), so the
    functions are bound to the gate's parameters and skills only."""

    def __init__(self, gate: Gate):
        self.functions = make_gate(gate.params, gate.num_skills, gate.skill_names)
        self.observer = gate.observer

    def step(self, gate_state: GateState, state: State, next_state: State,
             ego_active: bool) -> Tuple[GateState, np.ndarray]:
        """The state after observing ``state -> next_state``, and its predictive posterior."""
        evidence = self.observer.evidence(state, next_state)
        new_state, info = self.functions.update(gate_state, evidence, ego_active)
        return new_state, np.asarray(self.functions.decide(info).predictive, dtype=float)


class ForwardModel:
    """One simulator per agent, reused by every branch (each branch keeps its own state), the
    domain's batch stepper where it has one (every rollout of a round steps in one call), and the
    imagined filter of each teammate's gate (keyed by seat; empty without gates)."""

    def __init__(self, domain: Domain, layout: str, controller, gate: Optional[Gate] = None,
                 gates: Optional[Dict[int, Gate]] = None):
        self.domain = domain
        self.batch = domain.batch_stepper(layout)
        #: one environment for every branch (only where the domain has no batch stepper)
        self.sim = domain.make_env(layout, IMAGINED_HORIZON) if self.batch is None else None
        self.players = domain.players(layout)
        self.controller = controller
        #: each teammate's imagined filter by seat (``gates``); a model built from one ``gate`` only
        #: keeps it as :attr:`filter`, used for the first teammate
        self.filters: Dict[int, ImaginedFilter] = {seat: ImaginedFilter(g) for seat, g in (gates or {}).items()}
        self.filter = (next(iter(self.filters.values()), None) if gates
                       else (ImaginedFilter(gate) if gate is not None else None))
        self.steps = 0  # imagined steps this episode (for the logs)

    def filter_for(self, seat: int, first: bool) -> Optional[ImaginedFilter]:
        """The imagined filter of the teammate in ``seat`` (``first``: the first teammate)."""
        found = self.filters.get(seat)
        return found if found is not None or not first else (None if self.filters else self.filter)


class BranchRollout:
    """One branch's imagined trajectory, extended round by round.

    ``gate_state`` / ``predictive``: the first teammate's live gate state at the decision
    (:attr:`Gate.state`; None: no belief) and its predictive posterior; ``teammates`` gives every
    teammate's ``(gate_state, predictive)`` by seat (with it, each teammate is drawn from its own
    posterior and carried forward by its own imagined filter). ``goal``: the goal (recipe) the
    imagined kitchen runs under (:meth:`Domain.with_goal`; None: the state as given), which also
    weights each teammate's draw: a skill the goal's needs do not include is ``goal_weight`` times
    less likely (a teammate who sees the recipe cooks it).
    """

    def __init__(self, model: ForwardModel, state: State, ego: int, first_skill: int,
                 choose_next: Callable[[State, Optional[int]], Optional[int]], partner_mode: str,
                 gate_state: Optional[GateState], predictive: Optional[np.ndarray], rng: np.random.Generator,
                 mix: float = 0.0, teammates: Optional[Dict[int, Tuple[Optional[GateState], Optional[np.ndarray]]]] = None,
                 goal: Optional[str] = None, goal_weight: float = 8.0):
        self.model = model
        self.domain = model.domain
        self.ego = ego
        #: the other players in seat order; the gate's belief is about the first
        self.others = [i for i in range(model.players) if i != ego]
        self.partner = self.others[0]
        self.goal = goal
        self.goal_weight = float(goal_weight)
        if goal is not None:
            state = self.domain.with_goal(state, goal)
        self.state = state
        self.start_value = self.domain.rollout_value(state)
        self.choose_next = choose_next
        self.partner_mode = partner_mode  # "belief" or "uniform"
        #: share of the uniform choice in a belief draw: (1 - mix) posterior + mix uniform
        self.mix = float(mix)
        if teammates is None:
            teammates = {self.partner: (gate_state, predictive)}
        #: per teammate seat: the imagined filter's state and the next-skill distribution (the real
        #: gate's at the decision, then the imagined filter's); a teammate absent here is drawn uniformly
        self.gate_states: Dict[int, Optional[GateState]] = {}
        self.predictives: Dict[int, Optional[np.ndarray]] = {}
        for seat, (gs, pred) in teammates.items():
            self.gate_states[seat] = gs
            self.predictives[seat] = None if pred is None else np.asarray(pred, dtype=float)
        belief = partner_mode == "belief"
        self.filters = {seat: model.filter_for(seat, seat == self.partner) for seat in self.gate_states}
        self.filtering = {seat: belief and gs is not None and self.filters[seat] is not None
                          for seat, gs in self.gate_states.items()}
        #: one random stream per player and one for the dynamics, split from ``rng``: a branch's
        #: own choices (its executor's tie-breaks) then never shift a teammate's draws or the
        #: dynamics' seeds, so sample j of every branch imagines the same teammates as long as their
        #: states agree (common random numbers); one shared stream let the ego's branch desynchronise them
        streams = rng.spawn(model.players + 1)
        self.rngs = {seat: streams[seat] for seat in range(model.players)}
        self.rng = streams[model.players]   # the dynamics' seeds
        ctl = model.controller
        self.ego_ex = self.domain.executor(ctl, ego, self.rngs[ego])
        self.ego_ex.start_in(state, first_skill)
        self.ego_active: Optional[int] = first_skill
        self.other_ex = {i: self.domain.executor(ctl, i, self.rngs[i]) for i in self.others}
        self.other_active: dict = {i: None for i in self.others}
        self.events = [[] for _ in range(model.players)]
        self.depth_steps = 0
        self.partner_draws = 0

    @property
    def predictive(self) -> Optional[np.ndarray]:
        """The first teammate's current next-skill distribution."""
        return self.predictives.get(self.partner)

    @property
    def gate_state(self) -> Optional[GateState]:
        """The first teammate's imagined filter state."""
        return self.gate_states.get(self.partner)

    @property
    def score(self) -> float:
        return self.domain.rollout_value(self.state) - self.start_value

    @property
    def partner_active(self) -> Optional[int]:
        """The imagined skill of the first teammate (the one the gate's belief is about)."""
        return self.other_active[self.partner]

    def _draw_partner(self, who: int) -> None:
        ctl = self.model.controller
        feasible = ctl.feasible(self.state, who, require_targets=True)
        if not feasible.any():
            self.other_active[who] = None
            return
        pred = self.predictives.get(who)
        belief = self.partner_mode == "belief"
        if belief and pred is not None:
            w = np.where(feasible, np.asarray(pred, dtype=float), 0.0)
        else:
            w = feasible.astype(float)
        if belief and self.goal is not None:
            needs = self.domain.skill_needs(self.state, who, ctl, feasible, goal=self.goal)
            names = ctl.library.names
            useful = np.array([needs.get(n, 0.0) > 0 for n in names])
            w = w * np.where(useful, 1.0, 1.0 / self.goal_weight)
        total = w.sum()
        p = w / total if total > 0 else feasible / feasible.sum()
        if belief and pred is not None and self.mix > 0.0:
            p = (1.0 - self.mix) * p + self.mix * (feasible / feasible.sum())
        k = int(self.rngs[who].choice(len(p), p=p))
        self.other_ex[who].start(k)
        self.other_active[who] = k
        self.partner_draws += 1

    def joint_action(self) -> List[int]:
        """Run the skills' bookkeeping for the current imagined state and return its joint action."""
        s = self.state
        if self.ego_active is not None:
            status = self.ego_ex.update(s, self.events[self.ego])
            if status is not SkillStatus.RUNNING:
                self.ego_active = None
        if self.ego_active is None:
            k = self.choose_next(s, self.partner_active)
            if k is not None:
                self.ego_ex.start_in(s, k)
                self.ego_active = k
        for who in self.others:
            if self.other_active[who] is not None:
                status = self.other_ex[who].update(s, self.events[who])
                if status is not SkillStatus.RUNNING:
                    self.other_active[who] = None
            if self.other_active[who] is None:
                self._draw_partner(who)
        idle = self.domain.idle_action
        actions = [0] * self.model.players
        actions[self.ego] = (int(self.ego_ex.act(s)) if self.ego_active is not None
                             else idle(s, self.ego, self.rngs[self.ego]))
        for who in self.others:
            actions[who] = (int(self.other_ex[who].act(s)) if self.other_active[who] is not None
                            else idle(s, who, self.rngs[who]))
        return actions

    def advance(self, next_state: State, events) -> None:
        """Take the imagined step to ``next_state`` (its per-player ``events``); each filtering
        teammate's imagined filter observes it."""
        s = self.state
        for seat, on in self.filtering.items():
            if on:
                self.gate_states[seat], self.predictives[seat] = self.filters[seat].step(
                    self.gate_states[seat], s, next_state, self.ego_active is not None)
        self.events = events
        self.state = next_state
        self.depth_steps += 1
        self.model.steps += 1

    def extend(self, steps: int) -> float:
        """Imagine ``steps`` more steps; the value gain (``Domain.rollout_value``) since the decision."""
        return extend_together([self], steps)[0]


def extend_together(rollouts: List[BranchRollout], steps: int) -> List[float]:
    """Extend every rollout ``steps`` imagined steps, in lockstep: with the domain's batch stepper
    all of them step in one call per step; otherwise one environment steps each in turn. Each
    rollout draws only from its own random generator, so the order does not change what it
    imagines. Returns each rollout's value gain since its decision."""
    if not rollouts:
        return []
    model = rollouts[0].model
    if model.batch is None:
        sim = model.sim
        for r in rollouts:
            sim.set_state(r.state)
            for _ in range(steps):
                result = sim.step(r.joint_action())
                r.advance(result.state, result.events)
        return [r.score for r in rollouts]
    for _ in range(steps):
        actions = [r.joint_action() for r in rollouts]
        seeds = [int(r.rng.integers(0, 2 ** 31)) for r in rollouts]
        for r, (nxt, _reward, events) in zip(rollouts, model.batch.step([r.state for r in rollouts], actions, seeds)):
            r.advance(nxt, events)
    return [r.score for r in rollouts]
