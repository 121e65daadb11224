"""Agents selectable by name (``--ego NAME``).

Every scripted partner name is a valid agent. Later agents (belief-driven,
LLM-driven) register themselves here with :func:`register`.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Protocol, Sequence

from beliefgate.envs.overcooked.partners import PARTNERS, UnknownPartnerError, make_scripted
from beliefgate.envs.overcooked.state import SymbolicState


class Agent(Protocol):
    """What the episode runner needs from a player."""

    name: str

    def reset(self, layout: str, player: int, seed: int) -> None: ...

    def act(self, state: SymbolicState, my_events: Sequence[str] = ()) -> int: ...

    def info(self) -> Dict[str, object]:
        """At least ``skill`` (active skill name or None), ``replans`` and ``llm_calls`` so far."""
        ...


_FACTORIES: Dict[str, Callable[[str], Agent]] = {}


def register(prefix: str, factory: Callable[[str], Agent]) -> None:
    """Register a factory for agent names ``prefix`` or ``prefix:OPTION``."""
    _FACTORIES[prefix] = factory


def agent_names() -> List[str]:
    return sorted(set(PARTNERS) | set(_FACTORIES))


def make_agent(name: str) -> Agent:
    """Build an agent from its name (a scripted partner, or a registered ``prefix[:option]``)."""
    if name in PARTNERS:
        return make_scripted(name)
    prefix = name.split(":", 1)[0]
    if prefix in _FACTORIES:
        return _FACTORIES[prefix](name)
    raise UnknownPartnerError(f"unknown agent {name!r}; available: {', '.join(agent_names())}")
