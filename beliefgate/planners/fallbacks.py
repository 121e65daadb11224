"""Fallbacks, counted: who fell back (role), why (reason), and the one-line detail.

An agent keeps one :class:`FallbackLog` per episode; every planner decision with
``source="fallback"``, every judge or hypothesis call without a usable answer is recorded
there. The agent logs the events of each step and the running counts; the episode
summary, the metrics (``fallbacks``, ``fallbacks_<role>``, ``fallback_<reason>``) and
``beliefgate eval report`` read them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Dict, List

from beliefgate.planners.errors import FALLBACK_REASONS, PlannerConfigError

#: the roles that call a model, in report order
ROLES = ("planner", "judge", "hypothesis")


@dataclass(frozen=True)
class Fallback:
    """One fallback: the calling role, the reason (one of :data:`FALLBACK_REASONS`) and a one-line detail."""

    role: str
    reason: str
    detail: str = ""

    def __post_init__(self):
        if self.reason not in FALLBACK_REASONS:
            raise PlannerConfigError(f"unknown fallback reason {self.reason!r}; one of {', '.join(FALLBACK_REASONS)}")

    def to_dict(self) -> Dict[str, str]:
        return asdict(self)


class FallbackLog:
    """Counts per role and per reason, and the events not yet handed to the step log."""

    def __init__(self) -> None:
        self.by_role: Counter = Counter()
        self.by_reason: Counter = Counter()
        self._pending: List[Fallback] = []
        self.last: List[Fallback] = []  # the most recent few, for the summary

    def record(self, fallback: Fallback) -> None:
        self.by_role[fallback.role] += 1
        self.by_reason[fallback.reason] += 1
        self._pending.append(fallback)
        self.last = (self.last + [fallback])[-5:]

    @property
    def total(self) -> int:
        return int(sum(self.by_role.values()))

    def count(self, role: str) -> int:
        return int(self.by_role.get(role, 0))

    def drain(self) -> List[Dict[str, str]]:
        """The events recorded since the last call (for one step's log row)."""
        out = [f.to_dict() for f in self._pending]
        self._pending = []
        return out

    def summary(self) -> Dict[str, object]:
        """``{"total", "by_role", "by_reason", "last"}`` with every known role and reason present."""
        roles = {r: self.count(r) for r in ROLES}
        roles.update({r: int(n) for r, n in self.by_role.items() if r not in roles})
        return {"total": self.total, "by_role": roles,
                "by_reason": {r: int(self.by_reason.get(r, 0)) for r in FALLBACK_REASONS},
                "last": [f.to_dict() for f in self.last]}
