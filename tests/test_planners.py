"""Planner layer control flow with a scripted OpenAI-compatible double (parsing, retries, fallbacks)."""

from types import SimpleNamespace

import httpx
import openai
import pytest

from beliefgate.planners.client import LLMClient, LLMSettings
from beliefgate.planners.errors import LLMUnavailableError, ModelOutputError, PlannerConfigError
from beliefgate.planners.llm import LLMPlanner
from beliefgate.planners.parse import parse_skill, parse_yes_no
from beliefgate.planners.prompts import planner_messages, render
from beliefgate.planners.types import BeliefBlock, PlannerInput

FEASIBLE = ("pickup_onion", "pickup_dish", "place_obj_on_counter")
REQ = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


def _err(cls, status, message="boom"):
    return cls(message, response=httpx.Response(status, request=REQ), body={"message": message})


def _refusal(cls=openai.InternalServerError, status=500):
    """What llama.cpp answers to a response_format it does not support."""
    return _err(cls, status, "Unsupported response_format type: json_schema")


class Scripted:
    """An `openai.OpenAI` stand-in whose replies (or exceptions) are scripted in order."""

    def __init__(self, *script):
        self.script = list(script)
        self.requests = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs):
        self.requests.append(kwargs)
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        usage = SimpleNamespace(prompt_tokens=10, completion_tokens=3)
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=item))], usage=usage)


def client(*script, **settings):
    fake = Scripted(*script)
    sleeps = []
    c = LLMClient(LLMSettings(base_url="http://127.0.0.1:1/v1", model="m", **settings), openai_client=fake,
                  sleep=sleeps.append)
    return c, fake, sleeps


INPUT = PlannerInput(scene="Kitchen 'cramped_room', step 3.", feasible=FEASIBLE,
                     belief=BeliefBlock({"pickup_onion": 0.8, "pickup_dish": 0.2}, "pickup_onion", 0.8, "gate"),
                     needs={"pickup_onion": 1.0, "pickup_dish": 1.0}, reason="gate")


@pytest.mark.parametrize("reply, expected", [
    ('{"skill": "pickup_dish", "why": "partner gets onions"}', "pickup_dish"),
    ("2", "pickup_dish"),
    ("pickup_onion", "pickup_onion"),
    ("I will do place_obj_on_counter now.", "place_obj_on_counter"),
    ('{"skill": "pick up dish"}', "pickup_dish"),
    ("```json\n{\"skill\": \"pickup_onion\"}\n```", "pickup_onion"),
])
def test_parse_skill(reply, expected):
    assert parse_skill(reply, FEASIBLE) == expected


@pytest.mark.parametrize("reply", ["", "7", "bake a cake", '{"skill": "deliver_soup"}'])
def test_parse_skill_rejects(reply):
    with pytest.raises(ModelOutputError):
        parse_skill(reply, FEASIBLE)


def test_parse_yes_no():
    assert parse_yes_no('{"replan": true}') and not parse_yes_no("No, keep going")
    with pytest.raises(ModelOutputError):
        parse_yes_no("maybe")


def test_prompt_contains_belief_and_feasible_set():
    messages = planner_messages(INPUT)
    user = messages[1]["content"]
    assert "pickup_onion 0.80" in user and "confidence 0.80, high" in user
    assert "1. pickup_onion" in user and "3. place_obj_on_counter" in user
    assert "contradicts" in user  # the gate signal is explained
    with pytest.raises(PlannerConfigError):
        render("planner_user", scene="x")
    with pytest.raises(PlannerConfigError):
        render("no_such_template")


def test_planner_happy_path_and_ledger():
    c, fake, _ = client('{"skill": "pickup_dish"}')
    d = LLMPlanner(c).choose(INPUT)
    assert (d.skill, d.source, d.attempts) == ("pickup_dish", "llm", 1)
    assert fake.requests[0]["temperature"] == 0.0
    assert fake.requests[0]["response_format"]["type"] == "json_schema"
    assert c.ledger.calls("planner") == 1 and c.ledger.summary()["prompt_tokens"] == 10


def test_reask_then_fallback():
    c, fake, _ = client("banana", "still banana", '{"skill": "pickup_onion"}')
    d = LLMPlanner(c).choose(INPUT)
    assert (d.skill, d.source, d.attempts) == ("pickup_onion", "llm", 3)
    assert fake.requests[1]["messages"][-1]["content"].startswith("That is not one of the allowed skills")
    c, _, _ = client(*["nope"] * 4)
    planner = LLMPlanner(c)
    d = planner.choose(INPUT)
    assert d.source == "fallback" and d.skill in FEASIBLE and planner.fallbacks == 1 and d.attempts == 4


def test_json_schema_rejected_downgrades_format():
    c, fake, _ = client(_refusal(), '{"skill": "pickup_onion"}', '{"skill": "pickup_dish"}')
    assert LLMPlanner(c).choose(INPUT).skill == "pickup_onion"
    # the first step down keeps the schema, with the feasible skills as an enum
    fmt = fake.requests[1]["response_format"]
    assert fmt["type"] == "json_object" and fmt["schema"]["properties"]["skill"]["enum"] == list(FEASIBLE)
    LLMPlanner(c).choose(INPUT)
    assert fake.requests[2]["response_format"]["type"] == "json_object"  # remembered
    assert [e.outcome for e in c.ledger.entries] == ["format_downgrade", "ok", "ok"]


def test_format_ladder_walks_down_to_text():
    bad = _refusal(openai.BadRequestError, 400)
    c, fake, _ = client(bad, bad, bad, '{"skill": "pickup_dish"}')
    assert LLMPlanner(c).choose(INPUT).skill == "pickup_dish"
    kinds = [r.get("response_format") for r in fake.requests]
    assert kinds[0]["type"] == "json_schema" and "schema" in kinds[1] and kinds[2] == {"type": "json_object"}
    assert kinds[3] is None
    assert [e.outcome for e in c.ledger.entries] == ["format_downgrade"] * 3 + ["ok"]


def test_retries_with_backoff_then_unavailable_falls_back():
    c, _, sleeps = client(_err(openai.RateLimitError, 429), '{"skill": "pickup_dish"}', response_format="json_object")
    assert LLMPlanner(c).choose(INPUT).skill == "pickup_dish"
    assert sleeps == [0.5]
    conn = openai.APIConnectionError(request=REQ)
    c, _, sleeps = client(conn, conn, conn, conn, response_format="json_object")
    with pytest.raises(LLMUnavailableError, match="4 attempts"):
        c.chat([{"role": "user", "content": "x"}])
    assert sleeps == [0.5, 1.0, 2.0]
    c, _, _ = client(conn, conn, conn, conn, response_format="json_object")
    d = LLMPlanner(c).choose(INPUT)
    assert d.source == "fallback" and "unavailable" in d.note


def test_cache(tmp_path):
    c, fake, _ = client('{"skill": "pickup_dish"}', cache_dir=str(tmp_path))
    LLMPlanner(c).choose(INPUT)
    c2, fake2, _ = client(cache_dir=str(tmp_path))
    assert LLMPlanner(c2).choose(INPUT).skill == "pickup_dish" and fake2.requests == []
    assert c2.ledger.requests == 0 and c2.ledger.calls() == 1


def test_bad_settings():
    with pytest.raises(PlannerConfigError):
        LLMSettings(base_url="ftp://x", model="m")
    with pytest.raises(PlannerConfigError):
        LLMSettings(base_url="http://127.0.0.1:1", model="")


def test_loopback_guard_blocks_external_hosts():
    import socket

    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("93.184.216.34", 80), timeout=1)


@pytest.mark.parametrize("error, reason", [
    (_err(openai.NotFoundError, 404, "model 'gpt-9' not found"), "rejected"),
    (_err(openai.AuthenticationError, 401, "bad key"), "rejected"),
    (_err(openai.InternalServerError, 500), "unavailable"),
    (openai.APIConnectionError(request=REQ), "unavailable"),
])
def test_every_server_fault_is_a_fallback_with_its_reason(error, reason):
    # a 404 (wrong model name) used to escape as openai.NotFoundError and end the episode
    c, fake, _ = client(*[error] * 4, max_retries=3)
    d = LLMPlanner(c).choose(INPUT)
    assert d.source == "fallback" and d.fallback.reason == reason and d.skill in FEASIBLE
    assert len(fake.requests) == (1 if reason == "rejected" else 4)


def test_settings_keep_the_positional_form_and_name_bad_values():
    s = LLMSettings("http://127.0.0.1:1/v1", "m", timeout_s=2.0)
    assert (s.base_url, s.model, s.deadline_s, s.budget_s) == ("http://127.0.0.1:1/v1", "m", 60.0, None)
    with pytest.raises(PlannerConfigError, match="deadline_s"):
        LLMSettings(base_url="http://127.0.0.1:1/v1", model="m", deadline_s=0)
    with pytest.raises(PlannerConfigError, match="breaker_failures"):
        LLMSettings(base_url="http://127.0.0.1:1/v1", model="m", breaker_failures=-1)
