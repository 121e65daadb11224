"""The Overcooked-AI domain: adapter, symbolic state, dynamics, controller, executor, partners.

``from beliefgate.envs.overcooked import overcooked_gate`` gives a gate that reads two
Overcooked states (loaded lazily: importing this package imports no game code).
"""

from __future__ import annotations

__all__ = ["overcooked_gate", "make_observer"]


def __getattr__(name: str):
    if name in __all__:
        from beliefgate.envs.overcooked import gate

        return getattr(gate, name)
    raise AttributeError(f"module 'beliefgate.envs.overcooked' has no attribute {name!r}")
