"""The one root of every exception beliefgate raises on purpose.

* :class:`BeliefgateError` -- catch this to catch everything the package raises deliberately.
* :class:`InputError` -- the caller passed a bad value (also a ``ValueError``); the CLI maps it
  to exit status 2 with one line naming the value.
* :class:`LookupFailure` -- a name (skill, layout, partner, session) is unknown (also a
  ``KeyError``; its message is the plain text, not the quoted repr).
* :class:`RuntimeFailure` -- something outside the caller's input failed (a service, a file, a
  model); the CLI maps it to exit status 1.

Every module-level error class derives from exactly one of these, so a boundary needs a single
``except BeliefgateError`` and no plain ``ValueError``/``RuntimeError`` reaches a user.
"""

from __future__ import annotations


class BeliefgateError(Exception):
    """Root of every deliberate beliefgate exception."""


class InputError(BeliefgateError, ValueError):
    """A bad value supplied by the caller (argument, file, request field)."""


class LookupFailure(BeliefgateError, KeyError):
    """An unknown name. ``str()`` is the message itself (``KeyError`` would quote it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__


class RuntimeFailure(BeliefgateError, RuntimeError):
    """A failure that is not the caller's input: a server, a file system, a model."""


__all__ = ["BeliefgateError", "InputError", "LookupFailure", "RuntimeFailure"]
