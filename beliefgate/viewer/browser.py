"""A headless Chromium through selenium, for the viewer's tests, measurements and screenshots.

:func:`find_browser` locates a Chromium/Chrome binary and its chromedriver (``$BELIEFGATE_CHROMIUM``
and ``$BELIEFGATE_CHROMEDRIVER`` override the search) and says why when it cannot;
:func:`headless_chromium` starts one with the browser console captured (``driver.get_log("browser")``).
Debian: ``apt-get install -y chromium chromium-driver``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Optional

from beliefgate.errors import RuntimeFailure

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


class BrowserUnavailable(RuntimeFailure):
    """No headless browser (or no selenium, or no chromedriver) on this machine."""


class BrowserStartError(RuntimeFailure):
    """A browser was found but did not start (a broken install: tests fail on this, they do not skip)."""


@dataclass(frozen=True)
class BrowserPaths:
    binary: str
    driver: str


def find_browser() -> BrowserPaths:
    """Paths of a Chromium binary and its chromedriver; :class:`BrowserUnavailable` says what is missing."""
    override = os.environ.get("BELIEFGATE_CHROMIUM")
    if override and not (os.path.isfile(override) and os.access(override, os.X_OK)):
        raise BrowserUnavailable(f"$BELIEFGATE_CHROMIUM={override} is not an executable file")
    binary = override or next((p for p in (shutil.which(n) for n in BROWSER_NAMES) if p), None)
    if not binary:
        raise BrowserUnavailable(f"no Chromium found (looked for {', '.join(BROWSER_NAMES)} on PATH; "
                                 "Debian: apt-get install -y chromium chromium-driver)")
    driver = os.environ.get("BELIEFGATE_CHROMEDRIVER") or shutil.which("chromedriver")
    if driver and not (os.path.isfile(driver) and os.access(driver, os.X_OK)):
        raise BrowserUnavailable(f"chromedriver {driver} is not an executable file")
    if not driver:
        raise BrowserUnavailable("no chromedriver on PATH (Debian: apt-get install -y chromium-driver)")
    try:
        import selenium  # noqa: F401
    except ModuleNotFoundError:
        raise BrowserUnavailable("selenium is not installed (pip install 'beliefgate[look]')") from None
    return BrowserPaths(binary, driver)


def headless_chromium(width: int = 1400, height: int = 1000, paths: Optional[BrowserPaths] = None):
    """A started headless Chromium ``webdriver`` (the caller quits it).

    :class:`BrowserUnavailable` when none is found; :class:`BrowserStartError` when one is found
    but does not start.
    """
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    paths = paths or find_browser()
    opts = webdriver.ChromeOptions()
    opts.binary_location = paths.binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", "--hide-scrollbars", "--no-first-run",
                "--disable-extensions", "--disable-background-networking", "--force-device-scale-factor=1"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        return webdriver.Chrome(service=Service(executable_path=paths.driver), options=opts)
    except WebDriverException as exc:
        raise BrowserStartError(f"headless Chromium {paths.binary} did not start: {str(exc).splitlines()[0]}") from None


def console_errors(driver) -> list:
    """The browser console's SEVERE entries since the last call."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


__all__ = ["BrowserUnavailable", "BrowserStartError", "BrowserPaths", "find_browser", "headless_chromium", "console_errors"]
