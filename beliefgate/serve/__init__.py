"""The gate as an HTTP service (``beliefgate serve``) and its Python client.

``from beliefgate.serve import Client`` needs only httpx; the server side
(:mod:`beliefgate.serve.app`) needs FastAPI and uvicorn (``pip install beliefgate[serve]``).
See ``docs/serve.md``.
"""

from __future__ import annotations

_LAZY = {
    "Client": "beliefgate.serve.client",
    "RemoteGate": "beliefgate.serve.client",
    "RemoteKappa": "beliefgate.serve.client",
    "ServeError": "beliefgate.serve.client",
    "ServeSettings": "beliefgate.serve.settings",
    "create_app": "beliefgate.serve.app",
}

__all__ = ["Client", "RemoteGate", "RemoteKappa", "ServeError", "ServeSettings", "create_app"]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'beliefgate.serve' has no attribute {name!r}")
