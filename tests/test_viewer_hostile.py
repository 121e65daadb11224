"""Hostile input to the report index and the play page (issue #47, red-team findings 1, 2, 4 and 10).

Real episodes, a real index read back by an HTML parser and clicked in headless Chromium, the real play app.
"""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from beliefgate.eval.episode import run_episode
from beliefgate.viewer.report import write_episode_reports

AGENT = "bayes-belief"
PARTNER = "switch-sourcer-to-plater"


@pytest.fixture(scope="module")
def short_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "ep.jsonl"
    run_episode("cramped_room", AGENT, PARTNER, seed=2, horizon=40, log_path=path)
    return path


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href"))


HOSTILE_FOLDERS = ["javascript:alert(1)", "JaVaScRiPt:document.title='x'", "data:text", "a b#c?d", "%2e%2e"]


def _hostile_run(root: Path, log: Path) -> Path:
    for folder in HOSTILE_FOLDERS:
        (root / "episodes" / folder).mkdir(parents=True)
        (root / "episodes" / folder / "ep.jsonl").write_bytes(log.read_bytes())
    return root


def test_index_links_are_relative_file_paths(tmp_path, short_log):
    run = _hostile_run(tmp_path / "run", short_log)
    result = write_episode_reports(run)
    assert len(result["reports"]) == len(HOSTILE_FOLDERS) and not result["failed"]
    parser = _Links()
    parser.feed(Path(result["index"]).read_text(encoding="utf-8"))
    assert len(parser.hrefs) == len(HOSTILE_FOLDERS)
    out = run / "reports"
    for href in parser.hrefs:
        parts = urlsplit(href)
        assert parts.scheme == "" and parts.netloc == "" and not parts.query and not parts.fragment, href
        assert not href.startswith("/") and ":" not in href
        target = out / unquote(parts.path)
        assert target.is_file() and target.resolve().is_relative_to(out.resolve()), href
    assert {(out / unquote(h)).parent.name for h in parser.hrefs} == set(HOSTILE_FOLDERS)


def test_index_link_named_javascript_opens_the_report_in_chromium(tmp_path, short_log):
    from beliefgate.viewer.browser import BrowserUnavailable, find_browser, headless_chromium

    try:
        paths = find_browser()
    except BrowserUnavailable as exc:
        pytest.skip(f"no headless browser: {exc}")
    from selenium.webdriver.common.by import By

    run = tmp_path / "run"
    (run / "episodes" / "javascript:document.title='pwned'").mkdir(parents=True)
    (run / "episodes" / "javascript:document.title='pwned'" / "ep.jsonl").write_bytes(short_log.read_bytes())
    index = Path(write_episode_reports(run)["index"])
    driver = headless_chromium(paths=paths)
    try:
        driver.set_page_load_timeout(30)
        driver.get(index.as_uri())
        driver.find_element(By.LINK_TEXT, "report").click()
        assert driver.title != "pwned"
        assert driver.current_url.endswith("/ep.html") and "javascript" in unquote(driver.current_url)
        assert driver.execute_script("return document.querySelector('script[type=\"application/json\"]') !== null")
    finally:
        driver.quit()


# --------------------------------------------------------------------------- the play page (finding 2)
ORIGIN = "http://127.0.0.1:8770"
WS = "ws://127.0.0.1:8770/ws"  # the test client names the host in the URL


def _play_client(tmp_path, **settings):
    from starlette.testclient import TestClient

    from beliefgate.viewer.play import PlaySettings, create_play_app

    app = create_play_app(PlaySettings(agent=AGENT, tick_hz=50, horizon=30, log=f"{tmp_path}/", **settings))
    return TestClient(app, base_url=ORIGIN)


def test_play_page_refuses_a_foreign_host_header(tmp_path):
    with _play_client(tmp_path) as client:
        assert client.get("/").status_code == 200
        assert client.get("/", headers={"host": "localhost:8770"}).status_code == 200
        for host in ("evil.example", "evil.example:8770", "127.0.0.1.evil.example"):
            res = client.get("/", headers={"host": host})
            assert res.status_code == 400, host
            assert "beliefgate" not in res.text
        assert client.get("/healthz", headers={"host": "evil.example"}).status_code == 400


def test_play_socket_refuses_foreign_origins_before_taking_a_slot(tmp_path):
    from starlette.websockets import WebSocketDisconnect

    with _play_client(tmp_path, max_sessions=1) as client:
        for origin in ("http://evil.example", "null", "http://127.0.0.1:9999", "https://127.0.0.1:8770"):
            with pytest.raises(WebSocketDisconnect):
                with client.websocket_connect(WS, headers={"origin": origin}) as ws:
                    ws.receive_json()
        with pytest.raises(WebSocketDisconnect):  # DNS rebinding: the right origin's name, a foreign Host
            with client.websocket_connect("ws://evil.example:8770/ws",
                                          headers={"origin": "http://evil.example:8770"}) as ws:
                ws.receive_json()
        with client.websocket_connect(WS, headers={"origin": ORIGIN}) as ws:  # the real player still gets a game
            hello = ws.receive_json()
            assert hello["type"] == "hello"
            assert not Path(hello["log"]).is_absolute() and str(tmp_path) not in json.dumps(hello)
            ws.send_json({"type": "end"})
            while ws.receive_json()["type"] != "done":
                pass


def test_play_connections_without_a_move_write_no_log(tmp_path):
    with _play_client(tmp_path) as client:
        for _ in range(6):  # connect and leave without a move (the test client needs the "end" to part cleanly)
            with client.websocket_connect(WS, headers={"origin": ORIGIN}) as ws:
                assert ws.receive_json()["type"] == "hello"
                ws.send_json({"type": "end"})
                done = ws.receive_json()
                assert done["type"] == "done" and done["log"] is None
        assert list(tmp_path.iterdir()) == []
        with client.websocket_connect(WS, headers={"origin": ORIGIN}) as ws:
            hello = ws.receive_json()
            ws.send_json({"type": "key", "action": "west"})
            m = ws.receive_json()
            while m["type"] != "state":
                m = ws.receive_json()
            ws.send_json({"type": "end"})
            while m["type"] != "done":
                m = ws.receive_json()
        assert [p.name for p in tmp_path.iterdir()] == [hello["log"]] == [m["log"]]
        from beliefgate.envs.trajlog import read_log

        assert read_log(tmp_path / hello["log"]).final.summary["ended"] == "player"


# --------------------------------------------------------------------------- non-finite numbers (finding 4)
def _edit_log(src: Path, dst: Path, edit) -> Path:
    """``src`` with ``edit(n, row) -> text or None`` applied to each parsed line (None: keep the line)."""
    out = []
    for n, line in enumerate(src.read_text(encoding="utf-8").splitlines()):
        text = edit(n, json.loads(line))
        out.append(line if text is None else text)
    dst.write_text("\n".join(out) + "\n", encoding="utf-8")
    return dst


def _report_cli(*args):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    return CliRunner().invoke(app, ["report", *map(str, args)])


def _page_data(html_path: Path):
    text = html_path.read_text(encoding="utf-8")
    start = text.index('<script id="report-data"')
    body = text[text.index(">", start) + 1:text.index("</script>", start)]
    return json.loads(body, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c} in the page"))


@pytest.mark.parametrize("case", ["nan_step", "huge_reward", "nan_summary"])
def test_report_shows_non_finite_values_as_missing(tmp_path, short_log, case):
    def edit(n, row):
        if case == "nan_step" and row["kind"] == "step" and row["t"] == 4:
            row["reward"] = math.nan
            row["info"][0]["kappa"] = math.inf
            return json.dumps(row)
        if case == "huge_reward" and row["kind"] == "step" and row["t"] == 7:
            row["reward"] = 12345.5
            return json.dumps(row).replace("12345.5", "1e999")
        if case == "nan_summary" and row["kind"] == "final":
            row["summary"]["reward"] = math.nan
            return json.dumps(row)
        return None

    log = _edit_log(short_log, tmp_path / "bad.jsonl", edit)
    res = _report_cli(log, "-o", tmp_path / "bad.html")
    assert res.exit_code == 0, res.output
    where = {"nan_step": "step 4: reward", "huge_reward": "step 7: reward", "nan_summary": "final: summary.reward"}[case]
    assert "not finite" in res.output and where in res.output, res.output
    data = _page_data(tmp_path / "bad.html")
    if case == "nan_summary":
        assert data["summary"]["reward"] is None
    else:
        assert data["rewards"][4 if case == "nan_step" else 7] is None
    assert data["nonfinite"]["count"] == (2 if case == "nan_step" else 1) and data["nonfinite"]["first"] == where


def test_report_with_non_finite_values_draws_in_chromium(tmp_path, short_log):
    from beliefgate.viewer.browser import BrowserUnavailable, find_browser, headless_chromium

    try:
        paths = find_browser()
    except BrowserUnavailable as exc:
        pytest.skip(f"no headless browser: {exc}")

    def edit(n, row):
        if row["kind"] == "step" and row["t"] in (3, 5):
            row["reward"] = math.nan if row["t"] == 3 else -math.inf
            return json.dumps(row)
        if row["kind"] == "final":
            row["summary"]["reward"] = math.inf
            return json.dumps(row)
        return None

    log = _edit_log(short_log, tmp_path / "bad.jsonl", edit)
    assert _report_cli(log, "-o", tmp_path / "bad.html").exit_code == 0
    driver = headless_chromium(paths=paths)
    try:
        driver.get((tmp_path / "bad.html").as_uri())
        notes = driver.find_element("id", "notes").text
        assert "3 logged values were not finite" in notes and "step 3: reward" in notes
        assert [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"] == []
    finally:
        driver.quit()


# --------------------------------------------------------------------------- logs that cannot be drawn (finding 10)
def _one_error_line(res):
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "internal error" not in res.output, res.output
    return lines[0]


@pytest.mark.parametrize("where", ["step", "final"])
def test_report_refuses_an_off_grid_position(tmp_path, short_log, where):
    def edit(n, row):
        if (where == "step" and row["kind"] == "step" and row["t"] == 3) or (where == "final" and row["kind"] == "final"):
            row["state"]["players"][1]["position"] = [40, -7]
            return json.dumps(row)
        return None

    log = _edit_log(short_log, tmp_path / "off.jsonl", edit)
    line = _one_error_line(_report_cli(log, "-o", tmp_path / "off.html"))
    assert ("step 3" in line if where == "step" else "final" in line) and "player 1" in line and "(40, -7)" in line
    assert not (tmp_path / "off.html").exists()


@pytest.mark.parametrize("bad", ["0.5", None, True, [0.5], {"p": 1}, "x"])
def test_report_refuses_a_belief_that_is_not_numbers(tmp_path, short_log, bad):
    def edit(n, row):
        if row["kind"] == "step" and row["t"] == 6:
            belief = [1.0 / 6] * 6
            belief[2] = bad
            row["info"][0]["belief"] = belief if bad != "x" else "not a list"
            return json.dumps(row)
        return None

    log = _edit_log(short_log, tmp_path / "b.jsonl", edit)
    line = _one_error_line(_report_cli(log, "-o", tmp_path / "b.html"))
    assert "step 6" in line and "info[0].belief" in line, line
    assert not (tmp_path / "b.html").exists()
