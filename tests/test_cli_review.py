"""The command line as a newcomer found it (a review, 2026-12-05): each test failed on the code before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "beliefgate.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "ep.jsonl"
    proc = cli("episode", "--layout", "cramped_room", "--horizon", "5", "--log", str(path))
    assert proc.returncode == 0, proc.stderr
    return path


def test_an_output_that_names_the_input_is_refused_and_the_log_kept(log, tmp_path):
    """`report ep.jsonl -o ep.jsonl` printed "wrote" and replaced the log by its page; so did the default
    output of a log named *.html, and `fit LOG --out LOG`."""
    text = log.read_text()
    copy = tmp_path / "c.jsonl"
    copy.write_text(text)
    proc = cli("report", str(copy), "-o", str(copy))
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"error: --out {copy}: is the input {copy}; writing there would destroy it (give another path)"]
    same = tmp_path / "same.html"
    same.write_text(text)
    proc = cli("report", str(same))
    assert proc.returncode == 2 and "is the input" in proc.stderr and "default: LOG with .html" in proc.stderr
    proc = cli("fit", str(copy), "--method", "svi", "--out", str(copy))
    assert proc.returncode == 2 and "is the input" in proc.stderr
    assert copy.read_text() == text and same.read_text() == text
    assert cli("report", str(copy), "-o", str(tmp_path / "c.html")).returncode == 0


@pytest.mark.parametrize("seat", [5, -1])
def test_a_header_seat_that_is_no_player_is_refused_naming_the_line(log, tmp_path, seat):
    """seat 5 was an internal IndexError in `report` and "partner side -4" in `fit`; seat -1 was read."""
    lines = log.read_text().splitlines()
    header = json.loads(lines[0])
    header["seat"] = seat
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    for args in (("report", str(bad), "-o", str(tmp_path / "bad.html")),
                 ("fit", str(bad), "--method", "svi", "--out", str(tmp_path / "f.nc"))):
        proc = cli(*args)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and f"{bad}:1" in proc.stderr
        assert f"seat must be a player index in 0..1 (the header lists 2 agents), got {seat}" in proc.stderr
    assert not (tmp_path / "bad.html").exists() and not (tmp_path / "f.nc").exists()


def test_help_texts_a_reader_needs():
    """The sensitivity example lost its line continuation (a single backslash in the docstring);
    `overforge run`'s grid and `overforge report`'s dirs had no description; `episode --ego` said only
    "ego agent name"."""
    assert "grid_sensitivity.yaml \\" in " ".join(cli("sensitivity", "oat", "--help").stdout.split())
    assert "grid file (YAML or JSON" in cli("overforge", "run", "--help").stdout
    assert "run directories of" in cli("overforge", "report", "--help").stdout
    ego_help = " ".join(cli("episode", "--help").stdout.split())
    assert "overforge" in ego_help and "periodic-N" in ego_help


def test_measurement_scripts_refuse_bad_options_before_measuring(tmp_path):
    """bench_accel.py checked --json only after every measurement (a traceback, minutes lost) and timed an
    empty batch for --batches 0; jax_rule.py ran only from the repository root."""
    bench = ROOT / "benchmarks" / "bench_accel.py"
    proc = subprocess.run([sys.executable, str(bench), "--json", str(tmp_path / "missing" / "a.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "not a file in an existing folder" in proc.stderr
    proc = subprocess.run([sys.executable, str(bench), "--batches", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "must be >= 1, got 0" in proc.stderr
    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "examples" / "results15" / "jax_rule.py"),
                           "--streams", "0"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "must be >= 1, got 0" in proc.stderr, proc.stderr  # imported from elsewhere


def test_kappa_fit_refuses_a_domain_and_an_output_over_its_decisions(tmp_path):
    """`fit --model kappa FILE --domain nosuch` ran (exit 0); `--out FILE` replaced the decisions by HDF5."""
    from beliefgate.models.kappa import simulate_decisions, write_decisions

    decisions = write_decisions(simulate_decisions(3, {"mu0": 0.0, "sigma0": 1.0, "tau": 0.5, "sigma_r": 1.0}),
                                tmp_path / "d.jsonl")
    text = decisions.read_text()
    proc = cli("fit", "--model", "kappa", str(decisions), "--domain", "nosuch", "--method", "svi",
               "--out", str(tmp_path / "k.nc"))
    assert proc.returncode == 2 and "--domain: not an option of the kappa model" in proc.stderr, proc.stderr
    proc = cli("fit", "--model", "kappa", str(decisions), "--method", "svi", "--out", str(decisions))
    assert proc.returncode == 2 and "is the input" in proc.stderr
    assert decisions.read_text() == text and not (tmp_path / "k.nc").exists()


def test_a_header_layout_that_is_unknown_is_refused_naming_the_line(log, tmp_path):
    """An unknown layout in a log's header was `error: unknown layout 'nowhere'`, no file, exit 1."""
    lines = log.read_text().splitlines()
    header = json.loads(lines[0])
    header["layout"] = "nowhere"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    proc = cli("report", str(bad), "-o", str(tmp_path / "bad.html"))
    assert proc.returncode == 2 and f"{bad}:1: invalid header row: header: unknown layout 'nowhere'" in proc.stderr
