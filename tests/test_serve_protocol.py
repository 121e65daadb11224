"""The service's HTTP protocol (``beliefgate/serve/protocol.py``): the step short cut
answers byte for byte what uvicorn's plain h11 protocol (and so the ASGI guard and
FastAPI) answers, for requests it serves itself and for those it hands on.
"""

from __future__ import annotations

import json
import re
import socket
import time

import numpy as np
import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

import beliefgate.serve.protocol as protocol  # noqa: E402
from beliefgate.serve import Client  # noqa: E402

from test_serve import TOKEN, ThreadServer  # noqa: E402

AUTH = f"Authorization: Bearer {TOKEN}\r\n"


def _request(path: str, payload, headers: str = AUTH, body: bytes = None) -> bytes:
    body = json.dumps(payload).encode() if body is None else body
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def _read_answers(sock: socket.socket, count: int) -> list:
    """``count`` whole HTTP answers (status line, headers, Content-Length body) from ``sock``."""
    data, answers = b"", []
    while len(answers) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            length = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", data[:end + 2]).group(1))
            if len(data) >= end + 4 + length:
                answers.append(data[:end + 4 + length])
                data = data[end + 4 + length:]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed after {len(answers)} of {count} answers")
        data += chunk
    return answers


def _exchange(url: str, writes: list, answers: int) -> list:
    """Send each byte string of ``writes`` (a pause between them) on one connection; the
    answers with the ``date`` header's value blanked."""
    host, port = url.rsplit("//", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for i, chunk in enumerate(writes):
            if i:
                time.sleep(0.05)
            sock.sendall(chunk)
        got = _read_answers(sock, answers)
    return [re.sub(rb"\r\ndate: [^\r]*", b"\r\ndate: -", a) for a in got]


def _script(sid: str) -> list:
    """(writes, answers expected, short-cut answers expected) on one session."""
    rng = np.random.default_rng(11)
    q = rng.normal(size=(3, 4))
    table = (q - np.log(np.exp(q).sum(1, keepdims=True))).tolist()
    step = f"/v1/sessions/{sid}/step"
    ok = {"action_logprobs": table, "action": 1}
    big = json.dumps({"action_logprobs": table, "action": 1, "pad": "x" * 2000}).encode()
    two = _request(step, ok) + _request(step, {"action_logprobs": table, "action": 2})
    whole = _request(step, {"action_logprobs": table, "action": 3})
    return [
        ([_request(step, ok)], 1, 1),                                                    # short cut
        ([_request(step, ok, AUTH + "Connection: keep-alive\r\n")], 1, 1),               # short cut
        ([_request(step, {"action_logprobs": table, "action": 9})], 1, 1),               # 422 from the gate
        ([_request("/v1/sessions/nope/step", ok)], 1, 1),                                # 404
        ([_request(f"/v1/sessions/{sid}/step_loglik", {"loglik": table[0][:3], "weight": 0.5})], 1, 1),
        ([_request(f"/v1/sessions/{sid}/step_evidence",
                   {"action_logprobs": table, "action_mask": [True, False, True, False]})], 1, 1),
        ([_request(step, {"action_logprobs": table})], 1, 0),                            # schema: FastAPI
        ([_request(step, ok, headers="")], 1, 0),                                        # no token: 401
        ([_request(step, ok, AUTH + "X-Note: café\r\n")], 1, 0),  # non-ASCII: h11
        ([_request(step, None, body=big)], 1, 0),                                        # over the limit: 413
        ([whole[:40], whole[40:]], 1, 0),                                                # split over two reads
        ([two], 2, 0),                                                                   # pipelined
        ([_request(step, ok)], 1, 1),                                                    # short cut again
        ([_request(step, ok, AUTH + "Connection: close\r\n")], 1, 0),                    # then closed
    ]


@pytest.fixture
def served_ops(monkeypatch):
    """The ops the short cut answered (``fast_answer`` wrapped to record them)."""
    served = []
    original = protocol.fast_answer

    async def counting(*args, **kwargs):
        served.append(args[2])
        return await original(*args, **kwargs)

    monkeypatch.setattr(protocol, "fast_answer", counting)
    return served


def test_short_cut_answers_byte_for_byte_as_h11(served_ops):
    served = served_ops
    answers = {}
    for fast in (True, False):
        served.clear()
        with ThreadServer(fast=fast, token=TOKEN, max_body_bytes=1024) as srv:
            with Client(srv.url, token=TOKEN) as client:
                gate = client.from_logprobs(3, skill_names=["p", "q", "r"])
                script = _script(gate.session_id)
                answers[fast] = [_exchange(srv.url, writes, n) for writes, n, _ in script]
                answers[fast].append(gate.t)
        assert len(served) == (sum(k for _, _, k in script) if fast else 0), served
    assert answers[True] == answers[False]
    statuses = [int(a.split(b" ", 2)[1]) for group in answers[True][:-1] for a in group]
    assert statuses == [200, 200, 422, 404, 200, 200, 422, 401, 200, 413, 200, 200, 200, 200, 200], statuses
    assert answers[True][-1] == 10  # every 200 step counted once, on both servers


def test_connection_close_is_honoured_after_a_short_cut_answer():
    with ThreadServer() as srv, Client(srv.url) as client:
        gate = client.from_logprobs(3)
        sid = gate.session_id
        table = np.log([[0.7, 0.2, 0.1]] * 3).tolist()
        host, port = srv.url.rsplit("//", 1)[1].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            for _ in range(3):  # keep-alive: several short-cut answers on one connection
                sock.sendall(_request(f"/v1/sessions/{sid}/step", {"action_logprobs": table, "action": 0}, ""))
                assert _read_answers(sock, 1)[0].startswith(b"HTTP/1.1 200 OK\r\n")
            sock.sendall(_request(f"/v1/sessions/{sid}/step", {"action_logprobs": table, "action": 0},
                                  "Connection: close\r\n"))
            answer = _read_answers(sock, 1)[0]
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and b"\r\nconnection: close\r\n" in answer.lower()
            assert sock.recv(100) == b""  # the server closed it
        assert gate.t == 4


def test_request_arriving_while_an_answer_waits_is_answered_after_it(tmp_path, monkeypatch, served_ops):
    """With snapshots a short-cut answer waits for the write; a second request on the same
    connection meanwhile is held (reading paused) and answered after the first, in order."""
    from beliefgate.serve.sessions import atomic_write

    served = served_ops

    def slow_writer(path, data):
        time.sleep(0.3)
        atomic_write(path, data)

    with ThreadServer(snapshot_path=tmp_path / "s.pkl") as srv, Client(srv.url) as client:
        gate = client.from_logprobs(3)
        srv.app.state.store._writer = slow_writer  # every snapshot write now takes 0.3 s
        table = np.log([[0.7, 0.2, 0.1]] * 3).tolist()
        path = f"/v1/sessions/{gate.session_id}/step"
        host, port = srv.url.rsplit("//", 1)[1].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(_request(path, {"action_logprobs": table, "action": 0}, ""))
            time.sleep(0.1)  # the first answer is waiting for its snapshot write
            sock.sendall(_request(path, {"action_logprobs": table, "action": 1}, ""))
            first, second = _read_answers(sock, 2)
        steps = [json.loads(a.split(b"\r\n\r\n", 1)[1])["info"]["t"] for a in (first, second)]
        assert steps == [0, 1] and len(served) == 2, (steps, served)
        assert gate.t == 2


def test_a_uvicorn_without_the_internals_gets_plain_h11(monkeypatch, caplog, served_ops):
    """The short cut reads uvicorn's h11-protocol internals; where one is missing every
    request goes through plain h11 (same answers, nothing served by the short cut, one warning)."""
    served = served_ops
    monkeypatch.setattr(protocol, "_UVICORN_INTERNALS", protocol._UVICORN_INTERNALS + ("not_in_this_uvicorn",))
    monkeypatch.setattr(protocol, "_warned", [])
    with caplog.at_level("WARNING", logger="beliefgate.serve"):
        with ThreadServer(token=TOKEN) as srv, Client(srv.url, token=TOKEN) as client:
            gate = client.from_logprobs(2, skill_names=["p", "q"])
            for _ in range(3):
                gate.step(np.log([[0.7, 0.3], [0.2, 0.8]]), 0)
            steps = gate.t
    assert steps == 3
    assert served == []
    assert any("plain h11" in r.getMessage() for r in caplog.records)


def test_every_way_to_a_step_route_goes_through_the_one_step_adapter(monkeypatch, served_ops):
    """A step reaches the gate by three ways: the protocol's short cut, the guard's fast path
    (plain h11), FastAPI's route (a ``+json`` content type the guard leaves to FastAPI). All
    three build the step in ``fastpath`` (one copy of the step handling): each counts there once."""
    from beliefgate.serve import fastpath

    model, prepare = fastpath._STEP_ROUTES["step_loglik"]
    weights = []

    def counting(body):
        weights.append(body.weight)
        return prepare(body)

    monkeypatch.setitem(fastpath._STEP_ROUTES, "step_loglik", (model, counting))
    ways = [(True, "application/json", 0.25),             # the protocol's short cut
            (False, "application/json", 0.5),             # plain h11, then the guard's fast path
            (False, "application/x-test+json", 0.75)]     # plain h11, the guard, FastAPI's route
    for fast, content_type, weight in ways:
        with ThreadServer(fast=fast) as srv, Client(srv.url) as client:
            gate = client.from_logprobs(3)
            path = f"/v1/sessions/{gate.session_id}/step_loglik"
            body = json.dumps({"loglik": [-0.5, -1.0, -2.0], "weight": weight}).encode()
            request = _request(path, None, "", body).replace(b"application/json", content_type.encode())
            [answer] = _exchange(srv.url, [request], 1)
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
            assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["info"]["weight"] == weight
            assert gate.t == 1
    assert weights == [0.25, 0.5, 0.75]
    assert served_ops == ["step_loglik"]  # the short cut answered the first only


def _private_imports(source: str) -> list:
    """``module.name`` for every private name a module imports from a beliefgate module."""
    import ast

    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("beliefgate"):
            out += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    return out


def test_no_serve_module_imports_a_private_name():
    """The serve modules share only public names (the protocol once imported app.py's
    ``_json_content``); the checker is tried on a planted import too."""
    from pathlib import Path

    import beliefgate.serve

    found = {path.name: _private_imports(path.read_text(encoding="utf-8"))
             for path in sorted(Path(beliefgate.serve.__file__).parent.glob("*.py"))}
    assert {name: bad for name, bad in found.items() if bad} == {}
    planted = "def f():\n    from beliefgate.serve.fastpath import _STEP_ROUTES, fast_answer\n"
    assert _private_imports(planted) == ["beliefgate.serve.fastpath._STEP_ROUTES"]
