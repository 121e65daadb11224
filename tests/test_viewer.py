"""The episode report and the play page: data extraction, the game, and both pages in a real headless Chromium.

Browser tests skip (with the reason) only where no Chromium/chromedriver/selenium is found; everything else
runs on the real Overcooked dynamics, the real agents, a real uvicorn server and real WebSockets.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beliefgate.envs.trajlog import read_log
from beliefgate.eval.episode import run_episode
from beliefgate.viewer.report import ReportInputError, render_report, report_data, write_episode_reports, write_report

AGENT = "bayes-belief"
PARTNER = "switch-sourcer-to-plater"


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def episode_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("viewer") / "ep.jsonl"
    run_episode("cramped_room", AGENT, PARTNER, seed=3, horizon=150, log_path=path)
    return path


@pytest.fixture(scope="module")
def scripted_log(tmp_path_factory):
    """An ego without a gate: no belief, no gate or replan fields."""
    path = tmp_path_factory.mktemp("viewer") / "scripted.jsonl"
    run_episode("cramped_room", "balanced", "balanced", seed=1, horizon=60, log_path=path)
    return path


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium; skips only when none is found (a browser that is found but fails to start fails)."""
    from beliefgate.viewer.browser import BrowserUnavailable, find_browser, headless_chromium

    try:
        paths = find_browser()
    except BrowserUnavailable as exc:
        pytest.skip(f"no headless browser: {exc}")
    driver = headless_chromium(paths=paths)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _wait(predicate, timeout=10.0, interval=0.05, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def _severe(driver):
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


# --------------------------------------------------------------------------- report data (no browser)
def test_report_data_follows_the_log(episode_log):
    traj = read_log(episode_log)
    data = report_data(traj)
    T = len(traj.steps)
    assert data["steps"] == T and len(data["frames"]) == T + 1 and len(data["belief"]) == T
    # the posterior is the ego's logged belief, normalised; the true skill is the partner's logged skill
    for t in (1, T // 2, T - 1):
        logged = traj.steps[t].info[0]["belief"]
        assert data["belief"][t] == pytest.approx([v / sum(logged) for v in logged], abs=1e-4)
        assert abs(sum(data["belief"][t]) - 1.0) < 1e-3
        assert data["names"][data["true_skill"][t]] == traj.steps[t].skills[1]
    assert data["belief"][0] is None  # nothing observed yet at t = 0
    assert len(data["deliveries"]) == traj.final.summary["deliveries"]
    replanned = [t for t, r in enumerate(traj.steps) if r.info[0].get("replanned")]
    assert [r[0] for r in data["replans"]] == replanned
    for t, _reason, effective, _interrupt in data["replans"]:
        before = traj.steps[t - 1].skills[0] if t > 0 else None
        assert effective == (traj.steps[t].skills[0] != before)
    assert data["gate"]["interrupts"] == [t for t, r in enumerate(traj.steps) if r.info[0].get("interrupt")]
    # frames are the logged states: player 1's cell at a late step
    t = T - 1
    assert data["frames"][t][2][1][:2] == list(traj.steps[t].state.players[1].position)


def test_report_is_self_contained(episode_log, tmp_path):
    out = tmp_path / "r.html"
    written = write_report(episode_log, out)
    text = out.read_text(encoding="utf-8")
    assert written["bytes"] == len(text.encode("utf-8")) and written["complete"]
    assert "<link" not in text and not re.search(r"""\ssrc\s*=\s*["']""", text)
    stripped = text.replace('"http://www.w3.org/2000/svg"', "")  # the SVG namespace is a name, not a request
    assert "http://" not in stripped and "https://" not in stripped  # no network resource of any kind
    assert "{{" not in text.split("<script", 1)[0]  # every template marker filled


def test_report_degrades_without_gate_fields(scripted_log):
    data = report_data(read_log(scripted_log))
    assert all(b is None for b in data["belief"])
    assert data["kappa"] is None and data["replans"] == []
    assert not any(data["present"].values())
    assert "not logged" in render_report(read_log(scripted_log))  # the page says so (checked in the browser too)


def _augment(episode_log: Path, path: Path) -> Path:
    """The log with the fields the κ and gate-quality agents log: contradiction, suppressed_reason, κ, fallbacks."""
    out = []
    for line in episode_log.read_text().splitlines():
        row = json.loads(line)
        if row["kind"] == "step":
            t = row["t"]
            row["info"][0]["contradiction"] = t % 7 == 0
            row["info"][0]["suppressed_reason"] = "unstable_map" if t % 5 == 0 else None
            row["info"][0]["kappa"] = ({"kappa": 0.5 + 0.001 * t, "committed": t % 10 == 0, "theta": 0.7}
                                       if t % 2 else None)
            row["info"][0]["fallback_events"] = ([{"role": "planner", "reason": "timeout", "detail": "deadline"}]
                                                 if t in (4, 40) else [])
        out.append(json.dumps(row))
    path.write_text("\n".join(out) + "\n")
    return path


def test_report_reads_kappa_and_contradictions_when_logged(episode_log, tmp_path):
    """κ/commit (flat or nested) and contradiction/suppressed fields, as the κ and gate agents log them."""
    path = _augment(episode_log, tmp_path / "k.jsonl")
    data = report_data(read_log(path))
    T = data["steps"]
    assert data["gate"]["contradictions"] == [t for t in range(T) if t % 7 == 0]
    assert data["gate"]["suppressed"] == {"unstable_map": [t for t in range(T) if t % 5 == 0]}
    assert data["kappa"][1] == pytest.approx(0.501) and data["kappa"][2] is None and data["kappa_theta"] == 0.7
    assert [c[0] for c in data["commits"]] == [t for t in range(T) if t % 2]
    assert all(c[1] == (c[0] % 10 == 0) for c in data["commits"])
    assert data["fallbacks"] == [[4, "planner", "timeout", "deadline"], [40, "planner", "timeout", "deadline"]]


def test_report_rejects_an_empty_log(tmp_path, episode_log):
    header = episode_log.read_text().splitlines()[0]
    path = tmp_path / "empty.jsonl"
    path.write_text(header + "\n")
    with pytest.raises(ReportInputError, match="no steps"):
        write_report(path, tmp_path / "x.html")


def test_episode_reports_of_a_run_directory(tmp_path, episode_log, scripted_log):
    episodes = tmp_path / "run" / "episodes" / "cramped_room"
    episodes.mkdir(parents=True)
    (episodes / "a.jsonl").write_bytes(episode_log.read_bytes())
    (episodes / "b.jsonl").write_bytes(scripted_log.read_bytes())
    (episodes / "c.jsonl").write_text('{"kind": "header"\n')  # corrupt
    result = write_episode_reports(tmp_path / "run")
    assert [Path(r["path"]).name for r in result["reports"]] == ["a.html", "b.html"]
    assert len(result["failed"]) == 1 and "c.jsonl" in result["failed"][0]["log"]
    index = Path(result["index"]).read_text()
    assert 'href="cramped_room/a.html"' in index and 'href="cramped_room/b.html"' in index and "c.jsonl" in index
    assert (tmp_path / "run" / "reports" / "cramped_room" / "a.html").stat().st_size > 10_000
    with pytest.raises(ReportInputError):
        write_episode_reports(tmp_path / "missing")


def test_report_cli(episode_log, tmp_path):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    out = tmp_path / "cli.html"
    res = CliRunner().invoke(app, ["report", str(episode_log), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["path"] == str(out) and out.exists()
    res = CliRunner().invoke(app, ["report", str(tmp_path / "nope.jsonl")])
    assert res.exit_code == 2 and "nope.jsonl" in res.output


# --------------------------------------------------------------------------- the game (no browser)
def test_messages_are_validated():
    from beliefgate.viewer.play import EndMessage, KeyMessage, PlayMessageError, parse_message

    assert parse_message('{"type":"key","action":"west"}') == KeyMessage(type="key", action="west")
    assert isinstance(parse_message('{"type":"end"}'), EndMessage)
    for bad in ("not json", '{"type":"key","action":"fly"}', '{"type":"key"}', '{"type":"key","action":"west","x":1}',
                "[]", None):
        with pytest.raises(PlayMessageError) as info:
            parse_message(bad)
        assert info.value.kind == "malformed"
    with pytest.raises(PlayMessageError) as info:
        parse_message('{"type":"key","action":"west","pad":"' + "x" * 600 + '"}', max_bytes=512)
    assert info.value.kind == "oversized"


def test_play_game_moves_the_person_and_logs(tmp_path):
    from beliefgate.viewer.play import GameOverError, PlayGame, PlayMessageError, PlaySettings

    try:  # the Overcooked loader behind `beliefgate fit` (registered as the "overcooked" fit-data domain)
        from beliefgate.envs.overcooked.fitdata import load_logs
    except ImportError:  # older layout: the loader lived in models.data
        from beliefgate.models.data import load_logs

    settings = PlaySettings(agent=AGENT, horizon=40, log=tmp_path / "g.jsonl", queue=2)
    game = PlayGame(settings, tmp_path / "g.jsonl", session="s1")
    start = game.state.players[1].position
    assert game.press("west") and game.press("south") and not game.press("east")  # queue of 2: third dropped
    m1 = game.tick()
    m2 = game.tick()
    assert m1["frame"][2][1][2] == 3  # facing west after the first key (orientation index 3)
    assert game.trajectory.steps[0].actions[1] == 3 and game.trajectory.steps[1].actions[1] == 1
    assert game.state.players[1].position != start
    for _ in range(5):
        game.tick()  # no key waiting: the person stays, counted
    assert game.trajectory.steps[-1].actions[1] == 4 and game.idle_ticks == 5
    assert m2["belief"] is not None and abs(sum(m2["belief"]) - 1) < 1e-3
    summary = game.finish("player")
    assert summary["dropped_keys"] == 1 and summary["ended"] == "player" and summary["steps"] == 7
    assert game.finish("disconnected") is summary  # idempotent: the first ending stands
    with pytest.raises(GameOverError):
        game.tick()
    with pytest.raises(PlayMessageError):
        game.press("fly")
    traj = read_log(tmp_path / "g.jsonl")
    assert traj.complete and len(traj.steps) == 7 and traj.header.partner == "human" and traj.header.seat == 0
    assert traj.steps[0].info[1]["input"] == "key" and traj.steps[-1].info[1]["input"] == "idle"
    data = load_logs([tmp_path / "g.jsonl"])  # what `beliefgate fit` reads: the person's actions are the data
    assert [int(a) for a in data.action[0][:2]] == [3, 1] and (data.true_skill[0][:7] == -1).all()
    write_report(tmp_path / "g.jsonl", tmp_path / "g.html")
    assert (tmp_path / "g.html").exists()


def test_session_logs_never_overwrite(tmp_path):
    from beliefgate.viewer.play import PlaySettings, session_log_path

    s = PlaySettings(log=tmp_path / "p.jsonl")
    assert session_log_path(s, 1, "a") == tmp_path / "p.jsonl"
    (tmp_path / "p.jsonl").write_text("x")
    assert session_log_path(s, 1, "b") == tmp_path / "p-2.jsonl"
    assert session_log_path(s, 3, "c") == tmp_path / "p-3.jsonl"
    d = PlaySettings(log=tmp_path)
    assert session_log_path(d, 1, "abcd").parent == tmp_path and "abcd" in session_log_path(d, 1, "abcd").name


# --------------------------------------------------------------------------- report in the browser
def test_report_in_browser(browser, episode_log, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    out = tmp_path / "r.html"
    write_report(episode_log, out)
    T = len(read_log(episode_log).steps)
    browser.get(out.as_uri())
    _wait(lambda: browser.execute_script("return !!window.beliefgateReport"), what="report script")
    assert _severe(browser) == []
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0  # nothing fetched
    assert browser.execute_script("return window.beliefgateReport.steps") == T
    # the posterior chart: one polygon per skill, its top edge one point per step
    bands = browser.find_elements(By.CSS_SELECTOR, "polygon.posterior-band")
    assert len(bands) == 6
    for band in bands:
        pts = band.get_attribute("points").split()
        assert len(pts) == 2 * T
        xs = [float(p.split(",")[0]) for p in pts[:T]]
        assert all(b > a for a, b in zip(xs, xs[1:]))
    # the scrubber moves frames: keys on the range input advance the kitchen
    canvas = browser.find_element(By.ID, "kitchen")
    before = browser.execute_script("return arguments[0].toDataURL()", canvas)
    scrubber = browser.find_element(By.ID, "scrubber")
    scrubber.click()
    browser.execute_script("arguments[0].value = 0; arguments[0].dispatchEvent(new Event('input'))", scrubber)
    for _ in range(12):
        scrubber.send_keys(Keys.ARROW_RIGHT)
    assert canvas.get_attribute("data-frame") == "12"
    assert browser.find_element(By.ID, "frame-label").text.startswith("t = 12 ")
    assert browser.execute_script("return arguments[0].toDataURL()", canvas) != before  # the chefs moved
    scrubber.send_keys(Keys.END)
    assert canvas.get_attribute("data-frame") == str(T)  # the final state
    # play runs frames forward on its own
    browser.execute_script("window.beliefgateReport.seek(0)")
    browser.find_element(By.ID, "play").click()
    _wait(lambda: int(canvas.get_attribute("data-frame")) >= 5, what="playback")
    browser.find_element(By.ID, "play").click()
    assert _severe(browser) == []


def test_report_without_gate_fields_in_browser(browser, scripted_log, tmp_path):
    from selenium.webdriver.common.by import By

    out = tmp_path / "s.html"
    write_report(scripted_log, out)
    browser.get(out.as_uri())
    _wait(lambda: browser.execute_script("return !!window.beliefgateReport"), what="report script")
    assert _severe(browser) == []
    assert browser.find_elements(By.CSS_SELECTOR, "polygon.posterior-band") == []
    absent = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#tracks text.absent")]
    assert any("no belief logged" in a for a in absent) and any("not logged" in a for a in absent)


# --------------------------------------------------------------------------- play: a real server
@pytest.fixture(scope="module")
def play_server(tmp_path_factory):
    logs = tmp_path_factory.mktemp("play-logs")
    env = {**os.environ, "SDL_AUDIODRIVER": "dummy", "PYGAME_HIDE_SUPPORT_PROMPT": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "beliefgate.cli", "play", "--port", "0", "--agent", AGENT,
                             "--tick-hz", "20", "--horizon", "300", "--log", f"{logs}/", "--seed", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if match is None:
            proc.kill()
            raise AssertionError(f"no address printed: {line!r} {proc.stderr.read()}")
        url = f"http://127.0.0.1:{match.group(1)}/"
        yield url, logs
    finally:
        proc.terminate()
        proc.wait(10)


def _logs_of(logs: Path, session: str):
    found = [p for p in logs.glob("*.jsonl") if session in p.name]
    return found[0] if found else None


def test_play_in_browser(browser, play_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    url, logs = play_server
    first = browser.current_window_handle
    browser.switch_to.new_window("tab")
    browser.get(url)
    hello = _wait(lambda: browser.execute_script("return window.beliefgatePlay.hello"), what="hello")
    assert hello["human_seat"] == 1 and hello["agent"] == AGENT
    start = hello["frame"][2][1]
    body = browser.find_element(By.TAG_NAME, "body")
    for key in (Keys.ARROW_LEFT, Keys.ARROW_DOWN, Keys.ARROW_RIGHT, Keys.ARROW_UP, Keys.ARROW_LEFT):
        body.send_keys(key)
        time.sleep(0.15)
    _wait(lambda: browser.execute_script("return window.beliefgatePlay.states") >= 8, what="ticks")
    assert browser.execute_script("return window.beliefgatePlay.sent") == 5
    state = browser.execute_script("return window.beliefgatePlay.state")
    assert state["belief"] is not None and len(state["belief"]) == len(hello["names"])
    bars = browser.find_elements(By.CSS_SELECTOR, "#bars .bar-row")
    assert len(bars) == len(hello["names"])
    assert _severe(browser) == []
    browser.close()  # closing the tab ends the episode and keeps the log
    browser.switch_to.window(first)
    path = _wait(lambda: _logs_of(logs, hello["session"]), what="log file")
    traj = _wait(lambda: _complete(path), what="final row")
    summary = traj.final.summary
    assert summary["ended"] == "disconnected" and summary["partner"] == "human"
    keyed = [(r.actions[1], r.state.players[1], n.state.players[1])
             for r, n in zip(traj.steps, traj.steps[1:] + [traj.final]) if r.info[1]["input"] == "key"]
    assert [a for a, _, _ in keyed] == [3, 1, 2, 0, 3]  # west, south, east, north, west: in the order pressed
    assert any(after.position != before.position for _, before, after in keyed)  # the server moved the chef
    assert traj.steps[0].state.players[1].position == tuple(start[:2])


def _complete(path):
    from beliefgate.envs.trajlog import LogFormatError

    try:
        return read_log(path)
    except LogFormatError:
        return None


def test_play_rejects_bad_messages_and_isolates_sessions(play_server):
    from websockets.sync.client import connect

    url, logs = play_server
    ws_url = url.replace("http://", "ws://") + "ws"
    with connect(ws_url, open_timeout=10) as a, connect(ws_url, open_timeout=10) as b:
        ha, hb = json.loads(a.recv(timeout=10)), json.loads(b.recv(timeout=10))
        assert ha["type"] == hb["type"] == "hello" and ha["session"] != hb["session"] and ha["log"] != hb["log"]
        a.send("{not json")
        assert json.loads(a.recv(timeout=5))["error"] == "malformed"
        a.send(json.dumps({"type": "key", "action": "west", "pad": "x" * 100_000}))
        assert json.loads(a.recv(timeout=5))["error"] == "oversized"
        a.send(b"\x00\x01")
        assert json.loads(a.recv(timeout=5))["error"] == "malformed"
        a.send(json.dumps({"type": "key", "action": "west"}))  # the game goes on
        m = json.loads(a.recv(timeout=5))
        while m["type"] != "state":
            m = json.loads(a.recv(timeout=5))
        assert m["t"] == 1 and m["frame"][2][1][2] == 3
        a.send(json.dumps({"type": "end"}))
        while m["type"] != "done":
            m = json.loads(a.recv(timeout=5))
        assert m["summary"]["ended"] == "player" and m["summary"]["rejected"] == {"oversized": 1, "malformed": 2}
        # b never pressed a key: its clock has not started and its log has no step
        b.send(json.dumps({"type": "end"}))
        mb = json.loads(b.recv(timeout=5))
        assert mb["type"] == "done" and mb["summary"]["steps"] == 0 and mb["summary"]["rejected"]["malformed"] == 0
        assert mb["log"] is None  # no step, no log file
    ta = read_log(logs / ha["log"])
    assert ta.steps[0].actions[1] == 3 and ta.final.summary["session"] == ha["session"]
    assert not (logs / hb["log"]).exists()


def test_report_zoomed_tracks_follow_the_cursor(browser, episode_log, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    out = tmp_path / "z.html"
    write_report(episode_log, out)
    browser.get(out.as_uri())
    _wait(lambda: browser.execute_script("return !!window.beliefgateReport"), what="report script")
    Select(browser.find_element(By.ID, "zoom")).select_by_value("50")
    browser.execute_script("window.beliefgateReport.seek(100)")
    t0, t1 = browser.execute_script("return window.beliefgateReport.window()")
    assert t1 - t0 == 50 and t0 <= 100 < t1
    for band in browser.find_elements(By.CSS_SELECTOR, "polygon.posterior-band"):
        assert len(band.get_attribute("points").split()) == 2 * 50  # one point per visible step
    assert _severe(browser) == []


def test_a_failing_game_ends_only_its_session(tmp_path, monkeypatch):
    """An agent that raises mid-game: that session ends with the reason (logged, told, log complete); the server
    goes on. A scripted double stands in for the failing agent; the app, the dynamics and the log are real."""
    from starlette.testclient import TestClient

    import beliefgate.agents.registry as registry
    from beliefgate.viewer.play import PlaySettings, create_play_app

    real = registry.make_agent

    class Failing:
        def __init__(self, inner):
            self.inner, self.calls = inner, 0

        def reset(self, *a):
            self.inner.reset(*a)

        def act(self, state, events=()):
            self.calls += 1
            if self.calls == 3:
                raise RuntimeError("planner exploded")
            return self.inner.act(state, events)

        def info(self):
            return self.inner.info()

    monkeypatch.setattr(registry, "make_agent", lambda name, *a, **k: Failing(real(name, *a, **k)))
    app = create_play_app(PlaySettings(agent=AGENT, tick_hz=50, horizon=50, log=f"{tmp_path}/", max_sessions=1))
    with TestClient(app, base_url="http://127.0.0.1") as client:  # the play page answers only to local names
        with client.websocket_connect("ws://127.0.0.1/ws") as ws:
            hello = ws.receive_json()
            with client.websocket_connect("ws://127.0.0.1/ws") as busy:  # max_sessions=1: a second game is refused
                assert busy.receive_json()["error"] == "busy"
            ws.send_json({"type": "key", "action": "west"})
            kinds = []
            while True:
                m = ws.receive_json()
                kinds.append(m["type"])
                if m["type"] == "done":
                    break
        assert kinds[-2:] == ["error", "done"] and kinds.count("state") == 2
        assert m["summary"]["ended"].startswith("error: RuntimeError: planner exploded")
        traj = read_log(tmp_path / hello["log"])  # the page is told the file name, not the server's path
        assert len(traj.steps) == 2 and traj.final.summary["ended"] == m["summary"]["ended"]
        assert client.get("/healthz").json()["sessions"] == 0  # the server is still up, the session is gone


def test_report_with_kappa_and_gate_fields_in_browser(browser, episode_log, tmp_path):
    from selenium.webdriver.common.by import By

    out = tmp_path / "k.html"
    write_report(_augment(episode_log, tmp_path / "k.jsonl"), out)
    browser.get(out.as_uri())
    _wait(lambda: browser.execute_script("return !!window.beliefgateReport"), what="report script")
    assert _severe(browser) == []
    T = browser.execute_script("return window.beliefgateReport.steps")
    count = lambda sel: len(browser.find_elements(By.CSS_SELECTOR, sel))  # noqa: E731
    assert count("rect.contradiction") == len(range(0, T, 7))
    assert count("rect.suppressed") == len(range(0, T, 5))
    assert count("rect.commit") == len(range(1, T, 2)) and count("circle.kappa") == len(range(1, T, 2))
    assert count("polyline.kappa-line") == 1
    # the κ track has an axis (0, 0.5, 1) and the commit threshold θ as a line
    assert count("line.kappa-tick") == 3 and count("line.kappa-theta") == 1
    assert count("rect.fallback") == 2
    # the zoom offers no window as long as the episode (150 steps: not 200 or 800)
    from selenium.webdriver.support.ui import Select

    assert [o.get_attribute("value") for o in Select(browser.find_element(By.ID, "zoom")).options] == ["all", "50"]
    # events name the players as the kitchen does: E (ego) and P (partner), not P0 / P1
    events = browser.execute_script("return JSON.parse(document.getElementById('report-data').textContent).events")
    t = next(i for i, ev in enumerate(events) if any(ev))
    browser.execute_script(f"window.beliefgateReport.seek({t})")
    text = browser.find_element(By.ID, "step-table").text
    assert ("E: " in text or "P: " in text) and "P0:" not in text and "P1:" not in text
    browser.execute_script("window.beliefgateReport.seek(40)")
    assert "planner: timeout (deadline)" in browser.find_element(By.ID, "step-table").text


def test_play_game_person_in_seat_zero(tmp_path):
    from beliefgate.viewer.play import PlayGame, PlaySettings

    game = PlayGame(PlaySettings(agent=AGENT, human_seat=0, horizon=3, log=tmp_path / "s0.jsonl"),
                    tmp_path / "s0.jsonl")
    game.press("east")
    for _ in range(3):
        m = game.tick()
    assert game.finished and game.summary["ended"] == "horizon" and m["belief"] is not None
    traj = read_log(tmp_path / "s0.jsonl")
    assert traj.header.seat == 1 and traj.header.agents == ["human", AGENT]
    assert [r.actions[0] for r in traj.steps] == [2, 4, 4] and traj.steps[0].info[0]["input"] == "key"
    assert traj.steps[0].skills[0] is None and traj.steps[0].skills[1] is not None


def test_play_cli_rejects_bad_settings_before_serving(tmp_path):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    runner = CliRunner()
    for args, needle in ((["--tick-hz", "100"], "tick_hz: Input should be less than or equal to"), (["--agent", "no-such-agent"], "no-such-agent"),
                         (["--layout", "nowhere"], "nowhere")):
        res = runner.invoke(app, ["play", "--log", f"{tmp_path}/", *args])
        assert res.exit_code == 2 and needle in res.output, res.output
    assert list(tmp_path.iterdir()) == []  # nothing was started or written


def test_report_draws_overforge_kappa_and_commits(tmp_path):
    """An OverForge ego logs kappa in its decision records (``info.pcm``): the report draws them."""
    from beliefgate.eval.pcm import decision_records

    log = tmp_path / "of.jsonl"
    run_episode("cramped_room", "overforge", "plater", seed=1000, horizon=30, seat=0, log_path=log)
    traj = read_log(log)
    records = decision_records(traj)
    data = report_data(traj)
    assert records and data["present"]["kappa"] and data["present"]["commit"]
    drawn = [k for k in data["kappa"] if k is not None]
    assert drawn == [round(r["kappa"], 4) for r in records]
    assert [c for _, c in data["commits"]] == [bool(r["committed"]) for r in records]
    assert data["kappa_theta"] == records[0]["kappa_params"]["theta"]  # drawn as the track's θ line
    # plans after a finished skill are kept apart from the interrupts the summary counts as replans
    assert sum(1 for r in data["replans"] if r[3]) == traj.final.summary["replans"]


def test_play_end_game_updates_the_status_line(browser, play_server):
    """After 'End game' the header says the game is over and the button is disabled (it kept
    saying 'playing')."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    url, _ = play_server
    first = browser.current_window_handle
    browser.switch_to.new_window("tab")
    try:
        browser.get(url)
        _wait(lambda: browser.execute_script("return window.beliefgatePlay.hello"), what="hello")
        browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
        _wait(lambda: browser.execute_script("return window.beliefgatePlay.states") >= 2, what="ticks")
        browser.find_element(By.ID, "end").click()
        _wait(lambda: browser.execute_script("return window.beliefgatePlay.done"), what="game over")
        status = browser.find_element(By.ID, "status").text
        assert status.endswith("game over") and "playing" not in status, status
        assert not browser.find_element(By.ID, "end").is_enabled()
        assert _severe(browser) == []
    finally:
        browser.close()
        browser.switch_to.window(first)


# --------------------------------------------------------------------------- play: messages (issue 45)
@pytest.fixture(scope="module")
def talk_server(tmp_path_factory):
    """A play server whose agent talks and listens (OverForge); short games that end at the horizon."""
    logs = tmp_path_factory.mktemp("talk-logs")
    env = {**os.environ, "SDL_AUDIODRIVER": "dummy", "PYGAME_HIDE_SUPPORT_PROMPT": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "beliefgate.cli", "play", "--port", "0", "--agent", "overforge",
                             "--tick-hz", "20", "--horizon", "20", "--log", f"{logs}/", "--seed", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if match is None:
            proc.kill()
            raise AssertionError(f"no address printed: {line!r} {proc.stderr.read()}")
        yield f"http://127.0.0.1:{match.group(1)}/", logs
    finally:
        proc.terminate()
        proc.wait(10)


def test_play_person_proposes_from_a_button_and_the_agent_hears_it(browser, talk_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    url, logs = talk_server
    first = browser.current_window_handle
    browser.switch_to.new_window("tab")
    browser.get(url)
    hello = _wait(lambda: browser.execute_script("return window.beliefgatePlay.hello"), what="hello")
    assert hello["talks"] and set(hello["roles"]) >= {"ingredient", "plating"}
    assert hello["goals"] == [] and not browser.find_element(By.ID, "say-goal-row").is_displayed()  # no recipes
    Select(browser.find_element(By.ID, "say-my-role")).select_by_visible_text("plating")
    Select(browser.find_element(By.ID, "say-agent-role")).select_by_visible_text("ingredient")
    browser.find_element(By.ID, "say-propose").click()  # also starts the clock
    _wait(lambda: browser.execute_script("return window.beliefgatePlay.done"), what="the horizon")
    talk = browser.execute_script("return window.beliefgatePlay.talk")
    mine = [t for t in talk if " you propose " in t]
    assert len(mine) == 1 and "you: plating" in mine[0] and "AI: ingredient" in mine[0], talk
    assert any(" AI propose " in t for t in talk), talk  # the agent's own split arrived on the page
    assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#talk-log li.from-agent")]
    assert _severe(browser) == []
    summary = browser.execute_script("return window.beliefgatePlay.summary")
    session = hello["session"]
    browser.close()
    browser.switch_to.window(first)
    traj = _wait(lambda: _complete(_logs_of(logs, session)), what="final row")
    said = [(r.t, m) for r in traj.steps if r.messages is not None for m in r.messages.sent]
    (t_mine, proposal), = [(t, m) for t, m in said if m.sender == 1]
    assert proposal.kind == "propose" and proposal.roles == {1: "plating", 0: "ingredient"}
    # delivered at the next step: the agent's info from then on counts it as heard, and it answers it
    assert traj.steps[t_mine].info[0]["talk"]["heard"] == 0
    assert traj.steps[t_mine + 1].info[0]["talk"]["heard"] >= 1
    answers = [m for _, m in said if m.sender == 0 and m.kind in ("accept", "decline") and m.reply_to == proposal.id]
    assert len(answers) == 1
    assert summary["messages"]["sent_by_seat"][1] == 1 and summary["messages"]["refused"] == 0


def test_play_refuses_a_malformed_message_with_its_reason(talk_server):
    from websockets.sync.client import connect

    url, logs = talk_server
    with connect(url.replace("http://", "ws://") + "ws", open_timeout=10) as ws:
        hello = json.loads(ws.recv(timeout=10))
        ws.send(json.dumps({"type": "say", "message": {"kind": "propose", "roles": {"0": "juggling"}}}))
        refused, states = [], 0
        m = json.loads(ws.recv(timeout=10))
        while m["type"] != "done":
            if m["type"] == "state":
                states += 1
                refused += [r for r in (m["said"] or {"refused": []})["refused"] if r["sender"] == hello["human_seat"]]
                if states == 3:  # not a message at all: refused by the channel, the game goes on
                    ws.send(json.dumps({"type": "say", "message": "hello"}))
            m = json.loads(ws.recv(timeout=10))
    assert [r["reason"] for r in refused] == ["unknown_role", "malformed"] and refused[0]["t"] == 0
    assert "juggling" in refused[0]["detail"] and refused[1]["t"] >= 3
    summary = m["summary"]
    assert summary["ended"] == "horizon" and summary["steps"] == 20
    assert summary["messages"]["refused_by_seat"][1] == {"unknown_role": 1, "malformed": 1}
    assert summary["messages"]["sent_by_seat"][1] == 0 and summary["rejected"] == {"oversized": 0, "malformed": 0}
    traj = read_log(logs / m["log"])
    logged = [(r.t, x.reason) for r in traj.steps if r.messages is not None for x in r.messages.refused if x.sender == 1]
    assert logged == [(x["t"], x["reason"]) for x in refused]


# --------------------------------------------------------------------------- play: three players (issue 43)
@pytest.fixture
def play_app_server(tmp_path):
    """Serve a play app from this process (uvicorn in a thread: the jax and OvercookedV2 set-up of the suite
    is reused, where a server process would import it all again); yields ``start(settings) -> url``."""
    import socket
    import threading

    import uvicorn

    from beliefgate.viewer.play import create_play_app

    running = []

    def start(settings):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        server = uvicorn.Server(uvicorn.Config(create_play_app(settings), log_level="warning", lifespan="off"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread, sock))
        _wait(lambda: server.started, what="the play server")
        return f"http://127.0.0.1:{sock.getsockname()[1]}/"

    yield start
    for server, thread, sock in running:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_play_three_player_v2_kitchen_in_browser(browser, play_app_server, tmp_path):
    """A person in seat 2 of v2/cramped_room_v2_3p beside the agent (seat 0) and the default third
    partner (seat 1): the page draws three chefs in their own colours, the person's keys move seat 2,
    and the log is an ordinary three-player log that the report renders."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from beliefgate.viewer.play import PlaySettings

    settings = PlaySettings(layout="v2/cramped_room_v2_3p", agent=AGENT, human_seat=2, tick_hz=20, horizon=10,
                            log=f"{tmp_path}/")
    url = play_app_server(settings)
    first = browser.current_window_handle
    browser.switch_to.new_window("tab")
    try:
        browser.get(url)
        hello = _wait(lambda: browser.execute_script("return window.beliefgatePlay.hello"), what="hello", timeout=30)
        assert hello["players"] == 3 and (hello["agent_seat"], hello["human_seat"]) == (0, 2)
        third = settings.seat_names()[1]
        assert [(s["who"], s["label"], s["name"]) for s in hello["seats"]] == [
            ("agent", "AI", AGENT), ("partner", "P1", third), ("you", "YOU", "human")]
        # every chef is drawn in its own colour at its own cell (the start: nobody holds anything)
        chefs = hello["frame"][2]
        colours = browser.execute_script("""
            var c = document.getElementById('kitchen'), ctx = c.getContext('2d'), h = arguments[0];
            var s = c.width / h.layout.terrain[0].length, out = [];
            h.frame[2].forEach(function (p) {
              var d = ctx.getImageData(Math.round(p[0] * s + 0.3 * s), Math.round(p[1] * s + 0.68 * s), 1, 1).data;
              out.push('#' + [d[0], d[1], d[2]].map(function (v) { return (v < 16 ? '0' : '') + v.toString(16); }).join(''));
            });
            return [out, window.BGKitchen.PLAYER_COLOURS];""", hello)
        assert len(chefs) == 3 and len({tuple(p[:2]) for p in chefs}) == 3
        assert colours[0] == colours[1][:3], colours
        # a V2 kitchen names its recipes: the person can tell the agent one (an inform with a goal)
        from selenium.webdriver.support.ui import Select

        assert hello["goals"] == ["0-0-0", "0-0-1", "1-1-1", "0-1-1"], hello["goals"]
        assert browser.find_element(By.ID, "say-goal-row").is_displayed()
        Select(browser.find_element(By.ID, "say-goal-name")).select_by_index(1)
        told = browser.find_element(By.ID, "say-goal-name").get_attribute("value")
        browser.find_element(By.ID, "say-goal").click()
        body = browser.find_element(By.TAG_NAME, "body")
        for key in (Keys.ARROW_UP, Keys.ARROW_LEFT, Keys.ARROW_DOWN):
            body.send_keys(key)
            time.sleep(0.05)
        _wait(lambda: browser.execute_script("return window.beliefgatePlay.done"), what="the horizon", timeout=30)
        rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#agent-table tr")]
        assert any(r.startswith(f"P1 ({third})") for r in rows), rows
        assert "P1: " + third in browser.find_element(By.ID, "status").text
        summary = browser.execute_script("return window.beliefgatePlay.summary")
        assert _severe(browser) == []
    finally:
        browser.close()
        browser.switch_to.window(first)
    assert summary["ended"] == "horizon" and summary["steps"] == 10
    assert summary["partners"] == [third, "human"] and summary["partner"] == f"{third}+human"
    traj = read_log(tmp_path / summary_log(tmp_path, hello["session"]))
    assert traj.header.agents == [AGENT, third, "human"] and traj.header.seat == 0
    assert all(len(r.actions) == 3 and len(r.info) == 3 for r in traj.steps)
    sent = [m for r in traj.steps if r.messages for m in r.messages.sent]
    assert [(m.kind, m.goal, m.sender) for m in sent if m.sender == 2] == [("inform", told, 2)]
    keyed = [r.actions[2] for r in traj.steps if r.info[2]["input"] == "key"]
    assert keyed == [3, 2, 1]  # north, west, south in V2's action indices, in the order pressed
    assert all(r.info[1].get("skill") is not None for r in traj.steps[1:])  # the partner played its skills
    written = write_report(tmp_path / summary_log(tmp_path, hello["session"]), tmp_path / "p3.html")
    assert written["complete"] and written["steps"] == 10


def summary_log(folder: Path, session: str) -> str:
    (path,) = [p.name for p in folder.glob("*.jsonl") if session in p.name]
    return path


def test_play_cli_refuses_seats_the_layout_lacks(tmp_path):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    # importing jaxmarl sets sys.stderr back to the process's own, so an import inside invoke() would send
    # the error line past CliRunner: import it first, as the V2 tests before this file do in the suite
    importlib.import_module("jaxmarl")

    runner = CliRunner()
    for args, needle in (
            (["--layout", "v2/cramped_room_v2_3p", "--human-seat", "3"],
             "human_seat: v2/cramped_room_v2_3p has 3 players (seats 0..2), got 3"),
            (["--layout", "v2/asymm_advantages_3p", "--human-seat", "7"], "human_seat: v2/asymm_advantages_3p has 3"),
            (["--layout", "cramped_room", "--human-seat", "2"], "human_seat: cramped_room has 2 players"),
            (["--layout", "cramped_room", "--third", "balanced"], "third: cramped_room has 2 players"),
            (["--layout", "v2/cramped_room_v2_3p", "--third", "no-such-partner"], "--third: unknown agent"),
            (["--layout", "v2/asymm_advantages_3p", "--third", "bp-cooking-hi-hi-coord_ring"],
             "third: it does not play v2/asymm_advantages_3p: it plays only v2/coord_ring, got")):
        res = runner.invoke(app, ["play", "--port", "0", "--log", f"{tmp_path}/", *args])
        assert res.exit_code == 2 and needle in res.output and len(res.output.strip().splitlines()) == 1, res.output
    assert list(tmp_path.iterdir()) == []  # nothing was started or written
