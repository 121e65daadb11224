"""Shared test fixtures. Tests never write into site-packages: the cache goes to a temp dir."""

import os

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import pytest


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    path = tmp_path_factory.mktemp("beliefgate-cache")
    old = os.environ.get("BELIEFGATE_CACHE")
    os.environ["BELIEFGATE_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("BELIEFGATE_CACHE", None)
    else:
        os.environ["BELIEFGATE_CACHE"] = old


@pytest.fixture(scope="module")
def x64():
    """Float64 JAX for one test module (never at package import time): ``pytestmark = pytest.mark.usefixtures("x64")``."""
    import jax

    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """No test talks to the network from this process except to servers on this machine."""
    import ipaddress
    import socket

    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else None
        if host is not None:
            try:
                ok = host == "localhost" or ipaddress.ip_address(host).is_loopback
            except ValueError:
                ok = False
            if not ok:
                raise ConnectionRefusedError(f"tests may only connect to loopback, not {host!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
