"""Planner-driven ego agents: one base class, the replanning rule is what differs.

Every agent here observes the partner (through the gate when it keeps a
belief), executes its current skill with the shared executor, and calls its
planner when it has no skill (start, completion, invalid, time-out) or when its
trigger fires (an interrupt). Per step it logs its active skill, whether it
replanned and why, and its belief when it has one.

Counting: ``plans`` counts every planner call; ``replans`` only those that
interrupted a skill still running (the quantity the papers' "replans per
episode" compares); ``llm_calls`` every model answer the agent received (planner
decisions' ``attempts`` plus its own judge / hypothesis calls); ``fallbacks`` every
decision or call that fell back, per role and reason (:class:`FallbackLog`), with the
events of each step in its log row (``fallback_events``).

The base class is a template method: :meth:`PlanningAgent.act` does the bookkeeping of every
agent (observe with the gates, run the skill, ask :meth:`~PlanningAgent.trigger` whether to
interrupt, count plans / replans / effective replans / skill changes / model answers /
fallbacks, notify the gates of an interrupt, start the chosen skill, keep the history, build the
step's info); what differs is :meth:`~PlanningAgent.choose` (``state, reason -> Choice``; by
default the planner answers a :class:`~beliefgate.planners.types.PlannerInput`), the trigger,
and :meth:`~PlanningAgent.step_info` (the agent's own keys in the step's info).

Factories (``bayes_belief_agent``...) are what the registry table
(:data:`beliefgate.agents.registry.AGENTS`) names; each takes the name's option and,
where the row says so, ``llm`` and ``gate_params``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
from pydantic import ConfigDict, Field

from beliefgate.agents.goal_tracker import GoalTracker
from beliefgate.beliefs.gate import Decision, GateParams
from beliefgate.beliefs.goal import GoalInfo, GoalParams, claim_loglik
from beliefgate.envs.domain import SkillStatus, domain_for_layout
from beliefgate.planners.fallbacks import Fallback, FallbackLog
from beliefgate.planners.model import Asked, ChatModel, Message, ask
from beliefgate.planners.rule import MIN_CONFIDENCE, RulePlanner, RulePlannerConfig
from beliefgate.planners.types import BeliefBlock, GoalBlock, PlanDecision, Planner, PlannerInput, Turn
from beliefgate.validation import CheckedModel, ParamError


class AgentConfigError(ParamError):
    """An agent option out of range (``periodic-0``, ``bayes-belief:sometimes``...)."""


class AgentConfig(CheckedModel):
    """Base of the agents' option models: frozen, and a bad value is an :class:`AgentConfigError`."""

    error_type = AgentConfigError
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def planner_for(llm: Optional[ChatModel]) -> Planner:
    """The rule planner offline, the LLM planner (rule fallback) with a model."""
    if llm is None:
        return RulePlanner()
    from beliefgate.planners.llm import LLMPlanner

    return LLMPlanner(llm)


#: the one-line notice of an LLM agent built without a model (no ``--llm-base-url``)
NO_LLM_SERVER = "no LLM server: rule planner"


def without_model(agent: "PlanningAgent", llm: Optional[ChatModel]) -> "PlanningAgent":
    """Mark an LLM agent built without a model: each episode then starts with one counted ``planner``
    fallback (reason ``unavailable``, detail :data:`NO_LLM_SERVER`) instead of falling back silently."""
    agent.no_llm_server = llm is None
    return agent


@dataclass(frozen=True)
class Choice:
    """What :meth:`PlanningAgent.choose` decided: the skill to start and how it was reached.

    ``skill``: a skill name of the agent's library; ``source``: how it was chosen (the step info's
    ``plan_source``: ``"rule"``, ``"llm"``, ``"fallback"`` for a planner, ``"overforge"``...);
    ``attempts``: model answers spent on it outside :meth:`PlanningAgent.ask_model` (added to
    ``llm_calls``); ``fallback``: the fallback the choice fell back on, recorded in the agent's
    :class:`~beliefgate.planners.fallbacks.FallbackLog`; ``note``: free text.
    """

    skill: str
    source: str
    attempts: int = 0
    fallback: Optional[Fallback] = None
    note: str = ""

    @classmethod
    def of(cls, decision: PlanDecision, planner: str = "planner") -> "Choice":
        """A planner's :class:`~beliefgate.planners.types.PlanDecision` as a choice; a fallback
        decision without its :class:`Fallback` gets one (role ``planner``, reason ``other``)."""
        fallback = None
        if decision.source == "fallback":
            fallback = decision.fallback or Fallback("planner", "other",
                                                     decision.note or f"planner {planner!r} gave no reason")
        return cls(decision.skill, decision.source, decision.attempts, fallback, decision.note)


class PlanningAgent:
    """Base ego agent (a template method): subclasses set the flags and override :meth:`trigger`,
    :meth:`choose` and :meth:`step_info`; the bookkeeping is :meth:`act`'s."""

    #: keep a belief about the partner (run the gate)
    keeps_belief = True
    #: show the belief to the planner
    belief_in_prompt = True
    #: beside each teammate's gate, keep a goal belief (a :class:`~beliefgate.beliefs.goal.GoalFilter`
    #: per teammate) where the domain names goals (``Domain.goal_names``: OvercookedV2's recipes)
    keeps_goal_belief = True
    #: the goal filter's parameters (skill hazard, unprompted goal redraw)
    goal_params = GoalParams()
    #: options of the domain's ``goal_evidence`` (e.g. an ablation's ``use_view=False``)
    goal_evidence_options: Dict[str, Any] = {}
    #: the probability that a teammate's goal claim (a heard ``inform`` naming a goal) is true; None:
    #: the agent does not read goal claims (only agents that hear messages set it; :meth:`hear_goals`)
    goal_claim_trust: Optional[float] = None
    #: an LLM agent built without a model (see :func:`without_model`)
    no_llm_server = False
    #: talk in words (:class:`~beliefgate.agents.speech.Speech`; set by :meth:`speak_with`), else typed
    speech = None

    def __init__(self, name: str, planner: Optional[Planner] = None, params: Optional[GateParams] = None):
        self.name = name
        self.planner: Planner = planner if planner is not None else RulePlanner()
        self.params = params or GateParams()
        self.fallback_log = FallbackLog()
        self.llm_answers = 0

    # --------------------------------------------------------------------- API
    def reset(self, layout: str, player: int, seed: int) -> None:
        self.domain = domain_for_layout(layout)
        self.layout = layout
        self.player = player
        #: every other player, in seat order; ``partner`` is the first (the one the planner's
        #: belief block and the partner-specific triggers read)
        self.teammates = tuple(i for i in range(self.domain.players(layout)) if i != player)
        self.partner = self.teammates[0]
        self.rng = np.random.default_rng(seed)
        self.controller = self.domain.controller(layout)
        self.library = self.controller.library
        self.executor = self.domain.executor(self.controller, player, self.rng)
        #: one gate per teammate, keyed by seat (an agent without a belief keeps none)
        self.gates = ({seat: self.domain.make_gate(layout, self.params, partner=seat) for seat in self.teammates}
                      if self.keeps_belief else {})
        self.gate = self.gates.get(self.partner)
        self.recall_memory()
        self.teammate_decisions: Dict[int, Decision] = {}
        #: the goal belief: goal names (None where the domain has none or the agent keeps no belief),
        #: one GoalTracker per teammate (its latest :class:`GoalInfo` in :attr:`goal_infos`)
        self.goal_names = (tuple(self.domain.goal_names(layout) or ()) or None) if (
            self.gates and self.keeps_goal_belief) else None
        self.goal_trackers: Dict[int, GoalTracker] = {}
        if self.goal_names is not None:
            for seat in self.teammates:
                self.goal_trackers[seat] = GoalTracker(self.domain, self.player, seat, self.goal_names,
                                                       self.library.names, self.goal_params,
                                                       self.goal_evidence_options)
        #: goal claims heard this step, by sender (read into every goal filter at the next update),
        #: the claims read so far, and the goal redraws (a step whose evidence flagged a redraw) seen
        self.goal_claims: Dict[int, str] = {}
        self.claims_read = 0
        self.goal_redraws = 0
        #: the goal last told and the redraws seen then (:meth:`goal_to_tell`), and the goals told
        self._told_goal: Optional[tuple] = None
        self.goals_told = 0
        #: the MAP goal the last planner input showed (None: no goal belief shown)
        self.planned_goal: Optional[str] = None
        #: the running skill's need under the believed goal when it was chosen (None: no goal belief)
        self.planned_need: Optional[float] = None
        self.complementary = {s: self.library.complementary_skills(s) for s in self.library.names}
        self.roles = {s.name: s.role for s in self.library.skills}
        self.prev = None  # the domain state of the last step
        self.active: Optional[int] = None
        self.history: deque = deque(maxlen=3)
        self.plans = 0
        self.replans = 0
        self.effective_replans = 0
        self.skill_changes = 0
        self._changed: Optional[bool] = None
        self._last_skill: Optional[int] = None
        self.decision: Optional[Decision] = None
        #: does the planning call under way interrupt a running skill (read by :meth:`choose`)
        self.interrupting = False
        self._info: Dict[str, object] = {}
        #: the veto the trigger recorded this step (see :meth:`gate_veto`)
        self._veto: Optional[Dict[str, object]] = None
        self._last_source: Optional[str] = None
        self.fallback_log = FallbackLog()
        self.llm_answers = 0
        if self.no_llm_server:  # said once per episode: logged in step 0's fallback_events and counted
            self.fallback_log.record(Fallback("planner", "unavailable", NO_LLM_SERVER))
        if self.speech is not None:
            self.speech.start(len(self.teammates) + 1, self.library, self.domain.goal_names(layout) or ())

    # ------------------------------------------------------------ partner memory
    #: where the teammates' memory comes from (a :class:`~beliefgate.agents.memory.MemorySession`, set
    #: with :meth:`use_memory` before :meth:`reset`); None: every episode starts from the gate's prior
    memory = None

    def use_memory(self, session) -> None:
        """Start each teammate's gate from what ``session`` remembers about it (at :meth:`reset`); the
        runner writes :meth:`memory_record` back at the episode's end. An agent without a gate keeps no
        memory: :class:`~beliefgate.agents.memory.MemoryNotUsedError`."""
        from beliefgate.agents.memory import MemoryNotUsedError

        if not self.keeps_belief:
            raise MemoryNotUsedError(f"agent {self.name} keeps no partner belief (no gate), so a partner memory "
                                     "would have no effect")
        self.memory = session

    def recall_memory(self) -> None:
        """Seed every teammate's gate with the remembered completion counts (``Gate.reset(memory=...)``)
        and reset this episode's memory-side records: :attr:`recalled` (what was remembered, per seat),
        :attr:`agreed_roles` (``{seat: role}``, the split agreed with the teammates; agents that
        negotiate roles fill it) and :attr:`request_counts` (per teammate seat, skill ->
        ``[asked, followed]``)."""
        self.recalled: Dict[int, Any] = {}
        self.agreed_roles: Dict[int, str] = {}
        self.request_counts: Dict[int, Dict[str, list]] = {seat: {} for seat in self.teammates}
        if self.memory is None:
            return
        for seat, gate in self.gates.items():
            remembered = self.memory.recall(seat)
            self.recalled[seat] = remembered
            if remembered is None:
                continue
            counts, unknown = remembered.counts_for(gate.skill_names)
            if unknown:  # skills stored for this partner that this library lacks: ignored, and counted
                self.memory.unknown_skills[seat] = unknown
            gate.reset(memory=counts)

    def memory_record(self):
        """What to remember about each teammate after this episode (one
        :class:`~beliefgate.agents.memory.TeammateRecord` per seat with a gate): the gate's completion
        counts now (the next episode's prior), the agreed roles and the request counts."""
        from beliefgate.agents.memory import TeammateRecord

        return {seat: TeammateRecord(tuple(gate.skill_names), gate.memory, dict(self.agreed_roles),
                                     {k: (int(a), int(f)) for k, (a, f) in self.request_counts.get(seat, {}).items()})
                for seat, gate in self.gates.items()}

    def recipe_contradicts(self, state, floor: float) -> bool:
        """The goal belief contradicts the running skill: under its MAP goal, at least ``floor``
        confident (the confidence the agent acts on), the kitchen no longer needs the running skill
        but needs another, and either that goal is not the one the skill was planned with
        (:attr:`planned_goal`; e.g. putting in an ingredient the believed recipe does not take,
        after a redraw) or the skill was needed when chosen (:attr:`planned_need`) and a teammate has
        since done it (e.g. a cook carrying the pot's last missing ingredient while the other cook
        puts the same one in: a third would spoil the dish). The ``recipe`` interrupt of
        bayes-belief and OverForge."""
        goal = self.goal_block() if self.belief_in_prompt else None
        if goal is None or self.active_skill is None or goal.confidence < floor:
            return False
        if goal.map_goal == self.planned_goal and not (self.planned_need or 0.0) > 0:
            return False   # the same goal and a skill chosen without a need (e.g. waiting): nothing changed
        needs = self._map_goal_needs(state, goal)
        current = self.active_skill
        return needs.get(current, 0.0) <= 0 and any(v > 0 and n != current for n, v in needs.items())

    def _map_goal_needs(self, state, goal: GoalBlock) -> Dict[str, float]:
        """The needs of the ego's feasible skills now, under ``goal``'s MAP goal (:meth:`goal_needs`)."""
        mask = self.controller.feasible(state, self.player, require_targets=True)
        return self.goal_needs(state, mask, goal)[goal.map_goal]

    def _need_of(self, state, skill: str) -> Optional[float]:
        """``skill``'s need under the believed (MAP) goal now; None without a goal belief."""
        goal = self.goal_block() if self.belief_in_prompt else None
        return None if goal is None else float(self._map_goal_needs(state, goal).get(skill, 0.0))

    # ------------------------------------------------------------ words
    def speak_with(self, client: ChatModel) -> None:
        """Talk in words through ``client`` from the next episode on (:mod:`beliefgate.agents.speech`)."""
        from beliefgate.agents.speech import Speech

        self.speech = Speech(self, client)

    def words_in(self, messages) -> List[Any]:
        """Heard messages in typed form (each ``say`` read by the model; typed ones unchanged).
        An agent without words keeps them as they are (a ``say`` is then words it does not read)."""
        return self.speech.from_words(messages) if self.speech is not None else list(messages)

    def words_out(self, outgoing) -> List[Any]:
        """Outgoing typed messages, as words when the agent talks in words."""
        return self.speech.to_words(outgoing) if (self.speech is not None and outgoing) else list(outgoing)

    def words_sent(self, message):
        """The typed message behind a message the channel sent for the agent."""
        return self.speech.sent(message) if self.speech is not None else message

    # ------------------------------------------------------------ goal claims
    def hear_goals(self, messages) -> None:
        """Keep the goals teammates claim in this step's messages (an ``inform`` with ``goal``): each
        enters every goal filter at the next update as :func:`~beliefgate.beliefs.goal.claim_loglik`
        evidence about the goal active when it was said. Ignored without :attr:`goal_claim_trust` or
        a goal belief; a goal this layout does not name never reaches an agent (the channel refuses it)."""
        if self.goal_claim_trust is None or self.goal_names is None:
            return
        for msg in messages:
            goal = getattr(msg, "goal", None)
            if goal is not None and msg.sender in self.goal_trackers and goal in self.goal_names:
                self.goal_claims[msg.sender] = goal

    def goal_to_tell(self, state) -> Optional[str]:
        """The goal to tell the teammates now (an agent that talks sends it as ``inform`` with
        ``goal``): the one it sees (:meth:`Domain.seen_goal`), unless it told the same goal since the
        last goal redraw it saw; None: nothing new to tell."""
        seen = self.domain.seen_goal(state, self.player)
        if seen is None or (seen, self.goal_redraws) == self._told_goal:
            return None
        self._told_goal = (seen, self.goal_redraws)
        self.goals_told += 1
        return seen

    def _claims_loglik(self) -> Optional[np.ndarray]:
        """The summed evidence ``[G]`` of this step's heard goal claims (None: none heard)."""
        if not self.goal_claims:
            return None
        self.claims_read += len(self.goal_claims)
        return sum(claim_loglik(len(self.goal_names), self.goal_names.index(g), self.goal_claim_trust)
                   for g in self.goal_claims.values())

    def act(self, state, my_events: Sequence[str] = ()) -> int:
        decision = None
        partner_events: Sequence[str] = ()
        self.teammate_decisions = {}
        if self.prev is not None:
            partner_events = self.domain.detect_events(self.prev, state)[self.partner]
            claims = self._claims_loglik()
            redrawn = False
            for seat, gate in self.gates.items():
                observer = gate.observer
                if observer is None or seat not in self.goal_trackers:
                    self.teammate_decisions[seat] = gate.observe(self.prev, state, ego_active=self.active is not None)
                    continue
                # one evidence for both beliefs: the gate's skill posterior and the goal filter (a
                # heard claim says which goal was active, as a seen recipe does)
                ev = observer.evidence(self.prev, state)
                self.teammate_decisions[seat] = gate.step_evidence(ev, ego_active=self.active is not None)
                change = self.goal_trackers[seat].update(self.prev, state, ev, claims)
                redrawn = redrawn or change > 0
            self.goal_redraws += int(redrawn)
            decision = self.primary_decision()
        self.goal_claims = {}
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
        self._changed = None
        self._veto = None
        if self.active is not None:
            why = self.trigger(state, decision, partner_events)
            if why:
                reason, interrupted = why, True
        # a gate firing that did not interrupt: log the filter that stopped it, with its numbers (with no
        # skill running the ego plans for its own reason and there is nothing to interrupt)
        veto = None
        if decision is not None and decision.interrupt and not interrupted:
            veto = (self.gate_veto(decision) if reason is None
                    else {"filter": "no_running_skill", "plan_reason": reason})
        if reason is not None:
            self._plan(state, reason, interrupted)
        action = (self.executor.act(state) if self.active is not None
                  else self.domain.idle_action(state, self.player, self.rng))
        self._info = {
            "skill": self.active_skill,
            "replanned": reason is not None,
            "reason": reason,
            "interrupt": interrupted,
            "gate_fired": bool(decision is not None and decision.interrupt),
            "contradiction": bool(decision is not None and decision.contradiction),
            # why a contradiction did not fire the gate, or why a firing did not interrupt (None: neither)
            "suppressed_reason": veto["filter"] if veto is not None else self._gate_suppressed(decision),
            "gate_veto": veto,
            "belief": None if decision is None else [round(float(p), 4) for p in decision.posterior],
            "partner_map": None if decision is None else decision.map_name,
            "plans": self.plans,
            "replans": self.replans,
            "skill_changed": self._changed,
            "effective_replans": self.effective_replans,
            "llm_calls": self.llm_calls,
            "fallbacks": self.fallback_log.total,
            "fallbacks_by_role": dict(self.fallback_log.by_role),
            "fallback_events": self.fallback_log.drain(),
            "plan_source": self._last_source,
        }
        if self.goal_names is not None:
            goal = self.goal_block()
            self._info["recipe_map"] = None if goal is None else goal.map_goal
            self._info["recipe_confidence"] = None if goal is None else round(goal.confidence, 4)
            self._info["recipe_belief"] = None if goal is None else [round(goal.posterior[n], 4)
                                                                      for n in self.goal_names]
            if self.goal_claim_trust is not None:   # an agent that talks: the goal talk so far
                self._info["goal_claims_read"] = self.claims_read
                self._info["goals_told"] = self.goals_told
        if self.speech is not None:
            self._info["speech"] = self.speech.info()
        if len(self.gates) > 1:
            self._info["beliefs"] = {str(seat): [round(float(p), 4) for p in d.posterior]
                                     for seat, d in self.teammate_decisions.items()}
        self._info.update(self.step_info())
        self.prev = state
        return int(action)

    def step_info(self) -> Dict[str, object]:
        """The agent's own keys of this step's info, added after (or replacing) the common ones."""
        return {}

    def gate_veto(self, decision: Decision) -> Dict[str, object]:
        """Why the gate's firing at this step did not interrupt the running skill, as logged in
        ``gate_veto``: ``filter`` (the rule that stopped it) and that rule's numbers. The trigger
        records its own veto in ``self._veto``; otherwise the agent's trigger declined it (``trigger_declined``)."""
        if self._veto is not None:
            return self._veto
        return {"filter": "trigger_declined", "agent": self.name}

    def _gate_suppressed(self, decision: Optional[Decision]) -> Optional[str]:
        """The gate's own reason when the step contradicted the belief but the gate did not fire
        (``cooldown``, ``unstable_map``, ...); None when there was no contradiction or it fired."""
        if decision is None or decision.interrupt or not decision.contradiction:
            return None
        reason = decision.info.suppressed_reason
        return None if reason is None else str(reason)

    def primary_decision(self) -> Optional[Decision]:
        """The decision the agent acts on this step: the first teammate's whose gate fired, else the
        first teammate's (with one teammate: its gate's decision)."""
        if not self.teammate_decisions:
            return None
        fired = [d for d in self.teammate_decisions.values() if d.interrupt]
        return fired[0] if fired else self.teammate_decisions[self.partner]

    def info(self) -> Dict[str, object]:
        return dict(self._info) if self._info else {"skill": None, "replans": 0, "llm_calls": 0, "fallbacks": 0}

    def fallback_summary(self) -> Dict[str, object]:
        """This episode's fallbacks: total, per role, per reason, the last few (see :class:`FallbackLog`)."""
        return self.fallback_log.summary()

    @property
    def active_skill(self) -> Optional[str]:
        return self.library.names[self.active] if self.active is not None else None

    @property
    def llm_calls(self) -> int:
        """Model answers this episode: the planner decisions' ``attempts`` plus the agent's own calls."""
        return self.llm_answers + self.extra_llm_calls()

    def extra_llm_calls(self) -> int:
        """Deprecated hook (model calls made outside :meth:`ask_model`); the built-in agents count
        every answer in ``llm_answers`` and return 0 here."""
        return 0

    def ask_model(self, client: ChatModel, messages: Sequence[Message], parse: Callable[[str], Any], *,
                  role: str, output_schema: Optional[Dict[str, Any]] = None) -> Asked:
        """One model call of the agent's own (judge, hypothesis): counted, its fallback recorded."""
        asked = ask(client, messages, parse, role=role, output_schema=output_schema)
        self.llm_answers += asked.answers
        if asked.fallback is not None:
            self.fallback_log.record(asked.fallback)
        return asked

    # ----------------------------------------------------------------- hooks
    def trigger(self, state, decision: Optional[Decision], partner_events: Sequence[str]) -> Optional[str]:
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

    @property
    def goal_infos(self) -> Dict[int, GoalInfo]:
        """Each teammate's latest goal update (:class:`GoalInfo`), by seat; empty before the first."""
        return {seat: t.info for seat, t in getattr(self, "goal_trackers", {}).items() if t.info is not None}

    def goal_block(self) -> Optional[GoalBlock]:
        """The goal belief as planners see it: the most confident teammate's goal posterior (the
        goal is shared, so each teammate's filter estimates the same thing); None before the first
        observed step or without a goal belief."""
        if self.goal_names is None or not self.goal_infos:
            return None
        info = max(self.goal_infos.values(), key=lambda i: i.confidence)
        names = self.goal_names
        return GoalBlock({n: float(p) for n, p in zip(names, info.goal_posterior)}, names[info.map_goal],
                         float(info.confidence))

    def goal_needs(self, state, feasible_mask, goal: Optional[GoalBlock]) -> Dict[str, Dict[str, float]]:
        """The needs were the MAP goal the goal (the planner decides whether to act on it)."""
        if goal is None:
            return {}
        return {goal.map_goal: dict(self.domain.skill_needs(state, self.player, self.controller, feasible_mask,
                                                            goal=goal.map_goal))}

    def planner_input(self, state, reason: str) -> Optional[PlannerInput]:
        feasible_mask = self.controller.feasible(state, self.player, require_targets=True)
        feasible = tuple(n for k, n in enumerate(self.library.names) if feasible_mask[k])
        if not feasible:
            return None
        goal = self.goal_block() if self.belief_in_prompt else None
        self.planned_goal = None if goal is None else goal.map_goal
        return PlannerInput(
            scene=self.domain.scene_text(state, self.player), feasible=feasible, history=tuple(self.history),
            belief=self.belief_block(reason if reason not in ("start", "idle", "completed") else None),
            reason=reason, needs=self.domain.skill_needs(state, self.player, self.controller, feasible_mask),
            roles=self.roles, complementary=self.complementary,
            goal=goal, goal_needs=self.goal_needs(state, feasible_mask, goal),
        )

    def choose(self, state, reason: str) -> Optional[Choice]:
        """The skill to run from ``state`` (``reason``: why the agent plans now; an interrupt when
        :attr:`interrupting`), or None when nothing is feasible (the agent idles and asks again next
        step). By default the planner answers :meth:`planner_input`."""
        inp = self.planner_input(state, reason)
        if inp is None:
            return None
        return Choice.of(self.planner.choose(inp), self.planner.name)

    def _plan(self, state, reason: str, interrupted: bool) -> None:
        """One planning call: :meth:`choose`, then the bookkeeping every agent shares."""
        self.interrupting = interrupted
        choice = self.choose(state, reason)
        if choice is None:  # nothing feasible now: stay idle and ask again next step
            self.active = None
            self.executor.stop()
            return
        self._last_source = choice.source
        self.plans += 1
        k = self.library.index(choice.skill)
        self.note_choice(k, interrupted)
        self.llm_answers += choice.attempts
        if choice.fallback is not None:
            self.fallback_log.record(choice.fallback)
        if interrupted:
            self.replans += 1
            for gate in self.gates.values():
                gate.notify_replanned()
        self.start_skill(state, k, interrupted)
        self.planned_need = self._need_of(state, choice.skill)
        self.history.append(Turn(state.timestep, choice.skill, reason))

    def note_choice(self, k: int, interrupted: bool) -> None:
        """Count whether choosing skill ``k`` changes what the ego does: after an interrupt, the
        new skill differs from the interrupted one; otherwise from the last skill the ego ran."""
        before = self.active if interrupted else self._last_skill
        self._changed = bool(k != before)
        self.skill_changes += self._changed
        if interrupted and self._changed:
            self.effective_replans += 1

    def start_skill(self, state, k: int, interrupted: bool) -> None:
        """Run skill ``k`` from ``state`` (an interrupt that re-chooses the running skill keeps it going)."""
        if k != self.active or not interrupted:
            self.executor.start_in(state, k)
        self.active = k
        self._last_skill = k


#: ``bayes-belief:paper``: the BayesBelief paper's belief model and gate rule -- the windowed
#: segment product over the last k = 5 observed actions (Eq. 6-8, no hazard, prior reset at each
#: visible completion) and Eq. 10's reference (the best *action* under the MAP skill). The paper's
#: Table 6 values were lost in the text extraction, so the remaining fields (tau_obs 0.2, lambda 1,
#: c_floor 0.7, n_stable 1, cooldown 5, beta 2, epsilon 0.1, alpha 1) are the GateParams defaults.
PAPER_GATE = GateParams(filter={"model": "windowed", "window": 5}, gate={"stable_map": {"reference": "action"}})


class BayesBeliefAgent(PlanningAgent):
    """BayesBelief: the posterior as planner context and the gate as interrupt (SPEC §6).

    Conditions: ``full`` (both), ``no_replan`` (context only), ``no_prompt``
    (interrupts only), ``no_belief`` (neither; no gate at all), ``paper`` (``full`` with the
    paper-faithful gate :data:`PAPER_GATE` unless ``params`` are given).
    """

    CONDITIONS = ("full", "no_replan", "no_prompt", "no_belief", "paper")

    def __init__(self, condition: str = "full", planner: Optional[Planner] = None,
                 params: Optional[GateParams] = None):
        if condition not in self.CONDITIONS:
            raise AgentConfigError(f"unknown bayes-belief condition {condition!r}; "
                                   f"choose from {', '.join(self.CONDITIONS)}")
        if condition == "paper" and params is None:
            params = PAPER_GATE
        super().__init__(f"bayes-belief:{condition}", planner, params)
        self.condition = condition
        self.keeps_belief = condition != "no_belief"
        self.belief_in_prompt = condition in ("full", "no_replan", "paper")
        self.interrupts = condition in ("full", "no_prompt", "paper")

    #: on a gate interrupt, show the planner the posterior without the contradicted MAP skill
    #: (the gate's verdict is that the partner no longer does it; one observation rarely moves
    #: the posterior's argmax, so without this the planner re-chooses the interrupted skill)
    exclude_contradicted = True
    #: act on a gate interrupt only when the kitchen needs some other feasible skill than the one
    #: running (with a single useful option the planner can only re-choose it: a replan that
    #: changes nothing); each interrupt passed over this way is counted in ``gate_no_alternative``
    interrupt_needs_alternative = True
    #: act on a gate interrupt only when the revised belief -- the posterior with the contradicted
    #: skill hidden, as the planner sees it -- is not confident that the running skill still
    #: complements the partner: the mass of the partner skills it complements (SPEC table; where the
    #: domain judges it from the state, under the recipe the agent acts on: :meth:`_complements`) is
    #: below ``still_complementary_mass``. The gate says the *partner model* was wrong; the *plan*
    #: is contradicted only when the ego's skill may no longer fit what the partner now does.
    #: Each interrupt passed over this way is counted in ``gate_still_complementary``.
    interrupt_needs_gap = True
    #: the confidence needed to keep the running skill: the rule planner's floor for acting on
    #: the belief (``MIN_CONFIDENCE``), not a separately tuned number
    still_complementary_mass = MIN_CONFIDENCE
    #: act on a gate interrupt only when the offline rule planner, given the interrupt's own
    #: planner input (the revised belief, ``reason="gate"``), would choose another skill than the
    #: running one. With the rule planner as the agent's planner this is the planner's own answer,
    #: so passing over the interrupt plays exactly the same actions (a re-chosen running skill is
    #: not restarted) and only the planner call is saved; with an LLM planner the rule planner is
    #: the test and the call to the model is saved. Each interrupt passed over this way is counted
    #: in ``gate_plan_stands``.
    interrupt_needs_change = True

    def reset(self, layout: str, player: int, seed: int) -> None:
        super().reset(layout, player, seed)
        self.gate_no_alternative = 0
        self.gate_still_complementary = 0
        self.gate_plan_stands = 0
        self._interrupt_check = self.planner if isinstance(self.planner, RulePlanner) else RulePlanner()
        self._gate_input: Optional[tuple] = None

    def _has_alternative(self, state) -> bool:
        """Does the kitchen need another feasible skill of this agent than the running one -- judged
        under the goal it acts on (:meth:`acted_goal`), as its planner and :meth:`_complements` judge?"""
        mask = self.controller.feasible(state, self.player, require_targets=True)
        goal = self.acted_goal(state)
        options = {} if goal is None else {"goal": goal}
        needs = self.domain.skill_needs(state, self.player, self.controller, mask, **options)
        current = self.active_skill
        return any(v > 0 and n != current for n, v in needs.items())

    def acted_goal(self, state) -> Optional[str]:
        """The goal this agent acts on where the domain names goals: its MAP goal when confident
        enough for the rule planner, else the observable one the no-belief rule cooks (never the
        hidden truth); None without goals or when neither is known."""
        if self.goal_names is None:
            return None
        goal = self.goal_block() if self.belief_in_prompt else None
        floor = self._interrupt_check.config.min_goal_confidence
        return goal.map_goal if goal is not None and goal.confidence >= floor else (
            self.domain.observable_goal(state, self.player))

    def trigger(self, state, decision, partner_events):
        if self.interrupts and self.recipe_contradicts(state, self._interrupt_check.config.min_goal_confidence):
            return "recipe"
        if self.interrupts and decision is not None and decision.interrupt:
            if self.interrupt_needs_alternative and not self._has_alternative(state):
                self.gate_no_alternative += 1
                self._veto = {"filter": "no_alternative", "running": self.active_skill, "others_needed": 0}
                return None
            if self.interrupt_needs_gap and self._still_complementary(state):
                self.gate_still_complementary += 1
                self._veto = {"filter": "still_complementary", "running": self.active_skill,
                              "mass": round(self._complementary_mass(state), 4),
                              "threshold": self.still_complementary_mass}
                return None
            if self.interrupt_needs_change and self._plan_stands(state):
                self.gate_plan_stands += 1
                self._veto = {"filter": "plan_stands", "running": self.active_skill}
                return None
            return "gate"
        return None

    def gate_veto(self, decision: Decision) -> Dict[str, object]:
        if self._veto is None and not self.interrupts:
            return {"filter": "condition", "condition": self.condition}
        return super().gate_veto(decision)

    def step_info(self) -> Dict[str, object]:
        if not self.interrupts:
            return {}
        return {"gate_no_alternative": self.gate_no_alternative,
                "gate_still_complementary": self.gate_still_complementary,
                "gate_plan_stands": self.gate_plan_stands}

    def revised_belief(self) -> Optional[BeliefBlock]:
        """The gate's belief at this step as an interrupt reads it: the predictive posterior with
        the contradicted MAP skill hidden (when ``exclude_contradicted`` and the gate fired);
        None without a gate decision. Used for the planner's belief block on a gate interrupt
        and for the ``interrupt_needs_gap`` test, also when the belief is not in the prompt."""
        d = self.decision
        if self.gate is None or d is None:
            return None
        names = self.library.names
        raw = d.predictive if d.predictive is not None else np.full(len(names), 1.0 / len(names))
        post = {n: float(p) for n, p in zip(names, raw)}
        if self.exclude_contradicted and d.interrupt:
            contradicted = names[int(d.info.stable_map.map_skill)]
            hidden = {n: (0.0 if n == contradicted else p) for n, p in post.items()}
            total = sum(hidden.values())
            if total > 0:
                post = {n: p / total for n, p in hidden.items()}
        m = max(post, key=post.get)
        return BeliefBlock(post, m, post[m], "gate")

    def _plan_stands(self, state) -> bool:
        """The rule planner, shown this interrupt's planner input, re-chooses the running skill.
        The input is kept for :meth:`planner_input`, which the interrupt's planning call asks
        for the same state and reason next."""
        inp = self.planner_input(state, "gate")
        self._gate_input = (state, inp)
        return inp is not None and self._interrupt_check.choose(inp).skill == self.active_skill

    def planner_input(self, state, reason: str) -> Optional[PlannerInput]:
        kept, self._gate_input = self._gate_input, None
        if kept is not None and reason == "gate" and kept[0] is state:
            return kept[1]
        return super().planner_input(state, reason)

    def _still_complementary(self, state) -> bool:
        """The revised belief gives at least ``still_complementary_mass`` to partner skills that the
        running skill complements (:meth:`_complements`)."""
        mass = self._complementary_mass(state)
        return mass == mass and mass >= self.still_complementary_mass

    def _complementary_mass(self, state) -> float:
        """The revised belief's mass on partner skills the running skill complements (NaN without one)."""
        block = self.revised_belief()
        current = self.active_skill
        if block is None or current is None:
            return float("nan")
        judge = self._complements(state)
        return float(sum(p for n, p in block.posterior.items() if judge(current, n)))

    def _complements(self, state):
        """``complements(skill, partner_skill)`` as this agent can judge it: where the domain judges
        complementarity from the state (:meth:`Domain.complements`; OvercookedV2: by the kitchen's
        needs under a recipe), on the state with the recipe the agent acts on -- its MAP goal when
        confident enough for the rule planner, else the observable one the no-belief rule cooks
        (never the hidden truth); elsewhere the skill library's role table (SPEC table)."""
        table = self.library.is_complementary
        name = self.acted_goal(state)
        if name is None:
            return table
        imagined = self.domain.with_goal(state, name)
        return lambda skill, partner_skill: self.domain.complements(imagined, self.player, skill, partner_skill,
                                                                    self.controller)

    def belief_block(self, gate_signal: Optional[str]) -> Optional[BeliefBlock]:
        block = super().belief_block(gate_signal)
        d = self.decision
        if (block is None or gate_signal != "gate" or not self.exclude_contradicted or d is None
                or not d.interrupt):
            return block
        return self.revised_belief()


#: ProAgent's offline planner: complementary to its own intention estimate among equally needed skills
PROAGENT_PLANNER = RulePlannerConfig(complementary_weight=0.5, cover="map")

#: what the partner's held object says it does next (ProAgent's offline intention rule)
_HELD_INTENT = {"onion": "put_onion_in_pot", "dish": "fill_dish_with_soup", "soup": "deliver_soup"}
#: with empty hands: the pickup that starts the chain its last completed skill belongs to
_NEXT_INTENT = {"put_onion_in_pot": "pickup_onion", "pickup_onion": "put_onion_in_pot",
                "deliver_soup": "pickup_dish", "fill_dish_with_soup": "deliver_soup",
                "pickup_dish": "fill_dish_with_soup", "place_obj_on_counter": None}


class ProAgentLike(PlanningAgent):
    """ProAgent-style: replans only when its skill completes, becomes invalid or times out.

    It keeps no gate. Offline it keeps its own estimate of the partner's intention from the
    partner's last observed behaviour (the LLM version asks the model to infer it from the
    scene and history): a held onion / dish / soup means the skill that uses it; empty hands
    mean the same chain as its last completed skill (after potting an onion: another onion;
    after a delivery: a dish); nothing observed yet: no estimate. The estimate goes to the
    planner as a belief block (``INTENT_CONFIDENCE`` on the predicted skill, the rest spread
    evenly) and is logged as ``partner_map``. Offline its rule planner (:data:`PROAGENT_PLANNER`) plans
    *cooperatively with* that estimate, as ProAgent's planner is asked to: among the skills of equal
    need it prefers the one complementary to the predicted intention (``complementary_weight`` 0.5,
    the rule planner's former ordinary weight), and a predicted fetch of the same item covers it.
    This is ProAgent's definition, not a tuned setting.
    """

    keeps_belief = False
    belief_in_prompt = False
    INTENT_CONFIDENCE = 0.8

    def __init__(self, planner: Optional[Planner] = None, params: Optional[GateParams] = None):
        super().__init__("proagent", planner if planner is not None else RulePlanner(config=PROAGENT_PLANNER),
                         params)

    def reset(self, layout: str, player: int, seed: int) -> None:
        super().reset(layout, player, seed)
        self._last_done: Optional[str] = None
        self.intent: Optional[str] = None

    def act(self, state, my_events: Sequence[str] = ()) -> int:
        if self.prev is not None:
            done = self.domain.completed_skills(self.domain.detect_events(self.prev, state)[self.partner],
                                                self.library)
            if done:
                self._last_done = self.library.names[done[-1]]
        held = state.players[self.partner].held
        self.intent = _HELD_INTENT.get(held) if held is not None else (
            _NEXT_INTENT.get(self._last_done) if self._last_done is not None else None)
        return super().act(state, my_events)

    def step_info(self) -> Dict[str, object]:
        return {"partner_map": self.intent}  # its own estimate, in place of a gate's MAP

    def belief_block(self, gate_signal: Optional[str]) -> Optional[BeliefBlock]:
        if self.intent is None or not isinstance(self.planner, RulePlanner):
            return None  # an LLM planner infers the intention from the scene and history itself
        names = self.library.names
        rest = (1.0 - self.INTENT_CONFIDENCE) / max(len(names) - 1, 1)
        post = {n: (self.INTENT_CONFIDENCE if n == self.intent else rest) for n in names}
        return BeliefBlock(post, self.intent, self.INTENT_CONFIDENCE, None)


class PeriodicConfig(AgentConfig):
    """``periodic-N``: replan every ``period`` steps."""

    period: int = Field(10, ge=1, le=100_000)


class PeriodicAgent(PlanningAgent):
    """Belief in the prompt; replans every ``period`` steps instead of on the gate."""

    def __init__(self, period: int = 10, planner: Optional[Planner] = None, params: Optional[GateParams] = None):
        self.config = PeriodicConfig(period=period)
        super().__init__(f"periodic-{self.config.period}", planner, params)
        self.period = self.config.period

    def trigger(self, state, decision, partner_events):
        return "periodic" if state.timestep > 0 and state.timestep % self.period == 0 else None


class CompletionHeldAgent(PlanningAgent):
    """Belief in the prompt; replans when the partner completes a skill or picks up a task item."""

    def __init__(self, planner: Optional[Planner] = None, params: Optional[GateParams] = None):
        super().__init__("completion-held", planner, params)

    def trigger(self, state, decision, partner_events):
        if self.domain.completed_skills(partner_events, self.library):
            return "partner_completed"
        if self.prev is not None:
            before, after = self.prev.players[self.partner].held, state.players[self.partner].held
            if after is not None and after != before:
                return "partner_holding"
        return None


class JudgeConfig(AgentConfig):
    """``llm-judge``: how often the judge is asked, and the offline rule's confidence for a duplicate."""

    every: int = Field(5, ge=1, le=100_000)
    duplicate_confidence: float = Field(0.7, ge=0.0, le=1.0)


class LLMJudgeAgent(PlanningAgent):
    """Belief in the prompt; every ``every`` steps a separate judge decides whether to replan.

    With a model the judge is a call with role ``judge`` (through
    :meth:`PlanningAgent.ask_model`: an unusable or missing judgement keeps the current
    skill and is a counted ``judge`` fallback); offline it is a rule: replan when the
    partner's most likely skill is in the ego's own role with confidence >= 0.7 (a duplicate).
    """

    def __init__(self, client: Optional[ChatModel] = None, every: int = 5, planner: Optional[Planner] = None,
                 params: Optional[GateParams] = None, config: Optional[JudgeConfig] = None):
        super().__init__("llm-judge", planner, params)
        self.client = client
        self.config = config or JudgeConfig(every=every)
        self.every = self.config.every

    @property
    def judge_fallbacks(self) -> int:
        """Deprecated: ``fallback_log.count("judge")``."""
        return self.fallback_log.count("judge")

    def trigger(self, state, decision, partner_events):
        if state.timestep == 0 or state.timestep % self.every or decision is None:
            return None
        own_role = self.library.role_of(self.active)
        if self.client is None:
            m = decision.map_skill
            duplicate = self.library.role_of(m) == own_role and decision.confidence >= self.config.duplicate_confidence
            return "judge" if duplicate else None
        from beliefgate.planners.parse import parse_yes_no
        from beliefgate.planners.prompts import judge_messages

        actions = ", ".join(partner_events) or "no interaction"
        messages = judge_messages(self.domain.scene_text(state, self.player), self.active_skill or "none", actions,
                                  self.belief_block(None))
        asked = self.ask_model(self.client, messages, parse_yes_no, role="judge")
        return "judge" if asked.ok and asked.value else None


# ------------------------------------------------------------------ factories of the agent table
def bayes_belief_agent(option: Optional[str], *, llm: Optional[ChatModel] = None,
                       gate_params: Optional[GateParams] = None) -> BayesBeliefAgent:
    """``bayes-belief[:condition]`` (``full``, ``no_replan``, ``no_prompt``, ``no_belief``, ``paper``)."""
    return BayesBeliefAgent(option or "full", planner=planner_for(llm), params=gate_params)


def proagent_agent(option: Optional[str], *, llm: Optional[ChatModel] = None) -> ProAgentLike:
    """``proagent`` (offline: the rule planner of :data:`PROAGENT_PLANNER`)."""
    return without_model(ProAgentLike(planner=None if llm is None else planner_for(llm)), llm)


def periodic_agent(option: Optional[str], *, llm: Optional[ChatModel] = None,
                   gate_params: Optional[GateParams] = None) -> PeriodicAgent:
    """``periodic`` (every 10 steps) or ``periodic-N``."""
    return PeriodicAgent(int(option) if option is not None else 10, planner=planner_for(llm), params=gate_params)


def completion_held_agent(option: Optional[str], *, llm: Optional[ChatModel] = None,
                          gate_params: Optional[GateParams] = None) -> CompletionHeldAgent:
    """``completion-held``."""
    return CompletionHeldAgent(planner=planner_for(llm), params=gate_params)


def llm_judge_agent(option: Optional[str], *, llm: Optional[ChatModel] = None,
                    gate_params: Optional[GateParams] = None) -> LLMJudgeAgent:
    """``llm-judge``: the judge and the planner share the model."""
    return without_model(LLMJudgeAgent(client=llm, planner=planner_for(llm), params=gate_params), llm)
