"""Partners as data: PartnerSpec files, the shipped behaviour-preferring population, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from beliefgate.envs.overcooked.partners import (
    DEFAULT_WEIGHTS,
    PARTNERS,
    PartnerSpec,
    PartnerSpecError,
    PartnerWeightError,
    ScriptedAgent,
    SwitchWindowError,
    UnknownPartnerError,
    UnknownPartnerFieldError,
    UnknownPartnerSkillError,
    check_partners,
    get_partner,
    load_partner,
    parse_partner,
    shipped_partners,
)
from beliefgate.errors import InputError

BIN = Path(sys.executable).parent / "beliefgate"

GOOD = {
    "name": "test-switcher",
    "description": "dishes first, then onions",
    "group": "logistics",
    "horizon": 120,
    "styles": {"plating": {"weights": {"pickup_dish": 4.0, "pickup_onion": 0.25}, "eager_plating": True},
               "cooking": {"weights": {"pickup_dish": 0.25, "pickup_onion": 4.0}}},
    "switches": [{"window": [20, 40], "to": "cooking"}, {"window": [60, 80], "to": "plating"}],
}


def write(tmp_path: Path, data, name="p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data, sort_keys=False))
    return path


def with_(**changes):
    data = json.loads(json.dumps(GOOD))
    data.update(changes)
    return data


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_spec_loads_from_yaml_and_json(tmp_path, suffix):
    spec = load_partner(write(tmp_path, GOOD, f"p.{suffix}"))
    assert spec.name == "test-switcher" and spec.group == "logistics"
    assert spec.start_style_name == "plating"  # the first style by default
    assert spec.styles["cooking"].weight("pickup_onion") == 4.0
    assert spec.styles["cooking"].weight("put_onion_in_pot") == DEFAULT_WEIGHTS["put_onion_in_pot"]
    assert [s.to for s in spec.switches] == ["cooking", "plating"]
    assert spec.source.endswith(f"p.{suffix}")
    # the same spec whichever format it came from
    assert spec.model_dump() == parse_partner(GOOD).model_dump()


@pytest.mark.parametrize("data, error, words", [
    (with_(colour="red"), UnknownPartnerFieldError, ["colour", "unknown field"]),
    (with_(styles={"a": {"weights": {}, "speed": 2}}), UnknownPartnerFieldError, ["styles.a.speed"]),
    (with_(switches=[{"window": [20, 40], "to": "cooking", "when": 3}]), UnknownPartnerFieldError,
     ["switches.0.when"]),
    (with_(styles={"a": {"weights": {"pickup_dish": -1}}}), PartnerWeightError, ["pickup_dish", "-1"]),
    (with_(styles={"a": {"weights": {"pickup_dish": 1000}}}), PartnerWeightError, ["pickup_dish", "1000"]),
    (with_(styles={"a": {"weights": {"pickup_dish": float("nan")}}}), PartnerWeightError, ["pickup_dish"]),
    (with_(styles={"a": {"weights": {"pickup_dish": "lots"}}}), PartnerWeightError, ["pickup_dish", "number"]),
    (with_(switches=[{"window": [20, 500], "to": "cooking"}]), SwitchWindowError, ["switches.0.window", "horizon 120"]),
    (with_(switches=[{"window": [0, 10], "to": "cooking"}]), SwitchWindowError, ["switches.0.window"]),
    (with_(switches=[{"window": [40, 20], "to": "cooking"}]), SwitchWindowError, ["switches.0.window"]),
    (with_(switches=[{"window": [20, 60], "to": "cooking"}, {"window": [50, 80], "to": "plating"}]),
     SwitchWindowError, ["switches.1.window", "previous window"]),
    (with_(styles={"a": {"weights": {"chop_onion": 1.0}}}), UnknownPartnerSkillError, ["chop_onion", "not a skill"]),
    (with_(styles={"a": {"weights": {"deliver_soup": 1.0}}}), UnknownPartnerSkillError, ["deliver_soup"]),
    (with_(switches=[{"window": [20, 40], "to": "serving"}]), PartnerSpecError, ["switches.0.to", "serving"]),
    (with_(switches=[{"window": [20, 40], "to": "plating"}]), PartnerSpecError, ["already the active style"]),
    (with_(start="serving"), PartnerSpecError, ["start", "serving"]),
    (with_(layouts=["moon_base"]), PartnerSpecError, ["layouts", "moon_base"]),
    (with_(noise=1.5), PartnerSpecError, ["noise"]),
    (with_(styles={}), PartnerSpecError, ["styles"]),
    (with_(format="beliefgate.partner/9"), PartnerSpecError, ["format"]),
    ({"styles": GOOD["styles"]}, PartnerSpecError, ["name", "Field required"]),
])
def test_bad_partner_files_raise_a_specific_error_naming_the_field(tmp_path, data, error, words):
    path = write(tmp_path, data, "bad.json")  # JSON keeps NaN as written
    with pytest.raises(error) as info:
        load_partner(path)
    msg = str(info.value)
    assert isinstance(info.value, InputError) and "\n" not in msg
    assert str(path) in msg
    for word in words:
        assert word in msg


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(PartnerSpecError, match="cannot read partner file"):
        load_partner(tmp_path / "missing.yaml")
    (tmp_path / "broken.yaml").write_text("name: [unclosed\n")
    with pytest.raises(PartnerSpecError, match="not valid YAML"):
        load_partner(tmp_path / "broken.yaml")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(PartnerSpecError, match="must be a mapping"):
        load_partner(tmp_path / "list.yaml")
    (tmp_path / "p.txt").write_text("name: x\n")
    with pytest.raises(PartnerSpecError, match="must end in"):
        load_partner(tmp_path / "p.txt")


def test_registry_accepts_names_and_paths(tmp_path):
    path = str(write(tmp_path, GOOD))
    assert path in PARTNERS and get_partner(path).name == "test-switcher"
    assert get_partner(path) is get_partner(path)  # cached while the file is unchanged
    assert "balanced" in PARTNERS and "bp-g1-dish-hi-eager-hi" in list(PARTNERS)
    with pytest.raises(UnknownPartnerError, match="unknown partner 'robot'"):
        get_partner("robot")
    with pytest.raises(PartnerSpecError, match="cannot read"):
        get_partner(str(tmp_path / "nope.yaml"))


def test_episode_horizon_check_is_raised_before_an_episode(tmp_path):
    path = str(write(tmp_path, GOOD))
    check_partners([path, "balanced"], 120)
    with pytest.raises(SwitchWindowError, match=r"switches.1.window \[60, 80\].*horizon 70"):
        check_partners([path], 70)
    # registered partners (used by name) make the switches a shorter episode reaches
    check_partners(["switch-sourcer-to-plater", "bp-g1-dish-hi-eager-hi"], 50)


def test_shipped_population_is_the_bp_design():
    pop = shipped_partners()
    assert len(pop) >= 12
    groups = {}
    for spec in pop.values():
        assert spec.source.startswith("partner_data/") and spec.switches
        groups.setdefault(spec.group, []).append(spec)
    assert sorted(groups) == ["cooking", "logistics", "sourcing"]
    for group, members in groups.items():
        assert len(members) == 4
        # the features that differ between the four starting styles: exactly two, each at two levels
        starts = [s.start_style for s in members]
        flat = [{**st.weights, **st.model_dump(exclude={"weights"})} for st in starts]
        varying = {k for k in flat[0] if len({json.dumps(f.get(k)) for f in flat}) > 1}
        assert len(varying) == 2, (group, varying)
        combos = {tuple(json.dumps(f[k]) for k in sorted(varying)) for f in flat}
        assert len(combos) == 4  # all 2 x 2 combinations
        for spec in members:  # each switches to the opposite corner and back
            opp = spec.styles[spec.switches[0].to]
            for k in varying:
                a = spec.start_style.weights.get(k, getattr(spec.start_style, k, None))
                b = opp.weights.get(k, getattr(opp, k, None))
                assert a != b


def test_switch_times_fall_in_their_windows():
    spec = get_partner("bp-g2-onion-hi-pot-lo")
    for seed in range(30):
        agent = ScriptedAgent(spec)
        agent.reset("cramped_room", 1, seed)
        for t, sw in zip(agent.switch_times, spec.switches):
            assert sw.window[0] <= t <= sw.window[1]
    draws = []
    for seed in range(30):
        agent = ScriptedAgent(spec)
        agent.reset("cramped_room", 1, seed)
        draws.append(agent.switch_times[0])
    assert len(set(draws)) > 5  # drawn, not fixed


def test_data_file_partner_plays_a_real_episode_and_switches_in_its_window():
    from beliefgate.eval.episode import agent_seeds, run_episode

    name = "bp-g1-dish-hi-eager-hi"
    spec = get_partner(name)
    result = run_episode("coordination_ring", "balanced", name, seed=2, horizon=120)
    steps = result.trajectory.steps
    assert len(steps) == 120 and result.summary["partner"] == name
    skills = [row.skills[1] for row in steps]
    assert any(skills) and set(filter(None, skills)) <= set(get_partner("balanced").styles["balanced"].weights) | {
        "fill_dish_with_soup", "deliver_soup", "put_onion_in_pot", "place_obj_on_counter", "pickup_onion",
        "pickup_dish"}
    # replay the partner with its episode seed: where the first switch really happened
    agent = ScriptedAgent(spec)
    agent.reset("coordination_ring", 1, agent_seeds(2, 2)[1])
    for row in steps:
        agent.act(row.state, row.events[1] if row.t else ())
        if agent.switches_done:
            break
    lo, hi = spec.switches[0].window
    assert agent.switches_done == 1 and lo <= row.t <= hi and agent.style_name == spec.switches[0].to


@pytest.mark.parametrize("name", ["bp-g2-onion-hi-pot-hi", "bp-g2-onion-lo-pot-lo"])
def test_staging_partner_on_the_pot_side_pots_its_onions(name):
    """On forced_coordination's pot side nobody can take a staged onion to a pot: a staging style
    pots it itself and does not count counter onions as on their way (they once looped: 0 soups)."""
    from beliefgate.eval.episode import run_episode

    result = run_episode("forced_coordination", "balanced", name, seed=1000, horizon=250, seat=1)
    steps = result.trajectory.steps
    potted = sum(1 for row in steps for e in row.events[0] if e.startswith("potting:"))
    assert potted >= 6 and result.summary["reward"] > 0


def test_cli_partner_file_episode_and_listing(tmp_path):
    good = write(tmp_path, GOOD)
    proc = subprocess.run([str(BIN), "episode", "--layout", "cramped_room", "--partner", str(good),
                           "--horizon", "120", "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["steps"] == 120
    proc = subprocess.run([str(BIN), "episode", "--layout", "cramped_room", "--partner", str(good),
                           "--horizon", "50"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "switches.1.window" in proc.stderr and "horizon 50" in proc.stderr
    bad = write(tmp_path, with_(styles={"a": {"weights": {"chop_onion": 1}}}), "bad.yaml")
    proc = subprocess.run([str(BIN), "episode", "--layout", "cramped_room", "--partner", str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "chop_onion" in proc.stderr and "Traceback" not in proc.stderr
    rows = json.loads(subprocess.run([str(BIN), "partners", "--json", str(good)], capture_output=True, text=True,
                                     timeout=120, check=True).stdout)
    by_name = {r["name"]: r for r in rows}
    assert len([r for r in rows if r["source"].startswith("partner_data/")]) >= 12
    mine = by_name["test-switcher"]
    # (a partner without a talk block dumps without it, as before the block existed)
    assert mine["switches"] is True and set(PartnerSpec.model_fields) - {"talk"} <= set(mine["spec"])
    assert mine["spec"]["switches"][0]["window"] == [20, 40]
    schema = json.loads(subprocess.run([str(BIN), "partners", "--schema"], capture_output=True, text=True,
                                       timeout=120, check=True).stdout)
    assert set(PartnerSpec.model_fields) <= set(schema["properties"])


def test_grid_accepts_partner_files(tmp_path):
    from beliefgate.eval.grid import GridError, parse_grid, resolve_grid

    good = str(write(tmp_path, GOOD))
    grid = {"agents": ["balanced"], "layouts": ["cramped_room"], "partners": [good, "bp-g3-onion-hi-stock-lo"],
            "seeds": [0], "seats": [0], "horizon": 120}
    episodes = resolve_grid(parse_grid(grid)).episodes
    assert [(e.partner, e.group) for e in episodes] == [(good, "logistics"), ("bp-g3-onion-hi-stock-lo", "sourcing")]
    assert episodes[0].partner_digest and episodes[1].partner_digest is None
    key = episodes[0].key
    write(tmp_path, with_(noise=0.1))  # an edited file is another episode
    assert resolve_grid(parse_grid(grid)).episodes[0].key != key
    bad = str(write(tmp_path, with_(colour="red"), "bad.yaml"))
    with pytest.raises(GridError, match="colour"):
        resolve_grid(parse_grid({**grid, "partners": [bad]}))
    with pytest.raises(GridError, match="horizon 70"):
        resolve_grid(parse_grid({**grid, "horizon": 70}))


def test_original_partners_keep_their_names_and_choices():
    for name in ("onion-sourcer", "plater", "server", "balanced", "counter-passer", "noisy",
                 "switch-sourcer-to-plater", "switch-plater-to-sourcer"):
        spec = get_partner(name)
        assert spec.source is None and spec.name == name
    assert get_partner("onion-sourcer").prefer == (4.0, 0.5)
    sw = get_partner("switch-sourcer-to-plater")
    assert [tuple(s.window) for s in sw.switches] == [(100, 250)] and sw.styles[sw.switches[0].to].eager_plating
    rng_draws = []
    for seed in range(5):
        agent = ScriptedAgent(sw)
        agent.reset("cramped_room", 1, seed)
        rng_draws.append(agent.switch_at)
        assert int(np.random.default_rng(seed).integers(100, 251)) == agent.switch_at


def test_an_agent_spec_ending_in_json_is_not_a_partner_file():
    """`policytree run tree.json` plays `policy-tree:tree.json`: the .json ending of an agent
    spec with a scheme must not route it to the partner-file loader."""
    from beliefgate.envs.overcooked.partners import PARTNERS, is_partner_path

    assert is_partner_path("partners/mine.json") and is_partner_path("mine.yaml")
    assert not is_partner_path("policy-tree:runs/pt/best.json")
    assert not is_partner_path("policy-tree:tree.yaml:bayes")
    assert "policy-tree:runs/pt/best.json" not in PARTNERS


def test_an_edited_ego_file_is_another_episode(tmp_path):
    """A partner file or a policy tree used as the ego (``agents:``) enters the episode key like a
    partner file does: an edited file is played again, not read back from the old episode."""
    from beliefgate.eval.grid import parse_grid, resolve_grid
    from beliefgate.policytree.seeds import seed_code

    ego = str(write(tmp_path, GOOD, "ego.yaml"))
    tree = tmp_path / "tree.py"
    tree.write_text(seed_code("cramped_room"))
    grid = {"agents": [ego, f"policy-tree:{tree}", "balanced", "policy-tree:seed:cramped_room"],
            "layouts": ["cramped_room"], "partners": ["balanced"], "seeds": [0], "seats": [0], "horizon": 120}
    first = resolve_grid(parse_grid(grid)).episodes
    assert [e.agent_digest is not None for e in first] == [True, True, False, False]
    assert "agent_digest" not in first[2].identity() and "agent_digest" not in first[2].to_dict()
    write(tmp_path, with_(noise=0.1), "ego.yaml")
    tree.write_text(seed_code("cramped_room") + "\n# edited\n")
    again = resolve_grid(parse_grid(grid)).episodes
    assert [a.key != b.key for a, b in zip(first, again)] == [True, True, False, False]


def test_a_user_file_under_a_folder_named_partner_data_is_still_checked_against_the_horizon(tmp_path):
    from beliefgate.envs.overcooked.partners import PARTNERS, SwitchWindowError

    (tmp_path / "partner_data").mkdir()
    mine = write(tmp_path, GOOD, "partner_data/mine.yaml")
    with pytest.raises(SwitchWindowError, match="horizon 70"):
        PARTNERS[str(mine)].check_horizon(70)
    PARTNERS["bp-g1-dish-hi-eager-hi"].check_horizon(70)  # shipped, used by name: written for 400 steps


def test_a_partner_path_that_is_a_symlink_loop_is_one_error(tmp_path):
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    proc = subprocess.run([str(BIN), "episode", "--layout", "cramped_room", "--partner", str(loop), "--horizon", "10"],
                          capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"error: cannot read partner file {loop}: ")
    assert "symbolic link" in lines[0]


@pytest.mark.parametrize("name,text", [
    ("dup.yaml", "name: x\nname: y\nstyles: {a: {}}\n"),
    ("dup2.yaml", "name: x\nstyles: {a: {}, a: {weights: {pickup_dish: 3}}}\n"),
    ("dup.json", '{"name": "x", "styles": {"a": {}}, "name": "y"}'),
])
def test_a_key_given_twice_is_refused_not_silently_overwritten(tmp_path, name, text):
    from beliefgate.envs.overcooked.partners import PartnerSpecError

    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PartnerSpecError, match="is given twice"):
        load_partner(path)


def test_grid_and_gate_params_refuse_a_repeated_key(tmp_path):
    from beliefgate import GateParams
    from beliefgate.beliefs.config import GateParamError
    from beliefgate.eval.grid import GridError, load_grid

    grid = tmp_path / "g.yaml"
    grid.write_text("name: g\nagents: [balanced]\nlayouts: [cramped_room]\npartners: [balanced]\nseeds: [0]\n"
                    "seats: [0]\nhorizon: 10\nhorizon: 20\n")
    with pytest.raises(GridError, match="'horizon' is given twice"):
        load_grid(grid)
    with pytest.raises(GateParamError, match="'tau_obs' is given twice"):
        GateParams.from_json('{"tau_obs": 0.1, "tau_obs": 0.3}')


def test_the_strict_loader_keeps_yaml_merge_keys_and_refuses_odd_keys_in_one_line(tmp_path):
    from beliefgate.eval.grid import GridError, load_grid
    from beliefgate.fileio import DataSyntaxError, parse_data

    assert parse_data("a: &x {p: 1, q: 2}\nb:\n  <<: *x\n  q: 3\n", "yaml") == {"a": {"p": 1, "q": 2},
                                                                              "b": {"p": 1, "q": 3}}
    grid = tmp_path / "g.yaml"
    grid.write_text("name: g\nagents: [balanced]\nlayouts: [cramped_room]\nseeds: [0]\nseats: [0]\nhorizon: 10\n"
                    "partners: [&p {name: balanced, optional: true}, {<<: *p, name: plater}]\n")
    assert [p.name for p in load_grid(grid).partner_entries] == ["balanced", "plater"]
    with pytest.raises(DataSyntaxError):
        parse_data("? [a]\n: 1\n", "yaml")
    grid.write_text("? [a]\n: 1\n")
    with pytest.raises(GridError, match="not valid YAML"):
        load_grid(grid)
