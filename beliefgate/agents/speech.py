"""Talk in words: an agent with a model writes its messages as sentences and reads teammates' sentences.

An offline agent talks in the channel's typed form (:mod:`beliefgate.envs.messages`). An agent
built with a model (``overforge:llm``, ``flat`` with ``--llm-base-url``) talks in words instead:

* **writing** (:meth:`Speech.to_words`): each typed message the agent would send is phrased by
  the model as one short sentence (prompt files ``speak_system.txt`` / ``speak_user.txt`` beside
  this module, answer ``{"say": ...}``) and sent as a :class:`~beliefgate.envs.messages.Say`
  whose ``means`` keeps the typed form for the log (the channel delivers only the words). A call
  without a usable sentence -- server down, empty, longer than the channel allows -- falls back
  to a fixed sentence made from the typed form (:func:`template_words`), recorded as a ``speak``
  fallback.
* **reading** (:meth:`Speech.from_words`): each heard ``say`` is parsed by the model into the
  typed form (``read_system.txt`` / ``read_user.txt``, the answer constrained by a JSON schema
  whose enums are the layout's kinds, seats, roles, skills and goals) and checked against that
  vocabulary; an ``accept`` or ``decline`` answers the reader's latest unanswered proposal or
  request to the speaker. A sentence the model cannot turn into a valid message is dropped,
  recorded as a ``read`` fallback. Typed messages pass through unchanged.

What was read is logged per step (``speech.reads``: the ``say`` id and the typed form it was read
as, or None), so :func:`beliefgate.eval.social.speech_accuracy` can score reading against the
speaker's ``means``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from pydantic import ValidationError

from beliefgate.envs.messages import (Accept, ChannelRules, Decline, Inform, Message, Propose, Request, Say,
                                      meant, parse_message, request_seat)
from beliefgate.planners.errors import ModelOutputError
from beliefgate.planners.parse import _json_object
from beliefgate.planners.prompts import render_from

#: the longest sentence the agent sends (the channel's default ``max_text``)
MAX_WORDS_CHARS = ChannelRules().max_text
SPEAK_SCHEMA = {"type": "object", "properties": {"say": {"type": "string"}}, "required": ["say"]}
#: the kinds a sentence can be read as, in the order the reading prompt lists them
READ_KINDS = ("propose", "request", "accept", "decline", "inform")


def render(name: str, **fields: str) -> str:
    return render_from("beliefgate.agents", name, **fields)


def _who(seat: int, me: int) -> str:
    return "I" if seat == me else f"player {seat}"


def _split_words(roles: Dict[int, str], me: int) -> str:
    return ", ".join(f"{_who(s, me)} take{'' if s == me else 's'} {r}" for s, r in sorted(roles.items()))


def template_words(msg: Message, me: int, answered: Optional[Message] = None) -> str:
    """A fixed sentence for a typed message of seat ``me`` (the writing fallback; also the example
    the speaking prompt shows). An answer restates what it answers when that is known (``answered``),
    so a listener with two open questions can tell which one it answers."""
    if isinstance(msg, Propose):
        return "Let's split the work: " + _split_words(msg.roles, me) + "."
    if isinstance(msg, Request):
        return f"Player {request_seat(msg)}, please do {msg.skill}."
    if isinstance(msg, (Accept, Decline)):
        why = f": {msg.reason}" if isinstance(msg, Decline) and msg.reason else ""
        if isinstance(answered, Request):
            return (f"OK, I'll do {answered.skill}." if isinstance(msg, Accept) else
                    f"No, I won't do {answered.skill}{why}.")
        split = _split_words(answered.roles, me) if isinstance(answered, Propose) else ""
        if isinstance(msg, Accept):
            return "OK, agreed" + (f": {split}." if split else ".")
        return "No" + (f" to {split}" if split else "") + f"{why}."
    if isinstance(msg, Inform):
        bits = ([f"the recipe is {msg.goal}"] if msg.goal else []) + (
            [f"I hold {msg.holds}"] if msg.holds else []) + ([f"I will {msg.intends}"] if msg.intends else [])
        return ("; ".join(bits) or "nothing to report").capitalize() + "."
    return ""


def meaning(msg: Message, me: int, answered: Optional[Message] = None) -> str:
    """What a typed message says, in a line for the speaking prompt."""
    if isinstance(msg, Propose):
        return "propose this division of roles: " + "; ".join(
            f"{_who(s, me)} {'take' if s == me else 'takes'} the role {r}" for s, r in sorted(msg.roles.items()))
    if isinstance(msg, Request):
        return f"ask player {request_seat(msg)} to do the task {msg.skill}"
    if isinstance(msg, (Accept, Decline)):
        what = ("their last proposal or request" if answered is None else
                f"their {answered.kind} ({_brief(answered, me)})")
        verb = "agree to" if isinstance(msg, Accept) else "refuse"
        why = f", because: {msg.reason}" if isinstance(msg, Decline) and msg.reason else ""
        return f"{verb} {what}{why}"
    return "tell them: " + template_words(msg, me).rstrip(".").lower()


def _brief(msg: Message, me: int) -> str:
    if isinstance(msg, Propose):
        return _split_words(msg.roles, me)
    if isinstance(msg, Request):
        return f"{_who(request_seat(msg), me)} {'do' if request_seat(msg) == me else 'does'} {msg.skill}"
    return msg.kind


class Vocabulary:
    """The names a read message may use: seats, roles, skills (with descriptions) and goals."""

    def __init__(self, players: int, library, goals: Sequence[str] = ()):
        self.players = int(players)
        self.roles = tuple(library.roles)
        self.skills = tuple(library.names)
        self.goals = tuple(goals)
        self.library = library

    def listing(self) -> str:
        lines = ["Roles (each is a group of tasks):"]
        for r in self.roles:
            lines.append(f"- {r}: " + ", ".join(s.name for s in self.library.skills if s.role == r))
        lines.append("Tasks:")
        lines += [f"- {s.name}: {s.description}" for s in self.library.skills]
        if self.goals:
            lines.append("Recipes (ingredient numbers of the three in the dish): " + ", ".join(self.goals))
        return "\n".join(lines)

    def schema(self, open_ids: Sequence[int] = ()) -> Dict[str, Any]:
        """The reading's JSON schema: one branch per kind, each with the fields that kind needs (enums
        of the layout's names; an answer may name one of the reader's open messages in ``reply_to``)."""
        seats = [str(s) for s in range(self.players)]

        def kind(name: str, props: Dict[str, Any], required: Sequence[str] = ()) -> Dict[str, Any]:
            return {"type": "object", "properties": {"kind": {"type": "string", "enum": [name]}, **props},
                    "required": ["kind", *required]}

        skill = {"type": "string", "enum": list(self.skills)}
        answer = {"reply_to": {"type": "integer", "enum": [int(i) for i in open_ids]}} if open_ids else {}
        inform = {"intends": skill}
        if self.goals:
            inform = {"goal": {"type": "string", "enum": list(self.goals)}, **inform}
        return {"anyOf": [
            kind("propose", {"roles": {"type": "object", "minProperties": 1,
                                       "properties": {s: {"type": "string", "enum": list(self.roles)} for s in seats}}},
                 ["roles"]),
            kind("request", {"skill": skill, "seat": {"type": "integer", "enum": list(range(self.players))}},
                 ["skill", "seat"]),
            kind("accept", answer),
            kind("decline", answer),
            kind("inform", inform),
        ]}


class Speech:
    """One agent's words (module docstring); :meth:`reset` at each episode."""

    def __init__(self, agent, client):
        self.agent = agent
        self.client = client
        self.vocabulary: Optional[Vocabulary] = None
        self.reset()

    def reset(self) -> None:
        self.mine: Dict[int, Message] = {}          # the agent's sent typed messages, by id
        self.answered: set = set()                  # ids of the agent's messages a teammate answered
        self.heard: Dict[int, Message] = {}         # teammates' messages as read, by id
        self.counts = {"said": 0, "said_by_template": 0, "read": 0, "unreadable": 0}
        self.reads: List[Dict[str, Any]] = []       # this step's reads (drained into the step info)

    def start(self, players: int, library, goals: Sequence[str]) -> None:
        """A new episode: nothing said or heard yet, and the layout's names."""
        self.reset()
        self.vocabulary = Vocabulary(players, library, goals)

    # ------------------------------------------------------------------ writing
    def to_words(self, outgoing: Sequence[Any]) -> List[Any]:
        """The agent's outgoing typed messages as ``say`` messages (each phrased by the model, or by the
        template on a counted fallback)."""
        out = []
        for msg in outgoing:
            if isinstance(msg, Say):
                out.append(msg)
                continue
            me = self.agent.player
            answered = self.heard.get(msg.reply_to) if isinstance(msg, (Accept, Decline)) else None
            to_line = "You speak to everyone." if msg.to is None else f"You speak to player {msg.to}."
            messages = [{"role": "system", "content": render("speak_system")},
                        {"role": "user", "content": render("speak_user", me=str(me), to_line=to_line,
                                                           meaning=meaning(msg, me, answered),
                                                           example=template_words(msg, me, answered))}]
            asked = self.agent.ask_model(self.client, messages, parse_sentence, role="speak",
                                         output_schema=SPEAK_SCHEMA)
            words = asked.value
            if words is None:
                words = template_words(msg, me, answered)
                self.counts["said_by_template"] += 1
            self.counts["said"] += 1
            out.append(Say(to=msg.to, text=words, means=msg.model_dump(exclude={"sender", "t", "id"})))
        return out

    def sent(self, message: Message) -> Message:
        """The typed message behind a sent ``say`` (stamped with the channel's sender, step and id);
        a typed message is returned as it is."""
        typed = meant(message)
        self.mine[typed.id] = typed
        return typed

    # ------------------------------------------------------------------ reading
    def from_words(self, messages: Sequence[Message]) -> List[Message]:
        """The heard messages in typed form: typed ones as they are, each ``say`` as the model reads it
        (dropped, and counted, when it reads as nothing valid)."""
        out = []
        for msg in messages:
            if not isinstance(msg, Say):
                self._note_heard(msg)
                out.append(msg)
                continue
            typed = self.read(msg)
            self.reads.append({"id": msg.id, "as": None if typed is None else typed.model_dump(
                exclude={"sender", "t", "id", "text"}, exclude_none=True)})
            if typed is None:
                self.counts["unreadable"] += 1
                continue
            self.counts["read"] += 1
            self._note_heard(typed)
            out.append(typed)
        return out

    def read(self, say: Say) -> Optional[Message]:
        """One sentence as a typed message (None: a counted ``read`` fallback)."""
        me = self.agent.player
        vocab = self.vocabulary
        messages = [{"role": "system", "content": render("read_system", me=str(me))},
                    {"role": "user", "content": render("read_user", me=str(me), speaker=str(say.sender),
                                                       listing=vocab.listing(), pending=self._pending_lines(say.sender),
                                                       words=say.text)}]
        open_ids = [m.id for m in self._open(say.sender)]
        asked = self.agent.ask_model(self.client, messages, lambda reply: self.parse_read(reply, say),
                                     role="read", output_schema=vocab.schema(open_ids))
        return asked.value

    def parse_read(self, reply: str, say: Say) -> Message:
        """A model's reading of ``say`` as a valid typed message (:class:`ModelOutputError` if it is not one)."""
        obj = _json_object(reply or "")
        if not obj:
            raise ModelOutputError("the reply is not a JSON object", reply)
        kind = str(obj.get("kind", "")).strip().lower()
        me, vocab = self.agent.player, self.vocabulary
        base = {"sender": say.sender, "t": say.t, "id": say.id, "to": say.to, "text": say.text}
        if kind == "propose":
            roles = obj.get("roles") if isinstance(obj.get("roles"), dict) else {}
            try:
                split = {int(s): str(r) for s, r in roles.items()}
            except (TypeError, ValueError):
                raise ModelOutputError(f"roles {roles!r} are not keyed by seat", reply) from None
            split = {s: r for s, r in split.items() if r}
            if not split or any(s not in range(vocab.players) for s in split) or any(
                    r not in vocab.roles for r in split.values()):
                raise ModelOutputError(f"roles {roles!r} are not a split of the layout's seats and roles", reply)
            data = {**base, "kind": "propose", "roles": split}
        elif kind == "request":
            skill = obj.get("skill")
            seat = obj.get("seat", me)
            if skill not in vocab.skills or not isinstance(seat, int) or seat not in range(vocab.players) \
                    or seat == say.sender:
                raise ModelOutputError(f"request of {skill!r} for seat {seat!r} names no task of another seat", reply)
            data = {**base, "kind": "request", "skill": skill, "seat": seat}
        elif kind in ("accept", "decline"):
            waiting = self._open(say.sender)
            if not waiting:
                raise ModelOutputError(f"an {kind} of nothing: no proposal or request of mine awaits player "
                                       f"{say.sender}", reply)
            chosen = [m for m in waiting if m.id == obj.get("reply_to")]
            data = {**base, "kind": kind, "reply_to": (chosen or waiting)[0].id}
        elif kind == "inform":
            goal, intends = obj.get("goal"), obj.get("intends")
            goal = goal if goal in vocab.goals else None
            intends = intends if intends in vocab.skills else None
            if goal is None and intends is None:
                raise ModelOutputError("an inform that names no recipe or task of the layout", reply)
            data = {**base, "kind": "inform", "goal": goal, "intends": intends}
        else:
            raise ModelOutputError(f"kind {kind!r} is not one of {', '.join(READ_KINDS)}", reply)
        try:
            return parse_message(data)
        except ValidationError as exc:
            raise ModelOutputError(f"not a message: {exc.errors()[0]['msg']}", reply) from None

    def _note_heard(self, msg: Message) -> None:
        self.heard[msg.id] = msg
        if isinstance(msg, (Accept, Decline)):
            self.answered.add(msg.reply_to)

    def _open(self, speaker: int) -> List[Message]:
        """The agent's proposals and requests to ``speaker`` (or to all) that nobody answered yet, latest first."""
        return [self.mine[i] for i in sorted(self.mine, reverse=True)
                if isinstance(self.mine[i], (Propose, Request)) and i not in self.answered
                and self.mine[i].to in (None, speaker)]

    def _pending_lines(self, speaker: int) -> str:
        waiting = self._open(speaker)
        if not waiting:
            return "Nothing of yours awaits an answer from them."
        me = self.agent.player
        return "Your messages awaiting their answer (an accept or decline names one in \"reply_to\"):\n" + "\n".join(
            f"- {m.id}: your {m.kind}: {_brief(m, me)}" for m in waiting)

    def info(self) -> Dict[str, Any]:
        reads, self.reads = self.reads, []
        return {**self.counts, "reads": reads}


def parse_sentence(reply: str) -> str:
    """The sentence of a speaking reply (``{"say": ...}`` or plain text): one line, non-empty, short enough."""
    obj = _json_object(reply or "")
    text = str(obj.get("say", "")) if obj else (reply or "")
    text = " ".join(text.split())
    if not text:
        raise ModelOutputError("an empty sentence", reply)
    if len(text) > MAX_WORDS_CHARS:
        raise ModelOutputError(f"a sentence of {len(text)} characters (at most {MAX_WORDS_CHARS})", reply)
    return text
