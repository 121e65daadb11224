"""Agents selectable by name (``--ego NAME``): one explicit table, nothing registered at import.

Names: every scripted partner (``beliefgate partners``), every row of :data:`AGENTS`:
``bayes-belief[:full|no_replan|no_prompt|no_belief|paper]``, ``proagent``, ``periodic[-N]``,
``completion-held``, ``llm-judge``, ``hypothetical-minds``, ``policy-tree:PATH[:bayes]``,
``overforge[:...]``, ``flat[:-messages]``, and every agent a game builds by name (its domain's ``agent_kinds``: classic
Overcooked's ``bc[:<layout>]``, OvercookedV2's ``ppo:NAME|PATH`` and ``fcp:<layout>``), built by
that domain's ``make_named_agent`` -- the table names no game module (agents reach a game only
through its Domain; ``tests/test_structure.py`` checks it).

A row names its factory as ``"module:function"``; the module is imported the first time an
agent of that row is built, so listing names imports no agent code and no module has to be
imported for its agents to exist. A factory is called as
``factory(option, llm=..., gate_params=...)`` -- ``option`` is what follows ``:`` (or the
``N`` of ``NAME-N``; None when absent), and the keywords are passed only when the row says
the agent takes an LLM (``llm=True``) or gate parameters (``gate=True``). Adding an agent is
one line here, e.g.::

    AgentEntry("policy-tree", "beliefgate.policytree.agent:make_policy_tree_agent",
               "a policy tree from PATH", option="required", llm=True, gate=True),

Agents outside the package are plug-ins, looked up after the table: an installed package names
an :class:`AgentEntry` under the entry-point group ``beliefgate.agents`` (the entry point's name
is the row's prefix)::

    [project.entry-points."beliefgate.agents"]
    my-agent = "my_package.agents:ENTRY"   # ENTRY = AgentEntry("my-agent", "my_package.agents:make", "...")

and a test or notebook adds one in this process with :func:`register_agent` (its ``factory`` may be
the function itself). An entry point names an ``AgentEntry``, not a bare factory: the row says
which options, LLM and gate parameters the agent takes, which the CLI and grids check before
building one. A plug-in whose prefix is a built-in name (a row of the table or a scripted
partner), or whose object is not a usable ``AgentEntry``, is refused with an
:class:`AgentPluginError` naming it when it is looked up. Grid workers are separate processes:
there, only the table and installed plug-ins are known (:func:`register_agent` is per process).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import warnings
from dataclasses import dataclass
from typing import (Any, Callable, Dict, List, Literal, Mapping, Optional, Protocol, Sequence, Tuple, Union,
                    get_args, runtime_checkable)

from beliefgate import plugins
from beliefgate.envs.domain import AgentKind, Domain, UnknownPartnerError, domains, partner_domain
from beliefgate.errors import InputError, RuntimeFailure


class Agent(Protocol):
    """What the episode runner needs from a player."""

    name: str

    def reset(self, layout: str, player: int, seed: int) -> None: ...

    def act(self, state, my_events: Sequence[str] = ()) -> int:
        """The action in ``state`` (the domain's symbolic state); ``my_events`` are this player's
        interaction events of the last step."""
        ...

    def info(self) -> Dict[str, object]:
        """At least ``skill`` (active skill name or None), ``replans`` and ``llm_calls`` so far; agents
        that call a model also ``fallbacks`` (total), ``fallbacks_by_role`` and ``fallback_events``."""
        ...


@runtime_checkable
class ReportsFallbacks(Protocol):
    """An agent that calls a model and counts its fallbacks (every :class:`PlanningAgent`)."""

    def fallback_summary(self) -> Dict[str, object]:
        """``{"total", "by_role", "by_reason", "last"}`` for this episode."""
        ...


class GateParamsNotUsedError(InputError):
    """Gate parameters were given for an agent that keeps no gate."""


class AgentNameError(InputError):
    """A known agent prefix with a bad option (``bayes-belief:sometimes``), or an LLM for an agent without one."""


class AgentPluginError(InputError):
    """An agent plug-in that cannot be used (a built-in's prefix, not an ``AgentEntry``, a bad field,
    a factory that does not build an agent); the message names it."""


Option = Literal["none", "optional", "required", "number"]


@dataclass(frozen=True)
class AgentEntry:
    """One row of the agent table (or an agent plug-in).

    ``factory``: ``"module:function"`` (imported when an agent of the row is first built) or, for
    an agent added in process, the function itself; it is called ``factory(option, llm=...,
    gate_params=...)``. ``option``: ``"none"`` (the bare name only), ``"optional"`` (``NAME`` or
    ``NAME:OPTION``), ``"required"`` (``NAME:OPTION``), ``"number"`` (``NAME`` or ``NAME-N``).
    ``digest``: for an agent defined by a file, ``"module:function"`` (or a function) that maps the
    option to a short hash of what defines the agent (:func:`agent_digest`); None for agents
    defined by their name alone.
    """

    prefix: str
    factory: Union[str, Callable]
    description: str
    option: Option = "none"
    llm: bool = False
    gate: bool = False
    digest: Union[str, Callable, None] = None

    def load(self, what: Literal["factory", "digest"] = "factory") -> Callable:
        """The row's factory (or its ``digest`` function), imported now."""
        target = getattr(self, what)
        if callable(target):
            return target
        module, _, function = target.partition(":")
        try:
            return getattr(importlib.import_module(module), function)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module.startswith(exc.name):
                raise RuntimeFailure(f"agent {self.prefix!r} needs {module}, which is not part of this "
                                     "installation") from None
            raise
        except AttributeError:
            raise RuntimeFailure(f"agent {self.prefix!r}: {module} has no {what} {function!r}") from None


_P = "beliefgate.agents.planning"

#: the agent table: prefix -> how to build it (scripted partners and the games' own agents -- ``bc``,
#: ``ppo``, ``fcp`` -- come from the domains: :func:`domain_entry`)
AGENTS: Dict[str, AgentEntry] = {e.prefix: e for e in (
    AgentEntry("bayes-belief", f"{_P}:bayes_belief_agent",
               "posterior in the prompt + gate interrupts; :full|no_replan|no_prompt|no_belief|paper "
               "(paper: windowed Eq. 6-8 belief, reference=action)",
               option="optional", llm=True, gate=True),
    AgentEntry("proagent", f"{_P}:proagent_agent", "replans only on completion / invalid / time-out; offline its own "
               "intention estimate of the partner (last observed behaviour)", llm=True),
    AgentEntry("periodic", f"{_P}:periodic_agent", "posterior in the prompt, replans every N steps (periodic-N)",
               option="number", llm=True, gate=True),
    AgentEntry("completion-held", f"{_P}:completion_held_agent",
               "posterior in the prompt, replans when the partner completes a skill or picks an item up",
               llm=True, gate=True),
    AgentEntry("hypothetical-minds", "beliefgate.agents.hypothetical_minds:hypothetical_minds_agent",
               "hypothesis store with Rescorla-Wagner scores (LLM, or the gate's MAP offline)", llm=True, gate=True),
    AgentEntry("llm-judge", f"{_P}:llm_judge_agent",
               "posterior in the prompt, a judge (LLM, or a duplicate-role rule offline) decides replanning",
               llm=True, gate=True),
    AgentEntry("policy-tree", "beliefgate.policytree.agent:make_policy_tree_agent",
               "an executable policy tree run in the sandbox (PATH[:bayes]; seed:LAYOUT; distilled:LAYOUT)",
               option="required", llm=True, gate=True, digest="beliefgate.policytree.agent:tree_digest"),
    AgentEntry("flat", "beliefgate.agents.flat:flat_agent",
               "the flat baseline: bayes-belief:full that tells and hears the recipe it sees and answers "
               "requests (accepts what the kitchen needs of it), no PCM (:-messages: silent)",
               option="optional", llm=True, gate=True),
    AgentEntry("overforge", "beliefgate.agents.overforge:make_overforge_agent",
               "OverForge PCM: strategy x first-skill branches, rollouts with the belief-played partner, kappa "
               "commit (:-rollouts|-hierarchy|-belief|pinned=ROLE)", option="optional", llm=True, gate=True),
)}

#: rows added through the deprecated :func:`register` (old-style ``factory(name[, llm])``)
_LEGACY: Dict[str, Tuple[Callable, str]] = {}
#: agent plug-ins added in this process (:func:`register_agent`)
_LOCAL: Dict[str, AgentEntry] = {}

_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_TARGET = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def check_entry(entry: Any, name: str) -> AgentEntry:
    """``entry`` if it is a usable :class:`AgentEntry` for a plug-in called ``name`` (its prefix is
    ``name``, no built-in has it, its fields are valid); else :class:`AgentPluginError` naming it."""
    where = f"agent plug-in {name!r}"
    if not isinstance(entry, AgentEntry):
        raise AgentPluginError(f"{where} is a {type(entry).__name__}, not an AgentEntry")
    prefix = entry.prefix
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix) or re.search(r"-\d+$", prefix):
        raise AgentPluginError(f"{where}: prefix {prefix!r} must be letters, digits, '_', '.' and '-' "
                               "(not ending in -N, which reads as a number option)")
    if prefix != name:
        raise AgentPluginError(f"{where} names the prefix {prefix!r}; an entry point's name is its prefix")
    if prefix in AGENTS or partner_domain(prefix) is not None or _domain_kind(prefix) is not None:
        raise AgentPluginError(f"{where} collides with the built-in agent {prefix!r}; give it another prefix")
    for field in ("factory", "digest"):
        value = getattr(entry, field)
        if value is None and field == "digest":
            continue
        if not callable(value) and not (isinstance(value, str) and _TARGET.fullmatch(value)):
            raise AgentPluginError(f"{where}: {field} must be 'module:function' or a function, got {value!r}")
    if entry.option not in get_args(Option):
        raise AgentPluginError(f"{where}: option {entry.option!r} is not one of {', '.join(get_args(Option))}")
    if not isinstance(entry.description, str) or not all(isinstance(v, bool) for v in (entry.llm, entry.gate)):
        raise AgentPluginError(f"{where}: description must be text and llm / gate booleans")
    return entry


def register_agent(entry: AgentEntry) -> AgentEntry:
    """Make agent ``entry`` usable by name in this process (tests, notebooks); a prefix registered
    by an earlier call is replaced. Installed plug-ins (entry points) are found without this."""
    check_entry(entry, entry.prefix if isinstance(entry, AgentEntry) else getattr(entry, "__qualname__", repr(entry)))
    _LOCAL[entry.prefix] = entry
    return entry


def unregister_agent(prefix: str) -> None:
    """Forget an agent added with :func:`register_agent` (no error if there is none)."""
    _LOCAL.pop(prefix, None)


def _entry_points() -> Mapping[str, Any]:
    """The installed agent plug-ins by name (entry points of ``beliefgate.agents``, not loaded)."""
    return plugins.entry_points_in(plugins.AGENT_PLUGINS)


def _plugin(prefix: str) -> Optional[AgentEntry]:
    """The installed plug-in ``prefix``, loaded and checked; None when none is installed."""
    point = _entry_points().get(prefix)
    if point is None:
        return None
    try:
        found = point.load()
    except (ImportError, AttributeError) as exc:
        raise AgentPluginError(f"agent plug-in {prefix!r} ({point.value}) cannot be loaded: {exc}") from None
    return check_entry(found, prefix)


def _domain_kind(prefix: str, domain: Optional[Domain] = None) -> Optional[Tuple[Domain, AgentKind]]:
    """``(domain, kind)`` of the game that builds agents named ``prefix`` (``domain`` asked first, then
    every domain in order); None when none does."""
    for d in ([domain] if domain is not None else []) + [d for d in domains() if d is not domain]:
        for kind in d.agent_kinds():
            if kind.prefix == prefix:
                return d, kind
    return None


def domain_entry(prefix: str, domain: Optional[Domain] = None) -> Optional[AgentEntry]:
    """The row of an agent a game builds by name (:meth:`~beliefgate.envs.domain.Domain.agent_kinds`:
    ``bc``, ``ppo``, ``fcp``), asking ``domain`` first, then every domain; None when none builds it.
    Its factory and digest are the domain's ``make_named_agent`` / ``named_agent_digest``."""
    found = _domain_kind(prefix, domain)
    if found is None:
        return None
    owner, kind = found
    return AgentEntry(kind.prefix, functools.partial(owner.make_named_agent, kind.prefix), kind.description,
                      option=kind.option, digest=functools.partial(owner.named_agent_digest, kind.prefix))


def find_entry(prefix: str, domain: Optional[Domain] = None) -> Optional[AgentEntry]:
    """The row of ``prefix``: the table's, else a game's own agent (``domain``'s first), else one
    added in process, else an installed plug-in's."""
    entry = AGENTS.get(prefix)
    if entry is None:
        entry = domain_entry(prefix, domain)
    if entry is None:
        entry = _LOCAL.get(prefix)
    if entry is None:
        entry = _plugin(prefix)
    return entry


def register(prefix: str, factory: Callable, description: str = "") -> None:
    """Deprecated: add a row at run time. Add an :class:`AgentEntry` to :data:`AGENTS` instead.

    ``factory(name)`` or ``factory(name, llm)`` returns a fresh agent (the old convention).
    """
    warnings.warn("beliefgate.agents.registry.register is deprecated; add an AgentEntry to AGENTS",
                  DeprecationWarning, stacklevel=2)
    _LEGACY[prefix] = (factory, description)


def parse_name(name: str) -> Tuple[str, Optional[str]]:
    """``(prefix, option)`` of an agent name that is not a scripted partner.

    Raises :class:`~beliefgate.envs.domain.UnknownPartnerError` for an unknown
    prefix and :class:`AgentNameError` for a known one used with the wrong kind of option.
    """
    if not isinstance(name, str) or not name:
        raise AgentNameError(f"an agent name must be a non-empty string, got {name!r}")
    if ":" in name:
        prefix, option = name.split(":", 1)
    else:
        match = re.fullmatch(r"(.+?)-(\d+)", name)
        if (match and name not in _LEGACY and (match.group(1) in _LEGACY or find_entry(match.group(1)) is not None)
                and find_entry(name) is None):
            prefix, option = match.group(1), match.group(2)
        else:
            prefix, option = name, None
    if prefix in _LEGACY:
        return prefix, option
    entry = find_entry(prefix)
    if entry is None:
        raise UnknownPartnerError(f"unknown agent {name!r}; available: {', '.join(agent_names())}")
    number = option is not None and ":" not in name
    if option is not None and not option:
        raise AgentNameError(f"agent {name!r} has an empty option after ':'")
    if entry.option == "none" and option is not None:
        raise AgentNameError(f"agent {prefix!r} takes no option, got {name!r}")
    if entry.option == "required" and option is None:
        raise AgentNameError(f"agent {prefix!r} needs an option: {prefix}:OPTION")
    if entry.option == "number" and option is not None and not number:
        raise AgentNameError(f"bad {prefix} agent name {name!r}; use {prefix}-N, e.g. {prefix}-10")
    if entry.option in ("optional", "required") and number:
        raise AgentNameError(f"bad agent name {name!r}; use {prefix}:OPTION")
    return prefix, option


def uses_llm(name: str) -> bool:
    """Does agent ``name`` take an LLM client? Scripted partners do not."""
    if partner_domain(name) is not None:
        return False
    prefix, _ = parse_name(name)
    if prefix in _LEGACY:
        return len(inspect.signature(_LEGACY[prefix][0]).parameters) >= 2
    return find_entry(prefix).llm


def agent_digest(name: str) -> Optional[str]:
    """A short hash of what defines agent ``name`` beyond its name, or None.

    Computed by the row's ``digest`` function from the option (a policy tree's code, so that a
    grid notices an edited tree file); scripted partners and rows without one have none.
    """
    if partner_domain(name) is not None:
        return None
    prefix, option = parse_name(name)
    entry = None if prefix in _LEGACY else find_entry(prefix)
    if entry is None or entry.digest is None:
        return None
    return entry.load("digest")(option)


def agent_names() -> List[str]:
    """Every scripted partner of every domain, every prefix of the table and every plug-in's
    (installed or added in process; an installed one is named without being loaded)."""
    partners = {n for d in domains() for n in d.partner_names()}
    kinds = {k.prefix for d in domains() for k in d.agent_kinds()}
    return sorted(partners | kinds | set(AGENTS) | set(_LOCAL) | set(_entry_points()) | set(_LEGACY))


def agent_table() -> List[Dict[str, object]]:
    """The table's and the plug-ins' rows as dicts (prefix, description, option, llm, gate) for
    listings. Every installed plug-in is loaded and checked, so an unusable one (a built-in's
    prefix included, which a lookup by name never reaches) raises :class:`AgentPluginError`."""
    installed = [_plugin(p) for p in sorted(_entry_points()) if p not in _LOCAL]
    games = [domain_entry(p) for p in sorted({k.prefix for d in domains() for k in d.agent_kinds()} - set(AGENTS))]
    rows = [{"name": e.prefix, "description": e.description, "option": e.option, "llm": e.llm, "gate": e.gate}
            for e in [*AGENTS.values(), *games, *_LOCAL.values(), *installed]]
    rows += [{"name": p, "description": d, "option": "optional", "llm": False, "gate": False}
             for p, (_, d) in _LEGACY.items()]
    return sorted(rows, key=lambda r: r["name"])


def make_agent(name: str, llm: Optional[object] = None, gate_params: Optional[object] = None,
               domain: Optional[Domain] = None) -> Agent:
    """Build an agent from its name (a scripted partner of ``domain`` -- or of any domain when
    none is given --, or a row of :data:`AGENTS`).

    ``llm`` (a :class:`~beliefgate.planners.model.ChatModel`) is for agents that call a model;
    giving it to one that does not raises :class:`AgentNameError`. ``gate_params`` (a
    :class:`~beliefgate.beliefs.gate.GateParams`) replaces the defaults of an agent that runs a
    gate; giving it for an agent without one (a scripted partner, ``proagent``,
    ``bayes-belief:no_belief``...) raises :class:`GateParamsNotUsedError`, so a sweep cannot
    silently vary a parameter that nothing reads.
    """
    if gate_params is not None:
        from beliefgate.beliefs.gate import GateParams

        if not isinstance(gate_params, GateParams):
            raise InputError(f"gate_params must be a GateParams, not {type(gate_params).__name__}")
    owner = partner_domain(name, domain)
    if owner is not None:
        if llm is not None:
            raise AgentNameError(f"agent {name!r} does not use an LLM")
        if gate_params is not None:
            raise GateParamsNotUsedError(f"agent {name!r} runs no gate; gate parameters would have no effect")
        return owner.make_partner(name)
    if domain is not None and find_entry(name) is None:
        other = partner_domain(name)
        if other is not None:       # e.g. the classic `balanced` asked to play a v2/ kitchen
            raise UnknownPartnerError(
                f"{name!r} is a partner of the {other.name} domain and does not play {domain.name} layouts; "
                f"{domain.name} partners: {', '.join(domain.partner_names())}")
    prefix, option = parse_name(name)
    if prefix in _LEGACY:
        return _legacy_build(name, prefix, llm, gate_params)
    entry = find_entry(prefix, domain)
    if llm is not None and not entry.llm:
        raise AgentNameError(f"agent {name!r} does not use an LLM")
    if gate_params is not None and not entry.gate:
        raise GateParamsNotUsedError(f"agent {name!r} runs no gate; gate parameters would have no effect")
    kwargs = {}
    if entry.llm:
        kwargs["llm"] = llm
    if entry.gate:
        kwargs["gate_params"] = gate_params
    agent = entry.load()(option, **kwargs)
    if (prefix not in AGENTS and _domain_kind(prefix, domain) is None
            and not all(callable(getattr(agent, m, None)) for m in ("reset", "act", "info"))):
        raise AgentPluginError(f"agent plug-in {prefix!r}: its factory returned a {type(agent).__name__}, "
                               "not an agent (reset, act, info)")
    if gate_params is not None and not uses_gate(agent):
        raise GateParamsNotUsedError(f"agent {name!r} runs no gate; gate parameters would have no effect")
    return agent


def _legacy_build(name: str, prefix: str, llm, gate_params) -> Agent:
    factory = _LEGACY[prefix][0]
    if len(inspect.signature(factory).parameters) >= 2:
        agent = factory(name, llm)
    elif llm is not None:
        raise AgentNameError(f"agent {name!r} does not use an LLM")
    else:
        agent = factory(name)
    if gate_params is not None:
        if not uses_gate(agent):
            raise GateParamsNotUsedError(f"agent {name!r} runs no gate; gate parameters would have no effect")
        agent.params = gate_params
    return agent


def uses_gate(agent: object) -> bool:
    """Does this agent instance run a belief gate whose parameters it reads at ``reset``?"""
    return bool(getattr(agent, "keeps_belief", False)) and hasattr(agent, "params")
