"""The forward model: imagine a branch in the real Overcooked dynamics.

A :class:`BranchRollout` copies the decision's state into its own
:class:`~beliefgate.envs.overcooked.adapter.OvercookedAdapter` (``set_state``) and steps the
package's ``OvercookedEnv``. The ego follows the branch: its first skill through the shared
executor, then, whenever a skill ends, the feasible skill its strategy prefers most among the
useful ones. The partner follows the executor too, on a skill drawn from the belief: the gate's
predictive posterior restricted to the partner's feasible skills, with the gate observing every
imagined step so the posterior is the filter's own along the imagined trajectory (drawn anew
when the partner's skill ends); ``mix`` tempers that draw towards the uniform choice
(``(1 - mix) posterior + mix uniform``). The ``-belief`` ablation draws the partner's skill
uniformly over its feasible skills instead (and runs no imagined filter). ``extend(steps)``
continues the same imagined trajectory, so later rounds deepen the branch; the score is the
dish-progress gain since the decision.

The agent's gate is borrowed: its state is saved before and restored after every extension,
so imagining never changes the real belief.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from beliefgate.envs.overcooked.adapter import OvercookedAdapter
from beliefgate.envs.overcooked.executor import Executor, SkillStatus, fidget
from beliefgate.envs.overcooked.potential import dish_progress
from beliefgate.envs.overcooked.state import SymbolicState

#: an imagined episode never ends by the horizon
IMAGINED_HORIZON = 10 ** 7


class ForwardModel:
    """One simulator per agent, reused by every branch (each branch keeps its own state)."""

    def __init__(self, layout: str, controller):
        self.sim = OvercookedAdapter(layout, horizon=IMAGINED_HORIZON)
        self.controller = controller
        self.steps = 0  # imagined steps this episode (for the logs)


class BranchRollout:
    """One branch's imagined trajectory, extended round by round."""

    def __init__(self, model: ForwardModel, state: SymbolicState, ego: int, first_skill: int,
                 choose_next: Callable[[SymbolicState, Optional[int]], Optional[int]], partner_mode: str, gate,
                 predictive: Optional[np.ndarray], rng: np.random.Generator, mix: float = 0.0):
        self.model = model
        self.ego, self.partner = ego, 1 - ego
        self.state = state
        self.start_value = dish_progress(state)
        self.choose_next = choose_next
        self.partner_mode = partner_mode  # "belief" or "uniform"
        #: share of the uniform choice in a belief draw: (1 - mix) posterior + mix uniform
        self.mix = float(mix)
        self.gate = gate
        self.gate_state = gate.state if gate is not None else None
        self.rng = rng
        ctl = model.controller
        self.ego_ex = Executor(ctl, ego, rng)
        self.ego_ex.start_in(state, first_skill)
        self.ego_active: Optional[int] = first_skill
        self.partner_ex = Executor(ctl, self.partner, rng)
        self.partner_active: Optional[int] = None
        #: the partner's next-skill distribution: the real gate's at the decision, then the imagined filter's
        self.predictive = None if predictive is None else np.asarray(predictive, dtype=float)
        self.events = [[], []]
        self.depth_steps = 0
        self.partner_draws = 0

    @property
    def score(self) -> float:
        return dish_progress(self.state) - self.start_value

    def _draw_partner(self) -> None:
        ctl = self.model.controller
        feasible = ctl.feasible(self.state, self.partner, require_targets=True)
        if not feasible.any():
            self.partner_active = None
            return
        if self.partner_mode == "belief" and self.predictive is not None:
            w = np.where(feasible, np.asarray(self.predictive, dtype=float), 0.0)
            total = w.sum()
            p = w / total if total > 0 else feasible / feasible.sum()
            if self.mix > 0.0:
                p = (1.0 - self.mix) * p + self.mix * (feasible / feasible.sum())
        else:
            p = feasible / feasible.sum()
        k = int(self.rng.choice(len(p), p=p))
        self.partner_ex.start(k)
        self.partner_active = k
        self.partner_draws += 1

    def extend(self, steps: int) -> float:
        """Imagine ``steps`` more steps; the dish-progress gain since the decision."""
        sim = self.model.sim
        sim.set_state(self.state)
        saved_gate = None
        if self.gate is not None and self.partner_mode == "belief":
            saved_gate = self.gate.state
            self.gate.restore(self.gate_state)
        try:
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
                if self.partner_active is not None:
                    status = self.partner_ex.update(s, self.events[self.partner])
                    if status is not SkillStatus.RUNNING:
                        self.partner_active = None
                if self.partner_active is None:
                    self._draw_partner()
                actions = [0, 0]
                actions[self.ego] = int(self.ego_ex.act(s)) if self.ego_active is not None else fidget(s, self.ego, self.rng)
                actions[self.partner] = (int(self.partner_ex.act(s)) if self.partner_active is not None
                                         else fidget(s, self.partner, self.rng))
                result = sim.step(actions)
                if saved_gate is not None:
                    decision = self.gate.observe(s, result.state, ego_active=self.ego_active is not None)
                    self.predictive = np.asarray(decision.predictive, dtype=float)
                self.events = result.events
                self.state = result.state
                self.depth_steps += 1
                self.model.steps += 1
        finally:
            if saved_gate is not None:
                self.gate_state = self.gate.state
                self.gate.restore(saved_gate)
        return self.score

