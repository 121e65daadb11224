"""Co-pi-tree pieces on the real Overcooked dynamics: the flat state, the seed trees through the
sandbox, the policy-tree agent and its Bayesian variant (no LLM anywhere here)."""

import json

import pytest

from beliefgate.envs.overcooked.adapter import OvercookedAdapter
from beliefgate.envs.overcooked.flat_state import (FLAT_STATE_KEYS, FLAT_STATE_VERSION, FlatStateError, flat_state,
                                                   flat_state_text)
from beliefgate.envs.overcooked.layouts import LAYOUTS
from beliefgate.envs.overcooked.state import CounterObject, PlayerView, PotView, SymbolicState
from beliefgate.eval.episode import run_episode
from beliefgate.policytree.agent import TreeSpecError, close_sandboxes, make_policy_tree_agent, parse_spec
from beliefgate.envs.overcooked.seats import seat_skills
from beliefgate.envs.overcooked.flat_state import probe_states
from beliefgate.policytree.learn import check_tree
from beliefgate.policytree.sandbox import SKILLS
from beliefgate.policytree.seeds import seed_code, seed_text


@pytest.fixture(autouse=True)
def _close_workers():
    yield
    close_sandboxes()


def _state(**kw):
    base = dict(layout="cramped_room", timestep=5,
                players=(PlayerView(position=(1, 2), orientation=(0, -1), held="onion"),
                         PlayerView(position=(3, 1), orientation=(1, 0), held=None)),
                pots=(PotView(position=(2, 0), ingredients=3, cooking=True, timer=7),),
                counters=(CounterObject(position=(0, 2), name="dish"), CounterObject(position=(4, 2), name="onion")))
    base.update(kw)
    return SymbolicState(**base)


def test_flat_state_follows_the_schema_for_either_seat():
    s = _state()
    d0, d1 = flat_state(s, 0), flat_state(s, 1, teammate_last_completed_skill="pickup_dish", self_last_skill="pickup_onion")
    for d in (d0, d1):
        assert tuple(d) == FLAT_STATE_KEYS and d["version"] == FLAT_STATE_VERSION
        assert d["hold"] == ["onion", "empty"]
        assert d["pot"] == [{"count": 3, "state": "cooking", "timers": 7}]
        assert d["any_soup_ready"] is False and d["any_pot_not_full"] is False
        assert (d["num_onion_counters"], d["num_dish_counters"], d["num_soup_counters"]) == (1, 1, 0)
        json.dumps(d)  # plain JSON data (what the sandbox receives)
    assert d0["holdings"] == {"self": "onion", "teammate": "empty"} and d0["self_player"] == 0
    assert d1["holdings"] == {"self": "empty", "teammate": "onion"} and d1["self_player"] == 1
    assert d1["teammate_last_completed_skill"] == "pickup_dish" and d1["self_last_skill"] == "pickup_onion"
    assert d0["num_empty_counters"] == 9 - 2  # cramped_room has nine counter cells (XXPXX, X...X, XDXSX)
    assert "pot0 cooking (7 left)" in flat_state_text(d0)


def test_flat_state_counts_what_each_seat_can_reach_across_a_counter_wall():
    """forced_coordination: an onion on the left wall is the left player's only; the middle column is
    shared; on one floor region the reachable counts are the totals."""
    fc = SymbolicState(layout="forced_coordination", timestep=3,
                       players=(PlayerView(position=(3, 1), orientation=(0, -1), held=None),
                                PlayerView(position=(1, 2), orientation=(0, -1), held=None)),
                       pots=(PotView(position=(3, 0), ingredients=0), PotView(position=(4, 1), ingredients=0)),
                       counters=(CounterObject(position=(1, 0), name="onion"), CounterObject(position=(2, 2), name="onion"),
                                 CounterObject(position=(4, 2), name="dish")))
    right, left = flat_state(fc, 0), flat_state(fc, 1)
    assert right["num_onion_counters"] == left["num_onion_counters"] == 2
    assert (right["reach_onion_counters"], right["reach_dish_counters"]) == (1, 1)
    assert (left["reach_onion_counters"], left["reach_dish_counters"]) == (2, 0)
    assert right["shared_empty_counters"] == left["shared_empty_counters"] == 2  # (2, 1) and (2, 3)
    assert right["shared_onion_counters"] == left["shared_onion_counters"] == 1  # (2, 2)
    assert right["shared_dish_counters"] == left["shared_dish_counters"] == 0
    one_region = flat_state(_state(), 0)
    for kind in ("onion", "dish", "soup"):
        assert one_region[f"reach_{kind}_counters"] == one_region[f"num_{kind}_counters"]


def test_flat_state_pot_states_and_refusals():
    ready = _state(pots=(PotView(position=(2, 0), ingredients=3, ready=True),))
    idle = _state(pots=(PotView(position=(2, 0), ingredients=2),))
    assert flat_state(ready, 0)["pot"] == [{"count": 3, "state": "ready", "timers": 0}]
    assert flat_state(ready, 0)["any_soup_ready"] is True
    assert flat_state(idle, 0)["pot"] == [{"count": 2, "state": "idle", "timers": None}]
    assert flat_state(idle, 0)["any_pot_not_full"] is True
    with pytest.raises(FlatStateError):
        flat_state(_state(players=(PlayerView(position=(1, 2), orientation=(0, -1), held="tomato"),
                                   PlayerView(position=(3, 1), orientation=(1, 0)))), 0)
    with pytest.raises(FlatStateError):
        flat_state(_state(), 2)


def test_flat_state_of_a_real_start_state():
    for layout in LAYOUTS:
        d = flat_state(OvercookedAdapter(layout).reset(), 1)
        assert d["holdings"] == {"self": "empty", "teammate": "empty"}
        assert all(p == {"count": 0, "state": "idle", "timers": None} for p in d["pot"])
        assert d["any_pot_not_full"] is True and d["num_empty_counters"] > 0


@pytest.mark.parametrize("cooking", [False, True])
def test_a_tree_grounds_a_put_down_as_the_planning_agents_do(tmp_path, cooking):
    """forced_coordination, the supplier holds an onion: wanted by an idle pot, it goes on a shared
    counter; with both pots cooking it is surplus and goes on the supplier's own side (a tree that
    put every item on the shared counters filled them and stalled, unlike its teacher)."""
    from beliefgate.envs.overcooked.kitchen import PLACE, start_targets

    tree = tmp_path / "place.py"
    tree.write_text('def PredictTeammateThenPlan(state):\n    return "pickup_onion", "place_obj_on_counter"\n')
    pots = tuple(PotView(position=p, ingredients=3 if cooking else 0, cooking=cooking, timer=9 if cooking else 0)
                 for p in ((3, 0), (4, 1)))
    state = SymbolicState(layout="forced_coordination", timestep=3, pots=pots,
                          players=(PlayerView(position=(3, 1), orientation=(0, -1), held=None),
                                   PlayerView(position=(1, 2), orientation=(0, 1), held="onion")))
    agent = make_policy_tree_agent(str(tree))
    agent.reset("forced_coordination", 1, seed=0)
    agent.act(state)
    allowed, excluded = start_targets(state, 1, PLACE)
    assert agent.active_skill == PLACE
    assert (agent.executor.allowed, agent.executor.excluded) == (allowed, excluded)
    shared = frozenset({(2, 1), (2, 2), (2, 3)})
    assert (allowed, excluded) == ((None, shared) if cooking else (shared, frozenset()))


def test_seat_skills_restrict_only_the_forced_coordination_supplier():
    assert seat_skills("forced_coordination", 1) == ("pickup_onion", "pickup_dish", "place_obj_on_counter")
    assert seat_skills("forced_coordination", 0) == SKILLS
    assert all(seat_skills(lay, s) == SKILLS for lay in LAYOUTS if lay != "forced_coordination" for s in (0, 1))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_seed_tree_passes_the_probes_and_plays_a_short_episode(layout):
    code = seed_code(layout)
    assert "**Partner Inference Tree**" in seed_text(layout) and "**Self Action Selection Tree**" in seed_text(layout)
    for seat in (0, 1):
        assert check_tree(code, layout, seat) is None, (layout, seat)
    result = run_episode(layout, f"policy-tree:seed:{layout}", "balanced", seed=3, horizon=80)
    infos = [row.info[0] for row in result.trajectory.steps]
    assert result.summary["steps"] == 80 and result.summary["llm_calls"] == 0
    assert infos[-1]["tree_errors"] == 0
    assert all(i["tree_skill"] in seat_skills(layout, 0) and i["partner_map"] in SKILLS for i in infos)
    executable = sum(bool(i["executable"]) for i in infos)
    assert executable >= 0.5 * len(infos)  # mostly doing something, not waiting
    assert any(i["skill"] is not None for i in infos)


def test_probe_battery_covers_every_holding_pair():
    states = probe_states("asymmetric_advantages", 1)
    pairs = {(s["holdings"]["self"], s["holdings"]["teammate"]) for s in states}
    assert len(pairs) == 16 and all(len(s["pot"]) == 2 and s["self_player"] == 1 for s in states)
    assert {p["state"] for s in states for p in s["pot"]} == {"idle", "cooking", "ready"}


def test_a_full_seed_episode_scores_and_both_variants_log_their_inference(tmp_path):
    plain = run_episode("cramped_room", "policy-tree:seed:cramped_room", "balanced", seed=0, horizon=400)
    assert plain.summary["reward"] >= 100  # at least five soups with the balanced partner
    bayes = run_episode("cramped_room", "policy-tree:seed:cramped_room:bayes", "balanced", seed=0, horizon=60)
    infos = [row.info[0] for row in bayes.trajectory.steps]
    assert infos[0]["belief_map"] is None and all(i["belief_map"] in SKILLS for i in infos[1:])
    assert all(i["belief_map"] is None for i in (row.info[0] for row in plain.trajectory.steps))


def test_agent_specs_and_gate_params(tmp_path):
    from beliefgate.agents.registry import GateParamsNotUsedError, make_agent
    from beliefgate.beliefs.gate import GateParams

    assert parse_spec("runs/pt/best.py:bayes") == ("runs/pt/best.py", True)
    assert parse_spec("runs/pt/best.py") == ("runs/pt/best.py", False)
    with pytest.raises(TreeSpecError):
        make_policy_tree_agent(str(tmp_path / "missing.py"))
    path = tmp_path / "tree.py"
    path.write_text(seed_code("cramped_room"))
    params = GateParams(tau_obs=0.2)
    agent = make_policy_tree_agent(f"{path}:bayes", gate_params=params)
    assert agent.bayes and agent.params is params
    with pytest.raises(GateParamsNotUsedError):
        make_policy_tree_agent(str(path), gate_params=params)
    via_registry = make_agent(f"policy-tree:{path}:bayes", gate_params=params)
    via_registry.reset("cramped_room", 0, 1)
    assert via_registry.gate is not None and via_registry.params is params


def test_a_tree_that_fails_at_run_time_falls_back_and_counts_it(tmp_path):
    from beliefgate.eval.metrics import fallback_counts

    path = tmp_path / "flaky.py"
    path.write_text("def PredictTeammateThenPlan(state):\n"
                    "    if state['holdings']['self'] == 'onion':\n"
                    "        return 'pickup_onion', 'teleport'\n"
                    "    return 'pickup_onion', 'pickup_onion'\n")
    result = run_episode("cramped_room", f"policy-tree:{path}", "balanced", seed=1, horizon=30)
    infos = [row.info[0] for row in result.trajectory.steps]
    failed = [i for i in infos if i["tree_error"]]
    assert failed and all(i["tree_error"] == "result" for i in failed)
    assert infos[-1]["tree_errors"] == infos[-1]["fallbacks"] == len(failed)
    # and they reach the summary and the metrics as fallbacks of role "tree" (a bad result: the
    # answer could not be used)
    errors = len(failed)
    assert result.summary["fallbacks"] == errors
    counts = result.summary["fallback_counts"]
    assert counts["total"] == errors and counts["by_role"]["tree"] == errors
    assert counts["by_reason"]["unusable_reply"] == errors
    metrics = fallback_counts(result.trajectory)
    assert metrics["fallbacks"] == errors and metrics["fallback_unusable_reply"] == errors


def test_a_tree_refused_at_load_is_an_error_naming_its_file_whatever_the_rule(tmp_path):
    """A module body over the time limit (a SandboxTimeout) is refused like a forbidden statement
    (a SandboxViolation): by `policytree run`'s check and by the agent, each naming the tree."""
    from beliefgate.policytree.agent import check_tree_source

    slow = tmp_path / "slow.py"
    slow.write_text("x = sum(range(10**12))\ndef PredictTeammateThenPlan(state):\n"
                    "    return 'pickup_onion', 'pickup_onion'\n")
    forbidden = tmp_path / "forbidden.py"
    forbidden.write_text("import os\ndef PredictTeammateThenPlan(state):\n    return 'pickup_onion', 'pickup_onion'\n")
    with pytest.raises(TreeSpecError, match=f"{slow}: \\[(wall-clock|cpu-per-call)\\]"):
        check_tree_source(str(slow))
    for path, rule in ((slow, "(wall-clock|cpu-per-call)"), (forbidden, "import")):
        with pytest.raises(TreeSpecError, match=f"policy tree file {path}: \\[{rule}\\]"):
            make_policy_tree_agent(str(path))  # refused when the agent is built, before any episode


def _cli(*args, cwd):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "beliefgate.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_text_from_a_tree_is_printed_as_written_and_the_grid_is_refused(tmp_path):
    """A tree the sandbox refuses at load, whose error text looks like rich markup (``[/red]``, ``[import]``),
    neither crashes `eval run` nor loses its rule tag on the console: the grid is refused (exit 2, one line)
    before any episode or run directory."""
    (tmp_path / "markup.py").write_text("x = {}['[/red]']\ndef PredictTeammateThenPlan(state):\n"
                                        "    return 'pickup_onion', 'pickup_onion'\n")
    (tmp_path / "grid.yaml").write_text(
        "name: mk\nagents: ['policy-tree:markup.py', 'policy-tree:seed:cramped_room']\nlayouts: [cramped_room]\n"
        "partners: [balanced]\nseeds: {start: 0, count: 1}\nseats: [0]\nhorizon: 10\n")
    proc = _cli("eval", "run", "grid.yaml", "--out", "out", "--workers", "1", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr and "MarkupError" not in proc.stderr
    assert proc.stderr.strip().startswith("error: agent 'policy-tree:markup.py'") and len(proc.stderr.splitlines()) == 1
    assert "[runtime-error] KeyError: '[/red]'" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_repeated_layout_or_partner_is_refused_not_pooled(tmp_path):
    for flag, value in (("--layout", "cramped_room"), ("--partner", "balanced")):
        args = ["policytree", "run", "seed:cramped_room", "--layout", "cramped_room", "--partner", "balanced",
                flag, value, "--seeds", "1", "--horizon", "10"]
        proc = _cli(*args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.strip() == f"error: {flag}: {value} given more than once"
    proc = _cli("switches", "--layout", "cramped_room", "--layout", "cramped_room", "--seeds", "1", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip() == "error: --layout: cramped_room given more than once"


def test_the_agent_table_hashes_a_tree_file_and_nothing_else(tmp_path):
    """``agent_digest`` goes through the policy-tree row's ``digest`` (eval/ hashes a tree without
    importing policytree/): the code's hash, the same with ``:bayes``, another once the file
    changes; none for a seed tree, an agent named alone or a scripted partner."""
    import hashlib

    from beliefgate.agents.registry import agent_digest

    tree = tmp_path / "tree.py"
    tree.write_text(seed_code("cramped_room"))
    first = agent_digest(f"policy-tree:{tree}")
    assert first == hashlib.sha256(seed_code("cramped_room").encode()).hexdigest()[:12]
    assert agent_digest(f"policy-tree:{tree}:bayes") == first
    tree.write_text(seed_code("cramped_room") + "\n# edited\n")
    assert agent_digest(f"policy-tree:{tree}") not in (None, first)
    assert [agent_digest(n) for n in ("policy-tree:seed:cramped_room", "bayes-belief:full", "balanced")] \
        == [None, None, None]
