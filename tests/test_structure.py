"""Package structure rules, checked on every import statement (function-local ones included).

* ``beliefs/`` and ``models/`` import nothing from ``envs/``, ``agents/``, ``planners/``,
  ``eval/`` (nor the ``overcooked`` game package): the core is domain-free;
* ``models/`` never imports ``beliefs/`` (beliefs are built on models, not the reverse);
* ``planners/`` imports nothing from ``agents/`` or ``envs/``; ``skills/`` nothing from ``envs/``;
* the package has no import cycle (module-level imports, i.e. what runs at import time);
* importing the gate stays light (no JAX, NumPyro or game code).

The checker is tested on planted violations so that it can fail.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "beliefgate"

# (package, forbidden import prefixes)
RULES = [
    ("beliefgate.beliefs", ("beliefgate.envs", "beliefgate.agents", "beliefgate.planners",
                            "beliefgate.eval", "overcooked")),
    ("beliefgate.models", ("beliefgate.envs", "beliefgate.agents", "beliefgate.planners",
                           "beliefgate.eval", "beliefgate.beliefs", "overcooked")),
    ("beliefgate.planners", ("beliefgate.agents", "beliefgate.envs")),
    ("beliefgate.skills", ("beliefgate.envs",)),
]


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path, root: Path, top_level_only: bool = False):
    """``(imported module, line)`` for every import in ``path``; relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    nodes = tree.body if top_level_only else ast.walk(tree)
    if top_level_only:  # module level includes imports under if/try at top level
        nodes = [n for top in tree.body for n in ast.walk(top)
                 if not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield mod, node.lineno
            for alias in node.names:  # `from pkg import submodule`
                yield f"{mod}.{alias.name}", node.lineno


def violations(root: Path) -> list[str]:
    """Every import that breaks a layering rule, as ``file:line imports module``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        here = module_name(path, root)
        for package, forbidden in RULES:
            if here != package and not here.startswith(package + "."):
                continue
            for mod, line in imports(path, root):
                if any(mod == f or mod.startswith(f + ".") for f in forbidden):
                    out.append(f"{path.relative_to(root.parent)}:{line} imports {mod}")
    return sorted(set(out))


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module-level import edges between the package's own modules."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        for target, _ in imports(path, root, top_level_only=True):
            while target and target not in modules:  # `from a.b import name` -> module a.b
                target = target.rpartition(".")[0]
            # a module importing its own ancestor package is not a cycle: the parent's
            # __init__ always runs first, whatever imports the child
            if target and target != mod and not mod.startswith(target + "."):
                graph[mod].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_layering_rules_hold_on_every_import():
    bad = violations(ROOT)
    assert not bad, "layering violations:\n" + "\n".join(bad)


def test_no_import_cycle():
    found = cycles(import_graph(ROOT))
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "beliefgate"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()
    return root


def test_checker_catches_a_function_local_import(tmp_path):
    root = _plant(tmp_path, {
        "beliefs/ok.py": "import numpy as np\nfrom beliefgate.models import forward\n",
        "beliefs/bad.py": "def f():\n    import beliefgate.envs\n    return beliefgate.envs\n",
        "models/worse.py": "def g():\n    from ..beliefs import gate\n    return gate\n",
        "envs/__init__.py": "",
    })
    bad = violations(root)
    assert any("beliefs/bad.py:2 imports beliefgate.envs" in b for b in bad), bad
    assert any("models/worse.py:2 imports beliefgate.beliefs" in b for b in bad), bad
    assert not any("ok.py" in b for b in bad)


def test_checker_catches_an_import_cycle(tmp_path):
    root = _plant(tmp_path, {
        "agents/a.py": "from beliefgate.eval import b\n",
        "eval/b.py": "import beliefgate.agents.a\n",
        "eval/c.py": "def late():\n    from beliefgate.agents import a\n",  # function-local: no cycle
    })
    found = cycles(import_graph(root))
    assert found == [["beliefgate.agents.a", "beliefgate.eval.b"]], found


def test_importing_the_gate_is_light():
    code = ("import sys; from beliefgate import Gate, GateParams; Gate.from_logprobs(2); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'overcooked', 'numpyro')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("package", ["beliefgate.beliefs", "beliefgate.models"])
def test_core_imports_without_domain_code(package):
    code = (f"import sys, importlib, pkgutil, {package} as p\n"
            "for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.'):\n"
            "    importlib.import_module(m.name)\n"
            "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('beliefgate.')}"
            " & {'envs', 'agents', 'planners', 'eval'}), 'overcooked' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] False"
