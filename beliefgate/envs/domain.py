"""The seam between a game and everything that plays, scores or draws it.

A :class:`Domain` holds what agents, the episode runner, metrics, pages and policy trees need from
one game: its layouts (each with a player count), the real dynamics (:meth:`Domain.make_env`), the
symbolic state and its JSON, the observer that turns two states into the gate's evidence, the skill
library with its likelihood controllers, the executor that turns a skill into primitive actions,
what each skill needs now, scene text for planners, a progress potential, the flat state policy
trees read, partners, and static geometry for rendering. Agents, ``eval``, ``planners``,
``policytree`` and ``viewer`` reach a game only through this object.

Domains are plug-ins: a package registers its :class:`Domain` instance under the entry-point group
``beliefgate.domains`` (the group the gate's observers have always used: a Domain is also callable
as its own observer factory, so ``Gate.for_domain(name, ...)`` keeps working), or, in a process,
with :func:`register_domain`. :func:`domain_for_layout` finds the domain that owns a layout name.

Writing a domain: subclass :class:`Domain`, set the class attributes, implement every method that
raises ``NotImplementedError`` here (:data:`REQUIRED` lists them; a plug-in lacking one is refused
with :class:`DomainPluginError` naming it). ``tests/test_domain_seam.py`` holds a small grid world
written this way, played by the same runner, agents and gate as Overcooked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from beliefgate.errors import InputError, LookupFailure


#: a domain's symbolic state (each domain has its own type; agents only pass it back to the domain)
State = Any


class UnknownLayoutError(LookupFailure):
    """A layout name no installed domain plays."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown layout"


class UnknownPartnerError(LookupFailure):
    """A partner or agent name that is not registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown partner"


class PartnerSpecError(InputError):
    """A partner file or spec that cannot be read or is invalid (the message names the field)."""


class PartnerLayoutError(PartnerSpecError):
    """A partner restricted to some layouts asked to play another."""


class DomainPluginError(InputError):
    """A registered domain plug-in lacks a required part (named in the message)."""


class PlayerCountError(InputError):
    """A number of players, partners or a seat that does not fit the layout's players."""


class SkillStatus(str, Enum):
    """What an executor says about the skill it runs, each step."""

    RUNNING = "running"
    COMPLETED = "completed"
    INVALID = "invalid"
    TIMED_OUT = "timed_out"


@dataclass(frozen=True)
class AgentKind:
    """An agent a domain builds by name for any seat, the ego's included (the agent table lists it
    beside its own rows): ``PREFIX`` or ``PREFIX:OPTION``, built by :meth:`Domain.make_named_agent`.
    ``option``: ``"none"``, ``"optional"`` or ``"required"`` (as an agent table row's). These agents
    take no LLM and no gate parameters."""

    prefix: str
    description: str
    option: str = "required"


#: the methods and attributes every domain must provide (checked when it is registered or loaded)
REQUIRED: Tuple[str, ...] = (
    "name", "backend", "default_horizon", "action_names",
    "layouts", "resolve_layout", "layout_info", "players",
    "make_env", "state_from_json", "detect_events", "completed_skills",
    "make_observer", "controller", "executor", "idle_action", "skill_needs",
    "scene_text", "progress", "flat_state", "make_partner", "partner_names", "partner_restriction",
    "render_layout", "render_frame",
)


class Domain:
    """One game behind the seam. Subclasses fill in every method that raises here."""

    #: the plug-in's name (the entry point's name)
    name: str = ""
    #: the dynamics it runs on, shown by ``beliefgate layouts --json`` (``classic``, ``v2``...)
    backend: str = ""
    #: the episode length the runner uses when none is given
    default_horizon: int = 400
    #: the primitive actions in index order (the legend of the actions in a log)
    action_names: Tuple[str, ...] = ()
    #: the per-player events that count as a delivery (the ``deliveries`` of an episode summary)
    delivery_events: Tuple[str, ...] = ()
    #: the index of the action that interacts with the world (None: the game has none)
    interact_action: Optional[int] = None

    # ------------------------------------------------------------------ layouts
    def layouts(self) -> Tuple[str, ...]:
        """The canonical layout names this domain plays."""
        raise NotImplementedError

    def owns_layout(self, name: str) -> bool:
        """Whether ``name`` (or an alias of it) is one of this domain's layouts."""
        try:
            self.resolve_layout(name)
        except LookupFailure:
            return False
        return True

    def resolve_layout(self, name: str) -> str:
        """The canonical name of ``name``; :class:`UnknownLayoutError` (a LookupFailure) if unknown."""
        raise NotImplementedError

    def layout_key(self, name: str) -> str:
        """What makes two names the same layout (an unknown name is itself)."""
        try:
            return self.resolve_layout(name)
        except LookupFailure:
            return name

    def layout_info(self, layout: str):
        """Static geometry of ``layout`` (what pages draw and metrics measure distances on)."""
        raise NotImplementedError

    def players(self, layout: str) -> int:
        """How many players ``layout`` starts."""
        raise NotImplementedError

    def describe_layout(self, layout: str) -> Dict[str, Any]:
        """A JSON summary of ``layout``: at least ``name``, ``backend`` and ``players``."""
        return {"name": self.resolve_layout(layout), "backend": self.backend, "players": self.players(layout)}

    # ---------------------------------------------------------------- dynamics
    def make_env(self, layout: str, horizon: int, **options):
        """A fresh environment: ``reset() -> state``, ``step(joint_actions) -> StepResult``
        (``state``, ``reward``, ``done``, per-player ``events``), ``score``, ``num_players``."""
        raise NotImplementedError

    def env_options(self, **options) -> Dict[str, Any]:
        """The options :meth:`make_env` understands, with their values (written into log headers)."""
        return dict(options)

    def check_env_options(self, layout: str, **options) -> None:
        """Refuse options :meth:`make_env` cannot take on ``layout`` before any episode: an
        ``InputError`` (or ``TypeError`` for an option it does not know) naming the option. By
        default :meth:`env_options` is the check; a domain whose options depend on the layout
        overrides it."""
        self.env_options(**options)

    def state_from_json(self, data: Any):
        """This domain's symbolic state from its dict or JSON text."""
        raise NotImplementedError

    def detect_events(self, prev, state) -> List[List[str]]:
        """Per-player interaction events between two consecutive states."""
        raise NotImplementedError

    def completed_skills(self, events: Sequence[str], library) -> List[int]:
        """Indices of the skills of ``library`` that ``events`` (one player's) complete."""
        raise NotImplementedError

    def move_blocked(self, state, next_state, player: int, action: int) -> Optional[bool]:
        """Whether ``player``'s ``action`` was a move into free space that another player blocked
        (None when the action is no move; the blocking-rate metric counts True)."""
        return None

    # ------------------------------------------------------------------ beliefs
    def make_observer(self, params=None, layout: Optional[str] = None, partner: int = 1, **options):
        """The gate's observer of player ``partner`` on ``layout``: ``skill_names`` and
        ``evidence(state, next_state) -> StepEvidence``."""
        raise NotImplementedError

    def __call__(self, params=None, **options):
        # a domain is its own observer factory: the plug-in protocol of Gate.for_domain
        return self.make_observer(params, **options)

    def make_gate(self, layout: str, params=None, partner: int = 1):
        """A :class:`~beliefgate.beliefs.gate.Gate` observing player ``partner`` on ``layout``."""
        from beliefgate.beliefs.gate import Gate

        # built from this object's observer (a domain registered in process has no entry point);
        # ``domain`` lets a pickled gate rebuild its observer through the entry point
        return Gate.for_observer(self.make_observer, params, domain=self.name, layout=layout, partner=partner)

    # ------------------------------------------------------- skills and control
    def controller(self, layout: str):
        """The likelihood controller of ``layout`` (its ``library`` is the skill library)."""
        raise NotImplementedError

    def executor(self, controller, player: int, rng):
        """An executor of player ``player``: ``start(skill, ...)``, ``update(state, my_events) ->
        SkillStatus``, ``act(state) -> action``, ``targets(state)``."""
        raise NotImplementedError

    def idle_action(self, state, player: int, rng) -> int:
        """A visible way for ``player`` to wait when it runs no skill."""
        raise NotImplementedError

    def skill_needs(self, state, player: int, controller, **options) -> Mapping[str, float]:
        """How much the kitchen needs each skill from ``player`` now (the rule planner's input)."""
        raise NotImplementedError

    # ------------------------------------------------------------ goals (optional)
    def goal_names(self, layout: str) -> Optional[Sequence[str]]:
        """The goals a teammate may pursue on ``layout`` (OvercookedV2: the recipes), or None
        where the domain has no goal belief (the default). A domain that names goals implements
        :meth:`goal_evidence`, and its :meth:`skill_needs` takes ``goal=`` (a believed goal)."""
        return None

    def seen_goal(self, state, player: int) -> Optional[str]:
        """The goal ``player`` sees to be active in ``state`` (what it may tell its teammates: an
        OvercookedV2 recipe at the indicator), or None (the default: no goal is ever seen)."""
        return None

    def goal_evidence(self, prev, state, partner: int, viewer: int, skill_names: Sequence[str], **options):
        """The goal belief's evidence about ``partner`` for the step ``prev -> state`` as ``viewer``
        observes it: ``(log_weights [G, K], goal_change, goal_loglik [G] or None)`` (see docs/goal.md)."""
        raise NotImplementedError

    # ------------------------------------------------- forward models (optional)
    def batch_stepper(self, layout: str):
        """A stepper of many imagined states at once for OverForge's rollouts, or None (the
        default: rollouts step one environment of :meth:`make_env` per branch). A stepper has
        ``step(states, joint_actions, seeds) -> [(state, reward, events), ...]``, one row per state,
        continuing each state under the dynamics its episode runs (see the V2 domain)."""
        return None

    def with_goal(self, state, goal: str):
        """``state`` with the goal (OvercookedV2: the recipe) ``goal`` of :meth:`goal_names` made the
        active one: what an imagined continuation under a believed goal starts from. Only a domain
        that names goals needs it; the default has none to set."""
        raise NotImplementedError

    def observable_goal(self, state, player: int) -> Optional[str]:
        """The goal ``player`` would act on from what it observes now, without any belief
        (OvercookedV2: a recipe it sees, else the first recipe the pots and the teammates' hands
        allow); None where the domain names no goals."""
        return None

    def complements(self, state, player: int, skill: str, partner_skill: str, controller) -> bool:
        """Whether ``player``'s ``skill`` complements a teammate running ``partner_skill`` in
        ``state`` (the metrics pass the logged state, an agent the state under the goal it believes).
        By default the skill library's role table decides (:meth:`SkillLibrary.is_complementary`, SPEC
        §2; ``state`` unused); a domain whose table cannot judge it judges from the state
        (OvercookedV2: each ingredient is its own role, so the table cannot tell the recipe's
        ingredient from another). The gap metrics and BayesBelief's interrupt filter ask it."""
        return controller.library.is_complementary(skill, partner_skill)

    def goal_in_making(self, state, weights: Mapping[str, float]) -> Optional[str]:
        """Of the goals with ``weights`` > 0 (a goal belief's posterior), the one the kitchen has
        already started to make in ``state``, or None (nothing started, or no domain goals):
        what an unsure agent imagines so that it finishes, and so tests, the dish under way."""
        return None

    def rollout_value(self, state) -> float:
        """The value an imagined continuation is scored by (OverForge's rollouts): by default
        :meth:`progress`; a domain with goals counts progress toward the state's active goal only."""
        return self.progress(state)

    # ------------------------------------------------- planners, trees, metrics
    def scene_text(self, state, ego: int) -> str:
        """The state as the text a planner reads."""
        raise NotImplementedError

    def progress(self, state) -> float:
        """A progress potential of the shared task (OverForge's rollout value)."""
        raise NotImplementedError

    #: the name and version of the flat state :meth:`flat_state` builds (None: not declared); a
    #: consumer written for one schema (``policytree distil``'s features) refuses the others
    flat_state_schema: Optional[str] = None

    def flat_state(self, state, player: int, **options) -> Dict[str, Any]:
        """The flat dict of named features a policy tree reads."""
        raise NotImplementedError

    # ---------------------------------------------------------------- rendering
    def render_layout(self, layout: str) -> Dict[str, Any]:
        """The static scene of ``layout`` as the report and play pages draw it."""
        raise NotImplementedError

    def render_frame(self, state) -> List[Any]:
        """One state as a compact JSON-ready record for the pages."""
        raise NotImplementedError

    def render_view(self, state, player: int) -> List[Any]:
        """One state as player ``player`` sees it (the play page's person): :meth:`render_frame`
        unless the game hides something from some players (OvercookedV2's recipe)."""
        return self.render_frame(state)

    # ------------------------------------------------------------ policy trees
    def seat_skills(self, layout: str, player: int) -> Tuple[str, ...]:
        """The skills ``player`` can use on ``layout`` (all of the library's by default)."""
        return tuple(self.controller(layout).library.names)

    def seat_note(self, layout: str, player: int) -> str:
        """One sentence for a planner about what this seat and its teammates can do ('' by default)."""
        return ""

    def flat_state_text(self, flat: Mapping[str, Any]) -> str:
        """A flat state as text for a planner (JSON by default)."""
        import json

        return json.dumps(dict(flat), sort_keys=True)

    def probe_states(self, layout: str, seat: int) -> List[Dict[str, Any]]:
        """Flat states that exercise a policy tree before it is accepted (none by default)."""
        return []

    def seed_tree(self, layout: str) -> str:
        """The source of the hand-written policy tree for ``layout``."""
        raise LookupFailure(f"the {self.name} domain ships no seed policy tree for {layout!r}")

    # ------------------------------------------------------- agents by name (optional)
    def agent_kinds(self) -> Tuple[AgentKind, ...]:
        """The agents this game builds by name for the agent table (classic Overcooked: ``bc``;
        OvercookedV2: ``ppo``, ``fcp``); none by default. Listing them imports nothing heavy."""
        return ()

    def make_named_agent(self, prefix: str, option: Optional[str]):
        """A fresh agent of the kind ``prefix`` of :meth:`agent_kinds` (``option``: what follows
        ``:``, None when absent); it may play other domains' layouts too (a trained policy through
        a ``jaxmarl_twin``). Only a domain that lists kinds implements it."""
        raise UnknownPartnerError(f"the {self.name} domain builds no agent {prefix!r}")

    def named_agent_digest(self, prefix: str, option: Optional[str]) -> Optional[str]:
        """A short hash of what defines ``prefix:option`` beyond its name (a checkpoint's bytes), checking
        that it loads; None (the default) for an agent defined by its name alone."""
        return None

    # ------------------------------------------------------------------ partners
    def partner_key(self, name: str) -> str:
        """What makes two partner names the same partner (a path and its alias, say)."""
        return name

    def check_partners(self, names: Sequence[str], horizon: Optional[int] = None) -> None:
        """Refuse, before any episode, partner names this domain does not have (or, given a
        ``horizon``, cannot play for that many steps)."""
        for name in names:
            if not self.is_partner(name):
                raise UnknownPartnerError(f"unknown partner {name!r}; the {self.name} domain has "
                                          f"{', '.join(self.partner_names())}")

    def partner_group(self, name: str) -> Optional[str]:
        """The report group of partner ``name`` (its role preference, say); None: no group."""
        return None

    def partner_file_digest(self, name: str) -> Optional[str]:
        """A short hash of the partner file ``name`` names (None for a registered name)."""
        return None

    def switching_partners(self) -> Tuple[str, ...]:
        """Partners that change skill at hidden times (the switch benchmark's default population)."""
        return ()

    #: the agent the switch benchmark seats beside the partner it scores (and in any further seat);
    #: None: the benchmark needs ``ego=`` on this domain's layouts
    switch_ego: Optional[str] = None

    def switch_env_options(self, layout: str) -> Dict[str, Any]:
        """The environment options under which this domain's partners switch in the switch benchmark
        (OvercookedV2: the recipe resampled on delivery); none by default."""
        return {}

    def partner_fingerprint(self, name: str) -> str:
        """Text that changes whenever what partner ``name`` does changes (a cache key part)."""
        return name

    def partner_names(self) -> Tuple[str, ...]:
        """The scripted partners this domain ships."""
        raise NotImplementedError

    def default_partner(self) -> str:
        """The partner that plays a seat nobody named (``beliefgate episode`` without ``--partner``,
        the play page's third seat): ``balanced`` where the domain has it, else its first partner."""
        return "balanced" if self.is_partner("balanced") else self.partner_names()[0]

    def is_partner(self, name: str) -> bool:
        """Whether ``name`` is one of this domain's partners (a shipped name or a partner file)."""
        return name in self.partner_names()

    def make_partner(self, name: str):
        """A fresh scripted partner (an agent: ``reset``, ``act``, ``info``)."""
        raise NotImplementedError

    def partner_restriction(self, name: str, layout: str) -> Optional[str]:
        """Why partner ``name`` does not play ``layout`` (None when it does)."""
        raise NotImplementedError

    def check_players(self, layout: str, count: int) -> None:
        """Refuse ``count`` players on ``layout`` unless it is the layout's number."""
        want = self.players(layout)
        if count != want:
            raise PlayerCountError(f"layout {layout} has {want} players: give {want - 1} "
                                   f"partner{'s' if want != 2 else ''}, got {count - 1}")


# ----------------------------------------------------------------- registry
_LOCAL: Dict[str, Domain] = {}
#: layout name -> its domain, filled as layouts are looked up (cleared when the registry changes)
_BY_LAYOUT: Dict[str, Domain] = {}
_LOCK = threading.Lock()


def check_domain(domain: Any, name: str = "?") -> Domain:
    """``domain`` if it provides every part of :data:`REQUIRED`; else :class:`DomainPluginError`
    naming the first missing part."""
    for part in REQUIRED:
        value = getattr(domain, part, None)
        if value is None or value == "" or value == ():
            raise DomainPluginError(f"domain plug-in {name!r} lacks {part!r}")
        if callable(value) and getattr(type(domain), part, None) is getattr(Domain, part, None):
            raise DomainPluginError(f"domain plug-in {name!r} lacks {part!r} (not implemented)")
    return domain


def register_domain(domain: Domain) -> Domain:
    """Make ``domain`` known in this process (tests, notebooks); a name already registered by this
    call is replaced. Entry-point domains are found without this."""
    check_domain(domain, getattr(domain, "name", "?"))
    with _LOCK:
        _LOCAL[domain.name] = domain
        _BY_LAYOUT.clear()
    return domain


def unregister_domain(name: str) -> None:
    """Forget a domain added with :func:`register_domain` (no error if it was not)."""
    with _LOCK:
        _LOCAL.pop(name, None)
        _BY_LAYOUT.clear()


def get_domain(name: str) -> Domain:
    """The domain registered as ``name`` (in process first, then entry points)."""
    from beliefgate.plugins import OBSERVERS, plugin

    with _LOCK:
        if name in _LOCAL:
            return _LOCAL[name]
    found = plugin(OBSERVERS, name)
    if not isinstance(found, Domain):
        raise DomainPluginError(f"domain plug-in {name!r} registers an observer factory, not a Domain: it can "
                                "feed Gate.for_domain but not play episodes")
    return check_domain(found, name)


def domains() -> List[Domain]:
    """Every domain that can play episodes: the ones registered in process, then the entry points
    that are full domains (an observer-only plug-in is skipped)."""
    from beliefgate.plugins import OBSERVERS, domain_names, plugin

    with _LOCK:
        out = list(_LOCAL.values())
    seen = {d.name for d in out}
    for name in domain_names(OBSERVERS):
        if name in seen:
            continue
        found = plugin(OBSERVERS, name)
        if isinstance(found, Domain):
            out.append(check_domain(found, name))
    return out


def domain_for_layout(layout: str) -> Domain:
    """The domain that plays ``layout``; :class:`UnknownLayoutError` naming every known layout."""
    if not isinstance(layout, str) or not layout:
        raise UnknownLayoutError(f"a layout must be a non-empty name, got {layout!r}")
    cached = _BY_LAYOUT.get(layout)
    if cached is not None:
        return cached
    with _LOCK:
        local = list(_LOCAL.values())
    # the domains registered in process are asked first, so they load no entry point
    owner = next((d for d in local if d.owns_layout(layout)), None)
    if owner is None:
        found = domains()  # in process first, then the entry points
        owner = next((d for d in found if d.owns_layout(layout)), None)
        if owner is None:
            known = [name for d in found for name in d.layouts()]
            raise UnknownLayoutError(f"unknown layout {layout!r}; supported layouts: {', '.join(known)}")
    with _LOCK:
        _BY_LAYOUT[layout] = owner
    return owner


def resolve_layout(layout: str) -> str:
    """The canonical name of ``layout`` in whichever domain plays it."""
    return domain_for_layout(layout).resolve_layout(layout)


def layout_key(layout: str) -> str:
    """What makes two layout names the same layout, across domains (an unknown name is itself)."""
    try:
        return domain_for_layout(layout).layout_key(layout)
    except UnknownLayoutError:
        return layout


def partner_domain(name: str, domain: Optional[Domain] = None) -> Optional[Domain]:
    """The domain whose partner ``name`` is: ``domain`` when given and it has one of that name (an
    episode takes its partners from its own game), else the first domain that has it; None when
    none has it."""
    if not isinstance(name, str) or not name:
        return None
    for d in ([domain] if domain is not None else domains()):
        if d.is_partner(name):
            return d
    return None


def partner_key(name: str) -> str:
    """What makes two partner names the same partner, in whichever domain has it (else the name)."""
    owner = partner_domain(name)
    return owner.partner_key(name) if owner is not None else name


def all_layouts() -> List[str]:
    """Every layout of every domain, domain by domain."""
    return [name for d in domains() for name in d.layouts()]


def check_seat(seat: Any, players: int) -> int:
    """``seat`` as a player index in ``[0, players)``, else :class:`PlayerCountError` naming it."""
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < players:
        raise PlayerCountError(f"seat must be a player index in 0..{players - 1}, got {seat!r}")
    return seat


__all__ = ["AgentKind", "Domain", "DomainPluginError", "PartnerLayoutError", "PartnerSpecError", "PlayerCountError", "REQUIRED",
           "SkillStatus", "State", "UnknownLayoutError", "UnknownPartnerError",
           "all_layouts", "check_domain", "check_seat", "domain_for_layout", "domains", "get_domain",
           "layout_key", "partner_domain", "partner_key", "register_domain", "resolve_layout", "unregister_domain"]
