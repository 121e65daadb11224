"""Scripted partners that talk: the ``talk:`` block of a partner file and its behaviour.

::

    talk:
      propose: {self: plating, others: ingredient}   # the role split it proposes (library roles)
      at: 1            # the step of its first proposal
      repeat: 60       # proposes again every 60 steps until someone accepts (0: once)
      follow: 0.8      # the probability that it follows a request for its seat
      patience: 30     # a followed request is given up after this many steps without a chance to start it

The partner *keeps* the split when its styles match it (the file's business: a plating style
for ``self: plating``) and *breaks* it when a switch moves it to another style; it never
announces a switch. A request for its seat is followed with probability ``follow`` (a seeded
draw on its own random stream, so talking changes no other draw): it answers ``accept`` and
starts the requested skill at its next choice point where it can (``decline`` otherwise). A
proposal that gives its seat its own role is accepted, any other declined (its convention).
Each step's decisions on requests are logged in its info (``talk``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from beliefgate.envs.messages import Accept, Decline, Message, Propose, Request, request_seat

#: the stream of a talking partner's own draws (follow or not), apart from its behaviour's stream
TALK_STREAM = 7919


class TalkSpec(BaseModel):
    """A scripted partner's talk settings (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    propose: Optional[Dict[str, str]] = Field(None, description=(
        "the role split it proposes: {self: ROLE, others: ROLE} (roles of the overcooked skill library)"))
    at: int = Field(1, ge=0, description="the step of its first proposal")
    repeat: int = Field(0, ge=0, description="propose again every this many steps until accepted (0: once)")
    follow: float = Field(0.0, ge=0.0, le=1.0, description="probability of following a request for its seat")
    patience: int = Field(30, ge=1, description="steps a followed request waits for a chance to start")

    @field_validator("propose")
    @classmethod
    def _propose(cls, v: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
        if v is None:
            return v
        from beliefgate.skills import load_builtin

        roles = load_builtin("overcooked").roles
        if set(v) - {"self", "others"} or "self" not in v:
            raise ValueError(f"propose takes the keys self (required) and others, got {sorted(v)}")
        for who, role in v.items():
            if role not in roles:
                raise ValueError(f"propose.{who}: {role!r} is not a role of the overcooked library ({', '.join(roles)})")
        return v


class TalkingMixin:
    """The talk behaviour of a scripted partner (mixed before :class:`ScriptedAgent`)."""

    def reset(self, layout: str, player: int, seed: int) -> None:
        super().reset(layout, player, seed)
        self.talk: TalkSpec = self.spec.talk
        self.talk_rng = np.random.default_rng([seed, TALK_STREAM])
        self._t = -1
        self._players = 0
        self._replies: List[Message] = []
        self._proposal_id: Optional[int] = None
        self._proposal_t: Optional[int] = None
        self.agreed = False
        #: the request being followed: (skill, step it was heard)
        self.following: Optional[tuple] = None
        self.requests = 0
        self.followed = 0
        self._heard: List[Dict[str, Any]] = []

    # ------------------------------------------------------------------ the protocol
    def hear(self, messages: Sequence[Message]) -> None:
        for msg in messages:
            if isinstance(msg, Request) and request_seat(msg) == self.player:
                self.requests += 1
                follow = bool(self.talk_rng.random() < self.talk.follow)
                self._heard.append({"id": msg.id, "kind": "request", "skill": msg.skill, "follow": follow})
                if follow:
                    self.followed += 1
                    self.following = (msg.skill, msg.t + 1)
                    self._replies.append(Accept(reply_to=msg.id, to=msg.sender))
                else:
                    self._replies.append(Decline(reply_to=msg.id, to=msg.sender, reason="not now"))
            elif isinstance(msg, Propose) and self.player in msg.roles:
                mine = (self.talk.propose or {}).get("self")
                ok = mine is None or msg.roles[self.player] == mine
                self._heard.append({"id": msg.id, "kind": "propose", "accept": ok})
                self._replies.append(Accept(reply_to=msg.id, to=msg.sender) if ok else
                                     Decline(reply_to=msg.id, to=msg.sender, reason=f"I do {mine}"))
                self.agreed = self.agreed or ok
            elif isinstance(msg, Accept) and self._proposal_id is not None and msg.reply_to == self._proposal_id:
                self.agreed = True

    def messages_out(self) -> List[Message]:
        t = self._t
        spec = self.talk
        if spec.propose is not None and not self.agreed and t >= spec.at and (
                self._proposal_t is None or (spec.repeat and t - self._proposal_t >= spec.repeat)):
            self._proposal_t = t
            roles = {s: spec.propose["others"] for s in range(self._players)
                     if s != self.player and "others" in spec.propose}
            roles[self.player] = spec.propose["self"]
            return [Propose(roles=roles)]
        if self._replies:
            return [self._replies.pop(0)]
        return []

    def on_sent(self, msg: Message) -> None:
        """The channel sent ``msg`` (stamped with its id): remember the proposal's id for the answers."""
        if isinstance(msg, Propose):
            self._proposal_id = msg.id

    # ------------------------------------------------------------------ behaviour
    def act(self, state, my_events: Sequence[str] = ()) -> int:
        self._t = int(state.timestep)
        self._players = len(state.players)
        if self.following is not None and (self._t - self.following[1] > self.talk.patience
                                           or self.following[0] == self.active_skill):
            self.following = None  # given up, or it is doing what was asked already
        return super().act(state, my_events)

    def _choose(self, state) -> None:
        if self.following is not None:
            skill = self.following[0]
            if self._start(skill, state):
                self.following = None
                return
        super()._choose(state)

    def info(self) -> Dict[str, object]:
        out = dict(super().info())
        out["talk"] = {"requests": self.requests, "followed": self.followed, "agreed": self.agreed,
                       "following": None if self.following is None else self.following[0], "heard": self._heard}
        self._heard = []
        return out
