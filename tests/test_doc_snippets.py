"""The Python blocks of README.md and docs/*.md: the complete ones run as written, the rest
(fragments with placeholders such as ``episode`` or a running server) at least compile.

A newcomer copies these first; a snippet that raises ``NameError`` or ``ImportError`` is the
first thing they see of the project.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: (file, index of the python block in it) of the blocks meant to run on their own, offline and
#: in seconds; every other block is a fragment (placeholders, a server, a fit file)
COMPLETE = {("README.md", 0), ("README.md", 1), ("docs/gate.md", 1), ("docs/gate.md", 3),
            ("docs/goal.md", 0), ("docs/kappa.md", 0), ("docs/planners.md", 0), ("docs/planners.md", 1),
            ("docs/planners.md", 2)}
#: fragments that run once the names they leave to the reader are defined (the prelude runs first)
PRELUDES = {
    ("docs/gate.md", 0): (
        "import numpy as np\n"
        "episode = range(5)                                    # any iterable of states\n"
        "def my_controller_logprobs(state): return np.log(np.full((3, 5), 0.2))\n"
        "partner_action = 2\n"
        "def replan(belief, partner_skill): pass\n"),
    ("docs/planners.md", 3): "from beliefgate.agents.registry import AgentEntry\n",
}


def blocks() -> list:
    out = []
    for path in DOCS:
        found = re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)
        out += [(str(path.relative_to(ROOT)), i, code) for i, code in enumerate(found)]
    return out


BLOCKS = blocks()


def test_the_complete_blocks_are_still_there():
    """The list above names blocks that exist (a reordered doc must update it, not skip it)."""
    assert COMPLETE | set(PRELUDES) | SLOW <= {(f, i) for f, i, _ in BLOCKS}
    assert all(f != "README.md" or (f, i) in COMPLETE for f, i, _ in BLOCKS)  # every README block runs as written


#: complete blocks that take long (a jit compile): run by the slow target
SLOW = {("docs/gate.md", 2)}


@pytest.mark.slow
@pytest.mark.parametrize("doc,index,code", [b for b in BLOCKS if b[:2] in SLOW], ids=[f"{f}#{i}" for f, i in SLOW])
def test_slow_doc_python_block(doc, index, code, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{doc} block {index} failed:\n{proc.stderr[-2000:]}"


@pytest.mark.parametrize("doc,index,code", BLOCKS, ids=[f"{f}#{i}" for f, i, _ in BLOCKS])
def test_doc_python_block(doc, index, code, tmp_path):
    compile(code, f"{doc}#{index}", "exec")
    if (doc, index) in PRELUDES:
        code = PRELUDES[doc, index] + code
    elif (doc, index) not in COMPLETE:
        return
    if doc == "docs/planners.md" and index == 1:  # a whole episode: shorten it, the point is that it runs
        code = code.replace('llm=Echo())', 'llm=Echo(), horizon=30)')
        assert "horizon=30" in code
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, f"{doc} block {index} failed:\n{proc.stderr[-2000:]}"


def test_shipped_examples_resolve_from_any_directory(tmp_path, monkeypatch):
    """`eval run docs/examples/grid_small.yaml` worked only from the repository root."""
    from beliefgate.eval.grid import GridError, load_grid

    monkeypatch.chdir(tmp_path)
    assert load_grid("docs/examples/grid_small.yaml").name == "small"
    (tmp_path / "docs" / "examples").mkdir(parents=True)
    (tmp_path / "docs" / "examples" / "grid_small.yaml").write_text(
        (ROOT / "docs/examples/grid_small.yaml").read_text().replace("name: small", "name: mine"))
    assert load_grid("docs/examples/grid_small.yaml").name == "mine"  # a file here comes first
    with pytest.raises(GridError, match="docs/examples/nope.yaml"):
        load_grid("docs/examples/nope.yaml")
