"""The Python API as an integrator found it (a review, 2026-12-05): each test failed on the code before."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from beliefgate import Gate, GateParams, KappaParams
from beliefgate.beliefs import filter as F
from beliefgate.beliefs.errors import ImpossibleObservationError, InvalidParameterError, ShapeMismatchError
from beliefgate.beliefs.offline import most_likely_path, smoother
from beliefgate.models.kappa import KappaParamError

LP = np.log([[.7, .1, .1, .1], [.1, .7, .1, .1], [.1, .1, .7, .1]])


@pytest.mark.parametrize("params, where", [
    (GateParams(model="windowed", window=5), "state.belief.window_buf"),
    (GateParams(cp_horizon=20), "state.changepoint.joint"),
    (GateParams(gate="cusum"), "state.cusum"),
])
def test_restore_refuses_a_state_of_a_differently_configured_gate(params, where):
    """restore() checked K and the CUSUM gate only: a windowed gate took a hazard gate's state and its
    posteriors went silently wrong ([0, 1, 0] against a fresh gate's [1e-4, 0.9999, 1e-4])."""
    src = Gate.from_logprobs(3)
    for _ in range(8):
        src.step(LP, 0)
    gate = Gate.from_logprobs(3, params)
    before = gate.state
    with pytest.raises(ShapeMismatchError, match=where):
        gate.restore(src.state)
    assert gate.state is before
    same = Gate.from_logprobs(3)
    same.restore(pickle.loads(pickle.dumps(src.state)))  # the gate's own state, even through pickle
    assert same.step(LP, 1).posterior.tolist() == src.step(LP, 1).posterior.tolist()


def test_restore_refuses_a_non_finite_belief():
    src = Gate.from_logprobs(3)
    src.step(LP, 0)
    state = src.state
    bad = state._replace(belief=state.belief._replace(belief=np.full(3, np.nan)))
    with pytest.raises(ShapeMismatchError, match="non-finite"):
        Gate.from_logprobs(3).restore(bad)


def test_smoother_and_viterbi_raise_on_an_impossible_observation_as_the_filter_does():
    """They returned all-NaN marginals and a -inf path score where filter raises."""
    params = F.FilterParams("hazard", 0.2, 1.0, None)
    ll = np.zeros((4, 2))
    ll[2] = -np.inf
    for fn in (F.filter, smoother, most_likely_path):
        with pytest.raises(ImpossibleObservationError, match="at step 2"):
            fn(params, ll)


@pytest.mark.parametrize("call", [
    lambda: Gate.from_logprobs(3).step([[0, 0], [0]], 0),
    lambda: Gate.from_logprobs(3).step_loglik([[0], [0, 0], [0]]),
    lambda: Gate.from_logprobs(3).step(np.log(np.full((3, 2), .5)), 0, feasible=[[1], [1, 1], [1]]),
    lambda: F.filter(F.FilterParams("hazard", 0.1, 1.0, None), [[0, 0], [0]]),
    lambda: F.observations(np.zeros((3, 2)), prior_counts=[[1], [1, 2]]),
    lambda: F.filter(F.FilterParams("hazard", 0.1, 1.0, None), np.zeros((3, 2)) + 0j),
], ids=["ragged table", "ragged loglik", "ragged feasible", "ragged filter input", "ragged counts", "complex"])
def test_ragged_or_complex_arrays_are_shape_errors(call):
    """NumPy's plain ValueError escaped (ragged), and the offline filter read complex numbers as their
    real part with a ComplexWarning where the gate refuses them."""
    with pytest.raises(ShapeMismatchError):
        call()


def test_filter_params_must_be_numbers():
    with pytest.raises(InvalidParameterError, match="hazard must be a number, got 'x'"):
        F.filter(F.FilterParams("hazard", "x", 1.0, None), np.zeros((3, 2)))


def test_kappa_params_load_errors_are_kappa_param_errors(tmp_path):
    """FileNotFoundError, IsADirectoryError, UnicodeDecodeError and TypeError escaped (GateParams.load
    said each in one line)."""
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"tau": 0.5, "\xff": 1}')
    for path in (tmp_path / "missing.json", tmp_path, bad):
        with pytest.raises(KappaParamError):
            KappaParams.load(path)
    with pytest.raises(KappaParamError, match="must be text"):
        KappaParams.from_json(None)


def test_skill_names_may_be_any_iterable_read_once():
    """A generator was used up by the check: "must hold 2 distinct names, got []"."""
    assert Gate.from_logprobs(2, skill_names=(n for n in ("a", "b"))).skill_names == ("a", "b")
    with pytest.raises(ShapeMismatchError, match="skill_names"):
        Gate.from_logprobs(2, skill_names=5)


def test_assigning_to_frozen_params_is_a_one_line_param_error():
    """pydantic's multi-line ValidationError ("1 validation error for GateParams ...") escaped."""
    from beliefgate.beliefs.config import GateParamError

    params = GateParams()
    with pytest.raises(GateParamError, match="hazard: Instance is frozen") as info:
        params.hazard = 0.5
    assert info.value.field == "hazard" and params.hazard == GateParams().hazard
    with pytest.raises(KappaParamError, match="tau"):
        KappaParams().tau = 2.0
