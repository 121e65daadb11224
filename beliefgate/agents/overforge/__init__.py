"""OverForge's Prefrontal Cortex Module as an Overcooked ego agent (``overforge[:OPTIONS]``).

``make_overforge_agent(name, llm=None, gate_params=None)`` builds one from its name
(``overforge``, ``overforge:-rollouts``, ``overforge:-hierarchy``, ``overforge:pinned=loader``,
``overforge:-belief``, ``overforge:llm``; see :mod:`.config`); its row is in the agent table
:data:`beliefgate.agents.registry.AGENTS`.
"""

from __future__ import annotations

from typing import Optional

from beliefgate.agents.overforge.config import OverForgeConfig, OverForgeOptionError, option_of, parse_option


def make_overforge_agent(name: Optional[str] = None, llm=None, gate_params=None):
    """An :class:`~beliefgate.agents.overforge.agent.OverForgeAgent` from its name or option.

    ``name`` is a full name (``overforge:-belief``), the option alone (``-belief``, as the agent
    table passes it) or None (the default agent). ``llm`` turns the LLM roles on (strategy
    proposer, pairwise judge; each falls back to its offline component, counted); the ``llm``
    token without a model is an :class:`OverForgeOptionError`.
    """
    from beliefgate.agents.overforge.agent import OverForgeAgent

    config = parse_option(option_of(name))
    if config.llm and llm is None:
        raise OverForgeOptionError("overforge option 'llm' needs a model (e.g. --llm-base-url)")
    if gate_params is not None:
        from beliefgate.beliefs.gate import GateParams

        if not isinstance(gate_params, GateParams):
            raise OverForgeOptionError(f"gate_params must be a GateParams, not {type(gate_params).__name__}")
    return OverForgeAgent(config, llm=llm, params=gate_params)


__all__ = ["make_overforge_agent", "OverForgeConfig", "OverForgeOptionError", "parse_option"]
