"""The Overcooked wiring of the domain-free gate.

``overcooked_gate(layout, params, partner)`` is a :class:`~beliefgate.beliefs.gate.Gate`
whose ``observe(state, next_state)`` reads two :class:`SymbolicState` objects (or their
dicts / JSON) through :class:`~beliefgate.envs.overcooked.observer.OvercookedObserver`.
The same observer is registered as the ``overcooked`` domain plug-in
(entry-point group ``beliefgate.domains``), so ``Gate.for_domain("overcooked", ...)``
builds the same gate.
"""

from __future__ import annotations

from typing import Optional

from beliefgate.beliefs.config import GateParams
from beliefgate.beliefs.gate import Gate
from beliefgate.envs.overcooked.observer import OvercookedObserver


def make_observer(params: Optional[GateParams] = None, layout: str = "cramped_room",
                  partner: int = 1, **options) -> OvercookedObserver:
    """The ``overcooked`` domain plug-in: an observer of player ``partner`` on ``layout``."""
    return OvercookedObserver(layout, params, partner=partner, **options)


def overcooked_gate(layout: str, params: Optional[GateParams] = None, partner: int = 1) -> Gate:
    """A gate for Overcooked player ``partner`` on ``layout``; feed it with ``observe``."""
    return Gate.for_domain("overcooked", params, layout=layout, partner=partner)


__all__ = ["make_observer", "overcooked_gate"]
