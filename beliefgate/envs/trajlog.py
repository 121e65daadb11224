"""Trajectory logs: one JSON object per line, written as the episode runs.

Layout of a log file::

    {"kind": "header", "format": "beliefgate.trajectory/1", "layout": ..., "seed": ..., "config": {...}, ...}
    {"kind": "step", "t": 0, "state": {...}, "actions": [a0, a1], "reward": 0.0,
     "events": [[...], [...]], "skills": [ego_skill, partner_skill], "info": [{...}, {...}],
     "messages": {"sent": [...], "refused": [...]}}     # "messages" only on a step with any
    ...
    {"kind": "final", "state": {...}, "summary": {...}}

Each line is flushed when written, so an interrupted run keeps every finished
step. :func:`read_log` validates every line and raises :class:`LogFormatError`
(or :class:`TruncatedLogError`) naming the file and line.
"""

from __future__ import annotations
from beliefgate.errors import InputError

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, IO, List, Optional

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from beliefgate.envs.domain import Domain, UnknownLayoutError, domain_for_layout
from beliefgate.envs.messages import StepMessages
from beliefgate.fileio import DataSyntaxError, parse_data

FORMAT = "beliefgate.trajectory/1"


class LogFormatError(InputError):
    """A trajectory log line is not valid."""

    def __init__(self, path: str | Path, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path = str(path)
        self.line = line


class TruncatedLogError(LogFormatError):
    """The log ends before its final row (an interrupted or cut file)."""


class LogHeader(BaseModel):
    model_config = ConfigDict(extra="allow")

    kind: str = "header"
    format: str = FORMAT
    layout: str
    horizon: int
    seed: int
    seat: int = 0
    agents: List[str]
    ego: Optional[str] = None
    partner: Optional[str] = None
    version: str
    config: Dict[str, Any] = {}
    #: the action legend: ``action_legend[i]`` names action index ``i`` of the steps' ``actions`` (the
    #: domain's ``action_names``; filled in when absent, so logs written before it still load)
    action_legend: Optional[List[str]] = None

    @model_validator(mode="after")
    def _layout_is_known(self) -> "LogHeader":
        # an unknown layout was found only by the consumer: "unknown layout" without file or line, exit 1
        try:
            domain = domain_for_layout(self.layout)
        except UnknownLayoutError as exc:
            raise ValueError(str(exc)) from None
        names = [str(n) for n in getattr(domain, "action_names", ())]
        if self.action_legend is None:
            self.action_legend = names or None
        elif names and list(self.action_legend) != names:
            raise ValueError(f"action_legend {self.action_legend} is not the {domain.name} domain's {names}: "
                             "the steps' actions would be misread")
        return self

    @model_validator(mode="after")
    def _seat_is_a_player(self) -> "LogHeader":
        # the ego's seat indexes the players: a seat of 5 (or -1) in an edited header crashed the
        # report with an IndexError and misled fit into "partner side -4"
        if not 0 <= self.seat < len(self.agents):
            raise ValueError(f"seat must be a player index in 0..{len(self.agents) - 1} "
                             f"(the header lists {len(self.agents)} agents), got {self.seat}")
        return self


class StepRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = "step"
    t: int
    #: the domain's symbolic state (:meth:`Domain.state_from_json` parses it when a log is read)
    state: Any
    actions: List[int]
    reward: float
    events: List[List[str]]
    skills: List[Optional[str]]
    info: List[Dict[str, Any]] = []
    #: the message channel's part of the step (messages sent, delivered at the next step; refusals);
    #: absent from the line when nothing was said (logs written before the channel read the same)
    messages: Optional[StepMessages] = None


class FinalRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = "final"
    state: Any
    summary: Dict[str, Any]


@dataclass
class Trajectory:
    header: LogHeader
    steps: List[StepRow] = field(default_factory=list)
    final: Optional[FinalRow] = None

    @property
    def complete(self) -> bool:
        return self.final is not None

    def states(self) -> List[Any]:
        """s_0 .. s_T (the final state included when present)."""
        out = [r.state for r in self.steps]
        if self.final is not None:
            out.append(self.final.state)
        return out


class LogWriter:
    """Writes a trajectory log line by line (flushed after each line)."""

    def __init__(self, path: str | Path, header: LogHeader):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: Optional[IO[str]] = open(self.path, "w", encoding="utf-8")
        self._write(header.model_dump(mode="json"))

    def _write(self, row: Dict[str, Any]) -> None:
        if self._fh is None:
            raise ValueError(f"log {self.path} is closed")
        self._fh.write(json.dumps(row, separators=(",", ":")) + "\n")
        self._fh.flush()

    def step(self, row: StepRow) -> None:
        self._write(row.model_dump(mode="json", exclude={"messages"} if row.messages is None else None))

    def final(self, row: FinalRow) -> None:
        self._write(row.model_dump(mode="json"))
        self.close()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None

    def __enter__(self) -> "LogWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _with_state(row, domain: Domain):
    """``row`` with its ``state`` parsed by the log's domain (a missing state is pydantic's error)."""
    row.state = domain.state_from_json(row.state)
    return row


def read_log(path: str | Path, allow_incomplete: bool = False) -> Trajectory:
    """Read and validate a trajectory log.

    Raises :class:`LogFormatError` naming the line for a corrupt line, and
    :class:`TruncatedLogError` when the final row is missing (unless
    ``allow_incomplete``) or the last line was cut mid-write.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LogFormatError(path, 0, f"cannot read log: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise LogFormatError(path, 0, f"not UTF-8 text: {exc}") from exc
    if not text:
        raise TruncatedLogError(path, 1, "empty log (no header)")
    lines = text.split("\n")
    cut_last = lines[-1] != ""
    if not cut_last:
        lines = lines[:-1]
    traj: Optional[Trajectory] = None
    for n, line in enumerate(lines, start=1):
        try:
            row = parse_data(line, "json", duplicates=False)
        except DataSyntaxError as exc:
            cls = TruncatedLogError if (n == len(lines) and cut_last) else LogFormatError
            cause = exc.__context__
            msg = cause.msg if isinstance(cause, json.JSONDecodeError) else str(exc)
            raise cls(path, n, f"not valid JSON ({msg})") from None
        if not isinstance(row, dict) or "kind" not in row:
            raise LogFormatError(path, n, "each line must be a JSON object with a 'kind'")
        kind = row["kind"]
        try:
            if n == 1:
                if kind != "header":
                    raise LogFormatError(path, n, f"first line must be the header, got kind {kind!r}")
                header = LogHeader.model_validate(row)
                if header.format != FORMAT:
                    raise LogFormatError(path, n, f"unsupported log format {header.format!r} (expected {FORMAT})")
                traj = Trajectory(header)
                domain = domain_for_layout(header.layout)
            elif traj.final is not None:
                raise LogFormatError(path, n, "rows after the final row")
            elif kind == "step":
                step = _with_state(StepRow.model_validate(row), domain)
                if step.t != len(traj.steps):
                    raise LogFormatError(path, n, f"step t={step.t} out of order (expected {len(traj.steps)})")
                traj.steps.append(step)
            elif kind == "final":
                traj.final = _with_state(FinalRow.model_validate(row), domain)
            else:
                raise LogFormatError(path, n, f"unknown row kind {kind!r}")
        except ValidationError as exc:  # one line: the first error, the rest counted
            from beliefgate.validation import first_problem

            raise LogFormatError(path, n, f"invalid {kind} row: {first_problem(exc, kind or 'row').message}") from None
        except LogFormatError:
            raise
        except InputError as exc:  # the domain refused the state (or the header's layout)
            where = f" (step {row['t']})" if kind == "step" and isinstance(row.get("t"), int) else ""
            raise LogFormatError(path, n, f"invalid {kind} row{where}: {exc}") from None
    if cut_last:
        raise TruncatedLogError(path, len(lines), "last line is incomplete (no newline)")
    if traj.final is None and not allow_incomplete:
        raise TruncatedLogError(path, len(lines), "log ends without its final row (interrupted run?)")
    return traj
