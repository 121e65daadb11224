"""Calibration scores of categorical posteriors against labels, shared by ``models/`` and ``eval/``.

One convention everywhere (``beliefgate diagnose`` and ``beliefgate data eval``):

* the *confidence* of a row is its largest probability and the prediction its argmax;
* reliability bins are ``bins`` equal-width intervals of confidence, closed on the
  right: ``[0, 1/bins], (1/bins, 2/bins], ..., ((bins-1)/bins, 1]``, so a
  confidence exactly on an edge falls in the lower bin;
* ECE is the count-weighted mean over non-empty bins of ``|accuracy - mean confidence|``;
* Brier is the summed squared error against the one-hot label, averaged over rows;
* log loss is ``-mean log p(label)``, with ``p(label)`` floored at :data:`LOG_LOSS_FLOOR`
  so that a method giving the true label probability 0 (a counted baseline on an
  unseen key) scores ``-log(1e-12) = 27.6`` for that row instead of ``inf``.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

#: smallest probability of the true label counted in the log loss (see the module doc)
LOG_LOSS_FLOOR = 1e-12
#: default number of equal-width confidence bins
DEFAULT_BINS = 10


def bin_index(conf: np.ndarray, bins: int = DEFAULT_BINS) -> np.ndarray:
    """Bin of each confidence in ``[0, 1]`` (right-closed bins, see the module doc)."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    return np.clip(np.digitize(np.asarray(conf, np.float64), edges[1:-1], right=True), 0, bins - 1)


def reliability(conf: np.ndarray, correct: np.ndarray,
                bins: int = DEFAULT_BINS) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per bin: (mean confidence, accuracy, count); empty bins give NaN means and count 0."""
    conf = np.asarray(conf, np.float64)
    which = bin_index(conf, bins)
    count = np.bincount(which, minlength=bins).astype(float)
    conf_sum = np.bincount(which, weights=conf, minlength=bins)
    acc_sum = np.bincount(which, weights=np.asarray(correct, np.float64), minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        return conf_sum / count, acc_sum / count, count


def expected_calibration_error(conf: np.ndarray, correct: np.ndarray, bins: int = DEFAULT_BINS) -> float:
    """Count-weighted mean ``|accuracy - confidence|`` over the non-empty bins."""
    mean_conf, acc, count = reliability(conf, correct, bins)
    used = count > 0
    if not used.any():
        return float("nan")
    return float(np.sum(count[used] / count.sum() * np.abs(acc[used] - mean_conf[used])))


def reliability_table(conf: np.ndarray, correct: np.ndarray, bins: int = DEFAULT_BINS) -> List[dict]:
    """The non-empty bins as rows ``{"low", "high", "count", "confidence", "accuracy"}``."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    mean_conf, acc, count = reliability(conf, correct, bins)
    return [{"low": float(edges[b]), "high": float(edges[b + 1]), "count": int(count[b]),
             "confidence": float(mean_conf[b]), "accuracy": float(acc[b])}
            for b in range(bins) if count[b] > 0]


def scores(probs: np.ndarray, labels: np.ndarray, bins: int = DEFAULT_BINS) -> Dict[str, float]:
    """Accuracy, log loss, Brier, ECE, ``n`` and ``floored`` of ``probs [N, K]`` against ``labels [N]``.

    ``floored`` counts the rows whose label probability was below :data:`LOG_LOSS_FLOOR`
    (their log-loss term is capped at 27.6), so the cap is never silent.

    Raises ``ValueError`` on mismatched shapes or labels outside ``[0, K)``; an empty
    input gives NaN scores and ``n = 0``.
    """
    probs = np.asarray(probs, np.float64)
    labels = np.asarray(labels)
    if probs.ndim != 2 or labels.shape != probs.shape[:1]:
        raise ValueError(f"probs must be [N, K] and labels [N]; got {probs.shape} and {labels.shape}")
    n, num_classes = probs.shape
    if n == 0:
        return {"accuracy": float("nan"), "log_loss": float("nan"), "brier": float("nan"),
                "ece": float("nan"), "n": 0, "floored": 0}
    if labels.min() < 0 or labels.max() >= num_classes:
        raise ValueError(f"labels must lie in [0, {num_classes}); got {labels.min()}..{labels.max()}")
    rows = np.arange(n)
    conf, correct = confidence_and_correct(probs, labels)
    onehot = np.zeros_like(probs)
    onehot[rows, labels] = 1.0
    p_label = probs[rows, labels]
    return {
        "accuracy": float(correct.mean()),
        "log_loss": float(-np.log(np.maximum(p_label, LOG_LOSS_FLOOR)).mean()),
        "brier": float(((probs - onehot) ** 2).sum(axis=1).mean()),
        "ece": expected_calibration_error(conf, correct, bins),
        "n": int(n),
        "floored": int(np.sum(p_label < LOG_LOSS_FLOOR)),  # rows whose log loss the floor capped
    }


def confidence_and_correct(probs: np.ndarray, labels: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Each row's confidence (largest probability) and whether its argmax equals the label."""
    probs = np.asarray(probs, np.float64)
    pred = probs.argmax(axis=1)
    return probs[np.arange(len(pred)), pred], pred == np.asarray(labels)
