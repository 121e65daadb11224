"""The LLM client against real misbehaving HTTP servers on 127.0.0.1 (issue 19, ``planners/client.py``).

Each server is a ``http.server`` started here on a free loopback port; the client talks to it
through the real ``openai`` SDK and ``httpx``. Every test here failed on the client before the
fix (a crash, a hang past the deadline, a permanent format drop, a crash on a bad cache entry).
"""

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from beliefgate.envs.trajlog import read_log
from beliefgate.eval.episode import run_episode
from beliefgate.planners.client import LLMClient, LLMSettings
from beliefgate.planners.errors import (CircuitOpenError, LLMBudgetError, LLMDeadlineError, LLMUnavailableError,
                                        ModelOutputError)
from beliefgate.planners.llm import LLMPlanner
from beliefgate.planners.types import PlannerInput

INPUT = PlannerInput(scene="A kitchen.", feasible=("pickup_onion", "pickup_dish"), needs={"pickup_dish": 1.0})
MESSAGES = [{"role": "user", "content": "Which skill?"}]


def completion(content='{"skill": "pickup_dish"}'):
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


class Server:
    """A loopback HTTP server whose answer to each POST is ``behave(request_json) -> (status, body, mode)``.

    ``mode`` "send" writes the body at once, "trickle" one byte every ``trickle_s`` after the headers.
    Every request body is kept in ``requests``.
    """

    def __init__(self, behave, trickle_s=0.25):
        self.behave, self.trickle_s, self.requests = behave, trickle_s, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                return None

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                outer.requests.append(body)
                status, payload, mode = outer.behave(body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    if mode == "trickle":
                        for i in range(len(data)):
                            self.wfile.write(data[i:i + 1])
                            self.wfile.flush()
                            time.sleep(outer.trickle_s)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client gave up on this answer, as it should

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(behave, **kw):
        servers.append(Server(behave, **kw))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def client_for(server, **settings):
    return LLMClient(LLMSettings(base_url=server.base_url, model="m", backoff_s=0.0, **settings))


def test_non_json_200_is_a_model_output_error_and_a_counted_fallback(serve, tmp_path):
    srv = serve(lambda body: (200, b"<html>gateway says hello</html>", "send"))
    c = client_for(srv)
    with pytest.raises(ModelOutputError, match="not JSON") as info:
        c.chat(MESSAGES)
    assert info.value.reason == "bad_response"
    # an episode against it finishes, and its log says why every plan fell back
    log = tmp_path / "ep.jsonl"
    result = run_episode("cramped_room", "bayes-belief", "balanced", seed=0, horizon=4,
                         llm=client_for(srv, breaker_failures=0), log_path=log)
    assert result.summary["steps"] == 4
    counts = result.summary["fallback_counts"]
    assert counts["by_role"]["planner"] >= 1 and counts["by_reason"]["bad_response"] == counts["total"]
    traj = read_log(log)
    events = [e for row in traj.steps for e in row.info[0]["fallback_events"]]
    assert events and all(e["reason"] == "bad_response" and "not JSON" in e["detail"] for e in events)
    assert traj.final.summary["llm"]["failures_by_kind"]["bad_response"] == len(events)


def test_empty_choices_is_a_model_output_error(serve):
    srv = serve(lambda body: (200, {"choices": []}, "send"))
    c = client_for(srv)
    with pytest.raises(ModelOutputError, match="no choices"):
        c.chat(MESSAGES)
    d = LLMPlanner(client_for(srv)).choose(INPUT)
    assert d.source == "fallback" and d.fallback.reason == "bad_response" and d.skill in INPUT.feasible


def test_a_trickling_server_is_cut_at_the_call_deadline(serve):
    # 300 bytes at 4 bytes/s would take 75 s; each byte arrives well within the 5 s read timeout
    srv = serve(lambda body: (200, json.dumps(completion()).encode().ljust(300), "trickle"))
    c = client_for(srv, timeout_s=5.0, deadline_s=1.0, max_retries=3)
    started = time.monotonic()
    with pytest.raises(LLMDeadlineError):
        c.chat(MESSAGES)
    assert time.monotonic() - started < 4.0  # the deadline, not 75 s of trickle or 4 x 5 s of timeouts
    assert [e.outcome for e in c.ledger.entries][-1] == "failed:deadline"


def test_a_silent_server_is_cut_at_the_call_deadline_across_retries(serve):
    # never answers within the read timeout: each attempt times out; the retries share one deadline
    def silent(body):
        time.sleep(3.0)
        return 200, completion(), "send"

    srv = serve(silent)
    c = client_for(srv, timeout_s=0.6, deadline_s=1.5, max_retries=5)
    started = time.monotonic()
    with pytest.raises(LLMDeadlineError):
        c.chat(MESSAGES)
    assert time.monotonic() - started < 3.5  # 6 attempts x 0.6 s would be 3.6 s, plus back-off
    assert "retry:timeout" in [e.outcome for e in c.ledger.entries]


def test_episode_budget_stops_calls_and_is_reset_per_episode(serve):
    def slow(body):
        time.sleep(0.3)
        return 200, completion(), "send"

    srv = serve(slow)
    c = client_for(srv, budget_s=0.5, breaker_failures=0)
    c.chat(MESSAGES)
    with pytest.raises(LLMDeadlineError):
        c.chat(MESSAGES)  # 0.2 s of budget left: this call's deadline is cut to it
    with pytest.raises(LLMBudgetError) as info:
        c.chat(MESSAGES)  # the budget is spent: not sent at all
    sent = len(srv.requests)
    assert sent == 2 and info.value.reason == "budget" and c.ledger.entries[-1].outcome == "skipped:budget"
    c.start_episode()
    c.chat(MESSAGES)
    assert len(srv.requests) == sent + 1


def test_circuit_breaker_opens_after_consecutive_failures_and_closes_after_a_trial(serve):
    state = {"fail": True}
    srv = serve(lambda body: (500, {"error": {"message": "Internal Server Error"}}, "send") if state["fail"]
                else (200, completion(), "send"))
    now = [100.0]
    c = LLMClient(LLMSettings(base_url=srv.base_url, model="m", backoff_s=0.0, max_retries=1, breaker_failures=2,
                              breaker_cooldown_s=30.0), clock=lambda: now[0])
    for _ in range(2):
        with pytest.raises(LLMUnavailableError):
            c.chat(MESSAGES)
    assert len(srv.requests) == 4  # two calls, each one retry
    with pytest.raises(CircuitOpenError) as info:
        c.chat(MESSAGES)
    assert info.value.reason == "breaker_open" and len(srv.requests) == 4  # skipped: nothing sent
    assert c.ledger.summary()["breaker_open"] == 1
    now[0] += 31.0  # cool-down over: one trial call goes through; it fails, so the breaker reopens at once
    with pytest.raises(LLMUnavailableError):
        c.chat(MESSAGES)
    with pytest.raises(CircuitOpenError):
        c.chat(MESSAGES)
    now[0] += 31.0
    state["fail"] = False
    assert "pickup_dish" in c.chat(MESSAGES)  # a successful trial closes it
    assert "pickup_dish" in c.chat(MESSAGES) and not c.breaker_open


def test_breaker_open_fallbacks_reach_the_episode_summary(serve):
    srv = serve(lambda body: (503, {"error": {"message": "overloaded"}}, "send"))
    c = client_for(srv, max_retries=0, breaker_failures=1, breaker_cooldown_s=600.0)
    result = run_episode("cramped_room", "periodic-2", "balanced", seed=0, horizon=6, llm=c)
    counts = result.summary["fallback_counts"]
    assert counts["by_reason"]["unavailable"] == 1 and counts["by_reason"]["breaker_open"] >= 1
    assert len(srv.requests) == 1 and result.summary["llm"]["breaker_open"] == counts["by_reason"]["breaker_open"]


def _format_server(serve, transient=0):
    """Refuses json_schema (as llama.cpp does), accepts json_object; the first ``transient`` requests
    get a plain 500 that names no format."""
    def behave(body):
        if len(srv.requests) <= transient:
            return 500, {"error": {"message": "Internal Server Error"}}, "send"
        if body.get("response_format", {}).get("type") == "json_schema":
            return 500, {"error": {"message": "Unsupported response_format type json_schema", "code": 500}}, "send"
        return 200, completion(), "send"

    srv = serve(behave)
    return srv


def test_a_transient_500_does_not_drop_structured_output(serve):
    srv = _format_server(serve, transient=1)
    c = client_for(srv, response_format="json_object_schema")
    for _ in range(5):
        c.chat(MESSAGES)
    kinds = [r.get("response_format", {}).get("type") for r in srv.requests]
    assert kinds == ["json_object"] * 6  # the retry after the 500 and every later call keep the schema
    assert [e.outcome for e in c.ledger.entries][:2] == ["retry:server_error", "ok"]


def test_format_ladder_steps_down_on_a_refusal_and_back_up(serve):
    srv = _format_server(serve)
    c = client_for(srv, format_retry_after=2)
    for _ in range(6):
        assert "pickup_dish" in c.chat(MESSAGES)
    kinds = [(r.get("response_format") or {}).get("type") for r in srv.requests]
    # refused, down; two answers; up (refused again), down; the next probe waits twice as long
    assert kinds == ["json_schema", "json_object", "json_object", "json_schema", "json_object",
                     "json_object", "json_object", "json_object"]
    outcomes = [e.outcome for e in c.ledger.entries]
    # after the fourth answer at json_object the client is ready to try json_schema again
    assert outcomes.count("format_downgrade") == 2 and outcomes.count("format_upgrade") == 2
    assert c.response_format == "json_schema"
    assert c.ledger.requests == len(srv.requests)


def test_corrupt_cache_entry_is_a_miss_with_a_warning(serve, tmp_path, caplog):
    srv = serve(lambda body: (200, completion(), "send"))
    c = client_for(srv, cache_dir=str(tmp_path))
    c.chat(MESSAGES)
    (entry,) = tmp_path.glob("*.json")
    assert not list(tmp_path.glob("*.tmp")) and json.loads(entry.read_text())["content"]
    entry.write_text('{"content": "trunc')  # a write cut short
    c2 = client_for(srv, cache_dir=str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="beliefgate.planners.client"):
        assert "pickup_dish" in c2.chat(MESSAGES)
    assert "unreadable" in caplog.text and len(srv.requests) == 2
    assert [e.outcome for e in c2.ledger.entries] == ["cache_corrupt", "ok"]
    assert json.loads(entry.read_text())["content"]  # rewritten whole
    c3 = client_for(srv, cache_dir=str(tmp_path))
    c3.chat(MESSAGES)
    assert len(srv.requests) == 2 and c3.ledger.entries[-1].outcome == "cached"
