"""Schema-constrained edits of a distilled policy tree (``beliefgate.policytree.edits``).

Each edit operation on a small hand-built tree and on a two-seat-group tree; every validation error
(one line naming the bad value, the tree untouched); the JSON schema admits only edits that apply
(sampled over every branch) and converts to a llama.cpp grammar; policies round-trip through JSON and
through the tree files distillation writes; the edit loop's control flow with a scripted model
double (unparsable, invalid, reverted, repeated, unchanged and accepted edits, resumption); bad CLI
input. The run against the real llama.cpp server is ``test_edits_against_the_real_server``.
"""

import json
import random

import pytest
from typer.testing import CliRunner

from beliefgate.cli import app
from beliefgate.policytree.distil import FittedPolicy, Leaf, Split, emit_code, predict
from beliefgate.policytree.edits import (EditConfigError, EditError, Editor, PolicyFileError, apply_edit, edit,
                                         edit_schema, load_policy, parse_edit, parse_tree_file, paths, policy_from_json,
                                         policy_to_json, prepare, same_trees, schema_size, tree_lines, vocabularies)
from beliefgate.policytree.learn import LearnConfigError, check_tree

from test_policytree_distil import _one_line_error  # noqa: E402  (tests/ is on sys.path under pytest)
from test_policytree_learn import Scripted  # noqa: E402

LAYOUT = "cramped_room"


def _policy(soup_leaf="deliver_soup", layout=LAYOUT):
    """partner: onion -> put_onion_in_pot, dish -> fill, else pickup_onion; self: soup -> SOUP_LEAF,
    dish -> fill, onion -> put, a soup coming -> pickup_dish, else pickup_onion."""
    f = vocabularies(layout, True)["self"].features

    def s(name, low, high, cut=0):
        return Split(f[name], cut, low, high)

    partner = s("teammate_holds_onion", s("teammate_holds_dish", Leaf("pickup_onion"), Leaf("fill_dish_with_soup")),
                Leaf("put_onion_in_pot"))
    own = s("self_holds_soup", s("self_holds_dish", s("self_holds_onion", s("soups_coming", Leaf("pickup_onion"),
                                                                            Leaf("pickup_dish")),
                                                      Leaf("put_onion_in_pot")),
                                 Leaf("fill_dish_with_soup")), Leaf(soup_leaf))
    return FittedPolicy({None: partner}, {None: own}, True, "hand-built test tree")


def _split_policy():
    """forced_coordination: one pair of trees per seat (seat 1 cannot pot or serve)."""
    v = vocabularies("forced_coordination", False)
    f0, f1 = v["self.seat0"].features, v["self.seat1"].features
    partner = {0: Split(f0["teammate_holds_onion"], 0, Leaf("pickup_onion"), Leaf("place_obj_on_counter")),
               1: Leaf("put_onion_in_pot")}
    own = {0: Split(f0["pot0_onions"], 1, Leaf("put_onion_in_pot"), Leaf("pickup_dish")),
           1: Split(f1["self_holds_onion"], 0, Leaf("pickup_onion"), Leaf("place_obj_on_counter"))}
    return FittedPolicy(partner, own, False, "seat groups")


STATE = {"self_player": 0, "holdings": {"self": "soup", "teammate": "empty"},
         "pot": [{"count": 1, "state": "idle", "timers": None}], "any_soup_ready": False, "any_pot_not_full": True,
         "num_empty_counters": 5, "num_onion_counters": 0, "num_dish_counters": 0, "num_soup_counters": 0,
         "teammate_last_completed_skill": None, "teammate_last_inferred_skill": None, "self_last_skill": None}


def _state(**holdings):
    return {**STATE, "holdings": {**STATE["holdings"], **holdings}}


# ------------------------------------------------------------------------------ operations
def test_each_edit_operation():
    p = _policy()
    before = policy_to_json(p, LAYOUT)

    swapped = apply_edit(p, {"op": "swap_skill", "path": "self.high", "skill": "place_obj_on_counter"}, LAYOUT)
    assert paths(swapped)["self.high"] == Leaf("place_obj_on_counter")
    assert swapped.predict(_state()) == ("pickup_onion", "place_obj_on_counter")

    inserted = apply_edit(p, {"op": "insert_rule", "path": "self.low.low.low.low", "feature": "num_onion_counters",
                              "cut": 0, "then_skill": "place_obj_on_counter", "else_skill": "pickup_onion"}, LAYOUT)
    node = paths(inserted)["self.low.low.low.low"]
    assert isinstance(node, Split) and node.feature.name == "num_onion_counters" and node.cut == 0
    empty = _state(self="empty")
    assert predict(inserted.own[None], empty) == "pickup_onion"
    assert predict(inserted.own[None], {**empty, "num_onion_counters": 2}) == "place_obj_on_counter"

    deleted = apply_edit(p, {"op": "delete_rule", "path": "self", "keep": "low"}, LAYOUT)
    assert deleted.own[None] == p.own[None].low and deleted.partner == p.partner

    # reorder: "if dish -> fill elif onion -> put" becomes "if onion -> put elif dish -> fill"
    reordered = apply_edit(p, {"op": "reorder_rules", "path": "self.low"}, LAYOUT)
    assert paths(reordered)["self.low"].feature.name == "self_holds_onion"
    assert paths(reordered)["self.low.low"].feature.name == "self_holds_dish"
    for held in ("dish", "onion", "empty"):
        assert reordered.predict(_state(self=held)) == p.predict(_state(self=held))  # exclusive holdings: same answers

    moved = apply_edit(p, {"op": "change_threshold", "path": "self.low.low.low", "cut": 0}, LAYOUT)
    assert paths(moved)["self.low.low.low"].cut == 0
    v = vocabularies(LAYOUT, True)["self"]
    bumped = apply_edit(p, {"op": "insert_rule", "path": "self.high", "feature": "pot0_onions", "cut": 1,
                            "then_skill": "deliver_soup", "else_skill": "place_obj_on_counter"}, LAYOUT)
    bumped = apply_edit(bumped, {"op": "change_threshold", "path": "self.high", "cut": 2}, LAYOUT)
    assert paths(bumped)["self.high"].cut == 2 == v.cut_range["pot0_onions"][1]

    assert policy_to_json(p, LAYOUT) == before  # every edit made a new policy


def test_an_edit_that_changes_nothing_is_recognisable_and_equal_branches_merge():
    p = _policy()
    same = apply_edit(p, {"op": "swap_skill", "path": "self.high", "skill": "deliver_soup"}, LAYOUT)
    assert same_trees(same, p, LAYOUT)
    merged = apply_edit(p, {"op": "insert_rule", "path": "self.high", "feature": "pot0_ready", "cut": 0,
                            "then_skill": "deliver_soup", "else_skill": "deliver_soup"}, LAYOUT)
    assert same_trees(merged, p, LAYOUT)
    # swapping one of two leaves to its sibling's skill merges the split away
    collapsed = apply_edit(p, {"op": "swap_skill", "path": "partner.low.high", "skill": "pickup_onion"}, LAYOUT)
    assert paths(collapsed)["partner.low"] == Leaf("pickup_onion")


def test_seat_groups_are_edited_per_seat():
    p = _split_policy()
    assert {"partner.seat0", "partner.seat1", "self.seat0", "self.seat1"} <= set(paths(p))
    q = apply_edit(p, {"op": "swap_skill", "path": "self.seat1.high", "skill": "pickup_dish"}, "forced_coordination")
    assert paths(q)["self.seat1.high"] == Leaf("pickup_dish") and q.own[0] == p.own[0]
    # seat 1 cannot put an onion in a pot; its partner (seat 0) can
    with pytest.raises(EditError, match="'put_onion_in_pot' is not one the self.seat1 tree may answer"):
        apply_edit(p, {"op": "swap_skill", "path": "self.seat1.high", "skill": "put_onion_in_pot"},
                   "forced_coordination")
    apply_edit(p, {"op": "swap_skill", "path": "partner.seat1", "skill": "deliver_soup"}, "forced_coordination")


@pytest.mark.parametrize("bad,words", [
    ({"op": "swap_skill", "path": "self.middle", "skill": "deliver_soup"}, ["unknown path", "'self.middle'"]),
    ({"op": "swap_skill", "path": "self.high.low", "skill": "deliver_soup"}, ["'self.high.low'", "leaf before"]),
    ({"op": "swap_skill", "path": "nobody", "skill": "deliver_soup"}, ["unknown path", "'nobody'"]),
    ({"op": "swap_skill", "path": "self.high", "skill": "juggle"}, ["'juggle'"]),
    ({"op": "swap_skill", "path": "self.low", "skill": "deliver_soup"}, ["needs a leaf", "'self.low'"]),
    ({"op": "insert_rule", "path": "self.high", "feature": "pot7_onions", "cut": 0, "then_skill": "deliver_soup",
      "else_skill": "deliver_soup"}, ["unknown feature", "'pot7_onions'"]),
    ({"op": "insert_rule", "path": "partner.high", "feature": "predicted_pickup_dish", "cut": 0,
      "then_skill": "pickup_dish", "else_skill": "pickup_onion"}, ["unknown feature", "'predicted_pickup_dish'"]),
    ({"op": "insert_rule", "path": "self.high", "feature": "pot0_onions", "cut": 3, "then_skill": "deliver_soup",
      "else_skill": "pickup_dish"}, ["cut 3", "pot0_onions", "0..2"]),
    ({"op": "insert_rule", "path": "self.high", "feature": "pot0_onions", "cut": -1, "then_skill": "deliver_soup",
      "else_skill": "pickup_dish"}, ["cut -1"]),
    ({"op": "insert_rule", "path": "self.high", "feature": "pot0_ready", "cut": 1, "then_skill": "deliver_soup",
      "else_skill": "pickup_dish"}, ["cut 1", "pot0_ready", "0..0"]),
    ({"op": "insert_rule", "path": "self.high", "feature": "pot0_ready", "then_skill": "deliver_soup",
      "else_skill": "dance"}, ["else_skill", "'dance'"]),
    ({"op": "delete_rule", "path": "self.high", "keep": "low"}, ["needs a split", "'self.high'"]),
    ({"op": "delete_rule", "path": "self", "keep": "middle"}, ["keep", "middle"]),
    ({"op": "reorder_rules", "path": "self.low.low.low"}, ["reorder_rules", "low branch is a leaf"]),
    ({"op": "change_threshold", "path": "self", "cut": 1}, ["self_holds_soup", "no threshold"]),
    ({"op": "change_threshold", "path": "self.low.low.low", "cut": 1}, ["cut 1", "soups_coming", "0..0"]),
    ({"op": "change_threshold", "path": "self.low.low.low", "cut": "1"}, ["cut"]),
    ({"op": "rewrite", "path": "self"}, ["unknown edit op", "'rewrite'"]),
    ({"op": "swap_skill", "path": "self.high"}, ["swap_skill", "skill"]),
    ({"op": "swap_skill", "path": "self.high", "skill": "deliver_soup", "why": "x"}, ["why"]),
    (["swap_skill"], ["JSON object"]),
])
def test_a_bad_edit_is_one_line_naming_the_value_and_leaves_the_tree_unchanged(bad, words):
    p = _policy()
    before = json.dumps(policy_to_json(p, LAYOUT))
    with pytest.raises(EditError) as info:
        apply_edit(p, bad, LAYOUT)
    text = str(info.value)
    assert "\n" not in text and all(w in text for w in words), text
    assert json.dumps(policy_to_json(p, LAYOUT)) == before


def test_cut_ranges_come_from_the_feature_kind_or_else_from_the_probe_states():
    import ast

    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.policytree.distil import Feature
    from beliefgate.policytree.edits import _int_literal, _value_range

    v = vocabularies(LAYOUT, True)["self"]
    assert v.cut_range["pot0_onions"] == (0, 2) and v.cut_range["pot0_ticks_left"] == (0, 19)
    assert v.cut_range["soups_coming"] == (0, 0) and v.cut_range["self_holds_dish"] == (0, 0)
    # a numeric feature distillation may add later, which can be negative: its range is what the probes show
    net = Feature("net_onions", "x", "onions missing net of the teammate's",
                  lambda d, m: d["pot"][0]["count"] - 1 - (d["holdings"]["teammate"] == "onion"), False)
    probes = domain_for_layout(LAYOUT).probe_states(LAYOUT, 0)
    assert _value_range(net, {}, probes) == (-2, 2)
    assert _int_literal(ast.parse("-1", mode="eval").body) == -1 and _int_literal(ast.parse("2.5", mode="eval").body) is None


def test_an_insert_may_not_grow_the_tree_past_the_depth_limit():
    from beliefgate.policytree.edits import MAX_DEPTH

    p, path = _policy(), "self.high"
    while path.count(".") < MAX_DEPTH:
        p = apply_edit(p, {"op": "insert_rule", "path": path, "feature": "pot0_ready", "then_skill": "deliver_soup",
                           "else_skill": "place_obj_on_counter"}, LAYOUT)
        path += ".high"
    with pytest.raises(EditError, match="deeper than"):
        apply_edit(p, {"op": "insert_rule", "path": path, "feature": "pot0_ready", "then_skill": "deliver_soup",
                       "else_skill": "place_obj_on_counter"}, LAYOUT)
    inserts = [b["properties"]["path"]["enum"] for b in edit_schema(p, LAYOUT)["anyOf"]
               if b["properties"]["op"]["const"] == "insert_rule"]
    assert all(path not in enum for enum in inserts)  # nor does the schema offer it
    assert any("self.high.low" in enum for enum in inserts)


# ------------------------------------------------------------------------------ the schema
def _samples(schema, per_branch, rng):
    for branch in schema["anyOf"]:
        props = branch["properties"]
        for _ in range(per_branch):
            yield {k: v["const"] if "const" in v else rng.choice(v["enum"]) for k, v in props.items()}


ALL_OPS = {"insert_rule", "delete_rule", "reorder_rules", "change_threshold", "swap_skill"}


@pytest.mark.parametrize("make,layout,ops", [(_policy, LAYOUT, ALL_OPS),
                                             (_split_policy, "forced_coordination", ALL_OPS - {"reorder_rules"})])
def test_every_edit_the_schema_admits_applies(make, layout, ops):
    p = make()
    schema = edit_schema(p, layout)
    assert {b["properties"]["op"]["const"] for b in schema["anyOf"]} == ops  # no elif chain: nothing to reorder
    for branch in schema["anyOf"]:  # every value is an enum or a const: a grammar can hold it exactly
        assert branch["additionalProperties"] is False and set(branch["required"]) == set(branch["properties"])
        assert all(set(v) <= {"enum", "const"} for v in branch["properties"].values())
    rng = random.Random(0)
    for e in _samples(schema, 40, rng):
        apply_edit(p, e, layout)
    leaves = [k for k, n in paths(p).items() if isinstance(n, Leaf)]
    swap = [b for b in schema["anyOf"] if b["properties"]["op"]["const"] == "swap_skill"]
    assert sorted(x for b in swap for x in b["properties"]["path"]["enum"]) == sorted(leaves)
    assert schema_size(schema) > 1000


def test_only_trees_that_can_change_the_cook_are_offered():
    from beliefgate.policytree.edits import effective_roots

    p = _policy()
    assert effective_roots(p) == ["self"]  # the self tree reads no prediction: partner edits cannot pay
    offered = {x for b in edit_schema(p, LAYOUT, effective_roots(p))["anyOf"] for x in b["properties"]["path"]["enum"]}
    assert offered and all(x.startswith("self") for x in offered)
    q = apply_edit(p, {"op": "insert_rule", "path": "self.low.low.low.high", "feature": "predicted_pickup_dish",
                       "then_skill": "pickup_onion", "else_skill": "pickup_dish"}, LAYOUT)
    assert effective_roots(q) == ["partner", "self"]
    assert effective_roots(_split_policy()) == ["self.seat0", "self.seat1"]
    with pytest.raises(EditError, match="unknown tree root 'self.seat0'"):
        edit_schema(p, LAYOUT, ["self.seat0"])


def test_the_schema_becomes_a_llama_cpp_grammar():
    grammar = pytest.importorskip("llama_cpp.llama_grammar")
    schema = edit_schema(_policy(), LAYOUT)
    gbnf = grammar.json_schema_to_gbnf(json.dumps(schema))  # llama-cpp-python's server falls back to plain JSON
    assert '"\\"self.low.low.low.low\\""' in gbnf and '"\\"predicted_pickup_dish\\""' in gbnf  # if this raised


# ------------------------------------------------------------------------------ storage
def test_policies_round_trip_through_json_and_tree_files(tmp_path):
    for p, layout in ((_policy(), LAYOUT), (_split_policy(), "forced_coordination")):
        data = policy_to_json(p, layout)
        back, lay = policy_from_json(json.loads(json.dumps(data)))
        assert lay == layout and same_trees(back, p, layout) and back.note == p.note
        code = emit_code(p, layout, "header line one\nheader line two")
        parsed, lay = parse_tree_file(code)
        assert lay == layout and same_trees(parsed, p, layout) and parsed.note == "header line one\nheader line two"
        assert check_tree(code, layout, 0) is None and check_tree(code, layout, 1) is None
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "best.py").write_text(emit_code(_policy(), LAYOUT, "h"))
    assert load_policy(tmp_path / "run")[2].name == "best.py"
    (tmp_path / "run" / "best_policy.json").write_text(json.dumps(policy_to_json(_policy("pickup_dish"), LAYOUT)))
    p, layout, path = load_policy(tmp_path / "run")  # an edit run's structured tree comes first
    assert path.name == "best_policy.json" and paths(p)["self.high"] == Leaf("pickup_dish")


def test_edited_code_answers_what_the_edited_tree_answers():
    from beliefgate.envs.domain import domain_for_layout
    from beliefgate.policytree.sandbox import Sandbox

    p = apply_edit(_policy(), {"op": "insert_rule", "path": "self.low.low.low.high", "feature": "pot0_ticks_left",
                               "cut": 5, "then_skill": "pickup_onion", "else_skill": "pickup_dish"}, LAYOUT)
    p = apply_edit(p, {"op": "reorder_rules", "path": "self"}, LAYOUT)
    code = emit_code(p, LAYOUT, "edited")
    with Sandbox(code, "PredictTeammateThenPlan") as box:
        for state in domain_for_layout(LAYOUT).probe_states(LAYOUT, 1):
            assert tuple(box.call(state)) == p.predict(state)


@pytest.mark.parametrize("text,words", [
    ("def PredictTeammateThenPlan(state):\n    return 'pickup_onion', 'pickup_onion'\n", ["no docstring"]),
    ("def f(:\n", ["not Python"]),
])
def test_files_that_are_not_distilled_trees_are_refused(text, words):
    with pytest.raises(PolicyFileError) as info:
        parse_tree_file(text, "t.py")
    assert all(w in str(info.value) for w in words) and "\n" not in str(info.value)


def test_a_hand_edited_or_seed_tree_file_is_refused():
    from beliefgate.policytree.seeds import seed_code

    code = emit_code(_policy(), LAYOUT, "h")
    with pytest.raises(PolicyFileError, match="not a tree file written by distillation"):
        parse_tree_file(seed_code(LAYOUT), "seed")
    with pytest.raises(PolicyFileError, match="not a feature of this tree"):
        parse_tree_file(code.replace('state["holdings"]["self"] == "soup"', 'state["timestep"] > 3'), "x")
    with pytest.raises(PolicyFileError, match="does not read back"):
        parse_tree_file(code.replace("    return mate_skill", "    # a comment\n    return mate_skill"), "x")
    with pytest.raises(PolicyFileError, match="'juggle' is not one this tree may answer"):
        parse_tree_file(code.replace('return "deliver_soup"', 'return "juggle"'), "x")
    bad = policy_to_json(_policy(), LAYOUT)
    bad["trees"]["self"]["cut"] = 5
    with pytest.raises(PolicyFileError, match="cut 5"):
        policy_from_json(bad, "p.json")


# ------------------------------------------------------------------------------ the loop
class SchemaScripted(Scripted):
    """The learn tests' double, also keeping the schema of every request."""

    def __init__(self, **answers):
        super().__init__(**answers)
        self.schemas = []

    def get_response(self, system_instructions, input, *, role="planner", output_schema=None):
        self.schemas.append(output_schema)
        return super().get_response(system_instructions, input, role=role, output_schema=output_schema)


SETTINGS = dict(rollouts=2, horizon=100, seed=1000)
FIX = {"op": "swap_skill", "path": "self.high", "skill": "deliver_soup"}    # serve the soup self holds
WORSE = {"op": "swap_skill", "path": "self.low.low.high", "skill": "place_obj_on_counter"}  # never pot an onion


def test_edit_loop_counts_every_outcome_and_keeps_only_better_trees(tmp_path):
    start = tmp_path / "start.json"
    start.write_text(json.dumps(policy_to_json(_policy("place_obj_on_counter"), LAYOUT)))  # never serves itself
    out = tmp_path / "run"
    answers = ["no json at all", json.dumps({"op": "swap_skill", "path": "self.high.low", "skill": "deliver_soup"}),
               json.dumps(WORSE), json.dumps(WORSE), json.dumps({**FIX, "skill": "place_obj_on_counter"}),
               json.dumps(FIX)]
    model = SchemaScripted(edit=answers + ["unused"])
    summary = edit(start, LAYOUT, ["balanced"], model, out, iterations=6, **SETTINGS)

    outcomes = [h["outcome"].split(":")[0] for h in summary["history"]]
    assert outcomes == ["starting tree", "unparsed", "invalid", "reverted", "repeated", "no_change", "accepted"]
    c = summary["counts"]
    assert (c["proposed"], c["unparsed"], c["invalid"], c["reverted"], c["repeated"], c["no_change"]) == (6, 1, 1, 1, 1, 1)
    assert c["applied"] == 2 and c["accepted"] == 2 and c["no_answer"] == c["unusable"] == 0
    assert summary["best_iteration"] == 6 and summary["reward_after"] > summary["reward_before"]
    assert summary["nq"] == 6 == len((out / "llm_calls.jsonl").read_text().splitlines())
    assert summary["history"][4]["reward"] is None  # the repeat was not played again
    assert "scored" in summary["history"][4]["outcome"] and "iteration 3" in summary["history"][4]["outcome"]

    # the accepted tree is the best, as code and as structure; the note keeps the edit
    best, layout, _ = load_policy(out)
    assert same_trees(best, load_policy(out / "iter_06" / "policy.json")[0], LAYOUT)
    assert paths(best)["self.high"] == Leaf("deliver_soup")
    assert (out / "best.py").read_text() == (out / "iter_06" / "code.py").read_text()
    assert "Edit (iteration 6): swap_skill at self.high to deliver_soup" in (out / "best.py").read_text()
    assert json.loads((out / "config.json").read_text())["kind"] == "edit"
    for k in range(1, 7):  # every answer is kept with what became of it
        record = json.loads((out / f"iter_{k:02d}" / "edit.json").read_text())
        assert record["reply"] == answers[k - 1]
    assert "error" in json.loads((out / "iter_02" / "edit.json").read_text())

    # the prompt shows the tree with its paths and the outcomes so far; the schema enumerates the tree's paths
    last = model.requests[-1][1][-1]["content"]
    assert "self.high: place_obj_on_counter" in last and "repeated" in last and "reverted" in last
    assert "You may edit: self. Not partner" in last
    assert "self.high" in json.dumps(model.schemas[-1]) and "partner.low" not in json.dumps(model.schemas[-1])

    # resumption: one more iteration edits the accepted tree
    again = SchemaScripted(edit=[json.dumps(WORSE)])
    resumed = edit(start, LAYOUT, ["balanced"], again, out, iterations=7, **SETTINGS)
    assert [h["iteration"] for h in resumed["history"]] == list(range(8)) and resumed["nq"] == 7
    assert "self.high: deliver_soup" in again.requests[0][1][-1]["content"]
    with pytest.raises(LearnConfigError, match="rollouts"):
        edit(start, LAYOUT, ["balanced"], again, out, iterations=8, **{**SETTINGS, "rollouts": 3})


def test_ops_restrict_the_schema_and_a_tree_with_nothing_to_offer_asks_no_model(tmp_path):
    p = _policy()
    only = edit_schema(p, LAYOUT, ops=("change_threshold", "swap_skill"))
    assert {b["properties"]["op"]["const"] for b in only["anyOf"]} == {"change_threshold", "swap_skill"}
    with pytest.raises(EditError, match="unknown edit op 'rotate'"):
        edit_schema(p, LAYOUT, ops=("rotate",))
    with pytest.raises(EditConfigError, match="rotate"):
        prepare(tmp_path / "x.json", LAYOUT, ["balanced"], ops=("rotate",))

    start = tmp_path / "leaf.json"
    start.write_text(json.dumps(policy_to_json(FittedPolicy(p.partner, {None: Leaf("pickup_onion")}, True, ""),
                                               LAYOUT)))
    model = SchemaScripted(edit=[])  # any call would fail: there is nothing to delete in a one-leaf self tree
    summary = edit(start, LAYOUT, ["balanced"], model, tmp_path / "run", iterations=1, ops=("delete_rule",),
                   **{**SETTINGS, "rollouts": 1, "horizon": 20})
    assert summary["counts"]["skipped"] == 1 and summary["nq"] == 0 and not model.requests
    assert summary["history"][1]["outcome"].startswith("skipped: no delete_rule edit applies")


def test_tree_lines_name_every_path():
    lines = tree_lines(_policy())
    assert lines[0] == "partner: if teammate_holds_onion" and "      self.low.low.low: if soups_coming > 0" in lines
    assert len(lines) == len(paths(_policy()))


# ------------------------------------------------------------------------------ CLI
@pytest.fixture
def policy_file(tmp_path):
    path = tmp_path / "start.json"
    path.write_text(json.dumps(policy_to_json(_policy(), LAYOUT)))
    return path


@pytest.mark.parametrize("args,words", [
    (["--from", "{tmp}/missing.json"], ["missing.json"]),
    (["--from", "{tmp}"], ["neither best_policy.json"]),
    (["--from", "{tmp}/seed.py"], ["seed.py", "not a tree file written by distillation"]),
    (["--from", "{tmp}/junk.json"], ["junk.json", "not JSON"]),
    (["--layout", "coordination_ring"], ["made for cramped_room", "coordination_ring"]),
    (["--layout", "v2/cramped_room_v2"], ["v2/cramped_room_v2"]),
    (["--partner", "nosuch"], ["nosuch"]),
    (["--partner", "balanced", "--partner", "balanced"], ["--partner", "balanced"]),
    (["--rollouts", "0"], ["rollouts"]),
    (["--op", "rotate"], ["rotate"]),
    ([], ["--llm-base-url"]),
])
def test_bad_edit_input_is_one_line_exit_2_and_writes_nothing(tmp_path, policy_file, monkeypatch, args, words):
    from beliefgate.policytree.seeds import seed_code

    monkeypatch.delenv("BELIEFGATE_LLM_BASE_URL", raising=False)
    (tmp_path / "seed.py").write_text(seed_code(LAYOUT))
    (tmp_path / "junk.json").write_text("{not json")
    base = {"--from": str(policy_file), "--layout": LAYOUT, "--partner": "balanced"}
    for flag in base.copy():
        if flag in args:
            base.pop(flag)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    server = [] if words == ["--llm-base-url"] else ["--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"]
    argv = (["policytree", "edit", "--out", str(tmp_path / "out")] + [x for kv in base.items() for x in kv] + args
            + server)
    _one_line_error(CliRunner().invoke(app, argv), *words)
    assert not (tmp_path / "out").exists()


def test_an_edit_run_refuses_a_run_dir_of_another_kind(tmp_path, policy_file):
    from beliefgate.policytree.learn import LearnConfig, Learner

    llm_dir = tmp_path / "llm"
    Learner(LearnConfig(LAYOUT, "balanced"), None, llm_dir)
    before = {p.name: p.read_bytes() for p in llm_dir.iterdir()}
    res = CliRunner().invoke(app, ["policytree", "edit", "--from", str(policy_file), "--layout", LAYOUT, "--partner",
                                   "balanced", "--out", str(llm_dir), "--llm-base-url", "http://127.0.0.1:9/v1",
                                   "--llm-model", "m"])
    _one_line_error(res, "'llm' run", "'edit' run")
    assert {p.name: p.read_bytes() for p in llm_dir.iterdir()} == before
    cfg, start = prepare(policy_file, LAYOUT, ["balanced"], **SETTINGS)
    Editor(cfg, None, tmp_path / "e", start)
    res = CliRunner().invoke(app, ["policytree", "learn", "--layout", LAYOUT, "--partner", "balanced", "--out",
                                   str(tmp_path / "e"), "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"])
    _one_line_error(res, "'edit' run")


def test_parse_edit_rejects_what_the_model_should_not_write():
    assert parse_edit({"op": "reorder_rules", "path": "self"}).op == "reorder_rules"
    with pytest.raises(EditError, match="unknown edit op None"):
        parse_edit({"path": "self"})



# ------------------------------------------------------------------------------ the real server
from test_policytree_live import server  # noqa: E402,F401  (the live tests' llama.cpp + SmolLM2 fixture, reused)


def test_edits_against_the_real_server(server, tmp_path):  # noqa: F811
    """SmolLM2-135M decoding under the edit schema: every answer parses and applies (sized for 2 cores:
    two edits of a small tree, one 60-step rollout per candidate, temperature 0)."""
    from beliefgate.planners.client import LLMClient, LLMSettings
    from beliefgate.policytree.edits import OPS

    start = tmp_path / "start.json"
    start.write_text(json.dumps(policy_to_json(_policy("place_obj_on_counter"), LAYOUT)))
    client = LLMClient(LLMSettings(base_url=server.base_url, model="smollm2", max_tokens=160, timeout_s=120.0,
                                   deadline_s=300.0))
    out = tmp_path / "run"
    summary = edit(start, LAYOUT, ["balanced"], client, out, iterations=2, rollouts=1, horizon=60,
                   max_prompt_chars=6000)
    c = summary["counts"]
    assert summary["nq"] == c["proposed"] == 2 and summary["nq_failed"] == 0  # the prompt fits the context
    assert c["no_answer"] == c["unparsed"] == c["invalid"] == 0, summary["history"]  # the schema held
    assert c["applied"] + c["no_change"] + c["repeated"] == 2
    assert client.response_format in ("json_schema", "json_object_schema")  # decoded under the schema
    for k in (1, 2):
        record = json.loads((out / f"iter_{k:02d}" / "edit.json").read_text())
        assert json.loads(record["reply"])["op"] in OPS and record["edit"]["path"]
    assert summary["best_iteration"] in (0, 1, 2) and (out / "best_policy.json").is_file()
