"""Sobol analysis of the five stable-MAP gate parameters on replayed episodes, vectorised vs a plain loop.

The workload of issue 8: SALib Sobol (Saltelli scheme, no second order) over
tau_obs, likelihood_scale, confidence_floor, n_stable and cooldown with N = 1024,
i.e. 1024 x (5 + 2) = 7,168 gate configurations, each replayed on 100 logged
400-step episodes (scripted switching partners on the four open layouts, real
Overcooked dynamics). Target: <= 120 s on the 2-core reference machine.

Timed parts, in this process:

* load: reading the logs, the partner's evidence and the ground truth (once);
* analysis: ``run_gate_global`` -- sample, one belief pass per log through the
  gate's functional core (the gate parameters do not change the belief), the
  gate's own decision rules (``beliefgate.beliefs.gates.stable_map_decide``, the
  same code the online gate runs) stepped once per belief step with every
  configuration a ``[C]`` array, SALib analysis;
* baseline 1: a plain Python loop over configurations -- for each configuration a
  fresh scalar ``Gate`` steps through every episode's precomputed evidence
  (replanning after each interrupt) and the episode is scored with
  ``score_switches``. It is timed on a random subset of the sampled
  configurations and extrapolated linearly (time per configuration x 7,168:
  every configuration costs the same number of gate steps). Its outputs on the
  subset must equal the vectorised ones exactly.
* the batched decision replay alone (``vectorised_interrupts`` of every
  configuration over every belief trace), for the cost of the decision rules;
* baseline 2 (to separate the two savings): the belief sequences shared as in
  the analysis, but the decision rules called once per configuration
  (``vectorised_interrupts`` with one column), same subset, same extrapolation.

The episodes are generated once into the beliefgate cache (``$BELIEFGATE_CACHE``
or the user cache dir), which is not timed.

    python benchmarks/bench_sensitivity.py            # the full workload
    python benchmarks/bench_sensitivity.py --quick    # smoke sizes
    python benchmarks/bench_sensitivity.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

RANGES = ("tau_obs=0.02:0.7", "likelihood_scale=0.25:4", "confidence_floor=0.3:0.99", "n_stable=0:4",
          "cooldown=0:20")
LAYOUTS = ("cramped_room", "asymmetric_advantages", "coordination_ring", "counter_circuit")
PARTNERS = ("switch-sourcer-to-plater", "switch-plater-to-sourcer")
TARGET_S = 120.0
LOG_DIR_VERSION = 1


def episode_logs(count: int, horizon: int, progress: bool = True) -> list[Path]:
    """``count`` scripted switching-partner logs in the cache (generated when missing)."""
    from beliefgate.envs.overcooked.tables import cache_dir
    from beliefgate.envs.trajlog import LogFormatError, read_log
    from beliefgate.eval.episode import run_episode

    folder = cache_dir() / f"bench_sensitivity_v{LOG_DIR_VERSION}"
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [(lay, p, s) for s in range(count) for lay in LAYOUTS for p in PARTNERS][:count]
    paths, made = [], 0
    for lay, partner, seed in jobs:
        path = folder / f"{lay}__{partner}__s{seed}__h{horizon}.jsonl"
        if path.exists():
            try:
                read_log(path)
            except LogFormatError:
                path.unlink()
        if not path.exists():
            run_episode(lay, "balanced", partner, seed=seed, horizon=horizon, seat=0, log_path=path)
            made += 1
            if progress and made % 10 == 0:
                print(f"  generated {made} episodes ...", flush=True)
        paths.append(path)
    if made and progress:
        print(f"  generated {made} episode logs in {folder}")
    return paths


def scalar_loop(episodes, params, window: int) -> dict:
    """The baseline: one configuration, a plain loop of scalar gate steps over every episode."""
    from beliefgate.beliefs.gate import Gate
    from beliefgate.eval.replay import score_switches

    interrupts, total = 0, None
    for ep in episodes:
        gate = Gate.from_logprobs(len(ep.skill_names), params, ep.skill_names)
        alarms = np.zeros(ep.steps, dtype=bool)
        for t, ev in enumerate(ep.evidence(params.beta, params.epsilon)):
            if gate.step_evidence(ev).interrupt:
                alarms[t] = True
                gate.notify_replanned()
        interrupts += int(alarms.sum())
        sc = score_switches(alarms, ep.hidden, window)
        total = sc if total is None else total + sc
    return {"interrupts_per_episode": interrupts / len(episodes), "detection_delay": total.mean_delay,
            "false_alarms_per_100": total.false_alarms_per_100, "detection_rate": total.detection_rate}


def run(n: int, episodes_count: int, horizon: int, loop_subset: int, seed: int, window: int = 10) -> dict:
    from beliefgate.beliefs.gate import GateParams
    from beliefgate.eval.sensitivity import (ConfigTable, belief_params, belief_trace, load_episodes, parse_ranges,
                                             run_gate_global, score_configs, vectorised_interrupts)

    base = GateParams()
    ranges = parse_ranges(list(RANGES), "global", base)
    paths = episode_logs(episodes_count, horizon)

    t0 = time.perf_counter()
    episodes = load_episodes(paths, None, base)
    load_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    result = run_gate_global(episodes, ranges, "sobol", n, seed, base, window, keep_samples=True)
    analysis_s = time.perf_counter() - t0
    configs = result.num_configs

    # baseline on a random subset of the same configurations
    rng = np.random.default_rng(seed)
    subset = rng.choice(configs, size=min(loop_subset, configs), replace=False)
    table = ConfigTable.from_values(base, result.values)
    t0 = time.perf_counter()
    loop_out = [scalar_loop(episodes, table.params(int(i)), window) for i in subset]
    loop_s = time.perf_counter() - t0
    per_config = loop_s / len(subset)
    loop_extrapolated_s = per_config * configs
    mismatches = 0
    for i, out in zip(subset, loop_out):
        for k, v in out.items():
            if k not in result.outputs:  # e.g. no hidden switch in these episodes: no delay
                continue
            w = result.outputs[k][int(i)]
            if not (v == w or (np.isnan(v) and np.isnan(w)) or abs(v - w) <= 1e-12 * max(1.0, abs(v))):
                mismatches += 1
    # second baseline: belief sequences shared, the decision kernel called one configuration at a time
    traces = [belief_trace(ep.evidence(base.beta, base.epsilon), ep.skill_names, belief_params(base))
              for ep in episodes]
    t0 = time.perf_counter()
    for i in subset:
        dec = table.decision_columns(np.array([int(i)]))
        for ep, tr in zip(episodes, traces):
            alarms = vectorised_interrupts(tr, dec, base.gate.kind)
            score_configs(alarms, ep.hidden, window)
    shared_s = time.perf_counter() - t0
    # the batched decision replay alone: every configuration over every belief trace at once
    full = table.decision_columns()
    t0 = time.perf_counter()
    for tr in traces:
        vectorised_interrupts(tr, full, base.gate.kind)
    replay_s = time.perf_counter() - t0
    shared_extrapolated_s = shared_s / len(subset) * configs
    switches = sum(int(ep.hidden.sum()) for ep in episodes)
    return {
        "n": n, "configs": configs, "episodes": len(episodes), "horizon": horizon, "hidden_switches": switches,
        "load_s": load_s, "analysis_s": analysis_s, "belief_passes": result.context["belief_passes"],
        "loop_subset": len(subset), "loop_subset_s": loop_s, "loop_per_config_s": per_config,
        "loop_extrapolated_s": loop_extrapolated_s, "ratio": loop_extrapolated_s / analysis_s,
        "subset_mismatches": mismatches, "target_s": TARGET_S,
        "shared_belief_loop_extrapolated_s": shared_extrapolated_s,
        "shared_belief_ratio": shared_extrapolated_s / analysis_s,
        "batched_replay_s": replay_s, "batched_replay_per_trace_ms": 1000.0 * replay_s / len(traces),
        "ST_interrupts": dict(zip(result.names, np.round(result.indices["interrupts_per_episode"]["ST"], 3).tolist())),
        "S1_interrupts": dict(zip(result.names, np.round(result.indices["interrupts_per_episode"]["S1"], 3).tolist())),
        "machine": platform.processor() or platform.machine(), "python": platform.python_version(),
    }


def print_report(r: dict) -> None:
    print(f"Sobol over {', '.join(RANGES)}")
    print(f"N={r['n']}: {r['configs']} configurations x {r['episodes']} episodes of {r['horizon']} steps "
          f"({r['hidden_switches']} hidden switches)")
    print(f"  load logs + evidence + ground truth : {r['load_s']:8.2f} s (once)")
    print(f"  vectorised analysis (sample, {r['belief_passes']} belief passes, replays, SALib): "
          f"{r['analysis_s']:.2f} s   target <= {r['target_s']:.0f} s: "
          f"{'met' if r['analysis_s'] + r['load_s'] <= r['target_s'] else 'NOT met'} (load included)")
    print(f"  plain loop over configurations      : {r['loop_per_config_s']:8.3f} s/config, measured on "
          f"{r['loop_subset']} configs ({r['loop_subset_s']:.1f} s) -> {r['loop_extrapolated_s']:.0f} s "
          f"extrapolated x {r['configs']}")
    print(f"  ratio loop / vectorised             : {r['ratio']:8.0f}x   (subset outputs identical: "
          f"{'yes' if r['subset_mismatches'] == 0 else 'NO, ' + str(r['subset_mismatches']) + ' differ'})")
    print(f"  loop over configs, belief shared    : {r['shared_belief_loop_extrapolated_s']:8.1f} s extrapolated "
          f"(the same kernel, one configuration per call) -> {r['shared_belief_ratio']:.1f}x the vectorised time")
    print(f"  batched decision replay alone       : {r['batched_replay_s']:8.2f} s ({r['configs']} configurations x "
          f"{r['episodes']} traces, {r['batched_replay_per_trace_ms']:.1f} ms per trace)")
    print(f"  total index ST of interrupts/episode: {r['ST_interrupts']}")
    print("Timings on a shared 2-core machine are noisy; no assertion is made on them.")


def main(argv: Optional[Sequence[str]] = None) -> dict:
    """CLI entry point; returns the result dict (used by the smoke test)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke sizes (N=8, 4 episodes of 100 steps)")
    parser.add_argument("--n", type=int, default=1024, help="Sobol base sample size")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--horizon", type=int, default=400)
    parser.add_argument("--loop-subset", type=int, default=6, help="configurations timed in the plain loop")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the result as JSON here")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.episodes, args.horizon, args.loop_subset = 8, 4, 100, 2
    result = run(args.n, args.episodes, args.horizon, args.loop_subset, args.seed)
    print_report(result)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
