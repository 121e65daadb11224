"""Scripted episodes, action inference on them, and trajectory logs."""

import json

import pytest

from beliefgate.envs.overcooked.dynamics import infer_actions
from beliefgate.envs.overcooked.layouts import LAYOUTS
from beliefgate.envs.overcooked.partners import PARTNERS, UnknownPartnerError
from beliefgate.envs.trajlog import LogFormatError, TruncatedLogError, read_log
from beliefgate.eval.episode import run_episode

PAIRS = {
    "cramped_room": ("balanced", "onion-sourcer"),
    "asymmetric_advantages": ("plater", "server"),
    "coordination_ring": ("balanced", "switch-sourcer-to-plater"),
    "forced_coordination": ("balanced", "counter-passer"),
    "counter_circuit": ("onion-sourcer", "plater"),
}


@pytest.fixture(scope="module")
def episodes():
    return {layout: run_episode(layout, *PAIRS[layout], seed=3) for layout in LAYOUTS}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scripted_pairs_deliver(episodes, layout):
    assert episodes[layout].summary["deliveries"] >= 1
    assert episodes[layout].summary["reward"] >= 20


def test_action_inference_on_scripted_episodes(episodes):
    total = single = 0
    for result in episodes.values():
        states = result.trajectory.states()
        for t, row in enumerate(result.trajectory.steps):
            for player in range(2):
                actions = infer_actions(states[t], states[t + 1], player, step=t)
                assert row.actions[player] in actions, (result.summary, t, player)
                total += 1
                single += len(actions) == 1
    assert single / total >= 0.95, single / total


def test_ground_truth_skills_are_logged(episodes):
    result = episodes["coordination_ring"]
    skills = [row.skills[1] for row in result.trajectory.steps]
    known = [s for s in skills if s is not None]
    assert len(known) / len(skills) > 0.8
    assert {"pickup_onion", "put_onion_in_pot"} <= set(known)


def test_switching_partner_changes_preference():
    result = run_episode("cramped_room", "balanced", "switch-sourcer-to-plater", seed=5)
    skills = [row.skills[1] for row in result.trajectory.steps]
    first, second = skills[:100], skills[260:]
    assert first.count("pickup_onion") > first.count("pickup_dish")
    assert second.count("pickup_dish") + second.count("fill_dish_with_soup") > second.count("pickup_onion")


def test_seeded_runs_are_reproducible():
    a = run_episode("counter_circuit", "noisy", "balanced", seed=11, horizon=120)
    b = run_episode("counter_circuit", "noisy", "balanced", seed=11, horizon=120)
    assert [r.actions for r in a.trajectory.steps] == [r.actions for r in b.trajectory.steps]


def test_every_partner_is_a_valid_ego():
    for name in PARTNERS:  # on a layout it plays (counter-passer: forced_coordination only)
        layout = PARTNERS[name].layouts[0] if PARTNERS[name].layouts else "cramped_room"
        assert run_episode(layout, name, "balanced", seed=0, horizon=20, seat=1).summary["steps"] == 20
    with pytest.raises(UnknownPartnerError, match="available"):
        run_episode("cramped_room", "chef-bot", "balanced")


def test_log_round_trip(tmp_path):
    path = tmp_path / "ep.jsonl"
    result = run_episode("asymmetric_advantages", "balanced", "noisy", seed=2, horizon=60, log_path=path)
    back = read_log(path)
    assert back.header == result.trajectory.header
    assert back.steps == result.trajectory.steps
    assert back.final == result.trajectory.final
    assert back.header.config["old_dynamics"] is True and back.header.seed == 2


def test_truncated_and_corrupt_logs(tmp_path):
    path = tmp_path / "ep.jsonl"
    run_episode("cramped_room", "balanced", "balanced", seed=0, horizon=30, log_path=path)
    lines = path.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:10]) + lines[10][:25])
    with pytest.raises(TruncatedLogError, match=r"cut.jsonl:11"):
        read_log(cut)
    nofinal = tmp_path / "nofinal.jsonl"
    nofinal.write_text("".join(lines[:-1]))
    with pytest.raises(TruncatedLogError, match="final row"):
        read_log(nofinal)
    assert len(read_log(nofinal, allow_incomplete=True).steps) == 30
    bad = tmp_path / "bad.jsonl"
    row = json.loads(lines[5])
    row["actions"] = "north"
    bad.write_text("".join(lines[:5]) + json.dumps(row) + "\n" + "".join(lines[6:]))
    with pytest.raises(LogFormatError, match=r"bad.jsonl:6") as info:
        read_log(bad)
    message = str(info.value)  # one line: the first error, named, not pydantic's dump
    assert "\n" not in message and "pydantic.dev" not in message and "actions" in message, message


def test_interrupted_run_keeps_written_steps(tmp_path, monkeypatch):
    from beliefgate.envs.overcooked import adapter

    path = tmp_path / "ep.jsonl"
    original = adapter.OvercookedAdapter.step
    calls = {"n": 0}

    def failing_step(self, joint_action):
        calls["n"] += 1
        if calls["n"] == 25:
            raise KeyboardInterrupt
        return original(self, joint_action)

    monkeypatch.setattr(adapter.OvercookedAdapter, "step", failing_step)
    with pytest.raises(KeyboardInterrupt):
        run_episode("cramped_room", "balanced", "balanced", seed=0, horizon=100, log_path=path)
    partial = read_log(path, allow_incomplete=True)
    assert len(partial.steps) == 24 and not partial.complete


def test_eval_report_has_a_fallbacks_column_and_the_reasons():
    from beliefgate.eval import metrics as M
    from beliefgate.eval.report import build_report

    rows = []
    for agent, fell in (("bayes-belief", 0.0), ("llm-judge", 3.0)):
        for seed in range(3):
            row = {k: float("nan") for k in M.METRICS}
            row.update(agent=agent, layout="cramped_room", partner="plater", group="logistics", seed=seed, seat=0,
                       horizon=40, version="x", reward=10.0 + seed, gap_rate=0.2, replans=1.0, fallbacks=fell,
                       fallbacks_planner=0.0, fallbacks_judge=fell, fallbacks_hypothesis=0.0,
                       **{f"fallback_{r}": 0.0 for r in ("unusable_reply", "bad_response", "unavailable", "rejected",
                                                         "budget", "breaker_open", "other")},
                       fallback_deadline=fell)
            rows.append(row)
    text, _ = build_report(rows, n_boot=200)
    table2 = text.split("## Table 2")[1].split("## Table 3")[0]
    assert "fallbacks ↓" in next(line for line in table2.splitlines() if line.startswith("| layout"))
    section = text.split("## LLM fallbacks")[1].split("## ")[0]
    header = next(line for line in section.splitlines() if line.startswith("| condition"))
    assert "deadline" in header and "unavailable" not in header  # only the reasons that occurred
    judge = next(line for line in section.splitlines() if line.startswith("| llm-judge"))
    assert judge.split("|")[3].strip() == "3.0"
    # nothing fell back: no section, and old tables without the columns still report
    text, _ = build_report([{k: v for k, v in r.items() if not k.startswith("fallback")} | {"fallbacks": 0.0}
                            for r in rows], n_boot=200)
    assert "## LLM fallbacks" not in text


def test_fallback_metrics_from_a_log_without_events_are_unknown_per_reason():
    from beliefgate.eval.metrics import fallback_counts

    traj = run_episode("cramped_room", "bayes-belief", "balanced", seed=0, horizon=5).trajectory
    counts = fallback_counts(traj)
    assert counts["fallbacks"] == 0 and all(v == 0 for v in counts.values())
    for row in traj.steps:  # an older log: a cumulative counter only
        row.info[0].pop("fallback_events")
        row.info[0]["fallbacks"] = 2
    traj.final = None
    counts = fallback_counts(traj)
    assert counts["fallbacks"] == 2 and all(v != v for k, v in counts.items() if k != "fallbacks")
