"""Package structure rules, checked on every import statement (function-local ones included).

The layers of ``beliefgate``, lowest first (:data:`LAYERS`). A top-level package or module
may import from its own layer and the layers below it, never from a layer above:

0. ``errors``: the one root of the project's exceptions;
1. the base of shared utilities: ``validation``, ``fileio``, ``limits``, ``provenance``,
   ``plugins``, ``calibration``, ``figures``, ``console`` (and the package root
   ``beliefgate/__init__.py``, whose public names are imported lazily, by name);
2. ``skills``: the skill libraries;
3. ``models``: the skill-belief model, its fits and kappa's model;
4. ``beliefs``: the online filter, the gates, kappa;
5. ``planners``: LLM planners (prompts, parsing, fallbacks);
6. ``envs``: the domains (Overcooked's state, dynamics, controllers, partners; trajectory logs;
   the human data); ``rl``: PPO on the JaxMARL dynamics and trained policies (game-side, beside them);
7. ``agents``: players built from beliefs, planners and a domain, and the agent table;
8. ``eval``, ``policytree``, ``viewer``, ``serve``: siblings, which may import each other as
   long as no two of them do so both ways (directly or around a loop): today policytree and
   viewer play episodes through eval, and serve stands alone;
9. ``experiments`` (the drivers: modules that play or read episodes of several agents to
   make a result) and ``cli`` (the command line).

Checked on the source tree, so that a new package is held to them without being named here:

* every top-level package and module is in exactly one layer (a new one must be placed);
* no import reaches a layer above the importer's;
* the layers below ``envs`` import no game package (``overcooked``): the core is domain-free;
* there is no cycle between top-level packages, nor between modules. Function-local imports
  count (what a function imports when it runs is a dependency all the same), and importing
  ``a.b.c`` counts as importing the packages ``a.b`` and ``a`` too, whose ``__init__`` runs
  first; so do ``importlib.import_module`` / ``__import__`` of a literal name;
* importing the gate stays light (no JAX, NumPyro or game code), and importing every module
  below ``envs`` loads no package of ``envs`` or above.

Not an import: the agent table (``agents/registry.py``) names each factory as a
``"module:function"`` string, imported when an agent of that row is built. That is how the
table reaches an agent defined in a higher layer (``policy-tree`` in ``policytree/``) without
depending on it. Such a string counts as an import for the seam rule: the users of the seam
name no game module in a ``"module"`` / ``"module:function"`` string either (a game's own agents,
``bc``, ``ppo``, ``fcp``, come through its Domain's ``agent_kinds`` / ``make_named_agent``).

The checker is tested on planted violations so that it can fail.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "beliefgate"

#: top-level packages and modules of ``beliefgate``, lowest layer first (``beliefgate``: the root ``__init__``)
LAYERS = (
    ("errors",),
    ("beliefgate", "validation", "fileio", "limits", "provenance", "plugins", "calibration", "figures", "console"),
    ("skills",),
    ("models",),
    ("beliefs",),
    ("planners",),
    ("envs", "rl"),
    ("agents",),
    ("eval", "policytree", "viewer", "serve"),
    ("experiments", "cli"),
)
LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}

#: the layers below this one are domain-free: they import no game package
DOMAIN_LAYER = LAYER["envs"]
GAME_PACKAGES = ("overcooked", "overcooked_v2")

#: the users of the domain seam: they reach a game only through ``beliefgate.envs.domain`` (and the
#: game-free modules directly under ``envs/``), never through a game's own package under ``envs/``
SEAM_USERS = ("agents", "eval", "planners", "policytree", "viewer")

#: module cycles allowed for now, each as its sorted modules (none: beliefs/filter.py <-> beliefs/offline.py
#: went with issue 42; test_known_cycles_are_still_cycles says when an entry here is no longer needed)
KNOWN_CYCLES: list = []


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path, root: Path):
    """``(imported module, line)`` for every import in ``path``, function-local ones included;
    relative imports resolved; ``importlib.import_module`` / ``__import__`` of a literal name too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
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
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in ("import_module", "__import__"):
                yield node.args[0].value, node.lineno


def unit_of(module: str) -> str:
    """The top-level package or module of ``beliefgate`` that ``module`` belongs to (``beliefgate``: the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _resolve(target: str, modules) -> str:
    """The package's own module that ``target`` names (``from a.b import name`` -> ``a.b``), or ``""``."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target


def _own_imports(root: Path):
    """``(module, path, line, imported name, imported module)`` for every import of one of the package's
    own modules, the importer's own ancestor packages left out (their ``__init__`` runs first anyway)."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    for mod, path in sorted(modules.items()):
        for name, line in imports(path, root):
            target = _resolve(name, modules)
            if target and target != mod and not mod.startswith(target + "."):
                yield mod, path, line, name, target


def violations(root: Path) -> list[str]:
    """Every module outside the layers and every import that breaks a layering rule, as
    ``file:line imports module (why)``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        unit = unit_of(module_name(path, root))
        if unit not in LAYER:
            out.append(f"{path.relative_to(root.parent)}: {unit!r} is in no layer; place it in LAYERS")
            continue
        for name, line in imports(path, root):
            if name.split(".")[0] in GAME_PACKAGES and LAYER[unit] < DOMAIN_LAYER:
                out.append(f"{path.relative_to(root.parent)}:{line} imports {name} (a game package, below envs)")
    envs = root / "envs"
    games = {d.name for d in envs.iterdir() if (d / "__init__.py").is_file()} if envs.is_dir() else set()
    for mod, path, line, _, target in _own_imports(root):
        unit, other = unit_of(mod), unit_of(target)
        if unit in LAYER and other in LAYER and LAYER[other] > LAYER[unit]:
            out.append(f"{path.relative_to(root.parent)}:{line} imports {target} ({unit} is below {other})")
        parts = target.split(".")
        if unit in SEAM_USERS and len(parts) > 2 and parts[1] == "envs" and parts[2] in games:
            out.append(f"{path.relative_to(root.parent)}:{line} imports {target} ({unit} reaches a game only "
                       "through beliefgate.envs.domain)")
    for path in sorted(root.rglob("*.py")):
        unit = unit_of(module_name(path, root))
        if unit not in SEAM_USERS:
            continue
        for text, line in import_strings(path):
            parts = text.split(":")[0].split(".")
            if len(parts) > 2 and parts[:2] == ["beliefgate", "envs"] and parts[2] in games:
                out.append(f"{path.relative_to(root.parent)}:{line} names {text!r} ({unit} reaches a game only "
                           "through beliefgate.envs.domain)")
    return sorted(set(out))


#: a string that names a module, or a function in one (``"pkg.mod"``, ``"pkg.mod:function"``)
IMPORT_STRING = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(:[A-Za-z_]\w*)?")


def import_strings(path: Path):
    """``(text, line)`` for every string constant of ``path`` (f-string parts included) that reads
    as a module or ``module:function`` name -- what an import-string table (the agent table's
    factories) imports later."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and IMPORT_STRING.fullmatch(node.value):
            yield node.value, node.lineno


def import_graph(root: Path) -> dict[str, set[str]]:
    """Import edges between the package's own modules: every import, function-local ones included;
    importing ``a.b.c`` is an edge to ``a.b.c``, ``a.b`` and ``a`` (their ``__init__`` runs first)."""
    graph: dict[str, set[str]] = {module_name(p, root): set() for p in root.rglob("*.py")}
    for mod, _, _, _, target in _own_imports(root):
        while target:
            # a module importing its own ancestor package is not a cycle: the parent's
            # __init__ always runs first, whatever imports the child
            if target != mod and not mod.startswith(target + "."):
                graph[mod].add(target)
            target = target.rpartition(".")[0]
    return graph


def package_graph(root: Path) -> dict[str, set[str]]:
    """Import edges between top-level packages and modules (every import, function-local ones included)."""
    graph: dict[str, set[str]] = {unit_of(module_name(p, root)): set() for p in root.rglob("*.py")}
    for mod, _, _, _, target in _own_imports(root):
        if unit_of(target) != unit_of(mod):
            graph[unit_of(mod)].add(unit_of(target))
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

    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 10_000))
    try:   # restored: a raised limit leaks into later tests of the process (a JSON nested 3000 deep parses)
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(before)
    return found


def test_layering_rules_hold_on_every_import():
    bad = violations(ROOT)
    assert not bad, "layering violations:\n" + "\n".join(bad)


def test_no_package_cycle():
    found = cycles(package_graph(ROOT))
    assert not found, "package cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_no_import_cycle():
    found = [c for c in cycles(import_graph(ROOT)) if c not in KNOWN_CYCLES]
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_known_cycles_are_still_cycles():
    found = cycles(import_graph(ROOT))
    gone = [c for c in KNOWN_CYCLES if c not in found]
    assert not gone, f"no longer a cycle, delete it from KNOWN_CYCLES: {gone}"


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
        "models/forward.py": "",
        "envs/__init__.py": "",
    })
    bad = violations(root)
    assert any("beliefs/bad.py:2 imports beliefgate.envs" in b for b in bad), bad
    assert any("models/worse.py:2 imports beliefgate.beliefs" in b for b in bad), bad
    assert not any("ok.py" in b for b in bad)


def test_checker_catches_an_upward_import_and_an_unplaced_package(tmp_path):
    """Every layer boundary: a domain importing an agent, an agent importing eval (through a
    literal ``import_module``), the base importing the CLI; the game package below envs/; a
    top-level package that no layer names. Sideways and downward imports pass."""
    root = _plant(tmp_path, {
        "envs/game.py": "from beliefgate.agents.bot import Bot\n",
        "agents/bot.py": ("import importlib\nBot = 1\ndef run():\n"
                          "    return importlib.import_module('beliefgate.eval.episode')\n"),
        "eval/episode.py": "from beliefgate.agents import bot\nfrom beliefgate.viewer import page\n",
        "viewer/page.py": "from beliefgate.eval import episode\n",
        "fileio.py": "def f():\n    from beliefgate import cli\n",
        "cli.py": "",
        "planners/llm.py": "def f():\n    import overcooked\n",
        "gadgets/x.py": "",
    })
    bad = violations(root)
    assert any(b.startswith("beliefgate/envs/game.py:1 imports beliefgate.agents.bot (envs is below agents)")
               for b in bad), bad
    assert any("agents/bot.py:4 imports beliefgate.eval.episode (agents is below eval)" in b for b in bad), bad
    assert any("fileio.py:2 imports beliefgate.cli (fileio is below cli)" in b for b in bad), bad
    assert any("planners/llm.py:2 imports overcooked" in b for b in bad), bad
    assert any("'gadgets' is in no layer" in b for b in bad), bad
    assert not any("eval/episode.py" in b or "viewer/page.py" in b for b in bad), bad  # down, and sideways
    assert len(bad) == 6, bad  # the five above; gadgets/__init__.py and gadgets/x.py each


def test_checker_catches_a_game_import_past_the_seam(tmp_path):
    """Agents, eval, planners, policy trees and pages reach a game only through envs/domain.py: a
    function-local import of the game's own package is caught, the seam and the logs are not."""
    root = _plant(tmp_path, {
        "envs/domain.py": "", "envs/trajlog.py": "", "envs/kitchen/state.py": "",
        "agents/bot.py": "from beliefgate.envs.domain import Domain\nfrom beliefgate.envs import trajlog\n",
        "eval/score.py": "def f():\n    from beliefgate.envs.kitchen.state import State\n",
        "experiments/study.py": "from beliefgate.envs.kitchen import state\n",  # a driver may name its game
    })
    bad = violations(root)
    assert bad == ["beliefgate/eval/score.py:2 imports beliefgate.envs.kitchen.state (eval reaches a game only "
                   "through beliefgate.envs.domain)"], bad


def test_checker_catches_a_game_module_named_in_an_import_string(tmp_path):
    """An agent table row naming a game's factory (``"beliefgate.envs.<game>.mod:make"``) reaches
    past the seam as surely as an import: caught in agents/, eval/... but not in a driver, nor for
    a non-game module or a game's name in prose."""
    root = _plant(tmp_path, {
        "envs/domain.py": "", "envs/kitchen/bots.py": "def make():\n    return 1\n",
        "agents/registry.py": ("ROWS = {'bot': 'beliefgate.envs.kitchen.bots:make',\n"
                               "        'ok': 'beliefgate.envs.domain:Domain',\n"
                               "        'text': 'see beliefgate.envs.kitchen.bots for the bots'}\n"),
        "eval/grid.py": "MOD = 'beliefgate.envs.kitchen.bots'\n",
        "experiments/study.py": "ROW = 'beliefgate.envs.kitchen.bots:make'\n",
    })
    bad = violations(root)
    assert bad == [
        "beliefgate/agents/registry.py:1 names 'beliefgate.envs.kitchen.bots:make' (agents reaches a game only "
        "through beliefgate.envs.domain)",
        "beliefgate/eval/grid.py:1 names 'beliefgate.envs.kitchen.bots' (eval reaches a game only "
        "through beliefgate.envs.domain)"], bad


def test_the_agent_table_reaches_the_games_agents_through_their_domains():
    """No import string of a game module in agents/ (the planted check above runs the same rule
    on the real tree in test_layering_rules_hold_on_every_import); the games' own agents are
    found through their domains."""
    from beliefgate.agents.registry import AGENTS, find_entry

    games = {d.name for d in (ROOT / "envs").iterdir() if (d / "__init__.py").is_file()}
    named = [text for path in sorted((ROOT / "agents").rglob("*.py")) for text, _ in import_strings(path)
             if text.split(":")[0].split(".")[:2] == ["beliefgate", "envs"]]
    assert not [t for t in named if t.split(":")[0].split(".")[2] in games], named
    for prefix in ("bc", "ppo", "fcp"):
        assert prefix not in AGENTS and find_entry(prefix) is not None, prefix


def test_checker_catches_a_package_cycle_without_a_module_cycle(tmp_path):
    """Two siblings that import each other are one package cycle even where no module cycle exists."""
    root = _plant(tmp_path, {
        "eval/episode.py": "",
        "eval/cli.py": "def run():\n    from beliefgate.viewer import page\n",
        "viewer/page.py": "from beliefgate.eval.episode import x\n",
        "serve/app.py": "from beliefgate.eval import episode\n",
    })
    assert not violations(root)
    assert cycles(import_graph(root)) == []
    assert cycles(package_graph(root)) == [["eval", "viewer"]]


def test_checker_catches_an_import_cycle(tmp_path):
    root = _plant(tmp_path, {
        "agents/a.py": "from beliefgate.eval import b\n",
        "eval/b.py": "import beliefgate.agents.a\n",
        "eval/c.py": "def late():\n    from beliefgate.agents import a\n",  # c -> a, but nothing leads back to c
    })
    found = cycles(import_graph(root))
    assert found == [["beliefgate.agents.a", "beliefgate.eval.b"]], found


def test_checker_catches_a_function_local_cycle(tmp_path):
    """A cycle closed by an import inside a function, and one that runs through a package's __init__."""
    root = _plant(tmp_path, {
        "agents/a.py": "def late():\n    from beliefgate.agents.b import y\n    return y\n",
        "agents/b.py": "from beliefgate.agents.a import late\ny = 1\n",
        "eval/__init__.py": "from beliefgate.eval.run import go\n",
        "eval/run.py": "def go():\n    from beliefgate.eval.sub import metric\n",
        "eval/sub/metric.py": "def m():\n    from beliefgate.eval import run\n",
    })
    found = cycles(import_graph(root))
    assert ["beliefgate.agents.a", "beliefgate.agents.b"] in found, found
    assert ["beliefgate.eval.run", "beliefgate.eval.sub.metric"] in found, found
    assert len(found) == 2, found


def test_importing_the_gate_is_light():
    code = ("import sys; from beliefgate import Gate, GateParams; Gate.from_logprobs(2); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'overcooked', 'numpyro')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("package", [f"beliefgate.{u}" for layer in LAYERS[:DOMAIN_LAYER] for u in layer
                                     if (ROOT / u).is_dir()])
def test_core_imports_without_domain_code(package):
    """Importing every module of a package below envs/ loads no package of envs/ or above, nor the game."""
    above = sorted(u for layer in LAYERS[DOMAIN_LAYER:] for u in layer)
    code = (f"import sys, importlib, pkgutil, {package} as p\n"
            "for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.'):\n"
            "    importlib.import_module(m.name)\n"
            "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('beliefgate.')}"
            f" & set({above!r})), 'overcooked' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] False"
