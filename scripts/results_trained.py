#!/usr/bin/env python
"""Cross-play of the trained partners and egos (issue 44, docs/results_trained.md).

    PYTHONPATH=$PWD .venv/bin/python scripts/results_trained.py run --out runs/results_trained
    PYTHONPATH=$PWD .venv/bin/python scripts/results_trained.py report --out runs/results_trained
    PYTHONPATH=$PWD .venv/bin/python scripts/results_trained.py curves --runs runs/ppo --img docs/img
    PYTHONPATH=$PWD .venv/bin/python scripts/results_trained.py zoo      # SP x SP on the five layouts

``run`` plays, on every layout with shipped checkpoints (``beliefgate/envs/overcooked_v2/trained/``):

* **trained egos** (the SP seeds 0 and 1, the FCP ego) against every trained partner (the 12 BP
  behaviours, the held-out SP seed 2, the FCP ego): batched in JAX (:func:`beliefgate.rl.evaluate.play_matches`,
  the same dynamics as an episode, both players sampling as trained), each seat, ``--seeds``;
  the row keeps the reward and both players' events (:mod:`beliefgate.rl.events`);
* **agent egos** (``--agents``: ``bayes-belief:full``, ``bayes-belief:no_belief``; ``{layout}`` in a
  name is the row's layout, e.g. ``policy-tree:seed:{layout}``, the hand-written V2 tree) through the episode
  runner against one partner per column: a BP group's column plays its four behaviours in turn
  (seed ``s`` plays behaviour ``s mod 4``), then the held-out SP seed and the FCP ego; each seat,
  ``--agent-seeds``.

``run --classic`` plays the rows the JaxMARL kitchens cannot: the **BC** human proxy (``bc:<layout>``,
trained on the 2019 human games of the classic kitchens) and the **policy tree** distilled from
OverForge (``--trees``: ``runs/results_policytree/distil/<layout>/full/best.py`` of
``scripts/results_policytree.py``), in the classic backend on the twin of each ``v2/`` layout, where the
trained players play as ``ppo:<name>`` (the classic state encoded as JaxMARL's observation,
docs/overcooked_v2.md "Classic <-> JaxMARL parity"): BC and the tree as egos against every column
(the BP groups, the held-out SP seed, FCP, BC), and the SP egos, FCP and ``--agents`` against BC.
These rows carry ``backend: classic`` and are tabled apart from the JaxMARL ones.

One JSON line per finished (ego, partner, seat, seed) in ``OUT/rows.jsonl``; a rerun skips what is
there (resumable; a progress bar on a terminal, a line every few pairs elsewhere). ``report`` prints
the markdown tables of the page (paired bootstrap CIs, seeds resampled: ``beliefgate.eval.report``);
``curves`` draws the learning curve of every shipped checkpoint from its training run's ``curve.csv``
(found by the checkpoint's SHA-256, else by layout, kind and seed) into ``IMG/trained_curves_<layout>.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from beliefgate.eval.grid import seed_list  # noqa: E402
from beliefgate.provenance import git_commit  # noqa: E402

#: the commit whose code plays the rows (recorded in each row)
COMMIT = git_commit()
LAYOUTS = ("v2/cramped_room", "v2/coord_ring", "v2/forced_coord")
AGENTS = ("bayes-belief:full", "bayes-belief:no_belief")
#: of a layout's shipped SP seeds (sorted), the first two are egos (and the FCP pool of
#: scripts/train_fcp.sh, POOL_SEEDS), the third the held-out partner; on layouts where some training
#: seeds learnt nothing (scripts/train_zoo.sh KEEP=3) these are the first three that learnt
N_EGO_SP = 2
COLUMNS = ("logistics", "cooking", "sourcing", "sp-held-out", "fcp", "bc")
#: where the policy trees distilled by scripts/results_policytree.py are (one per classic layout)
TREES = "runs/results_policytree/distil"


def _short(layout: str) -> str:
    return layout.split("/", 1)[-1]


def roster(layout: str) -> Dict[str, object]:
    """The shipped players of ``layout``: ``{"sp": {seed: name}, "fcp": name|None, "bp": {group: [names]}}``."""
    from beliefgate.envs.overcooked_v2 import trained_agents as T
    from beliefgate.rl.population import load_population

    specs = T.shipped_specs()
    short = _short(layout)
    sp = {int(m.group(1)): n for n in specs if (m := re.fullmatch(rf"sp-{re.escape(short)}-s(\d+)", n))}
    fcp = [s.name for s in T.fcp_specs(layout)] if any(s.card()["kind"] == "fcp" for s in specs.values()) else []
    bp: Dict[str, List[str]] = {}
    for b in load_population().behaviours():
        name = b.partner_name(layout)
        if name in specs:
            bp.setdefault(b.group, []).append(name)
    seeds = sorted(sp)
    return {"sp": sp, "fcp": fcp[0] if fcp else None, "bp": bp, "ego_seeds": seeds[:N_EGO_SP],
            "held_out": seeds[N_EGO_SP] if len(seeds) > N_EGO_SP else None}


def _bare(name: str) -> str:
    """A player's shipped name: ``ppo:<name>`` (how the classic backend names it) without the prefix."""
    return name[4:] if name.startswith("ppo:") else name


def _column(layout: str, partner: str, ros) -> str:
    partner = _bare(partner)
    if partner == "bc" or partner.startswith("bc:"):
        return "bc"
    for group, names in ros["bp"].items():
        if partner in names:
            return group
    if partner == ros["fcp"]:
        return "fcp"
    return "sp-held-out"


def _key(row) -> Tuple:
    return (row["layout"], row["ego"], row["partner"], int(row["seat"]), int(row["seed"]), int(row["horizon"]),
            row.get("digest", ""), row.get("backend", "v2"))


_DIGESTS: Dict[str, str] = {}


def _digest(*names: str) -> str:
    """What the shipped players among ``names`` are (their partner files and checkpoints): a row made
    with another checkpoint under the same name is not reused. (Computed once per name and process.)"""
    if not _DIGESTS:
        from beliefgate.envs.overcooked_v2 import trained_agents as T

        _DIGESTS.update({n: spec.digest() for n, spec in T.shipped_specs().items()})
    return "-".join(_DIGESTS.get(_bare(n), _file_digest(n)) for n in names)


def _file_digest(name: str) -> str:
    """``policy-tree:PATH``: the tree file's SHA-256 prefix (a redistilled tree is a new player); else the name."""
    import hashlib

    if name.startswith("policy-tree:") and Path(name.split(":", 1)[1]).is_file():
        return hashlib.sha256(Path(name.split(":", 1)[1]).read_bytes()).hexdigest()[:12]
    return name


def load_rows(out: Path) -> List[dict]:
    path = out / "rows.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _policy(name: str, layout: str):
    from beliefgate.envs.overcooked_v2 import trained_agents as T

    spec = T.shipped_specs()[name]
    return T.load(spec.path, layout=layout, weights=spec.weights)


def trained_tasks(layout: str, ros, seeds: List[int], horizon: int) -> List[Tuple]:
    egos = [ros["sp"][s] for s in ros["ego_seeds"]] + ([ros["fcp"]] if ros["fcp"] else [])
    held = [ros["sp"][ros["held_out"]]] if ros["held_out"] is not None else []
    partners = [n for g in ros["bp"].values() for n in g] + held \
        + ([ros["fcp"]] if ros["fcp"] else [])
    return [(layout, ego, partner, seat, tuple(seeds), horizon) for ego in egos for partner in partners
            for seat in (0, 1)]


def column_partners(ros, seed: int) -> List[str]:
    """The trained partner of each column on ``seed``: a BP group's behaviour ``seed mod 4``, the held-out
    SP seed, the FCP ego (those the layout has)."""
    partners = [names[seed % len(names)] for names in ros["bp"].values()]
    partners += [ros["sp"][ros["held_out"]]] if ros["held_out"] is not None else []
    return partners + ([ros["fcp"]] if ros["fcp"] else [])


def agent_tasks(layout: str, ros, agents: List[str], seeds: List[int], horizon: int) -> List[Tuple]:
    tasks = []
    for agent in (a.replace("{layout}", layout) for a in agents):   # policy-tree:seed:{layout}
        for seed in seeds:
            for partner in column_partners(ros, seed):
                for seat in (0, 1):
                    tasks.append((layout, agent, partner, seat, seed, horizon))
    return tasks


def classic_twin(layout: str) -> str:
    """The classic kitchen that ``layout`` (a ``v2/`` layout) replays."""
    from beliefgate.envs.overcooked.jaxmarl_bridge import V2_TWINS

    return next(c for c, v in V2_TWINS.items() if v == layout)


def classic_tasks(layout: str, ros, agents: List[str], seeds: List[int], horizon: int,
                  trees: Path) -> Tuple[List[Tuple], Optional[Path]]:
    """The classic-backend episodes of ``layout``'s twin: BC and the tree against every column, the
    trained egos and ``agents`` against BC (a BP group's column plays behaviour ``seed mod 4``); and the
    tree file when it is missing (no tree rows then), else None."""
    classic = classic_twin(layout)
    bc = f"bc:{classic}"
    tree = trees / classic / "full" / "best.py"
    full_egos = [bc] + ([f"policy-tree:{tree}"] if tree.is_file() else [])
    bc_egos = [f"ppo:{ros['sp'][s]}" for s in ros["ego_seeds"]] + ([f"ppo:{ros['fcp']}"] if ros["fcp"] else []) \
        + list(agents)
    tasks = []
    for seed in seeds:
        partners = [f"ppo:{name}" for name in column_partners(ros, seed)]
        for ego, against in [(e, partners + [bc]) for e in full_egos] + [(e, [bc]) for e in bc_egos]:
            for partner in against:
                for seat in (0, 1):
                    tasks.append((layout, ego, partner, seat, seed, horizon))
    return tasks, (None if tree.is_file() else tree)


def play_trained(task) -> List[dict]:
    """The rows of one (ego, partner, seat) over its seeds, in one batched call."""
    from beliefgate.rl.config import EVENTS
    from beliefgate.rl.evaluate import play_matches

    layout, ego, partner, seat, seeds, horizon = task
    t0 = time.perf_counter()
    a, b = _policy(ego, layout), _policy(partner, layout)
    res = play_matches(layout, *((a, b) if seat == 0 else (b, a)), seeds=list(seeds), horizon=horizon)
    wall = (time.perf_counter() - t0) / len(seeds)
    rows = []
    for i, seed in enumerate(seeds):
        ev = res["events"][i]
        rows.append({"layout": layout, "ego": ego, "partner": partner, "seat": seat, "seed": int(seed),
                     "horizon": horizon, "runner": "jax", "reward": float(res["reward"][i]),
                     "ego_events": dict(zip(EVENTS, map(float, ev[seat]))),
                     "partner_events": dict(zip(EVENTS, map(float, ev[1 - seat]))), "wall_s": round(wall, 3),
                     "digest": _digest(ego, partner), "commit": COMMIT})
    return rows


def play_agent(task) -> dict:
    from beliefgate.eval.episode import run_episode
    from beliefgate.eval.metrics import replans

    layout, agent, partner, seat, seed, horizon = task[:6]
    classic = len(task) > 6 and task[6] == "classic"
    t0 = time.perf_counter()
    played_on = classic_twin(layout) if classic else layout
    res = run_episode(played_on, agent, partner, seed=seed, horizon=horizon, seat=seat)
    row = {"layout": layout, "ego": agent, "partner": partner, "seat": seat, "seed": seed, "horizon": horizon,
           "runner": "episode", "reward": float(res.summary["reward"]), "replans": float(replans(res.trajectory)),
           "wall_s": round(time.perf_counter() - t0, 2), "digest": _digest(agent, partner), "commit": COMMIT}
    if classic:
        row.update(backend="classic", played_on=played_on)
    return row


def _register() -> None:
    from beliefgate.envs.domain import register_domain
    from beliefgate.envs.overcooked_v2.domain import DOMAIN

    register_domain(DOMAIN)   # the shared venv's entry points may predate the v2 domain


def run(args) -> int:
    from beliefgate.console import progress_bar

    _register()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done = {_key(r) for r in load_rows(out)}
    seeds, agent_seeds = seed_list(args.seeds), seed_list(args.agent_seeds)
    jobs: List[Tuple[str, Tuple]] = []
    missing = []
    for layout in args.layouts:
        ros = roster(layout)
        if not ros["sp"] and not ros["bp"]:
            missing.append(f"the shipped checkpoints of {layout}")
            continue
        for t in ([] if args.classic else trained_tasks(layout, ros, seeds, args.horizon)):
            todo = [s for s in t[4] if (t[0], t[1], t[2], t[3], s, t[5], _digest(t[1], t[2]), "v2") not in done]
            if todo:
                jobs.append(("jax", t[:4] + (tuple(todo), t[5])))
        if args.classic:
            tasks, no_tree = classic_tasks(layout, ros, args.agents, agent_seeds, args.horizon, Path(args.trees))
            if no_tree is not None:
                missing.append(f"the policy tree of {layout} ({no_tree}: scripts/results_policytree.py distil)")
            for t in tasks:
                if t + (_digest(t[1], t[2]), "classic") not in done:
                    jobs.append(("episode", t + ("classic",)))
            continue
        for t in agent_tasks(layout, ros, args.agents, agent_seeds, args.horizon):
            if t + (_digest(t[1], t[2]), "v2") not in done:
                jobs.append(("episode", t))
    if missing:
        print(f"skipped (missing): {'; '.join(missing)}", flush=True)
    grid = {"layouts": args.layouts, "seeds": args.seeds, "agents": args.agents, "agent_seeds": args.agent_seeds,
            "horizon": args.horizon}
    (out / ("grid_classic.json" if args.classic else "grid.json")).write_text(json.dumps(grid, indent=1))
    print(f"{len(jobs)} jobs to play ({sum(k == 'jax' for k, _ in jobs)} batched trained pairs, "
          f"{sum(k == 'episode' for k, _ in jobs)} agent episodes)", flush=True)
    every = max(1, len(jobs) // 20)
    with open(out / "rows.jsonl", "a") as fh, progress_bar() as bar:
        task = bar.add_task("cross-play", total=len(jobs))
        for i, (kind, t) in enumerate(jobs, 1):
            rows = play_trained(t) if kind == "jax" else [play_agent(t)]
            for row in rows:
                fh.write(json.dumps(row) + "\n")
            fh.flush()
            bar.update(task, advance=1)
            if i % every == 0 or i == len(jobs):
                print(f"progress: {i}/{len(jobs)} ({t[0]} {t[1]} vs {t[2]})", flush=True)
    return 0


# ---------------------------------------------------------------------------------------------- report
def _f(v: float, digits: int = 1, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def _paired_cells(a: List[dict], b: List[dict], key: str, name: str, digits: int, pairs: bool = True) -> str:
    """The end of a table row comparing rows ``a`` with rows ``b`` on ``key``: [pairs |] mean a | mean b |
    a − b [95% CI] (paired bootstrap, seeds resampled)."""
    from beliefgate.eval.report import paired_bootstrap

    d = paired_bootstrap(a, b, key, name=name)
    ma = sum(r[key] for r in a) / len(a)
    mb = sum(r[key] for r in b) / len(b)
    return ((f"{d.pairs} | " if pairs else "") + f"{_f(ma, digits)} | {_f(mb, digits)} | {_f(d.mean, digits, True)} "
            f"[{_f(d.lo, digits, True)}, {_f(d.hi, digits, True)}] |")


def _seed_ci(values_by_seed: Dict[int, List[float]], name: str) -> Tuple[float, float, float]:
    """Mean and 95% bootstrap interval of the per-seed means (seeds resampled)."""
    from beliefgate.eval.report import bootstrap_mean_ci

    return bootstrap_mean_ci([sum(v) / len(v) for _, v in sorted(values_by_seed.items())], name=name)


def _ci(values_by_seed: Dict[int, List[float]], name: str) -> str:
    if not values_by_seed:
        return "–"
    m, lo, hi = _seed_ci(values_by_seed, name)
    return f"{_f(m)} [{_f(lo)}, {_f(hi)}]"


def _label(name: str, ros) -> str:
    if name.startswith("policy-tree:seed:"):
        return "policy tree (hand-written V2 seed tree)"
    if name.startswith("policy-tree:"):
        return "policy tree (OverForge, distilled)"
    if name.startswith("bc:"):
        return "BC (human proxy)"
    name = _bare(name)
    for s, n in ros["sp"].items():
        if n == name:
            return f"SP seed {s}"
    if name == ros["fcp"]:
        return "FCP"
    return name


def report(args) -> int:
    from beliefgate.rl.population import load_population

    _register()
    rows = [r for r in load_rows(Path(args.out)) if r.get("digest") == _digest(r["ego"], r["partner"])]
    if not rows:
        print(f"no rows in {args.out}/rows.jsonl: run first", file=sys.stderr)
        return 2
    layouts = [lay for lay in LAYOUTS if any(r["layout"] == lay for r in rows)]
    pop = load_population()
    for layout in layouts:
        ros = roster(layout)
        mine = [r for r in rows if r["layout"] == layout and r.get("backend", "v2") == "v2"]
        if mine:
            crossplay_table(mine, layout, ros, f"{layout}: reward per {mine[0]['horizon']}-step episode, mean "
                                               "[95% CI], both seats")
        classic = [r for r in rows if r["layout"] == layout and r.get("backend") == "classic"]
        if classic:
            crossplay_table(classic, layout, ros, f"{classic_twin(layout)} (the classic backend, the twin of "
                                                  f"{layout}): reward per {classic[0]['horizon']}-step episode, "
                                                  "mean [95% CI], both seats", name=f"{layout}classic")
        # FCP vs SP against the held-out SP seed
        held = ros["sp"].get(ros["held_out"]) if ros["held_out"] is not None else None
        if ros["fcp"] and held:
            print(f"\nFCP − SP against the held-out SP seed {ros['held_out']} (paired on seat and seed; seeds resampled):\n")
            print("| SP ego | pairs | FCP | SP | FCP − SP [95% CI] |")
            print("|---|---|---|---|---|")
            fcp_rows = [dict(r, layout=layout) for r in mine if r["ego"] == ros["fcp"] and r["partner"] == held]
            for s in ros["ego_seeds"]:
                sp_name = ros["sp"].get(s)
                sp_rows = [r for r in mine if r["ego"] == sp_name and r["partner"] == held]
                if not sp_rows or not fcp_rows:
                    continue
                print(f"| SP seed {s} | " + _paired_cells(fcp_rows, sp_rows, "reward", f"{layout}fcp-sp{s}", 1))
        # the gate against periodic replanning (BayesBelief's Table 4 claim) over the BP partners
        gate_vs_periodic(mine, layout, ros)
        # BP event frequencies
        first = ros["ego_seeds"][0] if ros["ego_seeds"] else None
        jax_rows = [r for r in mine if r["runner"] == "jax" and r["ego"] == ros["sp"].get(first)]
        if jax_rows and ros["bp"]:
            print(f"\nBP behaviours' own events per episode against SP seed {first} (both seats, mean "
                  f"[95% CI], seeds resampled); the crossed events in bold:\n")
            for gname, group in pop.groups.items():
                crossed = list(group.crossed)
                shown = crossed + [e for e in group.fixed] + ["delivery"] * ("delivery" not in crossed)
                print(f"\n{gname} (crossed: {', '.join(crossed)}; fixed: "
                      f"{', '.join(f'{e} {w:+g}' for e, w in group.fixed.items())})\n")
                print("| behaviour | weights | reward | " + " | ".join(
                    f"**{e}**" if e in crossed else e for e in shown) + " |")
                print("|---|---|---|" + "---|" * len(shown))
                for b in pop.behaviours():
                    if b.group != gname:
                        continue
                    sel = [r for r in jax_rows if r["partner"] == b.partner_name(layout)]
                    if not sel:
                        continue
                    cells = []
                    for e in ["reward"] + shown:
                        by: Dict[int, List[float]] = {}
                        for r in sel:
                            by.setdefault(r["seed"], []).append(r["reward"] if e == "reward" else r["partner_events"][e])
                        cells.append(_ci(by, f"{layout}{b.name}{e}"))
                    print(f"| {b.name} | {b.weights_arg()} | " + " | ".join(cells) + " |")
                # hi - lo of each crossed event's own frequency, the other factor held (paired on the seed)
                print(f"\n{gname}: each crossed event's frequency, hi − lo (its other factor and the seat held; "
                      "seeds resampled):\n")
                print("| event | other factor | hi | lo | hi − lo [95% CI] |")
                print("|---|---|---|---|---|")
                for e in crossed:
                    other = [x for x in crossed if x != e][0]
                    for so in ("lo", "hi"):
                        def pick(setting):
                            b = next(b for b in pop.behaviours() if b.group == gname and b.settings[e] == setting
                                     and b.settings[other] == so)
                            return [dict(r, partner="bp", value=r["partner_events"][e]) for r in jax_rows
                                    if r["partner"] == b.partner_name(layout)]
                        hi, lo = pick("hi"), pick("lo")
                        if not hi or not lo:
                            continue
                        print(f"| {e} | {other} {so} | "
                              + _paired_cells(hi, lo, "value", f"{layout}{gname}{e}{so}", 2, pairs=False))
    return 0


GATE, PERIODIC = "bayes-belief:full", "periodic-10"


def crossplay_table(rows: List[dict], layout: str, ros, title: str, name: str = "") -> None:
    """Egos (rows) x partner columns: mean reward [95% CI] (seeds resampled), then the same by seat."""
    name = name or layout
    egos = list(dict.fromkeys(r["ego"] for r in rows))
    cols = [c for c in COLUMNS if any(_column(layout, r["partner"], ros) == c for r in rows)]
    print(f"\n#### {title}\n")
    print("| ego \\ partner | " + " | ".join(cols) + " | average |")
    print("|---|" + "---|" * (len(cols) + 1))
    for ego in egos:
        cells, allv = [], {}
        for c in cols:
            sel = [r for r in rows if r["ego"] == ego and _column(layout, r["partner"], ros) == c]
            by: Dict[int, List[float]] = {}
            for r in sel:
                by.setdefault(r["seed"], []).append(r["reward"])
                allv.setdefault(r["seed"], []).append(r["reward"])
            n = len(sel)
            cells.append(f"{_ci(by, f'{name}{ego}{c}')} (n={n})" if n else "–")
        print(f"| {_label(ego, ros)} | " + " | ".join(cells) + f" | {_ci(allv, f'{name}{ego}')} |")
    print(f"\nBy seat (mean reward; seat = the ego's):\n")
    print("| ego | seat | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for ego in egos:
        for seat in (0, 1):
            cells = []
            for c in cols:
                v = [r["reward"] for r in rows if r["ego"] == ego and r["seat"] == seat
                     and _column(layout, r["partner"], ros) == c]
                cells.append(_f(sum(v) / len(v)) if v else "–")
            print(f"| {_label(ego, ros)} | {seat} | " + " | ".join(cells) + " |")


def gate_vs_periodic(rows: List[dict], layout: str, ros) -> None:
    """Replans per episode and reward of the gate (``bayes-belief:full``) and of ``periodic-10`` against
    the BP behaviours, and the issue's claim: the gate's replans <= 1/10 of periodic-10's at a reward
    within periodic-10's 95% CI."""
    from beliefgate.eval.report import paired_bootstrap

    bp_names = {n for g in ros["bp"].values() for n in g}
    sel = {a: [r for r in rows if r["ego"] == a and r["partner"] in bp_names and "replans" in r]
           for a in (GATE, PERIODIC)}
    if not all(sel.values()):
        return
    print(f"\nThe gate against replanning every 10 steps, over the BP behaviours (both seats, seeds resampled):\n")
    print("| agent | episodes | replans per episode | reward [95% CI] |")
    print("|---|---|---|---|")
    stats = {}
    for a, rs in sel.items():
        by: Dict[int, List[float]] = {}
        for r in rs:
            by.setdefault(r["seed"], []).append(r["reward"])
        m, lo, hi = _seed_ci(by, f"{layout}{a}t4")
        rep = sum(r["replans"] for r in rs) / len(rs)
        stats[a] = (rep, m, lo, hi)
        print(f"| {a} | {len(rs)} | {_f(rep, 2)} | {_f(m)} [{_f(lo)}, {_f(hi)}] |")
    g, p = stats[GATE], stats[PERIODIC]
    ratio = g[0] / p[0] if p[0] else float("nan")
    within = p[2] <= g[1] <= p[3]
    d = paired_bootstrap(sel[GATE], sel[PERIODIC], "reward", name=f"{layout}t4pair")
    print(f"\nreplans ratio gate / periodic-10 = {_f(ratio, 3)} (claim: <= 0.1: "
          f"{'yes' if ratio <= 0.1 else 'no'}); the gate's reward {_f(g[1])} is "
          f"{'within' if within else 'outside'} periodic-10's CI [{_f(p[2])}, {_f(p[3])}]; paired gate − "
          f"periodic-10: {_f(d.mean, 1, True)} [{_f(d.lo, 1, True)}, {_f(d.hi, 1, True)}] ({d.pairs} pairs)")


# ---------------------------------------------------------------------------------------------- zoo
ZOO_LAYOUTS = ("v2/cramped_room", "v2/asymm_advantages", "v2/coord_ring", "v2/forced_coord", "v2/counter_circuit")


def zoo(args) -> int:
    """Every shipped SP seed with every other (and itself) on each of the five layouts: a matrix of
    mean reward per 400-step episode (rows: seat 0, columns: seat 1; seeds ``--seeds``), batched in JAX."""
    import numpy as np

    from beliefgate.rl.evaluate import play_matches

    seeds = seed_list(args.seeds)
    for layout in ZOO_LAYOUTS:
        sp = roster(layout)["sp"]
        if not sp:
            print(f"\n{layout}: no shipped SP seed", flush=True)
            continue
        names = [sp[s] for s in sorted(sp)]
        label = [f"s{s}" for s in sorted(sp)]
        print(f"\n{layout} (seeds {args.seeds}; row: seat 0, column: seat 1; diagonal: self-play):\n")
        print("| seat 0 \\ seat 1 | " + " | ".join(label) + " |")
        print("|---|" + "---|" * len(names))
        for a, la in zip(names, label):
            cells = []
            for b in names:
                res = play_matches(layout, _policy(a, layout), _policy(b, layout), seeds=seeds, horizon=args.horizon)
                cells.append(f"{float(np.mean(res['reward'])):.1f}")
            print(f"| {la} | " + " | ".join(cells) + " |", flush=True)
    return 0


# ---------------------------------------------------------------------------------------------- curves
def _find_run(runs: Path, card: dict) -> Optional[Path]:
    for policy in runs.rglob("policy.json"):
        if "snapshots" in policy.parts or "pool_" in str(policy):
            continue
        try:
            other = json.loads(policy.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if other.get("sha256") == card.get("sha256") and (policy.parent / "curve.csv").is_file():
            return policy.parent
    for policy in runs.rglob("policy.json"):
        if "snapshots" in policy.parts or "pool_" in str(policy):
            continue
        try:
            other = json.loads(policy.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if (other.get("layout"), other.get("kind"), other.get("seed"), other.get("event_weights")) == \
                (card["layout"], card["kind"], card.get("seed"), card.get("event_weights")) \
                and (policy.parent / "curve.csv").is_file():
            return policy.parent
    return None


def curves(args) -> int:
    import csv

    from beliefgate.envs.overcooked_v2 import trained_agents as T
    from beliefgate.figures import pyplot, save_figure

    runs, img = Path(args.runs), Path(args.img)
    img.mkdir(parents=True, exist_ok=True)
    by_layout: Dict[str, Dict[str, Tuple[Path, dict]]] = {}
    for name, spec in T.shipped_specs().items():
        card = spec.card()
        key = spec.checkpoint                      # the 12 BP behaviours share one network: one curve
        label = name if not spec.weights else f"bp (12 behaviours): {spec.checkpoint.split('/')[0]}"
        by_layout.setdefault(card["layout"], {}).setdefault(key, (label, card))
    plt = pyplot()
    for layout, items in sorted(by_layout.items()):
        fig, ax = plt.subplots(figsize=(7, 4))
        for key, (label, card) in sorted(items.items()):
            run = _find_run(runs, card)
            if run is None:
                print(f"{layout} {label}: no training run with its curve under {runs}", flush=True)
                continue
            pts = []
            with (run / "curve.csv").open() as fh:
                for row in csv.DictReader(fh):
                    if row["mean_return"] and int(row["env_steps"]) <= int(card["steps"]):
                        pts.append((int(row["env_steps"]), float(row["mean_return"])))
            if pts:
                ax.plot(*zip(*pts), lw=1.2, label=f"{label} ({run.name})")
            print(f"{layout} {label}: {run}", flush=True)
        ax.set_xlabel("env steps")
        ax.set_ylabel("mean return per 400-step episode (training)")
        ax.set_title(f"shipped checkpoints on {layout}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        out = img / f"trained_curves_{_short(layout)}.png"
        save_figure(fig, out)
        print(f"wrote {out}", flush=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("--out", default="runs/results_trained")
    p.add_argument("--layouts", nargs="+", default=list(LAYOUTS))
    p.add_argument("--seeds", default="0-19", help="seeds of the trained-vs-trained matches")
    p.add_argument("--agents", nargs="*", default=list(AGENTS))
    p.add_argument("--agent-seeds", default="0-19", help="seeds of the agent egos' episodes")
    p.add_argument("--horizon", type=int, default=400)
    p.add_argument("--classic", action="store_true",
                   help="play the BC and policy-tree rows and the BC column in the classic backend (module doc)")
    p.add_argument("--trees", default=TREES, help="folder of the distilled trees (<layout>/full/best.py)")
    r = sub.add_parser("report")
    r.add_argument("--out", default="runs/results_trained")
    z = sub.add_parser("zoo")
    z.add_argument("--seeds", default="0-19")
    z.add_argument("--horizon", type=int, default=400)
    c = sub.add_parser("curves")
    c.add_argument("--runs", default="runs/ppo")
    c.add_argument("--img", default="docs/img")
    args = parser.parse_args(argv)
    return {"run": run, "report": report, "zoo": zoo, "curves": curves}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
