"""The ASGI guard in front of the app: bearer token, body size and time, UTF-8, and the step fast path.

:class:`Guard` reads the whole body before the app does, so that a request without the token
(401), with a body over the limit (413), too slow to arrive (408) or not UTF-8 (400) is refused
before anything parses it; a valid step request is answered here by the step adapter
(:mod:`beliefgate.serve.fastpath`); everything else goes to FastAPI with the body replayed.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from typing import Optional

from fastapi.responses import Response

from beliefgate.serve.errors import error_response
from beliefgate.serve.fastpath import FAST_PATH, fast_answer, fast_request, json_content
from beliefgate.serve.settings import DEFAULT_BODY_TIMEOUT_S, needs_token


class Guard:
    """Bearer-token check and body-size limit, before the app reads anything.

    The body is read here, counted, and replayed to the app; a body over the limit
    (by ``Content-Length`` or by what arrives) gets 413 without being parsed. A valid
    JSON ``POST`` to a step route is served here directly (:func:`~beliefgate.serve.fastpath.fast_answer`):
    FastAPI's routing and dependency solving cost ~3x the gate step itself.
    """

    def __init__(self, app, token: Optional[str], max_body_bytes: int,
                 body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S):
        self.app = app
        self.token = None if token is None else token.encode()
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        path = scope.get("path", "")
        if self.token is not None and needs_token(path) and not bearer_ok(self.token, headers.get(b"authorization")):
            await _send(send, error_response(401, "unauthorized", "missing or wrong bearer token",
                                             headers={"WWW-Authenticate": 'Bearer realm="beliefgate"'}))
            return
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await _send(send, error_response(400, "bad_request", "Content-Length is not an integer"))
                return
            if size > self.max_body_bytes:
                await _send(send, _too_large(self.max_body_bytes))
                return
        chunks = []
        total = 0
        more = True
        try:
            async with asyncio.timeout(self.body_timeout_s):
                while more:
                    message = await receive()
                    if message["type"] != "http.request":  # client went away
                        return
                    chunk = message.get("body", b"")
                    total += len(chunk)
                    if total > self.max_body_bytes:
                        await _send(send, _too_large(self.max_body_bytes))
                        return
                    chunks.append(chunk)
                    more = message.get("more_body", False)
        except TimeoutError:
            await _send(send, error_response(408, "body_timeout", f"the request body did not arrive within "
                                             f"{self.body_timeout_s:g} s ({total} bytes received)",
                                             headers={"Connection": "close"}))
            return
        except asyncio.CancelledError:
            # the server is stopping and its graceful-shutdown time ran out while this body was still
            # arriving: answer (uvicorn would log a traceback and send a bare-text 500) and end the
            # request; nothing was read into any session, so nothing is lost
            await _send(send, error_response(503, "shutting_down", f"the server is shutting down; the request "
                                             f"body was not complete ({total} bytes received) and nothing was "
                                             f"applied", headers={"Connection": "close"}))
            return
        body = b"".join(chunks)
        if body and json_content(headers.get(b"content-type")):
            if scope["method"] == "POST":
                match = FAST_PATH.match(path)
                if match is not None:
                    session_id, op = match.group(1), match.group(2)
                    request = fast_request(op, body)
                    if request is not None:
                        await _send(send, await fast_answer(scope["app"], session_id, op, request, scope))
                        return
            problem = _encoding_problem(body)
            if problem is not None:
                await _send(send, error_response(400, "bad_request", problem))
                return
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def bearer_ok(token: bytes, header: Optional[bytes]) -> bool:
    """Whether an ``Authorization`` header value carries the bearer ``token``."""
    if not header:
        return False
    scheme, _, value = header.partition(b" ")
    if scheme.lower() != b"bearer":
        return False
    return hmac.compare_digest(value.strip(), token)


def _encoding_problem(body: bytes) -> Optional[str]:
    """Why a JSON body is not UTF-8 (``None`` when it is). Python's JSON parser, and so
    FastAPI's, would read UTF-16 and UTF-32 too (by the pattern of zero bytes); JSON
    exchanged between systems must be UTF-8 (RFC 8259), and so must every body here."""
    encoding = json.detect_encoding(body)
    if encoding not in ("utf-8", "utf-8-sig"):
        return f"the request body is {encoding.upper()}-encoded; JSON bodies must be UTF-8"
    try:
        body.decode(encoding)
    except UnicodeDecodeError as exc:
        return f"the request body is not valid UTF-8 ({exc.reason} at byte {exc.start})"
    return None


def _too_large(limit: int) -> Response:
    return error_response(413, "payload_too_large", f"request body exceeds the limit of {limit} bytes")


async def _send(send, response: Response) -> None:
    await send({"type": "http.response.start", "status": response.status_code,
                "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})


__all__ = ["Guard", "bearer_ok"]
