"""The one place that imports JaxMARL's OvercookedV2 (quietly, and with a clear error when absent).

``import jaxmarl`` prints "Importing submoduled environments..." on stdout and one of its modules
points ``sys.stdout`` back at ``sys.__stdout__`` while it loads, so a plain ``redirect_stdout`` does
not hold: both are pointed at a buffer for the duration of the import and restored after it.
"""

from __future__ import annotations

import io
import sys
import threading
from types import SimpleNamespace

from beliefgate.errors import InputError

_LOCK = threading.Lock()
_MODULES = None

#: the command that installs what this backend needs
INSTALL_HINT = 'pip install -e ".[v2]"'


class MissingExtraError(InputError):
    """The ``v2`` extra (jaxmarl and what it needs) is not installed."""


def jaxmarl_v2() -> SimpleNamespace:
    """JaxMARL's OvercookedV2 modules (``env``, ``common``, ``layouts``, ``settings``), imported once."""
    global _MODULES
    if _MODULES is not None:
        return _MODULES
    with _LOCK:
        if _MODULES is None:
            out, real = sys.stdout, sys.__stdout__
            sys.stdout = sys.__stdout__ = io.StringIO()
            try:
                from jaxmarl.environments.overcooked_v2 import common, layouts, overcooked, settings
            except ImportError as exc:
                raise MissingExtraError(f"the OvercookedV2 backend needs jaxmarl ({exc.name or exc} is missing): "
                                        f"install the v2 extra with {INSTALL_HINT}") from None
            finally:
                sys.stdout, sys.__stdout__ = out, real
            _MODULES = SimpleNamespace(env=overcooked, common=common, layouts=layouts, settings=settings)
    return _MODULES
