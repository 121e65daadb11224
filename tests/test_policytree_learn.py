"""The distillation loop's control flow with a scripted model double (the real-server run is in
tests/test_policytree_live.py): parsing, repair, seed fallback, accept/revert, memory, resume, NQ."""

import json

import pytest

from beliefgate.planners.errors import LLMUnavailableError, ModelOutputError
from beliefgate.planners.model import ChatModel, ModelResponse
from beliefgate.policytree.learn import (LearnConfigError, Learner, LearnConfig, fit, learn, parse_code,
                                         parse_reflection, parse_tree, split_tree_text, with_docstring)
from beliefgate.policytree.seeds import seed_code, tree_text

SEED_BODY = seed_code("cramped_room").split('"""', 2)[2]  # the seed's code without its docstring
WAITER = ("def PredictTeammateThenPlan(state):\n"
          "    if state['holdings']['self'] == 'empty':\n"
          "        return 'pickup_onion', 'place_obj_on_counter'\n"  # cannot be done empty-handed: waits
          "    return 'pickup_onion', 'place_obj_on_counter'\n")
TREE = {"partner_tree": "1. teammate holds soup -> deliver_soup\n2. otherwise -> pickup_onion",
        "self_tree": "1. self holds soup -> deliver_soup\n2. self empty -> pickup_onion\n3. otherwise -> pickup_dish"}
REFLECTION = {"tree_summary": {"summary": "onions first, dishes when a soup cooks", "final_score": 12345},
              "reflection": {"target_branch": "self tree rule 2", "scope": "local_single_branch",
                             "before": "always fetches onions", "after": ["fetch a dish when a soup is ready"],
                             "unchanged": ["the partner tree"], "expected_effect": "faster plating"}}


class Scripted(ChatModel):
    """Answers per role from queues (the last answer repeats); records every request."""

    def __init__(self, **answers):
        self.answers = {k: list(v) for k, v in answers.items()}
        self.requests = []

    def get_response(self, system_instructions, input, *, role="planner", output_schema=None):
        self.requests.append((role, list(input)))
        queue = self.answers[role.replace("policytree_", "")]
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Exception):
            raise answer
        return ModelResponse(answer)


def _settings(**kw):
    return {"iterations": 2, "rollouts": 1, "horizon": 60, **kw}


def _lines(run):
    return [json.loads(x) for x in (run / "llm_calls.jsonl").read_text().splitlines()]


def test_parsers():
    tree = parse_tree(json.dumps(TREE))
    assert tree.partner.startswith("1. teammate") and "pickup_dish" in tree.own
    rendered = tree.render("cramped_room")
    assert split_tree_text(rendered) == tree.__class__(tree.partner.strip(), tree.own.strip())
    assert parse_tree("**Partner Inference Tree**\nteammate empty -> pickup_onion always\n"
                      "**Self Action Selection Tree**\nself empty -> pickup_dish when ready").own.endswith("ready")
    for junk in ("", "hello", json.dumps({"partner_tree": " ", "self_tree": "y"}), '{"partner_tree": 1}'):
        with pytest.raises(ModelOutputError):
            parse_tree(junk)
    assert "def PredictTeammateThenPlan" in parse_code("Here:\n```python\n" + SEED_BODY + "```")
    assert parse_code(json.dumps({"code": SEED_BODY})).strip() == SEED_BODY.strip()
    with pytest.raises(ModelOutputError):
        parse_code('{"code": "print(1)"}')
    parsed, corrected = parse_reflection(json.dumps(REFLECTION), 40.0)
    assert corrected and parsed.tree_summary.final_score == 40.0
    bad = json.loads(json.dumps(REFLECTION))
    bad["reflection"]["scope"] = "rewrite everything"
    with pytest.raises(ModelOutputError, match="reflection.scope"):
        parse_reflection(json.dumps(bad), 40.0)
    text = 'a tree with """quotes""" and a \\ backslash'
    assert tree_text(with_docstring(text, SEED_BODY)) == text


def test_fit_keeps_the_budget_and_short_parts():
    parts = fit(1000, 400, {"a": "x" * 50, "b": "y" * 5000, "c": "z" * 5000})
    assert parts["a"] == "x" * 50
    assert sum(map(len, parts.values())) <= 600 and parts["b"].endswith("[... cut ...]")


def test_good_answers_accept_then_a_worse_tree_is_reverted(tmp_path):
    model = Scripted(planner=[json.dumps(TREE)], coder=[json.dumps({"code": SEED_BODY}), json.dumps({"code": WAITER})],
                     summarizer=[json.dumps(REFLECTION)], repair=["unused"])
    summary = learn("cramped_room", "balanced", model, tmp_path, **_settings())
    hist = summary["history"]
    assert [h["accepted"] for h in hist] == [True, False] and hist[0]["source"] == "llm"
    assert hist[1]["reward"] < hist[0]["reward"]
    assert summary["best_iteration"] == 1 and (tmp_path / "best.py").read_text() == (
        tmp_path / "iter_01" / "code.py").read_text()
    assert "PredictTeammateThenPlan" in (tmp_path / "best.py").read_text()
    assert [r["role"] for r in _lines(tmp_path)] == ["planner", "coder", "summarizer", "planner", "coder"]
    assert summary["nq"] == len(model.requests) == 5 and summary["counts"]["score_corrected"] == 1
    # the second planner call saw the accepted tree, the memory and the one-branch reflection
    second = model.requests[3][1][-1]["content"]
    assert "onions first, dishes when a soup cooks" in second and "self tree rule 2" in second
    assert "**Self Action Selection Tree**" in second
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["memory"][0]["source"] == "summarizer" and "discarded" in state["last_rejected"]


def test_junk_goes_through_repair_then_the_seed_and_later_junk_is_rejected(tmp_path):
    model = Scripted(planner=[json.dumps(TREE), "no tree at all"], coder=["import os"],
                     repair=["still nothing", json.dumps({"code": "import os\n" + SEED_BODY})],
                     summarizer=["not json"])
    summary = learn("cramped_room", "balanced", model, tmp_path, **_settings())
    status = json.loads((tmp_path / "iter_01" / "status.json").read_text())
    errors = [a["error"] for a in status["code_attempts"]]
    assert len(errors) == 3 and "PredictTeammateThenPlan" in errors[0] and "[import]" in errors[2]
    assert status["source"] == "seed" and status["accepted"]
    repair_prompt = [r for r in model.requests if r[0] == "policytree_repair"][1][1][-1]["content"]
    assert "the answer holds no" in repair_prompt  # the error is shown to the repair prompt
    counts = summary["counts"]
    assert counts["repairs"] == 2 and counts["coder_unusable"] == 1 and counts["seed_fallbacks"] == 1
    assert counts["summarizer_unusable"] == 1 and counts["planner_unusable"] == 1 and counts["rejected"] == 1
    assert summary["history"][1]["source"] is None and not summary["history"][1]["accepted"]
    assert (tmp_path / "best.py").read_text() == seed_code("cramped_room")
    assert summary["nq"] == len(model.requests) == 1 + 1 + 2 + 1 + 1


def test_an_unreachable_server_is_counted_and_nothing_crashes(tmp_path):
    model = Scripted(planner=[LLMUnavailableError("connection refused")], coder=["x"], repair=["x"],
                     summarizer=[LLMUnavailableError("connection refused")])
    summary = learn("cramped_room", "balanced", model, tmp_path, **_settings())
    assert summary["nq"] == summary["nq_failed"] == 3  # planner, summarizer (seed accepted), planner
    assert summary["best_iteration"] == 1 and summary["counts"]["seed_fallbacks"] == 1
    assert all(r["error"].startswith("unavailable") for r in _lines(tmp_path))


def test_resume_continues_after_the_last_iteration_and_refuses_other_settings(tmp_path):
    answers = dict(planner=[json.dumps(TREE)], coder=[json.dumps({"code": SEED_BODY})],
                   summarizer=[json.dumps(REFLECTION)], repair=["x"])
    learn("cramped_room", "balanced", Scripted(**answers), tmp_path, **_settings(iterations=1))
    again = Scripted(**answers)
    summary = learn("cramped_room", "balanced", again, tmp_path, **_settings(iterations=2))
    assert [h["iteration"] for h in summary["history"]] == [1, 2]
    assert [r[0] for r in again.requests] == ["policytree_planner", "policytree_coder"]  # only iteration 2
    assert summary["nq"] == 3 + 2
    with pytest.raises(LearnConfigError, match="rollouts"):
        Learner(LearnConfig("cramped_room", "balanced", **_settings(rollouts=3)), again, tmp_path)


def test_seed_start_evaluates_the_seed_first(tmp_path):
    model = Scripted(planner=["junk"], coder=["x"], repair=["x"], summarizer=[json.dumps(REFLECTION)])
    summary = learn("cramped_room", "balanced", model, tmp_path, **_settings(iterations=1, start="seed"))
    assert [h["iteration"] for h in summary["history"]] == [0, 1]
    assert summary["history"][0]["source"] == "seed" and summary["counts"]["seed_fallbacks"] == 0


def test_bad_configuration():
    with pytest.raises(LearnConfigError):
        LearnConfig("cramped_room", "balanced", rollouts=0)
    with pytest.raises(LearnConfigError):
        LearnConfig("cramped_room", "balanced", start="magic")


@pytest.mark.parametrize("name,text,match", [
    ("state.json", '{"completed": 1, "bogus": 2}', "does not write \\(bogus\\)"),
    ("state.json", "[1, 2]", "JSON list, not an object"),
    ("state.json", '{"completed": 1', "is not JSON"),
    ("state.json", '{"counts": {"accepted": "many"}}', "bad counts.accepted"),
    ("config.json", '{"layout": ', "is not JSON"),
    ("llm_calls.jsonl", None, "line 4 is not JSON"),
])
def test_a_damaged_run_directory_is_one_error_naming_the_file_and_changes_nothing(tmp_path, name, text, match):
    answers = dict(planner=[json.dumps(TREE)], coder=[json.dumps({"code": SEED_BODY})],
                   summarizer=[json.dumps(REFLECTION)], repair=["x"])
    learn("cramped_room", "balanced", Scripted(**answers), tmp_path, **_settings(iterations=1))
    target = tmp_path / name
    target.write_text(text if text is not None else target.read_text() + '{"role": "plan')  # a torn last line
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    again = Scripted(**answers)
    with pytest.raises(LearnConfigError, match=f"{name} .*{match}"):
        learn("cramped_room", "balanced", again, tmp_path, **_settings(iterations=2))
    assert again.requests == []
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("text,match", [('{"completed": "3"}', "bad completed"), ('{"completed": true}', "bad completed"),
                                        ('{"completed": -1}', "negative completed"),
                                        ('{"counts": {"x": 2}}', "counters a learning run does not keep \\(x\\)")])
def test_state_json_is_read_strictly(tmp_path, text, match):
    from beliefgate.policytree.learn import _read_state

    (tmp_path / "state.json").write_text(text)
    with pytest.raises(LearnConfigError, match=match):
        _read_state(tmp_path / "state.json")
    (tmp_path / "state.json").write_text('{"completed": 2, "counts": {"repairs": 1}}')
    state = _read_state(tmp_path / "state.json")
    assert state.completed == 2 and state.counts["repairs"] == 1 and state.counts["accepted"] == 0
