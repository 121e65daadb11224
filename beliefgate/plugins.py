"""Domain plug-ins: how the domain-free core learns to read a domain.

A domain registers factories under entry-point groups in its package metadata::

    [project.entry-points."beliefgate.domains"]      # observers for Gate.observe
    overcooked = "beliefgate.envs.overcooked.gate:make_observer"

    [project.entry-points."beliefgate.fitdata"]      # trajectory logs -> FitData
    overcooked = "beliefgate.envs.overcooked.fitdata:load_logs"

Agents register the same way, each under its name prefix (see
:mod:`beliefgate.agents.registry`; the entry point names an ``AgentEntry``)::

    [project.entry-points."beliefgate.agents"]       # agents usable by name (--ego NAME)
    my-agent = "my_package.agents:ENTRY"

An observer factory takes ``(params, **options)`` and returns an object with
``skill_names`` (sequence of str) and ``evidence(state, next_state) ->
StepEvidence``; a fit-data loader takes ``(paths, partner_side=None, **options)``
and returns :class:`beliefgate.models.data.FitData`. ``Gate.for_domain`` and
``beliefgate.models.data.load_logs`` look them up here, so nothing in
:mod:`beliefgate.beliefs` or :mod:`beliefgate.models` imports a domain.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points
from typing import Callable

from beliefgate.errors import LookupFailure

OBSERVERS = "beliefgate.domains"
FIT_DATA = "beliefgate.fitdata"
AGENT_PLUGINS = "beliefgate.agents"
GROUP = OBSERVERS  # the observer group, under its first name


class UnknownDomainError(LookupFailure):
    """No installed package registers this domain (for this kind of plug-in)."""


@lru_cache(maxsize=None)
def _registered(group: str) -> dict:
    return {ep.name: ep for ep in entry_points(group=group)}


def entry_points_in(group: str) -> dict:
    """``{name: EntryPoint}`` of the plug-ins installed in ``group`` (read once per process;
    nothing is loaded)."""
    return dict(_registered(group))


def domain_names(group: str = OBSERVERS) -> list[str]:
    """Names of the domains registered in ``group``."""
    return sorted(_registered(group))


def plugin(group: str, name: str) -> Callable:
    """The factory domain ``name`` registers in entry-point group ``group``."""
    eps = _registered(group)
    if name not in eps:
        raise UnknownDomainError(
            f"no domain {name!r} is registered in {group!r}; known: {sorted(eps)}; "
            "reinstall beliefgate (pip install -e .) if the list is empty")
    return eps[name].load()


def observer_factory(name: str) -> Callable:
    """The observer factory registered as ``name``."""
    return plugin(OBSERVERS, name)


def make_observer(name: str, params, **options):
    """Build domain ``name``'s observer for ``params`` with the domain's ``options``."""
    return observer_factory(name)(params, **options)


__all__ = ["OBSERVERS", "FIT_DATA", "AGENT_PLUGINS", "GROUP", "UnknownDomainError", "domain_names",
           "entry_points_in", "plugin",
           "observer_factory", "make_observer"]
