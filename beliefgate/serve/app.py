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

The service's modules: :mod:`~beliefgate.serve.settings` (:class:`ServeSettings`),
:mod:`~beliefgate.serve.errors` (the error classes, the JSON answers and the exception
handlers), :mod:`~beliefgate.serve.guard` (the raw-ASGI guard), :mod:`~beliefgate.serve.gate_routes`
and :mod:`~beliefgate.serve.kappa_routes` (with what they share in :mod:`~beliefgate.serve.routing`),
and :mod:`~beliefgate.serve.fastpath`, the one adapter that serves the step routes for the
FastAPI routes, the guard and the HTTP protocol alike. This module wires them into the app.

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

import asyncio
import json
import logging
from contextlib import asynccontextmanager
from typing import Optional

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response

import beliefgate
from beliefgate.serve.errors import ApiError, install_handlers, json_response
from beliefgate.serve.gate_routes import gate_router
from beliefgate.serve.guard import Guard
from beliefgate.serve.kappa_routes import kappa_router
from beliefgate.serve.routing import NO_BODY, store_of
from beliefgate.serve.schemas import HealthOut
from beliefgate.serve.sessions import SessionStore
from beliefgate.serve.settings import API_PREFIX, ServeSettings, needs_token

log = logging.getLogger("beliefgate.serve")

#: OpenAPI name of the bearer scheme (the guard middleware enforces it, not a dependency)
BEARER_SCHEME = "bearerAuth"


def _service_router() -> APIRouter:
    """The routes about the service itself (no token needed)."""
    public = APIRouter(prefix=API_PREFIX)

    @public.get("/healthz", response_model=HealthOut, tags=["service"], dependencies=[NO_BODY])
    async def healthz(request: Request) -> Response:
        """Liveness: the service answers, and how many sessions it holds (no auth)."""
        settings: ServeSettings = request.app.state.settings
        store = store_of(request)
        return json_response({"status": "ok", "version": beliefgate.__version__, "sessions": len(store),
                              "max_sessions": store.max_sessions, "ttl_s": store.ttl_s,
                              "snapshot": store.persistent, "auth": settings.token is not None})

    return public


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
    app.include_router(_service_router())
    app.include_router(gate_router())
    app.include_router(kappa_router())
    install_handlers(app)
    app.add_middleware(Guard, token=settings.token, max_body_bytes=settings.max_body_bytes,
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
            if needs_token(path):
                for operation in item.values():
                    operation["security"] = [{BEARER_SCHEME: []}]
        app.openapi_schema = doc
    return app.openapi_schema


def openapi_document(app: Optional[FastAPI] = None) -> str:
    """The OpenAPI document as committed in ``docs/openapi.json`` (sorted keys, 2-space indent)."""
    app = app or create_app()
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"


__all__ = ["API_PREFIX", "ApiError", "ServeSettings", "create_app", "openapi_document"]
