"""The service as an engineer found it (a review, 2026-12-05): each test failed on the code before."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from beliefgate.beliefs.errors import InvalidParameterError, InvalidWeightError, ShapeMismatchError
from beliefgate.serve import Client
from beliefgate.serve.cli import _bind
from beliefgate.serve.client import InvalidRequest
from test_serve import ROOT, ThreadServer, wait_healthy


@pytest.fixture(scope="module")
def server():
    with ThreadServer(max_sessions=50, ttl_s=600.0) as srv:
        yield srv


def test_accepted_connections_have_nagle_off():
    """The CLI's socket said proto 0, so asyncio never set TCP_NODELAY on accepted connections and a
    response written in two pieces waited ~40 ms for the client's delayed ACK on a kept-alive
    connection. The listening socket says TCP and has TCP_NODELAY; accepted ones inherit both."""
    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        sock.listen(1)
        with socket.create_connection(sock.getsockname()) as client:
            conn, _ = sock.accept()
            with conn:
                assert conn.proto == socket.IPPROTO_TCP
                assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
            assert client  # the other end, kept open while the accepted one was read
    finally:
        sock.close()


def test_client_checks_what_cannot_travel_as_in_process(server):
    """ego_active="no" became True, feasible=[0.5, 0.2] became [True, True], a NaN weight was json's
    ValueError, a number as a skill name became a string: now the in-process errors, no request sent."""
    table = np.log(np.full((2, 3), 1 / 3))
    with Client(server.url) as client:
        gate = client.from_logprobs(skill_names=["onion", "dish"])
        before = gate.state()["state_digest"]
        with pytest.raises(InvalidParameterError, match="ego_active must be a boolean, got 'no'"):
            gate.step(table, 0, ego_active="no")
        with pytest.raises(InvalidParameterError, match="ego_active"):
            gate.step(table, 0, ego_active=None)
        for bad in ("ab", [0.5, 0.2], [2, 0]):
            with pytest.raises(ShapeMismatchError, match="feasible"):
                gate.step(table, 0, feasible=bad)
        with pytest.raises(ShapeMismatchError, match="feasible must have shape"):
            gate.step(table, 0, feasible=[True, False, True])
        for bad in (math.nan, math.inf, "1"):
            with pytest.raises(InvalidWeightError, match="weight"):
                gate.step(table, 0, weight=bad)
        with pytest.raises(InvalidRequest):  # every refusal is still an InvalidRequest, as the service's are
            gate.step(table, 0, weight=math.nan)
        assert gate.state()["state_digest"] == before  # nothing reached the session
        assert gate.step(table, 0, feasible=[1, 0], ego_active=np.bool_(False)).map_skill == 0
        with pytest.raises(InvalidParameterError, match="prior_counts"):
            client.from_logprobs(2, prior_counts=[math.nan, 1.0])
        with pytest.raises(ShapeMismatchError, match="skill_names"):
            client.from_logprobs(skill_names=[1, 2])
        with pytest.raises(ShapeMismatchError, match="skill_names"):
            client.from_logprobs(skill_names="ab")
        with pytest.raises(InvalidRequest, match="session_id must match"):
            client.attach("../healthz")
        with pytest.raises(InvalidRequest, match="session_id must match"):
            client.attach_kappa("a/b")
        assert client.attach(gate.session_id).session_id == gate.session_id
        gate.delete()


@pytest.mark.parametrize("body", [
    '{"num_skills": ' + "9" * 4301 + "}",
    '{"skill_names": ' + "[" * 3000 + "]" * 3000 + "}",
], ids=["4301-digit integer", "nesting 3000 deep"])
def test_json_python_cannot_parse_is_422_validation_error(server, body):
    """FastAPI answered 400 `http_error` "There was an error parsing the body" (no `errors`, not
    what the docs say of invalid JSON); the client raised the base ServeError."""
    response = httpx.post(server.url + "/v1/sessions", content=body.encode(),
                          headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    payload = response.json()
    assert payload["error"] == "validation_error" and payload["errors"][0]["loc"] == ["body"]
    assert "the JSON cannot be read" in payload["detail"]


def test_kappa_evidence_errors_name_the_piece(server):
    """The location was ["body", "right"]: with 50 judgments the caller could not tell which."""
    with Client(server.url) as client:
        k = client.kappa(["l", "r"])
        sid = k.session_id
    url = f"{server.url}/v1/kappa/{sid}/evidence"
    cases = [
        ({"judgments": [{"left": "l", "right": "r", "y": 1}, {"left": "l", "right": "zz", "y": 1}]},
         ["body", "judgments", 1, "right"]),
        ({"judgments": [{"left": "l", "right": "r", "y": 1}],
          "rollouts": [{"branch": "l", "depth": 1, "score": 0.1}, {"branch": "q", "depth": 1, "score": 0.1}]},
         ["body", "rollouts", 1, "branch"]),
        ({"rollouts": [{"branch": "l", "depth": 1, "score": 0.1}, {"branch": "q", "depth": 1, "score": 0.1}],
          "round": True}, ["body", "rollouts", "branch"]),
    ]
    for body, loc in cases:
        response = httpx.post(url, json=body)
        assert response.status_code == 422 and response.json()["errors"][0]["loc"] == loc, response.text
        assert response.json()["detail"].startswith(".".join(str(p) for p in loc[1:]) + ": ")
    assert httpx.get(f"{server.url}/v1/kappa/{sid}").json()["t"] == 0  # all or nothing


def _serve(*args: str):
    return subprocess.Popen([sys.executable, "-m", "beliefgate.cli", "serve", "--port", "0", "--log-level", "warning",
                             *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "80"})


def test_start_up_line_is_one_line_whatever_its_length(tmp_path):
    """At 80 columns rich wrapped it into four lines and split the snapshot path mid-word."""
    deep = tmp_path / ("a_rather_long_directory_name_for_the_snapshots" * 2) / "and_another_level_of_nesting"
    deep.mkdir(parents=True)
    snapshot = deep / "sessions.snapshot"
    proc = _serve("--snapshot", str(snapshot))
    try:
        line = proc.stderr.readline()
        assert line.startswith("beliefgate serve: http://127.0.0.1:") and str(snapshot) in line, line
        assert line.rstrip("\n").endswith("(0 session(s) restored)")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        proc.stderr.close()


def test_stopping_while_a_body_arrives_answers_503_without_a_traceback():
    """The graceful shutdown's 5 s ran out on a request whose body was still arriving: the client got a
    bare-text 500 and the console a traceback (CancelledError). Now a JSON 503, nothing logged."""
    proc = _serve()
    try:
        match = re.search(r"http://127\.0\.0\.1:(\d+)/v1", proc.stderr.readline())
        assert match is not None
        port = int(match.group(1))
        wait_healthy(f"http://127.0.0.1:{port}", proc=proc)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{\"num_")
            time.sleep(0.5)
            proc.send_signal(signal.SIGINT)
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
        assert b'"error":"shutting_down"' in answer and b"6 bytes received" in answer
        proc.wait(timeout=30)
        log = proc.stderr.read()
        assert "Traceback" not in log and "Exception in ASGI application" not in log, log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def test_python_client_example_of_serve_md_runs(server):
    """docs/serve.md's client block deleted the gate and then attached to it (SessionNotFound), and
    left the Overcooked session behind; run as written (table, action and the states filled in)."""
    from beliefgate.eval.episode import run_episode

    text = (ROOT / "docs" / "serve.md").read_text()
    block = text.split("## Python client", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    block = block.replace("http://127.0.0.1:8765", server.url)
    steps = run_episode("cramped_room", "balanced", "switch-sourcer-to-plater", seed=3, horizon=3).trajectory.steps
    state, next_state = steps[0].state, steps[1].state
    replans = []
    namespace = {"table": np.log(np.full((2, 6), 1 / 6)), "action": 0, "state": state, "next_state": next_state,
                 "replan": lambda *a: replans.append(a)}
    exec(compile(block, "serve.md", "exec"), namespace)  # noqa: S102 - the documentation's own example
    with Client(server.url) as client:
        with pytest.raises(Exception, match="session_not_found|no session"):
            client.attach(namespace["gate"].session_id)
        with pytest.raises(Exception, match="session_not_found|no session"):
            client.attach(namespace["oc"].session_id)


def test_python_kappa_client_example_of_serve_md_prints_what_it_says(server, capsys):
    """docs/serve.md's kappa client block was only compiled (issue #47: every doc snippet runs as written):
    run against a live service, it prints the read-out and the error its comments show."""
    text = (ROOT / "docs" / "serve.md").read_text()
    block = next(b.split("```", 1)[0] for b in text.split("```python\n")[1:] if "client.kappa(" in b)
    expected = [re.sub(r"^\s*# ", "", line) for line in block.splitlines() if re.match(r"\s+# left ", line)]
    expected.append(block.split("exc.field)", 1)[1].split("# ", 1)[1].splitlines()[0].strip())
    exec(compile(block.replace("http://127.0.0.1:18765", server.url), "serve.md", "exec"), {})  # noqa: S102
    assert capsys.readouterr().out.splitlines() == expected


def test_a_slow_kappa_update_does_not_hold_other_clients(monkeypatch):
    """Kappa updates ran on the event loop: one request of 256 sharp judgments at 4096 points held
    healthz and every other session for ~27 s. They now run in a worker thread under the session's
    lock; here an update made slow on purpose (a blocking sleep inside it) must not delay healthz or
    a gate session, and a GET of the same kappa session waits for the update and sees all of it."""
    import threading

    from beliefgate.serve import sessions

    original = sessions.Session.apply_kappa
    started = threading.Event()

    threads = []

    def slow(self, evidence):
        if evidence:
            threads.append(threading.current_thread().name)
            started.set()
            time.sleep(3.0)  # blocking, as a long NumPy computation is
        return original(self, evidence)

    monkeypatch.setattr(sessions.Session, "apply_kappa", slow)
    with ThreadServer(max_sessions=10) as srv:
        sid = httpx.post(srv.url + "/v1/kappa", json={"branches": ["a", "b", "c"]}).json()["session_id"]
        gate = httpx.post(srv.url + "/v1/sessions", json={"num_skills": 2}).json()["session_id"]
        done = []

        def post():
            r = httpx.post(f"{srv.url}/v1/kappa/{sid}/judge", json={"left": "a", "right": "b", "y": 1}, timeout=30)
            done.append(("judge", r.status_code))

        worker = threading.Thread(target=post)
        worker.start()
        assert started.wait(10)
        assert httpx.get(srv.url + "/v1/healthz", timeout=30).status_code == 200
        step = httpx.post(f"{srv.url}/v1/sessions/{gate}/step", timeout=30,
                          json={"action_logprobs": [[-0.7, -0.7], [-0.7, -0.7]], "action": 0})
        assert step.status_code == 200
        done.append(("others", 200))
        read = httpx.get(f"{srv.url}/v1/kappa/{sid}", timeout=30).json()  # waits for the update
        worker.join(30)
        assert done[0] == ("others", 200) and ("judge", 200) in done  # answered while the update ran
        assert read["num_judgments"] == 1 and read["t"] == 1
        # on the kappa pool, not the loop's default executor (which the snapshot writer needs)
        assert threads == ["beliefgate-kappa_0"] or threads[0].startswith("beliefgate-kappa")

        # a GET that waited for an update of a session deleted meanwhile: 404, not the deleted payload
        worker = threading.Thread(target=post)
        started.clear()
        worker.start()
        assert started.wait(10)
        deleted = []
        deleter = threading.Thread(target=lambda: deleted.append(httpx.delete(f"{srv.url}/v1/kappa/{sid}", timeout=30)))
        deleter.start()
        time.sleep(0.3)  # the DELETE waits on the lock first, the GET after it (FIFO)
        got = httpx.get(f"{srv.url}/v1/kappa/{sid}", timeout=30)
        deleter.join(30)
        worker.join(30)
        assert deleted[0].status_code == 204 and got.status_code == 404, got.text


def test_stopping_during_a_kappa_update_answers_503_and_applies_nothing(monkeypatch, capfd):
    """uvicorn cancels a request still running when its graceful-shutdown time is out: the update ran on
    in its thread, the lock was let go, the client got a bare 500 and the console a traceback."""
    import threading

    import uvicorn

    from beliefgate.serve import sessions
    from beliefgate.serve.app import create_app
    from beliefgate.serve.protocol import uvicorn_config

    original = sessions.Session.apply_kappa
    started = threading.Event()

    def slow(self, evidence):
        if evidence:
            started.set()
            time.sleep(3.0)
        return original(self, evidence)

    monkeypatch.setattr(sessions.Session, "apply_kappa", slow)
    app = create_app()
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", 0, log_level="warning", lifespan="on",
                                           timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.01)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    sid = httpx.post(url + "/v1/kappa", json={"branches": ["a", "b"]}).json()["session_id"]
    answers = []
    poster = threading.Thread(target=lambda: answers.append(
        httpx.post(f"{url}/v1/kappa/{sid}/judge", json={"left": "a", "right": "b", "y": 1}, timeout=30)))
    poster.start()
    assert started.wait(10)
    server.should_exit = True
    poster.join(30)
    thread.join(30)
    assert answers and answers[0].status_code == 503, answers
    assert answers[0].json()["error"] == "shutting_down"
    session = app.state.store.get(sid)
    assert session.gate.log == () and session.gate.info.t == 0  # the finished update was put back
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception in ASGI application" not in err, err


def test_kappa_inputs_a_user_of_the_model_found(tmp_path):
    """A κ user's review: a 42-digit depth passed the checks and the fit died ("internal error"); a key
    given twice in a decisions line kept the last value; a branch name holding U+2028 split its line;
    to_record(**extra) could replace the record's own evidence; RemoteKappa.judge(..., True) was refused
    where Kappa.judge takes it."""
    from beliefgate import Kappa
    from beliefgate.models.kappa import DepthError, KappaDataError, MAX_DEPTH, read_decisions

    k = Kappa(["a", "b"])
    for bad in (10 ** 41, MAX_DEPTH + 1, 0):
        with pytest.raises(DepthError, match=f"rollout depth must be an integer in 1..{MAX_DEPTH}") as info:
            k.rollout("a", bad, 0.5)
        assert info.value.field == "depth"
    assert k.log == ()
    k.rollout("a", MAX_DEPTH, 0.5)

    line = '{"branches": ["a", "b"], "judgments": [{"left": "a", "right": "b", "y": 1, "y": 0}], "rollouts": []}'
    path = tmp_path / "dup.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(KappaDataError, match=r"dup.jsonl:1: not JSON \(key 'y' is given twice"):
        read_decisions(path)

    named = Kappa(["go\u2028left", "b"])
    named.judge(0, 1, 1)
    path = tmp_path / "names.jsonl"
    path.write_text(json.dumps(named.to_record(), ensure_ascii=False) + "\n" + json.dumps(k.to_record()) + "\n")
    decisions = read_decisions(path)
    assert decisions.num_decisions == 2 and decisions.branches[0] == ["go\u2028left", "b"]

    with pytest.raises(KappaDataError, match="judgments, kappa would replace the record's own"):
        named.to_record(kappa=0.99, judgments=[])
    assert named.to_record(game="g1")["game"] == "g1"


def test_remote_kappa_takes_a_boolean_judgment_as_in_process(server):
    from beliefgate import Kappa

    local = Kappa(["a", "b"])
    local.judge("a", "b", True)
    with Client(server.url) as client:
        remote = client.kappa(["a", "b"])
        out = remote.judge("a", "b", True)
        assert out["argmax"]["a"] == pytest.approx(local.argmax_probs["a"], abs=1e-12)
        remote.delete()


def test_review_of_the_change_itself(server, tmp_path):
    """A review of this change: read_decisions crashed on a 5000-digit number (parse_data caught only
    JSONDecodeError); a round's own error was located at ["body", "rollouts", "rollouts"]; a NaN prior
    count without num_skills still escaped as json's ValueError; a generator of names was used up."""
    from beliefgate.fileio import DataSyntaxError, parse_data
    from beliefgate.models.kappa import KappaDataError, read_decisions

    with pytest.raises(DataSyntaxError, match="4300 digits"):
        parse_data('{"a": ' + "9" * 5000 + "}", "json")
    with pytest.raises(DataSyntaxError):
        parse_data("[" * 100_000 + "]" * 100_000, "json")
    big = tmp_path / "big.jsonl"
    big.write_text('{"branches": ["a", "b"], "judgments": [], "rollouts": [{"branch": "a", "depth": '
                   + "9" * 5000 + ', "score": 0.1}]}\n')
    with pytest.raises(KappaDataError, match="big.jsonl:1: not JSON"):
        read_decisions(big)
    with Client(server.url) as client:
        sid = client.kappa(["a", "b"]).session_id
        response = httpx.post(f"{server.url}/v1/kappa/{sid}/evidence", json={
            "rollouts": [{"branch": "a", "depth": 1, "score": 0.1}, {"branch": "a", "depth": 1, "score": 0.2}],
            "round": True})
        assert response.status_code == 422 and response.json()["errors"][0]["loc"] in (["body"], ["body", "rollouts"])
        assert "rollouts.rollouts" not in response.json()["detail"]
        with pytest.raises(InvalidParameterError, match="prior_counts") as info:
            client.from_logprobs(prior_counts=[math.nan, 1.0])
        assert isinstance(info.value, InvalidRequest)
        gate = client.from_logprobs(skill_names=(name for name in ("onion", "dish")))
        assert gate.skill_names == ("onion", "dish")
        gate.delete()
