"""Typed messages between players and the channel the episode runner carries them on.

A message is one of six kinds (pydantic models, discriminated by ``kind``):

* :class:`Propose` -- a role split ``{seat: role}`` (roles of the domain's skill library);
* :class:`Request` -- "seat ``seat`` does ``skill``" (a skill of the library: a sub-task);
* :class:`Accept` / :class:`Decline` -- the answer to an earlier message (``reply_to``: its id);
* :class:`Inform` -- what the sender holds, intends (a skill) and/or knows the goal to be (where the
  domain names goals: an OvercookedV2 recipe the sender sees, by its goal name);
* :class:`Say` -- words only: a sentence an agent with a model wrote for one of the typed messages
  above (``means``, kept in the log and checked like the typed message, but never delivered: a
  listener gets the words and must read them itself; :mod:`beliefgate.agents.speech`).

Every message may carry a short free ``text``. An agent talks through a small protocol
(:class:`Talks`): ``hear(messages)`` receives the messages delivered to it this step (before
its ``act``), ``messages_out()`` returns what it says this step (after its ``act``); an optional
``on_sent(message)`` is told the message the channel sent, stamped with its id (answers name it in
``reply_to``). An agent without ``hear`` and ``messages_out`` neither hears nor speaks.

The :class:`Channel` enforces the rules (:class:`ChannelRules`): at most one message per
player per step, delivered at the next step, a per-player budget per episode, and a vocabulary
(the layout's seats, skills, roles and goals). A message that breaks a rule is *refused* with a
counted reason (:data:`REFUSAL_REASONS`) and the episode goes on; nothing here raises for a
player's bad message.

This module is domain-free (the vocabulary comes from the caller), so domains' partners, the
agents and the runner all use it.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Dict, List, Literal, Optional, Protocol, Sequence, Tuple, Union, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from beliefgate.validation import CheckedModel

#: why the channel refused a message
REFUSAL_REASONS = ("malformed", "empty", "unknown_seat", "unknown_role", "unknown_skill", "unknown_goal",
                   "unknown_reply", "too_long", "one_per_step", "over_budget")
#: the message kinds, in the order the report lists them
KINDS = ("propose", "request", "accept", "decline", "inform", "say")


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the recipient seat (None: every other player)
    to: Optional[int] = None
    text: str = ""
    #: stamped by the channel when the message is sent: sender seat, step, id (its index in the episode)
    sender: int = -1
    t: int = -1
    id: int = -1


class Propose(_Base):
    kind: Literal["propose"] = "propose"
    roles: Dict[int, str] = Field(min_length=1)


class Request(_Base):
    kind: Literal["request"] = "request"
    #: the seat asked (None: the recipient)
    seat: Optional[int] = None
    skill: str


class Accept(_Base):
    kind: Literal["accept"] = "accept"
    reply_to: int


class Decline(_Base):
    kind: Literal["decline"] = "decline"
    reply_to: int
    reason: str = ""


class Inform(_Base):
    kind: Literal["inform"] = "inform"
    holds: Optional[str] = None
    intends: Optional[str] = None
    #: the goal the sender says is active (a goal name of the layout: an OvercookedV2 recipe, ``0-0-1``)
    goal: Optional[str] = None


class Say(_Base):
    kind: Literal["say"] = "say"
    #: the typed message the words stand for (its JSON form, without sender, step and id): logged for
    #: scoring how well listeners read, stripped by the channel before delivery
    means: Optional[Dict[str, Any]] = None


Message = Annotated[Union[Propose, Request, Accept, Decline, Inform, Say], Field(discriminator="kind")]
MESSAGE = TypeAdapter(Message)


def parse_message(data: Any) -> Message:
    """A message from its JSON form (a :class:`pydantic.ValidationError` when it is not one)."""
    return MESSAGE.validate_python(data)


def meant(msg: Message) -> Message:
    """The typed message a message stands for: a ``say`` with ``means``, as that typed message (with
    the say's sender, step, id and words); any other message as it is."""
    if isinstance(msg, Say) and msg.means is not None:
        return parse_message({**msg.means, "sender": msg.sender, "t": msg.t, "id": msg.id, "text": msg.text})
    return msg


def request_seat(msg: Request) -> int:
    """The seat a request asks (its ``seat``, else its recipient; -1 when neither is set)."""
    if msg.seat is not None:
        return msg.seat
    return msg.to if msg.to is not None else -1


@runtime_checkable
class Talks(Protocol):
    """An agent that hears and sends messages (both methods; an agent lacking one ignores the channel)."""

    def hear(self, messages: Sequence[Message]) -> None: ...

    def messages_out(self) -> Sequence[Any]: ...


class Outbox:
    """A seat whose messages come from outside the episode (a person on the play page): :meth:`put`
    queues a raw message (the channel checks it when the seat speaks), at most ``limit`` waiting
    (:meth:`put` is False beyond that); :meth:`hear` keeps what was delivered to the seat."""

    def __init__(self, limit: int = 3):
        self.limit = int(limit)
        self.waiting: List[Any] = []
        self.heard: List[Message] = []

    def put(self, raw: Any) -> bool:
        if len(self.waiting) >= self.limit:
            return False
        self.waiting.append(raw)
        return True

    def hear(self, messages: Sequence[Message]) -> None:
        self.heard = list(messages)

    def messages_out(self) -> List[Any]:
        out, self.waiting = self.waiting, []
        return out


class ChannelRules(CheckedModel):
    """The channel's settings: the budget per player per episode and the longest ``text``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    budget: int = Field(40, ge=0, le=100_000, description="messages each player may send per episode")
    max_text: int = Field(200, ge=0, le=10_000, description="the longest free text of a message, in characters")


class Refusal(BaseModel):
    """A message the channel refused: who sent it, at which step, why, and what it was."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sender: int
    t: int
    reason: str
    detail: str = ""


class StepMessages(BaseModel):
    """The channel's part of one logged step: the messages sent (delivered at the next step) and
    the refusals."""

    model_config = ConfigDict(extra="forbid")

    sent: List[Message] = []
    refused: List[Refusal] = []


class Channel:
    """One episode's message channel among ``players`` seats (module docstring).

    ``skills`` and ``roles`` are the vocabulary (the layout's skill library), ``goals`` the goal
    names an ``inform`` may claim (the domain's :meth:`goal_names`; none where it names none). Per step: the
    runner calls :meth:`deliver` for each seat before the agents act, then :meth:`send` with each
    seat's outgoing messages after they act, then :meth:`end_step`.
    """

    def __init__(self, players: int, skills: Sequence[str], roles: Sequence[str],
                 rules: Optional[ChannelRules] = None, goals: Sequence[str] = ()):
        self.players = int(players)
        self.skills = frozenset(skills)
        self.roles = frozenset(roles)
        self.goals = frozenset(goals)
        self.rules = rules or ChannelRules()
        self.log: List[Message] = []  # every sent message, by id
        self.spent = [0] * self.players
        self.refusals: Counter = Counter()
        self.refusals_by_seat: List[Counter] = [Counter() for _ in range(self.players)]
        self._pending: List[Message] = []  # sent this step, delivered at the next
        self._inbox: List[Message] = []    # delivered this step
        self._step = StepMessages()

    # ------------------------------------------------------------------ per step
    def deliver(self, seat: int) -> List[Message]:
        """The messages delivered to ``seat`` this step (sent at the last step by others, to it or to all)."""
        return [m.model_copy(update={"means": None}) if isinstance(m, Say) else m
                for m in self._inbox if m.sender != seat and (m.to is None or m.to == seat)]

    def send(self, seat: int, t: int, outgoing: Sequence[Any]) -> Optional[Message]:
        """Take ``seat``'s outgoing messages of step ``t``: the first valid one is sent (and returned,
        stamped with sender, step and id), the rest refused."""
        sent_now = None
        for raw in outgoing or ():
            if sent_now:
                self._refuse(seat, t, "one_per_step", self._kind_of(raw))
                continue
            msg, why, detail = self._check(seat, raw)
            if msg is None:
                self._refuse(seat, t, why, detail)
                continue
            if self.spent[seat] >= self.rules.budget:
                self._refuse(seat, t, "over_budget", f"{msg.kind}: budget {self.rules.budget} spent")
                continue
            msg = msg.model_copy(update={"sender": seat, "t": t, "id": len(self.log)})
            self.log.append(msg)
            self.spent[seat] += 1
            self._pending.append(msg)
            self._step.sent.append(msg)
            sent_now = msg
        return sent_now

    def end_step(self) -> Optional[StepMessages]:
        """Close the step: what it logs (None when nothing was sent or refused); the messages sent
        become the next step's deliveries."""
        out = self._step if (self._step.sent or self._step.refused) else None
        self._inbox, self._pending = self._pending, []
        self._step = StepMessages()
        return out

    # ------------------------------------------------------------------ checks
    @staticmethod
    def _kind_of(raw: Any) -> str:
        kind = getattr(raw, "kind", None) if not isinstance(raw, dict) else raw.get("kind")
        return str(kind) if kind is not None else type(raw).__name__

    def _check(self, seat: int, raw: Any) -> Tuple[Optional[Message], str, str]:
        try:
            msg = parse_message(raw.model_dump() if isinstance(raw, BaseModel) else raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            return None, "malformed", f"{'.'.join(map(str, err['loc']))}: {err['msg']}"
        seats = range(self.players)
        if msg.to is not None and (msg.to not in seats or msg.to == seat):
            return None, "unknown_seat", f"{msg.kind} to seat {msg.to}"
        if len(msg.text) > self.rules.max_text:
            return None, "too_long", f"{msg.kind}: text of {len(msg.text)} > {self.rules.max_text} characters"
        if isinstance(msg, Say):
            if not msg.text.strip():
                return None, "empty", "say: no words"
            if msg.means is None:
                return msg, "", ""
            if msg.means.get("kind") == "say":
                return None, "malformed", "say: means another say"
            meant, why, detail = self._check(seat, {**msg.means, "to": msg.to})
            return (msg, "", "") if meant is not None else (None, why, f"say means {detail}")
        if isinstance(msg, Propose):
            bad = [s for s in msg.roles if s not in seats]
            if bad:
                return None, "unknown_seat", f"propose: seat {bad[0]}"
            bad_roles = [r for r in msg.roles.values() if r not in self.roles]
            if bad_roles:
                return None, "unknown_role", f"propose: role {bad_roles[0]!r}"
        elif isinstance(msg, Request):
            asked = request_seat(msg)
            if asked not in seats or asked == seat:
                return None, "unknown_seat", f"request for seat {asked}"
            if msg.skill not in self.skills:
                return None, "unknown_skill", f"request: skill {msg.skill!r}"
        elif isinstance(msg, (Accept, Decline)):
            if not 0 <= msg.reply_to < len(self.log) or self.log[msg.reply_to].sender == seat:
                return None, "unknown_reply", f"{msg.kind}: no message {msg.reply_to} to answer"
        elif isinstance(msg, Inform):
            if msg.intends is not None and msg.intends not in self.skills:
                return None, "unknown_skill", f"inform: intends {msg.intends!r}"
            if msg.goal is not None and msg.goal not in self.goals:
                return None, "unknown_goal", f"inform: goal {msg.goal!r}"
        return msg, "", ""

    def _refuse(self, seat: int, t: int, reason: str, detail: str) -> None:
        self.refusals[reason] += 1
        self.refusals_by_seat[seat][reason] += 1
        self._step.refused.append(Refusal(sender=seat, t=t, reason=reason, detail=detail[:200]))

    # ------------------------------------------------------------------ summary
    def summary(self) -> Dict[str, Any]:
        """The episode's message counts: sent (total, per seat, per kind), refused (per reason, per seat), budget."""
        return {
            "sent": len(self.log),
            "sent_by_seat": list(self.spent),
            "by_kind": dict(Counter(m.kind for m in self.log)),
            "refused": sum(self.refusals.values()),
            "refused_by_reason": dict(self.refusals),
            "refused_by_seat": [dict(c) for c in self.refusals_by_seat],
            "budget": self.rules.budget,
        }


def message_line(msg: Message) -> str:
    """One short human-readable line for a message (the report's tooltip)."""
    head = f"#{msg.id} {msg.sender}" + ("" if msg.to is None else f"->{msg.to}") + f" {msg.kind}"
    if isinstance(msg, Propose):
        body = ", ".join(f"{s}: {r}" for s, r in sorted(msg.roles.items()))
    elif isinstance(msg, Request):
        body = f"seat {request_seat(msg)}: {msg.skill}"
    elif isinstance(msg, (Accept, Decline)):
        body = f"#{msg.reply_to}" + (f" ({msg.reason})" if isinstance(msg, Decline) and msg.reason else "")
    elif isinstance(msg, Say):
        body = "" if msg.means is None else f"[{message_line(meant(msg).model_copy(update={'text': ''}))}]"
    else:
        body = ", ".join(x for x in (f"holds {msg.holds}" if msg.holds else "",
                                     f"intends {msg.intends}" if msg.intends else "",
                                     f"goal {msg.goal}" if msg.goal else "") if x)
    return head + (f" {body}" if body else "") + (f' "{msg.text}"' if msg.text else "")
