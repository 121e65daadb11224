"""The kappa session routes: ``/v1/kappa`` and ``/v1/kappa/{id}/...`` (one :class:`Kappa` per decision)."""

from __future__ import annotations

from typing import Optional

from fastapi import APIRouter, Request
from fastapi.responses import Response

from beliefgate.beliefs.kappa import EvidenceTypeError, Judgment, Kappa, KappaInputError, Rollout, RolloutRound
from beliefgate.serve.errors import CREATE_RESPONSES, SESSION_RESPONSES, error_response, json_response, responses
from beliefgate.serve.routing import (
    NO_BODY,
    SessionId,
    created,
    delete,
    held,
    kappa_session_payload,
    mutate,
    read,
    store_of,
)
from beliefgate.serve.schemas import CreateKappaRequest, JudgeRequest, KappaEvidenceRequest, KappaOut, RolloutRequest
from beliefgate.serve.settings import API_PREFIX

_PIECE_FIELDS = {"judgments": ("left", "right", "y"), "rollouts": ("branch", "depth", "score")}


def _evidence_loc(exc: KappaInputError, num_judgments: int, as_round: bool) -> Optional[list]:
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


def kappa_router() -> APIRouter:
    """The routes of kappa sessions, under ``/v1``."""
    api = APIRouter(prefix=API_PREFIX)

    @api.post("/kappa", status_code=201, response_model=KappaOut, tags=["kappa"], responses=CREATE_RESPONSES)
    async def create_kappa(body: CreateKappaRequest, request: Request) -> Response:
        """Create a kappa session for one decision: its branch names and `KappaParams`."""
        store = store_of(request)
        store.check_capacity()
        kappa = Kappa(list(body.branches), body.params.to_kappa_params())
        session = store.add(kappa, "kappa")
        await created(store, session)
        return json_response(kappa_session_payload(store, session), 201,
                             headers={"Location": f"{API_PREFIX}/kappa/{session.id}"})

    @api.get("/kappa/{session_id}", response_model=KappaOut, tags=["kappa"], responses=responses(404, 409),
             dependencies=[NO_BODY])
    async def get_kappa(session_id: SessionId, request: Request) -> Response:
        """The read-out: argmax probability of every branch, kappa, best, nucleus, commit, rounds."""
        store = store_of(request)
        async with held(read(store, session_id, kappa=True)) as session:  # not mid-update (worker thread)
            return json_response(kappa_session_payload(store, session))

    @api.delete("/kappa/{session_id}", status_code=204, tags=["kappa"], responses=SESSION_RESPONSES,
                dependencies=[NO_BODY])
    async def delete_kappa(session_id: SessionId, request: Request) -> Response:
        """Delete the kappa session."""
        return await delete(request, session_id, kappa=True)

    @api.post("/kappa/{session_id}/judge", response_model=KappaOut, tags=["kappa"], responses=SESSION_RESPONSES)
    async def kappa_judge(session_id: SessionId, body: JudgeRequest, request: Request) -> Response:
        """`Kappa.judge`: `y = 1` when `left` was judged better than `right`."""
        store = store_of(request)
        session = await mutate(store, session_id,
                               lambda s: s.apply_kappa([Judgment(body.left, body.right, body.y)]), kappa=True)
        return json_response(kappa_session_payload(store, session))

    @api.post("/kappa/{session_id}/rollout", response_model=KappaOut, tags=["kappa"], responses=SESSION_RESPONSES)
    async def kappa_rollout(session_id: SessionId, body: RolloutRequest, request: Request) -> Response:
        """`Kappa.rollout`: a branch's score imagined `depth` steps ahead (not a round)."""
        store = store_of(request)
        session = await mutate(store, session_id,
                               lambda s: s.apply_kappa([Rollout(body.branch, body.depth, body.score)]), kappa=True)
        return json_response(kappa_session_payload(store, session))

    @api.post("/kappa/{session_id}/evidence", response_model=KappaOut, tags=["kappa"], responses=SESSION_RESPONSES)
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
        store = store_of(request)
        try:
            session = await mutate(store, session_id, lambda s: s.apply_kappa(evidence), kappa=True)
        except KappaInputError as exc:
            loc = _evidence_loc(exc, len(body.judgments), body.round)
            if loc is None:
                raise
            where = ".".join(str(p) for p in loc[1:])
            return error_response(422, type(exc).__name__, f"{where}: {exc}",
                                  [{"loc": loc, "msg": str(exc), "type": type(exc).__name__}])
        return json_response(kappa_session_payload(store, session))

    @api.post("/kappa/{session_id}/reset", response_model=KappaOut, tags=["kappa"], responses=SESSION_RESPONSES,
              dependencies=[NO_BODY])
    async def kappa_reset(session_id: SessionId, request: Request) -> Response:
        """`Kappa.reset`: forget the evidence (same branches and params)."""
        store = store_of(request)
        session = await mutate(store, session_id, lambda s: s.apply_kappa(None), kappa=True)
        return json_response(kappa_session_payload(store, session))

    return api


__all__ = ["kappa_router"]
