"""Typed Python client of the gate service (needs only httpx).

:class:`Client` mirrors the :class:`~beliefgate.beliefs.gate.Gate` constructors and
:class:`RemoteGate` mirrors a gate's methods, returning the same
:class:`~beliefgate.beliefs.gate.Decision` records (NumPy arrays, ``GateInfo`` with
its ``StableMapInfo``/``ChangePointInfo``), so an agent can swap an in-process gate
for a remote one::

    from beliefgate.serve import Client

    with Client("http://127.0.0.1:8765", token=None) as client:
        gate = client.from_logprobs(3, skill_names=["fetch", "cook", "serve"])
        d = gate.step(table, action)          # float[3, A] log-probabilities, int
        if d.interrupt:
            ...

Errors: input the gate, kappa or the Overcooked observer rejects raises the same exception
class as in process (``ShapeMismatchError``, ``UnknownSkillError``, ``UnknownLayoutError``,
``StateFormatError``, ... -- a subclass that is also an :class:`InvalidRequest`); schema
violations raise :class:`InvalidRequest` itself (a ``ValueError``): ``except InvalidRequest``
catches every 422. The other statuses raise :class:`Unauthorized`,
:class:`SessionNotFound`, :class:`WrongSessionKind`, :class:`PayloadTooLarge`,
:class:`SessionLimitReached` or :class:`ServiceUnavailable`.
"""

from __future__ import annotations
from beliefgate.errors import BeliefgateError

import json
import math
import re
from contextlib import contextmanager
from typing import Any, Dict, Optional, Sequence, Union

import httpx
import numpy as np

from beliefgate.beliefs import errors as _errors
from beliefgate.beliefs import kappa as _kappa
from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.beliefs import core as _core
from beliefgate.beliefs.gate import Decision, GateInfo, GateParams, check_ego_active, check_keep_memory
from beliefgate.beliefs.gates import ChangePointInfo, CusumInfo, StableMapInfo
from beliefgate.models.checks import as_bool
from beliefgate.serve.schemas import SESSION_ID_PATTERN

DEFAULT_URL = "http://127.0.0.1:8765"


class ServeError(BeliefgateError):
    """An error answer of the service: HTTP status, ``error`` kind, ``detail``."""

    def __init__(self, status_code: int, kind: str, detail: str, errors: Optional[list] = None):
        super().__init__(f"{detail} [{status_code} {kind}]")
        self.status_code = status_code
        self.kind = kind
        self.detail = detail
        self.errors = errors


class Unauthorized(ServeError):
    """401: missing or wrong bearer token."""


class SessionNotFound(ServeError, LookupError):
    """404: the session does not exist (deleted, expired, or never created)."""


class WrongSessionKind(ServeError):
    """409: e.g. ``observe`` on a session that is not an Overcooked gate."""


class PayloadTooLarge(ServeError):
    """413: the request body exceeds the server's limit."""


class InvalidRequest(ServeError, ValueError):
    """422: the request does not match the API's schema."""


class SessionLimitReached(ServeError):
    """429: the server holds its maximum number of sessions."""


class ServiceUnavailable(ServeError):
    """503: the server could not persist the change (it was rolled back)."""


class ServiceUnreachable(ServiceUnavailable):
    """No answer at all: connection refused or reset, or no answer within the timeout
    (``status_code`` 0; ``kind`` ``unreachable`` or ``timeout``)."""


_BY_STATUS = {401: Unauthorized, 404: SessionNotFound, 409: WrongSessionKind, 413: PayloadTooLarge,
              422: InvalidRequest, 429: SessionLimitReached, 503: ServiceUnavailable}
_REMOTE: Dict[str, type] = {}


#: the Overcooked input errors a gate session can answer (a layout, a state, a transition)
_OVERCOOKED_ERRORS = ("UnknownLayoutError", "StateFormatError", "ImpossibleTransitionError")


def _overcooked_error(kind: str) -> Optional[type]:
    if kind not in _OVERCOOKED_ERRORS:
        return None
    from beliefgate.envs import overcooked  # the package exports them (lazily)

    return getattr(overcooked, kind)


def _gate_error_class(kind: str) -> Optional[type]:
    """``RemoteShapeMismatchError(ServeError, ShapeMismatchError)`` for the name of an input error
    the service raised in process (gate, kappa, Overcooked layout/state), so that ``except`` of
    the in-process class catches the remote one too."""
    if kind in _REMOTE:
        return _REMOTE[kind]
    local = getattr(_errors, kind, None)
    if not (isinstance(local, type) and issubclass(local, _errors.BeliefInputError)):
        local = getattr(_kappa, kind, None)
        if not (isinstance(local, type) and issubclass(local, _kappa.KappaInputError)):
            local = _overcooked_error(kind)
            if local is None:
                return None
    cls = type(f"Remote{kind}", (InvalidRequest, local), {"__str__": ServeError.__str__,
                                                      "__module__": __name__})
    _REMOTE[kind] = cls
    return cls


@contextmanager
def _checked_here():
    """Checks the client runs before sending (what JSON cannot carry, or would carry as something
    else) raise what the service would have answered: the ``Remote`` class of the in-process error,
    a 422 ``InvalidRequest`` too, so that ``except InvalidRequest`` still catches every refusal."""
    try:
        yield
    except (_errors.BeliefInputError, _kappa.KappaInputError) as exc:
        kind = type(exc).__name__
        raise (_gate_error_class(kind) or InvalidRequest)(422, kind, str(exc)) from None


def _raise_for(response: httpx.Response) -> None:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    kind = str(body.get("error", "http_error"))
    detail = str(body.get("detail", response.reason_phrase or "error"))
    cls = _gate_error_class(kind) if response.status_code == 422 else None
    if cls is None:
        cls = _BY_STATUS.get(response.status_code, ServeError)
    exc = cls(response.status_code, kind, detail, body.get("errors"))
    if isinstance(exc, _kappa.KappaInputError):  # the field the server named, as in process
        errors = body.get("errors")
        loc = errors[0].get("loc") if isinstance(errors, list) and errors and isinstance(errors[0], dict) else None
        # loc ["body"]: the evidence as a whole, which kappa itself calls "evidence"
        exc.field = str(loc[-1]) if isinstance(loc, list) and loc and loc[-1] != "body" else "evidence"
    raise exc


# --------------------------------------------------------------------------- encoding


def _logprob_list(values, name: str, ndim: int) -> list:
    """float arrays -> nested lists, -inf -> None; NaN/+inf cannot be sent."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise _errors.ShapeMismatchError(f"{name} must be a numeric array") from None
    if arr.ndim != ndim:
        raise _errors.ShapeMismatchError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if np.isnan(arr).any() or (arr == np.inf).any():
        raise _errors.NonFiniteLoglikError(f"{name} must not contain NaN or +inf")
    if ndim == 1:
        return [None if v == -math.inf else v for v in arr.tolist()]
    return [[None if v == -math.inf else v for v in row] for row in arr.tolist()]


def _y(value):
    """A judgment's outcome: ``True``/``False`` become 1/0 as in process (the service takes JSON
    integers only); anything else goes as it is, for the service to accept or refuse (422)."""
    return int(value) if isinstance(value, (bool, np.bool_)) else _plain(value)


def _session_id(value) -> str:
    """A session id as the routes accept it; anything else (``"../healthz"``) would reach another route."""
    if not isinstance(value, str) or not re.fullmatch(SESSION_ID_PATTERN, value):
        raise InvalidRequest(422, "validation_error", f"session_id must match {SESSION_ID_PATTERN}, got {value!r}")
    return value


def _plain(x):
    """NumPy scalars and arrays -> JSON-ready Python values."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def _params_json(params, cls) -> dict:
    """``GateParams``/``KappaParams`` or a mapping of their fields -> JSON; a mapping is validated
    here, so a bad field raises the in-process error naming it before any request."""
    if not isinstance(params, cls):
        params = cls.model_validate(params)
    return params.model_dump(mode="json")


def _state_json(state) -> Any:
    if hasattr(state, "model_dump"):
        return state.model_dump(mode="json")
    if isinstance(state, (str, bytes)):
        return json.loads(state)
    return state


def _array(values) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64)
    out.setflags(write=False)
    return out


def _prob(x) -> float:
    return math.nan if x is None else float(x)


def _log(x) -> float:
    return -math.inf if x is None else float(x)


def _inf(x) -> float:
    return math.inf if x is None else float(x)


def decision_from_payload(p: dict) -> Decision:
    """The :class:`Decision` a step response encodes (``null`` -> NaN or -inf as documented)."""
    i = p["info"]
    sm, cp = i["stable_map"], i["changepoint"]
    post = _array(p["posterior"])
    info = GateInfo(
        t=int(i["t"]),
        prior=_array(i["prior"]),
        posterior=_array(i["posterior"]),
        stable_map=StableMapInfo(int(sm["map_skill"]), float(sm["confidence"]), int(sm["stable"]),
                                 float(sm["l_t"]), _log(sm["log_l"]), bool(sm["contradiction"]),
                                 bool(sm["interrupt"]), sm["suppressed_reason"]),
        changepoint=ChangePointInfo(_prob(cp["prob"]), _prob(cp["switch_prob"]), bool(cp["fired"]),
                                    cp["suppressed_reason"]),
        interrupt=bool(i["interrupt"]),
        suppressed_reason=i["suppressed_reason"],
        log_evidence=float(i["log_evidence"]),
        weight=float(i["weight"]),
        completed=int(i["completed"]),
        ego_active=bool(i["ego_active"]),
        predictive=_array(p["predictive"]),
        cusum=None if i.get("cusum") is None else CusumInfo(_inf(i["cusum"]["statistic"]), int(i["cusum"]["reference"]),
                                                            bool(i["cusum"]["fired"]), i["cusum"]["suppressed_reason"]),
    )
    return Decision(post, int(p["map_skill"]), str(p["map_name"]), float(p["confidence"]),
                    bool(p["contradiction"]), bool(p["interrupt"]), bool(p["changepoint"]),
                    _prob(p["changepoint_prob"]), _prob(p["switch_prob"]), info.predictive, info)


# --------------------------------------------------------------------------- client

#: seconds an idle pooled connection is reused. httpx's default (5 s) equals uvicorn's
#: keep-alive timeout, so a request sent just as the server closes an idle connection met a
#: reset ("Connection reset by peer" on a reused connection); expiring idle connections well
#: before the server does removes that race against a beliefgate server.
KEEPALIVE_EXPIRY_S = 2.0


class Client:
    """HTTP client of one gate service. Thread-safe as far as httpx is; closes with ``with``."""

    def __init__(self, base_url: str = DEFAULT_URL, token: Optional[str] = None, *, timeout: float = 30.0,
                 transport: Optional[httpx.BaseTransport] = None):
        headers = {"Accept": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout, transport=transport,
                                  limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_S))

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, payload: Any = None) -> Any:
        """One call: JSON in (strict: no NaN), JSON out; error statuses raise."""
        content = None if payload is None else json.dumps(payload, allow_nan=False).encode()
        headers = None if payload is None else {"Content-Type": "application/json"}
        try:
            response = self._http.request(method, "/v1" + path, content=content, headers=headers)
        except httpx.TimeoutException as exc:
            raise ServiceUnreachable(0, "timeout", f"{method} {self.base_url}/v1{path}: no answer within the "
                                     f"timeout ({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise ServiceUnreachable(0, "unreachable", f"{method} {self.base_url}/v1{path}: "
                                     f"{type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            _raise_for(response)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    # ----------------------------------------------------------------- service

    def healthz(self) -> dict:
        return self.request("GET", "/healthz")

    def from_logprobs(self, num_skills: Optional[int] = None, params: Optional[Union[GateParams, dict]] = None,
                      skill_names: Optional[Sequence[str]] = None, prior_counts=None) -> "RemoteGate":
        """A remote :meth:`Gate.from_logprobs <beliefgate.beliefs.gate.Gate.from_logprobs>`."""
        body: Dict[str, Any] = {}
        if params is not None:
            body["params"] = _params_json(params, GateParams)
        if skill_names is not None and not isinstance(skill_names, (str, bytes)):
            skill_names = list(skill_names)  # once: a generator is read here, not used up by the check
        if num_skills is not None or skill_names is not None or prior_counts is not None:
            # the in-process checks first: a bad value raises what Gate.from_logprobs raises, naming it
            # (a number as a name was sent as a string, a NaN count was json's ValueError)
            count = (num_skills if num_skills is not None else
                     1 if isinstance(skill_names, (str, bytes)) else  # a string: refused as names
                     len(skill_names) if skill_names is not None else max(1, int(np.size(prior_counts))))
            with _checked_here():
                _core.gate_config(GateParams.model_validate(body.get("params", {})), count, skill_names, prior_counts)
        if num_skills is not None:
            body["num_skills"] = _plain(num_skills)
        if skill_names is not None:
            body["skill_names"] = list(skill_names)
        if prior_counts is not None:
            body["prior_counts"] = _plain(np.asarray(prior_counts, dtype=np.float64))
        return RemoteGate(self, self.request("POST", "/sessions", body))

    def for_overcooked(self, layout: str, params: Optional[Union[GateParams, dict]] = None,
                       partner: int = 1) -> "RemoteGate":
        """A remote :meth:`Gate.for_overcooked <beliefgate.beliefs.gate.Gate.for_overcooked>`."""
        body: Dict[str, Any] = {"layout": layout, "partner": _plain(partner)}
        if params is not None:
            body["params"] = _params_json(params, GateParams)
        return RemoteGate(self, self.request("POST", "/sessions", body))

    def kappa(self, branches: Sequence[str], params: Optional[Union["_kappa.KappaParams", dict]] = None
              ) -> "RemoteKappa":
        """A remote :class:`~beliefgate.beliefs.kappa.Kappa` for one decision."""
        body: Dict[str, Any] = {"branches": [str(b) for b in branches]}
        if params is not None:
            body["params"] = _params_json(params, _kappa.KappaParams)
        return RemoteKappa(self, self.request("POST", "/kappa", body))

    def attach_kappa(self, session_id: str) -> "RemoteKappa":
        """A handle on an existing kappa session."""
        return RemoteKappa(self, self.request("GET", f"/kappa/{_session_id(session_id)}"))

    def attach(self, session_id: str) -> "RemoteGate":
        """A handle on an existing session (e.g. after a client restart)."""
        return RemoteGate(self, self.request("GET", f"/sessions/{_session_id(session_id)}"))


class RemoteGate:
    """One session: the methods of :class:`~beliefgate.beliefs.gate.Gate`, over HTTP."""

    def __init__(self, client: Client, info: dict):
        self._client = client
        self.session_id: str = info["session_id"]
        self.kind: str = info["kind"]
        self.layout: Optional[str] = info.get("layout")
        self.partner: Optional[int] = info.get("partner")
        self.skill_names: tuple = tuple(info["skill_names"])
        self.num_skills: int = int(info["num_skills"])
        self.params: GateParams = GateParams.model_validate(info["params"])

    def __repr__(self) -> str:
        return f"RemoteGate({self.session_id!r}, kind={self.kind!r}, num_skills={self.num_skills})"

    def _path(self, suffix: str = "") -> str:
        return f"/sessions/{self.session_id}{suffix}"

    def _common(self, completed, feasible, weight, ego_active) -> dict:
        # the in-process checks: "no" is not True, 0.5 is not a feasibility flag, NaN is not a weight
        with _checked_here():
            return {
                "completed": _plain(completed),
                "feasible": None if feasible is None else as_bool(feasible, "feasible", (self.num_skills,)).tolist(),
                "weight": _core.step_weight(weight),
                "ego_active": check_ego_active(ego_active),
            }

    def step(self, action_logprobs, action, completed=None, *, feasible=None, weight=1.0,
             ego_active: bool = True) -> Decision:
        """Remote :meth:`Gate.step`."""
        body = self._common(completed, feasible, weight, ego_active)
        body["action_logprobs"] = _logprob_list(action_logprobs, "action_logprobs", 2)
        body["action"] = _plain(action)
        return decision_from_payload(self._client.request("POST", self._path("/step"), body))

    def step_loglik(self, loglik, completed=None, *, feasible=None, weight=1.0,
                    ego_active: bool = True) -> Decision:
        """Remote :meth:`Gate.step_loglik`."""
        body = self._common(completed, feasible, weight, ego_active)
        body["loglik"] = _logprob_list(loglik, "loglik", 1)
        return decision_from_payload(self._client.request("POST", self._path("/step_loglik"), body))

    def step_evidence(self, ev: StepEvidence, *, ego_active: bool = True) -> Decision:
        """Remote :meth:`Gate.step_evidence`."""
        body = self._common(ev.completed, ev.feasible, ev.weight, ego_active)
        body["action_logprobs"] = _logprob_list(ev.logprobs, "logprobs", 2)
        with _checked_here():
            body["action_mask"] = as_bool(ev.action_mask, "action_mask").tolist()
        return decision_from_payload(self._client.request("POST", self._path("/step_evidence"), body))

    def observe(self, state, next_state, *, ego_active: bool = True) -> Decision:
        """Remote :meth:`Gate.observe` (``SymbolicState`` objects, their dicts or JSON)."""
        with _checked_here():
            active = check_ego_active(ego_active)
        body = {"state": _state_json(state), "next_state": _state_json(next_state), "ego_active": active}
        return decision_from_payload(self._client.request("POST", self._path("/observe"), body))

    def notify_replanned(self) -> None:
        """Remote :meth:`Gate.notify_replanned`."""
        self._client.request("POST", self._path("/notify_replanned"))

    def reset(self, keep_memory: bool = False) -> None:
        """Remote :meth:`Gate.reset`; ``keep_memory`` must be a bool, as in process (``bool("no")`` is true)."""
        with _checked_here():
            keep_memory = check_keep_memory(keep_memory)
        self._client.request("POST", self._path("/reset"), {"keep_memory": keep_memory})

    def state(self) -> dict:
        """The session's state (``SessionOut``: ``t``, ``posterior``, ``memory``, ``state_digest``, ...)."""
        return self._client.request("GET", self._path())

    @property
    def t(self) -> int:
        """Index of the next step (one request)."""
        return int(self.state()["t"])

    @property
    def memory(self) -> np.ndarray:
        """Completion counts (one request)."""
        return np.asarray(self.state()["memory"], dtype=np.float64)

    def delete(self) -> None:
        """Delete the session on the server."""
        self._client.request("DELETE", self._path())


class RemoteKappa:
    """One kappa session: the methods and read-outs of :class:`~beliefgate.beliefs.kappa.Kappa`,
    over HTTP. Each call returns the session's read-out (``KappaOut`` as a dict) and keeps it as
    :attr:`info`; the properties read that last answer (no request)."""

    def __init__(self, client: Client, info: dict):
        self._client = client
        self.session_id: str = info["session_id"]
        self.branches: tuple = tuple(info["branches"])
        self.params = _kappa.KappaParams(**info["params"])
        self.info: dict = info

    def __repr__(self) -> str:
        return f"RemoteKappa({self.session_id!r}, branches={list(self.branches)!r})"

    def _call(self, method: str, suffix: str = "", body: Any = None) -> dict:
        self.info = self._client.request(method, f"/kappa/{self.session_id}{suffix}", body)
        return self.info

    def judge(self, left, right, y) -> dict:
        return self._call("POST", "/judge", {"left": _plain(left), "right": _plain(right), "y": _y(y)})

    def rollout(self, branch, depth, score) -> dict:
        return self._call("POST", "/rollout", {"branch": _plain(branch), "depth": _plain(depth),
                                               "score": _score_json(score)})

    def evidence(self, judgments=(), rollouts=(), round: bool = False) -> dict:
        """Judgments ``(left, right, y)`` then rollouts ``(branch, depth, score)``, all or nothing."""
        body = {"judgments": [{"left": _plain(a), "right": _plain(b), "y": _y(y)} for a, b, y in judgments],
                "rollouts": [{"branch": _plain(b), "depth": _plain(d), "score": _score_json(r)}
                             for b, d, r in rollouts],
                "round": bool(round)}
        return self._call("POST", "/evidence", body)

    def round(self, scores: dict, depth=None) -> dict:
        """One rollout round ``{branch: score}`` at ``depth`` (default: the round's number)."""
        d = int(self.info["rounds"]) + 1 if depth is None else depth
        return self.evidence(rollouts=[(b, d, s) for b, s in scores.items()], round=True)

    def refresh(self) -> dict:
        return self._call("GET")

    def reset(self) -> dict:
        return self._call("POST", "/reset")

    def delete(self) -> None:
        self._client.request("DELETE", f"/kappa/{self.session_id}")

    @property
    def argmax_probs(self) -> dict:
        return dict(self.info["argmax"])

    @property
    def kappa(self) -> float:
        return float(self.info["kappa"])

    @property
    def best(self) -> str:
        return self.info["best"]

    @property
    def nucleus(self) -> list:
        return list(self.info["nucleus"])

    @property
    def commit(self) -> bool:
        return bool(self.info["commit"])

    @property
    def rounds(self) -> int:
        """Rollout rounds used (as :attr:`Kappa.rounds <beliefgate.beliefs.kappa.Kappa.rounds>`)."""
        return int(self.info["rounds"])


def _score_json(score):
    """A score for JSON: NaN and infinities cannot be sent (the same error as in process)."""
    value = _plain(score)
    if isinstance(value, float) and not math.isfinite(value):
        raise _kappa.NonFiniteScoreError(f"rollout score must be finite, got {value!r}", "score")
    return value


__all__ = [
    "Client",
    "RemoteGate",
    "RemoteKappa",
    "ServeError",
    "Unauthorized",
    "SessionNotFound",
    "WrongSessionKind",
    "PayloadTooLarge",
    "InvalidRequest",
    "SessionLimitReached",
    "ServiceUnavailable",
    "ServiceUnreachable",
    "decision_from_payload",
]
