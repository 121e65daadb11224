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
