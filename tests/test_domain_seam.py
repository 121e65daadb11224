"""The domain seam (issue 42): a second game plays through the same runner, agents and gate; N players.

* A toy orchard (tests/toy_domain.py, no Overcooked import) registered in process plays episodes with
  bayes-belief and its gate, with two and three players, through ``run_episode``; its logs read back.
* The classic three-player kitchens play with scripted partners, bayes-belief (one gate per teammate)
  and overforge; the log, the HTML report's data and ``eval report`` show three players.
* Bad input at the seam: a plug-in that lacks a part, a partner count or a seat that does not fit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from beliefgate.envs.domain import (Domain, DomainPluginError, PlayerCountError, check_domain, domain_for_layout,
                                    register_domain, unregister_domain)
from beliefgate.envs.trajlog import read_log
from beliefgate.eval.episode import run_episode

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import toy_domain  # noqa: E402


@pytest.fixture
def orchard():
    register_domain(toy_domain.DOMAIN)
    yield toy_domain.DOMAIN
    unregister_domain(toy_domain.DOMAIN.name)


def _map_accuracy(traj, seat: int, partner: int, key=None) -> float:
    hits = total = 0
    names = toy_domain.LIBRARY.names
    for row in traj.steps[1:]:
        belief = row.info[seat]["belief"] if key is None else row.info[seat]["beliefs"][key]
        truth = row.skills[partner]
        if belief is None or truth is None:
            continue
        total += 1
        hits += names[int(np.argmax(belief))] == truth
    return hits / total


def test_the_toy_domain_plays_an_episode_with_bayes_belief_and_its_gate(orchard, tmp_path):
    log = tmp_path / "orchard.jsonl"
    result = run_episode("orchard", "bayes-belief", "apple-then-berry", seed=3, horizon=60, log_path=log)
    assert result.summary["steps"] == 60 and result.summary["deliveries"] > 0
    assert result.summary["reward"] == result.summary["deliveries"]  # +1 per delivered fruit
    traj = read_log(log)
    assert isinstance(traj.steps[5].state, toy_domain.OrchardState)  # parsed by the log's domain
    beliefs = [r.info[0]["belief"] for r in traj.steps if r.info[0]["belief"] is not None]
    assert beliefs and all(abs(sum(b) - 1.0) < 1e-3 for b in beliefs)
    # the gate follows the partner's switch from apples to berries at step 25 (a real posterior): when
    # the partner picks a fruit, its MAP names that fruit (the first steps from the basket, north, tell
    # the two apart by no action, so the MAP is read where the moves have been seen)
    picks = [(r.t, r.info[0]["partner_map"]) for r in traj.steps if r.actions[1] == toy_domain.INTERACT
             and r.state.players[1].held is None]
    assert [m for t, m in picks if t < 25] and all(m == "pick_apple" for t, m in picks if t < 25)
    assert [m for t, m in picks if t > 30] and all(m == "pick_berry" for t, m in picks if t > 30)


def test_the_toy_domain_keeps_a_gate_per_teammate_with_three_players(orchard):
    traj = run_episode("orchard_3p", "bayes-belief", ["apple-picker", "berry-picker"], seed=1, horizon=50,
                       seat=2).trajectory
    assert traj.header.agents == ["apple-picker", "berry-picker", "bayes-belief"]
    assert traj.final.summary["partner"] == "apple-picker+berry-picker"
    assert _map_accuracy(traj, 2, 0, "0") > 0.7 and _map_accuracy(traj, 2, 1, "1") > 0.7
    last = traj.steps[-1].info[2]["beliefs"]
    assert set(last) == {"0", "1"}


def test_the_toy_domain_runs_without_the_overcooked_game(tmp_path):
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import toy_domain; "
            "from beliefgate.envs.domain import register_domain; register_domain(toy_domain.DOMAIN); "
            "from beliefgate.eval.episode import run_episode; "
            "r = run_episode('orchard', 'bayes-belief', 'berry-picker', horizon=20); "
            "print(sorted(m for m in sys.modules if m == 'overcooked' or m.startswith(('overcooked.', "
            "'beliefgate.envs.overcooked'))), r.summary['steps'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] 20"


def test_a_plugin_lacking_a_part_is_refused_naming_it():
    class Half(Domain):
        name, backend, action_names = "half", "toy", ("stay",)

        def layouts(self):
            return ("h",)

    with pytest.raises(DomainPluginError, match="'half' lacks 'resolve_layout'"):
        check_domain(Half(), "half")
    with pytest.raises(DomainPluginError, match="lacks"):
        register_domain(Half())
    check_domain(toy_domain.DOMAIN, "orchard")  # the complete one passes


def test_partner_count_and_seat_must_fit_the_layout():
    with pytest.raises(PlayerCountError, match="cramped_room_3p has 3 players: give 2 partners, got 1"):
        run_episode("cramped_room_3p", "balanced", "plater", horizon=5)
    with pytest.raises(PlayerCountError, match="got 2"):
        run_episode("cramped_room", "balanced", ["plater", "balanced"], horizon=5)
    with pytest.raises(PlayerCountError, match="seat must be a player index in 0..2, got 3"):
        run_episode("cramped_room_3p", "balanced", "plater+balanced", seat=3, horizon=5)


def test_the_cli_refuses_a_partner_count_and_a_seat_in_one_line():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "beliefgate.cli", "episode", *args],
                              capture_output=True, text=True)

    proc = run("--layout", "asymmetric_advantages_3p", "--partner", "plater", "--horizon", "5")
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "error: --partner: layout asymmetric_advantages_3p has 3 players: give 2 partners, got 1"]
    proc = run("--layout", "cramped_room", "--seat", "2", "--horizon", "5")
    assert proc.returncode == 2 and "seat must be a player index in 0..1, got 2" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_layouts_json_gives_backend_and_players():
    out = subprocess.run([sys.executable, "-m", "beliefgate.cli", "layouts", "--json"], capture_output=True,
                         text=True, check=True).stdout
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["cramped_room"]["backend"] == "classic" and rows["cramped_room"]["players"] == 2
    assert rows["cramped_room_3p"]["players"] == 3 and rows["asymmetric_advantages_3p"]["players"] == 3
    # the third chef of the split room starts in its left half, with player 2
    third = rows["asymmetric_advantages_3p"]["start_positions"][2]
    assert third[0] < 4 and rows["asymmetric_advantages_3p"]["start_positions"][1][0] < 4


@pytest.mark.parametrize("layout", ["cramped_room_3p", "asymmetric_advantages_3p"])
def test_three_player_kitchens_play_with_bayes_belief_and_overforge(layout, tmp_path):
    from beliefgate.viewer.report import report_data

    log = tmp_path / "bb.jsonl"
    res = run_episode(layout, "bayes-belief", ["switch-sourcer-to-plater", "balanced"], seed=2, horizon=80,
                      seat=1, log_path=log)
    traj = read_log(log)
    assert len(traj.header.agents) == 3 and len(traj.steps[0].state.players) == 3
    infos = [r.info[1] for r in traj.steps[1:]]
    assert all(set(i["beliefs"]) == {"0", "2"} for i in infos)  # one gate per teammate, keyed by seat
    assert all(abs(sum(b) - 1) < 1e-3 for i in infos for b in i["beliefs"].values())
    data = report_data(traj, str(log))
    assert len(data["frames"][0][2]) == 3 and data["partner"] == 0
    assert res.summary["partners"] == ["switch-sourcer-to-plater", "balanced"]
    of = run_episode(layout, "overforge", "plater+balanced", seed=2, horizon=40, seat=0).trajectory
    assert of.final.summary["steps"] == 40 and of.steps[0].info[0]["strategy"] is not None


def test_a_grid_of_three_player_episodes_and_its_report(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("name: three\nagents: [bayes-belief, periodic-10]\nlayouts: [cramped_room, cramped_room_3p]\n"
                    "partners: [balanced, plater+balanced]\nseeds: [0]\nseats: [0, 2]\nhorizon: 30\n")
    run = subprocess.run([sys.executable, "-m", "beliefgate.cli", "eval", "run", str(grid), "--out",
                          str(tmp_path / "run")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    # seat 2 does not exist on cramped_room and one partner does not fill cramped_room_3p: skipped, said so
    assert "cramped_room_3p" in run.stdout + run.stderr
    rows = (tmp_path / "run" / "results.csv").read_text().splitlines()
    three = [r for r in rows if ",cramped_room_3p," in r]
    assert three and all("plater+balanced" in r for r in three)
    report = subprocess.run([sys.executable, "-m", "beliefgate.cli", "eval", "report", str(tmp_path / "run")],
                            capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert "cramped_room (2 players), cramped_room_3p (3 players)" in report.stdout
    assert "ego seats 0, 2" in report.stdout


def test_make_gate_is_gate_for_observer_with_the_domains_observer(orchard):
    """``Domain.make_gate`` and ``Gate.for_domain`` are ``Gate.for_observer`` with a domain's observer
    factory: one construction (params default, observer options, the name a pickled gate rebuilds from)."""
    from beliefgate import Gate, GateParams

    params = GateParams(hazard=0.05)
    states = run_episode("orchard", "bayes-belief", "apple-then-berry", seed=1, horizon=30).trajectory.states()
    made = orchard.make_gate("orchard", params, partner=1)
    direct = Gate.for_observer(orchard.make_observer, params, domain="orchard", layout="orchard", partner=1)
    assert made.domain == direct.domain == ("orchard", {"layout": "orchard", "partner": 1})
    assert made.params == params and made.skill_names == tuple(toy_domain.LIBRARY.names)
    posts = []
    for s0, s1 in zip(states[:-1], states[1:]):
        a, b = made.observe(s0, s1), direct.observe(s0, s1)
        np.testing.assert_array_equal(a.posterior, b.posterior)
        posts.append(a.posterior)
    assert np.ptp(np.array(posts), axis=0).max() > 0.1  # the observations moved the belief
    bare = Gate.for_observer(lambda p, **o: toy_domain.OrchardObserver("orchard", p, **o), partner=1)
    assert bare.domain is None and bare.params == GateParams()
    plain = Gate.for_observer(orchard.make_observer, partner=1)
    np.testing.assert_array_equal(bare.observe(states[0], states[1]).posterior,
                                  plain.observe(states[0], states[1]).posterior)
