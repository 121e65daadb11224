"""`beliefgate fit --model kappa` and `beliefgate diagnose` through the installed console script.

A quick SVI fit of simulated decisions (a few hundred steps: this checks the command line and
the file it writes, not the quality of the fit; the recovery check is the slow
``tests/test_kappa.py::test_fit_recovers_tau_and_sigma_r``), then ``diagnose`` on the result,
plus malformed decisions files: one-line error, exit status 2, no traceback, nothing written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from beliefgate.models.kappa import PARAM_NAMES, simulate_decisions, write_decisions

BIN = Path(sys.executable).parent / "beliefgate"
TRUTH = {"mu0": 0.2, "sigma0": 1.0, "tau": 0.6, "sigma_r": 0.9}


def run(*args, timeout=600):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kappa_cli")
    decisions = write_decisions(simulate_decisions(40, TRUTH, seed=3), tmp / "decisions.jsonl")
    out = tmp / "kappa_fit.nc"
    proc = run("fit", "--model", "kappa", decisions, "--out", out, "--method", "svi", "--svi-steps", "300",
               "--chains", "2", "--draws", "100", "--seed", "1", "--no-progress", "--json")
    return decisions, out, proc


def test_fit_kappa_writes_a_fit(fitted):
    decisions, out, proc = fitted
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["model"] == "kappa" and record["config"]["method"] == "svi"
    assert record["num_decisions"] == 40 and record["out"] == str(out)
    assert set(record["summary"]) == set(PARAM_NAMES)
    assert record["command"]["argv"][:4] == ["beliefgate", "fit", "--model", "kappa"]
    assert out.is_file() and out.stat().st_size > 0
    # the prior, and data sets replicated at 100 posterior and 100 prior draws (issue #47)
    from beliefgate.models.kappa import data_from_idata, kappa_predictive_check, load_kappa_fit

    idata = load_kappa_fit(out)
    data = data_from_idata(idata)
    assert set(idata.prior) == set(PARAM_NAMES) and idata.prior["tau"].shape == (1, 500)
    for group in ("posterior_predictive", "prior_predictive"):
        reps = getattr(idata, group)
        assert reps["y"].shape == (1, 100, len(data.j_y)) and reps["r"].shape == (1, 100, len(data.r_score))
        assert set(map(int, reps["y"].values.ravel())) == {0, 1}
    # prior replications spread wider than the posterior's (the data narrowed the parameters)
    assert idata.prior_predictive["r"].values.std() > idata.posterior_predictive["r"].values.std()
    # diagnose's check with them is the check drawn with the same draws and seed (the fit's)
    stored = kappa_predictive_check(idata, stored=True)
    assert stored == kappa_predictive_check(idata, num_draws=100, seed=1)
    assert stored != kappa_predictive_check(idata, num_draws=100, seed=2)


def test_diagnose_reads_the_kappa_fit(fitted):
    _, out, fit = fitted
    assert fit.returncode == 0, fit.stderr
    proc = run("diagnose", out, "--json", "--ppc-draws", "30")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result["parameters"]) == set(PARAM_NAMES)
    for name, row in result["parameters"].items():
        assert row["mean"] is not None, name
    assert isinstance(result["warnings"], list)
    text = run("diagnose", out)  # checks with the replications the fit file stores
    assert text.returncode == 0, text.stderr
    assert "kappa fit: method svi" in text.stdout and "Posterior predictive check" in text.stdout
    assert "100 draws, replications stored in the fit file, seed 1" in " ".join(text.stdout.split())


@pytest.mark.parametrize("content, needle", [
    ('{"branches": ["a", "b"]}\n{"branches": ["a", "b"], "judgments": [{"left": "a", "right": "zz", "y": 1}]}\n',
     ":2"),
    ('{"branches": ["a", "b"], "judgments": [{"left": "a", "right": "b", "y": 1}]}\nnot json\n', ":2: not JSON"),
    ('{"branches": ["a"], "rollouts": [{"branch": "a", "depth": 0, "score": 1.0}]}\n', ":1"),
    ("", "no decision records"),
])
def test_fit_kappa_bad_decisions_file(tmp_path, content, needle):
    """In-process through the same click app (CliRunner, one JAX import for all cases);
    the first case also runs as a subprocess of the console script below."""
    from typer.testing import CliRunner

    from beliefgate.cli import app

    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    out = tmp_path / "never.nc"
    result = CliRunner().invoke(app, ["fit", "--model", "kappa", str(bad), "--out", str(out), "--method", "svi",
                                      "--svi-steps", "10", "--no-progress"], catch_exceptions=True)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    _one_line_error(result.output, bad, needle)
    assert not out.exists()


def test_fit_kappa_bad_decisions_file_subprocess(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"branches": ["a", "b"]}\n{"branches": ["a", "b"], "judgments": '
                   '[{"left": "a", "right": "zz", "y": 1}]}\n')
    out = tmp_path / "never.nc"
    proc = run("fit", "--model", "kappa", bad, "--out", out, "--method", "svi", "--svi-steps", "10",
               "--no-progress", timeout=300)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout.strip() == ""
    _one_line_error(proc.stderr, bad, ":2")
    assert not out.exists()


def _one_line_error(text: str, bad: Path, needle: str) -> None:
    err = text.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert bad.name in err and needle in err, err


@pytest.mark.parametrize("fix, needle", [
    ("gamma=1", "fixed: cannot fix unknown kappa parameter(s) ['gamma']"),
    ("tau=1e9", "fixed tau must lie in [1e-06, 1e+06] (the range of KappaParams), got 1000000000.0"),
])
def test_fit_kappa_bad_fixed_value_is_one_line(tmp_path, fix, needle):
    """The KappaFitConfig's own error (KappaFitConfigError), one line naming the field, exit status 2."""
    from typer.testing import CliRunner

    from beliefgate.cli import app

    decisions = write_decisions(simulate_decisions(2, dict(zip(PARAM_NAMES, (0.0, 1.0, 0.5, 1.0)))),
                                tmp_path / "d.jsonl")
    out = tmp_path / "never.nc"
    result = CliRunner().invoke(app, ["fit", "--model", "kappa", str(decisions), "--out", str(out), "--method",
                                      "svi", "--svi-steps", "10", "--no-progress", "--fix", fix])
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    err = result.output.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and needle in err, err
    assert not out.exists()
