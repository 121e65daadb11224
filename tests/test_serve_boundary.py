"""The service's boundary, against a real uvicorn server: what a rejected request leaves
(nothing, the idle clock included), strict JSON types at every depth, the field every 422
names, the gate's own limits and error classes over HTTP and through the client, the
documented error responses, body encodings, and routes that take no body.
"""

from __future__ import annotations

import json
import math
import socket
import time
from pathlib import Path

import numpy as np
import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")

from beliefgate import Gate, GateParams, Kappa, KappaParams  # noqa: E402
from beliefgate.beliefs.core import MAX_ABS_LOGPROB, MAX_WEIGHT  # noqa: E402
from beliefgate.serve import Client  # noqa: E402
from beliefgate.serve.client import InvalidRequest, ServeError  # noqa: E402

from test_serve import ThreadServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
JSON = {"Content-Type": "application/json"}
TABLE = [[-1.0, -2.0, -0.5, -3.0], [-0.1, -3.0, -4.0, -2.5], [-1.4, -1.0, -1.2, -1.6]]
STATE = {"layout": "cramped_room", "timestep": 0, "players": [{"position": [1, 2], "orientation": [0, -1]},
                                                                {"position": [3, 1], "orientation": [0, -1]}]}
NEXT = {**STATE, "timestep": 1}


@pytest.fixture(scope="module")
def server():
    with ThreadServer(max_sessions=100, ttl_s=600.0) as srv:
        yield srv


def _gate(url: str, **body) -> str:
    r = httpx.post(url + "/v1/sessions", json=body or {"skill_names": ["a", "b", "c"]})
    assert r.status_code == 201, r.text
    return r.json()["session_id"]


def _kappa(url: str) -> str:
    r = httpx.post(url + "/v1/kappa", json={"branches": ["a", "b", "c"]})
    assert r.status_code == 201, r.text
    return r.json()["session_id"]


def _seen(srv, sid: str) -> tuple:
    """What a rejected request must leave alone: the session's idle clock, version and state
    (read from the server's store, without a request that would itself count as use)."""
    session = srv.app.state.store.get(sid)
    from beliefgate.serve.schemas import state_digest

    return session.last_used, session.version, state_digest(session.gate.state)


def _loc(r: httpx.Response) -> list:
    return r.json()["errors"][0]["loc"]


# --------------------------------------------------------------------------- 1. rejected requests and the idle clock


def test_rejected_requests_leave_the_session_and_its_idle_clock_alone(server):
    url = server.url
    gate, kappa, oc = _gate(url), _kappa(url), _gate(url, layout="cramped_room")
    step = {"action_logprobs": TABLE, "action": 0}
    wrong_kind = [  # (method, path, body): every gate route on a kappa id and every kappa route on a gate id
        ("GET", f"/v1/sessions/{kappa}", None), ("DELETE", f"/v1/sessions/{kappa}", None),
        ("POST", f"/v1/sessions/{kappa}/step", step),
        ("POST", f"/v1/sessions/{kappa}/step_loglik", {"loglik": [0.0, -1.0, -2.0]}),
        ("POST", f"/v1/sessions/{kappa}/step_evidence", {"action_logprobs": TABLE, "action_mask": [True] * 4}),
        ("POST", f"/v1/sessions/{kappa}/observe", {"state": STATE, "next_state": NEXT}),
        ("POST", f"/v1/sessions/{kappa}/notify_replanned", None), ("POST", f"/v1/sessions/{kappa}/reset", None),
        ("POST", f"/v1/sessions/{gate}/observe", {"state": STATE, "next_state": NEXT}),
        ("GET", f"/v1/kappa/{gate}", None), ("DELETE", f"/v1/kappa/{gate}", None),
        ("POST", f"/v1/kappa/{gate}/judge", {"left": "a", "right": "b", "y": 1}),
        ("POST", f"/v1/kappa/{gate}/rollout", {"branch": "a", "depth": 1, "score": 0.5}),
        ("POST", f"/v1/kappa/{gate}/evidence", {"judgments": [{"left": "a", "right": "b", "y": 1}]}),
        ("POST", f"/v1/kappa/{gate}/reset", None),
    ]
    invalid = [  # (method, path, body, status): rejected on the right kind of session
        ("POST", f"/v1/sessions/{gate}/step", {**step, "action": 9}, 422),
        ("POST", f"/v1/sessions/{gate}/step", {"action_logprobs": TABLE}, 422),
        ("POST", f"/v1/sessions/{gate}/notify_replanned", "garbage", 422),
        ("GET", f"/v1/sessions/{gate}", "garbage", 422),
        ("POST", f"/v1/sessions/{oc}/observe", {"state": STATE, "next_state": {**NEXT, "timestep": 5}}, 422),
        ("POST", f"/v1/kappa/{kappa}/judge", {"left": "a", "right": "zz", "y": 1}, 422),
        ("POST", f"/v1/kappa/{kappa}/reset", "garbage", 422),
        ("GET", f"/v1/kappa/{kappa}", "garbage", 422),
    ]
    before = {sid: _seen(server, sid) for sid in (gate, kappa, oc)}
    time.sleep(0.02)  # a touch now would move last_used visibly
    for method, path, body in wrong_kind:
        content = None if body is None else json.dumps(body).encode()
        r = httpx.request(method, url + path, content=content, headers=JSON)
        assert r.status_code == 409 and r.json()["error"] == "wrong_session_kind", (method, path, r.text)
    for method, path, body, status in invalid:
        content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        r = httpx.request(method, url + path, content=content, headers=JSON)
        assert r.status_code == status, (method, path, r.text)
    assert {sid: _seen(server, sid) for sid in (gate, kappa, oc)} == before
    # the check can see a touch: a successful read restarts the idle clock
    assert httpx.get(f"{url}/v1/sessions/{gate}").status_code == 200
    assert httpx.get(f"{url}/v1/kappa/{kappa}").status_code == 200
    assert _seen(server, gate)[0] > before[gate][0] and _seen(server, kappa)[0] > before[kappa][0]


def test_a_rejected_read_does_not_keep_a_session_alive():
    """End to end with expiry: a kappa session read only through the gate route (409) expires."""
    with ThreadServer(ttl_s=1.0, sweep_interval_s=0.05) as srv:
        kappa = _kappa(srv.url)
        deadline = time.monotonic() + 1.6
        while time.monotonic() < deadline:
            r = httpx.get(f"{srv.url}/v1/sessions/{kappa}")
            if r.status_code == 404:
                break
            assert r.status_code == 409, r.text
            time.sleep(0.1)
        assert httpx.get(f"{srv.url}/v1/kappa/{kappa}").status_code == 404


# --------------------------------------------------------------------------- 2. JSON types at every depth


NESTED_BAD = [
    # (id, route, body, loc)
    ("hazard-string", "/v1/sessions", {"num_skills": 2, "params": {"hazard": "0.1"}}, ["params", "hazard"]),
    ("hazard-bool", "/v1/sessions", {"num_skills": 2, "params": {"hazard": True}}, ["params", "hazard"]),
    ("n_stable-bool", "/v1/sessions", {"num_skills": 2, "params": {"n_stable": True}}, ["params", "n_stable"]),
    ("window-string", "/v1/sessions", {"num_skills": 2, "params": {"window": "7"}}, ["params", "window"]),
    ("window-float", "/v1/sessions", {"num_skills": 2, "params": {"window": 7.0}}, ["params", "window"]),
    ("track-int", "/v1/sessions", {"num_skills": 2, "params": {"track_changepoint": 1}},
     ["params", "track_changepoint"]),
    ("theta-string", "/v1/kappa", {"branches": ["a", "b"], "params": {"theta": "0.9"}}, ["params", "theta"]),
    ("max_rounds-bool", "/v1/kappa", {"branches": ["a", "b"], "params": {"max_rounds": True}},
     ["params", "max_rounds"]),
    ("max_rounds-float", "/v1/kappa", {"branches": ["a", "b"], "params": {"max_rounds": 2.0}},
     ["params", "max_rounds"]),
    ("seed-string", "/v1/kappa", {"branches": ["a", "b"], "params": {"seed": "3"}}, ["params", "seed"]),
]


@pytest.mark.parametrize("case_id, route, body, loc", NESTED_BAD, ids=[c[0] for c in NESTED_BAD])
def test_nested_params_must_have_their_json_type(server, case_id, route, body, loc):
    count = httpx.get(server.url + "/v1/healthz").json()["sessions"]
    r = httpx.post(server.url + route, json=body)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "validation_error" and _loc(r) == ["body", *loc], r.json()
    assert httpx.get(server.url + "/v1/healthz").json()["sessions"] == count


def test_a_json_integer_is_a_number_but_in_process_params_stay_as_they_were(server):
    r = httpx.post(server.url + "/v1/sessions", json={"num_skills": 2, "params": {"hazard": 1, "likelihood_scale": 2}})
    assert r.status_code == 201, r.text
    params = r.json()["params"]  # answered in the nested form
    assert params["filter"]["hazard"] == 1.0 and params["gate"]["stable_map"]["likelihood_scale"] == 2.0
    r = httpx.post(server.url + "/v1/kappa", json={"branches": ["a", "b"], "params": {"theta": 1, "max_rounds": 2}})
    assert r.status_code == 201 and r.json()["params"]["theta"] == 1.0 and r.json()["params"]["max_rounds"] == 2
    r = httpx.post(server.url + "/v1/sessions", json={"num_skills": 2, "params": {"hazard": 2}})
    assert r.status_code == 422 and _loc(r) == ["body", "params", "hazard"]  # an integer, but out of range
    # the Python classes keep their own validation: the strictness is the service's
    assert GateParams(window=7.0).window == 7 and KappaParams(max_rounds=2.0).max_rounds == 2


OBSERVE_BAD = [
    ("timestep-string", {"state": {**STATE, "timestep": "0"}, "next_state": NEXT}, ["state", "timestep"]),
    ("timestep-float", {"state": STATE, "next_state": {**NEXT, "timestep": 1.0}}, ["next_state", "timestep"]),
    ("position-floats", {"state": {**STATE, "players": [{"position": [3.0, 2.0], "orientation": [0, -1]},
                                                        STATE["players"][1]]}, "next_state": NEXT},
     ["state", "players", 0, "position", 0]),
    ("orientation-bools", {"state": STATE, "next_state": {**NEXT, "players": [
        STATE["players"][0], {"position": [3, 1], "orientation": [False, True]}]}},
     ["next_state", "players", 1, "orientation", 0]),
    ("score-string", {"state": {**STATE, "score": "3"}, "next_state": NEXT}, ["state", "score"]),
    ("pot-ingredients-float", {"state": {**STATE, "pots": [{"position": [2, 0], "ingredients": 1.0}]},
                               "next_state": NEXT}, ["state", "pots", 0, "ingredients"]),
    ("pot-cooking-int", {"state": {**STATE, "pots": [{"position": [2, 0], "ingredients": 1, "cooking": 0}]},
                         "next_state": NEXT}, ["state", "pots", 0, "cooking"]),
    ("counter-position-string", {"state": {**STATE, "counters": [{"position": ["0", 1], "name": "onion"}]},
                                 "next_state": NEXT}, ["state", "counters", 0, "position", 0]),
]


@pytest.fixture(scope="module")
def overcooked(server):
    return _gate(server.url, layout="cramped_room")


@pytest.mark.parametrize("case_id, body, loc", OBSERVE_BAD, ids=[c[0] for c in OBSERVE_BAD])
def test_observed_states_must_have_their_json_type(server, overcooked, case_id, body, loc):
    before = _seen(server, overcooked)
    r = httpx.post(f"{server.url}/v1/sessions/{overcooked}/observe", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "validation_error" and _loc(r) == ["body", *loc], r.json()
    assert _seen(server, overcooked) == before


def test_well_typed_states_are_still_observed(server):
    sid = _gate(server.url, layout="cramped_room")
    r = httpx.post(f"{server.url}/v1/sessions/{sid}/observe", json={"state": {**STATE, "score": 0},
                                                                     "next_state": NEXT})
    assert r.status_code == 200, r.text
    assert r.json()["info"]["t"] == 0


# --------------------------------------------------------------------------- 3. every 422 names its field


GATE_ERRORS = [
    # (id, path suffix, body, error kind, field)
    ("table-K", "/step", {"action_logprobs": TABLE[:2], "action": 0}, "ShapeMismatchError", "action_logprobs"),
    ("table-empty", "/step", {"action_logprobs": [], "action": 0}, "ShapeMismatchError", "action_logprobs"),
    ("feasible-length", "/step", {"action_logprobs": TABLE, "action": 0, "feasible": [True]},
     "ShapeMismatchError", "feasible"),
    ("action-range", "/step", {"action_logprobs": TABLE, "action": 4}, "ActionIndexError", "action"),
    ("completed", "/step", {"action_logprobs": TABLE, "action": 0, "completed": "wash"},
     "UnknownSkillError", "completed"),
    ("completed-index", "/step", {"action_logprobs": TABLE, "action": 0, "completed": 3},
     "UnknownSkillError", "completed"),
    ("row-null", "/step", {"action_logprobs": [TABLE[0], [None] * 4, TABLE[2]], "action": 0},
     "NonFiniteLoglikError", "action_logprobs"),
    ("positive-logprob", "/step", {"action_logprobs": [[0.5, -1.0, -1.0, -1.0], *TABLE[1:]], "action": 0},
     "NonFiniteLoglikError", "action_logprobs"),
    ("no-feasible", "/step", {"action_logprobs": TABLE, "action": 0, "feasible": [False] * 3},
     "NoFeasibleSkillError", "feasible"),
    ("weight", "/step", {"action_logprobs": TABLE, "action": 0, "weight": 2000.0}, "InvalidWeightError", "weight"),
    ("loglik-length", "/step_loglik", {"loglik": [0.0, -1.0]}, "ShapeMismatchError", "loglik"),
    ("loglik-bound", "/step_loglik", {"loglik": [0.0, -2e9, -1.0]}, "NonFiniteLoglikError", "loglik"),
    ("impossible", "/step_loglik", {"loglik": [None, -1.0, -2.0], "feasible": [True, False, False]},
     "ImpossibleObservationError", "loglik"),
    ("loglik-feasible", "/step_loglik", {"loglik": [0.0, -1.0, -2.0], "feasible": [True, True]},
     "ShapeMismatchError", "feasible"),
    ("mask-empty", "/step_evidence", {"action_logprobs": TABLE, "action_mask": [False] * 4},
     "ActionIndexError", "action_mask"),
    ("mask-length", "/step_evidence", {"action_logprobs": TABLE, "action_mask": [True] * 3},
     "ShapeMismatchError", "action_mask"),
    ("evidence-completed", "/step_evidence", {"action_logprobs": TABLE, "action_mask": [True] * 4, "completed": 7},
     "UnknownSkillError", "completed"),
]


@pytest.fixture(scope="module")
def busy_gate(server):
    sid = _gate(server.url)
    for action in (0, 2, 1):
        assert httpx.post(f"{server.url}/v1/sessions/{sid}/step",
                          json={"action_logprobs": TABLE, "action": action}).status_code == 200
    return sid


@pytest.mark.parametrize("fast", [True, False], ids=["short-cut", "fastapi"])
@pytest.mark.parametrize("case_id, suffix, body, kind, field", GATE_ERRORS, ids=[c[0] for c in GATE_ERRORS])
def test_gate_errors_name_the_field(server, busy_gate, case_id, suffix, body, kind, field, fast):
    """``errors[0].loc`` and ``detail`` name the field, on the guard's short cut (JSON content
    type) and on FastAPI's route (another JSON media type) alike."""
    before = _seen(server, busy_gate)
    headers = JSON if fast else {"Content-Type": "application/x-test+json"}
    r = httpx.post(f"{server.url}/v1/sessions/{busy_gate}{suffix}", content=json.dumps(body).encode(),
                   headers=headers)
    assert r.status_code == 422, r.text
    err = r.json()
    assert err["error"] == kind, err
    assert err["errors"][0]["loc"] == ["body", field] and err["errors"][0]["type"] == kind, err
    assert err["detail"].startswith(f"{field}: "), err
    assert _seen(server, busy_gate) == before


CREATE_ERRORS = [
    ({"num_skills": 2, "prior_counts": [1.0]}, "ShapeMismatchError", "prior_counts"),
    ({"num_skills": 2, "prior_counts": [-1.0, 0.0]}, "InvalidParameterError", "prior_counts"),
    ({"skill_names": ["a", "a"]}, "ShapeMismatchError", "skill_names"),
    ({"num_skills": 0}, "ShapeMismatchError", "num_skills"),
    ({"layout": "cramped_room", "partner": 2}, "InvalidParameterError", "partner"),
    ({"layout": "no_such_kitchen"}, "UnknownLayoutError", "layout"),
]


def test_create_errors_name_the_field(server):
    count = httpx.get(server.url + "/v1/healthz").json()["sessions"]
    for body, kind, field in CREATE_ERRORS:
        r = httpx.post(server.url + "/v1/sessions", json=body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["error"] == kind and _loc(r) == ["body", field], (body, r.json())
    assert httpx.get(server.url + "/v1/healthz").json()["sessions"] == count


def test_observe_errors_name_the_state(server, overcooked):
    before = _seen(server, overcooked)
    cases = [({"state": {**STATE, "layout": "coordination_ring"}, "next_state": NEXT}, "StateFormatError", "state"),
             ({"state": STATE, "next_state": {**NEXT, "layout": "coordination_ring"}}, "StateFormatError",
              "next_state"),
             ({"state": STATE, "next_state": {**NEXT, "timestep": 5}}, "StateFormatError", "next_state"),
             ({"state": STATE, "next_state": {**NEXT, "players": [{"position": [3, 1], "orientation": [0, -1]},
                                                                  {"position": [1, 2], "orientation": [0, -1]}]}},
              "ImpossibleTransitionError", "next_state")]
    for body, kind, field in cases:
        r = httpx.post(f"{server.url}/v1/sessions/{overcooked}/observe", json=body)
        assert r.status_code == 422, r.text
        assert r.json()["error"] == kind and _loc(r) == ["body", field], r.json()
    assert _seen(server, overcooked) == before


@pytest.mark.parametrize("score", ["NaN", "Infinity", "-Infinity", "1e10", "-1e999", "10000000000", '"0.3"', "true"])
def test_a_bad_rollout_score_says_finite_within_the_bound(server, score):
    sid = _kappa(server.url)
    before = _seen(server, sid)
    r = httpx.post(f"{server.url}/v1/kappa/{sid}/rollout",
                   content=f'{{"branch": "a", "depth": 1, "score": {score}}}'.encode(), headers=JSON)
    assert r.status_code == 422, r.text
    err = r.json()
    assert len(err["errors"]) == 1 and err["errors"][0]["loc"] == ["body", "score"], err
    assert "finite number in [-1e9, 1e9]" in err["errors"][0]["msg"] and "integer" not in err["detail"], err
    assert _seen(server, sid) == before
    ok = httpx.post(f"{server.url}/v1/kappa/{sid}/rollout", json={"branch": "a", "depth": 1, "score": 3})
    assert ok.status_code == 200 and ok.json()["t"] == 1


def test_an_empty_kappa_evidence_request_describes_the_body(server):
    sid = _kappa(server.url)
    before = _seen(server, sid)
    for body in ({}, {"judgments": [], "rollouts": [], "round": True}):
        r = httpx.post(f"{server.url}/v1/kappa/{sid}/evidence", json=body)
        assert r.status_code == 422, r.text
        err = r.json()
        assert err["error"] == "EvidenceTypeError" and err["errors"][0]["loc"] == ["body"], err
        assert '"judgments"' in err["detail"] and '"rollouts"' in err["detail"], err
    assert _seen(server, sid) == before


# --------------------------------------------------------------------------- 4, 5. the gate's own limits and classes


def _same_error(local_call, remote_call) -> type:
    """Both calls raise; the remote error is an instance of the local one's class (and an
    InvalidRequest, as every 422 is)."""
    with pytest.raises(Exception) as local:
        local_call()
    cls = type(local.value)
    with pytest.raises(cls) as remote:  # a plain InvalidRequest (a schema answer) fails here
        remote_call()
    assert isinstance(remote.value, InvalidRequest) and type(remote.value) is not InvalidRequest, remote.value
    assert type(remote.value).__name__ == f"Remote{cls.__name__}", remote.value
    return cls


def test_client_raises_the_in_process_class_for_the_gates_limits(server):
    local = Gate.from_logprobs(3, skill_names=["a", "b", "c"])
    table = np.array(TABLE)
    with Client(server.url) as client:
        remote = client.from_logprobs(3, skill_names=["a", "b", "c"])
        cases = {
            "action -1": lambda g: g.step(table, -1),
            "action 300": lambda g: g.step(table, 300),
            "weight 2000": lambda g: g.step(table, 0, weight=2000.0),
            "weight -1": lambda g: g.step(table, 0, weight=-1.0),
            "loglik -2e9": lambda g: g.step_loglik([0.0, -2e9, -1.0]),
            "loglik 1.5e4": lambda g: g.step_loglik([0.0, 1.5e4, -1.0]),
            "table -2e9": lambda g: g.step(np.where(table == -3.0, -2e9, table), 0),
            "table positive": lambda g: g.step(np.where(table == -3.0, 0.5, table), 0),
            "empty feasible": lambda g: g.step(table, 0, feasible=[]),
            "no actions": lambda g: g.step(np.zeros((3, 0)), 0),
        }
        names = {}
        for name, call in cases.items():
            names[name] = _same_error(lambda: call(local), lambda: call(remote)).__name__
        assert names["action -1"] == names["action 300"] == "ActionIndexError"
        assert names["weight 2000"] == names["weight -1"] == "InvalidWeightError"
        assert names["loglik -2e9"] == names["table -2e9"] == names["table positive"] == "NonFiniteLoglikError"
        assert names["empty feasible"] == names["no actions"] == "ShapeMismatchError"
        assert local.t == 0 and remote.t == 0
        _same_error(lambda: Gate.from_logprobs(0), lambda: client.from_logprobs(0))
        _same_error(lambda: Gate.from_logprobs(2, prior_counts=[-1.0, 0.0]),
                    lambda: client.from_logprobs(2, prior_counts=[-1.0, 0.0]))
        # within the limits both accept, and agree
        edge = [[0.0, -MAX_ABS_LOGPROB], [-MAX_ABS_LOGPROB, 0.0], [-1.0, -0.5]]
        two = client.from_logprobs(3)
        d_remote = two.step(edge, 1, weight=MAX_WEIGHT)
        d_local = Gate.from_logprobs(3).step(np.array(edge), 1, weight=MAX_WEIGHT)
        assert d_remote.posterior.tolist() == d_local.posterior.tolist()


def test_documents_state_the_gates_logprob_limit(server):
    doc = json.loads((ROOT / "docs" / "openapi.json").read_text())
    schemas = doc["components"]["schemas"]
    table_entry = schemas["StepRequest"]["properties"]["action_logprobs"]["items"]["items"]["anyOf"][0]
    loglik_entry = schemas["StepLoglikRequest"]["properties"]["loglik"]["items"]["anyOf"][0]
    assert (table_entry["minimum"], table_entry["maximum"]) == (-MAX_ABS_LOGPROB, 0.0)
    assert (loglik_entry["minimum"], loglik_entry["maximum"]) == (-MAX_ABS_LOGPROB, MAX_ABS_LOGPROB)
    weight = schemas["StepRequest"]["properties"]["weight"]
    assert (weight["minimum"], weight["maximum"]) == (0.0, MAX_WEIGHT)
    text = (ROOT / "docs" / "serve.md").read_text()
    assert "10⁹]" not in text and "[−10⁴, 0]" in text and "[−10⁴, 10⁴]" in text
    assert MAX_ABS_LOGPROB == 1e4  # what the documents write out
    # and the service answers at exactly that limit: the gate's check, the gate's error
    sid = _gate(server.url)
    inside = httpx.post(f"{server.url}/v1/sessions/{sid}/step_loglik", json={"loglik": [0.0, -MAX_ABS_LOGPROB, -1.0]})
    assert inside.status_code == 200, inside.text
    outside = httpx.post(f"{server.url}/v1/sessions/{sid}/step_loglik",
                         json={"loglik": [0.0, -math.nextafter(MAX_ABS_LOGPROB, math.inf), -1.0]})
    assert outside.status_code == 422 and outside.json()["error"] == "NonFiniteLoglikError", outside.text


# --------------------------------------------------------------------------- 6. the 409s are documented


def test_openapi_documents_409_on_every_route_of_an_existing_session():
    doc = json.loads((ROOT / "docs" / "openapi.json").read_text())
    routes = [(path, method) for path, item in doc["paths"].items() if "{session_id}" in path for method in item]
    assert len(routes) == 14
    missing = [(path, method) for path, method in routes if "409" not in doc["paths"][path][method]["responses"]]
    assert not missing, missing


# --------------------------------------------------------------------------- 7. malformed bodies


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-16", "utf-32"])
def test_a_json_body_that_is_not_utf8_gets_400_naming_the_encoding(server, busy_gate, encoding):
    count = httpx.get(server.url + "/v1/healthz").json()["sessions"]
    r = httpx.post(server.url + "/v1/sessions", content=json.dumps({"num_skills": 2}).encode(encoding), headers=JSON)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == "bad_request", r.text
    assert f"is {encoding.upper()}-encoded; JSON bodies must be UTF-8" in r.json()["detail"], r.text
    assert httpx.get(server.url + "/v1/healthz").json()["sessions"] == count
    before = _seen(server, busy_gate)
    body = json.dumps({"action_logprobs": TABLE, "action": 1}).encode(encoding)
    r = httpx.post(f"{server.url}/v1/sessions/{busy_gate}/step", content=body, headers=JSON)
    assert r.status_code == 400 and r.json()["error"] == "bad_request", r.text
    assert _seen(server, busy_gate) == before


def test_invalid_utf8_and_a_bad_content_length_are_400(server):
    r = httpx.post(server.url + "/v1/sessions", content=b'{"layout": "\xff"}', headers=JSON)
    assert r.status_code == 400 and r.json()["error"] == "bad_request" and "not valid UTF-8" in r.json()["detail"]
    r = httpx.post(server.url + "/v1/sessions", content=b'\xef\xbb\xbf{"num_skills": 2}', headers=JSON)
    assert r.status_code == 201, r.text  # UTF-8 with a byte-order mark is UTF-8
    # a Content-Length that is not a number: uvicorn answers before the service runs (docs/serve.md)
    host, port = server.url.rsplit("//", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: abc\r\n\r\n{}")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"text/plain" in head, answer
    assert body == b"Invalid HTTP request received.", answer
    assert "`Content-Length` that is not a number: uvicorn" in (ROOT / "docs" / "serve.md").read_text()


# --------------------------------------------------------------------------- 8. routes that take no body


def test_routes_without_a_body_refuse_one_and_change_nothing(server):
    url = server.url
    gate, kappa = _gate(url), _kappa(url)
    assert httpx.post(f"{url}/v1/sessions/{gate}/step", json={"action_logprobs": TABLE, "action": 0}).status_code == 200
    assert httpx.post(f"{url}/v1/kappa/{kappa}/judge", json={"left": "a", "right": "b", "y": 1}).status_code == 200
    before = {sid: _seen(server, sid) for sid in (gate, kappa)}
    routes = [("POST", f"/v1/sessions/{gate}/notify_replanned"), ("GET", f"/v1/sessions/{gate}"),
              ("DELETE", f"/v1/sessions/{gate}"), ("POST", f"/v1/kappa/{kappa}/reset"),
              ("GET", f"/v1/kappa/{kappa}"), ("DELETE", f"/v1/kappa/{kappa}"), ("GET", "/v1/healthz")]
    for method, path in routes:
        for body, headers in ((b"garbage", {}), (b"{}", JSON), (b"null", JSON)):
            r = httpx.request(method, url + path, content=body, headers=headers)
            assert r.status_code == 422, (method, path, body, r.text)
            assert r.json()["error"] == "validation_error" and _loc(r) == ["body"], r.json()
    assert {sid: _seen(server, sid) for sid in (gate, kappa)} == before
    # without a body each works (and the reset route still takes its optional body)
    assert httpx.post(f"{url}/v1/sessions/{gate}/notify_replanned").json()["version"] == before[gate][1] + 1
    assert httpx.post(f"{url}/v1/kappa/{kappa}/reset").json()["t"] == 0
    assert httpx.post(f"{url}/v1/sessions/{gate}/reset", json={"keep_memory": True}).status_code == 200
    assert httpx.post(f"{url}/v1/sessions/{gate}/reset").status_code == 200


class _Recording(httpx.HTTPTransport):
    """An httpx transport that records (method, path, body) of every request."""

    def __init__(self):
        super().__init__()
        self.sent = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.method, request.url.path.rsplit("/", 1)[-1], request.read()))
        return super().handle_request(request)


def test_the_client_sends_no_body_to_routes_that_take_none(server):
    transport = _Recording()
    with Client(server.url, transport=transport) as client:
        gate = client.from_logprobs(2)
        kappa = client.kappa(["a", "b"])
        client.healthz()
        gate.state()
        gate.notify_replanned()
        kappa.refresh()
        kappa.reset()
        gate.delete()
        kappa.delete()
    bodiless = [(method, op, body) for method, op, body in transport.sent if method in ("GET", "DELETE")
                or op in ("notify_replanned", "reset")]
    assert len(bodiless) == 7 and all(body == b"" for _, _, body in bodiless), bodiless


def test_in_process_kappa_and_remote_kappa_agree_on_an_empty_batch(server):
    """The client still raises the in-process class for an empty evidence batch."""
    local = Kappa(["a", "b"])
    with Client(server.url) as client:
        remote = client.kappa(["a", "b"])
        _same_error(lambda: local.update_many([]), lambda: remote.evidence())


def test_client_takes_params_as_dicts_and_checks_them_before_sending(server):
    from beliefgate.beliefs.config import GateParamError
    from beliefgate.models.kappa import KappaParamError

    with Client(server.url) as client:
        gate = client.from_logprobs(num_skills=2, params={"hazard": 0.1})
        assert gate.params == GateParams(hazard=0.1)
        k = client.kappa(["a", "b"], {"theta": 0.8})
        assert k.params == KappaParams(theta=0.8) and k.rounds == 0
        sessions = client.healthz()["sessions"]
        with pytest.raises(GateParamError, match="hazard"):
            client.from_logprobs(num_skills=2, params={"hazard": 2})
        with pytest.raises(KappaParamError, match="theta"):
            client.kappa(["a", "b"], {"theta": 0})
        assert client.healthz()["sessions"] == sessions  # nothing was sent


def test_client_raises_the_overcooked_classes(server):
    from beliefgate.envs.overcooked.layouts import UnknownLayoutError
    from beliefgate.envs.overcooked.state import StateFormatError
    from beliefgate.models.errors import InvalidParameterError

    with Client(server.url) as client:
        with pytest.raises(UnknownLayoutError) as info:
            client.for_overcooked("nope")
        assert isinstance(info.value, InvalidRequest)
        with pytest.raises(InvalidParameterError, match="partner index"):
            client.for_overcooked("cramped_room", partner=2)
        from beliefgate.envs.overcooked.adapter import OvercookedAdapter

        state = OvercookedAdapter("cramped_room", horizon=5).reset()
        gate = client.for_overcooked("cramped_room")
        with pytest.raises(StateFormatError, match="not consecutive") as info:
            gate.observe(state, state)
        assert isinstance(info.value, InvalidRequest)
        with pytest.raises(InvalidRequest, match="body.state.layout: Field required"):  # the schema's own
            gate.observe({"a": 1}, {"b": 2})
