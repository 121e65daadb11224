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
