"""Co-pi-tree: distil LLM reasoning into an executable, sandboxed policy tree (SPEC §6).

* :class:`Sandbox` -- the only place generated tree code runs (``sandbox.py``).
* :func:`~beliefgate.policytree.agent.make_policy_tree_agent` -- play a tree file as an agent.
* :func:`~beliefgate.policytree.learn.learn` -- the planner -> coder -> rollouts -> summarizer loop.
* :mod:`~beliefgate.policytree.seeds` -- one hand-written tree per layout.

Importing this package is cheap (standard library only); the agent and the loop load
Overcooked and the planner layer on first use.
"""

from beliefgate.policytree.sandbox import SKILLS, Sandbox, SandboxError, SandboxTimeout, SandboxUnavailable, SandboxViolation

__all__ = ["SKILLS", "Sandbox", "SandboxError", "SandboxTimeout", "SandboxUnavailable", "SandboxViolation"]
