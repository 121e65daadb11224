"""Every gate firing that does not become a replan is logged with the filter that stopped it (issue #47):
the planning agent writes ``gate_veto`` (filter and numbers) and ``suppressed_reason`` at that step,
:func:`~beliefgate.eval.metrics.gate_firings` counts them, the report draws them and the demo's
verdict says why two conditions played the same episodes."""

from __future__ import annotations

import pytest

from beliefgate.eval.episode import run_episode
from beliefgate.eval.metrics import GateFirings, gate_firings

SWITCHER = "switch-sourcer-to-plater"


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vetoes")
    return {ego: run_episode("cramped_room", ego, SWITCHER, seed=0, horizon=150, seat=0,
                             log_path=folder / f"{ego.replace(':', '_')}.jsonl")
            for ego in ("bayes-belief", "bayes-belief:no_replan")}


@pytest.fixture(scope="module")
def episodes(logs):
    return {ego: result.trajectory for ego, result in logs.items()}


def _ego_infos(traj):
    return [row.info[0] for row in traj.steps]


def test_every_firing_is_an_interrupt_or_has_a_veto_with_its_numbers(episodes):
    for ego, traj in episodes.items():
        infos = _ego_infos(traj)
        fired = [i for i in infos if i["gate_fired"]]
        assert fired, f"{ego}: the switching partner should fire the gate at least once in 150 steps"
        for info in infos:
            veto = info["gate_veto"]
            if not info["gate_fired"] or info["interrupt"]:
                assert veto is None
                continue
            assert isinstance(veto, dict) and info["suppressed_reason"] == veto["filter"]
            if veto["filter"] == "still_complementary":
                assert veto["mass"] >= veto["threshold"]
            if veto["filter"] == "no_running_skill":
                assert veto["plan_reason"] == info["reason"] and info["replanned"]
            if ego == "bayes-belief:no_replan" and veto["filter"] != "no_running_skill":
                assert veto == {"filter": "condition", "condition": "no_replan"}
        counted = gate_firings(traj)
        assert counted.logged and counted.fired == len(fired)
        assert counted.interrupts + counted.vetoed == counted.fired
        # a contradiction the gate itself suppressed carries the gate's reason, not a veto
        gate_level = [i for i in infos if i["contradiction"] and not i["gate_fired"]]
        assert all(i["suppressed_reason"] in ("unstable_map", "low_confidence", "cooldown", "ego_idle")
                   for i in gate_level)


def test_counts_add_up_and_describe_themselves():
    a = GateFirings(3, 1, (("no_alternative", 2),), True, True)
    b = GateFirings(2, 0, (("plan_stands", 1), ("no_alternative", 1)), True, True)
    total = a + b
    assert (total.fired, total.interrupts, total.vetoed) == (5, 1, 4)
    assert total.describe() == "5 gate firings: 1 interrupt, 4 vetoed (no_alternative 3, plan_stands 1)"
    assert "vetoes not logged" in GateFirings(4).describe()
    assert GateFirings(0, 0, (), True, False).why_identical() == "it keeps no gate"


def test_the_report_draws_vetoes_on_the_suppressed_track(episodes):
    from beliefgate.viewer.report import report_data

    data = report_data(episodes["bayes-belief:no_replan"])
    assert data["present"]["suppressed_reason"] is True
    assert data["gate"]["suppressed"].get("condition")


def test_the_demo_verdict_names_the_vetoes():
    from beliefgate.eval.demo import comparison_verdict

    def row(agent, firings):
        episodes = [{"layout": "cramped_room", "partner": "p", "seat": 0, "seed": s, "reward": r}
                    for s, r in enumerate([200.0, 220.0])]
        return {"agent": agent, "seeds": 2, "reward": 210.0, "effective_replans": 0.0, "replans": 0.0,
                "episode_rows": episodes, "firings": firings}

    rows = [row("bayes-belief", GateFirings(18, 0, (("no_alternative", 12), ("plan_stands", 6)), True, True)),
            row("bayes-belief:no_belief", GateFirings())]
    line = comparison_verdict(rows, n_boot=200)
    assert ("it never replanned here, so it played the same episodes as no_belief: all 18 gate firings were "
            "vetoed (no_alternative 12, plan_stands 6)") in line
    rows[0]["firings"] = GateFirings(0, 0, (), True, True)
    assert "no_belief: its gate never fired (" in comparison_verdict(rows, n_boot=200)


def test_eval_report_counts_vetoes_and_says_when_conditions_played_the_same_episodes(tmp_path, logs, episodes):
    """`eval report` showed bayes-belief:full and no_belief with equal rows and no word on why."""
    import shutil
    from beliefgate.eval.metrics import deliveries, duplicate_skill_rate, replans, reward
    from beliefgate.eval.report import Report, gate_firings_by_condition

    traj = episodes["bayes-belief"]
    rows = []
    for agent in ("bayes-belief:full", "bayes-belief:twin"):
        log = f"{agent.replace(':', '_')}.jsonl"
        shutil.copy(logs["bayes-belief"].log_path, tmp_path / log)
        metrics = {"reward": reward(traj), "deliveries": deliveries(traj), "replans": replans(traj),
                   "duplicate_rate": duplicate_skill_rate(traj), "gap_rate": 0.25, "steps": len(traj.steps)}
        rows.append({**metrics, "agent": agent, "layout": "cramped_room", "partner": SWITCHER,
                     "group": "g", "seat": 0, "seed": 0, "horizon": 150, "log": log})
    rep = Report(rows, n_boot=200, firings=gate_firings_by_condition(tmp_path, rows, ["bayes-belief:full"]))
    lines = rep.veto_lines(["bayes-belief:full", "bayes-belief:twin"])
    text = " ".join(lines)
    assert "`bayes-belief:full` " + gate_firings(traj).describe() in text
    assert "`bayes-belief:full` and `bayes-belief:twin` played identical episodes" in text
    assert gate_firings(traj).why_identical() in text
    rows[1] = {**rows[1], "reward": rows[1]["reward"] + 20.0}
    assert "identical" not in " ".join(Report(rows, n_boot=200).veto_lines(["bayes-belief:full", "bayes-belief:twin"]))


def test_eval_report_html_index_compares_the_agents_with_intervals(tmp_path):
    """`eval report --html` was a flat list of links: its index now carries reward and gap per condition with
    95% intervals over seeds, computed from the run's results table."""
    from beliefgate.viewer.report import comparison_figure, comparison_stats

    rows = [{"agent": agent, "seed": seed, "reward": base + 10.0 * seed, "gap_rate": 0.2 + 0.01 * seed}
            for agent, base in (("bayes-belief:full", 100.0), ("periodic-10", 60.0)) for seed in range(4)]
    stats = {s["agent"]: s for s in comparison_stats(rows, n_boot=200)}
    mean, lo, hi = stats["bayes-belief:full"]["reward"]
    assert mean == 115.0 and lo < mean < hi and stats["periodic-10"]["reward"][0] == 75.0
    from beliefgate.eval.runner import write_results

    config = {"grid": "g", "grid_digest": "d", "layout": "cramped_room", "partner": "p", "partner_entry": "p",
              "group": "g", "seat": 0, "horizon": 10, "llm_model": "", "version": "x", "metrics_version": 3,
              "episode_key": "k", "log": "l.jsonl", "wall_s": 0.1}
    from beliefgate.eval.metrics import METRICS

    write_results(tmp_path, [{**{m: float("nan") for m in METRICS}, **config, **r} for r in rows])
    figure = comparison_figure(tmp_path)
    assert figure.count('class="mean"') == 4 and figure.count('class="ci"') == 4
    assert "bayes-belief:full: 115.0 [" in figure and "reward per episode" in figure
    assert "No agent-comparison figure" in comparison_figure(tmp_path / "nowhere")
