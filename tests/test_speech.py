"""Talking in words (agents/speech.py): the channel's ``say``, writing and reading, fallbacks, scoring.

The model here is a scripted double (it writes the prompt's plain sentence and reads those sentences
back by their fixed form): these tests check the control flow -- what is sent, delivered, read,
logged and counted. The same paths against a real llama.cpp server are in tests/test_llm_live.py.
"""

import json
import re

import pytest

from beliefgate.agents.flat import FlatAgent
from beliefgate.agents.speech import Speech, parse_sentence, template_words
from beliefgate.envs.messages import Accept, Channel, Decline, Inform, Propose, Request, Say, meant
from beliefgate.eval.episode import run_episode
from beliefgate.eval.social import request_outcomes, speech_accuracy
from beliefgate.envs.overcooked_v2.layouts import HIDDEN_RECIPE
from beliefgate.planners.errors import LLMUnavailableError, ModelOutputError
from beliefgate.planners.model import ChatModel, ModelResponse

V2 = "v2/cramped_room_v2"


def _split(words: str, speaker: int) -> dict:
    roles = {}
    for part in words.split(", "):
        who, role = re.match(r"(I|player \d+) takes? (\w+)", part).groups()
        roles[str(speaker if who == "I" else int(who.split()[1]))] = role
    return roles


def _answered(what: str, speaker: int, me: int, open_lines: str):
    """The id of the open message (the prompt's listing, in the reader's words) that ``what`` restates."""
    for mid, kind, body in re.findall(r"- (\d+): your (\w+): (.*)", open_lines):
        if kind == "propose" and "take" in what and _split(body, me) == _split(what, speaker):
            return int(mid)
        if kind == "request" and "take" not in what and body.endswith(f"do {what}"):
            return int(mid)
    return None


def _read_template(sentence: str, speaker: int, me: int, open_lines: str = "") -> dict:
    """The typed form of one of :func:`template_words`' sentences (what a perfect reader answers)."""
    m = re.match(r"Let's split the work: (.*)\.$", sentence)
    if m:
        return {"kind": "propose", "roles": _split(m.group(1), speaker)}
    m = re.match(r"Player (\d+), please do (\w+)\.$", sentence)
    if m:
        return {"kind": "request", "seat": int(m.group(1)), "skill": m.group(2)}
    m = (re.match(r"(OK), I'll do (\w+)()\.$", sentence) or re.match(r"(No), I won't do (\w+)(?:: (.*))?\.$", sentence)
         or re.match(r"(OK, agreed|No)(?::| to)? ?([^:]*?)(?:: (.*))?\.$", sentence))
    if m:
        out = {"kind": "accept" if m.group(1).startswith("OK") else "decline"}
        ref = _answered(m.group(2), speaker, me, open_lines) if m.group(2) else None
        if ref is not None:
            out["reply_to"] = ref
        if m.group(3):
            out["reason"] = m.group(3)
        return out
    m = re.match(r"The recipe is ([\d-]+)\.$", sentence)
    if m:
        return {"kind": "inform", "goal": m.group(1)}
    return {"kind": "nonsense"}


class Interpreter(ChatModel):
    """Writes the prompt's plain sentence; reads :func:`template_words` sentences exactly; has no planner."""

    def __init__(self):
        self.calls = {"speak": 0, "read": 0}

    def get_response(self, system_instructions, input, *, role="planner", output_schema=None):
        if role not in self.calls:
            raise LLMUnavailableError("this double only talks")
        self.calls[role] += 1
        user = input[-1]["content"]
        if role == "speak":
            return ModelResponse(json.dumps({"say": re.search(r'A plain way to say it: "(.*)"', user).group(1)}))
        speaker, words = re.search(r'Player (\d+) said: "(.*)"', user).groups()
        me = int(re.search(r"You are player (\d+)", input[0]["content"]).group(1))
        return ModelResponse(json.dumps(_read_template(words, int(speaker), me, user)))


class Mumbler(ChatModel):
    """Answers every prompt with words that are neither a sentence in JSON nor a message."""

    def get_response(self, system_instructions, input, *, role="planner", output_schema=None):
        if role == "speak":
            return ModelResponse(json.dumps({"say": "x" * 500}))
        return ModelResponse("{\"kind\": \"sing\"}")


# ---------------------------------------------------------------------- the channel
def _channel():
    return Channel(2, ["pickup_onion", "pickup_dish"], ["ingredient", "plating"], goals=["0-0-1"])


def test_channel_delivers_words_only_and_logs_what_they_mean():
    ch = _channel()
    sent = ch.send(0, 0, [Say(text="Please grab an onion.", means={"kind": "request", "skill": "pickup_onion"}, to=1)])
    ch.end_step()
    assert sent is not None and sent.means["skill"] == "pickup_onion"
    (heard,) = ch.deliver(1)
    assert heard.kind == "say" and heard.text == "Please grab an onion." and heard.means is None
    typed = meant(sent)
    assert isinstance(typed, Request) and typed.skill == "pickup_onion" and typed.id == sent.id == 0


@pytest.mark.parametrize("raw,reason", [
    (Say(text="   "), "empty"),
    (Say(text="fetch a plate", to=1, means={"kind": "request", "skill": "juggle"}), "unknown_skill"),
    (Say(text="the recipe", means={"kind": "inform", "goal": "9-9-9"}), "unknown_goal"),
    (Say(text="yes", means={"kind": "say", "text": "yes"}), "malformed"),
])
def test_channel_refuses_empty_words_and_words_that_mean_a_bad_message(raw, reason):
    ch = _channel()
    assert ch.send(0, 0, [raw]) is None
    assert ch.refusals == {reason: 1}


# ---------------------------------------------------------------------- writing and reading
class _Agent:
    """The parts of a planning agent that Speech uses."""

    def __init__(self, player, model):
        from beliefgate.envs.domain import domain_for_layout

        self.player = player
        self.model = model
        self.fallbacks = []
        self.library = domain_for_layout(V2).controller(V2).library

    def ask_model(self, client, messages, parse, *, role, output_schema=None):
        from beliefgate.planners.model import ask

        asked = ask(client, messages, parse, role=role, output_schema=output_schema)
        if asked.fallback is not None:
            self.fallbacks.append(asked.fallback)
        return asked


def _speech(player, model):
    from beliefgate.envs.overcooked_v2.kitchen import recipe_names

    agent = _Agent(player, model)
    sp = Speech(agent, model)
    sp.start(2, agent.library, recipe_names(V2))
    return agent, sp


def test_round_trip_through_a_channel_keeps_every_kind():
    model = Interpreter()
    (a0, s0), (a1, s1) = _speech(0, model), _speech(1, model)
    ch = Channel(2, a0.library.names, a0.library.roles, goals=s0.vocabulary.goals)
    said = [Propose(roles={0: "ingredient_0", 1: "plating"}), Request(to=1, skill="pickup_plate"),
            Inform(goal="0-0-1")]
    for t, msg in enumerate(said):
        (say,) = s0.to_words([msg])
        assert say.kind == "say" and say.text == template_words(msg, 0)
        s0.sent(ch.send(0, t, [say]))
        ch.end_step()
        (typed,) = s1.from_words(ch.deliver(1))
        want = msg.model_dump(exclude={"sender", "t", "id", "text", "to"}, exclude_none=True)
        got = typed.model_dump(exclude={"sender", "t", "id", "text", "to"}, exclude_none=True)
        if want["kind"] == "request":
            want["seat"] = 1
        assert got == want, (msg, typed)
    # the answer to the request: seat 1 accepts in words, seat 0 reads it as an accept of its request
    (ok,) = s1.to_words([Accept(reply_to=1, to=0)])
    s1.sent(ch.send(1, 3, [ok]))
    ch.end_step()
    (read,) = s0.from_words(ch.deliver(0))
    assert isinstance(read, Accept) and read.reply_to == 1
    assert s0.counts["said"] == 3 and s1.counts["read"] == 3 and s0.counts["read"] == 1
    assert not a0.fallbacks and not a1.fallbacks and model.calls == {"speak": 4, "read": 4}


def test_an_answer_to_nothing_and_a_request_of_the_speaker_do_not_read():
    _, sp = _speech(1, Interpreter())
    say = Say(text="OK, agreed.", sender=0, t=0, id=0)
    with pytest.raises(ModelOutputError, match="nothing"):
        sp.parse_read('{"kind": "accept"}', say)
    with pytest.raises(ModelOutputError, match="another seat"):
        sp.parse_read('{"kind": "request", "skill": "pickup_plate", "seat": 0}', say)
    with pytest.raises(ModelOutputError, match="split"):
        sp.parse_read('{"kind": "propose", "roles": {"0": "juggling"}}', say)
    with pytest.raises(ModelOutputError, match="not one of"):
        sp.parse_read('{"kind": "sing"}', say)
    assert isinstance(sp.parse_read('{"kind": "inform", "goal": "0-0-1"}', say), Inform)


def test_parse_sentence_takes_json_or_plain_text_and_refuses_empty_or_long():
    assert parse_sentence('{"say": "  Grab   a plate. "}') == "Grab a plate."
    assert parse_sentence("Grab a plate.") == "Grab a plate."
    for bad in ('{"say": ""}', "x" * 201):
        with pytest.raises(ModelOutputError):
            parse_sentence(bad)


def test_a_model_without_usable_words_falls_back_and_is_counted():
    agent, sp = _speech(0, Mumbler())
    (say,) = sp.to_words([Decline(reply_to=3, to=1, reason="no roles")])
    assert say.text == template_words(Decline(reply_to=3, reason="no roles"), 0) and sp.counts["said_by_template"] == 1
    assert sp.from_words([Say(text="la la", sender=1, t=0, id=4)]) == []
    assert sp.counts["unreadable"] == 1 and sp.info()["reads"] == [{"id": 4, "as": None}]
    assert [(f.role, f.reason) for f in agent.fallbacks] == [("speak", "unusable_reply"), ("read", "unusable_reply")]


# ---------------------------------------------------------------------- episodes
def test_flat_self_play_in_words_tells_and_reads_the_recipe():
    """Both flat seats talk in words on the hidden-recipe kitchen: the recipe told is read by the
    other seat as exactly what was meant, and enters its goal filter."""
    model = Interpreter()
    res = run_episode(V2, "flat", "flat", seed=1000, horizon=120, env_options=HIDDEN_RECIPE[V2], llm=model,
                      llm_teammates=True)
    traj = res.trajectory
    sent = [m for r in traj.steps if r.messages for m in r.messages.sent]
    assert sent and all(m.kind == "say" and m.means is not None and m.text for m in sent)
    acc = speech_accuracy(traj)
    assert acc["reads"] == len(sent) > 0 and acc["exact"] == acc["reads"], acc
    claims = max(r.info[s].get("goal_claims_read", 0) for r in traj.steps for s in (0, 1))
    assert claims >= 1
    last = traj.steps[-1].info
    assert sum(i["speech"]["said"] for i in last) >= len(sent) - 2   # the final step's words come after its info
    assert res.summary["messages"]["by_kind"] == {"say": len(sent)}
    assert request_outcomes(traj) == [] or all(o.skill for o in request_outcomes(traj))


def test_an_offline_listener_does_not_read_words():
    """The ego talks in words, its offline teammate only in the typed form: the teammate's goal filter
    hears no claim from the words, while the ego still reads the teammate's typed messages."""
    model = Interpreter()
    res = run_episode(V2, "flat", "flat", seed=1000, horizon=120, env_options=HIDDEN_RECIPE[V2], llm=model)
    traj = res.trajectory
    ego_said = [m for r in traj.steps if r.messages for m in r.messages.sent if m.sender == 0]
    mate_said = [m for r in traj.steps if r.messages for m in r.messages.sent if m.sender == 1]
    assert ego_said and all(m.kind == "say" for m in ego_said)
    assert all(m.kind != "say" for m in mate_said)
    assert max(r.info[1].get("goal_claims_read", 0) for r in traj.steps) == 0
    if mate_said:
        assert max(r.info[0].get("goal_claims_read", 0) for r in traj.steps) >= 1


def test_llm_teammates_needs_a_model():
    from beliefgate.errors import InputError

    with pytest.raises(InputError, match="llm_teammates"):
        run_episode(V2, "flat", "flat", seed=0, horizon=2, llm_teammates=True)


def test_flat_agent_without_a_model_talks_typed():
    agent = FlatAgent()
    assert agent.speech is None


def test_cli_llm_teammates_without_a_model_is_one_line():
    from typer.testing import CliRunner

    from beliefgate.cli import app

    result = CliRunner().invoke(app, ["episode", "--layout", V2, "--ego", "flat", "--partner", "flat",
                                      "--llm-teammates", "--horizon", "2"])
    assert result.exit_code == 2, result.output
    out = (result.output or "") + (getattr(result, "stderr", "") or "")
    assert "--llm-teammates" in out and "Traceback" not in out
