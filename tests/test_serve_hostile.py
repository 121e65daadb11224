"""The service under hostile connections (issue #47, red-team findings 3 and 10): real sockets against a
real uvicorn server (in a thread, and the CLI in a subprocess)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

from tests.test_serve import ThreadServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STALLED = 150


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes ``sock`` within ``within`` seconds (what it sends first is read and dropped)."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
        return True
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


def test_connections_that_never_finish_their_headers_are_closed():
    with ThreadServer(header_timeout_s=1.0) as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        stalled = []
        try:
            for k in range(STALLED):
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                if k % 3 == 1:
                    s.sendall(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n")  # never the blank line
                elif k % 3 == 2:
                    s.sendall(b"G")
                stalled.append(s)
            started = time.monotonic()
            # the service answers meanwhile, on a new connection
            for _ in range(3):
                assert httpx.get(srv.url + "/v1/healthz", timeout=2.0).status_code == 200
            # a client that sends a header line now and then is closed too (the limit is on the whole head)
            drip = socket.create_connection(("127.0.0.1", port), timeout=5)
            drip.sendall(b"GET /v1/healthz HTTP/1.1\r\n")
            for _ in range(3):
                time.sleep(0.4)
                try:
                    drip.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    break
            assert _closed_by_server(drip, 2.0)
            assert all(_closed_by_server(s, max(0.1, started + 3.0 - time.monotonic())) for s in stalled)
            assert time.monotonic() - started < 4.0
            assert httpx.get(srv.url + "/v1/healthz", timeout=2.0).status_code == 200
            # a request whose head came in time is not cut by the header timeout (its body has its own limit)
            with httpx.Client(base_url=srv.url, timeout=5.0) as client:
                assert client.get("/v1/healthz").status_code == 200
                time.sleep(1.3)
                assert client.get("/v1/healthz").status_code == 200
        finally:
            for s in stalled:
                s.close()


def test_access_log_keeps_the_h11_protocol():
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from beliefgate.serve.app import create_app
    from beliefgate.serve.protocol import uvicorn_config

    app = create_app()
    for options in ({"access_log": True}, {"access_log": False}, {"limit_concurrency": 10}, {"fast": False}):
        config = uvicorn_config(app, "127.0.0.1", 0, **options)
        assert isinstance(config.http, type) and issubclass(config.http, H11Protocol), options


def test_cli_announces_the_address_once_it_accepts_and_keeps_h11_with_an_access_log():
    proc = subprocess.Popen([sys.executable, "-m", "beliefgate.cli", "serve", "--port", "0", "--log-level", "warning",
                             "--access-log", "--header-timeout", "1"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)
        assert match is not None, line
        port = int(match.group(1))
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:  # at once: no retry
            conn.sendall(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert conn.recv(4096).startswith(b"HTTP/1.1 200 ")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:  # h11's answer: no Host is a 400
            conn.sendall(b"GET /v1/healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
            assert conn.recv(4096).startswith(b"HTTP/1.1 400 ")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:  # absolute form: h11's 404, as on the
            # default path (httptools, which --access-log used to switch to, answered 200)
            conn.sendall(b"GET http://127.0.0.1/v1/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert conn.recv(4096).startswith(b"HTTP/1.1 404 ")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:  # the header timeout holds here too
            conn.sendall(b"GET /v1/healthz HTTP/1.1\r\n")
            assert _closed_by_server(conn, 3.0)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        proc.stderr.close()


def test_header_timeout_setting_is_checked():
    from beliefgate.serve.settings import ServeSettings, ServeSettingsError

    assert ServeSettings().header_timeout_s > 0
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ServeSettingsError, match="header_timeout_s"):
            ServeSettings(header_timeout_s=bad)
