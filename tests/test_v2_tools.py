"""What a user already has, on v2/ layouts (issue 43 item 6; the V2 fit entry point of item 3), on JaxMARL's
real dynamics with short horizons: ``switches`` (the recipe-re-reading cooks switch when the recipe is
resampled), ``sensitivity oat`` (replayed and closed-loop), ``eval run`` grids with a three-player layout and
``eval report --html``, the report page in headless Chromium, ``fit`` / ``diagnose`` and the goal (recipe)
model's data on V2 logs, and bad input (one line, exit 2).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jaxmarl")

from typer.testing import CliRunner

from beliefgate.envs.domain import register_domain, unregister_domain
from beliefgate.envs.overcooked_v2.domain import DOMAIN

LAYOUT = "v2/cramped_room_v2"
THREE = "v2/cramped_room_v2_3p"


@pytest.fixture(scope="module", autouse=True)
def _registered():
    register_domain(DOMAIN)   # the shared venv's metadata may predate the entry points
    yield
    unregister_domain(DOMAIN.name)


def _benchmark(tmp_path_factory, layouts):
    from beliefgate.eval import switches as sw

    cache = tmp_path_factory.mktemp("v2-switch-cache")
    result = sw.run_benchmark(layouts=layouts, partners=["v2-cook-adaptive"], seeds=[0], horizon=150,
                              n_boot=100, cache_dir=cache)
    return result, cache


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """The switch benchmark on a two-player V2 kitchen (one seed, 150 steps), its episode cached as a log."""
    return _benchmark(tmp_path_factory, [LAYOUT])


@pytest.fixture(scope="module")
def bench3(tmp_path_factory):
    """The same on the two- and the three-player kitchen."""
    return _benchmark(tmp_path_factory, [LAYOUT, THREE])


def _cli(*args):
    from beliefgate.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.slow   # builds every layout (~3 s); test_v2_domain checks two rows in the default suite
def test_layouts_json_gives_backend_and_players_for_every_v2_layout():
    res = _cli("layouts", "--json")
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.output)}
    v2 = [name for name in rows if name.startswith("v2/")]
    assert sorted(v2) == sorted(DOMAIN.layouts())
    for name in v2:
        assert rows[name]["backend"] == "v2" and rows[name]["players"] == DOMAIN.layout_info(name).players
    assert {rows[n]["players"] for n in v2} == {2, 3}


# ------------------------------------------------------------------ switches
def _check_switches_are_recipe_changes(result, cache, layouts):
    from beliefgate.envs.trajlog import read_log

    cfg = result.config
    assert cfg["ego"] == "v2-server"   # the domain's benchmark teammate: the partner fetches every ingredient
    assert cfg["env_options"] == {layout: {"sample_recipe_on_delivery": True} for layout in layouts}
    rows = {r["layout"]: r for r in result.per_episode}
    if THREE in rows:
        assert rows[THREE]["partner"] == "v2-cook-adaptive+v2-server"   # the third seat filled with the ego's agent
    assert result.switches >= len(layouts) and all(r["switches"] >= 1 for r in rows.values())
    logs = sorted(cache.glob("*.jsonl"))
    assert len(logs) == len(layouts)
    for path in logs:
        traj = read_log(path)
        assert traj.header.config["sample_recipe_on_delivery"] is True
        trace = [tr for tr in result.per_episode if tr["layout"] == traj.header.layout]
        assert trace
        from beliefgate.eval.switches import trace_of

        tr = trace_of(traj, traj.header.partner, 0)
        recipes = [row.state.recipe for row in traj.steps]
        for s in np.flatnonzero(tr.hidden):   # each hidden switch follows a resampled recipe
            assert any(recipes[u] != recipes[u - 1] for u in range(max(1, s - 12), s + 1)), (path.name, s)
            assert tr.skill_names[tr.truth[s - 1]].startswith("pickup_ingredient_")
            assert tr.skill_names[tr.truth[s]].startswith("pickup_ingredient_")
    cusum = result.sweeps["CUSUM (LLR)"].operating_point
    assert 0.0 <= cusum.detection_rate <= 1.0 and cusum.switches == result.switches


def test_switches_on_a_v2_kitchen_are_recipe_changes(bench):
    _check_switches_are_recipe_changes(*bench, [LAYOUT])


@pytest.mark.slow   # a second compile (the three-player kitchen): ~15 s
def test_switches_on_a_three_player_v2_kitchen(bench3):
    _check_switches_are_recipe_changes(*bench3, [LAYOUT, THREE])


def test_switches_cli_refuses_a_bad_v2_option_in_one_line():
    res = _cli("switches", "--layout", LAYOUT, "--seeds", "1", "--env-option", "agent_view_size=0")
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "agent_view_size" in lines[0] and "Traceback" not in res.output
    res = _cli("switches", "--layout", "v2/nope", "--seeds", "1")
    assert res.exit_code == 2 and "v2/nope" in res.output


# ------------------------------------------------------------------ sensitivity (replayed)
def test_sensitivity_oat_replays_v2_logs(bench):
    _, cache = bench
    res = _cli("sensitivity", "oat", cache, "--param", "cooldown=0,10,20", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output[res.output.index("{"):])
    rows = [r for r in out["rows"] if r["param"] == "cooldown"]
    interrupts = [r["interrupts_per_episode"] for r in sorted(rows, key=lambda r: r["value"])]
    assert interrupts == sorted(interrupts, reverse=True) and interrupts[0] > interrupts[-1]   # Table 7's direction


@pytest.mark.slow
def test_sensitivity_oat_on_a_three_player_v2_log(bench3):
    _, cache = bench3
    # three players: the partner must be named (one line, exit 2), then it replays seat 1
    three = [p for p in cache.glob("*.jsonl") if "_3p__" in p.name]
    res = _cli("sensitivity", "oat", three[0], "--param", "cooldown=0,10")
    assert res.exit_code == 2 and "partner" in res.output
    res = _cli("sensitivity", "oat", three[0], "--param", "cooldown=0,10", "--partner", "1", "--json")
    assert res.exit_code == 0, res.output


# ------------------------------------------------------------------ grids, reports, the report page
@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A V2 grid (two and three players) played inline, reported with --html."""
    root = tmp_path_factory.mktemp("v2-grid")
    grid = root / "grid.yaml"
    grid.write_text(f"""name: v2-tools
agents: [bayes-belief:full, bayes-belief:no_belief]
layouts: [{LAYOUT}, {THREE}]
partners: [v2-cook, v2-cook+v2-server]
seeds: [0]
seats: [0]
horizon: 40
env_options:
  {LAYOUT}: {{sample_recipe_on_delivery: true}}
""")
    res = _cli("eval", "run", grid, "--out", root / "run", "--workers", "1")
    assert res.exit_code == 0, res.output
    return root / "run"


@pytest.mark.slow   # eight belief-agent episodes on two kitchens: ~25 s
def test_eval_grid_and_report_on_v2_layouts(run_dir):
    import pandas as pd

    rows = pd.read_csv(run_dir / "results.csv")
    assert sorted(set(rows["layout"])) == [LAYOUT, THREE] and len(rows) == 4
    assert set(rows.loc[rows["layout"] == THREE, "partner"]) == {"v2-cook+v2-server"}
    assert rows["reward"].notna().all() and rows["gap_rate"].notna().all()
    from beliefgate.envs.trajlog import read_log

    for log in (run_dir / "episodes").rglob("*.jsonl"):   # the grid's options reach the layout's episodes
        traj = read_log(log)
        assert traj.header.config["sample_recipe_on_delivery"] is (traj.header.layout == LAYOUT)
    res = _cli("eval", "report", run_dir, "--html", "--bootstrap", "200")
    assert res.exit_code == 0, res.output
    index = (run_dir / "reports" / "index.html").read_text()
    assert "cramped_room_v2_3p" in index and len(list((run_dir / "reports").rglob("*.html"))) == 5


@pytest.mark.slow   # six belief-agent episodes of 30 steps, inline
def test_closed_loop_sensitivity_on_a_v2_grid(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"""name: v2-sens
agents: [bayes-belief:full]
layouts: [{LAYOUT}]
partners: [v2-cook-adaptive]
seeds: [0, 1]
seats: [0]
horizon: 30
env_options:
  {LAYOUT}: {{sample_recipe_on_delivery: true}}
""")
    res = _cli("sensitivity", "oat", "--closed-loop", grid, "--param", "cooldown=0,20", "--out", tmp_path / "sens",
               "--workers", "1", "--json", "--bootstrap", "200")
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "sens" / "sensitivity.json").read_text())
    assert out and (tmp_path / "sens" / "base" / "results.csv").exists()


def test_grid_env_options_are_checked_before_any_episode(tmp_path):
    from beliefgate.eval.grid import GridError, parse_grid, resolve_grid

    base = {"name": "g", "agents": ["bayes-belief:full"], "layouts": [LAYOUT], "partners": ["v2-cook"],
            "seeds": [0], "seats": [0], "horizon": 10}
    plain = resolve_grid(parse_grid(base)).episodes[0]
    opts = resolve_grid(parse_grid({**base, "env_options": {LAYOUT: {"sample_recipe_on_delivery": True}}}))
    assert opts.episodes[0].env_options == {"sample_recipe_on_delivery": True}
    assert opts.episodes[0].key != plain.key and plain.env_options is None   # options are part of the episode
    for bad, field in (({LAYOUT: {"agent_view_size": 0}}, "agent_view_size"), ({LAYOUT: {"colour": 1}}, "colour"),
                       ({"v2/two_rooms": {}}, "not one of the grid's layouts")):
        with pytest.raises(GridError, match=field) as info:
            resolve_grid(parse_grid({**base, "env_options": bad}))
        assert "\n" not in str(info.value)


def test_v2_report_page_in_chromium(bench, tmp_path):
    from beliefgate.envs.trajlog import read_log
    from beliefgate.viewer.browser import BrowserUnavailable, find_browser, headless_chromium
    from beliefgate.viewer.report import write_report

    try:
        paths = find_browser()
    except BrowserUnavailable as exc:
        pytest.skip(f"no headless browser: {exc}")
    log = next(bench[1].glob("*.jsonl"))
    page = tmp_path / "v2.html"
    write_report(log, page)
    driver = headless_chromium(paths=paths)
    try:
        driver.get(page.as_uri())
        end = time.monotonic() + 10
        while not driver.execute_script("return !!window.beliefgateReport") and time.monotonic() < end:
            time.sleep(0.05)
        driver.execute_script("window.beliefgateReport.seek(20)")
        assert [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"] == []
        canvas = driver.find_element("id", "kitchen")
        data = json.loads(driver.execute_script("return JSON.stringify(window.__v2check = (function () {"
                                                "var c = document.getElementById('kitchen');"
                                                "return {w: c.width, h: c.height}; })())"))
        state = read_log(log).steps[20].state
        recipe = ",".join(map(str, state.recipe_ingredients))
        assert canvas.get_attribute("data-recipe") == recipe   # the indicator's recipe, drawn
        assert canvas.get_attribute("data-recipe-viewers") == ",".join(
            str(i) for i in range(len(state.players)) if state.sees_recipe(i))
        info = DOMAIN.layout_info(LAYOUT)
        s = data["w"] // info.width
        assert data["h"] > info.height * s   # the recipe band under the kitchen

        def pixel(x, y):
            return driver.execute_script(
                "var d = document.getElementById('kitchen').getContext('2d').getImageData(arguments[0], arguments[1], 1, 1)"
                ".data; return [d[0], d[1], d[2]];", x, y)

        colours = driver.execute_script("return window.BGKitchen.INGREDIENT_COLOURS")
        for i in info.ingredients:   # each pile in its ingredient's colour
            x, y = info.ingredient_piles(i)[0]
            want = colours[i]
            got = pixel(x * s + s // 2 - s // 8, y * s + s // 2 - s // 8)
            assert got == [int(want[1:3], 16), int(want[3:5], 16), int(want[5:7], 16)], (i, got, want)
    finally:
        driver.quit()


def test_play_view_hides_the_recipe_from_a_seat_that_does_not_see_it(tmp_path):
    """The play page's messages (no server): the person sees the recipe only where their seat sees it."""
    from beliefgate.envs.overcooked_v2.state import V2State
    from beliefgate.viewer.frames import encode_frame, encode_view
    from beliefgate.viewer.play import PlayGame, PlaySettings

    game = PlayGame(PlaySettings(layout=LAYOUT, agent="v2-cook", horizon=5, human_seat=1,
                                 log=str(tmp_path / "p")), tmp_path / "play.jsonl")
    hello = game.hello()
    assert hello["frame"][5]["recipe"] == list(game.state.recipe_ingredients)   # the indicator is in full view
    near = V2State.from_json({**json.loads(game.state.to_json()), "agent_view_size": 1})
    seen = [near.sees_recipe(i) for i in range(2)]
    for player in range(2):
        view = encode_view(near, player)
        assert (view[5]["recipe"] is not None) == seen[player]
        assert view[5]["viewers"] == [i for i in range(2) if seen[i]]
    assert encode_frame(near)[5]["recipe"] == list(near.recipe_ingredients)   # the report shows it to everyone
    res = _cli("play", "--layout", LAYOUT, "--port", "0", "--env-option", "agent_view_size=0")
    assert res.exit_code == 2 and "agent_view_size" in res.output and len(res.output.strip().splitlines()) == 1


# ------------------------------------------------------------------ fit / diagnose / the goal model
def test_v2_logs_become_the_gates_evidence_for_fit(bench):
    from beliefgate.envs.trajlog import read_log
    from beliefgate.models.controllers.boltzmann import boltzmann_logprobs
    from beliefgate.models.data import FitDataError, detect_domain, load_logs

    _, cache = bench
    two = sorted(cache.glob("*.jsonl"))
    assert detect_domain(two) == "overcooked_v2" and detect_domain(["/no/such.jsonl"]) == "overcooked"
    data = load_logs(two, domain="overcooked_v2")
    assert data.meta["domain"] == "overcooked_v2" and data.action_names[4] == "stay"
    traj = read_log(two[0])
    obs = DOMAIN.make_observer(layout=LAYOUT, partner=1)
    assert tuple(data.skill_names) == tuple(obs.skill_names)
    states = traj.states()
    for t in (3, 40, 90):   # the fit reads a step exactly as the gate does
        ev = obs.evidence(states[t], states[t + 1])
        q = np.asarray(data.skill.q[0, t])
        assert np.allclose(boltzmann_logprobs(q, 2.0, 0.1), ev.logprobs)
        assert np.array_equal(np.asarray(data.skill.action_mask[0, t]), ev.action_mask)
        assert float(data.skill.weight[0, t]) == ev.weight
    known = np.asarray(data.true_skill[0]) >= 0
    assert known.mean() > 0.5   # the partner's logged skills are kept for the diagnostics
    with pytest.raises(FitDataError, match="partner side 5 but the log has 2 players"):
        load_logs(two, 5, domain="overcooked_v2")
    rows = [json.loads(line) for line in two[0].read_text().splitlines()]
    p0 = rows[1]["state"]["players"][1]["position"]
    far = next(c for c in DOMAIN.layout_info(LAYOUT).floor if abs(c[0] - p0[0]) + abs(c[1] - p0[1]) > 1
               and list(c) != rows[1]["state"]["players"][0]["position"])
    rows[2]["state"]["players"][1]["position"] = list(far)   # step 1's state: the partner jumps
    broken = two[0].parent.parent / "broken.jsonl"
    broken.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(FitDataError, match=r"broken.jsonl: step 0: player 1 moves from"):
        load_logs([broken], domain="overcooked_v2")


@pytest.mark.slow
def test_fit_data_of_a_three_player_v2_log_names_the_partner(bench3):
    from beliefgate.models.data import FitDataError, load_logs

    three = [p for p in bench3[1].glob("*.jsonl") if "_3p__" in p.name]
    with pytest.raises(FitDataError, match="players; say which one"):
        load_logs(three, domain="overcooked_v2")
    assert load_logs(three, 1, domain="overcooked_v2").num_trajectories == 1


@pytest.mark.slow   # the offline recipe filter's first compile: ~8 s
def test_v2_logs_become_the_goal_models_data(bench):
    from beliefgate.envs.overcooked_v2.fitdata import load_goal_logs
    from beliefgate.envs.trajlog import read_log
    from beliefgate.models.data import FitDataError
    from beliefgate.models.goal import filter_goal

    _, cache = bench
    two = sorted(cache.glob("*.jsonl"))
    data = load_goal_logs(two)
    names = DOMAIN.goal_names(LAYOUT)
    scan = filter_goal(data, {"beta": 2.0, "epsilon": 0.1})
    assert np.isfinite(float(np.sum(scan.log_marginal)))
    post = np.exp(np.asarray(scan.log_posterior[0])).sum(axis=-1)   # [T, G]
    traj = read_log(two[0])
    truth = ["-".join(map(str, row.state.recipe_ingredients)) for row in traj.steps]
    right = np.mean([names[int(np.argmax(post[t]))] == truth[t] for t in range(len(truth))])
    assert right > 0.6, right   # the recipe belief on the log follows the active recipe
    with pytest.raises(FitDataError, match="viewer must be a player other than the partner"):
        load_goal_logs(two, viewer=1)


@pytest.mark.slow   # SVI and NUTS on V2 logs: about two minutes on the shared machine
def test_fit_and_diagnose_cli_on_v2_logs(bench, tmp_path):
    from beliefgate.envs.overcooked_v2.fitdata import load_goal_logs
    from beliefgate.models.goal import GoalFitConfig, fit_goal

    _, cache = bench
    two = sorted(cache.glob("*.jsonl"))
    out = tmp_path / "fit.nc"
    res = _cli("fit", *two, "--method", "svi", "--svi-steps", "300", "--chains", "1", "--draws", "100", "-o", out,
               "--no-progress", "--json")
    assert res.exit_code == 0, res.output
    res = _cli("diagnose", out, "--ppc-draws", "20", "--json")
    assert res.exit_code in (0, 1), res.output
    assert "beta" in json.loads(res.output[res.output.index("{"):])["parameters"]
    idata = fit_goal(load_goal_logs(two), GoalFitConfig(draws=60, warmup=60, fixed={"epsilon": 0.1}))
    beta = idata.posterior["beta"].values
    assert np.isfinite(beta).all() and beta.mean() > 0


@pytest.mark.slow   # the fit command's JAX set-up: ~6 s (the loader's errors are checked in the default suite)
def test_fit_cli_on_a_bad_v2_log_is_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"kind": "header", "format": "beliefgate.trajectory/1", "layout": "v2/nope",
                               "horizon": 5, "seed": 0, "seat": 0, "agents": ["a", "b"], "ego": "a",
                               "partner": "b", "version": "0", "config": {}}) + "\n")
    res = _cli("fit", bad, "-o", tmp_path / "f.nc", "--no-progress")
    assert res.exit_code == 2, res.output
    assert "bad.jsonl" in res.output and len([ln for ln in res.output.splitlines() if ln.strip()]) == 1


@pytest.mark.slow   # a play server in its own process (JaxMARL's import and compile there): ~30 s
def test_a_person_plays_a_v2_kitchen_in_chromium(tmp_path):
    """`beliefgate play` on a V2 kitchen whose recipe the person's seat does not see (grounded_coord_simple
    with a view of one cell: the person starts in the right room, away from the indicator and the button),
    in headless Chromium: keys move the person, the agent acts, the recipe is drawn hidden from the person,
    the log is complete and records the options."""
    import os
    import subprocess
    import sys

    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from beliefgate.envs.trajlog import LogFormatError, TruncatedLogError, read_log
    from beliefgate.viewer.browser import BrowserUnavailable, find_browser, headless_chromium

    try:
        paths = find_browser()
    except BrowserUnavailable as exc:
        pytest.skip(f"no headless browser: {exc}")
    logs = tmp_path / "logs"
    proc = subprocess.Popen([sys.executable, "-m", "beliefgate.cli", "play", "--port", "0", "--layout",
                             "v2/grounded_coord_simple", "--agent", "bayes-belief", "--tick-hz", "10", "--horizon",
                             "40", "--log", f"{logs}/", "--seed", "0", "--env-option", "agent_view_size=1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    driver = None
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match is not None, (line, proc.stderr.read() if proc.poll() is not None else "")
        driver = headless_chromium(paths=paths)
        driver.set_page_load_timeout(60)
        driver.get(f"http://127.0.0.1:{match.group(1)}/")
        end = time.monotonic() + 60
        while not driver.execute_script("return window.beliefgatePlay && window.beliefgatePlay.hello") \
                and time.monotonic() < end:
            time.sleep(0.1)
        hello = driver.execute_script("return window.beliefgatePlay.hello")
        assert hello["layout"]["v2"]["backend"] == "v2" and hello["frame"][5]["recipe"] is None
        canvas = driver.find_element(By.ID, "kitchen")
        assert canvas.get_attribute("data-recipe") == "hidden"
        body = driver.find_element(By.TAG_NAME, "body")
        for key in (Keys.ARROW_DOWN, Keys.ARROW_UP, Keys.ARROW_LEFT):
            body.send_keys(key)
            time.sleep(0.15)
        end = time.monotonic() + 60
        while driver.execute_script("return window.beliefgatePlay.states") < 6 and time.monotonic() < end:
            time.sleep(0.1)
        assert driver.execute_script("return window.beliefgatePlay.states") >= 6
        assert driver.execute_script("return window.beliefgatePlay.sent") == 3
        assert [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"] == []
        driver.execute_script("window.beliefgatePlay.socket.close()")   # leaving ends the game, completing its log
        driver.quit()
        driver = None
        end = time.monotonic() + 30
        traj, why = None, "no log"
        while traj is None and time.monotonic() < end:
            found = list(logs.glob("*.jsonl"))
            if found:
                try:
                    traj = read_log(found[0])
                except (LogFormatError, TruncatedLogError) as exc:   # still being written: polled until complete
                    why = str(exc)
                    time.sleep(0.2)
            else:
                time.sleep(0.2)
        assert traj is not None, (why, list(logs.iterdir()) if logs.exists() else "no folder")
        assert traj.final.summary["ended"] in ("disconnected", "horizon")
        assert found[0].parent == logs and found[0].name.startswith("play-v2_grounded_coord_simple-")
        assert traj.header.config["agent_view_size"] == 1 and not traj.steps[0].state.sees_recipe(1)
        assert [r.actions[1] for r in traj.steps if r.info[1]["input"] == "key"] == [1, 3, 2]   # south, north, west
    finally:
        if driver is not None:
            driver.quit()
        proc.terminate()
        proc.wait(10)
