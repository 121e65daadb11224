"""Agents selectable by name (``--ego NAME``).

Names: every scripted partner; ``bayes-belief[:full|no_replan|no_prompt|no_belief]``;
``proagent``; ``periodic-N``; ``completion-held``; and whatever other modules
register with :func:`register` (e.g. ``bc:<layout>``).
"""

from __future__ import annotations
from beliefgate.errors import InputError

import inspect
import re
from typing import Callable, Dict, List, Optional, Protocol, Sequence

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


#: factory(name, llm) -> Agent; ``llm`` is an optional LLM client for agents that use one
Factory = Callable[[str, Optional[object]], Agent]
_FACTORIES: Dict[str, Factory] = {}
_DESCRIPTIONS: Dict[str, str] = {}


def register(prefix: str, factory: Callable, description: str = "") -> None:
    """Register a factory for agent names ``prefix``, ``prefix:OPTION`` or ``prefix-N``.

    ``factory(name)`` or ``factory(name, llm)`` returns a fresh agent.
    """
    _FACTORIES[prefix] = factory
    _DESCRIPTIONS[prefix] = description


def _builtin() -> None:
    if "bayes-belief" in _FACTORIES:
        return
    from beliefgate.agents import bc  # noqa: F401  (registers bc and bc:<layout>)
    from beliefgate.agents import planning as P

    def bayes(name, llm=None):
        condition = name.split(":", 1)[1] if ":" in name else "full"
        return P.BayesBeliefAgent(condition, planner=_planner(llm))

    def periodic(name, llm=None):
        match = re.fullmatch(r"periodic(?:-(\d+))?", name)
        if match is None:
            raise UnknownPartnerError(f"bad periodic agent name {name!r}; use periodic-N, e.g. periodic-10")
        return P.PeriodicAgent(int(match.group(1) or 10), planner=_planner(llm))

    register("bayes-belief", bayes, "posterior in the prompt + gate interrupts; :full|no_replan|no_prompt|no_belief")
    register("proagent", lambda name, llm=None: P.ProAgentLike(planner=_planner(llm)),
             "replans only on completion / invalid / time-out")
    register("periodic", periodic, "posterior in the prompt, replans every N steps (periodic-N)")
    register("completion-held", lambda name, llm=None: P.CompletionHeldAgent(planner=_planner(llm)),
             "posterior in the prompt, replans when the partner completes a skill or picks an item up")
    register("hypothetical-minds", lambda name, llm=None: _hm(llm),
             "hypothesis store with Rescorla-Wagner scores (LLM, or the gate's MAP offline)")
    register("llm-judge", lambda name, llm=None: P.LLMJudgeAgent(client=llm, planner=_planner(llm)),
             "posterior in the prompt, a judge (LLM, or a duplicate-role rule offline) decides replanning")


def _hm(llm):
    from beliefgate.agents.hypothetical_minds import HypotheticalMindsAgent

    return HypotheticalMindsAgent(client=llm, planner=_planner(llm))


def _planner(llm):
    if llm is None:
        from beliefgate.planners.rule import RulePlanner

        return RulePlanner()
    from beliefgate.planners.llm import LLMPlanner

    return LLMPlanner(llm)


def uses_llm(name: str) -> bool:
    """Does agent ``name`` take an LLM client (its factory accepts one)? Scripted partners do not."""
    if name in PARTNERS:
        return False
    _builtin()
    factory = _FACTORIES.get(_prefix(name))
    return factory is not None and len(inspect.signature(factory).parameters) >= 2


def agent_names() -> List[str]:
    _builtin()
    return sorted(set(PARTNERS) | set(_FACTORIES))


def _prefix(name: str) -> str:
    if ":" in name:
        return name.split(":", 1)[0]
    match = re.fullmatch(r"(.+?)-\d+", name)
    return match.group(1) if match and match.group(1) in _FACTORIES else name


def make_agent(name: str, llm: Optional[object] = None, gate_params: Optional[object] = None) -> Agent:
    """Build an agent from its name (a scripted partner, or a registered ``prefix[:option]``).

    ``gate_params`` (a :class:`~beliefgate.beliefs.gate.GateParams`) replaces the defaults of an
    agent that runs a gate; giving it for an agent without one (a scripted partner, ``proagent``,
    ``bayes-belief:no_belief``...) raises :class:`GateParamsNotUsedError`, so a sweep cannot
    silently vary a parameter that nothing reads.
    """
    agent = _build(name, llm)
    if gate_params is not None:
        from beliefgate.beliefs.gate import GateParams

        if not isinstance(gate_params, GateParams):
            raise TypeError(f"gate_params must be a GateParams, not {type(gate_params).__name__}")
        if not uses_gate(agent):
            raise GateParamsNotUsedError(f"agent {name!r} runs no gate; gate parameters would have no effect")
        agent.params = gate_params
    return agent


class GateParamsNotUsedError(InputError):
    """Gate parameters were given for an agent that keeps no gate."""


def uses_gate(agent: object) -> bool:
    """Does this agent instance run a belief gate whose parameters it reads at ``reset``?"""
    return bool(getattr(agent, "keeps_belief", False)) and hasattr(agent, "params")


def _build(name: str, llm: Optional[object]) -> Agent:
    if name in PARTNERS:
        if llm is not None:
            raise UnknownPartnerError(f"agent {name!r} does not use an LLM")
        return make_scripted(name)
    _builtin()
    prefix = _prefix(name)
    if prefix in _FACTORIES:
        factory = _FACTORIES[prefix]
        if len(inspect.signature(factory).parameters) >= 2:
            return factory(name, llm)
        if llm is not None:
            raise UnknownPartnerError(f"agent {name!r} does not use an LLM")
        return factory(name)
    raise UnknownPartnerError(f"unknown agent {name!r}; available: {', '.join(agent_names())}")
