"""Evaluation harness: metrics on hand-made logs, grid files, resumable runs, executors, report, CLI."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from beliefgate.envs.overcooked.state import PlayerView, PotView, SymbolicState
from beliefgate.envs.overcooked.tables import INTERACT, STAY
from beliefgate.envs.trajlog import FinalRow, LogHeader, LogWriter, StepRow, Trajectory, read_log
from beliefgate.eval import metrics as M
from beliefgate.eval.grid import GridError, load_grid, parse_grid, resolve_grid, seed_list
from beliefgate.eval.replay import ReplayResult
from beliefgate.eval.report import (ReportError, Report, bootstrap_mean_ci, bootstrap_p, build_report, holm,
                                    paired_bootstrap)
from beliefgate.eval.runner import RunError, load_results, run_grid

BIN = Path(sys.executable).parent / "beliefgate"
N, S, E, W = 0, 1, 2, 3
ONION, POT, DISH, SCOOP, DELIVER, PLACE = ("pickup_onion", "put_onion_in_pot", "pickup_dish", "fill_dish_with_soup",
                                           "deliver_soup", "place_obj_on_counter")


# ----------------------------------------------------------------------------- hand-made logs
def _state(t, ego_pos, ego_dir=(0, -1), partner_pos=(3, 1), partner_dir=(0, -1)):
    """A cramped_room state (floor: (1..3, 1..2)); the ego is player 0."""
    return SymbolicState(layout="cramped_room", timestep=t,
                         players=(PlayerView(position=ego_pos, orientation=ego_dir),
                                  PlayerView(position=partner_pos, orientation=partner_dir)),
                         pots=(PotView(position=(2, 0), ingredients=0),))


def _traj(n, states=None, actions=None, events=None, skills=None, infos=None, rewards=None, summary=None,
          final=True):
    states = states or [_state(t, (1, 2)) for t in range(n + 1)]
    actions = actions or [[STAY, STAY]] * n
    events = events or [[[], []]] * n
    skills = skills or [[None, None]] * n
    infos = infos or [[{}, {}]] * n
    rewards = rewards or [0.0] * n
    header = LogHeader(layout="cramped_room", horizon=n, seed=0, seat=0, agents=["ego", "partner"], ego="ego",
                       partner="partner", version="test")
    traj = Trajectory(header)
    for t in range(n):
        traj.steps.append(StepRow(t=t, state=states[t], actions=list(actions[t]), reward=rewards[t],
                                  events=[list(e) for e in events[t]], skills=list(skills[t]),
                                  info=[dict(i) for i in infos[t]]))
    if final:
        traj.final = FinalRow(state=states[n], summary=summary if summary is not None else {})
    return traj


def _roundtrip(traj, tmp_path):
    """Write a hand-made trajectory as a real log and read it back (metrics come from logs alone)."""
    path = tmp_path / "hand.jsonl"
    writer = LogWriter(path, traj.header)
    for row in traj.steps:
        writer.step(row)
    writer.final(traj.final)
    return read_log(path)


def _reference(truth, map_skill, interrupt=None, confidence=None, contradiction=None):
    """A hand-made reference-gate replay (only the fields the metrics read are meaningful)."""
    from beliefgate.skills import load_builtin

    names = load_builtin().names
    T = len(truth)
    z = np.zeros(T)
    return ReplayResult("cramped_room", 1, names, np.full((T, len(names)), 1 / len(names)), np.array(map_skill),
                        np.array(confidence if confidence is not None else [1.0] * T),
                        np.array(contradiction if contradiction is not None else [False] * T, dtype=bool),
                        np.array(interrupt if interrupt is not None else [False] * T, dtype=bool),
                        np.zeros(T, dtype=bool), z, np.array(truth), np.zeros(T, dtype=bool), z, z + 1, z)


def test_reward_deliveries_and_counters_from_the_rows(tmp_path):
    traj = _traj(4, rewards=[0.0, 20.0, 0.0, 20.0],
                 events=[[[], []], [["deliver:soup"], []], [[], ["pickup:onion"]], [[], ["deliver:soup"]]],
                 summary={"replans": 3, "llm_calls": 8, "reward": 40.0, "deliveries": 2})
    traj = _roundtrip(traj, tmp_path)
    assert M.reward(traj) == 40.0 and M.deliveries(traj) == 2
    assert M.replans(traj) == 3 and M.llm_calls(traj) == 8
    assert M.llm_calls_per_step(traj) == pytest.approx(8 / 4)
    # without a final summary the ego's last logged counters are used
    infos = [[{"replans": t, "llm_calls": 2 * t}, {}] for t in range(4)]
    partial = _traj(4, infos=infos, final=False)
    assert M.replans(partial) == 3 and M.llm_calls(partial) == 6 and M.llm_calls_per_step(partial) == 1.5


def test_duplicate_rate_failed_interactions_and_intent_accuracy(tmp_path):
    skills = [[ONION, ONION], [ONION, DISH], [None, DISH], [DISH, DISH]]
    actions = [[INTERACT, STAY], [INTERACT, STAY], [N, STAY], [INTERACT, INTERACT]]
    events = [[["pickup:onion"], []], [[], []], [[], []], [[], ["pickup:dish"]]]
    infos = [[{"partner_map": None}, {}], [{"partner_map": ONION}, {}], [{"partner_map": ONION}, {}],
             [{"partner_map": DISH}, {}]]
    traj = _roundtrip(_traj(4, actions=actions, events=events, skills=skills, infos=infos), tmp_path)
    assert M.duplicate_skill_rate(traj) == pytest.approx(2 / 3)      # both active at t=0,1,3; same at 0 and 3
    assert M.failed_interaction_rate(traj) == pytest.approx(2 / 3)   # ego interacts at 0,1,3; only t=0 acts
    # predictions at t=1, 2, 3 vs the partner's true skill then: onion|dish, onion|dish, dish|dish
    assert M.partner_intent_accuracy(traj) == pytest.approx(1 / 3)
    # no interactions, no predictions, never both active: NaN, not 0
    empty = _traj(3)
    assert math.isnan(M.failed_interaction_rate(empty)) and math.isnan(M.partner_intent_accuracy(empty))
    assert math.isnan(M.duplicate_skill_rate(empty))


def test_blocking_rate_counts_only_moves_the_partner_stopped(tmp_path):
    # ego at (1,1), partner at (2,1). t0: east into the partner -> blocked (turns east, stays);
    # t1: north into a counter -> only turns (not blocked); t2: south to the free (1,2) -> moves; t3: stay.
    states = [_state(0, (1, 1), (0, -1), (2, 1)), _state(1, (1, 1), (1, 0), (2, 1)),
              _state(2, (1, 1), (0, -1), (2, 1)), _state(3, (1, 2), (0, 1), (2, 1)),
              _state(4, (1, 2), (0, 1), (2, 1))]
    actions = [[E, STAY], [N, STAY], [S, STAY], [STAY, STAY]]
    traj = _roundtrip(_traj(4, states=states, actions=actions), tmp_path)
    assert M.blocking_rate(traj) == pytest.approx(1 / 4)


def test_subtasks_abandoned(tmp_path):
    # onion -> dish without an onion pickup: abandoned; dish -> none right after a dish pickup: completed;
    # the skill running when the log ends is not abandoned.
    skills = [[ONION, None], [ONION, None], [DISH, None], [DISH, None], [None, None], [POT, None]]
    events = [[[], []], [[], []], [[], []], [["pickup:dish"], []], [[], []], [[], []]]
    traj = _roundtrip(_traj(6, skills=skills, events=events), tmp_path)
    assert M.subtasks_abandoned(traj) == 1


def test_belief_metrics_on_a_hand_made_reference():
    ego = [DISH, ONION, ONION, DISH, None, DISH]
    truth = [0, 0, 2, 2, 2, -1]              # onion, onion, dish, dish, dish, unknown
    map_skill = [0, 0, 0, 2, 2, 0]
    traj = _traj(6, skills=[[e, None] for e in ego])
    ref = _reference(truth, map_skill, interrupt=[True, False, True, False, True, False],
                     confidence=[0.9, 0.5, 0.95, 0.85, 0.9, 0.1])
    # known truth at t=0..4; MAP right at 0, 1, 3, 4
    assert M.skill_accuracy(traj, ref) == pytest.approx(4 / 5)
    # correct-belief decision points with an active ego skill: t=0 (dish|onion ok), t=1 (onion|onion gap),
    # t=3 (dish|dish gap); t=2 has a wrong MAP, t=4 no ego skill, t=5 unknown truth
    assert M.belief_action_gap_rate(traj, ref) == pytest.approx(2 / 3)
    # confidence >= 0.8 instead: t=0 ok, t=2 (onion|dish) ok, t=3 gap
    assert M.belief_action_gap_rate(traj, ref, confidence_floor=0.8) == pytest.approx(1 / 3)
    # contradictions at 0, 2, 4. t=0: window rows 1..3, row 2 onion|dish complementary -> recovered;
    # t=2: rows 3..5: dish|dish, none, unknown -> not recovered; t=4: only row 5 (unknown) -> not counted
    assert M.comp_at_k(traj, ref, k=3) == pytest.approx(1 / 2)
    assert M.comp_at_k(traj, ref, k=1) == pytest.approx(0.0)
    assert math.isnan(M.comp_at_k(traj, _reference(truth, map_skill), k=3))    # no contradiction at all
    with pytest.raises(M.MetricError):
        M.comp_at_k(traj, ref, k=0)


def test_episode_metrics_on_a_real_episode_agree_with_its_summary():
    from beliefgate.eval.episode import run_episode

    result = run_episode("cramped_room", "bayes-belief", "switch-sourcer-to-plater", seed=1, horizon=120, seat=1)
    m = M.episode_metrics(result.trajectory)
    assert list(m) == list(M.METRICS)
    assert m["reward"] == result.summary["reward"] and m["deliveries"] == result.summary["deliveries"]
    assert m["replans"] == result.summary["replans"] and m["steps"] == 120
    for key in ("map_accuracy", "gap_rate", "duplicate_rate", "failed_interaction_rate", "blocking_rate",
                "intent_accuracy"):
        assert 0.0 <= m[key] <= 1.0, key
    assert m["llm_calls"] == 0 and m["llm_calls_per_step"] == 0


# ----------------------------------------------------------------------------- grid files
GRID = {"name": "tiny", "agents": ["bayes-belief:full", "periodic-10"], "layouts": ["cramped_room"],
        "partners": ["switch-sourcer-to-plater"], "seeds": [0, 1], "seats": [0], "horizon": 30}


def test_grid_files_and_validation(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("agents: [proagent, '{layout}-x']\n", encoding="utf-8")
    with pytest.raises(GridError, match="partners"):
        load_grid(path)
    path.write_text(json.dumps(GRID), encoding="utf-8")
    spec = load_grid(path)  # JSON is YAML too
    assert spec.seed_list == [0, 1]
    (tmp_path / "g.json").write_text(json.dumps({**GRID, "seeds": {"start": 3, "count": 2}}), encoding="utf-8")
    assert load_grid(tmp_path / "g.json").seed_list == [3, 4]
    bad = [({"agents": ["wizard"]}, "unknown agent 'wizard'"), ({"layouts": ["moon"]}, "unknown layout 'moon'"),
           ({"partners": ["robot"]}, "unknown agent 'robot'"), ({"agents": ["periodic-0"]}, "period"),
           ({"seats": [9]}, "seats must be player slots in 0..8"), ({"seeds": [1, 1]}, "duplicate seeds"),
           ({"horizon": 0}, "horizon"), ({"colour": "red"}, "colour"),
           ({"llm": {"base_url": "ftp://x", "model": "m"}}, "base_url")]
    for change, message in bad:
        with pytest.raises(GridError, match=message):
            resolve_grid(parse_grid({**GRID, **change}))
    # counter-passer only plays forced_coordination: skipped elsewhere, and said so
    r = resolve_grid(parse_grid({**GRID, "layouts": ["cramped_room", "forced_coordination"],
                                 "partners": ["plater", {"name": "counter-passer", "group": "passers"}],
                                 "seats": [0, 1]}))
    assert len(r.episodes) == 2 * (2 + 1) * 2 * 2
    assert any("counter-passer on cramped_room" in s for s in r.skipped)
    assert {e.group for e in r.episodes} == {"logistics", "passers"}
    # deterministic names; anything that changes the episode changes the name
    again = resolve_grid(parse_grid({**GRID, "layouts": ["cramped_room", "forced_coordination"],
                                     "partners": ["plater", {"name": "counter-passer", "group": "passers"}],
                                     "seats": [0, 1]}))
    assert [e.log_name for e in r.episodes] == [e.log_name for e in again.episodes]
    longer = resolve_grid(parse_grid({**GRID, "horizon": 31}))
    assert not {e.log_name for e in longer.episodes} & {e.log_name for e in resolve_grid(parse_grid(GRID)).episodes}


# ----------------------------------------------------------------------------- resumable runs
def _by_key(rows):
    return {r["episode_key"]: {k: v for k, v in r.items() if k != "wall_s"} for r in rows}


def _same(a, b):
    assert set(a) == set(b)
    for key in a:
        for col, v in a[key].items():
            w = b[key][col]
            assert (v == w) or (isinstance(v, float) and math.isnan(v) and math.isnan(w)), (key, col, v, w)


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference-run")
    summary = run_grid(parse_grid(GRID), out)
    assert summary.complete and summary.ran == 4
    return out, _by_key(summary.rows)


def test_run_records_carry_the_commit_of_the_code(reference_run):
    import json
    import re

    from beliefgate.provenance import git_commit

    out, _ = reference_run
    run, grid = (json.loads((out / name).read_text()) for name in ("run.json", "grid.json"))
    assert run["commit"] == grid["commit"] == git_commit()
    if run["commit"] is not None:  # a git checkout (the test suite runs from one)
        assert re.fullmatch(r"[0-9a-f]{7,40}(\+dirty)?", run["commit"])


def test_interrupted_run_resumes_without_duplicates_and_reruns_corrupt_logs(tmp_path, reference_run):
    _, expected = reference_run
    notes = []
    first = run_grid(parse_grid(GRID), tmp_path, stop_after=2, report=notes.append)
    assert first.interrupted and first.ran == 2 and len(load_results(tmp_path)) == 2
    second = run_grid(parse_grid(GRID), tmp_path, report=notes.append)
    assert second.ran == 2 and second.skipped_done == 2 and second.complete
    rows = load_results(tmp_path)
    assert len(rows) == 4 and len({r["episode_key"] for r in rows}) == 4
    _same(_by_key(rows), expected)

    # a corrupt log is reported and rerun, not skipped; a lost metric row is re-scored from its log
    logs = sorted(tmp_path.glob("episodes/*/*.jsonl"))
    text = logs[0].read_text().splitlines(keepends=True)
    logs[0].write_text("".join(text[:-2]) + text[-2][: len(text[-2]) // 2])
    Path(str(logs[1])[: -len(".jsonl")] + ".metrics.json").unlink()
    (logs[2].parent / "stale.jsonl.123.tmp").write_text("half")
    notes.clear()
    third = run_grid(parse_grid(GRID), tmp_path, report=notes.append)
    assert third.ran == 1 and third.rescored == 1 and third.skipped_done == 2
    assert any("corrupt log" in n and logs[0].name in n for n in notes), notes
    assert any("re-scoring" in n for n in notes) and any("partial write" in n for n in notes)
    assert not list(tmp_path.rglob("*.tmp"))
    _same(_by_key(load_results(tmp_path)), expected)
    # the CSV carries the same table as the Parquet file
    (tmp_path / "results.parquet").unlink()
    _same(_by_key(load_results(tmp_path)), expected)
    row = load_results(tmp_path)[0]
    assert row["grid"] == "tiny" and row["version"] and row["seed"] in (0, 1) and row["horizon"] == 30


def test_a_failing_episode_is_recorded_and_retried(tmp_path):
    from beliefgate.agents import registry

    class Crash:
        name = "crash-at-5"

        def reset(self, layout, player, seed):
            pass

        def act(self, state, my_events=()):
            if state.timestep == 5:
                raise RuntimeError("boom")
            return STAY

        def info(self):
            return {"skill": None, "replans": 0, "llm_calls": 0}

    registry.register("crash-at-5", lambda name: Crash())
    grid = parse_grid({**GRID, "agents": ["crash-at-5", "periodic-10"], "seeds": [0]})
    summary = run_grid(grid, tmp_path)
    assert len(summary.failed) == 1 and "boom" in summary.failed[0] and len(summary.rows) == 1
    assert not list(tmp_path.glob("episodes/*/crash-at-5*"))
    again = run_grid(grid, tmp_path)
    assert again.ran == 0 and len(again.failed) == 1 and again.skipped_done == 1


def test_process_pool_and_dask_local_cluster_give_identical_metrics(tmp_path, reference_run):
    import psutil

    from beliefgate.eval.executors import DaskExecutor, ProcessPoolExecutorBackend, make_executor

    _, expected = reference_run
    with ProcessPoolExecutorBackend(2) as pool:
        rows = run_grid(parse_grid(GRID), tmp_path / "pool", pool).rows
    _same(_by_key(rows), expected)

    with DaskExecutor("local", workers=2) as dask:
        assert all(a.startswith("tcp://127.0.0.1:") for a in dask.addresses()), dask.addresses()
        procs = [psutil.Process()] + psutil.Process().children(recursive=True)
        listening = [c.laddr for p in procs for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening
        rows = run_grid(parse_grid(GRID), tmp_path / "dask", dask).rows
        # an existing cluster, reached by its scheduler address
        with make_executor(scheduler=dask.client.scheduler.address) as remote:
            assert "Dask cluster at tcp://127.0.0.1" in remote.description
            assert sorted(remote.map_unordered(abs, [-1, -2, 3], lambda item, exc: None)) == [1, 2, 3]
    _same(_by_key(rows), expected)


def test_executor_settings_are_checked():
    from beliefgate.eval.executors import ExecutorError, InlineExecutor, check_scheduler_address, make_executor

    assert isinstance(make_executor(1), InlineExecutor)
    assert check_scheduler_address("10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    for bad in ("bad addr", "tcp://", "http://x"):
        with pytest.raises(ExecutorError):
            check_scheduler_address(bad)
    with pytest.raises(ExecutorError):
        make_executor(0)


# ----------------------------------------------------------------------------- report
def _rows(effect=10.0, seeds=5, noise=1.0, gap_equal=True):
    rng = np.random.default_rng(0)
    rows = []
    for layout in ("cramped_room", "coordination_ring"):
        for partner, group in (("plater", "logistics"), ("onion-sourcer", "sourcing")):
            for seed in range(seeds):
                base = 100 + 10 * rng.standard_normal()
                gap = rng.uniform(0.2, 0.6)
                for agent, shift in (("bayes-belief:no_replan", 0.0), ("bayes-belief:full", effect),
                                     ("periodic-10", 0.0)):
                    row = {k: float("nan") for k in M.METRICS}
                    row.update(agent=agent, layout=layout, partner=partner, group=group, seed=seed, seat=0,
                               horizon=400, version="0.1.0", reward=base + shift + noise * rng.standard_normal(),
                               gap_rate=gap if gap_equal else gap - 0.1 * (agent == "bayes-belief:full"),
                               replans=2.0 if agent == "bayes-belief:full" else 40.0 * (agent == "periodic-10"),
                               comp3=0.8, duplicate_rate=0.1, map_accuracy=0.9)
                    rows.append(row)
    return rows


def test_bootstrap_interval_known_cases():
    mean, lo, hi = bootstrap_mean_ci([1, 2, 3, 4, 5], n_boot=20_000, seed=1)
    assert mean == 3.0 and 1.6 < lo < 2.2 and 3.8 < hi < 4.4   # sd of the mean ~0.63: about 3 -/+ 1.24
    assert bootstrap_mean_ci([1, 2, 3], seed=4, name="a") == bootstrap_mean_ci([1, 2, 3], seed=4, name="a")
    assert math.isnan(bootstrap_mean_ci([2.0])[1])
    # pairs are matched on layout, partner, seat and seed; unmatched and NaN pairs drop out
    cond = [{"layout": "l", "partner": "p", "seat": 0, "seed": s, "m": float(s) + 1} for s in range(4)]
    base = [{"layout": "l", "partner": "p", "seat": 0, "seed": s, "m": float(s)} for s in range(3)]
    base[0]["m"] = float("nan")
    d = paired_bootstrap(cond, base, "m")
    assert d.pairs == 2 and d.units == 2 and d.mean == 1.0 and d.lo == d.hi == 1.0 and d.includes_zero is False


def test_seed_list_reads_the_scripts_seed_ranges():
    assert seed_list("0-19") == list(range(20)) and seed_list("7") == [7]
    assert seed_list("0-2,10,12-13") == [0, 1, 2, 10, 12, 13]
    for bad in ("x", "0-4,,5", "3-y"):
        with pytest.raises(ValueError):
            seed_list(bad)


def test_bootstrap_p_and_holm_known_cases():
    # the p-value inverts the percentile interval: zero in the 95% interval <=> p >= 0.05 (up to resolution)
    rng = np.random.default_rng(7)
    for shift in (0.0, 0.3, 0.6, 1.0, 2.0):
        cond = [{"layout": "l", "partner": "p", "seat": 0, "seed": s, "m": shift + rng.standard_normal()}
                for s in range(12)]
        base = [{"layout": "l", "partner": "p", "seat": 0, "seed": s, "m": 0.0} for s in range(12)]
        d = paired_bootstrap(cond, base, "m", n_boot=4000, name=str(shift))
        assert 0.0 < d.p <= 1.0 and (d.p >= 0.05) == d.includes_zero, (shift, d)
    # identical episodes: p = 1; every resample on one side: the smallest p the resamples can show
    assert bootstrap_p(np.zeros(999)) == 1.0
    assert bootstrap_p(np.full(999, 2.5)) == 2.0 / 1000 == bootstrap_p(np.full(999, -2.5))
    assert math.isnan(paired_bootstrap(cond[:1], base[:1], "m").p)   # one seed: no test
    # Holm (1979): sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, made monotone; NaN is no test
    assert np.allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    out = holm([0.2, float("nan"), 0.01])
    assert np.allclose([out[0], out[2]], [0.2, 0.02]) and math.isnan(out[1])
    assert holm([0.6, 0.9]) == [1.0, 1.0] and holm([]) == []


def test_report_tables_and_zero_statements():
    rows = _rows(effect=10.0)
    text, diffs = build_report(rows, baseline="bayes-belief:no_replan", n_boot=2000, seed=3)
    for title in ("Table 1", "Table 2", "Table 3", "Table 4", "Table 10", "Headline", "Metric definitions"):
        assert f"## {title}" in text, title
    # every differences table's p-values are one Holm family: adjusted >= raw, printed beside the interval
    tested = [d for d in diffs if d.get("p_holm") is not None]
    assert tested and all(d["p_holm"] >= d["p"] for d in tested) and "Holm-adjusted over the" in text
    assert all(d["p_holm"] == 1.0 for d in tested if d["metric"] == "gap_rate" and d["mean"] == 0.0)
    # with another baseline, Table 10 pairs full with no_replan itself (its Table 8)
    other = build_report(rows, baseline="periodic-10", n_boot=500, seed=3)[1]
    t8 = [d for d in other if d["baseline"] == "bayes-belief:no_replan" and d["metric"] == "gap_rate"]
    assert t8 and all(d["mean"] == 0.0 and d.get("p_holm", 1.0) == 1.0 for d in t8)
    assert any("p_holm" in d for d in t8)
    reward_all = [d for d in diffs if d["condition"] == "bayes-belief:full" and d["metric"] == "reward"
                  and d["layout"] is None]
    assert len(reward_all) == 1 and 9.0 < reward_all[0]["lo"] < reward_all[0]["mean"] < reward_all[0]["hi"] < 11.0
    # identical gap rates: every full - no_replan gap interval is [0, 0] and the report says it includes zero
    gap = [d for d in diffs if d["condition"] == "bayes-belief:full" and d["metric"] == "gap_rate"
           and d["baseline"] == "bayes-belief:no_replan"]
    assert gap and all(d["includes_zero"] for d in gap)
    assert "includes zero" in text and "`bayes-belief:full` (gap): every row" in text
    assert "Every one of the" in text  # the reward table: all intervals exclude zero
    # a table from before effective replans: their count and share are unknown, not zero
    assert "`bayes-belief:full` 2.0 (– effective, share –), `periodic-10` 40.0 (– effective, share –)" in text
    # reproducible, and the bootstrap seed matters
    assert build_report(rows, baseline="bayes-belief:no_replan", n_boot=2000, seed=3)[0] == text
    assert build_report(rows, baseline="bayes-belief:no_replan", n_boot=2000, seed=4)[0] != text
    with pytest.raises(ReportError, match="baseline 'nobody'"):
        Report(rows, baseline="nobody")
    with pytest.raises(ReportError, match="empty"):
        Report([])


# ----------------------------------------------------------------------------- CLI
def _cli(*args, check=True, timeout=300):
    env = {**os.environ, "COLUMNS": "200"}  # rich wraps at the terminal width
    proc = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"beliefgate {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_cli_run_report_end_to_end(tmp_path, reference_run):
    _, expected = reference_run
    grid = tmp_path / "grid.yaml"
    import yaml

    grid.write_text(yaml.safe_dump(GRID), encoding="utf-8")
    out = tmp_path / "run"
    summary = json.loads(_cli("eval", "run", str(grid), "--out", str(out), "--workers", "2", "--json").stdout)
    assert summary["complete"] and summary["ran"] == 4 and "process pool" in summary["executor"]
    _same(_by_key(load_results(out)), expected)
    again = _cli("eval", "run", str(grid), "--out", str(out), "--workers", "1", "--report", str(tmp_path / "r.md"),
                 "--baseline", "periodic-10")
    assert "already done 4" in again.stdout and "bayes-belief:full" in again.stdout
    report = (tmp_path / "r.md").read_text()
    assert "## Table 1" in report and "that condition − `periodic-10`" in report
    printed = _cli("eval", "report", str(out), "--baseline", "periodic-10", "--bootstrap", "500").stdout
    assert printed.startswith("# Evaluation report: tiny")
    data = json.loads(_cli("eval", "report", str(out), "--json").stdout)
    assert data["baseline"] == "bayes-belief:full" and data["differences"]
    for args, message in ((("eval", "report", str(out), "--baseline", "nobody"), "not a condition"),
                          (("eval", "report", str(tmp_path)), "no results table"),
                          (("eval", "run", str(tmp_path / "missing.yaml"), "--out", str(out)), "cannot read grid"),
                          (("eval", "run", str(grid), "--out", str(out), "--scheduler", "not an address"),
                           "--scheduler")):
        proc = _cli(*args, check=False)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**GRID, "agents": ["wizard"]}), encoding="utf-8")
    proc = _cli("eval", "run", str(bad), "--out", str(out), check=False)
    assert proc.returncode == 2 and "unknown agent 'wizard'" in proc.stderr


def test_cli_killed_run_completes_on_rerun(tmp_path, reference_run):
    _, expected = reference_run
    import yaml

    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({**GRID, "horizon": 30}), encoding="utf-8")
    out = tmp_path / "run"
    proc = subprocess.Popen([str(BIN), "eval", "run", str(grid), "--out", str(out), "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(out.glob("episodes/*/*.metrics.json")):
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finished = len(list(out.glob("episodes/*/*.metrics.json")))
    assert finished >= 1
    rerun = json.loads(_cli("eval", "run", str(grid), "--out", str(out), "--workers", "1", "--json").stdout)
    # killed between a log and its metric row, an episode is re-scored from its log rather than replayed
    assert rerun["complete"] and rerun["skipped_done"] + rerun["rescored"] + rerun["ran"] == 4
    assert rerun["skipped_done"] >= finished
    rows = load_results(out)
    assert len(rows) == 4 and len({r["episode_key"] for r in rows}) == 4
    _same(_by_key(rows), expected)


def test_report_html_links_one_page_per_episode(reference_run):
    out, expected = reference_run
    proc = _cli("eval", "report", str(out), "--bootstrap", "200", "--html")
    index = out / "reports" / "index.html"
    assert index.is_file() and "episode reports" in proc.stdout
    pages = sorted((out / "reports").rglob("*.html"))
    assert len(pages) == len(expected) + 1  # one per episode plus the index
    text = index.read_text()
    assert all(p.name in text for p in pages if p != index)


def test_grid_builds_llm_only_agents_with_its_client():
    """`overforge:llm` needs a model: a grid with an llm block resolves it (the check builds it with
    the grid's client, no request made), one without names the agent; unknown names still name themselves."""
    llm = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    r = resolve_grid(parse_grid({**GRID, "agents": ["overforge:llm", "proagent"], "llm": llm}))
    assert list(r.llm_agents) == ["overforge:llm", "proagent"]
    assert {e.agent for e in r.episodes} == {"overforge:llm", "proagent"}
    with pytest.raises(GridError, match="overforge:llm.*needs a model"):
        resolve_grid(parse_grid({**GRID, "agents": ["overforge:llm"]}))
    with pytest.raises(GridError, match="unknown agent 'wizard'"):
        resolve_grid(parse_grid({**GRID, "agents": ["wizard"], "llm": llm}))


def test_report_refuses_a_table_that_is_not_its_run_directorys_and_notes_an_incomplete_run(tmp_path, reference_run):
    """A results table copied from another grid, a cell twice, or the core columns missing: one line,
    exit 2; a run with fewer episodes than its grid (or a condition without any) is reported with a
    note saying so, in the report and on the console."""
    import csv
    import shutil

    ref, _ = reference_run

    def copy_with(rows_of):
        run = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        shutil.copytree(ref, run)
        (run / "results.parquet").unlink(missing_ok=True)
        rows = list(csv.DictReader((ref / "results.csv").open()))
        rows = rows_of(rows)
        with (run / "results.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        return run

    foreign = copy_with(lambda rows: [dict(r, grid_digest="0123456789ab") if i == 0 else r
                                      for i, r in enumerate(rows)])
    twice = copy_with(lambda rows: rows + rows[:1])
    bare = copy_with(lambda rows: [{k: v for k, v in r.items() if k != "reward"} for r in rows])
    for run, message in ((foreign, "holds rows of another grid (grid_digest 0123456789ab"),
                         (twice, "holds 1 episode(s) more than once"),
                         (bare, "lacks the columns reward")):
        proc = _cli("eval", "report", str(run), check=False)
        assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, \
            proc.stderr
    partial = copy_with(lambda rows: [r for r in rows if r["agent"] == "bayes-belief:full"][:1])
    proc = _cli("eval", "report", str(partial), "--out", str(tmp_path / "partial.md"))
    note = "incomplete run: 1 of 4 episodes; no episode yet of periodic-10"
    assert note in proc.stderr and f"**{note[0].upper() + note[1:]}.**" in (tmp_path / "partial.md").read_text()
    proc = _cli("eval", "report", str(ref))
    assert "incomplete" not in proc.stdout + proc.stderr


def test_run_directory_housekeeping(tmp_path):
    """A killed run's temporary files beside the tables are removed (and said so); the Parquet table
    is as readable as the CSV (0644); a directory where a table goes is refused before any episode."""
    import stat

    grid = parse_grid({**GRID, "agents": ["balanced"], "seeds": [0], "horizon": 10})
    out = tmp_path / "run"
    out.mkdir()
    (out / ".results.csv.abc123.tmp").write_text("half")
    (out / "results.parquet.xyz.tmp").write_text("half")
    (out / "mine.tmp").write_text("not ours")
    summary = run_grid(grid, out)
    assert not (out / ".results.csv.abc123.tmp").exists() and not (out / "results.parquet.xyz.tmp").exists()
    assert (out / "mine.tmp").exists()
    assert any(".results.csv.abc123.tmp" in n for n in summary.notes)
    if (out / "results.parquet").exists():
        assert stat.S_IMODE((out / "results.parquet").stat().st_mode) == stat.S_IMODE((out / "results.csv").stat().st_mode)
    other = tmp_path / "other"
    (other / "results.csv").mkdir(parents=True)
    with pytest.raises(RunError, match="results.csv is a directory"):
        run_grid(grid, other)
    assert not (other / "episodes").exists()


def test_grid_types_are_strict_and_a_required_bc_partner_is_probed_before_any_episode(tmp_path, monkeypatch):
    for field, value, message in (("horizon", True, "horizon"), ("seats", [False], "seats"),
                                  ("seeds", [True], "seeds must be integers"), ("seeds", ["3"], "seeds must be integers"),
                                  ("seeds", {"start": 0, "count": 0}, "count"),
                                  ("partners", [{"name": "plater", "optional": "yes"}], "optional")):
        with pytest.raises(GridError, match=message):
            resolve_grid(parse_grid({**GRID, field: value}))
    monkeypatch.setenv("BELIEFGATE_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(GridError, match="partner bc cannot play cramped_room .*optional: true"):
        resolve_grid(parse_grid({**GRID, "partners": ["bc"]}))
    optional = resolve_grid(parse_grid({**GRID, "partners": [{"name": "bc", "optional": True}, "plater"]}))
    assert any("optional partner bc" in s for s in optional.skipped)


def test_a_single_episode_refuses_a_partner_restricted_to_other_layouts():
    from beliefgate.envs.overcooked.partners import PartnerLayoutError
    from beliefgate.eval.episode import run_episode

    with pytest.raises(PartnerLayoutError, match="counter-passer does not play cramped_room: it only plays "
                                                  "forced_coordination"):
        run_episode("cramped_room", "balanced", "counter-passer", horizon=5)


def test_templated_agents_and_restricted_egos_in_a_grid(tmp_path):
    """A `{layout}` agent counts as present through its expanded names (no false 'incomplete' note),
    and a scripted partner used as the ego is skipped, with a note, where it does not play."""
    from beliefgate.eval.runner import check_results, load_grid_record

    grid = parse_grid({**GRID, "agents": ["policy-tree:seed:{layout}", "balanced"], "horizon": 10})
    out = tmp_path / "run"
    summary = run_grid(grid, out)
    assert summary.complete
    assert check_results(load_results(out), load_grid_record(out), out) is None
    restricted = resolve_grid(parse_grid({**GRID, "agents": ["counter-passer", "balanced"],
                                          "layouts": ["cramped_room", "forced_coordination"], "horizon": 10}))
    assert any(s.startswith("agent counter-passer on cramped_room: it only plays") for s in restricted.skipped)
    assert {(e.agent, e.layout) for e in restricted.episodes if e.agent == "counter-passer"} == \
        {("counter-passer", "forced_coordination")}


def test_run_summary_says_how_many_calls_fell_back(tmp_path):
    """A grid whose LLM server is unreachable finishes (every call falls back to the rule planner)
    and its summary says so, on the console and in --json, not only in the report."""
    import yaml

    grid = tmp_path / "llm.yaml"
    grid.write_text(yaml.safe_dump({"name": "llm", "agents": ["bayes-belief"], "layouts": ["cramped_room"],
                                    "partners": ["balanced"], "seeds": [0], "seats": [0], "horizon": 20,
                                    "llm": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "timeout_s": 0.2,
                                            "deadline_s": 0.5}}))
    proc = _cli("eval", "run", str(grid), "--out", str(tmp_path / "run"), "--workers", "1")
    assert "fallbacks in 1 of 1 episodes" in proc.stderr, proc.stderr
    proc = _cli("eval", "run", str(grid), "--out", str(tmp_path / "run"), "--workers", "1", "--json")
    data = json.loads(proc.stdout)
    assert data["fallbacks"] > 0 and data["episodes_with_fallbacks"] == 1
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump({**GRID, "agents": ["balanced"], "seeds": [0], "horizon": 10}))
    done = _cli("eval", "run", str(plain), "--out", str(tmp_path / "plain"), "--workers", "1")
    assert "fallbacks in" not in done.stderr
