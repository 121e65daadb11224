"""Sizes a caller may ask of the library in process (issue #47, red-team finding 6): refused with the project's
own error, naming the size and the limit, before anything is allocated; the same constants cap the service."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from beliefgate import Gate
from beliefgate.beliefs.kappa import Kappa
from beliefgate.errors import InputError
from beliefgate.limits import MAX_BRANCHES, MAX_SKILLS, SizeLimitError


def _refused_quickly_and_small(make, needle):
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(SizeLimitError) as info:
            make()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 1.0 and peak < 5_000_000, (time.perf_counter() - started, peak)
    assert isinstance(info.value, InputError) and needle in str(info.value)
    return str(info.value)


def test_gate_from_logprobs_refuses_a_huge_skill_count():
    for n in (10 ** 8, MAX_SKILLS + 1):
        message = _refused_quickly_and_small(lambda: Gate.from_logprobs(n), f"num_skills {n}")
        assert f"at most {MAX_SKILLS}" in message
    assert Gate.from_logprobs(MAX_SKILLS).num_skills == MAX_SKILLS  # the limit itself is allowed


def test_kappa_refuses_too_many_branches():
    for n in (5_000, MAX_BRANCHES + 1):
        names = [f"b{i}" for i in range(n)]
        message = _refused_quickly_and_small(lambda: Kappa(names), f"{n} branches")
        assert f"at most {MAX_BRANCHES}" in message
    from beliefgate.models.kappa import KappaInputError

    with pytest.raises(KappaInputError) as info:
        Kappa([f"b{i}" for i in range(MAX_BRANCHES + 1)])
    assert info.value.field == "branches"
    assert len(Kappa([f"b{i}" for i in range(MAX_BRANCHES)]).branches) == MAX_BRANCHES


def test_the_service_caps_are_the_same_constants():
    pytest.importorskip("fastapi")
    from beliefgate.serve import schemas

    assert schemas.MAX_SKILLS is MAX_SKILLS and schemas.MAX_BRANCHES is MAX_BRANCHES


def test_gate_reset_takes_only_a_bool():
    """``reset(keep_memory='x')`` was read as true: a typo kept the last partner's counts."""
    import numpy as np

    from beliefgate.beliefs.errors import BeliefInputError

    gate = Gate.from_logprobs(3)
    gate.step_loglik(np.log([0.7, 0.2, 0.1]), completed=0)
    counts = np.asarray(gate.state.belief.counts).copy()
    for bad in ("x", "", "False", 1, 0, None, np.array([True])):
        with pytest.raises(BeliefInputError, match="keep_memory must be True or False"):
            gate.reset(keep_memory=bad)
    assert np.array_equal(np.asarray(gate.state.belief.counts), counts)  # a refused reset changes nothing
    gate.reset(keep_memory=True)
    assert np.array_equal(np.asarray(gate.state.belief.counts), counts)
    gate.reset(keep_memory=np.bool_(False))
    assert not np.array_equal(np.asarray(gate.state.belief.counts), counts)


def test_every_gate_constructor_refuses_a_huge_skill_count():
    """``Gate(10**8)`` built directly (not through ``from_logprobs``) allocated before any check."""
    from beliefgate.beliefs.core import make_gate

    for make in (lambda: Gate(10 ** 8), lambda: make_gate(None, 10 ** 8)):
        message = _refused_quickly_and_small(make, "num_skills 100000000")
        assert f"at most {MAX_SKILLS}" in message
    assert Gate(MAX_SKILLS).num_skills == MAX_SKILLS


def test_remote_gate_reset_takes_only_a_bool():
    """``RemoteGate.reset(keep_memory="no")`` sent ``bool("no")``, true: the in-process check is run
    before anything is sent, and a bool goes through unchanged."""
    pytest.importorskip("httpx")
    import numpy as np

    from beliefgate.beliefs.errors import InvalidParameterError
    from beliefgate.serve.client import InvalidRequest, RemoteGate

    class Recorder:
        def __init__(self):
            self.sent = []

        def request(self, method, path, body=None):
            self.sent.append((method, path, body))

    recorder = Recorder()
    gate = RemoteGate(recorder, {"session_id": "s1", "kind": "logprobs", "skill_names": ["a", "b"],
                                 "num_skills": 2, "params": {}})
    for bad in ("no", "", 1, 0, None):
        with pytest.raises(InvalidRequest, match="keep_memory must be True or False") as info:
            gate.reset(keep_memory=bad)
        assert info.value.kind == InvalidParameterError.__name__
    assert recorder.sent == []
    gate.reset(keep_memory=np.bool_(True))
    gate.reset()
    assert [body for _, _, body in recorder.sent] == [{"keep_memory": True}, {"keep_memory": False}]
