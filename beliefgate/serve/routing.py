"""What the gate routes and the kappa routes share.

The session id path parameter and the no-body dependency of the routes that take none; the
look-up, kind check and idle-clock rule of a read (:func:`read`); the one bracket every change
of an existing session goes through (:func:`locked`, and :func:`mutate` / :func:`delete` on
it); and the payloads of a session's answer (:func:`session_payload`, :func:`kappa_session_payload`).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Annotated, Optional

import numpy as np
from fastapi import Depends, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response

from beliefgate.beliefs.gate import Decision
from beliefgate.serve.errors import ApiError
from beliefgate.serve.schemas import SESSION_ID_PATTERN, decision_is_finite, gate_state_payload, kappa_payload
from beliefgate.serve.sessions import (
    Session,
    SessionNotFoundError,
    SessionStore,
    SnapshotWriteError,
    WrongSessionKindError,
)

# --------------------------------------------------------------------------- route parameters


async def _no_body(request: Request) -> None:
    """A route that takes no body refuses one (422) rather than ignore it and act."""
    if await request.body():
        raise RequestValidationError([{"loc": ("body",), "msg": "this route takes no request body",
                                       "type": "no_body_expected"}])


#: the dependency of every route documented without a body
NO_BODY = Depends(_no_body)

SessionId = Annotated[str, PathParam(pattern=SESSION_ID_PATTERN, max_length=64,
                                     description="id returned by POST /v1/sessions")]


def store_of(request: Request) -> SessionStore:
    """The session store of the app serving ``request``."""
    return request.app.state.store


# --------------------------------------------------------------------------- reads and payloads


def require_kind(session: Session, kappa: bool) -> Session:
    """The session if it is of the wanted family (gate or kappa), else 409."""
    if (session.kind == "kappa") != kappa:
        where = "/v1/kappa/{id}" if session.kind == "kappa" else "/v1/sessions/{id}"
        raise WrongSessionKindError(f"session {session.id} is a {session.kind} session; use {where}")
    return session


def read(store: SessionStore, session_id: str, kappa: bool) -> Session:
    """The session a GET reads: looked up and kind-checked (404/409) *before* its idle clock
    restarts, so that a rejected request leaves the session as it was."""
    session = require_kind(store.get(session_id), kappa)
    store.touch(session)
    return session


def session_payload(store: SessionStore, session: Session) -> dict:
    """A gate session's answer (``SessionOut``)."""
    require_kind(session, kappa=False)
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


def kappa_session_payload(store: SessionStore, session: Session) -> dict:
    """A kappa session's answer (``KappaOut``)."""
    payload = kappa_payload(require_kind(session, kappa=True).gate)
    payload.update(session_id=session.id, kind="kappa", version=session.version, created_at=session.created_at,
                   idle_s=store.idle(session), expires_in_s=store.expires_in(session))
    return payload


# --------------------------------------------------------------------------- changes


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


async def locked(store: SessionStore, session_id: str, kappa: bool, change):
    """The one bracket every change of an existing session goes through.

    Look-up and kind check (404/409), the session's lock, the closed check (deleted or
    expired while the request waited), ``change(session) -> (result, undo)``, then the
    snapshot commit; a failed write runs ``undo`` before the 503.
    """
    session = require_kind(store.get(session_id), kappa)
    async with held(session):
        outcome = change(session)
        result, undo = (await outcome) if inspect.isawaitable(outcome) else outcome
        await _persist(store, undo)
    return result


@asynccontextmanager
async def held(session: Session):
    """The session's lock, on a session still live once it is held (deleted or expired while the
    request waited for it: 404)."""
    async with session.lock:
        if session.closed:
            raise SessionNotFoundError.of(session.id)
        yield session


async def mutate(store: SessionStore, session_id: str, apply, kappa: bool = False):
    """Run ``apply(session)`` in the :func:`locked` bracket; book-keep on success.

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

    return await locked(store, session_id, kappa, change_off_the_loop if kappa else change)


async def delete(request: Request, session_id: str, kappa: bool) -> Response:
    """Both DELETE routes: remove the session; a failed snapshot write reinstates it."""
    store = store_of(request)

    def change(session: Session):
        store.remove(session)
        return None, lambda: store.reinstate(session)

    await locked(store, session_id, kappa, change)
    return Response(status_code=204)


async def created(store: SessionStore, session: Session) -> None:
    """After ``store.add``: wait for the snapshot; a failed write removes the session again."""
    await _persist(store, lambda: store.remove(session))


__all__ = ["NO_BODY", "SessionId", "created", "delete", "held", "kappa_pool", "kappa_session_payload", "locked",
           "mutate", "read", "require_kind", "session_payload", "store_of"]
