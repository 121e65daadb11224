"""Hand-written seed trees: domain data (``Domain.seed_tree``; Overcooked keeps one per classic
layout in ``beliefgate/envs/overcooked/seed_trees/<layout>.py``).

Each file is *data*: never imported, only read as text and run in the sandbox like any
generated tree. Its module docstring is the tree in the planner's two-part textual format
(what the planner is shown as the last accepted tree), its code the implementation.
"""

from __future__ import annotations

import ast

from beliefgate.envs.domain import domain_for_layout


def seed_code(layout: str) -> str:
    """Source of the seed tree for ``layout`` (any name its domain knows)."""
    return domain_for_layout(layout).seed_tree(layout)


def seed_text(layout: str) -> str:
    """The seed tree as text (its docstring, the planner's two-part format)."""
    return tree_text(seed_code(layout))


def tree_text(code: str) -> str:
    """The docstring of a tree file ('' when it has none or does not parse)."""
    try:
        return ast.get_docstring(ast.parse(code)) or ""
    except (SyntaxError, ValueError):
        return ""
