"""Distilled policy trees shipped with the package: the trees of docs/results_policytree.md.

Each ``<layout>.py`` (``v2/<name>`` as ``v2_<name>.py``) is the ``best.py`` of a
``beliefgate policytree distil`` run, copied by ``scripts/results_policytree.py ship``; ``cards.json``
records per layout the run that made it (teacher, partners, settings, accepted iteration and its
rollout reward, wall time, commit) and the file's sha256. The files are *data*: never imported,
only read as text and run in the sandbox (``policy-tree:distilled:LAYOUT``) like any generated tree.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Dict

from beliefgate.envs.domain import domain_for_layout
from beliefgate.errors import InputError

HERE = Path(__file__).parent
CARDS = HERE / "cards.json"


class NoDistilledTreeError(InputError):
    """No distilled tree ships for the layout."""


def file_name(layout: str) -> str:
    """The file of ``layout``'s tree (canonical name; ``/`` becomes ``_``)."""
    return layout.replace("/", "_") + ".py"


def cards() -> Dict[str, Dict[str, Any]]:
    """``{layout: card}`` of every shipped tree."""
    return json.loads(CARDS.read_text(encoding="utf-8")) if CARDS.is_file() else {}


def distilled_code(layout: str) -> str:
    """Source of the distilled tree shipped for ``layout`` (any name its domain knows)."""
    name = domain_for_layout(layout).resolve_layout(layout)
    path = HERE / file_name(name)
    if not path.is_file():
        shipped = ", ".join(sorted(cards())) or "none"
        raise NoDistilledTreeError(f"no distilled tree ships for layout {name!r} (shipped: {shipped}); "
                                   "distil one with `beliefgate policytree distil`")
    return path.read_text(encoding="utf-8")


def digest(code: str) -> str:
    """The sha256 of a tree's code (hex): the cards' ``sha256``, and how the policy-tree agent keys
    its sandboxes and the codes it has accepted."""
    return hashlib.sha256(code.encode()).hexdigest()
