"""``beliefgate policytree distil``: DAgger + CART from a teacher agent to sandboxed tree code.

Real dynamics, real teacher, real sandbox: a tiny run (two iterations, short horizon) that emits
code which the sandbox accepts, ``policytree show`` prints and an episode plays; the emitted code
answers what the fitted trees answer; resumption; bad input as one line, exit 2, nothing written.
"""

import ast
import json

import pytest
from typer.testing import CliRunner

from beliefgate.cli import app
from beliefgate.policytree.distil import DistilConfig, Distiller, emit_code, fit_policy, read_records
from beliefgate.policytree.learn import check_tree

LAYOUT = "cramped_room"
#: a fast teacher for the loop tests (OverForge itself is checked in the shadow test)
TINY = dict(teacher="bayes-belief", iterations=1, episodes=2, rollouts=1, horizon=30, depth=3, min_leaf=2, seed=1000)


def _one_line_error(res, *words):
    assert res.exit_code == 2, res.output
    text = res.output.strip()
    assert text.startswith("error:") and "\n" not in text, text
    for w in words:
        assert w in text, text


@pytest.mark.parametrize("teacher,horizon", [("bayes-belief", 40),
                                             pytest.param("overforge", 30, marks=pytest.mark.slow)])
def test_shadow_gives_back_the_teachers_own_choices(teacher, horizon):
    """The 'what would you choose here' hook: a teacher watching an episode it played itself, from
    its seat and with its seed, answers exactly the skills it logged."""
    from beliefgate.agents.query import Shadow
    from beliefgate.agents.registry import make_agent
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.eval.episode import agent_seeds, run_episode

    seat, seed = 1, 1003
    traj = run_episode(LAYOUT, teacher, "balanced", seed=seed, horizon=horizon, seat=seat).trajectory
    domain = domain_for_layout(LAYOUT)
    shadow = Shadow(make_agent(teacher, domain=domain), LAYOUT, seat, agent_seeds(seed, 2)[seat])
    answers = [shadow.would_choose(row.state, traj.steps[t - 1].events[seat] if t else ())
               for t, row in enumerate(traj.steps)]
    logged = [row.skills[seat] for row in traj.steps]
    assert answers == logged and len(set(logged)) > 1
    assert shadow.decisions >= 2


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One iteration, then resumed for a second: (run dir, iteration 0's data before the resumption)."""
    out = tmp_path_factory.mktemp("distil") / "run"
    first = Distiller(DistilConfig(layout=LAYOUT, partners=("balanced",), **TINY), out).run()
    assert [h["iteration"] for h in first["history"]] == [0] and first["best_iteration"] == 0
    data0 = (out / "iter_00" / "data.jsonl").read_text()
    Distiller(DistilConfig(layout=LAYOUT, partners=("balanced",), **{**TINY, "iterations": 2}), out).run()
    return out, data0


def test_tiny_distillation_resumes_and_logs_every_iteration(tiny_run):
    out, data0 = tiny_run
    summary = json.loads((out / "summary.json").read_text())
    assert [h["iteration"] for h in summary["history"]] == [0, 1]  # resumed: iteration 0 not played again
    assert (out / "iter_00" / "data.jsonl").read_text() == data0
    h0, h1 = summary["history"]
    assert h0["played"] == "teacher" and h0["agreement"] == 1.0  # the teacher agrees with itself
    assert h1["played"] == "tree of iteration 0" and 0 <= h1["agreement"] <= 1
    assert h0["states"] == h1["states"] == 2 * TINY["horizon"] and h1["total_states"] == 4 * TINY["horizon"]
    for h in summary["history"]:
        assert h["self_leaves"] >= 2 and h["partner_leaves"] >= 1 and h["reward"] is not None
        assert 0 < h["fit_agreement"] <= 1 and h["seconds"] > 0
    assert summary["counts"]["teacher_decisions"] > 0 and summary["nq"] == summary["counts"]["teacher_decisions"]
    assert json.loads((out / "config.json").read_text())["kind"] == "distil"
    assert summary["counts"]["accepted"] + summary["counts"]["rejected"] == 2
    from beliefgate.provenance import git_commit

    # provenance: the summary and every iteration's status name the code that made them
    assert summary["commit"] == git_commit()
    assert json.loads((out / "iter_01" / "status.json").read_text())["commit"] == git_commit()


def test_distilled_code_is_readable_sandboxed_shown_and_plays(tiny_run):
    out, _ = tiny_run
    code = (out / "best.py").read_text()
    assert check_tree(code, LAYOUT, 0) is None and check_tree(code, LAYOUT, 1) is None
    # readable: no data tables (no list, dict, set or constant tuple anywhere in the code)
    for node in ast.walk(ast.parse(code)):
        assert not isinstance(node, (ast.List, ast.Dict, ast.Set)), ast.dump(node)
        if isinstance(node, ast.Tuple):
            assert not any(isinstance(e, ast.Constant) for e in node.elts), ast.dump(node)
    assert "if state[" in code or "elif state[" in code

    shown = CliRunner().invoke(app, ["policytree", "show", str(out / "best.py")])
    assert shown.exit_code == 0 and "**Self Action Selection Tree**" in shown.output
    assert "Distilled from: bayes-belief" in shown.output

    from beliefgate.eval.episode import run_episode
    from beliefgate.policytree.agent import close_sandboxes

    try:
        res = run_episode(LAYOUT, f"policy-tree:{out / 'best.py'}", "balanced", seed=3, horizon=20, seat=1)
    finally:
        close_sandboxes()
    infos = [r.info[1] for r in res.trajectory.steps]
    assert len(infos) == 20 and infos[-1]["tree_errors"] == 0 and all(i["tree_skill"] for i in infos)


def test_emitted_code_answers_what_the_fitted_trees_answer(tiny_run):
    """The code is the trees: on recorded states the sandboxed function returns the fitted trees'
    (partner, self) prediction; and the ablations change the code as they should."""
    from beliefgate.policytree.sandbox import Sandbox

    out, _ = tiny_run
    records = read_records(out / "iter_00" / "data.jsonl") + read_records(out / "iter_01" / "data.jsonl")
    cfg = DistilConfig(layout=LAYOUT, partners=("balanced",), **{**TINY, "depth": 5})
    policy, stats = fit_policy(records, cfg)
    balanced = fit_policy(records, cfg.model_copy(update={"balance": True}))[0]
    for fitted in (policy, balanced):
        with Sandbox(emit_code(fitted, LAYOUT, "test"), "PredictTeammateThenPlan") as box:
            for r in records[::4]:
                assert tuple(box.call(r["flat"])) == fitted.predict(r["flat"])
    code = emit_code(policy, LAYOUT, "test")
    assert 0.5 < stats["fit_agreement"] <= 1.0 and stats["self_leaves"] >= 3
    no_pi = emit_code(fit_policy(records, cfg.model_copy(update={"partner_tree": False}))[0], LAYOUT, "t")
    assert "def choose_own(state):" in no_pi and "mate_skill ==" not in no_pi
    assert no_pi.split("def predict_teammate(state):\n")[1].lstrip().startswith("return")
    no_p = emit_code(fit_policy(records, cfg.model_copy(update={"partner_feature": False}))[0], LAYOUT, "t")
    assert "def choose_own(state):" in no_p and "if " in no_p.split("def predict_teammate(state):")[1]


def test_a_split_floor_tree_reads_what_self_can_reach_and_older_states_are_refused():
    """forced_coordination's trees may split on the onions self can reach (the teacher's rule here);
    cramped_room's have no such feature; a pooled state from before these keys is one clear error."""
    from beliefgate.envs.overcooked.flat_state import probe_states
    from beliefgate.policytree.distil import DistilConfigError, features, split_floor

    assert split_floor("forced_coordination") and split_floor("asymmetric_advantages")
    assert not split_floor("cramped_room") and not split_floor("counter_circuit")
    assert "reach_onion_counters" not in {f.name for f in features(1, (), ())}
    layout = "forced_coordination"
    records = [{"flat": d, "seat": seat, "partner": "pickup_onion",
                "teacher": "pickup_onion" if d["reach_onion_counters"] > 0 else "place_obj_on_counter"}
               for seat in (0, 1) for d in probe_states(layout, seat)]
    assert any(r["flat"]["reach_onion_counters"] != r["flat"]["num_onion_counters"] for r in records)
    cfg = DistilConfig(layout=layout, partners=("balanced",), **{**TINY, "depth": 2, "min_leaf": 1})
    policy, stats = fit_policy(records, cfg)
    assert stats["fit_agreement"] == 1.0
    assert "reach_onion_counters" in emit_code(policy, layout, "t")
    old = [{**r, "flat": {k: v for k, v in r["flat"].items() if k != "reach_onion_counters"}} for r in records]
    with pytest.raises(DistilConfigError, match="reach_onion_counters.*new --out"):
        fit_policy(old, cfg)


@pytest.mark.parametrize("args,words", [
    (["--teacher", "nosuch"], ["teacher", "nosuch"]),
    (["--depth", "0"], ["depth"]),
    (["--partner", "v2-cook"], ["v2-cook"]),
    (["--layout", "cramped_room_3p"], ["cramped_room_3p"]),
    (["--layout", "v2/cramped_room_v2_3p", "--partner", "v2-cook"], ["v2/cramped_room_v2_3p", "3 players"]),
    (["--teacher", "policy-tree:seed:cramped_room"], ["teacher"]),
    (["--layout", "v2/cramped_room_v2", "--partner", "v2-cook", "--env-option", "agent_view_size=0"],
     ["env_options", "agent_view_size"]),
    (["--layout", "v2/cramped_room_v2", "--partner", "v2-cook", "--env-option", "no_such_option=1"],
     ["env_options", "no_such_option"]),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, words):
    if any(a.startswith("v2/") for a in args):
        # import JaxMARL before the runner swaps the streams: an import inside it (jax's logging set-up)
        # leaves the error line on the process's own stderr, where the runner cannot read it
        pytest.importorskip("jaxmarl")
        from beliefgate.envs.overcooked_v2.layouts import layout_info

        layout_info("v2/cramped_room_v2")
    base = {"--layout": LAYOUT, "--partner": "balanced"}
    for flag in ("--layout", "--partner"):
        if flag in args:
            base.pop(flag)
    argv = ["policytree", "distil", "--out", str(tmp_path / "out")] + [x for kv in base.items() for x in kv] + args
    _one_line_error(CliRunner().invoke(app, argv), *words)
    assert not (tmp_path / "out").exists()


def test_a_run_dir_of_another_kind_or_layout_is_refused_unchanged(tmp_path):
    from beliefgate.policytree.learn import LearnConfig, Learner

    llm_dir = tmp_path / "llm"
    Learner(LearnConfig(LAYOUT, "balanced"), None, llm_dir)  # writes the LLM run's config.json
    before = {p.name: p.read_bytes() for p in llm_dir.iterdir()}
    runner = CliRunner()
    res = runner.invoke(app, ["policytree", "distil", "--layout", LAYOUT, "--partner", "balanced", "--out", str(llm_dir)])
    _one_line_error(res, "'llm' run", str(llm_dir))
    assert {p.name: p.read_bytes() for p in llm_dir.iterdir()} == before

    d = tmp_path / "distil"
    Distiller(DistilConfig(layout=LAYOUT, partners=("balanced",), **TINY), d)  # config only
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    res = runner.invoke(app, ["policytree", "distil", "--layout", "coordination_ring", "--partner", "balanced",
                              "--teacher", "bayes-belief", "--out", str(d)])
    _one_line_error(res, "layout")
    res = runner.invoke(app, ["policytree", "learn", "--layout", LAYOUT, "--partner", "balanced", "--out", str(d),
                              "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"])
    _one_line_error(res, "'distil' run")
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before


def test_by_default_every_partner_is_played_from_both_seats_each_iteration(tmp_path):
    cfg = DistilConfig(layout="cramped_room", partners=("balanced", "onion-sourcer", "plater"), teacher="bayes-belief")
    assert cfg.episodes == 6
    plan = Distiller(cfg, tmp_path / "run").plan(0)
    assert sorted((p, seat) for p, seat, _ in plan) == sorted(
        (p, seat) for p in ("balanced", "onion-sourcer", "plater") for seat in (0, 1))
    # an explicit count is kept, and partners then come in turn
    assert DistilConfig(layout="cramped_room", partners=("balanced", "plater"), teacher="bayes-belief",
                        episodes=2).episodes == 2
    # a pool larger than an iteration's episodes is covered over the iterations, not cut to its head
    pool = ("balanced", "onion-sourcer", "plater", "server", "noisy")
    small = Distiller(DistilConfig(layout="cramped_room", partners=pool, teacher="bayes-belief", episodes=4),
                      tmp_path / "small")
    played = [(p, seat) for k in range(5) for p, seat, _ in small.plan(k)]
    assert sorted(set(played)) == sorted((p, seat) for p in pool for seat in (0, 1))
    seeds = [s for k in range(5) for _, _, s in small.plan(k)]
    assert len(set(seeds)) == len(seeds)
    # and a plan that already covers the pool every iteration is the same each iteration
    assert [(p, s) for p, s, _ in Distiller(cfg, tmp_path / "run").plan(3)] == [(p, s) for p, s, _ in plan]


def test_every_feature_reads_the_same_in_the_sandbox_as_in_the_fit(tiny_run):
    """Each feature's expression in the emitted code gives the number the fit used: a one-split self
    tree per feature and cut, run in the sandbox on recorded states (with a teammate holding an
    onion or a dish among them, so the net-of-teammate needs are exercised)."""
    from beliefgate.policytree.distil import FittedPolicy, Leaf, Split, features
    from beliefgate.policytree.sandbox import Sandbox

    out, _ = tiny_run
    records = read_records(out / "iter_00" / "data.jsonl") + read_records(out / "iter_01" / "data.jsonl")
    states = [r["flat"] for r in records]
    held = {d["holdings"]["teammate"] for d in states}
    assert {"onion", "dish"} <= held, held
    # split_floor adds the reachability counts (cramped_room's states carry them too)
    feats = {f.name: f for f in features(1, ("pickup_onion",), ("pickup_onion",), split_floor=True)}
    assert {"reach_onion_counters", "shared_empty_counters"} <= set(feats)
    # a teammate's onion is net of the pot's need, a teammate's dish of the coming soups
    d = json.loads(json.dumps(states[0]))
    d["pot"] = [{"count": 1, "state": "idle", "timers": None}]
    for mate, need in (("onion", 1.0), ("empty", 2.0)):
        d["holdings"]["teammate"] = mate
        assert feats["onions_missing_after_mate"].value(d, None) == need
    d["pot"] = [{"count": 3, "state": "cooking", "timers": 5}]
    for mate, left in (("dish", 0.0), ("onion", 1.0)):
        d["holdings"]["teammate"] = mate
        assert feats["soups_left_after_mate"].value(d, None) == left
    for f in feats.values():
        values = sorted({f.value(s, None) for s in states})
        for cut in ([0] if f.boolean else [int(v) for v in values[:-1]][:3] or [0]):
            node = Split(f, cut, Leaf("pickup_onion"), Leaf("pickup_dish"))
            policy = FittedPolicy(partner={None: Leaf("pickup_onion")}, own={None: node}, reads_partner=False)
            with Sandbox(emit_code(policy, LAYOUT, "feature check"), "PredictTeammateThenPlan") as box:
                for s in states[::3]:
                    assert tuple(box.call(s)) == policy.predict(s), (f.name, cut)


def test_a_v2_kitchen_is_distilled_on_its_own_flat_state(tmp_path):
    """OvercookedV2: the same loop over the V2 flat state's features (typed holdings, the recipe
    candidates, per-ingredient needs, the skills each seat reaches); the emitted code carries no
    classic helper, plays, and every feature's expression reads in the sandbox what the fit used
    (on visited states and the layout's probe states, where the recipe is seen and unseen)."""
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.eval.episode import run_episode
    from beliefgate.policytree.agent import close_sandboxes
    from beliefgate.policytree.distil import FittedPolicy, Leaf, Split, layout_features
    from beliefgate.policytree.sandbox import Sandbox

    layout = "v2/cramped_room_v2"
    out = tmp_path / "v2"
    summary = Distiller(DistilConfig(layout=layout, partners=("v2-cook",), **{**TINY, "horizon": 40}), out).run()
    assert summary["best_iteration"] == 0 and summary["history"][0]["states"] == 80
    code = (out / "best.py").read_text()
    assert "def onions_missing" not in code and "Layout: v2/cramped_room_v2" in code
    domain = domain_for_layout(layout)
    names = domain.controller(layout).library.names
    feats = layout_features(layout, names, domain.seat_skills(layout, 0), with_seat=True)
    assert {"candidate_0-0-1", "need_ingredient_1", "sure_ingredient_0", "teammate_holds_ingredient_1",
            "self_reaches_put_ingredient_1_in_pot", "counter_plate", "recipe_visible", "believed_confidence",
            "believed_0-0-1", "believed_need_ingredient_0"} <= {f.name for f in feats}
    assert not any(f.name.startswith("believed") for f in layout_features(
        layout, names, domain.seat_skills(layout, 0), with_seat=True, belief=False))
    probes = [d for seat in (0, 1) for d in domain.probe_states(layout, seat)]
    states = [r["flat"] for r in read_records(out / "iter_00" / "data.jsonl")][::8] + \
        [d for seen in (True, False) for d in probes if d["recipe_visible"] == seen][::4]
    assert {d["recipe_visible"] for d in states} == {True, False}
    for f in feats:
        values = sorted({f.value(s, None) for s in states})
        cut = 0 if f.boolean or len(values) < 2 else values[len(values) // 2 - 1] if f.fraction \
            else int(values[len(values) // 2 - 1])
        node = Split(f, cut, Leaf("pickup_plate"), Leaf("deliver_dish"))
        policy = FittedPolicy(partner={None: Leaf("pickup_plate")}, own={None: node}, reads_partner=False)
        with Sandbox(emit_code(policy, layout, "feature check"), self_skills=names, partner_skills=names) as box:
            for s in states:
                assert tuple(box.call(s)) == policy.predict(s), (f.name, cut)
    try:
        res = run_episode(layout, f"policy-tree:{out / 'best.py'}", "v2-cook", seed=3, horizon=20, seat=1)
    finally:
        close_sandboxes()
    infos = [r.info[1] for r in res.trajectory.steps]
    assert infos[-1]["tree_errors"] == 0 and all(i["tree_skill"] for i in infos)


def test_with_the_gate_the_tree_plays_bayes_and_its_labels_carry_the_gates_belief(tmp_path):
    """``gate=True``: the trees play as ``policy-tree:PATH:bayes`` and may read the gate's MAP teammate
    skill (``gate_believes_<skill>``); distillation's labels replay the same gate over each log, so the
    flat state a tree is fitted on holds the belief the agent logged (``belief_map``) at every step."""
    from beliefgate.envs.domain import domain_for_layout as domain_for
    from beliefgate.eval.episode import run_episode
    from beliefgate.policytree.agent import close_sandboxes
    from beliefgate.policytree.distil import label_episode, layout_features

    out = tmp_path / "gate"
    cfg = DistilConfig(layout=LAYOUT, partners=("balanced",), gate=True, **{**TINY, "iterations": 2})
    summary = Distiller(cfg, out).run()
    assert summary["history"][1]["played"] == "tree of iteration 0"
    library = domain_for(LAYOUT).controller(LAYOUT).library.names
    names = {f.name for f in layout_features(LAYOUT, library, library, gate=True)}
    assert {f"gate_believes_{s}" for s in library} <= names
    assert not any(n.startswith("gate_believes_") for n in {f.name for f in layout_features(LAYOUT, library, library)})
    try:
        res = run_episode(LAYOUT, f"policy-tree:{out / 'best.py'}:bayes", "balanced", seed=5, horizon=40, seat=1)
    finally:
        close_sandboxes()
    records, _ = label_episode(res.trajectory, cfg, 1, 5, teacher_played=False)
    logged = [row.info[1]["belief_map"] for row in res.trajectory.steps]
    assert [r["flat"]["teammate_last_inferred_skill"] for r in records] == logged
    assert logged[0] is None and len({b for b in logged if b}) > 1
