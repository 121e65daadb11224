"""Planner-driven ego agents: one base class, the replanning rule is what differs.

Every agent here observes the partner (through the gate when it keeps a
belief), executes its current skill with the shared executor, and calls its
planner when it has no skill (start, completion, invalid, time-out) or when its
trigger fires (an interrupt). Per step it logs its active skill, whether it
replanned and why, and its belief when it has one.

Counting: ``plans`` counts every planner call; ``replans`` only those that
interrupted a skill still running (the quantity the papers' "replans per
episode" compares).
"""

from __future__ import annotations

from collections import deque
from typing import Dict, Optional, Sequence

import numpy as np

from beliefgate.agents.scene import scene_text
from beliefgate.beliefs.gate import Decision, Gate, GateParams
from beliefgate.envs.overcooked.controller import controller_for
from beliefgate.envs.overcooked.dynamics import completed_skills, detect_events
from beliefgate.envs.overcooked.executor import Executor, SkillStatus, fidget
from beliefgate.envs.overcooked.kitchen import skill_needs
from beliefgate.envs.overcooked.state import SymbolicState
from beliefgate.planners.rule import RulePlanner
from beliefgate.planners.types import BeliefBlock, PlanDecision, PlannerInput, Turn


class PlanningAgent:
    """Base ego agent. Subclasses set the flags and override :meth:`trigger`."""

    #: keep a belief about the partner (run the gate)
    keeps_belief = True
    #: show the belief to the planner
    belief_in_prompt = True

    def __init__(self, name: str, planner=None, params: Optional[GateParams] = None):
        self.name = name
        self.planner = planner if planner is not None else RulePlanner()
        self.params = params or GateParams()

    # --------------------------------------------------------------------- API
    def reset(self, layout: str, player: int, seed: int) -> None:
        self.layout = layout
        self.player = player
        self.partner = 1 - player
        self.rng = np.random.default_rng(seed)
        self.controller = controller_for(layout)
        self.library = self.controller.library
        self.executor = Executor(self.controller, player, self.rng)
        self.gate = Gate.for_overcooked(layout, self.params, partner=self.partner) if self.keeps_belief else None
        self.complementary = {s: self.library.complementary_skills(s) for s in self.library.names}
        self.roles = {s.name: s.role for s in self.library.skills}
        self.prev: Optional[SymbolicState] = None
        self.active: Optional[int] = None
        self.history: deque = deque(maxlen=3)
        self.plans = 0
        self.replans = 0
        self.decision: Optional[Decision] = None
        self._info: Dict[str, object] = {}
        self._last_source: Optional[str] = None

    def act(self, state: SymbolicState, my_events: Sequence[str] = ()) -> int:
        decision = None
        partner_events: Sequence[str] = ()
        if self.prev is not None:
            partner_events = detect_events(self.prev, state)[self.partner]
            if self.gate is not None:
                decision = self.gate.observe(self.prev, state, ego_active=self.active is not None)
        self.decision = decision
        reason = None
        if self.active is None:
            reason = "start" if self.prev is None else "idle"
        else:
            status = self.executor.update(state, my_events)
            if status is not SkillStatus.RUNNING:
                reason = status.value
                self.active = None
        interrupted = False
        if self.active is not None:
            why = self.trigger(state, decision, partner_events)
            if why:
                reason, interrupted = why, True
        if reason is not None:
            self._plan(state, reason, interrupted)
        action = self.executor.act(state) if self.active is not None else fidget(state, self.player, self.rng)
        self._info = {
            "skill": self.active_skill,
            "replanned": reason is not None,
            "reason": reason,
            "interrupt": interrupted,
            "gate_fired": bool(decision is not None and decision.interrupt),
            "belief": None if decision is None else [round(float(p), 4) for p in decision.posterior],
            "partner_map": None if decision is None else decision.map_name,
            "plans": self.plans,
            "replans": self.replans,
            "llm_calls": self.llm_calls,
            "fallbacks": int(getattr(self.planner, "fallbacks", 0)),
            "plan_source": self._last_source,
        }
        self.prev = state
        return int(action)

    def info(self) -> Dict[str, object]:
        return dict(self._info) if self._info else {"skill": None, "replans": 0, "llm_calls": 0}

    @property
    def active_skill(self) -> Optional[str]:
        return self.library.names[self.active] if self.active is not None else None

    @property
    def llm_calls(self) -> int:
        return int(getattr(self.planner, "llm_calls", 0)) + self.extra_llm_calls()

    def extra_llm_calls(self) -> int:
        """LLM calls made outside the planner (e.g. a judge)."""
        return 0

    # ----------------------------------------------------------------- hooks
    def trigger(self, state: SymbolicState, decision: Optional[Decision], partner_events: Sequence[str]) -> Optional[str]:
        """Why to interrupt the running skill now (None = keep going)."""
        return None

    # -------------------------------------------------------------- planning
    def belief_block(self, gate_signal: Optional[str]) -> Optional[BeliefBlock]:
        if not self.belief_in_prompt or self.gate is None:
            return None
        post = self.decision.predictive if self.decision is not None else None
        if post is None:
            post = np.full(self.library.num_skills, 1.0 / self.library.num_skills)
        m = int(np.argmax(post))
        return BeliefBlock({n: float(p) for n, p in zip(self.library.names, post)}, self.library.names[m],
                           float(post[m]), gate_signal)

    def planner_input(self, state: SymbolicState, reason: str) -> Optional[PlannerInput]:
        feasible_mask = self.controller.feasible(state, self.player, require_targets=True)
        feasible = tuple(n for k, n in enumerate(self.library.names) if feasible_mask[k])
        if not feasible:
            return None
        return PlannerInput(
            scene=scene_text(state, self.player), feasible=feasible, history=tuple(self.history),
            belief=self.belief_block(reason if reason not in ("start", "idle", "completed") else None),
            reason=reason, needs=skill_needs(state, self.player, self.controller, feasible_mask),
            roles=self.roles, complementary=self.complementary,
        )

    def _plan(self, state: SymbolicState, reason: str, interrupted: bool) -> None:
        inp = self.planner_input(state, reason)
        if inp is None:  # nothing feasible now: stay idle and ask again next step
            self.active = None
            self.executor.stop()
            return
        choice: PlanDecision = self.planner.choose(inp)
        self._last_source = choice.source
        self.plans += 1
        if interrupted:
            self.replans += 1
            if self.gate is not None:
                self.gate.notify_replanned()
        k = self.library.index(choice.skill)
        if k != self.active or not interrupted:
            self.executor.start(k)
        self.active = k
        self.history.append(Turn(state.timestep, choice.skill, reason))


class BayesBeliefAgent(PlanningAgent):
    """BayesBelief: the posterior as planner context and the gate as interrupt (SPEC §6).

    Conditions: ``full`` (both), ``no_replan`` (context only), ``no_prompt``
    (interrupts only), ``no_belief`` (neither; no gate at all).
    """

    CONDITIONS = ("full", "no_replan", "no_prompt", "no_belief")

    def __init__(self, condition: str = "full", planner=None, params: Optional[GateParams] = None):
        if condition not in self.CONDITIONS:
            raise ValueError(f"unknown bayes-belief condition {condition!r}; choose from {', '.join(self.CONDITIONS)}")
        super().__init__(f"bayes-belief:{condition}", planner, params)
        self.condition = condition
        self.keeps_belief = condition != "no_belief"
        self.belief_in_prompt = condition in ("full", "no_replan")
        self.interrupts = condition in ("full", "no_prompt")

    def trigger(self, state, decision, partner_events):
        if self.interrupts and decision is not None and decision.interrupt:
            return "gate"
        return None


class ProAgentLike(PlanningAgent):
    """ProAgent-style: replans only when its skill completes, becomes invalid or times out.

    Offline it plans without a belief (the LLM version asks the model to infer the
    partner's intention from the scene and history instead).
    """

    keeps_belief = False
    belief_in_prompt = False

    def __init__(self, planner=None, params=None):
        super().__init__("proagent", planner, params)


class PeriodicAgent(PlanningAgent):
    """Belief in the prompt; replans every ``period`` steps instead of on the gate."""

    def __init__(self, period: int = 10, planner=None, params=None):
        if period < 1:
            raise ValueError(f"period must be >= 1, got {period}")
        super().__init__(f"periodic-{period}", planner, params)
        self.period = period

    def trigger(self, state, decision, partner_events):
        return "periodic" if state.timestep > 0 and state.timestep % self.period == 0 else None


class CompletionHeldAgent(PlanningAgent):
    """Belief in the prompt; replans when the partner completes a skill or picks up a task item."""

    def __init__(self, planner=None, params=None):
        super().__init__("completion-held", planner, params)

    def trigger(self, state, decision, partner_events):
        if completed_skills(partner_events, self.library):
            return "partner_completed"
        if self.prev is not None:
            before, after = self.prev.players[self.partner].held, state.players[self.partner].held
            if after is not None and after != before:
                return "partner_holding"
        return None


class LLMJudgeAgent(PlanningAgent):
    """Belief in the prompt; every ``every`` steps a separate judge decides whether to replan.

    With an LLM client the judge is a model call (role ``judge``); offline it is a
    rule: replan when the partner's most likely skill is in the ego's own role
    with confidence >= 0.7 (a duplicate).
    """

    def __init__(self, client=None, every: int = 5, planner=None, params=None):
        super().__init__("llm-judge", planner, params)
        self.client = client
        self.every = every
        self.judge_fallbacks = 0

    def extra_llm_calls(self) -> int:
        return self.client.ledger.calls("judge") if self.client is not None else 0

    def trigger(self, state, decision, partner_events):
        if state.timestep == 0 or state.timestep % self.every or decision is None:
            return None
        own_role = self.library.role_of(self.active)
        if self.client is None:
            m = decision.map_skill
            duplicate = self.library.role_of(m) == own_role and decision.confidence >= 0.7
            return "judge" if duplicate else None
        from beliefgate.planners.errors import LLMUnavailableError, ModelOutputError
        from beliefgate.planners.parse import parse_yes_no
        from beliefgate.planners.prompts import judge_messages

        actions = ", ".join(partner_events) or "no interaction"
        messages = judge_messages(scene_text(state, self.player), self.active_skill or "none", actions,
                                  self.belief_block(None))
        try:
            return "judge" if parse_yes_no(self.client.chat(messages, role="judge")) else None
        except (ModelOutputError, LLMUnavailableError):
            self.judge_fallbacks += 1  # an unusable or missing judgement keeps the current skill
            return None
