"""The HTTP/1.1 protocol of ``beliefgate serve``: uvicorn's h11 protocol with a short cut
for the step routes.

uvicorn's pure-Python h11 protocol costs more per request than the whole ASGI app does
for a step (h11's parsing and event machinery, a task, an event and a keep-alive timer
per request, the head and the body of the answer written by two ``send`` calls). A
request that arrives whole in one read, on an idle keep-alive connection, and that the
ASGI guard would serve itself anyway (``POST /v1/sessions/{id}/step``, ``step_loglik`` or
``step_evidence``: HTTP/1.1, a ``Host``, an exact ``Content-Length`` within the body
limit, a JSON content type, the bearer token when one is set, a body the route's model
validates) is parsed here and answered by the same step adapter the guard and the FastAPI
routes use (:func:`~beliefgate.serve.fastpath.fast_answer`), head and body in one write.
Anything else -- another route, a request split over reads or pipelined behind another, an
unusual header, a body that does not validate, a missing token -- is handed unchanged to
uvicorn's h11 protocol and so to the guard and FastAPI: every answer, and every error
answer, is the one the plain h11 protocol gives (``tests/test_serve_protocol.py`` compares the bytes).

Every connection has a deadline for each request's head (``ServeSettings.header_timeout_s``,
from the connection's opening or the request's first byte): a connection that has not sent a
whole request line and header block by then is closed (with a 408 when part of a head came),
so connections that never finish their headers (slowloris) cannot hold the server. Bodies have
their own limit in the guard (``body_timeout_s``) and idle kept-alive connections uvicorn's.

``uvicorn_config(app, ...)`` is the uvicorn configuration the CLI (and the tests) run the
service with: always this protocol, so always h11's parsing. ``fast=False``, an access log
or a concurrency limit (both of which the short cut would bypass) turn only the short cut off.
"""

from __future__ import annotations

import logging
import re
from typing import Optional

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import STATUS_PHRASES, H11Protocol

from beliefgate.serve.fastpath import FAST_PATH_PATTERN, fast_answer, fast_request, json_content
from beliefgate.serve.guard import bearer_ok

#: the request line of a step request (origin form, no query, no percent escapes)
_REQUEST_LINE = re.compile(rb"POST (" + FAST_PATH_PATTERN.encode() + rb") HTTP/1\.1\r\n")
#: one header line as h11 accepts it, restricted to printable ASCII (anything else: h11 decides)
_HEADER = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*((?:[\x21-\x7e](?:[ \t\x21-\x7e]*[\x21-\x7e])?)?)[ \t]*")
#: header sections longer than this go to h11 (its own limit is 16 KiB)
_MAX_HEAD = 8192
#: headers whose presence sends the request to h11 (framing, upgrades, 100-continue)
_TO_H11 = frozenset((b"transfer-encoding", b"expect", b"upgrade", b"te", b"trailer"))
_END_OF_HEAD = b"\r\n\r\n"


def _wire(status: int, default_headers, raw_headers, body: bytes) -> bytes:
    """The bytes h11 writes for a response with a ``Content-Length`` (status line, uvicorn's
    default headers, the response's own, the body)."""
    head = [b"HTTP/1.1 %d %s\r\n" % (status, STATUS_PHRASES[status])]
    head += [b"%s: %s\r\n" % item for item in default_headers]
    head += [b"%s: %s\r\n" % item for item in raw_headers]
    head.append(b"\r\n")
    head.append(body)
    return b"".join(head)


#: the attributes of uvicorn's ``H11Protocol`` the short cut uses
_UVICORN_INTERNALS = ("conn", "cycle", "flow", "tasks", "loop", "transport", "root_path", "server", "client",
                      "scheme", "_unset_keepalive_if_required")
_warned = []


def _warn_no_short_cut() -> None:
    if not _warned:
        _warned.append(True)
        logging.getLogger("beliefgate.serve").warning(
            "this uvicorn's h11 protocol lacks what the step short cut needs; every request goes through plain h11")


class ServiceProtocol(H11Protocol):
    """uvicorn's :class:`H11Protocol` plus the step short cut (see the module docstring).

    A subclass bound to the service app is made by :func:`service_protocol`.
    """

    service_app = None  # the FastAPI app (set on the bound subclass)
    use_short_cut = True  # False: plain h11 plus the header timeout (set on the bound subclass)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        settings = self.service_app.state.settings
        self._head_timeout_s = settings.header_timeout_s
        self._head_timer = None  # armed while a request's head is awaited
        self._token = None if settings.token is None else settings.token.encode()
        self._max_body = settings.max_body_bytes
        self._busy = False      # a short-cut request is being answered
        self._held = b""        # what arrived meanwhile (reading is paused)
        self._close_after = False
        # the short cut reads uvicorn's h11-protocol internals (tested with uvicorn 0.54); a
        # release without them gets plain h11 for every request, never a broken answer
        self._short_cut = self.use_short_cut and all(hasattr(self, name) for name in _UVICORN_INTERNALS)
        if self.use_short_cut and not self._short_cut:
            _warn_no_short_cut()

    # ----------------------------------------------------------------- the header timeout

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _awaiting_head(self) -> bool:
        """Whether the connection is between requests or inside an incomplete request head."""
        return not self._busy and self.conn.their_state is h11.IDLE

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self._head_timeout_s, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._awaiting_head():
            return
        counts = self.service_app.state.__dict__.setdefault("header_timeouts", {"closed": 0})
        counts["closed"] += 1
        self.logger.debug("closing %s: no complete request head within %g s", self.client, self._head_timeout_s)
        if self.conn.trailing_data[0]:  # part of a head came: say why before closing
            self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                                 b"content-length: 21\r\nconnection: close\r\n\r\nrequest head too slow")
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._awaiting_head():  # the first byte of a request starts its deadline
            self._arm_head_timer()
        self._receive(data)
        if not self._awaiting_head() or self.transport.is_closing():
            self._cancel_head_timer()

    # ----------------------------------------------------------------- the short cut

    def _receive(self, data: bytes) -> None:
        if self._busy:
            self._held += data
            self.flow.pause_reading()
            return
        if (self._short_cut and self.conn.our_state is h11.IDLE and self.conn.their_state is h11.IDLE
                and (self.cycle is None or self.cycle.response_complete) and not self.conn.trailing_data[0]):
            job = self._parse(data)
            if job is not None:
                self._unset_keepalive_if_required()
                self._busy = True
                task = self.loop.create_task(self._answer(*job))
                task.add_done_callback(self.tasks.discard)
                self.tasks.add(task)
                return
        super().data_received(data)

    def _parse(self, data: bytes) -> Optional[tuple]:
        """``(path, session id, op, validated body)`` of a request the short cut serves, else ``None``."""
        end = data.find(_END_OF_HEAD, 0, _MAX_HEAD)
        if end < 0:
            return None
        line = _REQUEST_LINE.match(data, 0, end + 2)
        if line is None:
            return None
        length = host = content_type = authorization = None
        for raw in data[line.end():end].split(b"\r\n") if line.end() < end else ():
            header = _HEADER.fullmatch(raw)
            if header is None:
                return None
            name, value = header.group(1).lower(), header.group(2)
            if name == b"content-length":
                if length is not None or not value.isdigit():
                    return None
                length = int(value)
            elif name == b"host":
                if host is not None:
                    return None
                host = value
            elif name == b"content-type":
                if content_type is not None:
                    return None
                content_type = value
            elif name == b"authorization":
                if authorization is not None:
                    return None
                authorization = value
            elif name == b"connection":
                if value.lower() != b"keep-alive":
                    return None
            elif name in _TO_H11:
                return None
        body = data[end + 4:]
        if host is None or length is None or length != len(body) or length > self._max_body:
            return None
        if not json_content(content_type):
            return None
        if self._token is not None and not bearer_ok(self._token, authorization):
            return None
        request = fast_request(line.group(3).decode(), body)
        if request is None:
            return None
        return line.group(1).decode(), line.group(2).decode(), line.group(3).decode(), request

    async def _answer(self, path: str, session_id: str, op: str, request) -> None:
        app = self.service_app
        close = False
        try:
            response = await fast_answer(app, session_id, op, request, lambda: self._scope(path))
        except Exception as exc:  # noqa: BLE001 - what ServerErrorMiddleware and uvicorn do: 500, log, close
            from starlette.responses import PlainTextResponse

            self.logger.error("Exception in ASGI application\n", exc_info=exc)
            response = PlainTextResponse("Internal Server Error", status_code=500)
            close = True
        self._busy = False
        if not self.transport.is_closing():  # else the client went away meanwhile
            self.transport.write(_wire(response.status_code, self.server_state.default_headers,
                                       response.raw_headers, response.body))
            if close or self._close_after:
                self.conn.send(h11.ConnectionClosed())
                self.transport.close()
        self.on_response_complete()  # counts the request, arms the keep-alive timer, resumes reading
        if self._held and not self.transport.is_closing():
            held, self._held = self._held, b""
            self.data_received(held)

    def _scope(self, path: str) -> dict:
        """A minimal ASGI scope for the exception handlers' ``Request`` (they read nothing of it)."""
        return {"type": "http", "http_version": "1.1", "method": "POST", "path": path,
                "raw_path": path.encode(), "root_path": self.root_path, "query_string": b"",
                "headers": [], "server": self.server, "client": self.client, "scheme": self.scheme,
                "app": self.service_app}

    def shutdown(self) -> None:
        if self._busy:
            self._close_after = True  # closed once the answer is out
        else:
            super().shutdown()


def service_protocol(app, short_cut: bool = True) -> type:
    """A :class:`ServiceProtocol` subclass bound to ``app`` (uvicorn's ``http=`` option);
    ``short_cut=False``: h11 for every request (still with the header timeout)."""
    return type("ServiceProtocol", (ServiceProtocol,), {"service_app": app, "use_short_cut": short_cut})


#: seconds the server keeps an idle keep-alive connection open (uvicorn's default, made explicit:
#: the client's :data:`~beliefgate.serve.client.KEEPALIVE_EXPIRY_S` must stay well below it)
SERVER_KEEP_ALIVE_S = 5.0


def uvicorn_config(app, host: str, port: int, *, fast: bool = True, access_log: bool = False,
                   **options) -> uvicorn.Config:
    """The uvicorn configuration of the service: always :class:`ServiceProtocol` (h11 and the
    header timeout; never uvicorn's "auto" choice, which is httptools where it is installed and
    parses requests differently). ``fast``: the step short cut; not with an access log or a
    concurrency limit, which it would bypass."""
    short_cut = fast and not access_log and options.get("limit_concurrency") is None
    options.setdefault("timeout_keep_alive", SERVER_KEEP_ALIVE_S)
    return uvicorn.Config(app, host=host, port=port, access_log=access_log,
                          http=service_protocol(app, short_cut=short_cut), **options)


__all__ = ["SERVER_KEEP_ALIVE_S", "ServiceProtocol", "service_protocol", "uvicorn_config"]
