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
players, every teammate after the first draws its skill uniformly over its feasible skills
(the gate's belief is about the first teammate). ``extend(steps)``
continues the same imagined trajectory, so later rounds deepen the branch; the score is the
progress gain (``Domain.progress``) since the decision.

The imagined filter is functional: a rollout starts from the live gate's state at the decision
(a :class:`~beliefgate.beliefs.core.GateState` value, :attr:`Gate.state`) and carries its own
state forward with the gate's functions (:class:`ImaginedFilter`: ``make_gate`` over the gate's
parameters, and the gate's observer), so no rollout reads, mutates or restores the live gate.
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

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
    """One simulator per agent, reused by every branch (each branch keeps its own state), and the
    imagined filter of the agent's gate (None without a gate)."""

    def __init__(self, domain: Domain, layout: str, controller, gate: Optional[Gate] = None):
        self.domain = domain
        self.sim = domain.make_env(layout, IMAGINED_HORIZON)
        self.players = domain.players(layout)
        self.controller = controller
        self.filter = ImaginedFilter(gate) if gate is not None else None
        self.steps = 0  # imagined steps this episode (for the logs)


class BranchRollout:
    """One branch's imagined trajectory, extended round by round.

    ``gate_state``: the live gate's state at the decision (:attr:`Gate.state`; None: no belief),
    which the branch's own imagined filter carries forward when ``partner_mode`` is ``"belief"``.
    """

    def __init__(self, model: ForwardModel, state: State, ego: int, first_skill: int,
                 choose_next: Callable[[State, Optional[int]], Optional[int]], partner_mode: str,
                 gate_state: Optional[GateState], predictive: Optional[np.ndarray], rng: np.random.Generator,
                 mix: float = 0.0):
        self.model = model
        self.domain = model.domain
        self.ego = ego
        #: the other players in seat order; the gate's belief is about the first
        self.others = [i for i in range(model.players) if i != ego]
        self.partner = self.others[0]
        self.state = state
        self.start_value = self.domain.progress(state)
        self.choose_next = choose_next
        self.partner_mode = partner_mode  # "belief" or "uniform"
        #: share of the uniform choice in a belief draw: (1 - mix) posterior + mix uniform
        self.mix = float(mix)
        #: the imagined filter's state (advanced only in ``belief`` mode with the model's filter)
        self.gate_state = gate_state
        self.filtering = partner_mode == "belief" and gate_state is not None and model.filter is not None
        self.rng = rng
        ctl = model.controller
        self.ego_ex = self.domain.executor(ctl, ego, rng)
        self.ego_ex.start_in(state, first_skill)
        self.ego_active: Optional[int] = first_skill
        self.other_ex = {i: self.domain.executor(ctl, i, rng) for i in self.others}
        self.other_active: dict = {i: None for i in self.others}
        #: the partner's next-skill distribution: the real gate's at the decision, then the imagined filter's
        self.predictive = None if predictive is None else np.asarray(predictive, dtype=float)
        self.events = [[] for _ in range(model.players)]
        self.depth_steps = 0
        self.partner_draws = 0

    @property
    def score(self) -> float:
        return self.domain.progress(self.state) - self.start_value

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
        if who == self.partner and self.partner_mode == "belief" and self.predictive is not None:
            w = np.where(feasible, np.asarray(self.predictive, dtype=float), 0.0)
            total = w.sum()
            p = w / total if total > 0 else feasible / feasible.sum()
            if self.mix > 0.0:
                p = (1.0 - self.mix) * p + self.mix * (feasible / feasible.sum())
        else:
            p = feasible / feasible.sum()
        k = int(self.rng.choice(len(p), p=p))
        self.other_ex[who].start(k)
        self.other_active[who] = k
        self.partner_draws += 1

    def extend(self, steps: int) -> float:
        """Imagine ``steps`` more steps; the progress gain (``Domain.progress``) since the decision."""
        sim = self.model.sim
        sim.set_state(self.state)
        for _ in range(steps):
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
                                 else idle(s, self.ego, self.rng))
            for who in self.others:
                actions[who] = (int(self.other_ex[who].act(s)) if self.other_active[who] is not None
                                else idle(s, who, self.rng))
            result = sim.step(actions)
            if self.filtering:
                self.gate_state, self.predictive = self.model.filter.step(
                    self.gate_state, s, result.state, self.ego_active is not None)
            self.events = result.events
            self.state = result.state
            self.depth_steps += 1
            self.model.steps += 1
        return self.score
