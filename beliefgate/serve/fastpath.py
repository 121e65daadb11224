"""The step routes' one adapter: ``POST /v1/sessions/{id}/step``, ``step_loglik`` and ``step_evidence``.

A step costs the gate a few microseconds, FastAPI's routing and dependency solving about three
times that, and uvicorn's h11 protocol more again. So a step request reaches the same code by
three ways, and this module is the one place that serves it:

* the FastAPI routes (:mod:`beliefgate.serve.gate_routes`) call :func:`answer_step` with the body
  FastAPI validated;
* the ASGI guard (:mod:`beliefgate.serve.guard`) matches the path with :data:`FAST_PATH`,
  validates the body with :func:`fast_request` and answers with :func:`fast_answer`;
* the HTTP protocol of ``beliefgate serve`` (:mod:`beliefgate.serve.protocol`) parses a whole
  request itself, then the same :func:`fast_request` and :func:`fast_answer`.

:func:`fast_answer` is :func:`answer_step` plus what FastAPI would do with an exception: the
app's own handler answers it, so every answer is byte for byte the one the routes give.
"""

from __future__ import annotations

import re
from typing import Optional

import numpy as np
from fastapi import Request
from fastapi.responses import Response
from pydantic import ValidationError

from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.serve.errors import json_response
from beliefgate.serve.routing import mutate
from beliefgate.serve.schemas import (
    SESSION_ID_PATTERN,
    StepEvidenceRequest,
    StepLoglikRequest,
    StepRequest,
    decision_payload,
)
from beliefgate.serve.sessions import SessionStore
from beliefgate.serve.settings import API_PREFIX


def _step(body: StepRequest):
    table = body.table()
    return lambda s: s.gate.step(table, body.action, body.completed, **body.common_kwargs())


def _step_loglik(body: StepLoglikRequest):
    loglik = body.vector()
    return lambda s: s.gate.step_loglik(loglik, body.completed, **body.common_kwargs())


def _step_evidence(body: StepEvidenceRequest):
    evidence = StepEvidence(body.table(), np.asarray(body.action_mask, dtype=bool), float(body.weight),
                            body.completed, body.feasible)
    return lambda s: s.gate.step_evidence(evidence, ego_active=body.ego_active)


#: each step route (by the last segment of its path): its body model, and what turns a validated
#: body into the change of the session (the body's arrays are built before the session is looked up)
_STEP_ROUTES = {
    "step": (StepRequest, _step),
    "step_loglik": (StepLoglikRequest, _step_loglik),
    "step_evidence": (StepEvidenceRequest, _step_evidence),
}

#: the path of a step route: groups (session id, op); the id as the routes' own SESSION_ID_PATTERN
FAST_PATH_PATTERN = (re.escape(API_PREFIX) + "/sessions/(" + SESSION_ID_PATTERN.removeprefix("^").removesuffix("$")
                     + ")/(" + "|".join(map(re.escape, _STEP_ROUTES)) + ")")
#: :data:`FAST_PATH_PATTERN`, the whole path
FAST_PATH = re.compile("^" + FAST_PATH_PATTERN + "$")


async def answer_step(store: SessionStore, session_id: str, op: str, body) -> Response:
    """Apply a validated step body (``op``: step, step_loglik, step_evidence) to the session and
    answer with the decision; what the gate, the store or the bracket raise propagates."""
    decision = await mutate(store, session_id, _STEP_ROUTES[op][1](body))
    return json_response(decision_payload(decision))


def json_content(value: Optional[bytes]) -> bool:
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
        return _STEP_ROUTES[op][0].model_validate_json(body)
    except ValidationError:
        return None


async def fast_answer(app, session_id: str, op: str, request, scope) -> Response:
    """Serve a validated step request (see :func:`fast_request`) without FastAPI's routing
    and dependency machinery; errors :func:`answer_step` raises go to the app's exception
    handlers (``scope``: the request's ASGI scope, or a callable building it, for them)."""
    try:
        return await answer_step(app.state.store, session_id, op, request)
    except Exception as exc:  # noqa: BLE001 - dispatched to the registered handler, else re-raised
        for cls in type(exc).__mro__:
            on_error = app.exception_handlers.get(cls)
            if on_error is not None:
                return await on_error(Request(scope() if callable(scope) else scope), exc)
        raise


__all__ = ["FAST_PATH", "FAST_PATH_PATTERN", "answer_step", "fast_answer", "fast_request", "json_content"]
