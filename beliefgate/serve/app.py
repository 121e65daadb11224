"""The gate service: a FastAPI app over :class:`~beliefgate.beliefs.gate.Gate` sessions.

``create_app(ServeSettings(...))`` builds the app; ``beliefgate serve`` runs it under
uvicorn. Routes live under ``/v1`` (see ``docs/serve.md`` and ``docs/openapi.json``):

    GET    /v1/healthz                              liveness, no auth
    POST   /v1/sessions                             create (generic or Overcooked)
    GET    /v1/sessions/{id}                        session state
    DELETE /v1/sessions/{id}
    POST   /v1/sessions/{id}/step                   Gate.step
    POST   /v1/sessions/{id}/step_loglik            Gate.step_loglik
    POST   /v1/sessions/{id}/step_evidence          Gate.step_evidence
    POST   /v1/sessions/{id}/observe                Gate.observe (Overcooked sessions)
    POST   /v1/sessions/{id}/notify_replanned       Gate.notify_replanned
    POST   /v1/sessions/{id}/reset                  Gate.reset
    POST   /v1/kappa                                create a kappa session (branches, params)
    GET    /v1/kappa/{id}                           its read-out (argmax probs, kappa, nucleus, commit)
    DELETE /v1/kappa/{id}
    POST   /v1/kappa/{id}/judge                     Kappa.judge
    POST   /v1/kappa/{id}/rollout                   Kappa.rollout
    POST   /v1/kappa/{id}/evidence                  several at once (all or nothing; optionally a round)
    POST   /v1/kappa/{id}/reset                     Kappa.reset

Server model: one process, one event loop. Gate calls take microseconds and run on
the loop under the session's :class:`asyncio.Lock`; only building an Overcooked
gate (first use of a layout loads its tables) runs in a worker thread. An ASGI guard
in front of the app checks the bearer token and the body size before a request's
body is parsed. Under ``beliefgate serve`` the HTTP protocol itself answers whole, valid
step requests with the same code (:mod:`beliefgate.serve.protocol`).

Status codes: 400 body not UTF-8; 401 missing/wrong token; 408 body not received within the body timeout;
404 unknown session or route; 409 operation for another kind of session; 413 body over the limit;
422 malformed request, a body sent to a route that takes none, or input the gate rejects
(the ``error`` field names the exception, e.g. ``ShapeMismatchError``; ``errors[0].loc``
names the field); 429 session limit; 503 snapshot write failed (the change was rolled
back). Every error leaves the session as it was, its idle clock included.
"""

from __future__ import annotations
from beliefgate.errors import BeliefgateError

import asyncio
import hmac
import inspect
import json
import logging
import math
import os
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from pydantic import ValidationError
from pydantic_core import to_json
from starlette.exceptions import HTTPException as StarletteHTTPException

import beliefgate
from beliefgate.beliefs.errors import (
    BeliefInputError,
    InvalidWeightError,
    NoFeasibleSkillError,
    UnknownSkillError,
)
from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.beliefs.gate import Decision, Gate, GateParams
from beliefgate.beliefs.kappa import EvidenceTypeError, Judgment, Kappa, KappaInputError, Rollout, RolloutRound
from beliefgate.serve.schemas import (
    SESSION_ID_PATTERN,
    CreateKappaRequest,
    CreateSessionRequest,
    DecisionOut,
    ErrorOut,
    HealthOut,
    JudgeRequest,
    KappaEvidenceRequest,
    KappaOut,
    ObserveRequest,
    ResetRequest,
    RolloutRequest,
    SessionOut,
    StepEvidenceRequest,
    StepLoglikRequest,
    StepRequest,
    decision_is_finite,
    decision_payload,
    gate_state_payload,
    kappa_payload,
)
from beliefgate.serve.sessions import (
    Session,
    SessionError,
    SessionNotFoundError,
    SessionStore,
    SnapshotWriteError,
    WrongSessionKindError,
)

log = logging.getLogger("beliefgate.serve")

API_PREFIX = "/v1"
#: default request body limit (bytes)
DEFAULT_MAX_BODY_BYTES = 1 << 20
#: default time a request's whole body may take to arrive (408 beyond)
DEFAULT_BODY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ServeSettings:
    """Configuration of one service instance.

    ``token``: bearer token every ``/v1`` route but ``healthz`` requires (``None``:
    no auth; only sensible on a loopback host). ``max_sessions``: live sessions at
    most (429 beyond). ``ttl_s``: idle seconds before a session expires (``None``:
    never). ``max_body_bytes``: request body limit (413 beyond). ``body_timeout_s``: time
    the whole body may take to arrive once the headers are in (408 beyond). ``snapshot_path``:
    file the sessions are snapshotted to after every change and restored from at
    start (``None``: in memory only). ``sweep_interval_s``: how often expired
    sessions are collected (default ``min(ttl/4, 30)`` seconds).
    """

    token: Optional[str] = None
    max_sessions: int = 1000
    ttl_s: Optional[float] = 3600.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    snapshot_path: Optional[Path] = None
    sweep_interval_s: Optional[float] = None
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S

    def __post_init__(self):
        if self.token is not None and not self.token.strip():
            raise ValueError("token must not be empty")
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {self.max_sessions}")
        if self.ttl_s is not None and not (self.ttl_s > 0 and math.isfinite(self.ttl_s)):
            raise ValueError(f"ttl_s must be a positive number or None, got {self.ttl_s}")
        if self.max_body_bytes < 1024:
            raise ValueError(f"max_body_bytes must be >= 1024, got {self.max_body_bytes}")
        if not (self.body_timeout_s > 0 and math.isfinite(self.body_timeout_s)):
            raise ValueError(f"body_timeout_s must be a positive number, got {self.body_timeout_s}")

    def sweep_interval(self) -> Optional[float]:
        if self.ttl_s is None:
            return None
        if self.sweep_interval_s is not None:
            return self.sweep_interval_s
        return min(max(self.ttl_s / 4.0, 0.05), 30.0)


class ApiError(BeliefgateError):
    """An error with its HTTP status and ``error`` kind; ``field``: the body field a 422 is
    about (``None``: the one :func:`_gate_field` finds, as for the gate's own errors)."""

    def __init__(self, status_code: int, kind: str, detail: str, field: Optional[str] = None):
        super().__init__(detail)
        self.status_code = status_code
        self.kind = kind
        self.detail = detail
        self.field = field


# --------------------------------------------------------------------------- responses


def _dumps(payload: Any) -> bytes:
    """Strict JSON. Payload builders map the legitimately non-finite fields to ``None``
    explicitly; ``inf_nan_mode="null"`` only guarantees that no ``NaN`` token ever leaves."""
    return to_json(payload, inf_nan_mode="null")


def _json(payload: Any, status_code: int = 200, headers: Optional[dict] = None) -> Response:
    return Response(_dumps(payload), status_code=status_code, media_type="application/json", headers=headers)


def _error(status_code: int, kind: str, detail: str, errors: Optional[list] = None,
           headers: Optional[dict] = None) -> Response:
    body = {"error": kind, "detail": detail}
    if errors is not None:
        body["errors"] = errors
    return _json(body, status_code, headers)


_PIECE_FIELDS = {"judgments": ("left", "right", "y"), "rollouts": ("branch", "depth", "score")}


def _evidence_loc(exc, num_judgments: int, as_round: bool) -> Optional[list]:
    """Where in an ``/evidence`` body the piece ``update_many`` refused sits:
    ``["body", "judgments", i, field]`` or ``["body", "rollouts", i, field]`` (a round is one
    piece: ``["body", "rollouts", field]``); None when no one piece is to blame."""
    if exc.index is None:
        return None
    piece = "judgments" if exc.index < num_judgments else "rollouts"
    if exc.field not in _PIECE_FIELDS[piece]:  # about the round or the evidence as a whole
        return None
    if piece == "judgments":
        return ["body", piece, exc.index, exc.field]
    return ["body", piece, exc.field] if as_round else ["body", piece, exc.index - num_judgments, exc.field]


def _field_error(kind: str, message: str, field: Optional[str]) -> Response:
    """A 422 about one body field (``None``: the body as a whole): ``errors[0].loc`` names it,
    as pydantic's own errors do, and so does the ``detail``."""
    loc = ["body"] if field is None else ["body", field]
    return _error(422, kind, f"{field or 'body'}: {message}", [{"loc": loc, "msg": message, "type": kind}])


_ERRORS = {
    400: {"model": ErrorOut, "description": "unreadable request (body not UTF-8 JSON)"},
    408: {"model": ErrorOut, "description": "the request body did not arrive within the body timeout"},
    401: {"model": ErrorOut, "description": "missing or wrong bearer token"},
    404: {"model": ErrorOut, "description": "unknown session"},
    409: {"model": ErrorOut, "description": "operation for another kind of session"},
    413: {"model": ErrorOut, "description": "request body over the limit"},
    422: {"model": ErrorOut, "description": "malformed request, or input the gate or kappa rejects "
                                           "(`errors[0].loc` names the field)"},
    503: {"model": ErrorOut, "description": "snapshot write failed (the change was rolled back), or the server "
                                           "is shutting down (nothing was applied)"},
}


def _responses(*codes: int) -> dict:
    """Documented error responses: ``codes`` plus those any /v1 request can get (400, 401, 408, 413, 422,
    and 503 while the server shuts down)."""
    return {c: _ERRORS[c] for c in sorted({400, 401, 408, 413, 422, 503, *codes})}


#: a route on an existing session: unknown (404), of the other family (409), a change to persist (503)
_SESSION_RESPONSES = _responses(404, 409, 503)


# --------------------------------------------------------------------------- ASGI guard


class _Guard:
    """Bearer-token check and body-size limit, before the app reads anything.

    The body is read here, counted, and replayed to the app; a body over the limit
    (by ``Content-Length`` or by what arrives) gets 413 without being parsed. A valid
    JSON ``POST`` to a step route is served here directly (:func:`_fast`): FastAPI's
    routing and dependency solving cost ~3x the gate step itself.
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
        protected = path.startswith(API_PREFIX + "/") and path != API_PREFIX + "/healthz"
        if self.token is not None and protected and not bearer_ok(self.token, headers.get(b"authorization")):
            await _send(send, _error(401, "unauthorized", "missing or wrong bearer token",
                                     headers={"WWW-Authenticate": 'Bearer realm="beliefgate"'}))
            return
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await _send(send, _error(400, "bad_request", "Content-Length is not an integer"))
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
            await _send(send, _error(408, "body_timeout", f"the request body did not arrive within "
                                     f"{self.body_timeout_s:g} s ({total} bytes received)",
                                     headers={"Connection": "close"}))
            return
        except asyncio.CancelledError:
            # the server is stopping and its graceful-shutdown time ran out while this body was still
            # arriving: answer (uvicorn would log a traceback and send a bare-text 500) and end the
            # request; nothing was read into any session, so nothing is lost
            await _send(send, _error(503, "shutting_down", f"the server is shutting down; the request body "
                                     f"was not complete ({total} bytes received) and nothing was applied",
                                     headers={"Connection": "close"}))
            return
        body = b"".join(chunks)
        if body and _json_content(headers.get(b"content-type")):
            if scope["method"] == "POST":
                match = _FAST_PATH.match(path)
                if match is not None:
                    response = await _fast(scope, match.group(1), match.group(2), body)
                    if response is not None:
                        await _send(send, response)
                        return
            problem = _encoding_problem(body)
            if problem is not None:
                await _send(send, _error(400, "bad_request", problem))
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
    return _error(413, "payload_too_large", f"request body exceeds the limit of {limit} bytes")


async def _send(send, response: Response) -> None:
    await send({"type": "http.response.start", "status": response.status_code,
                "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})


# --------------------------------------------------------------------------- helpers


def _store(request: Request) -> SessionStore:
    return request.app.state.store


def _require(session: Session, kappa: bool) -> Session:
    """The session if it is of the wanted family (gate or kappa), else 409."""
    if (session.kind == "kappa") != kappa:
        where = "/v1/kappa/{id}" if session.kind == "kappa" else "/v1/sessions/{id}"
        raise WrongSessionKindError(f"session {session.id} is a {session.kind} session; use {where}")
    return session


def _read(store: SessionStore, session_id: str, kappa: bool) -> Session:
    """The session a GET reads: looked up and kind-checked (404/409) *before* its idle clock
    restarts, so that a rejected request leaves the session as it was."""
    session = _require(store.get(session_id), kappa)
    store.touch(session)
    return session


def _session_payload(store: SessionStore, session: Session) -> dict:
    _require(session, kappa=False)
    payload = gate_state_payload(session.gate)
    counts = session.prior_counts if session.prior_counts is not None else np.zeros(session.gate.num_skills)
    payload.update(
        session_id=session.id,
        kind=session.kind,
        layout=session.layout,
        partner=session.partner,
        prior_counts=counts.tolist(),
        version=session.version,
        created_at=session.created_at,
        idle_s=store.idle(session),
        expires_in_s=store.expires_in(session),
    )
    return payload


def _kappa_payload(store: SessionStore, session: Session) -> dict:
    payload = kappa_payload(_require(session, kappa=True).gate)
    payload.update(session_id=session.id, kind="kappa", version=session.version, created_at=session.created_at,
                   idle_s=store.idle(session), expires_in_s=store.expires_in(session))
    return payload


async def _persist(store: SessionStore, undo) -> None:
    """Wait until the change is in the snapshot (no-op in memory); if the write failed,
    ``undo()`` and re-raise (503)."""
    if store.persistent:
        try:
            await store.commit()
        except SnapshotWriteError:
            undo()
            raise


_KAPPA_POOL: Optional[ThreadPoolExecutor] = None


def kappa_pool() -> ThreadPoolExecutor:
    """The threads kappa updates run on: their own, so that long updates never take the threads
    of the loop's default executor that snapshot writes and Overcooked gate builds use."""
    global _KAPPA_POOL
    if _KAPPA_POOL is None:
        _KAPPA_POOL = ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1)),
                                         thread_name_prefix="beliefgate-kappa")
    return _KAPPA_POOL


async def _locked(store: SessionStore, session_id: str, kappa: bool, change):
    """The one bracket every change of an existing session goes through.

    Look-up and kind check (404/409), the session's lock, the closed check (deleted or
    expired while the request waited), ``change(session) -> (result, undo)``, then the
    snapshot commit; a failed write runs ``undo`` before the 503.
    """
    session = _require(store.get(session_id), kappa)
    async with _held(session):
        outcome = change(session)
        result, undo = (await outcome) if inspect.isawaitable(outcome) else outcome
        await _persist(store, undo)
    return result


@asynccontextmanager
async def _held(session: Session):
    """The session's lock, on a session still live once it is held (deleted or expired while the
    request waited for it: 404)."""
    async with session.lock:
        if session.closed:
            raise SessionNotFoundError.of(session.id)
        yield session


async def _mutate(store: SessionStore, session_id: str, apply, kappa: bool = False):
    """Run ``apply(session)`` in the :func:`_locked` bracket; book-keep on success.

    ``apply`` either raises before the gate (or kappa) changed -- both validate first --
    or succeeds; a non-finite decision and a failed snapshot write are undone with the
    public ``restore`` of the committed state.
    """
    def change(session: Session):
        previous = session.committed
        result = apply(session)
        if isinstance(result, Decision) and not decision_is_finite(result):
            session.roll_back()
            raise ApiError(422, "NonFiniteResultError",
                           "the step produced a non-finite belief (inputs too extreme for float64); "
                           "it was rejected and the session is unchanged")
        store.changed(session)
        return result, lambda: store.rollback(session, previous)

    async def change_off_the_loop(session: Session):
        # a kappa update costs milliseconds, and seconds for many sharp judgments at many points: it
        # runs on the kappa pool's threads (not the loop's default executor, which the snapshot
        # writer needs) under the session's lock, so that other sessions and healthz are answered
        # meanwhile (on the loop, one 256-judgment request held every client ~27 s); the
        # book-keeping stays on the loop
        previous = session.committed
        future = asyncio.get_running_loop().run_in_executor(kappa_pool(), apply, session)
        try:
            result = await asyncio.shield(future)
        except asyncio.CancelledError:
            # the server stops and its graceful time ran out: the thread cannot be stopped, so keep
            # the lock until it is done, put the committed state back (nothing was acknowledged)
            # and answer 503 rather than let uvicorn log a traceback and send a bare 500
            while not future.done():  # uvicorn cancels once, asyncio.run's teardown once more
                try:
                    await asyncio.wait([future])
                except asyncio.CancelledError:
                    continue
            if not future.cancelled() and future.exception() is None:
                session.roll_back()
            raise ApiError(503, "shutting_down", "the server is shutting down; this kappa update was not "
                                                 "applied") from None
        store.changed(session)
        return result, lambda: store.rollback(session, previous)

    return await _locked(store, session_id, kappa, change_off_the_loop if kappa else change)


async def _delete(request: Request, session_id: str, kappa: bool) -> Response:
    """Both DELETE routes: remove the session; a failed snapshot write reinstates it."""
    store = _store(request)

    def change(session: Session):
        store.remove(session)
        return None, lambda: store.reinstate(session)

    await _locked(store, session_id, kappa, change)
    return Response(status_code=204)


async def _created(store: SessionStore, session: Session) -> None:
    """After ``store.add``: wait for the snapshot; a failed write removes the session again."""
    await _persist(store, lambda: store.remove(session))


async def _step(store: SessionStore, session_id: str, body: StepRequest) -> Response:
    table = body.table()
    decision = await _mutate(store, session_id, lambda s: s.gate.step(
        table, body.action, body.completed, **body.common_kwargs()))
    return _json(decision_payload(decision))


async def _step_loglik(store: SessionStore, session_id: str, body: StepLoglikRequest) -> Response:
    loglik = body.vector()
    decision = await _mutate(store, session_id, lambda s: s.gate.step_loglik(
        loglik, body.completed, **body.common_kwargs()))
    return _json(decision_payload(decision))


async def _step_evidence(store: SessionStore, session_id: str, body: StepEvidenceRequest) -> Response:
    evidence = StepEvidence(body.table(), np.asarray(body.action_mask, dtype=bool), float(body.weight),
                            body.completed, body.feasible)
    decision = await _mutate(store, session_id, lambda s: s.gate.step_evidence(
        evidence, ego_active=body.ego_active))
    return _json(decision_payload(decision))


#: the hot routes the guard serves itself (body model, handler); see :func:`_fast`
_FAST_ROUTES = {
    "step": (StepRequest, _step),
    "step_loglik": (StepLoglikRequest, _step_loglik),
    "step_evidence": (StepEvidenceRequest, _step_evidence),
}
#: the path of a step route: groups (session id, op); the id as the routes' own SESSION_ID_PATTERN
FAST_PATH_PATTERN = (re.escape(API_PREFIX) + "/sessions/(" + SESSION_ID_PATTERN.removeprefix("^").removesuffix("$")
                     + ")/(" + "|".join(map(re.escape, _FAST_ROUTES)) + ")")
_FAST_PATH = re.compile("^" + FAST_PATH_PATTERN + "$")


def _json_content(value: Optional[bytes]) -> bool:
    """Whether FastAPI would read this body as JSON (no content type, or ``application/json``)."""
    if value is None:
        return True
    media = value.split(b";", 1)[0].strip().lower()
    return media == b"application/json"


def fast_request(op: str, body: bytes):
    """The validated body of a step request (``op``: step, step_loglik, step_evidence), or
    ``None`` when it does not validate (the request then goes the ordinary FastAPI way).

    The route's own pydantic model validates the bytes (``model_validate_json``, the same
    rules as FastAPI's ``json.loads`` + validate), so every error answer stays FastAPI's own.
    """
    try:
        return _FAST_ROUTES[op][0].model_validate_json(body)
    except ValidationError:
        return None


async def fast_answer(app, session_id: str, op: str, request, scope) -> Response:
    """Serve a validated step request (see :func:`fast_request`) without FastAPI's routing
    and dependency machinery; errors the handler raises go to the app's exception
    handlers (``scope``: the request's ASGI scope, or a callable building it, for them)."""
    try:
        return await _FAST_ROUTES[op][1](app.state.store, session_id, request)
    except Exception as exc:  # noqa: BLE001 - dispatched to the registered handler, else re-raised
        for cls in type(exc).__mro__:
            on_error = app.exception_handlers.get(cls)
            if on_error is not None:
                return await on_error(Request(scope() if callable(scope) else scope), exc)
        raise


async def _fast(scope, session_id: str, op: str, body: bytes) -> Optional[Response]:
    """The guard's fast path: :func:`fast_request` then :func:`fast_answer` (``None``: not valid)."""
    request = fast_request(op, body)
    if request is None:
        return None
    return await fast_answer(scope["app"], session_id, op, request, scope)


def _overcooked_gate(layout: str, params: GateParams, partner: int):
    """Build an Overcooked gate and its observer (runs in a worker thread)."""
    from beliefgate.envs.overcooked.gate import overcooked_gate
    from beliefgate.envs.overcooked.layouts import resolve_layout

    name = resolve_layout(layout)
    gate = overcooked_gate(name, params, partner=partner)  # checks the partner index (InvalidParameterError)
    return name, gate, gate.observer  # the gate's own observer (a second one rebuilt the controller's tables)


async def _no_body(request: Request) -> None:
    """A route that takes no body refuses one (422) rather than ignore it and act."""
    if await request.body():
        raise RequestValidationError([{"loc": ("body",), "msg": "this route takes no request body",
                                       "type": "no_body_expected"}])


#: the dependency of every route documented without a body
NO_BODY = Depends(_no_body)

SessionId = Annotated[str, PathParam(pattern=SESSION_ID_PATTERN, max_length=64,
                                     description="id returned by POST /v1/sessions")]

#: OpenAPI name of the bearer scheme (the guard middleware enforces it, not a dependency)
BEARER_SCHEME = "bearerAuth"


# --------------------------------------------------------------------------- routes


def _routes() -> tuple[APIRouter, APIRouter]:
    public = APIRouter(prefix=API_PREFIX)
    api = APIRouter(prefix=API_PREFIX)

    @public.get("/healthz", response_model=HealthOut, tags=["service"], dependencies=[NO_BODY])
    async def healthz(request: Request) -> Response:
        """Liveness: the service answers, and how many sessions it holds (no auth)."""
        settings: ServeSettings = request.app.state.settings
        store = _store(request)
        return _json({"status": "ok", "version": beliefgate.__version__, "sessions": len(store),
                      "max_sessions": store.max_sessions, "ttl_s": store.ttl_s,
                      "snapshot": store.persistent, "auth": settings.token is not None})

    @api.post("/sessions", status_code=201, response_model=SessionOut, tags=["sessions"],
              responses={**_responses(503),
                         429: {"model": ErrorOut, "description": "session limit reached"}})
    async def create_session(body: CreateSessionRequest, request: Request) -> Response:
        """Create a session: a generic gate (`num_skills`/`skill_names`) or an Overcooked gate (`layout`)."""
        store = _store(request)
        store.check_capacity()
        params = body.params.to_gate_params()
        observer = None
        if body.kind == "overcooked":
            from beliefgate.envs.overcooked.layouts import UnknownLayoutError

            partner = 1 if body.partner is None else body.partner
            try:
                layout, gate, observer = await asyncio.to_thread(_overcooked_gate, body.layout, params, partner)
            except UnknownLayoutError as exc:
                raise ApiError(422, "UnknownLayoutError", str(exc), "layout") from None
            session = store.add(gate, "overcooked", layout, partner, observer=observer)
        else:
            gate = Gate.from_logprobs(body.resolved_num_skills(), params, body.skill_names, body.prior_counts)
            session = store.add(gate, "logprobs", prior_counts=body.prior_counts)
        await _created(store, session)
        return _json(_session_payload(store, session), 201,
                     headers={"Location": f"{API_PREFIX}/sessions/{session.id}"})

    @api.get("/sessions/{session_id}", response_model=SessionOut, tags=["sessions"],
             responses=_responses(404, 409), dependencies=[NO_BODY])
    async def get_session(session_id: SessionId, request: Request) -> Response:
        """The session and its gate's current state (`state_digest` changes iff the state does)."""
        store = _store(request)
        return _json(_session_payload(store, _read(store, session_id, kappa=False)))

    @api.delete("/sessions/{session_id}", status_code=204, tags=["sessions"],
                responses=_SESSION_RESPONSES, dependencies=[NO_BODY])
    async def delete_session(session_id: SessionId, request: Request) -> Response:
        """Delete the session."""
        return await _delete(request, session_id, kappa=False)

    @api.post("/sessions/{session_id}/step", response_model=DecisionOut, tags=["gate"],
              responses=_SESSION_RESPONSES)
    async def step(session_id: SessionId, body: StepRequest, request: Request) -> Response:
        """`Gate.step`: condition on the action taken, given every action's log-probability per skill."""
        return await _step(_store(request), session_id, body)

    @api.post("/sessions/{session_id}/step_loglik", response_model=DecisionOut, tags=["gate"],
              responses=_SESSION_RESPONSES)
    async def step_loglik(session_id: SessionId, body: StepLoglikRequest, request: Request) -> Response:
        """`Gate.step_loglik`: condition on the observed action's log-likelihood under each skill."""
        return await _step_loglik(_store(request), session_id, body)

    @api.post("/sessions/{session_id}/step_evidence", response_model=DecisionOut, tags=["gate"],
              responses=_SESSION_RESPONSES)
    async def step_evidence(session_id: SessionId, body: StepEvidenceRequest, request: Request) -> Response:
        """`Gate.step_evidence`: several actions may be consistent with what was observed."""
        return await _step_evidence(_store(request), session_id, body)

    @api.post("/sessions/{session_id}/observe", response_model=DecisionOut, tags=["gate"],
              responses=_SESSION_RESPONSES)
    async def observe(session_id: SessionId, body: ObserveRequest, request: Request) -> Response:
        """`Gate.observe`: two consecutive Overcooked states (sessions created with a `layout`)."""
        from beliefgate.envs.overcooked.dynamics import ImpossibleTransitionError
        from beliefgate.envs.overcooked.observer import as_state
        from beliefgate.envs.overcooked.state import StateFormatError

        def apply(session: Session):
            observer = session.observer
            field = "state"
            try:
                state = as_state(body.state, observer.layout)  # each state on its own first: the error names it
                field = "next_state"
                next_state = as_state(body.next_state, observer.layout)
                evidence = observer.evidence(state, next_state)  # the pair, parsed once: next_state's error
            except (StateFormatError, ImpossibleTransitionError) as exc:
                raise ApiError(422, type(exc).__name__, str(exc), field) from None
            return session.gate.step_evidence(evidence, ego_active=body.ego_active)

        decision = await _mutate(_store(request), session_id, apply)
        return _json(decision_payload(decision))

    @api.post("/sessions/{session_id}/notify_replanned", response_model=SessionOut, tags=["gate"],
              responses=_SESSION_RESPONSES, dependencies=[NO_BODY])
    async def notify_replanned(session_id: SessionId, request: Request) -> Response:
        """`Gate.notify_replanned`: the ego replanned for its own reasons; cooldowns start now."""
        store = _store(request)
        session = await _mutate(store, session_id, lambda s: (s.gate.notify_replanned(), s)[1])
        return _json(_session_payload(store, session))

    @api.post("/sessions/{session_id}/reset", response_model=SessionOut, tags=["gate"],
              responses=_SESSION_RESPONSES)
    async def reset(session_id: SessionId, request: Request, body: Optional[ResetRequest] = None) -> Response:
        """`Gate.reset`: a new episode (`keep_memory` keeps the completion counts)."""
        store = _store(request)
        keep = False if body is None else body.keep_memory
        session = await _mutate(store, session_id, lambda s: (s.gate.reset(keep_memory=keep), s)[1])
        return _json(_session_payload(store, session))

    # ----------------------------------------------------------------- kappa sessions

    @api.post("/kappa", status_code=201, response_model=KappaOut, tags=["kappa"],
              responses={**_responses(503), 429: {"model": ErrorOut, "description": "session limit reached"}})
    async def create_kappa(body: CreateKappaRequest, request: Request) -> Response:
        """Create a kappa session for one decision: its branch names and `KappaParams`."""
        store = _store(request)
        store.check_capacity()
        kappa = Kappa(list(body.branches), body.params.to_kappa_params())
        session = store.add(kappa, "kappa")
        await _created(store, session)
        return _json(_kappa_payload(store, session), 201, headers={"Location": f"{API_PREFIX}/kappa/{session.id}"})

    @api.get("/kappa/{session_id}", response_model=KappaOut, tags=["kappa"], responses=_responses(404, 409),
             dependencies=[NO_BODY])
    async def get_kappa(session_id: SessionId, request: Request) -> Response:
        """The read-out: argmax probability of every branch, kappa, best, nucleus, commit, rounds."""
        store = _store(request)
        async with _held(_read(store, session_id, kappa=True)) as session:  # not mid-update (worker thread)
            return _json(_kappa_payload(store, session))

    @api.delete("/kappa/{session_id}", status_code=204, tags=["kappa"], responses=_SESSION_RESPONSES,
                dependencies=[NO_BODY])
    async def delete_kappa(session_id: SessionId, request: Request) -> Response:
        """Delete the kappa session."""
        return await _delete(request, session_id, kappa=True)

    @api.post("/kappa/{session_id}/judge", response_model=KappaOut, tags=["kappa"], responses=_SESSION_RESPONSES)
    async def kappa_judge(session_id: SessionId, body: JudgeRequest, request: Request) -> Response:
        """`Kappa.judge`: `y = 1` when `left` was judged better than `right`."""
        store = _store(request)
        session = await _mutate(store, session_id,
                                lambda s: s.apply_kappa([Judgment(body.left, body.right, body.y)]), kappa=True)
        return _json(_kappa_payload(store, session))

    @api.post("/kappa/{session_id}/rollout", response_model=KappaOut, tags=["kappa"], responses=_SESSION_RESPONSES)
    async def kappa_rollout(session_id: SessionId, body: RolloutRequest, request: Request) -> Response:
        """`Kappa.rollout`: a branch's score imagined `depth` steps ahead (not a round)."""
        store = _store(request)
        session = await _mutate(store, session_id,
                                lambda s: s.apply_kappa([Rollout(body.branch, body.depth, body.score)]), kappa=True)
        return _json(_kappa_payload(store, session))

    @api.post("/kappa/{session_id}/evidence", response_model=KappaOut, tags=["kappa"], responses=_SESSION_RESPONSES)
    async def kappa_evidence(session_id: SessionId, body: KappaEvidenceRequest, request: Request) -> Response:
        """Judgments then rollouts, in order, all or nothing; `round: true` makes the rollouts one round."""
        if not body.judgments and not body.rollouts:
            raise EvidenceTypeError('no evidence: give "judgments" ([{"left", "right", "y"}, ...]) and/or '
                                    '"rollouts" ([{"branch", "depth", "score"}, ...])', None)
        evidence: list = [Judgment(j.left, j.right, j.y) for j in body.judgments]
        rollouts = tuple(Rollout(r.branch, r.depth, r.score) for r in body.rollouts)
        if body.round:
            evidence.append(RolloutRound(rollouts))
        else:
            evidence.extend(rollouts)
        store = _store(request)
        try:
            session = await _mutate(store, session_id, lambda s: s.apply_kappa(evidence), kappa=True)
        except KappaInputError as exc:
            loc = _evidence_loc(exc, len(body.judgments), body.round)
            if loc is None:
                raise
            where = ".".join(str(p) for p in loc[1:])
            return _error(422, type(exc).__name__, f"{where}: {exc}",
                          [{"loc": loc, "msg": str(exc), "type": type(exc).__name__}])
        return _json(_kappa_payload(store, session))

    @api.post("/kappa/{session_id}/reset", response_model=KappaOut, tags=["kappa"], responses=_SESSION_RESPONSES,
              dependencies=[NO_BODY])
    async def kappa_reset(session_id: SessionId, request: Request) -> Response:
        """`Kappa.reset`: forget the evidence (same branches and params)."""
        store = _store(request)
        session = await _mutate(store, session_id, lambda s: s.apply_kappa(None), kappa=True)
        return _json(_kappa_payload(store, session))

    return public, api


# --------------------------------------------------------------------------- error handlers

#: the body fields each gate route hands the gate (by the last segment of its path), as the
#: gate's messages name them; the first is what an error naming none of them is about
_GATE_FIELDS = {
    "sessions": ("prior_counts", "skill_names", "num_skills", "partner", "layout"),
    "step": ("action_logprobs", "action", "completed", "feasible", "weight"),
    "step_loglik": ("loglik", "completed", "feasible", "weight"),
    "step_evidence": ("action_logprobs", "action_mask", "completed", "feasible", "weight"),
    "observe": ("next_state",),
}
#: gate errors that are always about one field (where the route has it)
_FIELD_OF_ERROR = ((UnknownSkillError, "completed"), (NoFeasibleSkillError, "feasible"),
                   (InvalidWeightError, "weight"))


def _gate_field(path: str, exc: Exception) -> Optional[str]:
    """The body field a gate error on the route at ``path`` is about (``None``: no gate route).

    The gate's exceptions carry no field, but their messages name the argument they are
    about (``action index 4 outside [0, 4)``, ``feasible must have shape (3,)``): the field
    is the one its class is always about, else the route's field the message names first,
    else the route's first field (the evidence itself).
    """
    fields = _GATE_FIELDS.get(path.rsplit("/", 1)[-1])
    if fields is None:
        return None
    for cls, field in _FIELD_OF_ERROR:
        if isinstance(exc, cls) and field in fields:
            return field
    message = str(exc)
    named = [(m.start(), name) for name in fields if (m := re.search(rf"\b{name}\b", message)) is not None]
    return min(named)[1] if named else fields[0]


#: the detail of FastAPI's 400 when ``json.loads`` raises something other than a decode error
FASTAPI_BODY_PARSE_ERROR = "There was an error parsing the body"


def _clean_errors(errors) -> list:
    """Pydantic errors without the offending input (it may hold NaN, which JSON cannot carry)."""
    out = []
    for e in errors:
        loc = [p if isinstance(p, (str, int)) else str(p) for p in e.get("loc", ())]
        out.append({"loc": loc, "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))})
    return out


def _install_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        errors = _clean_errors(exc.errors())
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return _error(422, "validation_error", f"{where}: {first['msg']}{more}", errors)

    @app.exception_handler(BeliefInputError)
    async def _belief(request: Request, exc: BeliefInputError) -> Response:
        return _field_error(type(exc).__name__, str(exc), _gate_field(request.scope["path"], exc))

    @app.exception_handler(KappaInputError)
    async def _kappa(request: Request, exc: KappaInputError) -> Response:
        # "evidence": the evidence as a whole (the argument of update_many), no one field of a body
        field = None if exc.field == "evidence" else exc.field
        return _field_error(type(exc).__name__, str(exc), field)

    @app.exception_handler(SessionError)
    async def _session(request: Request, exc: SessionError) -> Response:
        return _error(exc.status_code, exc.kind, str(exc))

    @app.exception_handler(SnapshotWriteError)
    async def _snapshot(request: Request, exc: SnapshotWriteError) -> Response:
        return _error(503, "snapshot_write_failed", f"{exc}; the change was rolled back")

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> Response:
        if exc.status_code != 422:
            return _error(exc.status_code, exc.kind, exc.detail)
        return _field_error(exc.kind, exc.detail, exc.field or _gate_field(request.scope["path"], exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and exc.detail == FASTAPI_BODY_PARSE_ERROR:
            # UTF-8 JSON that Python's parser gives up on (a number of more than 4300 digits, nesting
            # deeper than its recursion limit): invalid JSON for this service, 422 like any other
            cause = exc.__cause__
            why = f"{type(cause).__name__}: {cause}" if cause is not None else "not parseable"
            return _error(422, "validation_error", f"body: the JSON cannot be read ({why})",
                          [{"loc": ["body"], "msg": f"the JSON cannot be read ({why})", "type": "json_invalid"}])
        kinds = {404: "not_found", 405: "method_not_allowed"}
        return _error(exc.status_code, kinds.get(exc.status_code, "http_error"), str(exc.detail),
                      headers=getattr(exc, "headers", None))


# --------------------------------------------------------------------------- the app


async def _sweeper(store: SessionStore, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        store.sweep()


def create_app(settings: Optional[ServeSettings] = None, **overrides) -> FastAPI:
    """The FastAPI app of the gate service.

    ``create_app(ServeSettings(token=..., ttl_s=...))`` or ``create_app(token=...)``.
    With a snapshot path, the sessions in that file are restored here (raises
    :class:`~beliefgate.serve.sessions.SnapshotError` if it cannot be read).
    """
    if settings is None:
        settings = ServeSettings(**overrides)
    elif overrides:
        raise TypeError("give either settings or keyword overrides, not both")
    store = SessionStore(settings.max_sessions, settings.ttl_s, settings.snapshot_path)
    restored = store.open()
    if restored:
        log.info("restored %d session(s) from %s", restored, settings.snapshot_path)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        from beliefgate.beliefs.kappa import warm_up

        warm_up()  # the first kappa request would otherwise import SciPy's qmc module (seconds)
        tasks = []
        interval = settings.sweep_interval()
        if interval is not None:
            tasks.append(asyncio.create_task(_sweeper(store, interval)))
        if store.persistent:
            tasks.append(asyncio.create_task(store.run_writer()))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            store.close()

    app = FastAPI(
        title="beliefgate gate service",
        version=beliefgate.__version__,
        description=("The plug-in partner-skill Gate over HTTP: one session per teammate; and OverForge "
                     "confidence kappa sessions, one per decision (/v1/kappa). "
                     "JSON has no infinities: a log-probability of zero (-inf) is written `null`; "
                     "NaN and infinities are rejected (422). See docs/serve.md."),
        lifespan=lifespan,
        # FastAPI's /docs and /redoc pages load their scripts from a CDN: offline they are blank
        # pages, so they are not served; the schema is at /openapi.json (and docs/openapi.json)
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.store = store
    app.openapi = lambda: _openapi(app)
    public, api = _routes()
    app.include_router(public)
    app.include_router(api)
    _install_handlers(app)
    app.add_middleware(_Guard, token=settings.token, max_body_bytes=settings.max_body_bytes,
                       body_timeout_s=settings.body_timeout_s)
    return app


def _openapi(app: FastAPI) -> dict:
    """FastAPI's document plus the bearer scheme on every /v1 route but healthz.

    Auth is enforced by the ASGI guard (before the body is read), so it is declared
    here rather than through a per-route dependency.
    """
    if app.openapi_schema is None:
        doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        doc.setdefault("components", {})["securitySchemes"] = {BEARER_SCHEME: {
            "type": "http", "scheme": "bearer",
            "description": "`Authorization: Bearer <token>`, required when the server was started with a token"}}
        for path, item in doc.get("paths", {}).items():
            if path.startswith(API_PREFIX + "/") and path != API_PREFIX + "/healthz":
                for operation in item.values():
                    operation["security"] = [{BEARER_SCHEME: []}]
        app.openapi_schema = doc
    return app.openapi_schema


def openapi_document(app: Optional[FastAPI] = None) -> str:
    """The OpenAPI document as committed in ``docs/openapi.json`` (sorted keys, 2-space indent)."""
    app = app or create_app()
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"


__all__ = ["ServeSettings", "ApiError", "create_app", "openapi_document", "API_PREFIX"]
