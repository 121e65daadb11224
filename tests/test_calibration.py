"""The shared calibration scores (beliefgate.calibration), checked against hand computations."""

import math

import numpy as np
import pytest

from beliefgate.calibration import (bin_index, expected_calibration_error, reliability, reliability_table,
                                    scores)


def test_bins_are_closed_on_the_right():
    conf = np.array([0.0, 0.1, 0.1000001, 0.5, 0.95, 1.0])
    assert bin_index(conf, 10).tolist() == [0, 0, 1, 4, 9, 9]


def test_hand_computed_scores():
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
    labels = np.array([0, 1, 1, 0])
    s = scores(probs, labels, bins=10)
    assert s["n"] == 4
    assert s["accuracy"] == pytest.approx(0.5)
    assert s["log_loss"] == pytest.approx(-(math.log(0.9) + math.log(0.4) + math.log(0.7) + math.log(0.2)) / 4)
    assert s["brier"] == pytest.approx((0.02 + 0.72 + 0.18 + 1.28) / 4)
    # bins: 0.9 -> (0.8, 0.9] right, 0.6 -> (0.5, 0.6] wrong, 0.7 -> (0.6, 0.7] right, 0.8 -> (0.7, 0.8] wrong
    assert s["ece"] == pytest.approx((0.1 + 0.6 + 0.3 + 0.8) / 4)


def test_reliability_table_lists_non_empty_bins_and_counts_add_up():
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.25, 1.0, 500)
    correct = rng.uniform(size=500) < conf
    table = reliability_table(conf, correct, bins=10)
    assert sum(r["count"] for r in table) == 500
    assert all(r["low"] < r["confidence"] <= r["high"] for r in table)
    mean_conf, acc, count = reliability(conf, correct, bins=10)
    assert np.isnan(mean_conf[0]) and count[0] == 0  # nothing below 0.25 lands in the first bin
    ece = sum(r["count"] / 500 * abs(r["accuracy"] - r["confidence"]) for r in table)
    assert expected_calibration_error(conf, correct, 10) == pytest.approx(ece)


def test_log_loss_floor_is_explicit_and_finite():
    s = scores(np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([1, 0]))
    assert s["log_loss"] == pytest.approx((-math.log(1e-12) - math.log(0.5)) / 2)
    assert s["floored"] == 1


def test_bad_shapes_and_labels_are_refused():
    with pytest.raises(ValueError, match="labels"):
        scores(np.full((2, 3), 1 / 3), np.array([0, 3]))
    with pytest.raises(ValueError, match=r"\[N, K\]"):
        scores(np.full((2, 3), 1 / 3), np.array([0, 1, 2]))
    assert scores(np.zeros((0, 3)), np.zeros(0, int))["n"] == 0
