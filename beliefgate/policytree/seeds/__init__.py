"""Hand-written seed trees, one per classic layout (``<layout>.py`` beside this file).

Each file is *data*: never imported, only read as text and run in the sandbox like any
generated tree. Its module docstring is the tree in the planner's two-part textual format
(what the planner is shown as the last accepted tree), its code the implementation.
"""

from __future__ import annotations

import ast
from importlib import resources

from beliefgate.envs.overcooked.layouts import resolve_layout


def seed_code(layout: str) -> str:
    """Source of the seed tree for ``layout`` (classic or 2019 study name)."""
    name = resolve_layout(layout)
    return resources.files(__package__).joinpath(f"{name}.py").read_text()


def seed_text(layout: str) -> str:
    """The seed tree as text (its docstring, the planner's two-part format)."""
    return tree_text(seed_code(layout))


def tree_text(code: str) -> str:
    """The docstring of a tree file ('' when it has none or does not parse)."""
    try:
        return ast.get_docstring(ast.parse(code)) or ""
    except (SyntaxError, ValueError):
        return ""
