"""Latency of one online Gate step (predict, condition, both gates) for K = 6 skills.

Measures each call separately with ``time.perf_counter_ns`` in this process (the
variants interleaved in 20 rounds, so other jobs on the machine weigh on all alike) and
reports p50/p99 per variant, plus the ratio to one call of the JAX functional
filter's jitted ``beliefgate.beliefs.filter.update`` (validated, float64 off
unless JAX_ENABLE_X64 is set) when that module is importable.

    python benchmarks/bench_gate.py            # 20k timed steps per variant
    python benchmarks/bench_gate.py --quick    # smoke run (a few hundred steps)
    python benchmarks/bench_gate.py --json out.json
    python benchmarks/bench_gate.py --against /path/to/other/checkout   # A/B in one process

No assertion is made on the numbers; the targets (p50 <= 25 us, p99 <= 100 us
on the 2-core reference machine) are printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from typing import Callable, Optional

import numpy as np

from beliefgate import Gate, GateParams
from beliefgate.beliefs.evidence import StepEvidence

NUM_SKILLS = 6
NUM_ACTIONS = 6
POOL = 512
TARGET_P50_US = 25.0
TARGET_P99_US = 100.0


def make_pool(seed: int = 0):
    """Random controller tables and actions, generated before timing starts."""
    rng = np.random.default_rng(seed)
    q = rng.normal(0.0, 1.5, size=(POOL, NUM_SKILLS, NUM_ACTIONS))
    lp = q - q.max(axis=-1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(axis=-1, keepdims=True))
    actions = [int(a) for a in rng.integers(NUM_ACTIONS, size=POOL)]
    lls = [np.ascontiguousarray(lp[i][:, actions[i]]) for i in range(POOL)]
    return [np.ascontiguousarray(t) for t in lp], actions, lls


def time_calls(call: Callable[[int], object], steps: int, warmup: int) -> np.ndarray:
    for i in range(warmup):
        call(i % POOL)
    out = np.empty(steps, dtype=np.int64)
    clock = time.perf_counter_ns
    for i in range(steps):
        j = i % POOL
        t0 = clock()
        call(j)
        out[i] = clock() - t0
    return out / 1000.0  # microseconds


def time_round_robin(calls: dict, steps: int, warmup: int, rounds: int = 20) -> dict:
    """:func:`time_calls` for every variant, interleaved: ``rounds`` turns in which each
    variant takes ``steps / rounds`` calls, so a burst of other work on the machine lands
    on all variants alike instead of on whichever ran during it."""
    rounds = max(1, min(rounds, steps))
    for call in calls.values():
        time_calls(call, 0, warmup)
    chunks = {name: [] for name in calls}
    for r in range(rounds):
        n = steps // rounds + (1 if r < steps % rounds else 0)
        for name, call in calls.items():
            chunks[name].append(time_calls(call, n, 0))
    return {name: np.concatenate(parts) for name, parts in chunks.items()}


def gate_variants(tables, actions, lls, api=None):
    """The timed Gate calls; ``api`` = ``(Gate, GateParams, StepEvidence)`` of another checkout
    (:func:`load_checkout`), default this one's."""
    Gate, GateParams, StepEvidence = api or (globals()["Gate"], globals()["GateParams"], globals()["StepEvidence"])
    hazard = Gate.from_logprobs(NUM_SKILLS, GateParams())
    windowed = Gate.from_logprobs(NUM_SKILLS, GateParams(model="windowed", window=5))
    windowed_cp = Gate.from_logprobs(
        NUM_SKILLS, GateParams(model="windowed", window=5, track_changepoint=True))
    hazard_ll = Gate.from_logprobs(NUM_SKILLS, GateParams())
    evidence = Gate.from_logprobs(NUM_SKILLS, GateParams())
    cusum = Gate.from_logprobs(NUM_SKILLS, GateParams(gate="cusum"))
    masks = [np.eye(NUM_ACTIONS, dtype=bool)[a] for a in actions]
    evs = [StepEvidence(t, m) for t, m in zip(tables, masks)]
    return {
        "Gate.step (hazard)": lambda j: hazard.step(tables[j], actions[j]),
        "Gate.step (windowed, W=5)": lambda j: windowed.step(tables[j], actions[j]),
        "Gate.step (windowed, W=5, change point)": lambda j: windowed_cp.step(tables[j], actions[j]),
        "Gate.step (hazard, CUSUM gate)": lambda j: cusum.step(tables[j], actions[j]),
        "Gate.step_loglik (hazard)": lambda j: hazard_ll.step_loglik(lls[j]),
        "Gate.step_evidence (hazard)": lambda j: evidence.step_evidence(evs[j]),
    }


def load_checkout(root: str):
    """``(Gate, GateParams, StepEvidence)`` of the ``beliefgate`` package under ``root``, imported
    beside the one this script runs with (whose modules are put back afterwards), so both
    versions are timed in one process, interleaved: other jobs on the machine weigh on both
    alike. The other version's per-step path must not import ``beliefgate`` modules lazily."""
    root = os.path.abspath(root)

    def ours(name: str) -> bool:
        return name == "beliefgate" or name.startswith("beliefgate.")

    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if ours(k)}
    sys.path.insert(0, root)
    try:
        import beliefgate as other
        from beliefgate import Gate as OtherGate, GateParams as OtherParams
        from beliefgate.beliefs.evidence import StepEvidence as OtherEvidence

        if not os.path.abspath(other.__file__).startswith(root + os.sep):
            raise SystemExit(f"--against {root}: imported beliefgate from {other.__file__}")
        return OtherGate, OtherParams, OtherEvidence
    finally:
        sys.path.remove(root)
        for k in [k for k in sys.modules if ours(k)]:
            del sys.modules[k]
        sys.modules.update(saved)


def compare(root: str, steps: int, warmup: int) -> dict:
    """p50 of every Gate variant here and in the checkout at ``root``, timed interleaved."""
    tables, actions, lls = make_pool()
    calls = {f"this: {k}": v for k, v in gate_variants(tables, actions, lls).items()}
    calls.update({f"other: {k}": v for k, v in gate_variants(tables, actions, lls, load_checkout(root)).items()})
    res = {k: summarise(v) for k, v in time_round_robin(calls, steps, warmup, rounds=40).items()}
    out = {}
    for name in gate_variants(tables, actions, lls):
        this, other = res[f"this: {name}"]["p50_us"], res[f"other: {name}"]["p50_us"]
        out[name] = {"this_p50_us": this, "other_p50_us": other, "ratio": this / other}
        print(f"{name:45s} this {this:7.2f} us   other {other:7.2f} us   this/other {this / other:.3f}")
    return out


def jax_variant(lls) -> Optional[Callable[[int], object]]:
    try:
        from beliefgate.beliefs import filter as F
    except ImportError:
        return None
    params = GateParams().filter_params()
    holder = {"state": F.init(params, NUM_SKILLS)}

    def call(j):
        state, info = F.update(params, holder["state"], lls[j])
        info.log_posterior.block_until_ready()
        holder["state"] = state
        return info

    return call


def drift(tables, actions, steps: int) -> dict:
    """A long run of one hazard gate: p50 over the first and the last tenth of ``steps``
    (no slow-down as the run goes on) and the largest |sum(posterior) - 1| seen."""
    gate = Gate.from_logprobs(NUM_SKILLS, GateParams())
    clock = time.perf_counter_ns
    times = np.empty(steps, dtype=np.int64)
    worst = 0.0
    for i in range(steps):
        j = i % POOL
        t0 = clock()
        d = gate.step(tables[j], actions[j])
        times[i] = clock() - t0
        worst = max(worst, abs(float(d.posterior.sum()) - 1.0))
    tenth = max(1, steps // 10)
    return {"steps": steps, "p50_first_us": float(np.percentile(times[:tenth], 50) / 1000.0),
            "p50_last_us": float(np.percentile(times[-tenth:], 50) / 1000.0),
            "max_abs_sum_error": worst}


def load_average() -> list:
    """1-, 5- and 15-minute load averages (other jobs on a small machine move the figures)."""
    return [round(x, 2) for x in os.getloadavg()]


def commit() -> Optional[str]:
    """The checked-out commit (short hash), or ``None`` outside a git work tree."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=os.path.dirname(os.path.abspath(__file__)), check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def summarise(samples: np.ndarray) -> dict:
    return {
        "steps": int(samples.size),
        "p50_us": float(np.percentile(samples, 50)),
        "p99_us": float(np.percentile(samples, 99)),
        "mean_us": float(samples.mean()),
    }


def main(argv: Optional[list[str]] = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run with few steps")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per Gate variant")
    parser.add_argument("--json", type=str, default=None, help="write the results here")
    parser.add_argument("--against", type=str, default=None,
                        help="another checkout's root: time its Gate and this one's in one process, interleaved")
    args = parser.parse_args(argv)
    steps = args.steps or (300 if args.quick else 20_000)
    warmup = 50 if args.quick else 2_000
    if args.against:
        report = {"commit": commit(), "against": args.against, "load_average": load_average(),
                  "results": compare(args.against, steps, warmup)}
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(report, fh, indent=2)
        return report
    jax_steps = 50 if args.quick else 2_000

    load_before = load_average()
    tables, actions, lls = make_pool()
    results = {name: summarise(samples) for name, samples in
               time_round_robin(gate_variants(tables, actions, lls), steps, warmup).items()}
    jax_call = jax_variant(lls)
    if jax_call is not None:
        results["filter.update (JAX jit)"] = summarise(time_calls(jax_call, jax_steps, 20))
    ref = results.get("filter.update (JAX jit)")
    for res in results.values():
        res["speedup_vs_jax_update"] = ref["p50_us"] / res["p50_us"] if ref else None

    long_run = drift(tables, actions, 2_000 if args.quick else 100_000)
    report = {
        "drift": long_run,
        "machine": f"{platform.processor() or platform.machine()} ({platform.python_version()})",
        "commit": commit(),
        "load_average": {"before": load_before, "after": load_average()},
        "num_skills": NUM_SKILLS,
        "num_actions": NUM_ACTIONS,
        "targets_us": {"p50": TARGET_P50_US, "p99": TARGET_P99_US},
        "results": results,
    }
    _print(report)
    print(f"drift over {long_run['steps']} steps: p50 first tenth {long_run['p50_first_us']:.1f} us, "
          f"last tenth {long_run['p50_last_us']:.1f} us; max |sum(posterior) - 1| = "
          f"{long_run['max_abs_sum_error']:.1e}")
    print(f"commit {report['commit']}; load average (1, 5, 15 min) before {load_before}, "
          f"after {report['load_average']['after']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    return report


def _print(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"One online step, K={report['num_skills']}, A={report['num_actions']} "
                        f"(targets: p50 <= {TARGET_P50_US:g} us, p99 <= {TARGET_P99_US:g} us)")
    table.add_column("variant", no_wrap=True)
    for col in ("steps", "p50 (us)", "p99 (us)", "mean (us)", "speed-up vs JAX update"):
        table.add_column(col, justify="right")
    for name, r in report["results"].items():
        ratio = r["speedup_vs_jax_update"]
        table.add_row(name, str(r["steps"]), f"{r['p50_us']:.1f}", f"{r['p99_us']:.1f}",
                      f"{r['mean_us']:.1f}", "-" if ratio is None else f"{ratio:.1f}")
    Console(width=max(Console().width, 110)).print(table)


if __name__ == "__main__":
    main()
