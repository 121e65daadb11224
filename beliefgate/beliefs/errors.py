"""The belief-input errors, re-exported where callers of the gate and filters look for them.

They are defined in :mod:`beliefgate.models.errors` (the model validates the same inputs,
and ``models/`` never imports ``beliefs/``).
"""

from beliefgate.models.errors import *  # noqa: F401,F403
from beliefgate.models.errors import __all__  # noqa: F401
