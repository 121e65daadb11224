"""Package structure rules: beliefs never import planners; importing the gate stays light."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "beliefgate"


def _imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_beliefs_never_import_planners():
    for path in (ROOT / "beliefs").rglob("*.py"):
        bad = [m for m in _imports(path) if m.startswith("beliefgate.planners")]
        assert not bad, f"{path} imports {bad}"


def test_models_and_beliefs_do_not_depend_on_overcooked_at_module_level():
    for sub in ("beliefs", "models"):
        for path in (ROOT / sub).rglob("*.py"):
            tree = ast.parse(path.read_text())
            top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
            names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names]
            names += [n.module for n in top if isinstance(n, ast.ImportFrom) and n.module]
            assert not [m for m in names if m.startswith(("overcooked", "beliefgate.envs"))], path


def test_importing_the_gate_is_light():
    code = ("import sys; from beliefgate import Gate, GateParams; Gate.from_logprobs(2); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'overcooked', 'numpyro')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
