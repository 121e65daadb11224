"""OverForge talks and listens (issue 45): role proposals, requests, answers, agreed roles.

What the agent says
  * when it commits to a new strategy (or takes its first) it proposes the strategy's role
    split: its own seat the strategy's first role, every teammate the first library role the
    strategy leaves free (:func:`split_of`); a generalist (no roles) proposes nothing;
  * when a decision plays the skill its partner is believed to be doing (a duplicate: the kitchen
    needs it less than twice) it asks that partner for the partner's most needed other skill that
    it can switch to as it is (the same held-object requirement: two cooks fetching the same
    ingredient, one asked to fetch a plate), while the partner is still :data:`REQUEST_MIN_STEPS`
    or more steps from the duplicated skill's target (at most one request every
    :data:`REQUEST_GAP` steps);
  * where the domain lets a player see the goal (an OvercookedV2 recipe at the indicator) it tells
    the teammates the goal it sees (``inform`` with ``goal``) when that differs from the last one
    it told or the goal was redrawn since (:meth:`Talk.tell_goal`), before anything else it has to say;
  * it answers every proposal and request addressed to it: ``accept`` when it commits (kappa >=
    theta) to a branch consistent with it, ``decline`` when it commits to another branch or after
    :data:`ASK_PATIENCE` decisions without a commit.

What it hears
  A teammate's goal claim enters the goal belief as evidence that the goal was active, true with
  probability ``trust`` (:meth:`~beliefgate.agents.planning.PlanningAgent.hear_goals`).
  A teammate's proposal or request is an *ask*. A request is heard at once: it interrupts the
  running skill for a decision (trigger ``request``), and while it stands the asked skill, where
  feasible, is a branch of every decision (under the held strategy). While an ask stands, every
  decision's candidate strategies include the best one consistent with it, and kappa receives ``n`` judgments in
  favour of the best consistent branch over each inconsistent one, ``n = round(listen x
  reliability)`` (``listen``: the config's weight of a message, 2 by default). A proposal
  accepted either way (it accepts the teammate's, or the teammate accepts its own) is an
  *agreement*: the agent then holds the agreed strategy (retention: decisions still weigh the
  alternative strategy's branches and may play one of their skills, but the held strategy does
  not change) until the
  teammate's behaviour contradicts it (since the agreement, its believed skill -- confidence >=
  0.7 -- lay in the role the split gave the agent :data:`CONTRADICTION_MARGIN` more times than in
  its own role) or the teammate proposes again.

Reliability
  Per teammate, a Beta estimate of how often what it says matches what it does: its believed
  skill in the role it claimed for itself counts as kept, in the role it gave the agent as broken
  (each counted once per change of its believed skill). The prior pseudo-counts come from
  :meth:`Talk.prior`: ``(1, 1)``, or with a partner memory ``(1 + followed, 1 + asked - followed)``
  of the requests the teammate was asked in earlier episodes (the agent's ``_reliability_priors``).

Memory
  What a partner memory keeps of the episode (``PlanningAgent.memory_record``): the agreed split
  (the latest agreement's roles) and, per requested skill, how often the agent asked the teammate
  and how often the teammate's next believed skill (confidence >= 0.7) was the one asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from beliefgate.agents.overforge.record import Branch
from beliefgate.agents.overforge.strategies import FLAT
from beliefgate.beliefs.kappa import Judgment
from beliefgate.envs.messages import Accept, Decline, Inform, Message, Propose, Request, request_seat

#: decisions an ask waits for a commit before the agent declines it (undecided)
ASK_PATIENCE = 3
#: steps between two of the agent's requests
REQUEST_GAP = 20
#: a teammate this close (steps) to the duplicated skill's target is not asked to switch (chosen on
#: seeds 1000-1007 of the connected and split rooms: nearer, it finishes before or as it hears)
REQUEST_MIN_STEPS = 1
#: the believed skill's confidence at which behaviour counts for or against what a teammate said
WATCH_CONFIDENCE = 0.7
#: an agreement ends when the teammate's believed skills in the agent's role outnumber those in its own
#: role by this many since the agreement (one onion fetched by a plater while no dish is useful is not
#: a broken agreement; a switch to onions is)
CONTRADICTION_MARGIN = 2


@dataclass
class Ask:
    """A teammate's proposal or request the agent has not answered yet."""

    id: int
    sender: int
    kind: str                       # "propose" or "request"
    my_role: Optional[str] = None   # propose: the role the split gives the agent
    other_roles: Tuple[str, ...] = ()
    roles: Dict[int, str] = field(default_factory=dict)
    skill: Optional[str] = None     # request: the skill asked of the agent
    waited: int = 0                 # decisions without a commit


@dataclass
class Agreement:
    """An agreed role split with one teammate: the strategy the agent holds under it."""

    strategy: str
    roles: Dict[int, str]
    seat: int
    since: int
    source: str                     # "adopted" (the agent accepted) or "accepted" (the teammate did)
    kept: int = 0                   # the teammate's believed skills in its agreed role since
    broken: int = 0                 # ... and in the agent's


@dataclass
class Reliability:
    """Beta pseudo-counts: what a teammate said and then did (kept) or did not (broken)."""

    kept: float = 1.0
    broken: float = 1.0

    @property
    def mean(self) -> float:
        return self.kept / (self.kept + self.broken)


def split_of(strategy, roles: Sequence[str], me: int, teammates: Sequence[int]) -> Optional[Dict[int, str]]:
    """The role split a strategy proposes: the agent its first role, every teammate the first role of
    the library it leaves free (staging last); None for a strategy that claims no role."""
    if not strategy.roles:
        return None
    free = [r for r in roles if r not in strategy.roles and r != "staging"] + (
        ["staging"] if "staging" in roles and "staging" not in strategy.roles else [])
    if not free:
        return None
    split = {s: free[0] for s in teammates}
    split[me] = strategy.roles[0]
    return split


class Talk:
    """One episode's talk state of an :class:`~beliefgate.agents.overforge.agent.OverForgeAgent`."""

    def __init__(self, agent, listen: int, priors: Optional[Dict[int, Tuple[float, float]]] = None):
        self.agent = agent
        self.listen = listen
        #: the reliability prior per teammate seat (the memory hook; default (1, 1))
        self.priors = dict(priors or {})
        self.reliability = {s: Reliability(*self.prior(s)) for s in agent.teammates}
        self.asks: List[Ask] = []
        self.agreement: Optional[Agreement] = None
        self.outbox: List[Message] = []
        self.my_proposal: Optional[Tuple[int, Dict[int, str], str]] = None  # (id, roles, strategy)
        self._proposed: Optional[Tuple[Dict[int, str], str]] = None          # sent, id not known yet
        self.claims: Dict[int, Tuple[str, str]] = {}  # teammate -> (its own role, the role it gave the agent)
        self._seen_map: Dict[int, Optional[str]] = {}
        self.last_request_t = -REQUEST_GAP
        #: per teammate, the request it has not yet been seen to follow or not: (skill, step said)
        self.open_requests: Dict[int, Tuple[str, int]] = {}
        self.counts = {"proposed": 0, "requested": 0, "accepted": 0, "declined": 0, "adopted": 0,
                       "agreements": 0, "contradicted": 0, "heard": 0, "followed": 0}
        self.events: List[str] = []  # this step's talk events (logged in the step info)

    def prior(self, seat: int) -> Tuple[float, float]:
        return self.priors.get(seat, (1.0, 1.0))

    def reliability_counts(self) -> Dict[int, Dict[str, float]]:
        """Per teammate: the kept/broken counts this episode added to the prior (for a memory store)."""
        out = {}
        for s, r in self.reliability.items():
            a, b = self.prior(s)
            out[s] = {"kept": r.kept - a, "broken": r.broken - b}
        return out

    # ------------------------------------------------------------------ hearing
    def hear(self, messages: Sequence[Message]) -> None:
        me = self.agent.player
        for msg in messages:
            if msg.sender not in self.reliability:
                continue
            self.counts["heard"] += 1
            if isinstance(msg, Propose) and me in msg.roles:
                # the roles the split gives the other seats, less the agent's own: a third seat given the
                # same role shares it with the agent (with two teammates a split names one role twice)
                others = tuple(r for s, r in msg.roles.items() if s != me and r != msg.roles[me])
                if msg.sender in msg.roles:
                    self.claims[msg.sender] = (msg.roles[msg.sender], msg.roles[me])
                if self.agreement is not None and self.agreement.seat == msg.sender:
                    self._end_agreement("renegotiated")
                self.asks = [a for a in self.asks if not (a.sender == msg.sender and a.kind == "propose")]
                self.asks.append(Ask(msg.id, msg.sender, "propose", my_role=msg.roles[me], other_roles=others,
                                     roles=dict(msg.roles)))
            elif isinstance(msg, Request) and request_seat(msg) == me:
                self.asks.append(Ask(msg.id, msg.sender, "request", skill=msg.skill))
            elif isinstance(msg, Accept) and self.my_proposal is not None and msg.reply_to == self.my_proposal[0]:
                _, roles, strategy = self.my_proposal
                if self.agent.strategy == strategy:
                    self._agree(Agreement(strategy, roles, msg.sender, self.agent.t_now, "accepted"))
                    # the teammate took the role it was given: what it does next is checked against it
                    self.claims[msg.sender] = (roles[msg.sender], roles[me])

    def on_sent(self, msg: Message) -> None:
        if isinstance(msg, Propose) and self._proposed is not None:
            self.my_proposal = (msg.id, dict(msg.roles), self._proposed[1])
            self._proposed = None

    def messages_out(self) -> List[Message]:
        return [self.outbox.pop(0)] if self.outbox else []

    # ------------------------------------------------------------------ consistency
    def consistent(self, ask: Ask, branch: Branch) -> bool:
        if ask.kind == "request":
            return branch.skill == ask.skill
        if branch.strategy == FLAT:  # no strategies (-hierarchy): the first skill's role
            return self.agent.library.role_of(branch.skill) == ask.my_role
        roles = self.agent.strategy_of(branch.strategy).roles  # a strategy without roles (generalist) fits none
        return bool(roles) and ask.my_role in roles and not (set(ask.other_roles) & set(roles))

    def strategies(self, strategies: List[str], scores: Dict[str, float]) -> List[str]:
        """The decision's candidate strategies: under an agreement the agreed one first (it is the held
        one: :meth:`holds` keeps it), else with the best strategy consistent with each standing
        proposal added (replacing the last)."""
        agent = self.agent
        if agent.config.pinned or not agent.config.hierarchy:
            return strategies
        if self.agreement is not None:
            agreed = self.agreement.strategy
            return ([agreed] + [g for g in strategies if g != agreed])[:max(1, len(strategies))]
        out = list(strategies)
        for ask in self.asks:
            if ask.kind != "propose":
                continue
            fits = [g for g in sorted(scores, key=lambda n: -scores[n])
                    if agent.strategy_of(g).roles and self.consistent(ask, Branch(g, ""))]
            if fits and not any(g in fits for g in out):
                if len(out) >= max(2, agent.config.k):
                    out[-1] = fits[0]
                else:
                    out.append(fits[0])
        return out

    def asked_skills(self) -> List[str]:
        """The skills the standing requests ask of the agent (each a branch of the next decision)."""
        return [a.skill for a in self.asks if a.kind == "request" and a.skill is not None]

    def unweighed_request(self) -> bool:
        """Does a request stand that no decision has weighed yet (the ``request`` trigger)? A decision
        answers every ask when it commits and counts one more wait on each when it does not."""
        return any(a.kind == "request" and a.waited == 0 for a in self.asks)

    def holds(self) -> bool:
        """Does an agreement hold the strategy (no change, whatever the decision commits to)?"""
        return self.agreement is not None

    def judgments(self, branches: Sequence[Branch], values: Sequence[float]) -> List[Judgment]:
        """Kappa's evidence from the standing asks: the best consistent branch over each inconsistent
        one, ``round(listen x reliability)`` times."""
        out: List[Judgment] = []
        for ask in self.asks:
            n = int(round(self.listen * self.reliability[ask.sender].mean))
            good = [i for i, b in enumerate(branches) if self.consistent(ask, b)]
            bad = [i for i, b in enumerate(branches) if not self.consistent(ask, b)]
            if n <= 0 or not good or not bad:
                continue
            top = max(good, key=lambda i: values[i])
            out += [Judgment(branches[top].name, branches[i].name, 1) for i in bad for _ in range(n)]
        return out

    # ------------------------------------------------------------------ after a decision
    def after_decision(self, best: Branch, committed: bool, skill: str, change, state) -> None:
        """Answer the standing asks, adopt an accepted proposal, propose a new strategy's split and
        ask a duplicating teammate for another skill."""
        agent = self.agent
        adopted = False
        for ask in list(self.asks):
            if not committed:
                ask.waited += 1
                if ask.waited >= ASK_PATIENCE:
                    self._answer(ask, False, "undecided")
                continue
            ok = self.consistent(ask, best)
            self._answer(ask, ok, "" if ok else f"committed to {best.name}")
            if ok and ask.kind == "propose" and not agent.config.pinned:
                self._agree(Agreement(best.strategy, ask.roles, ask.sender, agent.t_now, "adopted"))
                self.counts["adopted"] += 1
                adopted = True
        if change is not None and not adopted and self.agreement is None:
            split = split_of(agent.strategy_of(change.after), agent.library.roles, agent.player, agent.teammates)
            if split is not None:
                self.outbox.append(Propose(roles=split))
                self._proposed = (split, change.after)
                self.counts["proposed"] += 1
                self.events.append(f"propose {change.after}")
        self._maybe_request(state, skill)

    def tell_goal(self, state) -> None:
        """Queue, first, an ``inform`` of the goal the agent sees now, when it has not told it since the
        last redraw (:meth:`~beliefgate.agents.planning.PlanningAgent.goal_to_tell`, which counts it)."""
        seen = self.agent.goal_to_tell(state)
        if seen is None:
            return
        self.outbox.insert(0, Inform(goal=seen))
        self.events.append(f"tell goal {seen}")

    def _answer(self, ask: Ask, ok: bool, reason: str) -> None:
        self.asks.remove(ask)
        self.outbox.append(Accept(reply_to=ask.id, to=ask.sender) if ok else
                           Decline(reply_to=ask.id, to=ask.sender, reason=reason))
        self.counts["accepted" if ok else "declined"] += 1
        self.events.append(f"{'accept' if ok else 'decline'} #{ask.id}" + (f" ({reason})" if reason else ""))

    def _agree(self, agreement: Agreement) -> None:
        self.agreement = agreement
        self.agent.agreed_roles = dict(agreement.roles)   # what a partner memory keeps of the episode
        self.counts["agreements"] += 1
        self.events.append(f"agreed {agreement.strategy} with seat {agreement.seat} ({agreement.source})")

    def _end_agreement(self, why: str) -> None:
        self.events.append(f"agreement ended ({why})")
        self.agreement = None

    def _maybe_request(self, state, skill: str) -> None:
        agent = self.agent
        seat = agent.partner
        d = agent.teammate_decisions.get(seat) or agent.decision
        if d is None or d.map_name != skill or agent.t_now - self.last_request_t < REQUEST_GAP:
            return
        mine = agent.controller.feasible(state, agent.player, require_targets=True)
        if agent.domain.skill_needs(state, agent.player, agent.controller, mine).get(skill, 0.0) >= 2:
            return   # the kitchen needs the skill twice (two of one ingredient): both doing it is no duplicate
        mask = agent.controller.feasible(state, seat, require_targets=True)
        k = agent.library.index(skill)
        if not mask[k]:
            return   # what the teammate holds rules the believed skill out: the belief lags, ask nothing
        if agent.controller.steps_to_targets(state, seat)[k] < REQUEST_MIN_STEPS:
            return   # it is about done: by the time it hears, switching would throw its walk away
        # only a skill it can switch to as it is (the same held-object requirement as the duplicated
        # skill): asking a teammate that carries something for another use of it repeats what it does
        needs_held = agent.library[skill].requires
        names = [n for k, n in enumerate(agent.library.names)
                 if mask[k] and n != skill and agent.library[n].requires == needs_held]
        if not names:
            return
        needs = agent.domain.skill_needs(state, seat, agent.controller, mask)
        best = max(names, key=lambda n: (needs.get(n, 0.0), -names.index(n)))
        if needs.get(best, 0.0) <= 0:
            return
        self.outbox.append(Request(to=seat, skill=best))
        self.last_request_t = agent.t_now
        self.open_requests[seat] = (best, agent.t_now)
        counts = agent.request_counts.setdefault(seat, {}).setdefault(best, [0, 0])
        counts[0] += 1
        self.counts["requested"] += 1
        self.events.append(f"request seat {seat}: {best}")

    # ------------------------------------------------------------------ watching behaviour
    def watch(self, state) -> Optional[str]:
        """Check each teammate's believed skill against what it said; returns ``"partner_role"`` when
        an agreement ended because the teammate's behaviour contradicted it. A skill in the role it
        gave the agent counts against it only while a skill of its own role was useful for it (a
        plater that fetches onions while no dish is wanted keeps its word)."""
        agent = self.agent
        out = None
        for seat in agent.teammates:
            d = agent.teammate_decisions.get(seat)
            if d is None or d.map_name == self._seen_map.get(seat):
                continue
            self._seen_map[seat] = d.map_name
            if d.confidence >= WATCH_CONFIDENCE and seat in self.open_requests:
                # the teammate's next believed skill after a request: followed, or not
                skill, _ = self.open_requests.pop(seat)
                if d.map_name == skill:
                    agent.request_counts[seat][skill][1] += 1
                    self.counts["followed"] += 1
            if d.confidence < WATCH_CONFIDENCE or seat not in self.claims:
                continue
            role = agent.library.role_of(d.map_name)
            own, given = self.claims[seat]
            agreed = self.agreement if (self.agreement is not None and self.agreement.seat == seat) else None
            if role == own:
                self.reliability[seat].kept += 1
                if agreed is not None:
                    agreed.kept += 1
            elif role == given and self._own_role_useful(state, seat, own):
                self.reliability[seat].broken += 1
                if agreed is not None:
                    agreed.broken += 1
                    if agreed.broken - agreed.kept >= CONTRADICTION_MARGIN:
                        self.counts["contradicted"] += 1
                        self._end_agreement("contradicted")
                        out = "partner_role"
        return out

    def _own_role_useful(self, state, seat: int, role: str) -> bool:
        agent = self.agent
        mask = agent.controller.feasible(state, seat, require_targets=True)
        if not mask.any():
            return False
        needs = agent.domain.skill_needs(state, seat, agent.controller, mask)
        return any(needs.get(n, 0.0) > 0 for k, n in enumerate(agent.library.names)
                   if mask[k] and agent.library.role_of(n) == role)

    def info(self) -> Dict[str, Any]:
        ev, self.events = self.events, []
        return {"agreement": None if self.agreement is None else self.agreement.strategy,
                "asks": len(self.asks),
                "reliability": {str(s): round(r.mean, 3) for s, r in self.reliability.items()},
                "events": ev, **self.counts}
