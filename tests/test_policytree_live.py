"""The Co-pi-tree loop end to end against a real OpenAI-compatible server (llama.cpp + SmolLM2-135M).

The server is the one tests/test_llm_live.py starts (same class, same skip/fail rule without the
`llm` extra). SmolLM2 writes junk trees and junk code: the run must take them through the repair
prompt, fall back to the seed tree, revert, crash nowhere and count every call. Sized for 2 cores:
answers of 32 tokens, one repair, one 30-step rollout per candidate.
"""

import json

import httpx
import pytest

from test_llm_live import LlamaServer  # noqa: E402  (tests/ is on sys.path under pytest)

from beliefgate.planners.client import LLMClient, LLMSettings
from beliefgate.policytree.evaluate import evaluate_tree
from beliefgate.policytree.learn import learn


@pytest.fixture(scope="module")
def server():
    srv = LlamaServer()
    yield srv
    srv.stop()


def test_two_iteration_learning_run_against_the_real_server(server, tmp_path):
    import openai

    sent = []
    http = httpx.Client(event_hooks={"request": [lambda request: sent.append(request.url.path)]}, timeout=120.0)
    settings = LLMSettings(base_url=server.base_url, model="smollm2", max_tokens=32, timeout_s=120.0, deadline_s=300.0)
    client = LLMClient(settings, openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0, http_client=http))
    summary = learn("cramped_room", "balanced", client, tmp_path, iterations=2, rollouts=1, horizon=30, repairs=1,
                    max_prompt_chars=2000)

    calls = [json.loads(line) for line in (tmp_path / "llm_calls.jsonl").read_text().splitlines()]
    # every call is counted once: NQ = logged calls; answered ones = the client's answers; HTTP = the ledger
    assert summary["nq"] == len(calls) >= 3
    assert sum(c["reply"] is not None for c in calls) == client.ledger.calls()
    assert client.ledger.requests == len(sent)
    assert summary["nq_failed"] == sum(c["error"] is not None for c in calls) == 0  # the prompts fit the context
    assert {c["role"] for c in calls} <= {"planner", "coder", "repair", "summarizer"}

    statuses = [json.loads((tmp_path / f"iter_{k:02d}" / "status.json").read_text()) for k in (1, 2)]
    assert [h["iteration"] for h in summary["history"]] == [1, 2]
    first, second = statuses
    assert first["accepted"] and first["source"] in ("llm", "seed")
    attempts = [len(s.get("code_attempts", [])) for s in statuses]
    assert all(n <= 2 for n in attempts)
    assert summary["counts"]["repairs"] == sum(max(n - 1, 0) for n in attempts)
    for s in statuses:
        for a in s.get("code_attempts", [])[:-1]:
            assert a["error"]  # only a failing attempt is repaired
    if second["source"] is None or not second["accepted"]:
        assert summary["best_iteration"] == 1  # reverted: the first tree stays
    # the best tree plays with zero LLM calls
    rows = evaluate_tree(str(tmp_path / "best.py"), ["cramped_room"], ["balanced"], [0], horizon=20)
    assert rows[0]["llm_calls"] == 0 and rows[0]["tree_errors"] == 0
