"""What a newcomer meets on the tour (issue #47): log headers carry the action legend (old logs still
load), and an LLM agent played without a model says so once per episode, logged and counted."""

from __future__ import annotations

import json

import pytest

from beliefgate.agents.planning import NO_LLM_SERVER
from beliefgate.envs.trajlog import LogFormatError, read_log
from beliefgate.eval.episode import run_episode


def test_log_headers_carry_the_action_legend_and_old_logs_still_load(tmp_path):
    path = tmp_path / "ep.jsonl"
    run_episode("cramped_room", "balanced", "plater", seed=0, horizon=4, log_path=path)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["action_legend"] == ["north", "south", "east", "west", "stay", "interact"]
    old = tmp_path / "old.jsonl"  # a log written before the legend
    old.write_text("\n".join([json.dumps({k: v for k, v in header.items() if k != "action_legend"}), *lines[1:]]) + "\n")
    assert read_log(old).header.action_legend == header["action_legend"]
    wrong = tmp_path / "wrong.jsonl"  # a legend that is not the domain's would misread every action
    wrong.write_text("\n".join([json.dumps({**header, "action_legend": ["east", "south", "west", "north", "stay",
                                                                         "interact"]}), *lines[1:]]) + "\n")
    with pytest.raises(LogFormatError, match="action_legend"):
        read_log(wrong)


@pytest.mark.parametrize("ego", ["llm-judge", "hypothetical-minds", "proagent"])
def test_an_llm_agent_without_a_server_says_so_once_per_episode(ego):
    from beliefgate.agents.registry import make_agent

    agent = make_agent(ego)
    for seed in (0, 1):  # one agent object, two episodes: the notice is made once per episode
        agent.reset("cramped_room", 0, seed)
        assert agent.fallback_log.total == 1
    for seed in (0, 1):
        result = run_episode("cramped_room", ego, "plater", seed=seed, horizon=12)
        events = [e for row in result.trajectory.steps for e in row.info[0]["fallback_events"]]
        notices = [e for e in events if e["detail"] == NO_LLM_SERVER]
        assert len(notices) == 1 and notices[0]["role"] == "planner" and notices[0]["reason"] == "unavailable"
        assert result.trajectory.steps[0].info[0]["fallback_events"] == notices  # at the first step
        assert result.summary["fallback_counts"]["by_reason"]["unavailable"] >= 1


def test_an_llm_agent_with_a_model_gives_no_notice():
    from beliefgate.planners.model import ChatModel, ModelResponse

    class Echo(ChatModel):
        def get_response(self, system_instructions, input, *, role="planner", output_schema=None):
            return ModelResponse('{"skill": "pickup_onion"}' if role == "planner" else "no")

    result = run_episode("cramped_room", "llm-judge", "plater", seed=0, horizon=8, llm=Echo())
    details = [e["detail"] for row in result.trajectory.steps for e in row.info[0]["fallback_events"]]
    assert NO_LLM_SERVER not in details


def test_the_episode_command_prints_the_no_llm_server_note_once():
    """`episode --ego llm-judge` without --llm-base-url played the rule planner without a word."""
    from typer.testing import CliRunner

    from beliefgate.cli import app

    args = ["episode", "--layout", "cramped_room", "--partner", "plater", "--horizon", "6", "--json"]
    res = CliRunner().invoke(app, [*args, "--ego", "llm-judge"])
    assert res.exit_code == 0, res.output
    assert " ".join(res.output.split()).count(f"note: {NO_LLM_SERVER}") == 1
    res = CliRunner().invoke(app, [*args, "--ego", "bayes-belief"])  # no LLM agent: no note
    assert res.exit_code == 0 and NO_LLM_SERVER not in res.output, res.output
