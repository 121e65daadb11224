"""The service's errors and its JSON responses.

:class:`ApiError` (an error with its HTTP status), the JSON encoding of every answer
(:func:`json_response`, :func:`error_response`: ``{"error": kind, "detail": ..., "errors": [...]}``),
the error responses the OpenAPI document declares (:func:`responses`), and the app's exception
handlers (:func:`install_handlers`), which turn the gate's, kappa's, the store's and FastAPI's
own exceptions into those answers.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic_core import to_json
from starlette.exceptions import HTTPException as StarletteHTTPException

from beliefgate.beliefs.errors import (
    BeliefInputError,
    InvalidWeightError,
    NoFeasibleSkillError,
    UnknownSkillError,
)
from beliefgate.beliefs.kappa import KappaInputError
from beliefgate.errors import BeliefgateError
from beliefgate.serve.schemas import ErrorOut
from beliefgate.serve.sessions import SessionError, SnapshotWriteError


class ApiError(BeliefgateError):
    """An error with its HTTP status and ``error`` kind; ``field``: the body field a 422 is
    about (``None``: the one :func:`gate_field` finds, as for the gate's own errors)."""

    def __init__(self, status_code: int, kind: str, detail: str, field: Optional[str] = None):
        super().__init__(detail)
        self.status_code = status_code
        self.kind = kind
        self.detail = detail
        self.field = field


# --------------------------------------------------------------------------- responses


def dumps(payload: Any) -> bytes:
    """Strict JSON. Payload builders map the legitimately non-finite fields to ``None``
    explicitly; ``inf_nan_mode="null"`` only guarantees that no ``NaN`` token ever leaves."""
    return to_json(payload, inf_nan_mode="null")


def json_response(payload: Any, status_code: int = 200, headers: Optional[dict] = None) -> Response:
    """Every JSON answer of the service, success or error."""
    return Response(dumps(payload), status_code=status_code, media_type="application/json", headers=headers)


def error_response(status_code: int, kind: str, detail: str, errors: Optional[list] = None,
                   headers: Optional[dict] = None) -> Response:
    """An error answer: ``{"error": kind, "detail": detail}``, plus ``errors`` when given."""
    body = {"error": kind, "detail": detail}
    if errors is not None:
        body["errors"] = errors
    return json_response(body, status_code, headers)


def field_error(kind: str, message: str, field: Optional[str]) -> Response:
    """A 422 about one body field (``None``: the body as a whole): ``errors[0].loc`` names it,
    as pydantic's own errors do, and so does the ``detail``."""
    loc = ["body"] if field is None else ["body", field]
    return error_response(422, kind, f"{field or 'body'}: {message}", [{"loc": loc, "msg": message, "type": kind}])


# --------------------------------------------------------------------------- documented error responses

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


def responses(*codes: int) -> dict:
    """Documented error responses: ``codes`` plus those any /v1 request can get (400, 401, 408, 413, 422,
    and 503 while the server shuts down)."""
    return {c: _ERRORS[c] for c in sorted({400, 401, 408, 413, 422, 503, *codes})}


#: a route on an existing session: unknown (404), of the other family (409), a change to persist (503)
SESSION_RESPONSES = responses(404, 409, 503)
#: a route creating a session: also the session limit (429)
CREATE_RESPONSES = {**responses(503), 429: {"model": ErrorOut, "description": "session limit reached"}}


# --------------------------------------------------------------------------- exception handlers

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


def gate_field(path: str, exc: Exception) -> Optional[str]:
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


def install_handlers(app: FastAPI) -> None:
    """Register the service's exception handlers on ``app`` (the fast path answers with them too)."""

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        errors = _clean_errors(exc.errors())
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return error_response(422, "validation_error", f"{where}: {first['msg']}{more}", errors)

    @app.exception_handler(BeliefInputError)
    async def _belief(request: Request, exc: BeliefInputError) -> Response:
        return field_error(type(exc).__name__, str(exc), gate_field(request.scope["path"], exc))

    @app.exception_handler(KappaInputError)
    async def _kappa(request: Request, exc: KappaInputError) -> Response:
        # "evidence": the evidence as a whole (the argument of update_many), no one field of a body
        field = None if exc.field == "evidence" else exc.field
        return field_error(type(exc).__name__, str(exc), field)

    @app.exception_handler(SessionError)
    async def _session(request: Request, exc: SessionError) -> Response:
        return error_response(exc.status_code, exc.kind, str(exc))

    @app.exception_handler(SnapshotWriteError)
    async def _snapshot(request: Request, exc: SnapshotWriteError) -> Response:
        return error_response(503, "snapshot_write_failed", f"{exc}; the change was rolled back")

    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> Response:
        if exc.status_code != 422:
            return error_response(exc.status_code, exc.kind, exc.detail)
        return field_error(exc.kind, exc.detail, exc.field or gate_field(request.scope["path"], exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and exc.detail == FASTAPI_BODY_PARSE_ERROR:
            # UTF-8 JSON that Python's parser gives up on (a number of more than 4300 digits, nesting
            # deeper than its recursion limit): invalid JSON for this service, 422 like any other
            cause = exc.__cause__
            why = f"{type(cause).__name__}: {cause}" if cause is not None else "not parseable"
            return error_response(422, "validation_error", f"body: the JSON cannot be read ({why})",
                                  [{"loc": ["body"], "msg": f"the JSON cannot be read ({why})",
                                    "type": "json_invalid"}])
        kinds = {404: "not_found", 405: "method_not_allowed"}
        return error_response(exc.status_code, kinds.get(exc.status_code, "http_error"), str(exc.detail),
                              headers=getattr(exc, "headers", None))


__all__ = ["ApiError", "CREATE_RESPONSES", "FASTAPI_BODY_PARSE_ERROR", "SESSION_RESPONSES", "dumps",
           "error_response", "field_error", "gate_field", "install_handlers", "json_response", "responses"]
