"""Reading a skill (or a yes/no) out of a model reply, against the allowed set."""

from __future__ import annotations

import difflib
import json
import re
from typing import Optional, Sequence

from beliefgate.planners.errors import ModelOutputError, PlannerConfigError

_JSON = re.compile(r"\{.*\}", re.DOTALL)


def _json_object(reply: str) -> Optional[dict]:
    match = _JSON.search(reply)
    if match is None:
        return None
    try:
        value = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def parse_skill(reply: str, feasible: Sequence[str]) -> str:
    """The allowed skill a reply names: JSON ``{"skill": ...}``, a list number, a name, or a close match.

    Raises :class:`ModelOutputError` when nothing in the reply identifies exactly one allowed skill.
    """
    if not feasible:
        raise PlannerConfigError("no allowed skills to parse against")
    text = (reply or "").strip()
    obj = _json_object(text)
    candidate = None
    if obj is not None:
        for key in ("skill", "action", "answer", "choice"):
            if key in obj:
                candidate = str(obj[key]).strip()
                break
    if candidate is None:
        candidate = text
    lowered = candidate.lower().strip(" .\"'`")
    if lowered.isdigit():
        index = int(lowered) - 1
        if 0 <= index < len(feasible):
            return feasible[index]
        raise ModelOutputError(f"skill number {lowered} is not in 1..{len(feasible)}", reply)
    for skill in feasible:
        if lowered == skill.lower():
            return skill
    named = [s for s in feasible if re.search(rf"\b{re.escape(s.lower())}\b", lowered)]
    if len(named) == 1:
        return named[0]
    close = difflib.get_close_matches(lowered.replace(" ", "_"), [s.lower() for s in feasible], n=1, cutoff=0.75)
    if close:
        return next(s for s in feasible if s.lower() == close[0])
    raise ModelOutputError(f"reply names no allowed skill ({', '.join(feasible)})", reply)


def parse_yes_no(reply: str, key: str = "replan") -> bool:
    """A boolean from ``{"replan": true}`` or a leading yes/no."""
    obj = _json_object(reply or "")
    if obj is not None and key in obj:
        value = obj[key]
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "yes"):
            return True
        if str(value).lower() in ("false", "no"):
            return False
    word = (reply or "").strip().lower()
    if word.startswith(("yes", "true")):
        return True
    if word.startswith(("no", "false")):
        return False
    raise ModelOutputError(f"reply is not a yes/no answer for {key!r}", reply)
