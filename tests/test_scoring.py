"""The one switch scorer (beliefgate.eval.detectors.score_detections) and its views."""

from __future__ import annotations

import numpy as np
import pytest

from beliefgate.errors import BeliefgateError
from beliefgate.eval.detectors import DetectorInputError, score_alarms, score_detections, switch_windows
from beliefgate.eval.replay import score_switches
from beliefgate.eval.sensitivity.replay import score_configs


def test_switch_windows_hand_made():
    hidden = np.zeros(12, dtype=bool)
    hidden[[1, 3, 10]] = True
    # [1, 4) and [3, 6) overlap; [10, 13) is clipped at the end
    assert np.flatnonzero(switch_windows(hidden, 3)).tolist() == [1, 2, 3, 4, 5, 10, 11]
    assert np.flatnonzero(switch_windows(hidden, 1)).tolist() == [1, 3, 10]
    assert not switch_windows(np.zeros(5, dtype=bool), 4).any()


def test_score_detections_hand_made_columns():
    hidden = np.zeros(10, dtype=bool)
    hidden[[2, 8]] = True
    alarms = np.zeros((10, 3), dtype=bool)
    alarms[[3, 9], 0] = True       # both switches, delays 1 and 1
    alarms[[0, 6], 1] = True       # both missed (window 3), two false alarms
    alarms[[2, 4], 2] = True       # first switch at delay 0; step 4 lies in its window
    d = score_detections(alarms, hidden, 3)
    assert d.switches.tolist() == [2, 8]
    assert d.detected.tolist() == [[True, False, True], [True, False, False]]
    assert d.delays.tolist() == [[1, 3, 0], [1, 3, 3]]
    assert d.false_alarms.tolist() == [0, 2, 0]
    det, dsum, fa = score_configs(alarms, hidden, 3)
    assert det.tolist() == [2.0, 0.0, 1.0] and dsum.tolist() == [2.0, 6.0, 3.0] and fa.tolist() == [0.0, 2.0, 0.0]


def test_columns_equal_single_sequences():
    rng = np.random.default_rng(5)
    for _ in range(50):
        T, window = int(rng.integers(1, 60)), int(rng.choice([1, 2, 5, 10]))
        hidden = rng.random(T) < 0.15
        alarms = rng.random((T, 4)) < 0.2
        d = score_detections(alarms, hidden, window)
        for c in range(4):
            one = score_alarms(alarms[:, c], hidden, window)
            assert one.delays == d.delays[:, c].tolist() and one.detected == d.detected[:, c].tolist()
            assert one.false_alarms == d.false_alarms[c] and one.steps == T
            sc = score_switches(alarms[:, c], hidden, window)
            assert (sc.switches, sc.detected, sc.false_alarms) == (len(one.delays), sum(one.detected),
                                                                  one.false_alarms)


@pytest.mark.parametrize("fn", [score_detections, score_alarms, score_switches, score_configs])
def test_scorers_reject_bad_input(fn):
    with pytest.raises(DetectorInputError):
        fn(np.zeros((5, 2) if fn is score_configs else 5, dtype=bool), np.zeros(4, dtype=bool), 3)
    with pytest.raises(DetectorInputError):
        fn(np.zeros((5, 2) if fn is score_configs else 5, dtype=bool), np.zeros(5, dtype=bool), 0)
    assert issubclass(DetectorInputError, BeliefgateError)


def test_single_sequence_scorers_reject_columns():
    for fn in (score_alarms, score_switches):
        with pytest.raises(DetectorInputError):
            fn(np.zeros((5, 2), dtype=bool), np.zeros(5, dtype=bool), 3)
    with pytest.raises(DetectorInputError):
        switch_windows(np.zeros((5, 2), dtype=bool), 3)
