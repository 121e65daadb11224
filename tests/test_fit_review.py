"""Fitting and diagnosing as a researcher found it (a review, 2026-12-05): each test failed on the code before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from beliefgate.models.data import FitDataError, from_arrays
from beliefgate.models.fit import FitConfig, FitError, fit, load_fit, save_fit

ROOT = Path(__file__).resolve().parents[1]
B, T, K, A = 2, 20, 3, 4


def arrays(seed: int = 0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(B, T, K, A))
    act = rng.integers(0, A, (B, T))
    mask = np.zeros((B, T, A), bool)
    mask[np.arange(B)[:, None], np.arange(T), act] = True
    return q, mask, act


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "beliefgate.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("names", [["a", "", "b"], [1, "1", "x"], "abc"], ids=["empty", "number", "string"])
def test_from_arrays_refuses_skill_names_the_gate_refuses(names):
    """'abc' became three skills, '' lost its beta row in diagnose, 1 and '1' crashed it (ValueError)."""
    q, mask, act = arrays()
    with pytest.raises(FitDataError, match="skill_names must be a sequence of non-empty strings"):
        from_arrays(q, mask, action=act, skill_names=names)


def test_from_arrays_refuses_an_action_its_mask_rules_out():
    """The fit read the mask, the predictive check the action: a failed check caused by the input."""
    q, mask, act = arrays()
    with pytest.raises(FitDataError, match=r"action\[0, 0\] = .* is not allowed by action_mask\[0, 0\] \(40 such"):
        from_arrays(q, mask, action=(act + 1) % A)
    assert from_arrays(q, mask, action=act).num_trajectories == B


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    q, mask, act = arrays()
    path = tmp_path_factory.mktemp("fits") / "f.nc"
    save_fit(fit(from_arrays(q, mask, action=act), FitConfig(method="svi", svi_steps=30, chains=2, draws=10)), path)
    return path


def test_a_damaged_fit_file_is_refused_in_one_line(fitted, tmp_path):
    """A record that is not JSON crashed diagnose and compare (JSONDecodeError, "internal error") and
    GateParams.from_fit; a posterior without epsilon crashed diagnose (KeyError) and compare ranked it."""
    from beliefgate import GateParams

    idata = load_fit(fitted)
    bad_json = tmp_path / "bad_json.nc"
    damaged = idata.copy()
    damaged.attrs["beliefgate_fit"] = "{not json"
    damaged.posterior.attrs["beliefgate_fit"] = "{not json"
    damaged.to_netcdf(str(bad_json))
    with pytest.raises(FitError, match="'beliefgate_fit' record is not valid JSON"):
        load_fit(bad_json)
    with pytest.raises(FitError, match="not valid JSON"):
        GateParams.from_fit(bad_json)
    lost = tmp_path / "lost.nc"
    cut = idata.copy()
    cut.posterior = cut.posterior.drop_vars("epsilon")
    cut.to_netcdf(str(lost))
    with pytest.raises(FitError, match="lacks the posterior of epsilon"):
        load_fit(lost)
    for args in (("diagnose", bad_json), ("compare", fitted, bad_json), ("diagnose", lost), ("compare", fitted, lost)):
        proc = cli(*args)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
        assert "internal error" not in proc.stderr


def test_a_kappa_fit_is_named_as_such_where_a_skill_fit_is_needed(fitted, tmp_path):
    from beliefgate import GateParams
    from beliefgate.models.kappa import KappaFitConfig, decisions_from_records, fit_kappa, simulate_decisions

    decisions = decisions_from_records(simulate_decisions(5, {"mu0": 0.0, "sigma0": 1.0, "tau": 0.5, "sigma_r": 1.0}))
    kappa = save_fit(fit_kappa(decisions, KappaFitConfig(method="svi", svi_steps=20, chains=2, draws=10)),
                     tmp_path / "k.nc")
    with pytest.raises(FitError, match=r"this is a kappa fit \(beliefgate fit --model kappa\)"):
        GateParams.from_fit(kappa)
    proc = cli("compare", kappa, fitted)
    assert proc.returncode == 2 and "this is a kappa fit" in proc.stderr


def test_fit_refuses_options_of_the_other_method(tmp_path):
    """--guide/--svi-steps/--learning-rate with NUTS, --warmup/--target-accept/--chain-method with SVI did
    nothing and were written into the fit's record."""
    log = tmp_path / "ep.jsonl"
    assert cli("episode", "--layout", "cramped_room", "--horizon", "5", "--log", log).returncode == 0
    proc = cli("fit", log, "--guide", "mvn", "--learning-rate", "0.5", "--out", tmp_path / "a.nc")
    assert proc.returncode == 2 and "--learning-rate, --guide: not an option of --method nuts" in proc.stderr
    proc = cli("fit", log, "--method", "svi", "--warmup", "77", "--out", tmp_path / "b.nc")
    assert proc.returncode == 2 and "--warmup: not an option of --method svi" in proc.stderr
    assert not (tmp_path / "a.nc").exists() and not (tmp_path / "b.nc").exists()


def test_sensitivity_names_the_log_an_impossible_step_is_in(tmp_path):
    """`sensitivity oat` said only "step 8, player 1: moved ..." (fit named the file): with a folder of logs
    the bad one could not be found."""
    log = tmp_path / "ep.jsonl"
    assert cli("episode", "--layout", "cramped_room", "--horizon", "30", "--log", log).returncode == 0
    lines = log.read_text().splitlines()
    row = json.loads(lines[11])
    players = row["state"]["players"]
    players[1]["position"] = [players[1]["position"][0] + 2, players[1]["position"][1]]
    lines[11] = json.dumps(row)
    bad = tmp_path / "teleport.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    proc = cli("sensitivity", "oat", bad, "--param", "cooldown=0:4:2")
    assert proc.returncode == 2, proc.stderr
    # the file (and, since logs are checked against their layout when read, the line) is named
    assert proc.stderr.startswith(f"error: {bad}:") and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "step 10" in proc.stderr and "player 1" in proc.stderr, proc.stderr


def test_compare_shows_the_variant_s_brackets(fitted, tmp_path):
    """compare's variant column read "hazard[hazard=0] svi" as rich markup and printed "hazard svi" for a
    free and a pinned fit alike."""
    import os

    q, mask, act = arrays()
    pinned = save_fit(fit(from_arrays(q, mask, action=act),
                          FitConfig(method="svi", svi_steps=30, chains=2, draws=10, fixed={"hazard": 0.0})),
                      tmp_path / "pinned.nc")
    proc = subprocess.run([sys.executable, "-m", "beliefgate.cli", "compare", str(fitted), str(pinned)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert "hazard[hazard=0] svi" in proc.stdout, proc.stdout
