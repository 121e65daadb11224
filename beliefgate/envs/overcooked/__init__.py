"""The Overcooked-AI domain: adapter, symbolic state, dynamics, controller, executor, partners.

``from beliefgate.envs.overcooked import overcooked_gate`` gives a gate that reads two
Overcooked states; the state type and the errors a caller may catch are exported beside it
(loaded lazily: importing this package imports no game code).
"""

from __future__ import annotations

_LAZY = {
    "overcooked_gate": "beliefgate.envs.overcooked.gate",
    "make_observer": "beliefgate.envs.overcooked.gate",
    "SymbolicState": "beliefgate.envs.overcooked.state",
    "StateFormatError": "beliefgate.envs.overcooked.state",
    "UnknownLayoutError": "beliefgate.envs.overcooked.layouts",
    "ImpossibleTransitionError": "beliefgate.envs.overcooked.dynamics",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'beliefgate.envs.overcooked' has no attribute {name!r}")
