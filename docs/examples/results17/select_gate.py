"""Closed-loop choice of the stable-MAP gate's settings on tuning seeds (issue 17, item 3).

The rule, fixed (and committed) before any closed-loop episode of the new candidates was played:

* **Candidates.** From ``beliefgate switches --tune`` on seeds 1000-1002 (four open layouts, the
  12 BP switchers), the best stable-MAP setting (highest detection, then lowest delay) within
  1, 2, 4 and 8 false alarms per 100 steps, and the given defaults (``GateParams()``).
* **Closed loop.** Both agents that act on the gate play every candidate on tuning seeds only:
  ``bayes-belief:full`` (5 layouts x 12 BP switchers x seeds 1000-1002, seat 0: 180 episodes) and
  ``overforge`` (5 x 12 x seeds 1000-1001 x both seats: 240 episodes).
* **Score.** Reward minus the given defaults' reward on the same cell (agent, layout, partner,
  seat, seed), averaged over the 420 matched episodes, with a 95% bootstrap interval over episodes.
* **Decision.** The highest-scoring candidate replaces the defaults only if its interval lies
  above 0; otherwise the defaults stay (no candidate beats them measurably on the tuning seeds).

Commands::

    python docs/examples/results17/select_gate.py grids runs/sel17/tune_fa2.json docs/examples/results17/gate_select
    python docs/examples/results17/select_gate.py check runs/cusum_t_base runs/sel17/replay_bb
    python docs/examples/results17/select_gate.py decide runs/cusum_t_base,runs/overforge_t23 \\
        fa1=runs/gate_tuned_t,runs/gate_tuned_of fa2=runs/sel17/fa2_bb,runs/sel17/fa2_of ...

``grids`` writes each candidate's two grid files; ``check`` confirms that episodes re-played on
the current code equal recorded ones (reward and joint actions, step by step); ``decide`` applies
the rule.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "results16"))
from compare_arms import load  # noqa: E402

from beliefgate.eval.report import bootstrap_mean_ci  # noqa: E402

BUDGETS = (1.0, 2.0, 4.0, 8.0)
AGENTS = ("bayes-belief:full", "overforge")
FIELDS = ("beta", "epsilon", "hazard", "reference", "tau_obs", "confidence_floor", "n_stable", "cooldown")
LAYOUTS = "[cramped_room, asymmetric_advantages, coordination_ring, forced_coordination, counter_circuit]"
PARTNERS = ", ".join(f"bp-g{g}-{a}-{x}-{b}-{y}" for g, a, b in ((1, "dish", "eager"), (2, "onion", "pot"),
                                                                (3, "onion", "stock"))
                     for x in ("hi", "lo") for y in ("hi", "lo"))
CELLS = {"bayes-belief:full": ("bb", "{start: 1000, count: 3}", "[0]"),
         "overforge": ("of", "{start: 1000, count: 2}", "[0, 1]")}


def candidates(tune: dict) -> dict:
    """``{label: setting}``: the best stable-MAP row within each budget (rows of a --tune JSON)."""
    rows = [r for r in tune["rows"] if r["gate"] == "stable_map"]
    out = {}
    for budget in BUDGETS:
        ok = [r for r in rows if r["fa_per_100"] <= budget]
        if ok:
            best = max(ok, key=lambda r: (r["detection_rate"], -r["mean_delay"]))
            out[f"fa{budget:g}"] = best
    return out


def grids(tune_path: str, out_dir: str) -> None:
    tune = json.loads(Path(tune_path).read_text())
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for label, row in candidates(tune).items():
        gate = ", ".join(f"{k}: {row[k]}" for k in FIELDS)
        print(f"{label}: detection {row['detection_rate']:.1%}, delay {row['mean_delay']:.2f}, "
              f"{row['fa_per_100']:.2f} FA/100 at {gate}")
        for agent, (short, seeds, seats) in CELLS.items():
            text = (f"# Candidate {label} of select_gate.py (issue 17 item 3; tuning seeds only), chosen by\n"
                    f"# `switches --tune` on seeds 1000-1002 (commit {tune['config']['commit']}): detection "
                    f"{row['detection_rate']:.3f}, {row['fa_per_100']:.2f} FA/100\n"
                    f"name: gate-select-{label}-{short}\n"
                    f"description: {agent} with stable-MAP candidate {label} against the 12 BP switchers\n"
                    f"agents: [\"{agent}\"]\nlayouts: {LAYOUTS}\npartners: [{PARTNERS}]\n"
                    f"seeds: {seeds}\nseats: {seats}\nhorizon: 400\ngate: {{{gate}}}\n")
            (out / f"{label}_{short}.yaml").write_text(text)


def _actions(path: Path) -> list:
    return [json.loads(line).get("actions") for line in path.read_text().splitlines()
            if line.startswith('{"kind":"step"')]


def check(recorded: str, replayed: str) -> None:
    """Every episode of ``replayed`` against the recorded one of the same agent, partner, seed and
    seat (the episode key is left out: a grid that spells the same gate settings differently, e.g.
    with the defaults written out, has other keys)."""
    def cell(p: Path) -> str:
        return f"{p.parent.name}/{p.name.rsplit('__', 1)[0]}"

    old = {cell(p): p for p in Path(recorded, "episodes").rglob("*.jsonl")}
    new = sorted(Path(replayed, "episodes").rglob("*.jsonl"))
    same = 0
    for p in new:
        if cell(p) not in old:
            sys.exit(f"error: {cell(p)} has no recorded twin in {recorded}")
        a, b = _actions(old[cell(p)]), _actions(p)
        if a == b:
            same += 1
        else:
            first = next((t for t, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            print(f"DIFFERS: {p.name} from step {first}")
    print(f"{same} of {len(new)} re-played episodes equal the recorded ones step for step")


def decide(base_dirs: str, *labelled: str) -> None:
    base = {(r["agent"], r["layout"], r["partner"], r["seat"], r["seed"]): r
            for r in load(base_dirs) if r["agent"] in AGENTS}
    scores = {}
    for item in labelled:
        label, _, dirs = item.partition("=")
        rows = [r for r in load(dirs) if r["agent"] in AGENTS]
        pairs = [(r, base[k]) for r in rows
                 if (k := (r["agent"], r["layout"], r["partner"], r["seat"], r["seed"])) in base]
        diffs = [float(r["reward"]) - float(b["reward"]) for r, b in pairs]
        mean, lo, hi = bootstrap_mean_ci(diffs, 10_000, 0.95, 0, label)
        scores[label] = (mean, lo, hi)
        parts = []
        for agent in AGENTS:
            mine = [(r, b) for r, b in pairs if r["agent"] == agent]
            if mine:
                d = [float(r["reward"]) - float(b["reward"]) for r, b in mine]
                m, lo_a, hi_a = bootstrap_mean_ci(d, 10_000, 0.95, 0, agent)
                rep = sum(r.get("replans", 0) for r, _ in mine) / len(mine)
                rep0 = sum(b.get("replans", 0) for _, b in mine) / len(mine)
                eff = sum(r.get("effective_replans", 0) for r, _ in mine) / len(mine)
                parts.append(f"{agent} n={len(mine)} {m:+.1f} [{lo_a:+.1f}, {hi_a:+.1f}] "
                             f"replans {rep0:.2f}->{rep:.2f} (effective {eff:.2f})")
        print(f"{label:8s} pooled n={len(diffs)}: {mean:+.2f} [{lo:+.2f}, {hi:+.2f}] | " + " | ".join(parts))
    if not scores:
        sys.exit("error: no candidate runs given")
    best = max(scores, key=lambda k: scores[k][0])
    mean, lo, hi = scores[best]
    if mean > 0 and lo > 0:
        print(f"decision: {best} replaces the defaults ({mean:+.2f} [{lo:+.2f}, {hi:+.2f}])")
    else:
        print(f"decision: the defaults stay (best candidate {best}: {mean:+.2f} [{lo:+.2f}, {hi:+.2f}], "
              "not above 0)")


if __name__ == "__main__":
    commands = {"grids": grids, "check": check, "decide": decide}
    if len(sys.argv) < 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](*sys.argv[2:])
