"""Record (or compare) the behaviour reference: ``python tests/reference/record.py [--check] RUN_DIR``.

Plays ``grid.yaml`` with ``beliefgate eval run`` into RUN_DIR, then reads every episode's log and
results row into one summary per episode: the joint actions, every player's active skill, the ego's
replan reason, interrupt flag and belief at each step, and the metric row without timing columns.
Without ``--check`` the summary is written to ``reference.json.gz`` beside this file; with it,
the run is compared to that file and every difference printed (exit 1 if any).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REFERENCE = HERE / "reference.json.gz"
#: results columns that depend on the machine, the path or the version of the grid file
VOLATILE = {"wall_s", "log", "grid_digest", "version", "episode_key", "metrics_version", "llm_model"}
BELIEF_TOL = 1.01e-4  # beliefs are logged rounded to 4 decimals
METRIC_TOL = 1e-9


def play(run_dir: Path) -> None:
    exe = Path(sys.executable).with_name("beliefgate")
    subprocess.run([str(exe), "eval", "run", str(HERE / "grid.yaml"), "--out", str(run_dir)], check=True,
                   stdout=subprocess.DEVNULL)


def episode_id(row: dict) -> str:
    return f"{row['agent']}|{row['layout']}|{row['partner']}|s{row['seed']}|seat{row['seat']}"


def summarize(run_dir: Path) -> dict:
    import csv

    out = {}
    with open(run_dir / "results.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            seat = int(row["seat"])
            steps = []
            for line in (run_dir / row["log"]).read_text().splitlines():
                rec = json.loads(line)
                if rec.get("kind") != "step":
                    continue
                ego = rec["info"][seat]
                steps.append([rec["actions"], rec["skills"], ego.get("reason"), bool(ego.get("interrupt")),
                              ego.get("belief")])
            metrics = {k: v for k, v in row.items() if k not in VOLATILE}
            out[episode_id(row)] = {"metrics": metrics, "steps": steps}
    return out


def differences(expected: dict, got: dict) -> list:
    diffs = []
    for key in sorted(set(expected) | set(got)):
        if key not in got or key not in expected:
            diffs.append(f"{key}: {'missing' if key not in got else 'not in the reference'}")
            continue
        e, g = expected[key], got[key]
        for col in sorted(set(e["metrics"]) | set(g["metrics"])):
            a, b = e["metrics"].get(col), g["metrics"].get(col)
            if a == b:
                continue
            try:
                if abs(float(a) - float(b)) <= METRIC_TOL * max(1.0, abs(float(a))):
                    continue
            except (TypeError, ValueError):
                pass
            diffs.append(f"{key}: {col} {a!r} -> {b!r}")
        if len(e["steps"]) != len(g["steps"]):
            diffs.append(f"{key}: {len(e['steps'])} steps -> {len(g['steps'])}")
            continue
        for t, (se, sg) in enumerate(zip(e["steps"], g["steps"])):
            if se[:4] != sg[:4]:
                diffs.append(f"{key}: step {t} actions/skills/reason/interrupt {se[:4]} -> {sg[:4]}")
                break
            be, bg = se[4], sg[4]
            if (be is None) != (bg is None) or (be is not None and (
                    len(be) != len(bg) or max(abs(x - y) for x, y in zip(be, bg)) > BELIEF_TOL)):
                diffs.append(f"{key}: step {t} belief {be} -> {bg}")
                break
    return diffs


def load_reference() -> dict:
    with gzip.open(REFERENCE, "rt") as fh:
        return json.load(fh)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-play", action="store_true", help="summarize an existing run directory")
    args = ap.parse_args()
    if not args.no_play:
        play(args.run_dir)
    got = summarize(args.run_dir)
    if not args.check:
        with gzip.open(REFERENCE, "wt") as fh:
            json.dump(got, fh, separators=(",", ":"), sort_keys=True)
        print(f"wrote {REFERENCE} ({len(got)} episodes)")
        return 0
    diffs = differences(load_reference(), got)
    for d in diffs[:50]:
        print(d)
    print(f"{len(got)} episodes, {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
