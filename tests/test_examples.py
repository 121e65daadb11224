"""Examples are tests too: every documented example runs and says what the docs promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"


def run_example(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_gate_quickstart():
    proc = run_example("gate_quickstart.py")
    assert proc.returncode == 0, proc.stderr
    assert "INTERRUPT" in proc.stdout
    assert "interrupts at steps: [" in proc.stdout and "interrupts at steps: []" not in proc.stdout


def test_kappa_trace_example(tmp_path):
    """The worked example of docs/kappa.md: kappa rises past theta as evidence for `a` arrives."""
    out = tmp_path / "trace.png"
    proc = run_example("kappa_trace.py", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    kappas = [float(r[-4]) for r in rows]
    assert kappas[0] < 0.6 < kappas[-1] and rows[-1][-1] == "True" and rows[0][-1] == "False"
