"""``beliefgate play``: a person plays one chef with the keyboard beside an agent.

A FastAPI app serves one page (``GET /``: ``assets/play.html`` with the kitchen drawing
inlined) and one WebSocket (``/ws``). Each WebSocket connection is one *session*: its own
episode (:class:`PlayGame`: the real dynamics of the layout's domain through
``Domain.make_env``, the agent built by
:func:`~beliefgate.agents.registry.make_agent`) and its own trajectory log, in the same
JSONL format as every other episode (:mod:`beliefgate.envs.trajlog`), so ``read_log``,
``beliefgate fit`` and ``beliefgate report`` read it. Nothing is shared between sessions
but the session table.

Seats: the person takes ``human_seat``, the agent the first other seat, and on a layout with more
players every remaining seat is played by ``third`` (a partner or agent name; default the domain's
``default_partner``), made and stepped like the episode runner's players. The log names every
seat (``agents``) and the agent's teammates in seat order (``partner``, ``+``-joined as an
episode's), so a three-player game is an ordinary three-player log.

Protocol (JSON text messages):

* client → server: ``{"type": "key", "action": "north|south|east|west|stay|interact"}``,
  ``{"type": "say", "message": {...}}`` (a typed message, :mod:`beliefgate.envs.messages`),
  ``{"type": "end"}``. A message longer than ``max_message_bytes``, not JSON, or not one of
  these is answered ``{"type": "error", "error": "oversized|malformed", "detail": ...}``,
  counted in the episode summary (``rejected``), and the game goes on.
* server → client: ``hello`` (layout, skill names, seats (``seats``: who plays each, with the chef's label),
  tick rate, the log's file name, first frame),
  ``state`` once per tick (frame, the agent's belief about the person, its skill, MAP and
  replan reason; ``others``: the third players' skills by seat; ``heard``: the messages delivered to the
  person; ``said``: the step's channel entry), ``done`` (summary and the log's file name, None when no step
  was played), ``error``.

Messages: the person's seat is an :class:`~beliefgate.envs.messages.Outbox`; the game runs the
episode runner's channel (``open_channel``, ``hear_all``, ``speak_all`` of
:mod:`beliefgate.eval.episode`), so a ``say`` is checked by the channel's rules at the next tick
(a refusal is in ``said.refused`` and counted, never an ``error``), delivered to the agent the step
after, and logged in the step row like an episode's.

Only local pages: requests whose ``Host`` is not a local name get 400 and a WebSocket from another
origin is refused before it takes a slot (:class:`LocalOnly`); the log is created on the first step.

Timing: the clock starts with the person's first key; then the server steps the game
``tick_hz`` times a second. Each tick takes the oldest queued key of the person (at most
``queue`` keys wait; more are dropped and counted) or STAY when none is waiting (counted
as ``idle_ticks``); a tick that starts more than one period late is counted in
``late_ticks`` and the schedule restarts from now (no burst of catch-up steps).

The episode ends at the horizon, on ``{"type": "end"}``, or when the connection closes (the
tab was closed): the log then gets its final row with ``ended`` = ``horizon``, ``player``
or ``disconnected`` and is complete.
"""


import asyncio
import itertools
import json
import logging
import re
import secrets
import time
from collections import deque
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Deque, Dict, List, Literal, Optional, Union

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError, ValidationInfo,
                      field_validator, model_validator)

from beliefgate.errors import BeliefgateError, InputError, RuntimeFailure
from beliefgate.limits import MAX_TICK_HZ, MIN_TICK_HZ
from beliefgate.validation import CheckedModel, describe

log = logging.getLogger("beliefgate.play")

ACTION_NAMES = ("north", "south", "east", "west", "stay", "interact")
STAY = ACTION_NAMES.index("stay")
#: default limit of one client message (bytes); keys are ~40 bytes
DEFAULT_MAX_MESSAGE_BYTES = 512
#: a WebSocket frame above this is refused by the protocol layer (uvicorn), which closes the
#: connection; everything between ``max_message_bytes`` and this is rejected by the game
WS_MAX_SIZE = 16 * 1024 * 1024
#: where the sessions' logs go by default (a directory: one file per session)
DEFAULT_LOG = "play-logs/"


class PlaySettingsError(InputError):
    """A bad ``beliefgate play`` setting (tick rate, horizon, seat, ...)."""


class PlayMessageError(InputError):
    """A client message the game rejects; ``kind`` is ``oversized`` or ``malformed``."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class GameOverError(InputError):
    """A step asked of a game that has ended."""


class PlayLogError(RuntimeFailure):
    """The session's log could not be opened or written."""


class PlaySettings(CheckedModel):
    """One play server: the kitchen, the agent, the clock and where logs go (frozen; a bad value
    raises :class:`PlaySettingsError` in one line naming the field and the value).

    ``layout`` is resolved to its canonical name. ``log``: a file path (the first session writes
    it; later sessions, or a path that already exists, get ``NAME-2.jsonl``, ``NAME-3.jsonl``, ...
    so no game overwrites another) or a directory (an existing one, or a path ending in ``/``;
    each session gets its own file there): :attr:`log_is_dir`, derived from ``log`` when built.
    """

    error_type = PlaySettingsError
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    layout: str = "cramped_room"
    agent: str = "bayes-belief"
    seed: int = Field(0, ge=0)
    tick_hz: float = Field(6.0, ge=MIN_TICK_HZ, le=MAX_TICK_HZ)
    horizon: int = Field(400, ge=1)
    #: the person's seat (0 .. players - 1 of the layout); the agent takes the first other seat
    human_seat: int = Field(1, ge=0)
    #: who plays every seat left after the person's and the agent's (three-player layouts): a partner
    #: or agent name, or a partner file; None: the domain's default partner (``Domain.default_partner``)
    third: Optional[str] = Field(None, min_length=1, max_length=500)
    log: Path = Path(DEFAULT_LOG)
    max_message_bytes: int = Field(DEFAULT_MAX_MESSAGE_BYTES, ge=64, le=65536)
    max_sessions: int = Field(4, ge=1)
    queue: int = Field(3, ge=1)
    #: a partner-memory store (docs/memory.md): the agent starts from what it remembers of the person
    #: (``human_name`` on this layout) and every session with a played step is added to it at its end
    memory: Optional[Path] = None
    human_name: str = Field("human", min_length=1, max_length=200)
    #: the layout's environment options (OvercookedV2: ``agent_view_size``, recipe sampling...), checked
    #: by its domain and written into every game's log header
    env_options: Dict[str, Any] = Field(default_factory=dict)
    _log_is_dir: bool = PrivateAttr(False)

    @field_validator("layout")
    @classmethod
    def _known_layout(cls, layout: str) -> str:
        from beliefgate.envs.domain import domain_for_layout

        domain = domain_for_layout(layout)  # an unknown layout: its LookupFailure, as everywhere
        layout = domain.resolve_layout(layout)
        if domain.players(layout) < 2:
            raise ValueError(f"the play page seats a person beside an agent: {layout} has 1 player")
        return layout

    @field_validator("human_seat")
    @classmethod
    def _seat_of_the_layout(cls, seat: int, info: ValidationInfo) -> int:
        # fields are checked in order: the layout (when it was valid) is known here
        players = _players(info.data.get("layout"))
        if players is not None and seat >= players:
            raise ValueError(f"{info.data['layout']} has {players} players (seats 0..{players - 1})")
        return seat

    @field_validator("third")
    @classmethod
    def _third_seat_exists(cls, third: Optional[str], info: ValidationInfo) -> Optional[str]:
        from beliefgate.envs.domain import domain_for_layout

        layout = info.data.get("layout")
        players = _players(layout)
        if third is None or players is None:
            return third
        if players == 2:
            raise ValueError(f"{layout} has 2 players (you and the agent): no seat is left for a third")
        why = domain_for_layout(layout).partner_restriction(third, layout)
        if why is not None:
            raise ValueError(f"it does not play {layout}: {why}")
        return third

    @model_validator(mode="after")
    def _options_fit_the_layout(self) -> "PlaySettings":
        from beliefgate.envs.domain import domain_for_layout

        if self.env_options:
            domain = domain_for_layout(self.layout)
            try:
                domain.check_env_options(self.layout, **self.env_options)
            except (InputError, TypeError) as exc:
                raise ValueError(f"env_options: {exc}") from None
        return self

    @field_validator("log", mode="before")
    @classmethod
    def _log_not_empty(cls, log: Any) -> Any:
        if isinstance(log, (str, Path)) and not str(log).strip():
            raise ValueError("log path must not be empty")
        return log

    @model_validator(mode="wrap")
    @classmethod
    def _derive_log_is_dir(cls, data: Any, handler) -> "PlaySettings":
        # the raw value is needed: Path("play-logs/") forgets the slash that makes it a directory
        given = data.get("log", DEFAULT_LOG) if isinstance(data, dict) else None
        settings = handler(data)
        if settings is not data:
            text = str(given if isinstance(given, (str, Path)) else settings.log)
            settings._log_is_dir = text.endswith(("/", "\\")) or settings.log.is_dir()
        return settings

    @property
    def log_is_dir(self) -> bool:
        """Whether ``log`` names a directory (a path ending in ``/``, or an existing directory when built)."""
        return self._log_is_dir

    @property
    def agent_seat(self) -> int:
        """The agent's seat: the first one that is not the person's."""
        return 1 if self.human_seat == 0 else 0

    def seat_names(self) -> List[str]:
        """Who plays each seat: ``human``, the agent, and the third player (the domain's default
        partner unless ``third`` names one) in every other seat."""
        from beliefgate.envs.domain import domain_for_layout

        domain = domain_for_layout(self.layout)
        third = self.third if self.third is not None else domain.default_partner()
        names = [third] * domain.players(self.layout)
        names[self.human_seat], names[self.agent_seat] = "human", self.agent
        return names


def _players(layout: Optional[str]) -> Optional[int]:
    """The player count of a checked layout (None when the layout itself was refused)."""
    from beliefgate.envs.domain import domain_for_layout

    return None if layout is None else domain_for_layout(layout).players(layout)


# --------------------------------------------------------------------------- messages
class KeyMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["key"]
    action: Literal["north", "south", "east", "west", "stay", "interact"]


class EndMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["end"]


class SayMessage(BaseModel):
    """A message of the person to the agent: ``message`` is checked by the episode's message channel
    (:class:`~beliefgate.envs.messages.Channel`) when the person's seat speaks at the next tick, so a
    bad one is refused there, with its reason, like any player's."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["say"]
    message: Any


#: a client message, told apart by its ``type``
MESSAGE = TypeAdapter(Annotated[Union[KeyMessage, EndMessage, SayMessage], Field(discriminator="type")])


def parse_message(text: Optional[str], max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES):
    """One client message, validated; :class:`PlayMessageError` names what is wrong."""
    if text is None:
        raise PlayMessageError("malformed", "binary frames are not accepted; send JSON text")
    if len(text) > max_bytes or len(text.encode("utf-8")) > max_bytes:
        raise PlayMessageError("oversized", f"message of {len(text.encode('utf-8'))} bytes exceeds {max_bytes}")
    try:
        return MESSAGE.validate_json(text)
    except ValidationError as exc:
        raise PlayMessageError("malformed", describe(exc, "message").message) from None


# --------------------------------------------------------------------------- logs
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")


def session_log_path(settings: PlaySettings, number: int, session: str) -> Path:
    """Where session ``number`` (1-based) writes its log; never an existing file."""
    target = settings.log
    if settings.log_is_dir or target.is_dir():
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        layout = _SLUG.sub("_", settings.layout)   # v2/... would be a folder
        name = f"play-{layout}-{_SLUG.sub('_', settings.agent)}-seed{settings.seed}-{stamp}-{session}.jsonl"
        return target / name
    if number == 1 and not target.exists():
        return target
    k = max(2, number)
    while True:
        candidate = target.with_name(f"{target.stem}-{k}{target.suffix or '.jsonl'}")
        if not candidate.exists():
            return candidate
        k += 1


# --------------------------------------------------------------------------- the game
class PlayGame:
    """One session's episode: the agent in ``settings.agent_seat``, the person in ``settings.human_seat``
    and, on a layout with more players, ``settings.third`` in every other seat.

    Synchronous and free of I/O but its log, so it is tested without a server.
    """

    def __init__(self, settings: PlaySettings, log_path: Path, session: str = ""):
        import beliefgate
        from beliefgate.agents.registry import make_agent
        from beliefgate.envs.domain import domain_for_layout
        from beliefgate.envs.trajlog import LogHeader, LogWriter, Trajectory
        from beliefgate.envs.messages import Outbox
        from beliefgate.eval.episode import agent_seeds, open_channel, partner_label

        self.settings = settings
        self.session = session
        self.seat = settings.agent_seat
        self.human = settings.human_seat
        self.domain = domain_for_layout(settings.layout)
        self.env = self.domain.make_env(settings.layout, settings.horizon, old_dynamics=True, **settings.env_options)
        self.agent = make_agent(settings.agent, domain=self.domain)
        #: who plays each seat (``human``, the agent, the third player's name) and how many there are
        self.seat_names = settings.seat_names()
        self.players = len(self.seat_names)
        #: the seats neither the person's nor the agent's (three-player layouts): their agents by seat
        self.others: Dict[int, Any] = {i: make_agent(n, domain=self.domain)
                                       for i, n in enumerate(self.seat_names) if i not in (self.seat, self.human)}
        #: the partner memory of this session (None without ``settings.memory``)
        self.memory = None
        if settings.memory is not None:
            from beliefgate.agents.memory import MemorySession, MemoryUse

            seats = [settings.human_name if i == self.human else n for i, n in enumerate(self.seat_names)]
            self.memory = MemorySession(MemoryUse(str(settings.memory), scope="play"), settings.layout, seats,
                                        self.seat)
            self.agent.use_memory(self.memory)
        seeds = agent_seeds(settings.seed, self.players)
        self.agent.reset(settings.layout, self.seat, seeds[self.seat])
        for i, other in self.others.items():
            other.reset(settings.layout, i, seeds[i])
        library = self.domain.controller(settings.layout).library
        self.names = list(library.names)
        self.roles = list(library.roles)
        #: the goals a message may name (OvercookedV2's recipes; none in classic Overcooked)
        self.goals = list(self.domain.goal_names(settings.layout) or ())
        #: the person's messages (from the page's buttons) wait here until the next tick speaks them
        self.person = Outbox(settings.queue)
        players: List[Any] = [self.others.get(i) for i in range(self.players)]
        players[self.seat], players[self.human] = self.agent, self.person
        # the episode runner's channel: the person always talks, the others when they are Talks agents
        self.channel, self.talkers = open_channel(self.domain, settings.layout, players, True)
        #: the agent's teammates in seat order, as an episode names its partners (``human``, ``human+NAME``)
        self.partner = partner_label([n for i, n in enumerate(self.seat_names) if i != self.seat])
        self.header = LogHeader(
            layout=settings.layout, horizon=settings.horizon, seed=settings.seed, seat=self.seat,
            agents=list(self.seat_names), ego=settings.agent, partner=self.partner, version=beliefgate.__version__,
            config={**self.domain.env_options(old_dynamics=True, **settings.env_options),
                    "source": "beliefgate play", "session": session,
                    "human_seat": self.human, "tick_hz": settings.tick_hz, "queue": settings.queue,
                    "max_message_bytes": settings.max_message_bytes,
                    "messages": self.channel.rules.model_dump(mode="json")},
        )
        self.trajectory = Trajectory(self.header)
        self.log_path = Path(log_path)
        #: opened on the first step: a connection that never plays writes no file
        self.writer: Optional[LogWriter] = None
        # an environment that draws its own randomness (the V2 recipe) draws it from the game's seed
        self.state = self.env.reset(settings.seed) if getattr(self.env, "reset_takes_seed", False) else self.env.reset()
        self.events: List[List[str]] = [[] for _ in range(self.players)]
        self.pending: Deque[int] = deque()
        self.deliveries = 0
        self.idle_ticks = 0
        self.late_ticks = 0
        self.dropped_keys = 0
        self.dropped_says = 0
        #: this tick's channel entry (sent and refused) and what was delivered to the person
        self.said = None
        self.heard: List[Any] = []
        self.rejected: Dict[str, int] = {"oversized": 0, "malformed": 0}
        self.last_info: Dict[str, Any] = {}
        #: the skill each third player ran at the last step, by seat
        self.other_skills: Dict[int, Any] = {i: None for i in self.others}
        self.summary: Optional[Dict[str, Any]] = None
        self.started_at: Optional[float] = None

    # ------------------------------------------------------------------ input
    @property
    def t(self) -> int:
        return len(self.trajectory.steps)

    @property
    def finished(self) -> bool:
        return self.summary is not None

    def press(self, action: str) -> bool:
        """Queue one key of the person; False (and counted) when the queue is full."""
        if action not in ACTION_NAMES:
            raise PlayMessageError("malformed", f"unknown action {action!r}")
        if len(self.pending) >= self.settings.queue:
            self.dropped_keys += 1
            return False
        names = tuple(self.domain.action_names)  # the domain's index of the named move (V2: east is 0)
        self.pending.append(names.index(action) if action in names else ACTION_NAMES.index(action))
        return True

    def say(self, message: Any) -> bool:
        """Queue one message of the person (checked by the channel at the next tick); False (and
        counted in ``dropped_says``) when ``queue`` messages already wait."""
        if self.person.put(message):
            return True
        self.dropped_says += 1
        return False

    def reject(self, kind: str) -> None:
        self.rejected[kind] = self.rejected.get(kind, 0) + 1

    # ------------------------------------------------------------------ one tick
    def tick(self) -> Dict[str, Any]:
        """Advance one step (agent acts, the person's oldest queued key or STAY); the ``state`` message."""
        from beliefgate.envs.trajlog import StepRow

        if self.finished:
            raise GameOverError(f"session {self.session or '-'}: the episode is over ({self.summary['ended']})")
        if self.started_at is None:
            self.started_at = time.perf_counter()
        if self.writer is None:
            self._open_log()
        t = self.t
        if self.pending:
            human_action, source = self.pending.popleft(), "key"
        else:  # no key waiting: the person stays (counted)
            human_action, source = STAY, "idle"
            self.idle_ticks += 1
        from beliefgate.eval.episode import hear_all, speak_all

        self.heard = self.channel.deliver(self.human)
        hear_all(self.channel, self.talkers)
        actions = [STAY] * self.players
        infos: List[Dict[str, Any]] = [{} for _ in range(self.players)]
        for i in range(self.players):  # in seat order, as the episode runner asks its players
            if i == self.human:
                actions[i] = human_action
                infos[i] = {"skill": None, "input": source, "queued": len(self.pending)}
            else:
                player = self.agent if i == self.seat else self.others[i]
                actions[i] = int(player.act(self.state, self.events[i]))
                infos[i] = dict(player.info())
        agent_info = infos[self.seat]
        self.said = speak_all(self.channel, self.talkers, t)
        result = self.env.step(actions)
        row = StepRow(t=t, state=self.state, actions=actions, reward=result.reward, events=result.events,
                      skills=[i.get("skill") for i in infos], info=infos, messages=self.said)
        self.trajectory.steps.append(row)
        try:
            self.writer.step(row)
        except (OSError, ValueError) as exc:
            raise PlayLogError(f"cannot write play log {self.log_path}: {exc}") from exc
        self.events = result.events
        self.deliveries += sum(e.count(d) for e in result.events for d in self.domain.delivery_events)
        self.state = result.state
        self.last_info = agent_info
        self.other_skills = {i: infos[i].get("skill") for i in self.others}
        message = self.state_message(result.reward)
        if result.done or self.t >= self.settings.horizon:
            self.finish("horizon")
        return message

    def _open_log(self) -> None:
        from beliefgate.envs.trajlog import LogWriter

        try:
            self.writer = LogWriter(self.log_path, self.header)
        except OSError as exc:
            raise PlayLogError(f"cannot open play log {self.log_path}: {exc}") from exc

    @property
    def log_name(self) -> Optional[str]:
        """The log's file name, as told to the page (never the server's absolute path); None while
        nothing is written (no step played yet)."""
        return self.log_path.name if self.writer is not None else None

    def state_message(self, reward: float = 0.0) -> Dict[str, Any]:
        from beliefgate.viewer.frames import encode_view

        info = self.last_info   # the person sees what their seat sees (OvercookedV2: the recipe only in view)
        belief, guess = self.belief_about_person()
        return {"type": "state", "t": self.t, "horizon": self.settings.horizon,
                "frame": encode_view(self.state, self.human),
                "score": self.env.score, "reward": reward, "events": self.events,
                "belief": belief, "map": guess, "agent_skill": info.get("skill"),
                "others": {str(i): skill for i, skill in self.other_skills.items()},
                "reason": info.get("reason"), "interrupt": bool(info.get("interrupt", False)),
                "queued": len(self.pending),
                "heard": [m.model_dump(mode="json") for m in self.heard],
                "said": self.said.model_dump(mode="json") if self.said is not None else None}

    def belief_about_person(self):
        """The agent's posterior over the person's skill and its MAP skill name (None, None before it has
        one). With several teammates the agent logs one posterior per seat (``beliefs``); its ``belief``
        is then the teammate its gate acted on, which need not be the person."""
        info = self.last_info
        per_seat = info.get("beliefs")
        if not per_seat:
            return info.get("belief"), info.get("partner_map")
        belief = per_seat.get(str(self.human))
        if not belief:
            return None, None
        best = max(range(len(belief)), key=belief.__getitem__)
        return belief, self.names[best] if best < len(self.names) else None

    def seats(self) -> List[Dict[str, Any]]:
        """Each seat for the page: who plays it (``you``, ``agent``, ``partner``), the name, the chef's label."""
        out = []
        for i, name in enumerate(self.seat_names):
            who = "you" if i == self.human else "agent" if i == self.seat else "partner"
            label = {"you": "YOU", "agent": "AI"}.get(who, f"P{i}")
            out.append({"seat": i, "who": who, "name": self.settings.human_name if who == "you" else name,
                        "label": label})
        return out

    def hello(self) -> Dict[str, Any]:
        from beliefgate.viewer.frames import encode_view, layout_record

        return {"type": "hello", "session": self.session, "layout": layout_record(self.settings.layout),
                "names": self.names, "agent": self.settings.agent, "agent_seat": self.seat,
                "human_seat": self.human, "tick_hz": self.settings.tick_hz, "horizon": self.settings.horizon,
                "log": self.log_path.name, "frame": encode_view(self.state, self.human),
                "max_message_bytes": self.settings.max_message_bytes, "roles": self.roles, "goals": self.goals,
                "talks": self.seat in self.talkers, "budget": self.channel.rules.budget,
                "players": self.players, "seats": self.seats()}

    # ------------------------------------------------------------------ the end
    def finish(self, ended: str) -> Dict[str, Any]:
        """Write the final row (idempotent) and return the summary."""
        from beliefgate.envs.trajlog import FinalRow

        if self.summary is not None:
            return self.summary
        info = self.last_info
        self.summary = {
            "layout": self.settings.layout, "ego": self.settings.agent, "partner": self.partner, "seed": self.settings.seed,
            "seat": self.seat, "deliveries": self.deliveries, "reward": self.env.score, "steps": self.t,
            "replans": int(info.get("replans", 0)), "llm_calls": int(info.get("llm_calls", 0)),
            "wall_s": round(time.perf_counter() - self.started_at, 4) if self.started_at is not None else 0.0,
            "ended": ended, "session": self.session, "tick_hz": self.settings.tick_hz,
            "idle_ticks": self.idle_ticks, "late_ticks": self.late_ticks, "dropped_keys": self.dropped_keys,
            "rejected": dict(self.rejected), "dropped_says": self.dropped_says,
            "messages": self.channel.summary(),
        }
        if self.players > 2:  # as an episode with several partners says who they were, in seat order
            self.summary["partners"] = [n for i, n in enumerate(self.seat_names) if i != self.seat]
        if self.memory is not None:  # the session in one transaction; nothing when no step was played
            try:
                if self.t > 0:
                    self.summary["memory"] = self.memory.commit(self.agent.memory_record(), self.trajectory.steps,
                                                                self.settings.agent, deliveries=self.deliveries,
                                                                seed=self.settings.seed)
            except BeliefgateError as exc:  # the game is over either way: its log still gets its final row
                self.summary["memory_error"] = str(exc)
                log.warning("session %s: the partner memory was not saved: %s", self.session or "-", exc)
            finally:
                self.memory.close()
        final = FinalRow(state=self.state, summary=self.summary)
        self.trajectory.final = final
        if self.writer is None:  # no step was played: no log is written
            return self.summary
        try:
            self.writer.final(final)
        except (OSError, ValueError) as exc:
            raise PlayLogError(f"cannot write play log {self.log_path}: {exc}") from exc
        return self.summary


# --------------------------------------------------------------------------- the app
def render_play_page(settings: PlaySettings) -> str:
    import html

    from beliefgate.viewer.report import asset_text, fill_template

    return fill_template(asset_text("play.html"), {
        "TITLE": html.escape(f"beliefgate play: {settings.layout} with {settings.agent}"),
        "CSS": asset_text("report.css") + asset_text("play.css"),
        "KITCHEN_JS": asset_text("kitchen.js"),
        "PLAY_JS": asset_text("play.js"),
    })


#: the host names the play page answers to (the ``Host`` header; a bound host is added)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _host_name(host: str) -> Optional[str]:
    """The name part of a ``Host`` header (``[::1]:8770`` -> ``::1``); None when it has none."""
    from urllib.parse import urlsplit

    try:
        return urlsplit("//" + host).hostname
    except ValueError:  # a malformed port or bracket
        return None


class LocalOnly:
    """ASGI middleware of the play page: a request whose ``Host`` is not one of ``names`` gets 400
    (a foreign site that rebinds its DNS name to 127.0.0.1 is refused), and a WebSocket whose
    ``Origin`` is not the page's own (``http://`` + its ``Host``) is refused before it is accepted,
    so a foreign page never takes a game slot. A client that sends no ``Origin`` (not a browser)
    is let in. Each refusal is counted in ``refused`` and logged."""

    def __init__(self, app, names):
        self.app = app
        self.names = {n.lower() for n in names}
        self.refused = {"host": 0, "origin": 0}

    def problem(self, scope) -> Optional[str]:
        headers = {k.lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get(b"host", "")
        if (_host_name(host) or "").lower() not in self.names:
            return "host"
        origin = headers.get(b"origin")
        if scope["type"] == "websocket" and origin is not None and origin.lower() != f"http://{host}".lower():
            return "origin"
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            problem = self.problem(scope)
            if problem is not None:
                from starlette.responses import PlainTextResponse
                from starlette.websockets import WebSocketClose

                self.refused[problem] += 1
                log.warning("refused a %s request with a foreign %s (%d so far)", scope["type"], problem,
                            self.refused[problem])
                if scope["type"] == "http":
                    await PlainTextResponse(f"foreign {problem}", status_code=400)(scope, receive, send)
                else:
                    await WebSocketClose(code=1008)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_play_app(settings: PlaySettings, hosts=LOCAL_HOSTS):
    """The FastAPI app of ``beliefgate play`` (sessions in ``app.state.sessions``); it answers only
    requests whose ``Host`` is one of ``hosts`` and WebSockets from its own page (:class:`LocalOnly`)."""
    from fastapi import FastAPI, WebSocket
    from fastapi.responses import HTMLResponse, JSONResponse
    from starlette.websockets import WebSocketDisconnect, WebSocketState

    import beliefgate

    app = FastAPI(title="beliefgate play", version=beliefgate.__version__, docs_url=None, redoc_url=None,
                  openapi_url=None)
    sessions: Dict[str, PlayGame] = {}
    counter = itertools.count(1)
    app.state.settings = settings
    app.state.sessions = sessions
    app.state.finished = []
    page = render_play_page(settings)
    app.add_middleware(LocalOnly, names=hosts)

    @app.get("/", response_class=HTMLResponse)
    async def index() -> HTMLResponse:
        return HTMLResponse(page)

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok", "sessions": len(sessions), "layout": settings.layout,
                             "agent": settings.agent})

    async def send(ws: WebSocket, payload: Dict[str, Any]) -> bool:
        if ws.client_state != WebSocketState.CONNECTED or ws.application_state != WebSocketState.CONNECTED:
            return False
        try:
            await ws.send_text(json.dumps(payload, separators=(",", ":")))
            return True
        except (WebSocketDisconnect, RuntimeError, OSError):
            return False

    async def close(ws: WebSocket, code: int) -> None:
        if ws.application_state == WebSocketState.DISCONNECTED:
            return
        try:
            await ws.close(code)
        except (RuntimeError, OSError) as exc:  # the client went away first; nothing is lost
            log.debug("close after the client left: %s", exc)

    async def run_clock(ws: WebSocket, game: PlayGame, started: asyncio.Event) -> None:
        await started.wait()
        loop = asyncio.get_running_loop()
        period = 1.0 / settings.tick_hz
        due = loop.time()
        while not game.finished:
            now = loop.time()
            if now < due:
                await asyncio.sleep(due - now)
            elif now - due > period:
                game.late_ticks += 1
                due = now
            message = game.tick()
            due += period
            if not await send(ws, message):
                return
        await send(ws, {"type": "done", "summary": game.summary, "log": game.log_name})
        await close(ws, 1000)

    @app.websocket("/ws")
    async def play(ws: WebSocket) -> None:
        await ws.accept()
        if len(sessions) >= settings.max_sessions:
            await send(ws, {"type": "error", "error": "busy",
                            "detail": f"{settings.max_sessions} games are running; try again later"})
            await close(ws, 1013)
            return
        session = secrets.token_hex(4)
        number = next(counter)
        try:
            game = await asyncio.to_thread(PlayGame, settings, session_log_path(settings, number, session), session)
        except BeliefgateError as exc:  # no log, or no agent: this connection gets no game, the server goes on
            log.error("session %s could not start: %s", session, exc)
            await send(ws, {"type": "error", "error": "start", "detail": str(exc)})
            await close(ws, 1011)
            return
        sessions[session] = game
        log.info("session %s started, log %s", session, game.log_path)
        started = asyncio.Event()
        clock = asyncio.create_task(run_clock(ws, game, started))
        ended = "disconnected"
        await send(ws, game.hello())
        try:
            while not game.finished:
                receive = asyncio.create_task(ws.receive())
                done, _ = await asyncio.wait({receive, clock}, return_when=asyncio.FIRST_COMPLETED)
                if receive not in done:  # the clock ended the game (horizon) or failed
                    receive.cancel()
                    break
                msg = receive.result()
                if msg["type"] == "websocket.disconnect":
                    break
                try:
                    parsed = parse_message(msg.get("text"), settings.max_message_bytes)
                except PlayMessageError as exc:
                    game.reject(exc.kind)
                    await send(ws, {"type": "error", "error": exc.kind, "detail": exc.detail})
                    continue
                if isinstance(parsed, EndMessage):
                    ended = "player"
                    break
                if isinstance(parsed, SayMessage):
                    if not game.say(parsed.message):
                        await send(ws, {"type": "error", "error": "say_queue_full",
                                        "detail": f"{settings.queue} messages are already waiting"})
                elif not game.press(parsed.action):
                    await send(ws, {"type": "error", "error": "queue_full",
                                    "detail": f"{settings.queue} keys are already waiting"})
                started.set()
        except (WebSocketDisconnect, RuntimeError, OSError):
            ended = "disconnected"
        finally:
            if not clock.done():
                clock.cancel()
            (outcome,) = await asyncio.gather(clock, return_exceptions=True)
            if isinstance(outcome, Exception):  # one session's failure ends that game only, and says why
                ended = f"error: {type(outcome).__name__}: {outcome}"
                log.error("session %s: the game failed at step %d: %s", session, game.t, ended,
                          exc_info=(type(outcome), outcome, outcome.__traceback__))
            try:
                summary = game.finish(ended)
            except PlayLogError as exc:
                log.error("session %s: %s", session, exc)
                summary = {"ended": ended, "steps": game.t, "log_error": str(exc)}
            sessions.pop(session, None)
            app.state.finished.append({"session": session, "log": str(game.log_path) if game.log_name else None,
                                       "ended": summary["ended"]})
            log.info("session %s ended (%s) after %d steps, log %s", session, summary["ended"], game.t, game.log_path)
            if ended == "player" or ended.startswith("error"):
                if ended.startswith("error"):
                    await send(ws, {"type": "error", "error": "game", "detail": ended})
                await send(ws, {"type": "done", "summary": summary, "log": game.log_name})
                await close(ws, 1000 if ended == "player" else 1011)

    return app


def serve_play(settings: PlaySettings, port: int = 8770, host: str = "127.0.0.1", announce=print,
               log_level: str = "warning") -> None:
    """Bind ``host:port`` (0: any free port), announce the real URL, and serve until interrupted."""
    import socket

    import uvicorn

    app = create_play_app(settings, hosts=(*LOCAL_HOSTS, host))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise PlaySettingsError(f"cannot bind {host}:{port}: {exc.strerror}") from None
    sock.listen(64)
    real_port = sock.getsockname()[1]
    announce(f"http://{host}:{real_port}/", real_port)
    config = uvicorn.Config(app, log_level=log_level, access_log=False, ws_max_size=WS_MAX_SIZE,
                            timeout_graceful_shutdown=3, lifespan="off")
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


__all__ = ["PlaySettings", "PlaySettingsError", "GameOverError", "PlayMessageError", "PlayLogError", "PlayGame", "parse_message",
           "KeyMessage", "EndMessage", "SayMessage",
           "session_log_path", "create_play_app", "serve_play", "render_play_page", "ACTION_NAMES"]
