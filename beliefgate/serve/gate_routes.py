"""The gate session routes: ``/v1/sessions`` and ``/v1/sessions/{id}/...`` (one :class:`Gate` per teammate).

The three step routes answer through the step adapter (:func:`~beliefgate.serve.fastpath.answer_step`),
the one code the guard's and the protocol's fast paths use too.
"""

from __future__ import annotations

import asyncio
from typing import Optional

from fastapi import APIRouter, Request
from fastapi.responses import Response

from beliefgate.beliefs.gate import Gate, GateParams
from beliefgate.serve.errors import CREATE_RESPONSES, SESSION_RESPONSES, ApiError, json_response, responses
from beliefgate.serve.fastpath import answer_step
from beliefgate.serve.routing import NO_BODY, SessionId, created, delete, mutate, read, session_payload, store_of
from beliefgate.serve.schemas import (
    CreateSessionRequest,
    DecisionOut,
    ObserveRequest,
    ResetRequest,
    SessionOut,
    StepEvidenceRequest,
    StepLoglikRequest,
    StepRequest,
    decision_payload,
)
from beliefgate.serve.sessions import Session
from beliefgate.serve.settings import API_PREFIX


def _overcooked_gate(layout: str, params: GateParams, partner: int):
    """Build an Overcooked gate and its observer (runs in a worker thread)."""
    from beliefgate.envs.overcooked.gate import overcooked_gate
    from beliefgate.envs.overcooked.layouts import resolve_layout

    name = resolve_layout(layout)
    gate = overcooked_gate(name, params, partner=partner)  # checks the partner index (InvalidParameterError)
    return name, gate, gate.observer  # the gate's own observer (a second one rebuilt the controller's tables)


def gate_router() -> APIRouter:
    """The routes of gate sessions, under ``/v1``."""
    api = APIRouter(prefix=API_PREFIX)

    @api.post("/sessions", status_code=201, response_model=SessionOut, tags=["sessions"],
              responses=CREATE_RESPONSES)
    async def create_session(body: CreateSessionRequest, request: Request) -> Response:
        """Create a session: a generic gate (`num_skills`/`skill_names`) or an Overcooked gate (`layout`)."""
        store = store_of(request)
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
        await created(store, session)
        return json_response(session_payload(store, session), 201,
                             headers={"Location": f"{API_PREFIX}/sessions/{session.id}"})

    @api.get("/sessions/{session_id}", response_model=SessionOut, tags=["sessions"],
             responses=responses(404, 409), dependencies=[NO_BODY])
    async def get_session(session_id: SessionId, request: Request) -> Response:
        """The session and its gate's current state (`state_digest` changes iff the state does)."""
        store = store_of(request)
        return json_response(session_payload(store, read(store, session_id, kappa=False)))

    @api.delete("/sessions/{session_id}", status_code=204, tags=["sessions"],
                responses=SESSION_RESPONSES, dependencies=[NO_BODY])
    async def delete_session(session_id: SessionId, request: Request) -> Response:
        """Delete the session."""
        return await delete(request, session_id, kappa=False)

    @api.post("/sessions/{session_id}/step", response_model=DecisionOut, tags=["gate"],
              responses=SESSION_RESPONSES)
    async def step(session_id: SessionId, body: StepRequest, request: Request) -> Response:
        """`Gate.step`: condition on the action taken, given every action's log-probability per skill."""
        return await answer_step(store_of(request), session_id, "step", body)

    @api.post("/sessions/{session_id}/step_loglik", response_model=DecisionOut, tags=["gate"],
              responses=SESSION_RESPONSES)
    async def step_loglik(session_id: SessionId, body: StepLoglikRequest, request: Request) -> Response:
        """`Gate.step_loglik`: condition on the observed action's log-likelihood under each skill."""
        return await answer_step(store_of(request), session_id, "step_loglik", body)

    @api.post("/sessions/{session_id}/step_evidence", response_model=DecisionOut, tags=["gate"],
              responses=SESSION_RESPONSES)
    async def step_evidence(session_id: SessionId, body: StepEvidenceRequest, request: Request) -> Response:
        """`Gate.step_evidence`: several actions may be consistent with what was observed."""
        return await answer_step(store_of(request), session_id, "step_evidence", body)

    @api.post("/sessions/{session_id}/observe", response_model=DecisionOut, tags=["gate"],
              responses=SESSION_RESPONSES)
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

        decision = await mutate(store_of(request), session_id, apply)
        return json_response(decision_payload(decision))

    @api.post("/sessions/{session_id}/notify_replanned", response_model=SessionOut, tags=["gate"],
              responses=SESSION_RESPONSES, dependencies=[NO_BODY])
    async def notify_replanned(session_id: SessionId, request: Request) -> Response:
        """`Gate.notify_replanned`: the ego replanned for its own reasons; cooldowns start now."""
        store = store_of(request)
        session = await mutate(store, session_id, lambda s: (s.gate.notify_replanned(), s)[1])
        return json_response(session_payload(store, session))

    @api.post("/sessions/{session_id}/reset", response_model=SessionOut, tags=["gate"],
              responses=SESSION_RESPONSES)
    async def reset(session_id: SessionId, request: Request, body: Optional[ResetRequest] = None) -> Response:
        """`Gate.reset`: a new episode (`keep_memory` keeps the completion counts)."""
        store = store_of(request)
        keep = False if body is None else body.keep_memory
        session = await mutate(store, session_id, lambda s: (s.gate.reset(keep_memory=keep), s)[1])
        return json_response(session_payload(store, session))

    return api


__all__ = ["gate_router"]
