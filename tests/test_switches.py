"""The switch benchmark: detectors on synthetic traces with a known switch, the gate's rules replayed, the CLI."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from beliefgate import Gate, GateParams
from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.eval.detectors import (
    BeliefTrace,
    DetectorInputError,
    EvidenceTrace,
    bocpd_statistic,
    cusum_alarms,
    cusum_statistic,
    naive_alarms,
    score_alarms,
    stable_map_alarms,
    threshold_alarms,
)
from beliefgate.eval.replay import score_switches

BIN = Path(sys.executable).parent / "beliefgate"
K, A = 3, 4


def synthetic(switch_at=60, T=120, seed=0, noise=0.15, completion_at=None):
    """A partner on skill 0 that silently switches to skill 1 at ``switch_at``.

    Skill k prefers action k (prob 0.7, the rest share 0.3); the partner takes its skill's
    action, or a uniformly random one with probability ``noise``.
    """
    rng = np.random.default_rng(seed)
    table = np.full((K, A), 0.3 / (A - 1))
    for k in range(K):
        table[k, k] = 0.7
    logp = np.log(table)
    steps, truth = [], []
    for t in range(T):
        z = 0 if t < switch_at else 1
        a = int(rng.integers(A)) if rng.random() < noise else z
        mask = np.zeros(A, dtype=bool)
        mask[a] = True
        steps.append(StepEvidence(logp, mask, 1.0, 2 if t == completion_at else None, None))
        truth.append(z)
    hidden = np.zeros(T, dtype=bool)
    if switch_at < T:
        hidden[switch_at] = True
    return steps, hidden


def belief_of(steps, params):
    gate = Gate.from_logprobs(K, params)
    cols = {k: [] for k in ("map", "conf", "stable", "logl", "logla", "cp", "w", "intr", "cpf")}
    for ev in steps:
        d = gate.step_evidence(ev)
        m = d.info.map_skill
        cols["map"].append(m)
        cols["conf"].append(d.info.confidence)
        cols["stable"].append(d.info.stable)
        cols["logl"].append(d.info.stable_map.log_l / params.likelihood_scale)
        row = ev.logprobs[m]
        cols["logla"].append(row[ev.action_mask].max() - row.max())
        cols["cp"].append(d.changepoint_prob)
        cols["w"].append(d.info.weight)
        cols["intr"].append(d.info.stable_map.interrupt)
        cols["cpf"].append(d.changepoint)
    return BeliefTrace(*(np.asarray(cols[k]) for k in ("map", "conf", "stable", "logl", "logla", "cp", "w",
                                                        "intr", "cpf")))


def test_evidence_trace_from_steps_sums_consistent_actions():
    logp = np.log(np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]))
    ev = EvidenceTrace.from_steps([StepEvidence(logp, np.array([True, True, False]), 0.35, 1, np.array([1, 0]))])
    assert ev.loglik[0] == pytest.approx(np.log([0.8, 0.2]))
    assert ev.weight[0] == 0.35 and ev.completed[0] == 1 and ev.feasible[0].tolist() == [True, False]
    with pytest.raises(DetectorInputError):
        EvidenceTrace(np.zeros((3, 2)), np.ones(2), -np.ones(3), np.ones((3, 2)))


def test_replayed_gate_rules_equal_the_gate_decisions():
    """One gate pass + the replayed rules give exactly the gate's interrupts and change-point firings."""
    for params in (GateParams(), GateParams(tau_obs=0.5, cooldown=3, n_stable=2, confidence_floor=0.6,
                                            likelihood_scale=2.0, cp_threshold=0.5, cp_release=0.1, cp_cooldown=4)):
        for seed in range(3):
            steps, _ = synthetic(seed=seed, completion_at=30)
            b = belief_of(steps, params)
            assert b.interrupt.any()
            mine = stable_map_alarms(b, params.tau_obs, params.confidence_floor, params.n_stable, params.cooldown,
                                     params.likelihood_scale)
            assert np.array_equal(mine, b.interrupt)
            cp = threshold_alarms(b.cp_prob, params.cp_threshold, params.cp_release, params.cp_cooldown)
            assert np.array_equal(cp, b.cpf if hasattr(b, "cpf") else b.changepoint)


def test_every_detector_finds_the_known_switch_quickly():
    steps, hidden = synthetic(noise=0.1)
    ev = EvidenceTrace.from_steps(steps)
    b = belief_of(steps, GateParams())
    found = {
        "stable-MAP": stable_map_alarms(b, 0.5, 0.7, 1, 5),
        "naive": naive_alarms(b, 0.5),
        "CUSUM": cusum_alarms(ev, b.map_skill, 3.0),
        "BOCPD": threshold_alarms(bocpd_statistic(ev, hazard=0.02).prob, 0.5, 0.3),
        "change-point": threshold_alarms(b.cp_prob, 0.5, 0.3),
    }
    for name, alarms in found.items():
        sc = score_alarms(alarms, hidden, 10)
        assert sc.detected == [True], name
        assert sc.delays[0] <= 6, (name, sc.delays)
    # the accumulating detectors are quiet before the switch, the one-step naive rule is not
    for name in ("CUSUM", "BOCPD", "change-point"):
        assert found[name][:60].sum() <= 1, name
    assert found["naive"][:60].sum() > found["CUSUM"][:60].sum()


def test_cusum_and_bocpd_react_to_evidence_not_to_time():
    steps, hidden = synthetic(switch_at=60, noise=0.0)
    ev = EvidenceTrace.from_steps(steps)
    stat, _ = cusum_statistic(ev, np.zeros(len(steps), dtype=int))
    assert stat[:60].max() == 0.0 and stat[62] > stat[61] > stat[60] > 0  # grows by the LLR per step
    assert stat[60] == pytest.approx(np.log(0.7) - np.log(0.1))
    res = bocpd_statistic(ev, hazard=0.02, recent=6)
    assert res.prob[:58].max() < 0.2 and res.prob[61:64].max() > 0.8
    assert res.map_run_length[70] == pytest.approx(10, abs=2)  # the run started near the switch
    # a visible completion is not a hidden change point: the statistic restarts at 0
    steps2, _ = synthetic(switch_at=200, T=80, noise=0.0, completion_at=40)
    res2 = bocpd_statistic(EvidenceTrace.from_steps(steps2), hazard=0.02)
    assert res2.prob[41:50].max() < 0.2
    # no evidence (weight 0), no change
    flat = EvidenceTrace(ev.loglik, np.zeros(len(steps)), ev.completed, ev.feasible)
    assert bocpd_statistic(flat, hazard=0.02).prob.max() < 0.2
    assert cusum_statistic(flat, np.zeros(len(steps), dtype=int))[0].max() == 0


def test_bocpd_posterior_mass_is_accounted_for():
    steps, _ = synthetic(T=300, noise=0.3)
    ev = EvidenceTrace.from_steps(steps)
    small = bocpd_statistic(ev, hazard=0.05, max_runs=8)
    assert small.max_runs_kept <= 9 and small.pruned_mass > 0  # dropped mass is reported (summed over steps)
    res = bocpd_statistic(ev, hazard=0.05)
    assert res.pruned_mass < small.pruned_mass and res.pruned_mass < 1e-6
    assert np.all((res.prob >= 0) & (res.prob <= 1 + 1e-12))
    with pytest.raises(DetectorInputError):
        bocpd_statistic(EvidenceTrace.from_steps(steps), hazard=0.0)


def test_score_alarms_matches_score_switches():
    rng = np.random.default_rng(3)
    for _ in range(20):
        alarms = rng.random(200) < 0.05
        hidden = rng.random(200) < 0.02
        mine = score_alarms(alarms, hidden, 10)
        ref = score_switches(alarms, hidden, 10)
        assert len(mine.detected) == ref.switches and sum(mine.detected) == ref.detected
        assert mine.false_alarms == ref.false_alarms
        if ref.switches:
            assert np.mean(mine.delays) == pytest.approx(ref.mean_delay)


def test_threshold_and_spacing_rules():
    p = np.array([0.0, 0.6, 0.7, 0.1, 0.6, 0.6, 0.0, 0.9])
    assert threshold_alarms(p, 0.5, 0.2).tolist() == [0, 1, 0, 0, 1, 0, 0, 1]
    assert threshold_alarms(p, 0.5, 0.05).tolist() == [0, 1, 0, 0, 0, 0, 0, 1]
    # suppressed by the cooldown at t=4 it stays armed and fires at t=5; t=7 is inside the next cooldown
    assert threshold_alarms(p, 0.5, 0.2, cooldown=4).tolist() == [0, 1, 0, 0, 0, 1, 0, 0]
    # the stable-MAP rule's cooldown: contradictions at every step but t=3, cooldown 2
    contra = np.array([1, 1, 1, 0, 1, 1], dtype=bool)
    n = len(contra)
    b = BeliefTrace(np.zeros(n, int), np.ones(n), np.full(n, 5), np.where(contra, -10.0, 0.0), np.zeros(n),
                    np.zeros(n), np.ones(n), np.zeros(n, bool), np.zeros(n, bool))
    assert stable_map_alarms(b, 0.2, 0.7, 1, 2).tolist() == [1, 0, 1, 0, 1, 0]
    excluded_first = dataclasses.replace(b, weight=np.where(np.arange(n) == 0, 0.0, 1.0))
    assert stable_map_alarms(excluded_first, 0.2, 0.7, 1, 2).tolist() == [0, 1, 0, 0, 1, 0]  # weight 0: no alarm
    with pytest.raises(DetectorInputError):
        threshold_alarms(p, 0.5, 0.6)


def test_benchmark_on_recorded_episodes_gates_beat_naive(tmp_path):
    """Real episodes: the gates' replayed rules equal their decisions, and the gate beats the naive rule."""
    from beliefgate.eval import switches as sw

    params = GateParams()
    traces = sw.record_all(["coordination_ring"], ["bp-g1-dish-hi-eager-hi", "bp-g3-onion-lo-stock-lo"], [0, 1],
                           params=params, cache_dir=tmp_path)
    assert sum(tr.num_switches for tr in traces) >= 4
    assert len(list(tmp_path.glob("*.jsonl"))) == 4
    again = sw.record_all(["coordination_ring"], ["bp-g1-dish-hi-eager-hi"], [0], params=params, cache_dir=tmp_path)
    assert np.array_equal(again[0].hidden, traces[0].hidden)
    assert np.array_equal(again[0].evidence.loglik, traces[0].evidence.loglik)
    beliefs = [sw.gate_pass(tr, params) for tr in traces]
    for b in beliefs:
        mine = stable_map_alarms(b, params.tau_obs, params.confidence_floor, params.n_stable, params.cooldown)
        assert np.array_equal(mine, b.interrupt)
        assert np.array_equal(threshold_alarms(b.cp_prob, params.cp_threshold, params.cp_release), b.changepoint)
    # the "action" reference's ratio is the recorded log_l_action; the belief itself does not depend on it
    for tr, b in zip(traces, beliefs):
        a = sw.gate_pass(tr, params.replace(reference="action"))
        assert np.allclose(a.log_l, b.log_l_action) and np.array_equal(a.map_skill, b.map_skill)
        assert np.allclose(a.cp_prob, b.cp_prob)
    # the CUSUM gate on real evidence: its interrupts are the benchmark's CUSUM replay at cusum_h
    cusum_params = params.replace(gate="cusum")
    for tr, b in zip(traces, beliefs):
        gate = Gate.from_logprobs(len(tr.skill_names), cusum_params, list(tr.skill_names))
        own = np.array([gate.step_evidence(ev).interrupt for ev in tr.steps])
        assert np.array_equal(own, cusum_alarms(tr.evidence, b.map_skill, cusum_params.cusum_h))
    bench = sw.evaluate_traces(traces, params, n_boot=200, beliefs=beliefs)
    assert set(bench.sweeps) == set(sw.METHODS)
    cusum_op = bench.sweeps["CUSUM (LLR)"].operating_point
    assert cusum_op is not None and cusum_op.value == params.cusum_h
    gate = bench.sweeps["stable-MAP gate"].operating_point
    assert gate.switches == bench.switches and gate.detection_rate > 0
    lo, hi = gate.detection_ci
    assert lo <= gate.detection_rate <= hi
    naive = sw.naive_false_alarms_at(bench, gate.mean_delay)
    assert naive is not None and gate.fa_per_100 < naive
    sep = sw.separability(traces)
    assert sep["switches"] == bench.switches and sep["share_llr_le_0"] < 0.5
    assert sw.summary_rows(bench)[0].endswith("95% bootstrap CIs")
    one = sw.evaluate_traces(traces[:1], params, n_boot=200, beliefs=beliefs[:1])
    assert one.episodes == 1 and sw.summary_rows(one)[0].endswith("one episode: no bootstrap CIs")


def test_cli_end_to_end_two_seeds(tmp_path):
    out, png, md = tmp_path / "s.json", tmp_path / "s.png", tmp_path / "s.md"
    proc = subprocess.run([str(BIN), "switches", "--seeds", "2", "--first-seed", "5", "--layout", "coordination_ring",
                           "--partner", "bp-g1-dish-lo-eager-lo", "--partner", "bp-g2-onion-lo-pot-lo",
                           "--n-boot", "200", "--out", str(out), "--plot", str(png), "--md", str(md)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "CUSUM" in proc.stdout and "BOCPD" in proc.stdout and "naive rule needs" in proc.stdout
    data = json.loads(out.read_text())
    assert data["config"]["seeds"] == [5, 6] and data["episodes"] == 4
    assert data["config"]["gate_params"] == GateParams().model_dump(mode="json")
    for name, m in data["methods"].items():
        assert len(m["points"]) >= 5, name
        for p in m["points"]:
            assert 0 <= p["detection_rate"] <= 1 and p["false_alarms_per_100_steps"] >= 0
        for p in m["points"]:
            sub = p["detection_by_subset"]
            assert set(sub) == {"established", "identifiable"}
            assert all(v["detected"] <= v["switches"] <= p["switches"] for v in sub.values())
    sep = data["diagnostics"]["separability"]
    assert 0 <= sep["share_identifiable"] <= sep["share_llr_gt_log10"] <= 1
    assert "identifiable" in proc.stdout
    text = md.read_text()
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| method | setting | detection | established (") and len(table) == 1 + 8
    assert f"Seeds 5-6, layouts coordination_ring, 2 partners, commit {data['config']['commit']}" in text
    assert f"{sep['share_identifiable']:.1%} of the switches identifiable" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    bad = subprocess.run([str(BIN), "switches", "--seeds", "1", "--partner", "no-such-partner"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no-such-partner" in bad.stderr
    bad = subprocess.run([str(BIN), "switches", "--tune", "--seeds", "1", "--md", str(tmp_path / "t.md")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--tune" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "t.md").exists()


@pytest.mark.slow
def test_tuning_finds_a_setting_within_the_budget():
    from beliefgate.eval import switches as sw

    result = sw.tune_gate(["coordination_ring"], ["bp-g1-dish-hi-eager-hi", "bp-g2-onion-lo-pot-lo"], [1000, 1001],
                          belief_grid={"beta_epsilon": [(2.0, 0.1)], "hazard": [0.05], "reference": ["skill"]})
    for gate in ("stable_map", "changepoint"):
        best = result["best"][gate]
        # "best" is chosen only among the settings within the budget that detect a switch
        usable = [r for r in result["rows"] if r["gate"] == gate and r["fa_per_100"] <= 1.0 and r["detection_rate"] > 0]
        assert (best is None) == (not usable)
        if best is None:
            with pytest.raises(sw.SwitchBenchmarkError, match="detects any switch"):
                sw.recommended_params(result, gate)
            continue
        assert best["fa_per_100"] <= 1.0 and best["detection_rate"] == max(r["detection_rate"] for r in usable)
        params = sw.recommended_params(result, gate)
        if gate == "stable_map":
            assert params.tau_obs == best["tau_obs"] and params.cooldown == best["cooldown"]
    assert any(result["best"].values())


def _episode(steps, truth, hidden):
    from beliefgate.eval.switches import EpisodeTrace

    return EpisodeTrace("synthetic", "p", 0, ("s0", "s1", "s2"), steps, EvidenceTrace.from_steps(steps),
                        np.asarray(hidden), np.asarray(truth))


def test_switch_evidence_measures_both_halves_of_a_switch():
    """An old skill that ran 60 steps is established and identifiable; one that ran a single step
    (after a visible completion) is neither: its one action cannot establish it."""
    from beliefgate.eval import switches as sw

    steps, hidden = synthetic(switch_at=60, T=120, seed=3)
    truth = np.where(np.arange(120) < 60, 0, 1)
    ev = sw.switch_evidence(_episode(steps, truth, hidden))
    loglik = EvidenceTrace.from_steps(steps).loglik
    assert ev.steps.tolist() == [60] and ev.pre_steps.tolist() == [60]
    assert ev.pre_llr[0] == pytest.approx(np.sum(loglik[:60, 0] - loglik[:60, 1]))
    assert ev.post_llr[0] == pytest.approx(np.sum(loglik[60:70, 1] - loglik[60:70, 0]))
    assert ev.established.tolist() == [True] and ev.identifiable.tolist() == [True]

    # the partner completed skill 2 at step 58, started skill 0 at 59 and switched to 1 at 60
    steps, hidden = synthetic(switch_at=60, T=120, seed=3, completion_at=58)
    truth = np.where(np.arange(120) < 59, 2, np.where(np.arange(120) < 60, 0, 1))
    ev = sw.switch_evidence(_episode(steps, truth, hidden))
    assert ev.pre_steps.tolist() == [1]
    loglik = EvidenceTrace.from_steps(steps).loglik
    assert ev.pre_llr[0] == pytest.approx(loglik[59, 0] - loglik[59, 1])
    assert abs(ev.pre_llr[0]) < sw.IDENTIFIABLE_LLR  # one action is at most 7:1 here
    assert ev.established.tolist() == [False] and ev.identifiable.tolist() == [False]
    sep = sw.separability([_episode(steps, truth, hidden)])
    assert sep["share_identifiable"] == 0.0 and sep["share_pre_one_step"] == 1.0
    assert sep["share_identifiable_of_established"] is None
    # a benchmark with no established switch still writes its Markdown ("-" for what it cannot say)
    bench = sw.evaluate_traces([_episode(steps, truth, hidden)], GateParams(), n_boot=50)
    text = sw.summary_markdown(bench)
    assert "(old skill ran ≥ 3 steps; - of those identifiable)" in text

    # an excluded step (weight 0) before the switch carries no evidence, even with a -inf loglik
    steps = list(steps)
    a = int(np.flatnonzero(steps[59].action_mask)[0])
    lp = np.array(steps[59].logprobs, dtype=float)
    lp[1, :] = np.log(0.25)
    lp[1, a] = -np.inf
    lp[1, (a + 1) % A] = np.log(0.75)
    steps[59] = StepEvidence(lp, steps[59].action_mask, 0.0, None, None)
    ev = sw.switch_evidence(_episode(steps, truth, hidden))
    assert ev.pre_llr.tolist() == [0.0]


def test_detection_by_subset_counts_only_the_subset():
    from beliefgate.eval.detectors import EpisodeScore
    from beliefgate.eval.switches import SwitchBenchmarkError, summarise

    scores = [EpisodeScore([2, 10, 1], [True, False, True], 0, 100), EpisodeScore([10], [False], 1, 100)]
    masks = [np.array([True, True, False]), np.array([True])]
    p = summarise(scores, 1.0, n_boot=50, subsets={"x": masks})
    assert p.by_subset["x"] == (3, 1, pytest.approx(1 / 3))
    assert p.detection_rate == pytest.approx(0.5)
    with pytest.raises(SwitchBenchmarkError, match="2 episodes"):
        summarise(scores, 1.0, n_boot=50, subsets={"x": masks[:1]})


def _sw(*args, cwd=None, timeout=300):
    return subprocess.run([str(BIN), "switches", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def test_cli_refuses_what_it_would_ignore_or_lose_before_any_episode(tmp_path):
    """Checked before the first episode, one line, exit 2, nothing written: a figure suffix matplotlib
    cannot write or no suffix at all, two outputs naming one file, --cache/--params with --tune (a
    search ignores them), the same layout by its alias, the same partner file by two paths."""
    (tmp_path / "p.json").write_text('{"tau_obs": 0.3}')
    cases = [(["--plot", "fig.txt"], "--plot fig.txt: a figure file needs one of the suffixes"),
             (["--plot", "fig"], "--plot fig: a figure file needs one of the suffixes"),
             (["--out", "same.out", "--md", "same.out"], "--out and --md name the same file same.out"),
             (["--tune", "--cache", "c"], "--cache and --params apply to a benchmark run"),
             (["--tune", "--params", "p.json"], "--cache and --params apply to a benchmark run"),
             (["--layout", "coordination_ring", "--layout", "random1"],
              "--layout: coordination_ring (as coordination_ring, random1) given more than once")]
    for args, message in cases:
        proc = _sw("--seeds", "1", *args, cwd=tmp_path)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


def test_tuning_without_a_hidden_switch_is_refused_and_writes_nothing(tmp_path):
    out, params_out = tmp_path / "t.json", tmp_path / "tp.json"
    proc = _sw("--tune", "--layout", "coordination_ring", "--partner", "balanced", "--seeds", "1", "--horizon", "60",
               "--out", str(out), "--params-out", str(params_out))
    assert proc.returncode == 2 and "no hidden switch in these 1 episodes" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists() and not params_out.exists()


def test_a_benchmark_without_switches_writes_valid_json_and_says_so(tmp_path):
    out = tmp_path / "b.json"
    proc = _sw("--layout", "coordination_ring", "--partner", "balanced", "--seeds", "2", "--horizon", "60",
               "--n-boot", "100", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c} in the output"))
    assert "nan" not in proc.stdout and "(no hidden switch to detect)" in proc.stdout


def test_a_cache_entry_that_is_damaged_or_another_episode_is_played_again(tmp_path):
    from beliefgate.eval.switches import play_cached

    cache = tmp_path / "cache"
    first = play_cached("coordination_ring", "bp-g1-dish-hi-eager-hi", 0, 60, "balanced", cache)
    other = play_cached("coordination_ring", "bp-g1-dish-hi-eager-hi", 1, 60, "balanced", cache)
    entry0, entry1 = sorted(cache.glob("*.jsonl"), key=lambda p: p.name)
    assert "seed0" in entry0.name and "seed1" in entry1.name
    entry0.write_bytes(entry1.read_bytes())  # a copied file: seed 1's episode under seed 0's name
    replaced: list = []
    again = play_cached("coordination_ring", "bp-g1-dish-hi-eager-hi", 0, 60, "balanced", cache, replaced)
    assert replaced == [f"{entry0.name} (it holds another episode)"] and again.header.seed == 0
    assert [r.actions for r in again.steps] == [r.actions for r in first.steps] != [r.actions for r in other.steps]
    entry0.write_text(entry0.read_text()[:500])  # cut short
    replaced.clear()
    again = play_cached("coordination_ring", "bp-g1-dish-hi-eager-hi", 0, 60, "balanced", cache, replaced)
    assert len(replaced) == 1 and [r.actions for r in again.steps] == [r.actions for r in first.steps]
    assert not list(cache.glob("*.partial")) and not list(cache.glob(".*.partial"))


def test_file_partners_are_named_by_digest_in_the_result(tmp_path):
    from beliefgate.envs.overcooked.partners import shipped_partners
    from beliefgate.eval.switches import partner_files

    source = Path(shipped_partners()["bp-g1-dish-hi-eager-hi"].source)
    assert partner_files(["bp-g1-dish-hi-eager-hi"]) == {}  # named partners: the config is as before
    mine = tmp_path / "mine.yaml"
    import beliefgate.envs.overcooked as pkg

    text = (Path(pkg.__file__).parent / source).read_text().replace("bp-g1-dish-hi-eager-hi", "mine")
    mine.write_text(text)
    first = partner_files([str(mine)])["partner_files"][str(mine)]
    mine.write_text(text.replace("noise: 0.05", "noise: 0.1") if "noise: 0.05" in text else text + "noise: 0.2\n")
    from beliefgate.envs.overcooked.partners import PARTNERS

    assert PARTNERS[str(mine)]  # re-read (the registry keys files by path and modification time)
    assert partner_files([str(mine)])["partner_files"][str(mine)] != first


def test_best_is_chosen_only_among_settings_that_detect_and_few_seeds_are_named():
    """`switches --seeds 4` presented tau_obs=0.005 with 0.0% detection as the best setting at <= 1 FA/100."""
    from beliefgate.eval import switches as sw

    def point(value, detected, fa):
        return sw.PointStats(value, 40, detected, detected / 40, (0.0, 1.0), 3.0, (2.0, 4.0), 3.0, int(fa * 8), 800,
                             fa, (0.0, fa + 1))

    silent, loud, good = point(0.005, 0, 0.0), point(0.5, 30, 2.5), point(0.2, 12, 0.8)
    bench = sw.SwitchBenchmark({"seeds": [0, 1, 2, 3], "window": 10}, 8, 40, 800,
                               {"stable-MAP gate": sw.Sweep("stable-MAP gate", "tau_obs", [silent, loud])}, [])
    assert bench.best_point("stable-MAP gate", 1.0) is None  # the silent setting is no "best"
    title, _, rows = sw.summary_rows(bench, 1.0)
    assert rows[0][1] == "no tau_obs within 1 FA/100 detects any switch"
    assert "only 4 seeds: too few to choose a setting" in title
    bench.sweeps["stable-MAP gate"].points.append(good)
    assert bench.best_point("stable-MAP gate", 1.0) is good
    bench.config["seeds"] = list(range(20))
    assert "too few" not in sw.summary_rows(bench, 1.0)[0]
