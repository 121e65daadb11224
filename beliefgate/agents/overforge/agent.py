"""The OverForge Prefrontal Cortex Module as an Overcooked ego agent (SPEC §5).

The agent holds a *strategy* (a division of labour from :mod:`.strategies`) across decisions.
At each decision point (start, its skill ended, or the gate reported a contradiction) it

1. forms branches ``b = (g, a)``: ``k`` strategies (the current one and the best alternative)
   x the feasible first skills consistent with each (weight > 0; the ``first`` it values most);
2. judges neighbouring value levels of branches (every branch of a level against every branch of the
   next; ``pairs=all``: every pair) of the state judge's order pairwise (``y = 1`` for the one
   with the higher immediate value; ties give no judgment) and feeds the judgments to kappa;
3. rolls every branch ``depth`` imagined steps in the real dynamics (round 1), then extends
   only kappa's nucleus one depth unit per round, feeding each round's dish-progress gain
   per depth unit (``score=rate``, the default; ``score=gain``: the gain itself) as
   :class:`~beliefgate.beliefs.kappa.RolloutRound` evidence at the branch's depth in units (the
   round number, less the rounds it sat out of the nucleus);
4. commits when ``kappa >= theta``; after ``rounds`` rounds it logs the decision as not
   committed and plays what ``uncommitted`` says: by default (``auto``) the best branch where
   the players work separate kitchens (no floor and no counter in common) and the rule
   planner's choice elsewhere; ``best`` always the best branch (the paper), ``rule`` always the rule
   planner's choice; with ``hold=1`` an interrupt keeps the running skill.

The strategy changes when the search commits to a branch of another strategy, when the gate
reports a contradiction, or when the partner is seen to have taken the strategy's role (its
MAP skill lies in one of the strategy's roles with confidence >= ``ROLE_CONFIDENCE``); the
latter two allow a switch without a commit.

The agent is a :class:`~beliefgate.agents.planning.PlanningAgent` whose :meth:`~OverForgeAgent.choose`
is the PCM decision; the base class keeps the bookkeeping (plans, replans, gate notices, the
skill's start, history). A branch is a :class:`~.record.Branch` ``(strategy, skill)``; every
decision is a :class:`~.record.PCMDecision` (branches, immediate values, kappa's evidence log
in the order kappa received it, rollout scores, kappa, argmax probabilities, nucleus, committed,
depth used, time, the strategy change), logged in the step's info as ``pcm``
(:meth:`~.record.PCMDecision.to_log`); :meth:`~.record.PCMDecision.replay` rebuilds kappa from
it with the kappa API.
"""

from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.agents.overforge.config import OverForgeConfig, OverForgeOptionError
from beliefgate.agents.overforge.judge import immediate_value, usefulness
from beliefgate.agents.overforge.record import Branch, PCMDecision, StrategyChange
from beliefgate.agents.overforge.rollout import BranchRollout, ForwardModel, extend_together
from beliefgate.agents.overforge.strategies import (FLAT, Strategy, StrategyLibrary, flat_strategy, load_strategies,
                                                   strategies_for)
from beliefgate.agents.overforge.talk import Talk
from beliefgate.agents.planning import Choice, PlanningAgent
from beliefgate.beliefs.gate import GateParams
from beliefgate.beliefs.kappa import Judgment, Kappa, Rollout, RolloutRound
from beliefgate.envs.domain import State
from beliefgate.planners.model import ChatModel
from beliefgate.planners.rule import RulePlanner

#: the partner "has taken" a strategy's role when its MAP skill is in that role with this confidence
ROLE_CONFIDENCE = 0.7
#: reasons that let the strategy change without a commit
REVISE_REASONS = ("start", "gate", "partner_role")


class OverForgeAgent(PlanningAgent):
    """OverForge PCM ego: persistent strategies, strategy-action branches, kappa commit."""

    #: the reliability prior per teammate seat, ``{seat: (kept, broken)}`` pseudo-counts, read at
    #: :meth:`reset` (the hook for a cross-episode memory; None: ``(1, 1)``; see :mod:`.talk`)
    talk_priors: Optional[Dict[int, Tuple[float, float]]] = None

    def __init__(self, config: OverForgeConfig, llm: Optional[ChatModel] = None,
                 params: Optional[GateParams] = None, strategies: Optional[StrategyLibrary] = None):
        super().__init__(config.name, None, params)
        self.config = config
        self.client = llm
        #: strategies given by the caller (else each layout's domain gives its own, at reset)
        self._given_strategies = strategies
        self.strategies = strategies or load_strategies()
        self._check_pinned()
        self.kappa_params = config.kappa_params()
        self.llm_roles = None
        if llm is not None:
            from beliefgate.agents.overforge.llm import LLMRoles

            self.llm_roles = LLMRoles(self, llm)
            if config.messages:   # an agent with a model talks in words
                self.speak_with(llm)

    def _check_pinned(self) -> None:
        pinned = self.config.pinned
        if pinned is not None and pinned not in self.strategies:
            raise OverForgeOptionError(f"overforge option pinned={pinned!r}: unknown strategy; choose from "
                                       f"{', '.join(self.strategies.names)}")

    # ----------------------------------------------------------------- lifecycle
    def reset(self, layout: str, player: int, seed: int) -> None:
        super().reset(layout, player, seed)
        if self._given_strategies is None:
            self.strategies = strategies_for(self.domain.name, self.library)
            self._check_pinned()
        self.model = ForwardModel(self.domain, self.layout, self.controller, gates=self.gates)
        #: what an uncommitted decision plays on this layout (``auto`` resolved by its geometry)
        self.uncommitted = self.config.uncommitted
        if self.uncommitted == "auto":
            self.uncommitted = "best" if self.domain.layout_info(self.layout).separate_kitchens else "rule"
        self.strategy: Optional[str] = self.config.pinned if self.config.pinned else (
            None if self.config.hierarchy else FLAT)
        self.decisions = 0
        self.commits = 0
        self.strategy_changes = 0
        self.pending_revision: Optional[str] = None
        self._role_seen: Optional[str] = None
        #: the goal confidence the agent acts on (the rule planner's ``min_goal_confidence``)
        self._goal_floor = (self.planner.config.min_goal_confidence if isinstance(self.planner, RulePlanner)
                            else RulePlanner().config.min_goal_confidence)
        self._imagined_goals: List[Optional[str]] = []
        #: this step's decision (None on a step without one); ``last_decision`` keeps the latest
        self.record: Optional[PCMDecision] = None
        self.last_decision: Optional[PCMDecision] = None
        #: the step of the current act (counted from 0), and the messages (None with ``-messages``)
        self.t_now = -1
        self.talk: Optional[Talk] = Talk(self, self.config.listen, self._reliability_priors()) if self.config.messages else None
        #: a teammate's goal claim moves the goal belief (only while the agent listens)
        self.goal_claim_trust = self.config.trust if self.config.messages else None

    def _reliability_priors(self) -> Optional[Dict[int, Tuple[float, float]]]:
        """Each teammate's reliability prior: :attr:`talk_priors` where given, else from the partner
        memory -- ``(1 + followed, 1 + asked - followed)`` of the requests it was asked in earlier
        episodes (:attr:`recalled`) -- else None (``(1, 1)``)."""
        if self.talk_priors is not None:
            return self.talk_priors
        out = {}
        for seat, remembered in (self.recalled or {}).items():
            if remembered is not None and remembered.requests:
                asked = sum(a for a, _ in remembered.requests.values())
                followed = sum(f for _, f in remembered.requests.values())
                out[seat] = (1.0 + followed, 1.0 + asked - followed)
        return out or None

    def act(self, state: State, my_events: Sequence[str] = ()) -> int:
        self.record = None
        self.t_now += 1
        action = super().act(state, my_events)
        if self.talk is not None:
            self.talk.tell_goal(state)
        return action

    def step_info(self) -> Dict[str, object]:
        out = {"strategy": self.strategy, "pcm": None if self.record is None else self.record.to_log(),
               "decisions": self.decisions, "commits": self.commits, "strategy_changes": self.strategy_changes}
        if self.goal_names is not None:   # the goals the latest decision's rollouts ran under
            out["imagined_goals"] = list(self._imagined_goals)
        if self.talk is not None:
            out["talk"] = self.talk.info()
        return out

    # ------------------------------------------------------------------ messages (the Talks protocol)
    def hear(self, messages) -> None:
        if self.talk is not None:
            messages = self.words_in(messages)
            self.talk.hear(messages)
            self.hear_goals(messages)

    def messages_out(self):
        return self.words_out(self.talk.messages_out()) if self.talk is not None else []

    def on_sent(self, message) -> None:
        if self.talk is not None:
            self.talk.on_sent(self.words_sent(message))

    def strategy_of(self, name: str) -> Strategy:
        return flat_strategy(self.library) if name == FLAT else self.strategies[name]

    # ------------------------------------------------------------------ triggers
    def trigger(self, state, decision, partner_events):
        if decision is None:
            return None
        self._watch_role(decision)
        if self.talk is not None and self.talk.watch(state) is not None:
            self.pending_revision = "partner_role"  # an agreement the teammate's behaviour contradicted
        if self.talk is not None and self.talk.unweighed_request():
            return "request"   # a teammate asked for a skill: decide now, not when the running skill ends
        if self.config.interrupts and self.recipe_contradicts(state, self._goal_floor):
            return "recipe"
        if self.config.interrupts and decision.interrupt:
            return "gate"
        return None

    def _watch_role(self, decision) -> None:
        """Note (once per MAP change) that the partner took the held strategy's role."""
        m = decision.map_name
        if m == self._role_seen:
            return
        self._role_seen = m
        if self.strategy in (None, FLAT) or self.config.pinned:
            return
        roles = self.strategy_of(self.strategy).roles
        if decision.confidence >= ROLE_CONFIDENCE and self.library.role_of(m) in roles:
            self.pending_revision = "partner_role"

    # ------------------------------------------------------------------ planning
    def _posterior(self) -> Optional[Dict[str, float]]:
        if self.decision is None or self.decision.predictive is None:
            return None
        return {n: float(p) for n, p in zip(self.library.names, self.decision.predictive)}

    def _strategy_scores(self, posterior: Optional[Dict[str, float]], use: Dict[str, float]) -> Dict[str, float]:
        """Offline strategy proposer: how well each strategy complements the partner, and fits now."""
        role_mass: Dict[str, float] = {}
        if posterior is not None:
            for skill, p in posterior.items():
                role = self.library.role_of(skill)
                role_mass[role] = role_mass.get(role, 0.0) + p
        scores = {}
        for strat in self.strategies.strategies:
            w = np.array([strat.weight(n) for n in self.library.names])
            free = np.array([1.0 - role_mass.get(self.library.role_of(n), 0.0) for n in self.library.names])
            fit = float((w * free).sum() / w.sum()) if w.sum() > 0 else 0.0
            now = max((strat.weight(s) / strat.top_weight) * u for s, u in use.items()) if use else 0.0
            scores[strat.name] = fit + 0.5 * now
        return scores

    def _candidate_strategies(self, posterior, use, reason: str) -> Tuple[List[str], Dict[str, float], Optional[str]]:
        """The decision's strategies (current first), the proposer's scores, and the proposer's source."""
        if not self.config.hierarchy:
            return [FLAT], {}, None
        if self.config.pinned:
            return [self.config.pinned], {}, None
        scores = self._strategy_scores(posterior, use)
        ranked = sorted(scores, key=lambda n: -scores[n])
        source = "offline"
        if self.llm_roles is not None:
            proposed = self.llm_roles.propose_strategy(self._scene, posterior, self.strategy, ranked)
            if proposed is not None:
                ranked = [proposed] + [n for n in ranked if n != proposed]
                source = "llm"
        current = self.strategy if self.strategy is not None else ranked[0]
        out = [current] + [n for n in ranked if n != current]
        return out[: self.config.k], scores, source

    def _branches(self, strategies: List[str], feasible: Tuple[str, ...], use: Dict[str, float],
                  state: State) -> List[Tuple[Branch, float]]:
        """(branch, immediate value) per branch."""
        to_target = self.controller.steps_to_targets(state, self.player)
        steps = {s: float(to_target[self.library.index(s)]) for s in feasible}

        def value(strat, s: str) -> float:
            return immediate_value(use[s], max(strat.weight(s), 1e-3), strat.top_weight, steps[s])

        out = []
        for g in strategies:
            strat = self.strategy_of(g)
            pool = [s for s in feasible if strat.weight(s) > 0] or list(feasible)  # consistent with g
            values = {s: value(strat, s) for s in pool}
            ranked = sorted(pool, key=lambda s: (-values[s], feasible.index(s)))
            out += [(Branch(g, s), values[s]) for s in ranked[: self.config.first]]
        # a skill a teammate asked for is a branch (under the first strategy, the held one) where feasible
        held = self.strategy_of(strategies[0])
        for s in dict.fromkeys(self.talk.asked_skills() if self.talk is not None else []):
            if s in feasible and not any(b.skill == s for b, _ in out):
                out.append((Branch(strategies[0], s), value(held, s)))
        return out

    def _judgments(self, branches: List[Branch], values: List[float]) -> List[Judgment]:
        """Neighbours in the judge's order, the better one first (LLM judge when a model is given);
        kappa's branches are named by :attr:`Branch.name`."""
        order = sorted(range(len(branches)), key=lambda i: -values[i])
        out = []
        if self.config.pairs == "all":
            compared = [(order[x], order[y]) for x in range(len(order)) for y in range(x + 1, len(order))]
        else:
            # neighbouring value levels: every branch of a level against every branch of the next one, so
            # that a tie (the same skill under two strategies) does not break the chain; tied branches
            # are compared with each other only by a model judge (offline a tie is no evidence)
            levels: List[List[int]] = []
            for i in order:
                if levels and abs(values[levels[-1][0]] - values[i]) <= 1e-12:
                    levels[-1].append(i)
                else:
                    levels.append([i])
            compared = [(a, b) for hi, lo in zip(levels, levels[1:]) for a in hi for b in lo]
            if self.llm_roles is not None:
                compared = [(lv[x], lv[x + 1]) for lv in levels for x in range(len(lv) - 1)] + compared
        for a, b in compared:
            offline = None if abs(values[a] - values[b]) <= 1e-12 else (a, b)
            pick = offline
            if self.llm_roles is not None:
                winner = self.llm_roles.judge_pair(self._scene, branches[a], branches[b])
                if winner is not None:
                    pick = (a, b) if winner == 0 else (b, a)
            if pick is not None:
                out.append(Judgment(branches[pick[0]].name, branches[pick[1]].name, 1))
        return out

    def _choose_next(self, strategy: Strategy, goal: Optional[str] = None):
        """The rollout ego's skill choice after its first skill: the strategy's preferred useful
        skill (useful for the imagined ``goal`` where the domain has goals); with
        ``next=complement`` usefulness is counted against the imagined partner's skill."""
        names = self.library.names
        complement = self.config.next == "complement"
        extra = {} if goal is None else {"goal": goal}

        def choose(s: State, partner_skill: Optional[int] = None) -> Optional[int]:
            mask = self.controller.feasible(s, self.player, require_targets=True)
            if not mask.any():
                return None
            needs = self.domain.skill_needs(s, self.player, self.controller, mask, **extra)
            if complement and partner_skill is not None:
                feasible = [names[k] for k in np.flatnonzero(mask)]
                use = usefulness(feasible, needs, {names[partner_skill]: 1.0}, self.complementary)
            else:
                use = {n: min(v, 1.0) for n, v in needs.items()}
            best, best_v = None, -1.0
            for k in np.flatnonzero(mask):
                n = names[k]
                v = (use.get(n, 0.0) + 0.05) * (strategy.weight(n) + 1e-3)
                if v > best_v:
                    best, best_v = int(k), v
            return best

        return choose

    def rollout_partner(self) -> str:
        """Who plays the partner in the rollouts: ``"belief"`` (the gate's posterior) or ``"uniform"``."""
        return "belief" if (self.config.belief and self.gate is not None) else "uniform"

    def believed_goal(self) -> Optional[str]:
        """The goal (recipe) the agent acts on: the MAP goal of its goal belief when that is
        confident enough for the rule planner (``min_goal_confidence``), else None (the domain's
        observable rule decides, as for the no-belief agent)."""
        goal = self.goal_block() if self.belief_in_prompt else None
        if goal is None or goal.confidence < self._goal_floor:
            return None
        return goal.map_goal

    def imagined_goal(self, state: State, rng: np.random.Generator) -> Optional[str]:
        """The goal an imagined continuation runs under (None where the domain names no goals): the
        confident MAP goal; else (``recipe=auto``) a draw from the goal posterior, or (``recipe=map``)
        the goal the kitchen has started to make (:meth:`Domain.goal_in_making`: a held dish's, a
        cooking pot's, the fullest started pot's likeliest; so that a started dish is finished and
        served, and its reward tests the guess, even when the posterior is split evenly), else the
        MAP goal; with no goal belief yet, the domain's observable choice
        (:meth:`Domain.observable_goal`: a recipe the ego sees, else what the pot and the teammates'
        hands allow, what the no-belief agent cooks). The true goal is never read unless seen."""
        names = self.domain.goal_names(self.layout)
        if not names:
            return None
        block = self.goal_block() if self.belief_in_prompt else None
        if block is None:   # (no pot can become any recipe: the first, as the pots show nothing)
            return self.domain.observable_goal(state, self.player) or names[0]
        if block.confidence >= self._goal_floor:
            return block.map_goal
        if self.config.recipe == "map":
            return self.domain.goal_in_making(state, block.posterior) or block.map_goal
        names = list(block.posterior)
        p = np.array([block.posterior[n] for n in names], dtype=float)
        p = p / p.sum()
        return names[int(rng.choice(len(names), p=p))]

    def _needs(self, state: State, feasible_mask) -> Dict[str, float]:
        """The kitchen's needs of the ego's skills, under its believed goal where it has one."""
        goal = self.believed_goal()
        extra = {} if goal is None else {"goal": goal}
        return dict(self.domain.skill_needs(state, self.player, self.controller, feasible_mask, **extra))

    def search(self, kappa: Kappa, branches: List[Tuple[Branch, float]], state: State, mode: str,
               rng_seed: int) -> List[Dict[str, float]]:
        """The rollout rounds of one decision: round 1 rolls every branch, later rounds extend
        kappa's nucleus, until kappa commits or the rounds run out. ``kappa`` is updated in
        place; returns each round's scores by branch name. ``mode`` chooses the imagined partner
        (``"belief"`` or ``"uniform"``); with the same ``rng_seed`` two searches share their random
        numbers, so a diagnostic can rerun a decision with the other partner model (each rollout
        filters from the live gate's state value and never touches the gate)."""
        names = list(kappa.branches)  # kappa was made over the branches' names, in this order
        predictive = None if self.decision is None else self.decision.predictive
        gate_state = None if self.gate is None else self.gate.state
        teammates = None
        if len(self.gates) > 1:   # every teammate drawn from its own posterior, filtered by its own gate
            teammates = {seat: (gate.state, None if self.teammate_decisions.get(seat) is None
                                else self.teammate_decisions[seat].predictive)
                         for seat, gate in self.gates.items()}
        goals = [self.imagined_goal(state, np.random.default_rng([rng_seed, j, 1]))
                 for j in range(self.config.samples)]
        rolls = {}
        for name, (branch, _) in zip(names, branches):
            # samples imagined partners per branch; sample j uses the same random numbers (and the
            # same imagined goal) in every branch (common random numbers), so branch differences
            # are differences of the branch
            rolls[name] = [BranchRollout(self.model, state, self.player, self.library.index(branch.skill),
                                         self._choose_next(self.strategy_of(branch.strategy), goals[j]), mode,
                                         gate_state, predictive, np.random.default_rng([rng_seed, j]),
                                         mix=self.config.mix, teammates=teammates, goal=goals[j],
                                         goal_weight=self.config.goal_weight)
                           for j in range(self.config.samples)]
        self._imagined_goals = goals
        rounds: List[Dict[str, float]] = []
        for r in range(1, self.config.rounds + 1):
            targets = names if r == 1 else list(kappa.nucleus)
            flat = [b for n in targets for b in rolls[n]]
            gains = dict(zip(map(id, flat), extend_together(flat, self.config.depth)))
            # depth units each branch has been imagined so far: a branch left out of a round's nucleus
            # and extended again later is behind the round number, so its rate (gain per unit) and its
            # evidence's depth are its own (dividing by the round number shrank its gain)
            units = {n: rolls[n][0].depth_steps // self.config.depth for n in targets}
            # gain per depth unit (score=rate), or the gain
            scores_r = {n: float(np.mean([gains[id(b)] for b in rolls[n]]))
                        / (float(units[n]) if self.config.score == "rate" else 1.0) for n in targets}
            info = kappa.update(RolloutRound(tuple(Rollout(n, units[n], sc) for n, sc in scores_r.items())))
            rounds.append(scores_r)
            if info.commit or info.next != "rollout":
                break
        return rounds

    def choose(self, state: State, reason: str) -> Optional[Choice]:
        """One PCM decision (module docstring): the skill it plays, its record kept in
        :attr:`record` for the step's info; None when nothing is feasible."""
        started = time.perf_counter()
        feasible_mask = self.controller.feasible(state, self.player, require_targets=True)
        feasible = tuple(n for k, n in enumerate(self.library.names) if feasible_mask[k])
        if not feasible:
            return None
        self._scene = self.domain.scene_text(state, self.player) if self.llm_roles is not None else ""
        if self.pending_revision is not None and reason not in ("gate",):
            reason_for_strategy = self.pending_revision
        else:
            reason_for_strategy = reason
        self.pending_revision = None
        self.planned_goal = self.believed_goal()   # what a later ``recipe`` interrupt compares against
        needs = self._needs(state, feasible_mask)
        posterior = self._posterior()
        use = usefulness(feasible, needs, posterior, self.complementary)
        strategies, scores, proposer = self._candidate_strategies(posterior, use, reason_for_strategy)
        if self.talk is not None:
            strategies = self.talk.strategies(strategies, scores)
        scored = self._branches(strategies, feasible, use, state)
        branches = [b for b, _ in scored]
        values = [v for _, v in scored]
        kappa = Kappa([b.name for b in branches], self.kappa_params)
        judgments = self._judgments(branches, values) if len(branches) > 1 else []
        if judgments:
            kappa.update_many(judgments)
        heard = self.talk.judgments(branches, values) if (self.talk is not None and len(branches) > 1) else []
        if heard:
            kappa.update_many(heard)
        rounds: List[Dict[str, float]] = []
        if self.config.rollouts and len(branches) > 1:
            rng_seed = int(self.rng.integers(0, 2 ** 31))
            rounds = self.search(kappa, scored, state, self.rollout_partner(), rng_seed)
        info = kappa.info
        best = branches[int(info.best)]
        committed = bool(info.commit)
        # strategy persistence: change on a commit to another strategy, or on a revision trigger
        change = None
        held = self.talk is not None and self.talk.holds()  # an agreed split keeps the strategy
        if self.config.hierarchy and not self.config.pinned and best.strategy != self.strategy and not held:
            if self.strategy is None or committed or reason_for_strategy in REVISE_REASONS:
                change = StrategyChange(self.strategy, best.strategy,
                                        "commit" if (committed and self.strategy is not None) else reason_for_strategy)
                if self.strategy is not None:
                    self.strategy_changes += 1
                self.strategy = best.strategy
        skill, source = best.skill, "best"  # b*, committed or not
        if not committed and len(branches) > 1:
            if self.interrupting and self.config.hold and self.active is not None:
                skill, source = self.library.names[self.active], "hold"
            elif self.uncommitted == "rule":
                inp = self.planner_input(state, reason)
                skill, source = self.planner.choose(inp).skill, "rule"
        if self.talk is not None:
            self.talk.after_decision(best, committed, skill, change, state)
        self.decisions += 1
        self.commits += committed
        means = tuple(float(m) for m in info.mean)
        top = sorted(means, reverse=True)
        by_name = dict(zip(kappa.branches, branches))
        self.record = self.last_decision = PCMDecision(
            reason=reason, strategy_reason=reason_for_strategy, strategies=tuple(strategies),
            strategy_scores={n: round(v, 4) for n, v in scores.items()}, proposer=proposer,
            branches=tuple(branches), v_imm=tuple(round(v, 6) for v in values), evidence=kappa.log,
            kappa_params=self.kappa_params,
            rollouts=tuple({by_name[n]: round(v, 6) for n, v in sc.items()} for sc in rounds),
            kappa=float(info.kappa), argmax=tuple(float(p) for p in info.argmax_probs), mean=means,
            gap=(top[0] - top[1]) if len(top) > 1 else None,
            nucleus=tuple(branches[int(i)] for i in info.nucleus), best=best, committed=committed,
            depth=len(rounds), rollout_partner=self.rollout_partner() if rounds else None,
            skill=skill, skill_source=source, strategy=self.strategy, change=change,
            time_ms=round((time.perf_counter() - started) * 1e3, 3),
        )
        return Choice(skill, "overforge")
