"""The offline demo: one scripted episode per layout, the gate reading the partner."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

from beliefgate.eval.episode import run_episode
from beliefgate.eval.replay import replay


#: the demo's kitchens: the five classic two-player layouts
LAYOUTS = ("cramped_room", "asymmetric_advantages", "coordination_ring", "forced_coordination", "counter_circuit")


#: the tour's ego: the belief agent itself (its gate reads the partner, its vetoes are counted)
TOUR_EGO = "bayes-belief"


def run_demo(seed: int = 0, horizon: int = 400, partner: str = "switch-sourcer-to-plater",
             out_dir: Optional[Path] = None, progress=None, params=None, ego: str = TOUR_EGO) -> List[Dict[str, object]]:
    """Play ``ego`` (the belief agent) with ``partner`` on every layout, replay the partner through the
    reference gate, and count what became of the ego gate's firings (``firings``: a
    :class:`~beliefgate.eval.metrics.GateFirings`)."""
    from beliefgate.eval.metrics import gate_firings

    rows = []
    for i, layout in enumerate(LAYOUTS):
        who = partner  # on a split floor (forced_coordination) every scripted partner passes over counters
        log = (Path(out_dir) / f"{layout}_seed{seed}.jsonl") if out_dir is not None else None
        if progress is not None:
            progress(i, len(LAYOUTS), layout)
        result = run_episode(layout, ego, who, seed=seed, horizon=horizon, seat=0, log_path=log)
        rep = replay(result.trajectory, params, partner=1)
        known = rep.truth >= 0
        rows.append({
            "layout": layout, "partner": who, "ego": ego, "deliveries": result.summary["deliveries"],
            "reward": result.summary["reward"], "map_accuracy": rep.map_accuracy,
            "mean_confidence": float(rep.confidence[known].mean()) if known.any() else float("nan"),
            "interrupts": int(rep.interrupt.sum()), "changepoints": int(rep.changepoint.sum()),
            "firings": gate_firings(result.trajectory),
            "log": str(log) if log else "-",
        })
    return rows


AGENT_COMPARISON = ("bayes-belief", "bayes-belief:paper", "bayes-belief:no_replan", "bayes-belief:no_belief",
                    "periodic-10")
#: two of the shipped behaviour-preferring switchers (beliefgate/envs/overcooked/partner_data/)
SWITCHERS = ("bp-g1-dish-hi-eager-lo", "bp-g3-onion-lo-stock-hi")
#: the comparison's columns: (metric, header, digits)
COMPARISON_COLUMNS = (("reward", "reward", 1), ("replans", "replans/ep", 1),
                      ("effective_replans", "effective/ep", 1), ("gap_rate", "gap/step", 2),
                      ("gap_rate_decisions", "gap@dp", 2), ("oracle_gap_rate", "gap@oracle", 2))
#: what the columns mean, in one line
COMPARISON_CAPTION = ("Mean [95% CI over seeds]. replans: gate/timer interrupts of a running skill; effective: "
                      "those that changed the ego's skill; gap: share of moments with a correct partner belief "
                      "where the ego's skill is wrong -- per step and at decision points by the SPEC "
                      "complementarity table, and at decision points by a rollout oracle (the skill with the "
                      "best 15-step return given the partner's true skills). Lower gap is better.")


def compare_agents(layout: str = "cramped_room", agents=AGENT_COMPARISON, partners=SWITCHERS,
                   seeds=range(3), horizon: int = 400, progress=None, n_boot: int = 2000) -> List[Dict[str, object]]:
    """Offline agents against switching partners: per agent, each metric of
    :data:`COMPARISON_COLUMNS` as the mean over episodes with a 95% bootstrap interval over the
    seeds (each seed's value: the mean over the partners; ``<metric>_lo`` / ``<metric>_hi``)."""
    import numpy as np

    from beliefgate.eval.metrics import GateFirings, episode_metrics, gate_firings
    from beliefgate.eval.report import bootstrap_mean_ci

    seeds = list(seeds)
    jobs = [(a, p, s) for a in agents for p in partners for s in seeds]
    per_agent: Dict[str, List[Dict[str, float]]] = {a: [] for a in agents}
    firings: Dict[str, GateFirings] = {a: GateFirings() for a in agents}
    for i, (agent, partner, seed) in enumerate(jobs):
        if progress is not None:
            progress(i, len(jobs), f"{agent} + {partner} (seed {seed})")
        traj = run_episode(layout, agent, partner, seed=seed, horizon=horizon).trajectory
        per_agent[agent].append({**episode_metrics(traj), "layout": layout, "partner": partner, "seat": 0,
                                 "seed": seed})
        firings[agent] = firings[agent] + gate_firings(traj)
    rows = []
    for agent, metrics in per_agent.items():
        # the per-episode metrics, keyed for :func:`~beliefgate.eval.report.paired_bootstrap`;
        # ``firings``: the ego gate's firings over all its episodes and the vetoes that stopped them
        row: Dict[str, object] = {"agent": agent, "episodes": len(metrics), "seeds": len(seeds),
                                  "episode_rows": metrics, "firings": firings[agent]}
        for key in ("reward", "deliveries", "replans", "effective_replans", "map_accuracy", "gap_rate",
                    "gap_rate_decisions", "oracle_gap_rate"):
            by_seed = [np.nanmean([m[key] for m in metrics if m["seed"] == s] or [np.nan]) for s in seeds]
            by_seed = [v for v in by_seed if not np.isnan(v)]
            mean, lo, hi = bootstrap_mean_ci(by_seed, n_boot=n_boot, name=f"demo|{agent}|{key}")
            row[key], row[f"{key}_lo"], row[f"{key}_hi"] = mean, lo, hi
        rows.append(row)
    return rows


def comparison_cells(row: Dict[str, object]) -> List[str]:
    """One agent's table cells, ``mean [lo, hi]`` per column of :data:`COMPARISON_COLUMNS`."""
    import math

    cells = []
    for key, _, digits in COMPARISON_COLUMNS:
        mean, lo, hi = (float(row[key]), float(row[f"{key}_lo"]), float(row[f"{key}_hi"]))
        if math.isnan(mean):
            cells.append("–")
        elif math.isnan(lo):
            cells.append(f"{mean:.{digits}f}")
        else:
            cells.append(f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]")
    return cells


def comparison_table(rows: List[Dict[str, object]], title: str = ""):
    """The agent comparison as a rich Table (what ``beliefgate demo`` prints)."""
    from rich.table import Table

    table = Table(title=title)
    table.add_column("agent", no_wrap=True)
    for _, header, _ in COMPARISON_COLUMNS:
        table.add_column(header, justify="right")
    for r in rows:
        table.add_row(str(r["agent"]), *comparison_cells(r))
    return table


def comparison_verdict(rows: List[Dict[str, object]], agent: str = "bayes-belief",
                       baselines=("bayes-belief:no_replan", "bayes-belief:no_belief"), n_boot: int = 2000) -> str:
    """One line saying what the comparison shows: ``agent``'s reward minus each baseline's, paired
    over seeds with a 95% bootstrap interval, its effective replans, and whether any interval
    excludes zero at this size (computed from ``rows``, never a fixed sentence)."""
    from beliefgate.eval.report import paired_bootstrap, same_rewards

    by = {str(r["agent"]): r for r in rows}
    if agent not in by:
        return f"What it means: {agent} was not in the comparison."
    me = by[agent]
    parts, signs, same = [], [], []
    for base in baselines:
        if base not in by:
            continue
        if same_rewards(me["episode_rows"], by[base]["episode_rows"]):
            same.append(base.split(":")[-1])
        d = paired_bootstrap(me["episode_rows"], by[base]["episode_rows"], "reward", unit="seed", n_boot=n_boot,
                             name=f"demo-verdict|{agent}|{base}")
        short = base.split(":")[-1]
        if not d.has_interval:
            parts.append(f"{d.mean:+.1f} vs {short}")
            continue
        parts.append(f"{d.mean:+.1f} [{d.lo:+.1f}, {d.hi:+.1f}] vs {short}")
        signs.append((short, 1 if d.lo > 0 else -1 if d.hi < 0 else 0))
    n = int(me["seeds"])
    above = [b for b, s in signs if s == 1]
    below = [b for b, s in signs if s == -1]
    if same and len(same) == len(parts) and float(me["replans"]) == 0.0:
        why = me["firings"].why_identical() if me.get("firings") is not None else ""
        reading = (f"it never replanned here, so it played the same episodes as {' and '.join(same)}"
                   + (f": {why}" if why else "") + " (every paired difference is exactly 0; more seeds would not "
                   "separate them: offline, the belief acts only through the gate's interrupts)")
    elif not parts:
        reading = "no baseline to compare with"
    elif not signs:
        reading = "too few seeds for an interval"
    elif below:
        reading = f"it scores below {' and '.join(below)} here"
    elif len(above) == len(signs):
        reading = "it scores above every baseline here"
    elif above:
        reading = f"it scores above {' and '.join(above)} only; the other intervals include 0"
    else:
        reading = f"no difference is shown at {n} seeds (every interval includes 0)"
    line = (f"What it means: {agent} reward {float(me['reward']):.1f}, " + ", ".join(parts)
            + f" (paired over {n} seeds), {float(me['effective_replans']):.1f} effective replans/ep")
    if "periodic-10" in by:
        p = by["periodic-10"]
        line += (f" against periodic-10's {float(p['replans']):.1f} replans"
                 f" ({float(p['effective_replans']):.1f} effective)")
    return line + f": {reading}."
