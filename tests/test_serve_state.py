"""The service keeps plain committed states (issue 14 item 2) and owns its snapshot file
(issue 19): rollback through the public ``restore`` with the pickling protocol of Gate and
Kappa disabled; a snapshot file that holds no Gate/Kappa object; kappa sessions survive a
restart exactly (evidence log included); stale temporaries removed at start; a second
server on the same snapshot refused.
"""

from __future__ import annotations

import io
import json
import logging
import pickle

import numpy as np
import pytest

httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

from beliefgate import Gate, GateParams  # noqa: E402
from beliefgate.beliefs.kappa import Kappa, KappaParams  # noqa: E402
from beliefgate.serve import Client  # noqa: E402
from beliefgate.serve.app import create_app  # noqa: E402
from beliefgate.serve.schemas import state_digest  # noqa: E402
from beliefgate.serve.sessions import SessionStore, SnapshotLockedError  # noqa: E402

from test_serve import ThreadServer, digest, free_port  # noqa: E402

TABLE = np.log([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3]])


def _no_pickling(*args, **kwargs):
    raise AssertionError("the service must not use the Gate/Kappa pickling protocol")


@pytest.fixture
def no_object_pickling(monkeypatch):
    """Gate and Kappa cannot be pickled or unpickled while the test runs."""
    for cls in (Gate, Kappa):
        monkeypatch.setattr(cls, "__getstate__", _no_pickling)
        monkeypatch.setattr(cls, "__setstate__", _no_pickling)
        monkeypatch.setattr(cls, "__reduce_ex__", _no_pickling, raising=False)


def test_failed_write_rolls_back_through_restore_without_pickling(tmp_path, no_object_pickling):
    folder = tmp_path / "snapshots"
    folder.mkdir()
    with ThreadServer(snapshot_path=folder / "s.pkl") as srv, Client(srv.url) as client:
        gate = client.from_logprobs(2)
        gate.step(TABLE, 0)
        kappa = client.kappa(["a", "b", "c"])
        kappa.judge("a", "b", 1)
        kappa.round({"a": 0.3, "b": 0.1, "c": -0.2})
        before_gate = digest(client, gate.session_id)
        before_kappa = kappa.refresh()
        folder.rename(tmp_path / "gone")  # the next write cannot happen
        r = httpx.post(f"{srv.url}/v1/sessions/{gate.session_id}/step",
                       json={"action_logprobs": TABLE.tolist(), "action": 1})
        assert r.status_code == 503 and r.json()["error"] == "snapshot_write_failed"
        for suffix, body in (("judge", {"left": "c", "right": "a", "y": 1}),
                             ("evidence", {"rollouts": [{"branch": "c", "depth": 2, "score": 5.0}]}),
                             ("reset", None)):
            r = (httpx.post(f"{srv.url}/v1/kappa/{kappa.session_id}/{suffix}", json=body) if body is not None
                 else httpx.post(f"{srv.url}/v1/kappa/{kappa.session_id}/{suffix}"))
            assert r.status_code == 503, (suffix, r.text)
        r = httpx.delete(f"{srv.url}/v1/kappa/{kappa.session_id}")
        assert r.status_code == 503
        assert digest(client, gate.session_id) == before_gate
        after = kappa.refresh()
        assert {k: after[k] for k in ("state_digest", "version", "argmax", "rounds")} == \
            {k: before_kappa[k] for k in ("state_digest", "version", "argmax", "rounds")}
        (tmp_path / "gone").rename(folder)
        gate.step(TABLE, 1)
        assert digest(client, gate.session_id)[1] == before_gate[1] + 1
        kappa.judge("c", "a", 1)
        assert kappa.info["version"] == before_kappa["version"] + 1


class _PlainUnpickler(pickle.Unpickler):
    """Refuses the live objects: a snapshot must hold plain data (states, not Gate/Kappa)."""

    def find_class(self, module, name):
        if name in ("Gate", "Kappa", "OvercookedObserver") or module.startswith("beliefgate.serve"):
            raise pickle.UnpicklingError(f"snapshot holds a live object {module}.{name}")
        return super().find_class(module, name)


def _plain_load(data: bytes):
    return _PlainUnpickler(io.BytesIO(data)).load()


def test_snapshot_file_holds_plain_states(tmp_path):
    snap = tmp_path / "s.pkl"
    with ThreadServer(snapshot_path=snap) as srv, Client(srv.url) as client:
        client.from_logprobs(2, GateParams(model="windowed", window=3), skill_names=["x", "y"],
                             prior_counts=[1.0, 0.0]).step(TABLE, 0)
        client.for_overcooked("cramped_room", partner=0)
        client.kappa(["a", "b"]).judge("a", "b", 0)
    payload = _plain_load(snap.read_bytes())
    records = [_plain_load(item) if isinstance(item, bytes) else item
               for entry in payload["sessions"] for item in (entry if isinstance(entry, tuple) else [entry])]
    records = [r for r in records if isinstance(r, dict)]
    assert sorted(r["kind"] for r in records) == ["kappa", "logprobs", "overcooked"]
    for rec in records:
        assert set(rec) >= {"config", "state", "log", "version"}
        assert isinstance(rec["config"]["params"], str)  # the params' JSON


def test_kappa_session_survives_a_restart_exactly(tmp_path):
    snap = tmp_path / "s.pkl"
    params = KappaParams(tau=0.8)
    local = Kappa(["a", "b", "c"], params)
    with ThreadServer(snapshot_path=snap) as srv, Client(srv.url) as client:
        remote = client.kappa(["a", "b", "c"], params)
        for kappa in (local, remote):
            kappa.judge("a", "b", 1)
            kappa.judge("c", "b", 0)
            kappa.round({"a": 0.2, "b": 0.5, "c": 0.1})
            kappa.rollout("c", 3, 1.5)
        sid = remote.session_id
        assert remote.info["state_digest"] == state_digest(local.state)
    # a second server restores it; evidence continues exactly as in process
    with ThreadServer(snapshot_path=snap) as srv:
        r = httpx.get(f"{srv.url}/v1/kappa/{sid}")
        assert r.status_code == 200 and r.json()["state_digest"] == state_digest(local.state)
        local.judge("b", "a", 1)
        r = httpx.post(f"{srv.url}/v1/kappa/{sid}/judge", json={"left": "b", "right": "a", "y": 1})
        assert r.status_code == 200 and r.json()["state_digest"] == state_digest(local.state)
        assert r.json()["argmax"] == local.argmax_probs
    store = SessionStore(ttl_s=None, snapshot_path=snap)
    assert store.restore() == 1
    restored = store.get(sid).gate
    assert state_digest(restored.state) == state_digest(local.state)
    assert restored.to_record() == local.to_record()  # the evidence log came back too


def test_kappa_evidence_is_the_kappas_own_log_and_version_2_snapshots_still_read(tmp_path):
    """The snapshot stores a kappa session's evidence as the kappa's own records (Kappa.log);
    a version-2 file (the evidence as plain tuples) restores to the same state."""
    snap = tmp_path / "s.pkl"
    local = Kappa(["a", "b", "c"])
    local.judge("a", "b", 1)
    local.round({"a": 0.2, "c": -0.1})
    local.rollout("b", 2, 0.7)
    with ThreadServer(snapshot_path=snap) as srv, Client(srv.url) as client:
        remote = client.kappa(["a", "b", "c"])
        remote.judge("a", "b", 1)
        remote.round({"a": 0.2, "c": -0.1})
        remote.rollout("b", 2, 0.7)
        sid = remote.session_id
    payload = pickle.loads(snap.read_bytes())
    assert payload["version"] == 3
    idle, data = payload["sessions"][0]
    rec = pickle.loads(data)
    assert list(rec["log"]) == list(local.log)

    def legacy(e):  # what version 2 wrote
        if "round" in e:
            return ("round", tuple((r["branch"], r["depth"], r["score"]) for r in e["round"]))
        if "y" in e:
            return ("judgment", e["left"], e["right"], e["y"])
        return ("rollout", e["branch"], e["depth"], e["score"])

    rec["log"] = tuple(legacy(e) for e in rec["log"])
    payload["version"] = 2
    payload["sessions"] = [(idle, pickle.dumps(rec))]
    snap.write_bytes(pickle.dumps(payload))
    store = SessionStore(ttl_s=None, snapshot_path=snap)
    assert store.restore() == 1
    restored = store.get(sid)
    assert state_digest(restored.gate.state) == state_digest(local.state)
    assert restored.log == local.log and restored.gate.to_record() == local.to_record()


def test_stale_temporaries_removed_at_start(tmp_path, caplog):
    snap = tmp_path / "s.pkl"
    with ThreadServer(snapshot_path=snap) as srv, Client(srv.url) as client:
        sid = client.from_logprobs(2).session_id
    real = snap.read_bytes()
    stale = [tmp_path / ".s.pkl.k2j3h4.tmp", tmp_path / ".s.pkl.zz_9.tmp"]
    for p in stale:
        p.write_bytes(real[: len(real) // 2])  # what a writer killed mid-write leaves
    others = [tmp_path / ".other.pkl.abc.tmp", tmp_path / "s.pkl.tmp"]
    for p in others:
        p.write_bytes(b"not ours")
    with caplog.at_level(logging.WARNING, logger="beliefgate.serve"):
        app = create_app(snapshot_path=snap, ttl_s=None)
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in others)
    assert snap.read_bytes() == real  # the real snapshot untouched, and restored from
    assert app.state.store.stale_removed == 2 and sid in app.state.store._sessions
    assert any("removed 2 stale snapshot temporaries" in r.getMessage() for r in caplog.records)
    app.state.store.release_lock()


def test_second_server_on_the_same_snapshot_is_refused(tmp_path):
    from typer.testing import CliRunner

    from beliefgate.cli import app as cli

    snap = tmp_path / "s.pkl"
    first = SessionStore(snapshot_path=snap)
    assert first.open() == 0
    with pytest.raises(SnapshotLockedError, match="in use by another server"):
        SessionStore(snapshot_path=snap).open()
    planted = tmp_path / ".s.pkl.abcd.tmp"  # the holder's write in flight: not removed by the refused one
    planted.write_bytes(b"partial")
    out = CliRunner().invoke(cli, ["serve", "--port", str(free_port()), "--snapshot", str(snap)])
    assert out.exit_code == 2
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "in use by another server" in lines[0], out.output
    assert planted.exists()
    first.close()
    second = SessionStore(snapshot_path=snap)
    assert second.open() == 0  # free again once the first let go
    assert not planted.exists()
    second.close()


def test_fast_step_path_answers_exactly_as_fastapi():
    """The guard serves valid step requests itself; ``application/x+json`` takes FastAPI's
    route for the same request: every answer (success and error) must be identical."""
    fast, slow = {"Content-Type": "application/json"}, {"Content-Type": "application/x-test+json"}
    rng = np.random.default_rng(3)
    with ThreadServer() as srv, Client(srv.url) as client:
        a = client.from_logprobs(3, skill_names=["p", "q", "r"]).session_id
        b = client.from_logprobs(3, skill_names=["p", "q", "r"]).session_id
        kappa = client.kappa(["x", "y"]).session_id

        def both(suffix: str, payload, sid_a=None, sid_b=None):
            body = json.dumps(payload)
            ra = httpx.post(f"{srv.url}/v1/sessions/{sid_a or a}/{suffix}", content=body, headers=fast)
            rb = httpx.post(f"{srv.url}/v1/sessions/{sid_b or b}/{suffix}", content=body, headers=slow)
            assert (ra.status_code, ra.headers["content-type"]) == (rb.status_code, rb.headers["content-type"])
            assert ra.json() == rb.json(), suffix
            return ra

        for i in range(12):
            q = rng.normal(size=(3, 4))
            table = (q - np.log(np.exp(q).sum(1, keepdims=True))).tolist()
            assert both("step", {"action_logprobs": table, "action": int(i % 4),
                                 "completed": "q" if i == 5 else None}).status_code == 200
            assert both("step_loglik", {"loglik": table[0][:3], "weight": 0.5}).status_code == 200
            assert both("step_evidence", {"action_logprobs": table, "action_mask": [True, False, True, False],
                                          "ego_active": i % 2 == 0}).status_code == 200
        cases = [("step", {"action_logprobs": [[-0.1, -2.0]] * 3, "action": 7}, 422),       # ActionIndexError
                 ("step", {"action_logprobs": [[-0.1, -2.0]] * 2, "action": 0}, 422),       # ShapeMismatchError
                 ("step", {"action_logprobs": [[-0.1, -2.0]] * 3, "action": 0, "completed": "zz"}, 422),
                 ("step", {"action_logprobs": [[None, None]] * 3, "action": 0}, 422),
                 ("step", {"action_logprobs": [[-0.1, -2.0]] * 3}, 422),                    # schema
                 ("step_loglik", {"loglik": [0.1, "x", 0.2]}, 422)]
        for suffix, payload, status in cases:
            assert both(suffix, payload).status_code == status, payload
        assert both("step", {"action_logprobs": [[-0.1]], "action": 0}, "nope", "nope").status_code == 404
        assert both("step", {"action_logprobs": [[-0.1]], "action": 0}, kappa, kappa).status_code == 409
        assert digest(client, a)[::2] == digest(client, b)[::2]  # same state (digest, t)


def test_remote_kappa_errors_name_the_field():
    from beliefgate.beliefs.kappa import DepthError, ExtremeEvidenceError, UnknownBranchError

    with ThreadServer() as srv, Client(srv.url) as client:
        k = client.kappa(["left", "right"])
        with pytest.raises(UnknownBranchError) as info:
            k.judge("left", "up", 1)
        assert info.value.field == "right"
        with pytest.raises(DepthError) as info:
            k.rollout("left", 0, 1.0)
        assert info.value.field == "depth"
        # evidence float64 cannot hold: "evidence" remotely as in process, the session unchanged
        params = KappaParams(sigma_r=1e-6, sigma0=1e6)
        local, remote = Kappa(["a", "b", "c"], params), client.kappa(["a", "b", "c"], params)
        for kap in (local, remote):
            kap.rollout("a", 1, 1e9)
            kap.rollout("b", 1, -1e9)
        before = remote.info
        for kap in (local, remote):
            with pytest.raises(ExtremeEvidenceError) as info:
                kap.judge("b", "a", 1)
            assert info.value.field == "evidence"
        assert remote.info == before


def test_half_sent_body_gets_408_after_the_body_timeout():
    import socket
    import time

    with ThreadServer(body_timeout_s=0.5) as srv:
        host, port = srv.url.rsplit("//", 1)[1].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{\"num_skills\"")
            started = time.monotonic()
            answer = b""
            while True:  # the server answers and closes the connection
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
            waited = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b'"body_timeout"' in answer and 0.4 < waited < 5.0
        assert httpx.get(srv.url + "/v1/healthz").json()["sessions"] == 0  # nothing was created
    with pytest.raises(ValueError, match="body_timeout_s"):
        create_app(body_timeout_s=0.0)


def test_client_reports_an_unreachable_server_as_its_own_error():
    from beliefgate.serve.client import ServiceUnavailable, ServiceUnreachable

    with Client(f"http://127.0.0.1:{free_port()}", timeout=2.0) as client:  # nothing listens there
        with pytest.raises(ServiceUnreachable) as info:
            client.healthz()
    assert isinstance(info.value, ServiceUnavailable) and info.value.kind == "unreachable"
    assert "ConnectError" in str(info.value) and "/v1/healthz" in str(info.value)


def test_serve_port_0_prints_the_real_port(tmp_path):
    import re
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "beliefgate.cli", "serve", "--port", "0", "--log-level", "warning"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)
        assert match is not None and int(match.group(1)) != 0, line
        url = f"http://127.0.0.1:{match.group(1)}"
        deadline = time.monotonic() + 30
        while True:
            try:
                assert httpx.get(url + "/v1/healthz", timeout=1.0).json()["status"] == "ok"
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        proc.stderr.close()


def test_client_drops_idle_connections_before_the_server_does():
    """The keep-alive race behind a flaky ``Connection reset by peer``: the client must expire
    an idle pooled connection well before the server closes it."""
    from beliefgate.serve.client import KEEPALIVE_EXPIRY_S
    from beliefgate.serve.protocol import SERVER_KEEP_ALIVE_S, uvicorn_config

    config = uvicorn_config(create_app(), "127.0.0.1", 0)
    assert config.timeout_keep_alive == SERVER_KEEP_ALIVE_S
    with Client("http://127.0.0.1:9") as client:
        pool = client._http._transport._pool
        assert pool._keepalive_expiry == KEEPALIVE_EXPIRY_S
    assert KEEPALIVE_EXPIRY_S <= 0.5 * SERVER_KEEP_ALIVE_S


class _Marker:
    """A pickle that would create a file when loaded (what a crafted snapshot does)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.path}",))


@pytest.mark.parametrize("where", ["outer", "session"])
def test_a_crafted_snapshot_is_refused_before_anything_it_names_runs(tmp_path, where):
    """The snapshot reader resolves only NumPy's rebuilders and the core's own classes: a
    pickle naming ``os.system`` fails with SnapshotError and the command never runs."""
    from beliefgate.serve.sessions import SNAPSHOT_FORMAT, SnapshotError

    marker, snap = tmp_path / "ran", tmp_path / "s.pkl"
    if where == "outer":
        snap.write_bytes(pickle.dumps(_Marker(marker)))
    else:
        payload = {"format": SNAPSHOT_FORMAT, "version": 2, "written_at": 0.0,
                   "sessions": [(0.0, pickle.dumps(_Marker(marker)))]}
        snap.write_bytes(pickle.dumps(payload))
    store = SessionStore(ttl_s=None, snapshot_path=snap)
    with pytest.raises(SnapshotError, match="os.system|posix.system"):
        store.restore()
    assert not marker.exists()
    store.release_lock()


def test_version_1_snapshot_of_pickled_objects_still_restores(tmp_path):
    """Version 1 held whole pickled Gate/Kappa objects; the restricted reader still rebuilds
    them (their classes live in the core packages)."""
    import time as _time

    from beliefgate.serve.sessions import SNAPSHOT_FORMAT

    gate = Gate(2, GateParams(), ["onion", "dish"])
    gate.step(TABLE, 1)
    kappa = Kappa(["a", "b", "c"], KappaParams())
    kappa.judge("a", "b", 1)
    kappa.rollout("c", depth=2, score=0.4)
    common = {"layout": None, "partner": None, "prior_counts": None, "created_at": _time.time(), "version": 3,
              "idle_s": 0.0}
    sessions = [dict(common, id="g" * 16, kind="gate", gate=pickle.dumps(gate)),
                dict(common, id="k" * 16, kind="kappa", gate=pickle.dumps(kappa))]
    snap = tmp_path / "s.pkl"
    snap.write_bytes(pickle.dumps({"format": SNAPSHOT_FORMAT, "version": 1, "written_at": _time.time(),
                                   "sessions": sessions}))
    store = SessionStore(ttl_s=None, snapshot_path=snap)
    assert store.restore() == 2
    assert state_digest(store.get("g" * 16).gate.state) == state_digest(gate.state)
    assert store.get("k" * 16).gate.to_record() == kappa.to_record()
    store.release_lock()


def test_the_server_imports_what_the_first_kappa_request_needs_at_start():
    """The first kappa update with judgments needs SciPy's qmc module (0.5 s cold, seconds
    under load): the app's start imports it, not the first request. A fresh interpreter, so
    that an import by an earlier test cannot make this pass."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from fastapi.testclient import TestClient\n"
            "from beliefgate.serve.app import create_app\n"
            "app = create_app()\n"
            "before = 'scipy.stats.qmc' in sys.modules\n"
            "with TestClient(app):\n"
            "    print(before, 'scipy.stats.qmc' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True"]
