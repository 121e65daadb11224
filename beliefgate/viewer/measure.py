"""Measure the report on a long episode and take the documentation's screenshots.

    python -m beliefgate.viewer.measure --steps 2400 --loads 5 --img docs/img

Plays one episode (``cramped_room``, ``bayes-belief`` + ``switch-sourcer-to-plater``, the given
seed and length) on the real dynamics, writes its report, and opens it ``--loads`` times in a
headless Chromium: *open time* is ``performance.now()`` when the report's script has drawn the
first frame and every track (navigation start = 0), i.e. parse + data decode + first render.
With ``--img`` it also saves ``report.png`` (the tracks zoomed to 200 steps) and ``play.png``
(``beliefgate play`` with a short scripted key sequence). Prints one JSON object, which
carries the settings that made it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Optional


def measure_report(steps: int, seed: int, loads: int, img: Optional[Path], workdir: Path) -> Dict[str, Any]:
    from beliefgate.eval.episode import run_episode
    from beliefgate.viewer.browser import console_errors, headless_chromium
    from beliefgate.viewer.report import write_report

    log = workdir / f"episode-{steps}.jsonl"
    started = time.perf_counter()
    run_episode("cramped_room", "bayes-belief", "switch-sourcer-to-plater", seed=seed, horizon=steps, log_path=log)
    played = time.perf_counter() - started
    out = workdir / f"report-{steps}.html"
    written = write_report(log, out)
    driver = headless_chromium(1300, 1060)
    try:
        opens, walls = [], []
        for _ in range(loads):
            t = time.perf_counter()
            driver.get(out.as_uri())
            ready = driver.execute_script("return window.beliefgateReport ? window.beliefgateReport.readyAt : null")
            walls.append(time.perf_counter() - t)
            if ready is None:
                raise SystemExit(f"the report did not start: {console_errors(driver)}")
            opens.append(float(ready) / 1000.0)
        errors = console_errors(driver)
        version = driver.capabilities.get("browserVersion")
        if img is not None:
            driver.execute_script("document.getElementById('zoom').value = '200';"
                                  "document.getElementById('zoom').dispatchEvent(new Event('change'));"
                                  "window.beliefgateReport.seek(arguments[0]);", min(steps - 1, 610))
            img.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(img / "report.png"))
    finally:
        driver.quit()
    return {"steps": written["steps"], "log_bytes": log.stat().st_size, "report_bytes": written["bytes"],
            "report_mb": round(written["bytes"] / 1e6, 3), "write_s": written["seconds"], "play_s": round(played, 2),
            "open_s_median": round(statistics.median(opens), 3), "open_s_max": round(max(opens), 3),
            "get_wall_s_median": round(statistics.median(walls), 3), "loads": loads, "console_errors": len(errors),
            "chromium": version}


def play_screenshot(img: Path, workdir: Path) -> Dict[str, Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from beliefgate.envs.trajlog import read_log
    from beliefgate.viewer.browser import headless_chromium

    env = {**os.environ, "SDL_AUDIODRIVER": "dummy", "PYGAME_HIDE_SUPPORT_PROMPT": "1"}
    logs = workdir / "play-logs"
    proc = subprocess.Popen([sys.executable, "-m", "beliefgate.cli", "play", "--port", "0", "--tick-hz", "6",
                             "--log", f"{logs}/"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        match = re.search(r"http://127\.0\.0\.1:\d+/", proc.stdout.readline())
        if match is None:
            raise SystemExit("beliefgate play printed no address")
        driver = headless_chromium(1300, 760)
        try:
            driver.get(match.group(0))
            deadline = time.monotonic() + 20
            while not driver.execute_script("return window.beliefgatePlay.hello") and time.monotonic() < deadline:
                time.sleep(0.1)
            body = driver.find_element(By.TAG_NAME, "body")
            # fetch an onion and walk it to the pot: west, north-facing interact... (cramped_room, seat 1)
            for key in (Keys.ARROW_RIGHT, " ", Keys.ARROW_LEFT, Keys.ARROW_UP, " ", Keys.ARROW_RIGHT, " ",
                        Keys.ARROW_LEFT, Keys.ARROW_UP, " "):
                body.send_keys(key)
                time.sleep(0.35)
            time.sleep(0.5)
            driver.save_screenshot(str(img / "play.png"))
            session = driver.execute_script("return window.beliefgatePlay.hello.session")
        finally:
            driver.quit()  # closing the browser ends the episode
        deadline = time.monotonic() + 10
        path = None
        while time.monotonic() < deadline:
            found = [p for p in logs.glob(f"*{session}*.jsonl")]
            if found and found[0].read_text().rstrip().endswith("}") and '"kind":"final"' in found[0].read_text():
                path = found[0]
                break
            time.sleep(0.2)
        traj = read_log(path) if path else None
        return {"play_log_steps": len(traj.steps) if traj else None,
                "play_ended": traj.final.summary["ended"] if traj else None}
    finally:
        proc.terminate()
        proc.wait(10)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2400)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--img", type=Path, default=None, help="directory for report.png and play.png")
    args = parser.parse_args(argv)
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    with tempfile.TemporaryDirectory(prefix="beliefgate-viewer-") as tmp:
        result = {"settings": {"steps": args.steps, "seed": args.seed, "loads": args.loads, "layout": "cramped_room",
                               "ego": "bayes-belief", "partner": "switch-sourcer-to-plater"},
                  **measure_report(args.steps, args.seed, args.loads, args.img, Path(tmp))}
        if args.img is not None:
            result.update(play_screenshot(args.img, Path(tmp)))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":  # pragma: no cover
    main()
