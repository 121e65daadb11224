"""The gate service end to end: a real uvicorn server on 127.0.0.1 (thread or subprocess).

Checks: decisions over HTTP equal the in-process Gate on the same sequence (exactly:
floats survive JSON); every bad input gets its 4xx and leaves the session unchanged
(same ``state_digest`` and ``version``); auth and isolation; TTL expiry; session limit;
concurrent steps on one session are applied one at a time; snapshot/restore across a
real restart (crash and clean stop) of ``beliefgate serve``; rollback when a snapshot
write fails; the committed OpenAPI document is current; a schemathesis fuzz of that
document finds no 5xx.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

from beliefgate import Gate, GateParams  # noqa: E402
from beliefgate.beliefs.errors import BeliefInputError  # noqa: E402
from beliefgate.beliefs.evidence import StepEvidence  # noqa: E402
from beliefgate.serve import Client  # noqa: E402
from beliefgate.serve.app import create_app, openapi_document  # noqa: E402
from beliefgate.serve.protocol import uvicorn_config  # noqa: E402
from beliefgate.serve.client import (  # noqa: E402
    InvalidRequest,
    ServeError,
    SessionLimitReached,
    SessionNotFound,
    Unauthorized,
    WrongSessionKind,
)
from beliefgate.serve.schemas import SESSION_ID_PATTERN, DecisionOut, SessionOut, state_digest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {"Content-Type": "application/json"}


# --------------------------------------------------------------------------- servers


class ThreadServer:
    """uvicorn on 127.0.0.1, port 0 (the OS picks a free one), in a background thread."""

    def __init__(self, fast: bool = True, **settings):
        """``fast``: the CLI's protocol (step short cut), else uvicorn's plain h11 protocol."""
        self.app = create_app(**settings)
        config = (uvicorn_config(self.app, HOST, 0, log_level="warning", lifespan="on") if fast else
                  uvicorn.Config(self.app, host=HOST, port=0, http="h11", log_level="warning", lifespan="on"))
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = ""

    def __enter__(self) -> "ThreadServer":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{HOST}:{port}"
        wait_healthy(self.url)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        assert not self.thread.is_alive(), "uvicorn did not shut down"


def wait_healthy(url: str, timeout: float = 30.0, proc=None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(url + "/v1/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not become healthy in {timeout} s")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@contextmanager
def cli_server(*args: str):
    """``beliefgate serve`` in a subprocess on a free 127.0.0.1 port; yields (url, process)."""
    port = free_port()
    cmd = [sys.executable, "-m", "beliefgate.cli", "serve", "--host", HOST, "--port", str(port),
           "--log-level", "warning", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://{HOST}:{port}"
    try:
        wait_healthy(url, proc=proc)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        proc.stdout.close()
        proc.stderr.close()


@pytest.fixture(scope="module")
def server():
    with ThreadServer(max_sessions=200, ttl_s=600.0) as srv:
        yield srv


# --------------------------------------------------------------------------- helpers


def same(remote, local, where="decision") -> None:
    """Field-by-field exact equality of two Decision/GateInfo trees (NaN == NaN)."""
    assert type(remote) is type(local), where
    if isinstance(local, tuple) and hasattr(local, "_fields"):
        for name in local._fields:
            same(getattr(remote, name), getattr(local, name), f"{where}.{name}")
    elif isinstance(local, np.ndarray):
        np.testing.assert_array_equal(remote, local, err_msg=where)
    elif isinstance(local, float):
        assert (math.isnan(remote) and math.isnan(local)) or remote == local, (where, remote, local)
    else:
        assert remote == local, (where, remote, local)


def log_table(rng, k: int, a: int, holes: float = 0.15) -> np.ndarray:
    """A random log-probability table with some -inf entries (each row keeps a finite one)."""
    q = rng.normal(0.0, 1.5, size=(k, a))
    lp = q - np.log(np.exp(q).sum(axis=1, keepdims=True))
    mask = rng.random((k, a)) < holes
    mask[np.arange(k), rng.integers(a, size=k)] = False
    lp[mask] = -np.inf
    return lp


def random_ops(seed: int, k: int, a: int, n: int, names):
    """A fixed random mix of every entry point, with completions, masks, weights and control calls."""
    rng = np.random.default_rng(seed)
    ops = []
    for _ in range(n):
        r = rng.random()
        completed = None
        if rng.random() < 0.12:
            completed = names[int(rng.integers(k))] if rng.random() < 0.5 else int(rng.integers(-1, k))
        feasible = None
        if rng.random() < 0.25:
            feasible = rng.random(k) < 0.7
            feasible[int(rng.integers(k))] = True
        weight = float(rng.choice([1.0, 1.0, 0.35, 0.0, 2.0]))
        ego = bool(rng.random() < 0.85)
        table = log_table(rng, k, a)
        if r < 0.5:
            ops.append(("step", table, int(rng.integers(a)), completed, feasible, weight, ego))
        elif r < 0.7:
            ops.append(("loglik", table[:, int(rng.integers(a))], completed, feasible, weight, ego))
        elif r < 0.88:
            mask = rng.random(a) < 0.3
            mask[int(rng.integers(a))] = True
            ops.append(("evidence", StepEvidence(table, mask, weight, completed, feasible), ego))
        elif r < 0.95:
            ops.append(("replan",))
        else:
            ops.append(("reset", bool(rng.random() < 0.5)))
    return ops


def apply(gate, op):
    kind = op[0]
    if kind == "step":
        _, table, action, completed, feasible, weight, ego = op
        return gate.step(table, action, completed, feasible=feasible, weight=weight, ego_active=ego)
    if kind == "loglik":
        _, ll, completed, feasible, weight, ego = op
        return gate.step_loglik(ll, completed, feasible=feasible, weight=weight, ego_active=ego)
    if kind == "evidence":
        return gate.step_evidence(op[1], ego_active=op[2])
    if kind == "replan":
        return gate.notify_replanned()
    return gate.reset(keep_memory=op[1])


def digest(client_or_url, sid: str, headers=None) -> tuple:
    """(state_digest, version, t) of a session."""
    if isinstance(client_or_url, str):
        body = httpx.get(f"{client_or_url}/v1/sessions/{sid}", headers=headers).json()
    else:
        body = client_or_url.request("GET", f"/sessions/{sid}")
    return body["state_digest"], body["version"], body["t"]


# --------------------------------------------------------------------------- equality with the in-process Gate


PARAM_SETS = [
    GateParams(hazard=0.08, tau_obs=0.3, n_stable=1, confidence_floor=0.5, cooldown=3),
    GateParams(model="windowed", window=3, track_changepoint=True, gate="either", reference="action",
               confidence_floor=0.4, n_stable=0, cooldown=2, cp_threshold=0.25, cp_release=0.1),
    GateParams(hazard=0.08, gate="cusum", cusum_h=1.5),
]


@pytest.mark.parametrize("params", PARAM_SETS, ids=["hazard", "windowed-either-action", "cusum"])
def test_http_decisions_equal_in_process_gate(server, params):
    names = ["fetch", "cook", "plate", "serve"]
    k, a = len(names), 5
    prior = [1.0, 0.0, 2.0, 0.5]
    local = Gate.from_logprobs(k, params, skill_names=names, prior_counts=prior)
    ops = random_ops(7, k, a, 90, names)
    with Client(server.url) as client:
        remote = client.from_logprobs(k, params, skill_names=names, prior_counts=prior)
        assert remote.skill_names == tuple(names) and remote.params == params
        rejected = interrupts = 0
        for op in ops:
            try:
                want = apply(local, op)
            except BeliefInputError as exc:  # e.g. an impossible observation: both sides refuse
                before = digest(client, remote.session_id)
                with pytest.raises(type(exc)) as info:
                    apply(remote, op)
                assert isinstance(info.value, ServeError) and info.value.status_code == 422
                assert digest(client, remote.session_id) == before
                rejected += 1
                continue
            got = apply(remote, op)
            if want is None:
                assert got is None
            else:
                same(got, want)
                interrupts += want.interrupt
            state = remote.state()
            SessionOut.model_validate(state)
            assert (state["cusum"] is None) == (params.gate.kind != "cusum")
            if state["cusum"] is not None:
                assert state["cusum"]["num_fires"] == local.state.cusum.num_fires
            assert state["state_digest"] == state_digest(local.state)
            assert state["t"] == local.t
            np.testing.assert_array_equal(state["memory"], local.memory)
        assert interrupts > 0  # the sequence exercises the gate, not only the filter
        assert rejected < len(ops) // 4
        remote.delete()
        with pytest.raises(SessionNotFound):
            remote.state()


@pytest.fixture(scope="module")
def episode_states():
    from beliefgate.eval.episode import run_episode

    result = run_episode("cramped_room", "balanced", "switch-sourcer-to-plater", seed=3, horizon=45)
    return [row.state for row in result.trajectory.steps] + [result.trajectory.final.state]


@pytest.mark.parametrize("partner", [1, 0])
def test_http_observe_equals_in_process_gate(server, episode_states, partner):
    params = GateParams(hazard=0.05, gate="either")
    local = Gate.for_overcooked("cramped_room", params, partner=partner)
    with Client(server.url) as client:
        remote = client.for_overcooked("cramped_room", params, partner=partner)
        assert remote.kind == "overcooked" and remote.partner == partner
        assert remote.skill_names == local.skill_names
        for i, (s0, s1) in enumerate(itertools.pairwise(episode_states)):
            # alternate the three encodings a caller may use
            enc = [lambda s: s, lambda s: s.model_dump(mode="json"), lambda s: s.to_json()][i % 3]
            same(remote.observe(enc(s0), enc(s1), ego_active=i % 5 != 0),
                 local.observe(s0, s1, ego_active=i % 5 != 0))
        before = digest(client, remote.session_id)
        last = episode_states[-1]
        with pytest.raises(InvalidRequest) as info:  # not consecutive
            remote.observe(last, last)
        assert info.value.kind in ("StateFormatError", "ImpossibleTransitionError")
        with pytest.raises(InvalidRequest):  # a state of another layout
            other = last.model_dump(mode="json") | {"layout": "coordination_ring"}
            remote.observe(other, other)
        assert digest(client, remote.session_id) == before
        assert before[0] == state_digest(local.state)


# --------------------------------------------------------------------------- bad input: 4xx, nothing changes


def _step(table, action=0, **extra):
    return {"action_logprobs": table, "action": action, **extra}


GOOD = [[-1.0, -2.0, -0.5, -3.0], [-0.1, -3.0, -4.0, -2.5], [-1.4, -1.0, -1.2, -1.6]]

BAD_STEPS = [
    # (id, path suffix, raw body, status, error kind)
    ("wrong-K", "/step", json.dumps(_step(GOOD[:2])), 422, "ShapeMismatchError"),
    ("ragged", "/step", json.dumps(_step([GOOD[0], GOOD[1][:3], GOOD[2]])), 422, "validation_error"),
    ("nan-token", "/step", json.dumps(_step(GOOD)).replace("-0.5", "NaN"), 422, "validation_error"),
    ("inf-token", "/step", json.dumps(_step(GOOD)).replace("-0.5", "Infinity"), 422, "validation_error"),
    ("minus-inf-token", "/step", json.dumps(_step(GOOD)).replace("-0.5", "-Infinity"), 422, "validation_error"),
    ("overflow", "/step", json.dumps(_step(GOOD)).replace("-0.5", "-1e999"), 422, "validation_error"),
    ("string-number", "/step", json.dumps(_step(GOOD)).replace("-0.5", '"-0.5"'), 422, "validation_error"),
    ("bool-number", "/step", json.dumps(_step(GOOD)).replace("-0.5", "true"), 422, "validation_error"),
    ("all-null-row", "/step", json.dumps(_step([GOOD[0], [None] * 4, GOOD[2]])), 422, "NonFiniteLoglikError"),
    ("action-out-of-range", "/step", json.dumps(_step(GOOD, 4)), 422, "ActionIndexError"),
    ("action-negative", "/step", json.dumps(_step(GOOD, -1)), 422, "ActionIndexError"),  # the gate's own check
    ("action-float", "/step", json.dumps(_step(GOOD, 1.0)), 422, "validation_error"),
    ("action-missing", "/step", json.dumps({"action_logprobs": GOOD}), 422, "validation_error"),
    ("unknown-skill-name", "/step", json.dumps(_step(GOOD, completed="wash")), 422, "UnknownSkillError"),
    ("unknown-skill-index", "/step", json.dumps(_step(GOOD, completed=3)), 422, "UnknownSkillError"),
    ("no-feasible-skill", "/step", json.dumps(_step(GOOD, feasible=[False] * 3)), 422, "NoFeasibleSkillError"),
    ("feasible-length", "/step", json.dumps(_step(GOOD, feasible=[True])), 422, "ShapeMismatchError"),
    ("weight-negative", "/step", json.dumps(_step(GOOD, weight=-1.0)), 422, "InvalidWeightError"),
    ("extra-field", "/step", json.dumps(_step(GOOD, temperature=1.0)), 422, "validation_error"),
    ("invalid-json", "/step", "{", 422, "validation_error"),
    ("json-array", "/step", "[]", 422, "validation_error"),
    ("not-utf8", "/step", b'{"action": "\xff"}', 400, "bad_request"),
    ("loglik-length", "/step_loglik", json.dumps({"loglik": [0.0, -1.0]}), 422, "ShapeMismatchError"),
    ("impossible-observation", "/step_loglik",
     json.dumps({"loglik": [None, -1.0, -2.0], "feasible": [True, False, False]}), 422, "ImpossibleObservationError"),
    ("evidence-empty-mask", "/step_evidence",
     json.dumps({"action_logprobs": GOOD, "action_mask": [False] * 4}), 422, "ActionIndexError"),
    ("evidence-mask-length", "/step_evidence",
     json.dumps({"action_logprobs": GOOD, "action_mask": [True] * 3}), 422, "ShapeMismatchError"),
    ("observe-generic-session", "/observe", json.dumps({"state": {}, "next_state": {}}), 422, "validation_error"),
    ("reset-bad-body", "/reset", json.dumps({"keep_memory": "yes"}), 422, "validation_error"),
]


@pytest.fixture(scope="module")
def busy_session(server):
    """A generic 3-skill session with some history."""
    with Client(server.url) as client:
        gate = client.from_logprobs(skill_names=["a", "b", "c"], params=GateParams(hazard=0.1))
        for action in (0, 2, 2, 1):
            gate.step(np.array(GOOD), action)
        yield gate.session_id


@pytest.mark.parametrize("case_id, suffix, body, status, kind", BAD_STEPS, ids=[c[0] for c in BAD_STEPS])
def test_bad_input_gets_4xx_and_leaves_session_unchanged(server, busy_session, case_id, suffix, body, status, kind):
    url = f"{server.url}/v1/sessions/{busy_session}"
    before = digest(server.url, busy_session)
    content = body if isinstance(body, bytes) else body.encode()
    r = httpx.post(url + suffix, content=content, headers=JSON)
    assert r.status_code == status, r.text
    err = r.json()
    assert err["error"] == kind, err
    assert err["detail"]
    assert digest(server.url, busy_session) == before


def test_other_bad_requests(server, busy_session):
    url = f"{server.url}/v1/sessions/{busy_session}"
    before = digest(server.url, busy_session)
    # a step with a good body still works (the fixture is sane)
    assert httpx.post(url + "/step", json=_step(GOOD, 1)).status_code == 200
    before = digest(server.url, busy_session)
    r = httpx.post(url + "/step", content=json.dumps(_step(GOOD)), headers={"Content-Type": "text/plain"})
    assert r.status_code == 422
    r = httpx.post(url + "/step", content=b"x" * (2 << 20), headers=JSON)  # over the 1 MiB limit
    assert r.status_code == 413 and r.json()["error"] == "payload_too_large"

    def chunks():  # no Content-Length: the guard counts what arrives
        for _ in range(40):
            yield b" " * 65536

    r = httpx.post(url + "/step", content=chunks(), headers=JSON)
    assert r.status_code == 413
    r = httpx.post(f"{server.url}/v1/sessions/{busy_session[:-1]}x/step", json=_step(GOOD))
    assert r.status_code == 404 and r.json()["error"] == "session_not_found"
    r = httpx.post(f"{server.url}/v1/sessions/not!an!id/step", json=_step(GOOD))
    assert r.status_code == 422
    r = httpx.get(f"{server.url}/v1/sessions")  # no listing of other clients' sessions
    assert r.status_code == 405
    assert digest(server.url, busy_session) == before
    with Client(server.url) as client:
        gate = client.attach(busy_session)
        with pytest.raises(WrongSessionKind):
            gate.observe({"layout": "cramped_room", "timestep": 0, "players": [
                {"position": [1, 2], "orientation": [0, -1]}, {"position": [3, 1], "orientation": [0, -1]}]},
                {"layout": "cramped_room", "timestep": 1, "players": [
                    {"position": [1, 2], "orientation": [0, -1]}, {"position": [3, 1], "orientation": [0, -1]}]})
    assert digest(server.url, busy_session) == before


CREATE_BAD = [
    ({"num_skills": 3, "layout": "cramped_room"}, "validation_error"),
    ({}, "validation_error"),
    ({"num_skills": 0}, "ShapeMismatchError"),  # the gate's own check, as in process
    ({"num_skills": 65}, "validation_error"),
    ({"num_skills": 2, "skill_names": ["a", "b", "c"]}, "validation_error"),
    ({"skill_names": ["a", "a"]}, "ShapeMismatchError"),
    ({"num_skills": 2, "prior_counts": [1.0]}, "ShapeMismatchError"),
    ({"num_skills": 2, "prior_counts": [-1.0, 0.0]}, "InvalidParameterError"),
    ({"num_skills": 2, "params": {"hazard": 2.0}}, "validation_error"),
    ({"num_skills": 2, "params": {"cp_release": 0.9, "cp_threshold": 0.5}}, "validation_error"),
    ({"num_skills": 2, "params": {"window": 100000, "model": "windowed"}}, "validation_error"),
    ({"num_skills": 2, "params": {"nonsense": 1}}, "validation_error"),
    ({"layout": "no_such_kitchen"}, "UnknownLayoutError"),
    ({"layout": "cramped_room", "partner": 2}, "InvalidParameterError"),
    ({"layout": "cramped_room", "prior_counts": [0.0] * 6}, "validation_error"),
]


def test_bad_create_requests_create_nothing(server):
    count = httpx.get(server.url + "/v1/healthz").json()["sessions"]
    for body, kind in CREATE_BAD:
        r = httpx.post(server.url + "/v1/sessions", json=body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["error"] == kind, (body, r.json())
    r = httpx.post(server.url + "/v1/sessions", content=b'{"num_skills": 2, "params": {"hazard": NaN}}',
                   headers=JSON)
    assert r.status_code == 422
    assert httpx.get(server.url + "/v1/healthz").json()["sessions"] == count


def test_session_limit():
    with ThreadServer(max_sessions=2) as srv, Client(srv.url) as client:
        a = client.from_logprobs(2)
        client.from_logprobs(2)
        with pytest.raises(SessionLimitReached) as info:
            client.from_logprobs(2)
        assert info.value.status_code == 429
        a.delete()
        client.from_logprobs(2)


# --------------------------------------------------------------------------- auth, isolation, expiry, concurrency


def test_auth_and_isolation():
    with ThreadServer(token=TOKEN) as srv:
        assert httpx.get(srv.url + "/v1/healthz").json()["auth"] is True  # liveness needs no token
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"},
                        {"Authorization": TOKEN}):
            r = httpx.post(srv.url + "/v1/sessions", json={"num_skills": 2}, headers=headers)
            assert r.status_code == 401 and r.json()["error"] == "unauthorized"
            assert r.headers["www-authenticate"].startswith("Bearer")
        with pytest.raises(Unauthorized):
            Client(srv.url).from_logprobs(2)
        with Client(srv.url, token=TOKEN) as client:
            a = client.from_logprobs(2, skill_names=["x", "y"])
            b = client.from_logprobs(2, skill_names=["x", "y"])
            assert a.session_id != b.session_id and len(a.session_id) >= 22
            b_before = digest(client, b.session_id)
            table = np.log([[0.9, 0.1], [0.2, 0.8]])
            for action in (0, 0, 1):
                a.step(table, action)
            assert digest(client, b.session_id) == b_before  # stepping A leaves B alone
            # the id without the token gets nothing, not even a 404
            for method, suffix in (("GET", ""), ("POST", "/step"), ("DELETE", "")):
                r = httpx.request(method, f"{srv.url}/v1/sessions/{a.session_id}{suffix}",
                                  json=_step(table.tolist()) if method == "POST" else None)
                assert r.status_code == 401
            assert digest(client, a.session_id)[1] == 3
            with pytest.raises(SessionNotFound):  # the token without the id gets nothing either
                client.attach(a.session_id[::-1])


def test_idle_sessions_expire():
    with ThreadServer(ttl_s=1.5, sweep_interval_s=0.1) as srv, Client(srv.url) as client:
        idle = client.from_logprobs(2)
        busy = client.from_logprobs(2)
        assert 0.0 < idle.state()["expires_in_s"] <= 1.5
        idle_id = idle.session_id
        started = time.monotonic()
        while time.monotonic() - started < 2.4:
            busy.step(np.log([[0.5, 0.5], [0.9, 0.1]]), 0)  # activity keeps it alive
            time.sleep(0.15)
        assert busy.state()["t"] > 0
        with pytest.raises(SessionNotFound):
            client.attach(idle_id)
        assert client.healthz()["sessions"] == 1


def test_concurrent_steps_on_one_session_are_serialised(server):
    rng = np.random.default_rng(11)
    k, a, n = 3, 4, 48
    params = GateParams(hazard=0.1, n_stable=0, confidence_floor=0.3, cooldown=1)
    tables = [log_table(rng, k, a, holes=0.0) for _ in range(n)]
    actions = [int(x) for x in rng.integers(a, size=n)]
    with Client(server.url) as client:
        sid = client.from_logprobs(k, params).session_id

    async def fire():
        async with httpx.AsyncClient(base_url=server.url, limits=httpx.Limits(max_connections=n)) as ac:
            return await asyncio.gather(*[
                ac.post(f"/v1/sessions/{sid}/step", json=_step(t.tolist(), act))
                for t, act in zip(tables, actions)])

    responses = asyncio.run(fire())
    assert all(r.status_code == 200 for r in responses)
    for r in responses:
        DecisionOut.model_validate(r.json())
    ts = [r.json()["info"]["t"] for r in responses]
    assert sorted(ts) == list(range(n))  # each step saw a distinct, consecutive state
    local = Gate.from_logprobs(k, params)
    from beliefgate.serve.client import decision_from_payload

    for i in np.argsort(ts):  # replay in the order the server applied them
        same(decision_from_payload(responses[i].json()), local.step(tables[i], actions[i]))
    assert digest(server.url, sid)[0] == state_digest(local.state)


# --------------------------------------------------------------------------- snapshots


def test_snapshot_restore_across_real_restarts(tmp_path, episode_states):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    snap = tmp_path / "sessions.snapshot"
    args = ("--token-file", str(token_file), "--snapshot", str(snap), "--ttl", "600")
    names = ["a", "b", "c"]
    params = GateParams(model="windowed", window=4, track_changepoint=True)
    oc_params = GateParams(hazard=0.07)
    local = Gate.from_logprobs(3, params, skill_names=names, prior_counts=[0.0, 2.0, 1.0])
    local_oc = Gate.for_overcooked("cramped_room", oc_params, partner=0)
    ops = [op for op in random_ops(5, 3, 4, 60, names) if op[0] in ("step", "replan")]
    pairs = list(itertools.pairwise(episode_states))

    def drive(remote, remote_oc, ops_part, pairs_part):
        for op in ops_part:
            try:
                want = apply(local, op)
            except BeliefInputError:
                continue
            got = apply(remote, op)
            if want is not None:
                same(got, want)
        for s0, s1 in pairs_part:
            same(remote_oc.observe(s0, s1), local_oc.observe(s0, s1))

    with cli_server(*args) as (url, proc):
        with Client(url, token=TOKEN) as client:
            remote = client.from_logprobs(3, params, skill_names=names, prior_counts=[0.0, 2.0, 1.0])
            remote_oc = client.for_overcooked("cramped_room", oc_params, partner=0)
            doomed = client.from_logprobs(2)
            doomed.delete()
            drive(remote, remote_oc, ops[:25], pairs[:20])
            ids = remote.session_id, remote_oc.session_id
        proc.send_signal(signal.SIGKILL)  # a crash: only what was acknowledged may count
        proc.wait(timeout=10)

    with cli_server(*args) as (url, proc):
        with Client(url, token=TOKEN) as client:
            assert client.healthz()["sessions"] == 2
            remote, remote_oc = client.attach(ids[0]), client.attach(ids[1])
            assert digest(client, ids[0])[0] == state_digest(local.state)
            assert digest(client, ids[1])[0] == state_digest(local_oc.state)
            assert remote_oc.partner == 0
            state = remote.state()
            assert state["prior_counts"] == [0.0, 2.0, 1.0] and state["skill_names"] == names
            drive(remote, remote_oc, ops[25:], pairs[20:30])
        proc.send_signal(signal.SIGTERM)  # clean stop: final snapshot
        # uvicorn shuts down gracefully, then re-raises the signal it caught
        assert proc.wait(timeout=20) in (0, -signal.SIGTERM)
        assert b"Traceback" not in proc.stderr.read()

    # what the clean stop left on disk is exactly the live state
    from beliefgate.serve.sessions import SessionStore

    store = SessionStore(ttl_s=600.0, snapshot_path=snap)
    assert store.restore() == 2
    assert state_digest(store.get(ids[0]).gate.state) == state_digest(local.state)
    assert state_digest(store.get(ids[1]).gate.state) == state_digest(local_oc.state)
    assert store.get(ids[1]).partner == 0

    assert snap.stat().st_mode & 0o077 == 0  # the pickle is private to its owner
    from typer.testing import CliRunner

    from beliefgate.cli import app

    for junk in (b"not a snapshot", b"garbage\n", b""):
        snap.write_bytes(junk)
        out = CliRunner().invoke(app, ["serve", "--port", str(free_port()), "--snapshot", str(snap)])
        assert out.exit_code == 2 and "is not a beliefgate-serve snapshot" in out.output, out.output
        assert len(out.output.strip().splitlines()) == 1


def test_failed_snapshot_write_rolls_back(tmp_path):
    folder = tmp_path / "snapshots"
    folder.mkdir()
    with ThreadServer(snapshot_path=folder / "s.pkl") as srv, Client(srv.url) as client:
        gate = client.from_logprobs(2)
        table = np.log([[0.7, 0.3], [0.4, 0.6]])
        gate.step(table, 0)
        before = digest(client, gate.session_id)
        folder.rename(tmp_path / "gone")  # the next write cannot happen
        r = httpx.post(f"{srv.url}/v1/sessions/{gate.session_id}/step", json=_step(table.tolist(), 1))
        assert r.status_code == 503 and r.json()["error"] == "snapshot_write_failed"
        assert digest(client, gate.session_id) == before  # rolled back
        (tmp_path / "gone").rename(folder)
        gate.step(table, 1)
        assert digest(client, gate.session_id)[1] == before[1] + 1


# --------------------------------------------------------------------------- CLI and OpenAPI


def test_cli_refuses_public_host_without_token(tmp_path):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "refusing" in result.output
    empty = tmp_path / "empty"
    empty.write_text("  \n")
    result = runner.invoke(app, ["serve", "--token-file", str(empty)])
    assert result.exit_code == 2 and "empty" in result.output
    result = runner.invoke(app, ["serve", "--snapshot", str(tmp_path / "missing" / "s.pkl")])
    assert result.exit_code == 2
    assert runner.invoke(app, ["serve", "--help"]).exit_code == 0


def test_committed_openapi_document_is_current():
    committed = (ROOT / "docs" / "openapi.json").read_text()
    assert committed == openapi_document(), (
        "docs/openapi.json is stale: run `beliefgate serve --print-openapi > docs/openapi.json`")
    doc = json.loads(committed)
    assert all(p.startswith("/v1/") for p in doc["paths"])


def test_served_openapi_matches_committed(server):
    served = httpx.get(server.url + "/openapi.json").json()
    assert served == json.loads((ROOT / "docs" / "openapi.json").read_text())


@pytest.mark.slow  # a benchmark script's smoke run: `make test-slow` / `make bench`, not the default suite
def test_benchmark_smoke(tmp_path):
    import importlib.util

    path = ROOT / "benchmarks" / "bench_serve.py"
    spec = importlib.util.spec_from_file_location("bench_serve", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "bench.json"
    result = module.main(["--quick", "--sessions", "8", "--steps", "200", "--snapshot-steps", "40",
                          "--paced-sessions", "4", "--duration", "1", "--json", str(out)])
    data = json.loads(out.read_text())
    assert data["http"]["steps"] == result["http"]["steps"] > 0
    assert data["http"]["errors"] == 0 and data["http"]["final_posteriors_equal"]
    assert data["http_snapshot"]["steps"] == 40 and data["http_snapshot"]["errors"] == 0
    (paced,) = data["paced"]  # the load generator ran in its own process, on a schedule
    assert paced["steps"] == 4 * 5 and paced["errors"] == 0 and paced["p99_ms"] > 0


# --------------------------------------------------------------------------- property-based fuzz


def _fuzz_schema(max_examples: int):
    schemathesis = pytest.importorskip("schemathesis")
    from schemathesis.config import SchemathesisConfig

    config = SchemathesisConfig.from_dict({
        "generation": {"max-examples": max_examples, "mode": "all", "deterministic": True, "database": "none",
                       # the token is sent by the test; do not generate Authorization headers
                       "with-security-parameters": False},
        "phases": {"coverage": {"enabled": False}},
    })
    return schemathesis.openapi.from_path(str(ROOT / "docs" / "openapi.json"), config=config)


try:
    FUZZ_QUICK = _fuzz_schema(12)
    FUZZ_LONG = _fuzz_schema(300)
except pytest.skip.Exception:  # pragma: no cover - schemathesis missing
    FUZZ_QUICK = FUZZ_LONG = None


class FuzzTarget:
    """A token-protected server plus live sessions to aim the generated requests at."""

    def __init__(self, srv: ThreadServer):
        self.srv = srv
        self.sessions = {}

    def session(self, kind: str) -> str:
        sid = self.sessions.get(kind)
        family = "kappa" if kind == "kappa" else "sessions"
        if sid is None or httpx.get(f"{self.srv.url}/v1/{family}/{sid}", headers=AUTH).status_code != 200:
            body = {"num_skills": 3} if kind == "logprobs" else {"layout": "cramped_room"}
            if kind == "kappa":
                body = {"branches": ["a", "b", "c"]}
            sid = httpx.post(f"{self.srv.url}/v1/{family}", json=body, headers=AUTH).json()["session_id"]
            self.sessions[kind] = sid
        return sid


@pytest.fixture(scope="module")
def fuzz_target():
    with ThreadServer(token=TOKEN, max_sessions=100, ttl_s=120.0) as srv:
        yield FuzzTarget(srv)


def _fuzz_case(case, target: FuzzTarget) -> None:
    from schemathesis.specs.openapi.checks import positive_data_acceptance

    params = case.path_parameters or {}
    if "session_id" in params and re.fullmatch(SESSION_ID_PATTERN, str(params["session_id"])) and \
            zlib.crc32(str(params["session_id"]).encode()) % 4:
        # aim most requests at a live session (the rest probe unknown ids)
        kind = ("kappa" if case.path.startswith("/v1/kappa/") else
                "overcooked" if case.path.endswith("/observe") else "logprobs")
        params["session_id"] = target.session(kind)
    # every check but "schema-valid requests are accepted": the schema cannot say that a
    # table must have K rows for this session, so the gate rightly refuses some (422)
    response = case.call_and_validate(base_url=target.srv.url, headers=AUTH,
                                      excluded_checks=[positive_data_acceptance])
    assert response.status_code < 500


if FUZZ_QUICK is not None:
    @FUZZ_QUICK.parametrize()
    def test_fuzz_openapi_no_server_errors(case, fuzz_target):
        _fuzz_case(case, fuzz_target)

    @pytest.mark.slow
    @FUZZ_LONG.parametrize()
    def test_fuzz_openapi_no_server_errors_long(case, fuzz_target):
        _fuzz_case(case, fuzz_target)


def test_non_finite_result_is_rejected_and_rolled_back():
    """Defence in depth: a step whose result is not finite never reaches the session.

    The schema's bounds keep HTTP inputs away from this; the in-process Gate rejects a
    ``weight * loglik`` that overflows (NonFiniteLoglikError), and the service would also
    catch a non-finite result and restore the previous state (NonFiniteResultError).
    """
    from beliefgate.beliefs.errors import NonFiniteLoglikError
    from beliefgate.serve.app import ApiError
    from beliefgate.serve.routing import mutate as _mutate
    from beliefgate.serve.sessions import SessionStore

    async def run():
        store = SessionStore()
        session = store.add(Gate.from_logprobs(3), "logprobs")
        await _mutate(store, session.id, lambda s: s.gate.step_loglik([-1.0, 0.0, -2.0]))
        before = state_digest(session.gate.state), session.version
        with np.errstate(all="ignore"), pytest.raises((ApiError, NonFiniteLoglikError)):
            await _mutate(store, session.id, lambda s: s.gate.step_loglik(
                [-np.inf, 2.6e16, -np.inf], weight=6.3e306, feasible=[False, True, True]))
        assert (state_digest(session.gate.state), session.version) == before
        assert np.isfinite(session.gate.step_loglik([-1.0, 0.0, -2.0]).posterior).all()

    asyncio.run(run())


# --------------------------------------------------------------------------- kappa sessions


def _kappa_ops(seed: int, names, n: int):
    rng = np.random.default_rng(seed)
    ops = []
    for _ in range(n):
        r = rng.random()
        if r < 0.55:
            b, c = (int(x) for x in rng.choice(len(names), 2, replace=False))
            ops.append(("judge", names[b] if rng.random() < 0.5 else b, names[c], int(rng.random() < 0.5)))
        else:
            ops.append(("rollout", names[int(rng.integers(len(names)))], int(rng.integers(1, 4)),
                        float(np.round(rng.normal(), 6))))
    return ops


def test_http_kappa_equals_in_process(server):
    from beliefgate import Kappa, KappaParams
    from beliefgate.serve.schemas import KappaOut

    names = ["g0:interact", "g0:up", "g1:interact", "g1:left", "g1:stay"]
    params = KappaParams(tau=0.7, sigma_r=0.8, theta=0.7, nucleus_p=0.85, max_rounds=2)
    local = Kappa(names, params)
    with Client(server.url) as client:
        remote = client.kappa(names, params)
        assert remote.branches == tuple(names) and remote.params == params
        for op in _kappa_ops(3, names, 25):
            info = (remote.judge(*op[1:]) if op[0] == "judge" else remote.rollout(*op[1:]))
            (local.judge(*op[1:]) if op[0] == "judge" else local.rollout(*op[1:]))
            KappaOut.model_validate(info)
            assert info["argmax_probs"] == local.info.argmax_probs.tolist()  # exact through JSON
            assert info["state_digest"] == state_digest(local.state)
            assert remote.argmax_probs == local.argmax_probs and remote.best == local.best
            assert remote.nucleus == local.nucleus and remote.commit == local.commit
        info = remote.round({n: 0.5 for n in remote.nucleus})
        local.round({n: 0.5 for n in local.nucleus})
        assert info["rounds"] == 1 and info["state_digest"] == state_digest(local.state)
        info = remote.evidence(judgments=[(names[0], names[1], 1)], rollouts=[(names[2], 2, 0.1)])
        local.update_many([K_Judgment(names[0], names[1], 1), K_Rollout(names[2], 2, 0.1)])
        assert info["state_digest"] == state_digest(local.state) and info["kappa"] == local.kappa
        assert client.attach_kappa(remote.session_id).info["version"] == info["version"]
        remote.reset()
        assert remote.info["t"] == 0 and remote.info["argmax"] == pytest.approx({n: 0.2 for n in names}, abs=1e-9)
        remote.delete()
        with pytest.raises(SessionNotFound):
            remote.refresh()


from beliefgate.beliefs.kappa import Judgment as K_Judgment, Rollout as K_Rollout  # noqa: E402

KAPPA_BAD = [
    # (id, suffix, raw body, error kind, field)
    ("unknown-branch", "/judge", {"left": "a", "right": "zz", "y": 1}, "UnknownBranchError", "right"),
    ("index-out-of-range", "/rollout", {"branch": 9, "depth": 1, "score": 0.0}, "UnknownBranchError", "branch"),
    ("self-judgment", "/judge", {"left": "b", "right": "b", "y": 0}, "SelfJudgmentError", "right"),
    ("y-two", "/judge", {"left": "a", "right": "b", "y": 2}, "JudgmentValueError", "y"),
    ("y-minus-one", "/judge", {"left": "a", "right": "b", "y": -1}, "JudgmentValueError", "y"),
    ("y-large", "/judge", {"left": "a", "right": "b", "y": 7}, "JudgmentValueError", "y"),
    ("y-negative", "/judge", {"left": "a", "right": "b", "y": -3}, "JudgmentValueError", "y"),
    ("depth-very-negative", "/rollout", {"branch": "a", "depth": -5, "score": 0.1}, "DepthError", "depth"),
    ("y-float", "/judge", {"left": "a", "right": "b", "y": 1.0}, "validation_error", "y"),
    ("depth-zero", "/rollout", {"branch": "a", "depth": 0, "score": 0.1}, "DepthError", "depth"),
    ("depth-negative", "/rollout", {"branch": "a", "depth": -1, "score": 0.1}, "DepthError", "depth"),
    ("score-nan", "/rollout", '{"branch": "a", "depth": 1, "score": NaN}', "validation_error", "score"),
    ("score-inf", "/rollout", '{"branch": "a", "depth": 1, "score": Infinity}', "validation_error", "score"),
    ("score-overflow", "/rollout", '{"branch": "a", "depth": 1, "score": 1e999}', "validation_error", "score"),
    ("score-string", "/rollout", {"branch": "a", "depth": 1, "score": "0.3"}, "validation_error", "score"),
    ("batch-one-bad", "/evidence", {"judgments": [{"left": "a", "right": "b", "y": 1}],
                                    "rollouts": [{"branch": "a", "depth": 0, "score": 1.0}]}, "DepthError", "depth"),
    ("round-duplicate", "/evidence", {"rollouts": [{"branch": "a", "depth": 1, "score": 1.0},
                                                   {"branch": "a", "depth": 1, "score": 2.0}], "round": True},
     "DuplicateBranchError", "rollouts"),
    ("empty-batch", "/evidence", {}, "EvidenceTypeError", "body"),  # the body as a whole
    ("extra-field", "/judge", {"left": "a", "right": "b", "y": 1, "weight": 2}, "validation_error", "weight"),
]


@pytest.fixture(scope="module")
def busy_kappa(server):
    with Client(server.url) as client:
        k = client.kappa(["a", "b", "c"])
        k.judge("a", "b", 1)
        k.rollout("c", 2, 0.4)
        yield k.session_id


def kappa_digest(url, sid):
    body = httpx.get(f"{url}/v1/kappa/{sid}").json()
    return body["state_digest"], body["version"], body["t"]


@pytest.mark.parametrize("case_id, suffix, body, kind, field", KAPPA_BAD, ids=[c[0] for c in KAPPA_BAD])
def test_kappa_bad_input_gets_422_naming_the_field(server, busy_kappa, case_id, suffix, body, kind, field):
    before = kappa_digest(server.url, busy_kappa)
    content = body if isinstance(body, str) else json.dumps(body)
    r = httpx.post(f"{server.url}/v1/kappa/{busy_kappa}{suffix}", content=content.encode(), headers=JSON)
    assert r.status_code == 422, r.text
    err = r.json()
    assert err["error"] == kind, err
    assert any(field in [str(p) for p in e["loc"]] for e in err["errors"]), err
    assert kappa_digest(server.url, busy_kappa) == before


def test_kappa_round_rules_and_client_errors(server):
    from beliefgate.beliefs.kappa import NotInNucleusError, RoundLimitError, UnknownBranchError

    with Client(server.url) as client:
        k = client.kappa(["a", "b", "c", "d"], KappaParams_(max_rounds=1))
        k.round({"a": 3.0, "b": 2.5, "c": -3.0, "d": -3.0})
        before = kappa_digest(server.url, k.session_id)
        with pytest.raises(RoundLimitError) as info:  # the in-process class, raised remotely
            k.round({"a": 1.0})
        assert isinstance(info.value, ServeError) and info.value.status_code == 422
        with pytest.raises(UnknownBranchError):
            k.judge("a", "nope", 1)
        assert kappa_digest(server.url, k.session_id) == before
        k2 = client.kappa(["a", "b", "c", "d"], KappaParams_(max_rounds=3))
        k2.round({"a": 3.0, "b": 2.9, "c": -3.0, "d": -3.0})
        with pytest.raises(NotInNucleusError):
            k2.round({"d": 1.0})


from beliefgate import KappaParams as KappaParams_  # noqa: E402

KAPPA_CREATE_BAD = [
    ({"branches": []}, "NoBranchError", "branches"),
    ({"branches": ["a", "b", "a"]}, "DuplicateBranchError", "branches"),
    ({"branches": ["a", ""]}, "validation_error", "branches"),
    ({}, "validation_error", "branches"),
    ({"branches": ["a"], "params": {"theta": 0.0}}, "validation_error", "theta"),
    ({"branches": ["a"], "params": {"theta": 1.2}}, "validation_error", "theta"),
    ({"branches": ["a"], "params": {"nucleus_p": 0.0}}, "validation_error", "nucleus_p"),
    ({"branches": ["a"], "params": {"nucleus_p": 1.5}}, "validation_error", "nucleus_p"),
    ({"branches": ["a"], "params": {"tau": -1.0}}, "validation_error", "tau"),
    ({"branches": ["a"], "params": {"num_points": 100000}}, "validation_error", "num_points"),
]


def test_bad_kappa_create_requests_create_nothing(server):
    count = httpx.get(server.url + "/v1/healthz").json()["sessions"]
    for body, kind, field in KAPPA_CREATE_BAD:
        r = httpx.post(server.url + "/v1/kappa", json=body)
        assert r.status_code == 422, (body, r.text)
        err = r.json()
        assert err["error"] == kind, (body, err)
        assert any(field in [str(p) for p in e["loc"]] for e in err["errors"]), err
    assert httpx.get(server.url + "/v1/healthz").json()["sessions"] == count


def test_kappa_and_gate_sessions_do_not_mix(server):
    with Client(server.url) as client:
        k = client.kappa(["a", "b"])
        g = client.from_logprobs(2)
        for method, path in (("GET", f"/v1/sessions/{k.session_id}"), ("POST", f"/v1/sessions/{k.session_id}/reset"),
                             ("DELETE", f"/v1/sessions/{k.session_id}"), ("GET", f"/v1/kappa/{g.session_id}"),
                             ("POST", f"/v1/kappa/{g.session_id}/reset")):
            r = httpx.request(method, server.url + path)
            assert r.status_code == 409 and r.json()["error"] == "wrong_session_kind", (method, path, r.text)
        r = httpx.post(f"{server.url}/v1/sessions/{k.session_id}/step", json=_step([[-0.5, -1.0], [-1.0, -0.5]]))
        assert r.status_code == 409
        assert k.refresh()["version"] == 0 and g.state()["version"] == 0


def test_kappa_sessions_need_the_token_and_count_against_the_limit(tmp_path):
    from beliefgate import Kappa
    from beliefgate.serve.sessions import SessionStore

    with ThreadServer(token=TOKEN, max_sessions=2, snapshot_path=tmp_path / "s.pkl") as srv:
        r = httpx.post(srv.url + "/v1/kappa", json={"branches": ["a", "b"]})
        assert r.status_code == 401
        with Client(srv.url, token=TOKEN) as client:
            k = client.kappa(["a", "b"])
            k.judge("a", "b", 1)
            assert httpx.get(f"{srv.url}/v1/kappa/{k.session_id}").status_code == 401
            client.from_logprobs(2)
            with pytest.raises(SessionLimitReached):
                client.kappa(["x"])
            digest_now = k.refresh()["state_digest"]
    store = SessionStore(ttl_s=600.0, snapshot_path=tmp_path / "s.pkl")
    assert store.restore() == 2
    restored = store.get(k.session_id)
    assert restored.kind == "kappa" and isinstance(restored.gate, Kappa)
    assert state_digest(restored.gate.state) == digest_now
