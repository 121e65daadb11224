"""``beliefgate fit --model goal`` / ``beliefgate diagnose`` on a goal fit (docs/goal.md, docs/fit.md):
the recipe model fitted to real OvercookedV2 episodes, its file, its diagnosis, its bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from beliefgate.envs.overcooked_v2.domain import DOMAIN
from beliefgate.envs.domain import register_domain, unregister_domain

LAYOUT = "v2/demo_cook_simple"       # the cook (seat 0) sees the recipe; two recipes, 0-0-0 and 1-1-1
OPTIONS = {"agent_view_size": 2}


@pytest.fixture(scope="module", autouse=True)
def _registered():
    register_domain(DOMAIN)   # the shared venv's metadata may predate the entry points
    yield
    unregister_domain(DOMAIN.name)


def _cli(*args):
    from beliefgate.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


def _lines(res):
    return [ln for ln in res.output.splitlines() if ln.strip()]


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Real V2 episodes (60 steps): seed 0 draws recipe 0-0-0, seed 2 recipe 1-1-1."""
    from beliefgate.eval.episode import run_episode

    folder = tmp_path_factory.mktemp("goal-logs")
    paths = []
    for seed in (0, 2):
        path = folder / f"ep{seed}.jsonl"
        run_episode(LAYOUT, "v2-fetcher", "v2-cook", seed=seed, horizon=60, seat=1, env_options=OPTIONS,
                    log_path=path)
        paths.append(path)
    return paths


def _header(path, layout):
    path.write_text(json.dumps({"kind": "header", "format": "beliefgate.trajectory/1", "layout": layout,
                                "horizon": 5, "seed": 0, "seat": 0, "agents": ["a", "b"], "ego": "a",
                                "partner": "b", "version": "0", "config": {}}) + "\n")
    return path


def test_goal_fit_of_a_classic_log_is_one_line_exit_2(tmp_path):
    from beliefgate.models.data import FitDataError, load_goal_logs

    classic = _header(tmp_path / "classic.jsonl", "cramped_room")
    with pytest.raises(FitDataError, match="classic.jsonl: the overcooked domain has no goal"):
        load_goal_logs([classic], domain="overcooked")
    res = _cli("fit", classic, "--model", "goal", "-o", tmp_path / "g.nc", "--no-progress")
    assert res.exit_code == 2, res.output
    assert len(_lines(res)) == 1 and "no goal (recipe) model" in res.output
    res = _cli("fit", classic, "--model", "goal", "--per-skill-beta", "-o", tmp_path / "g.nc")
    assert res.exit_code == 2 and "--per-skill-beta: not an option of the goal model" in res.output
    res = _cli("fit", classic, "--model", "goal", "--fix", "goal_hazard=2", "-o", tmp_path / "g.nc")
    assert res.exit_code == 2 and len(_lines(res)) == 1 and "goal_hazard" in res.output, res.output


def test_diagnose_tells_a_skill_fit_reader_it_got_a_goal_fit(tmp_path):
    from beliefgate.models.fit import FIT_FILE, FitError
    from beliefgate.models.goal import goal_fit_file

    import arviz as az

    idata = az.from_dict(posterior={"beta": np.ones((1, 3))})
    goal_fit_file().stamp(idata, {"format": "beliefgate.goal_fit/1"})
    with pytest.raises(FitError, match="this is a goal fit"):
        FIT_FILE.record(idata)


@pytest.mark.slow   # a short SVI fit and its diagnosis: ~25 s CPU (the goal scan's compile), minutes on a loaded machine
def test_svi_goal_fit_and_diagnose_on_real_v2_episodes(logs, tmp_path):
    from beliefgate.models.goal import goal_fit_file

    out = tmp_path / "goal.nc"
    res = _cli("fit", *logs, "--model", "goal", "--method", "svi", "--svi-steps", "150", "--chains", "1",
               "--draws", "50", "-o", out, "--no-progress", "--json")
    assert res.exit_code == 0, res.output
    record = json.loads(res.output[res.output.index("{"):])
    assert record["format"] == "beliefgate.goal_fit/1" and record["goal_names"] == ["0-0-0", "1-1-1"]
    assert record["command"]["options"]["model"] == "goal" and record["num_steps"] == 120
    assert set(record["summary"]) == {"beta", "epsilon", "hazard"}
    import arviz as az

    idata = az.from_netcdf(str(out))
    assert goal_fit_file().has(idata) and idata.log_likelihood["log_lik"].shape == (1, 50, 2)
    assert list(np.asarray(idata.constant_data["true_goal"].values)[:, 0]) == [0, 1]   # the logged recipes
    res = _cli("diagnose", out, "--json")
    assert res.exit_code == 0, res.output
    diag = json.loads(res.output[res.output.index("{"):])
    assert diag["model"] == "goal" and diag["method"] == "svi"
    assert diag["parameters"]["beta"]["mean"] > 0
    acc = diag["recipe_accuracy"]["fitted"]
    assert acc["steps"] == 120 and acc["steps_after_evidence"] > 0
    assert acc["accuracy_after_evidence"] >= 0.9, acc   # the fitted filter follows the cook's recipe
    res = _cli("diagnose", out)
    assert res.exit_code == 0 and "Recipe MAP" in res.output


@pytest.mark.slow   # NUTS, two chains: minutes on the shared machine
def test_nuts_goal_fit_converges_on_real_v2_episodes(logs, tmp_path):
    out = tmp_path / "goal.nc"
    res = _cli("fit", *logs, "--model", "goal", "--method", "nuts", "--chains", "2", "--draws", "200",
               "--warmup", "200", "--chain-method", "sequential", "-o", out, "--no-progress")
    assert res.exit_code == 0, res.output
    res = _cli("diagnose", out, "--json")
    diag = json.loads(res.output[res.output.index("{"):])
    assert diag["method"] == "nuts" and diag["divergences"] <= 4
    assert all(row["r_hat"] < 1.05 for row in diag["parameters"].values()), diag["parameters"]
