"""Typed inputs and outputs of planners (no domain logic here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Protocol, Tuple, runtime_checkable

from beliefgate.planners.fallbacks import Fallback


@dataclass(frozen=True)
class BeliefBlock:
    """What the ego believes about its partner, as planners see it.

    ``posterior`` maps skill names to probabilities; ``map_skill`` is the most
    probable one and ``confidence`` its probability; ``band`` is a coarse reading
    of the confidence ("low" < 0.5 <= "medium" < 0.8 <= "high"); ``gate`` names
    the control signal that triggered this planning call, if any.
    """

    posterior: Dict[str, float]
    map_skill: str
    confidence: float
    gate: Optional[str] = None

    @property
    def band(self) -> str:
        return "high" if self.confidence >= 0.8 else "medium" if self.confidence >= 0.5 else "low"


@dataclass(frozen=True)
class GoalBlock:
    """What the ego believes about the goal its teammates pursue (OvercookedV2: the recipe it may
    not see), as planners see it: ``posterior`` maps goal names to probabilities, ``map_goal`` is
    the most probable one and ``confidence`` its probability."""

    posterior: Dict[str, float]
    map_goal: str
    confidence: float


@dataclass(frozen=True)
class Turn:
    """One earlier planning turn: when, what was chosen, why the planner was called."""

    timestep: int
    skill: str
    reason: str


@dataclass(frozen=True)
class PlannerInput:
    """Everything a planner receives for one decision."""

    scene: str
    feasible: Tuple[str, ...]
    history: Tuple[Turn, ...] = ()
    belief: Optional[BeliefBlock] = None
    reason: str = "idle"
    needs: Dict[str, float] = field(default_factory=dict)  # feasible skill -> times the kitchen needs it now
    roles: Dict[str, str] = field(default_factory=dict)  # skill -> role
    complementary: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # partner skill -> ego skills
    goal: Optional[GoalBlock] = None  # the goal (recipe) belief, where the agent keeps one
    goal_needs: Dict[str, Dict[str, float]] = field(default_factory=dict)  # goal -> needs were it the goal

    @property
    def useful(self) -> Tuple[str, ...]:
        """Feasible skills with a positive need, in the order of ``feasible``."""
        return tuple(s for s in self.feasible if self.needs.get(s, 0.0) > 0)


@dataclass(frozen=True)
class PlanDecision:
    """A planner's answer: the skill and how it was reached.

    ``source`` is ``"rule"``, ``"llm"`` or ``"fallback"``; a fallback decision carries the
    :class:`~beliefgate.planners.fallbacks.Fallback` (role, reason, detail) that caused it,
    which the agent counts. ``attempts`` is the number of model answers spent on it (cache
    hits included), so an agent's LLM-call count is the sum over its decisions.
    """

    skill: str
    source: str
    attempts: int = 0
    reply: str = ""        # the last raw reply (LLM planners)
    note: str = ""
    fallback: Optional[Fallback] = None


@runtime_checkable
class Planner(Protocol):
    """What agents need from a planner: a name and one decision per :class:`PlannerInput`.

    A planner raises only for caller errors (:class:`~beliefgate.planners.errors.PlannerConfigError`,
    e.g. an empty feasible set); a model fault is a decision with ``source="fallback"``.
    """

    name: str

    def choose(self, inp: PlannerInput) -> PlanDecision: ...
