"""Domain plug-ins: how a domain-free gate learns to read a domain's states.

A domain registers an *observer factory* under the entry-point group
``beliefgate.domains`` in its package metadata::

    [project.entry-points."beliefgate.domains"]
    overcooked = "beliefgate.envs.overcooked.gate:make_observer"

The factory takes ``(params, **options)`` and returns an object with
``skill_names`` (sequence of str) and ``evidence(state, next_state) ->
StepEvidence``. :meth:`beliefgate.beliefs.gate.Gate.for_domain` looks it up here,
so nothing in :mod:`beliefgate.beliefs` imports a domain.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points
from typing import Callable

from beliefgate.errors import LookupFailure

GROUP = "beliefgate.domains"


class UnknownDomainError(LookupFailure):
    """No installed package registers this domain."""


@lru_cache(maxsize=None)
def _factories() -> dict:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def domain_names() -> list[str]:
    """Names of the registered domains."""
    return sorted(_factories())


def observer_factory(name: str) -> Callable:
    """The observer factory registered as ``name``."""
    eps = _factories()
    if name not in eps:
        raise UnknownDomainError(
            f"no domain {name!r} is registered (entry-point group {GROUP!r}); known: {sorted(eps)}; "
            "reinstall beliefgate (pip install -e .) if the list is empty")
    return eps[name].load()


def make_observer(name: str, params, **options):
    """Build domain ``name``'s observer for ``params`` with the domain's ``options``."""
    return observer_factory(name)(params, **options)


__all__ = ["GROUP", "UnknownDomainError", "domain_names", "observer_factory", "make_observer"]
