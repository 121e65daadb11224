"""beliefgate: partner-skill belief inference and belief-driven control signals.

The plug-in API for external agents is ``from beliefgate import Gate, GateParams``.
Heavy modules (JAX, Overcooked) are imported lazily, on first use.
"""

from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "Gate": "beliefgate.beliefs.gate",
    "GateParams": "beliefgate.beliefs.gate",
    "Decision": "beliefgate.beliefs.gate",
    "Kappa": "beliefgate.beliefs.kappa",
    "KappaParams": "beliefgate.beliefs.kappa",
    "Judgment": "beliefgate.beliefs.kappa",
    "Rollout": "beliefgate.beliefs.kappa",
    "RolloutRound": "beliefgate.beliefs.kappa",
}

__all__ = ["Gate", "GateParams", "Decision", "Kappa", "KappaParams", "Judgment", "Rollout", "RolloutRound",
           "__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name])
        return getattr(module, name)
    raise AttributeError(f"module 'beliefgate' has no attribute {name!r}")
