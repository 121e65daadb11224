"""How well does beliefgate read real people? Skill inference on the 2019 human-human games.

For every converted game (:mod:`beliefgate.envs.human_data`) and each player in turn
as the partner, the online filter reads the partner's steps and its posterior at
step ``t`` (after the partner's action ``a_t``) is scored against the hindsight label
of that step (:mod:`beliefgate.envs.hindsight`); unlabelled steps are skipped.
Every method sees the same information (the states up to ``s_{t+1}``):

``filter``
    beliefgate's forward filter (the Gate's belief; hazard model) with the
    Overcooked controller, parameters chosen on the train split (:data:`HUMAN_PARAMS`).
``held_object``
    ``P(skill | partner's held object)`` counted per layout on the train split
    (add-one smoothing). In Overcooked the held object alone narrows the skill a
    lot: the bar to clear.
``last_completed``
    ``P(skill | the partner's last completed skill)`` counted per layout on the
    train split (the "partner tree" idea of Co-pi-tree: what follows what).
``nearest_target``
    uniform prior over the feasible skills, ``p(k) ∝ exp(beta * Q_k(s_t, a_t))``: the
    skill whose nearest target the partner is closest to after its action.
``one_step``
    (ablation) the filter's likelihood of the current action alone with a uniform
    prior over feasible skills: what the filter's memory adds.

Metrics (labelled steps only): MAP accuracy, mean log-loss ``-log p(label)``, Brier
score ``sum_k (p_k - [k = label])^2``, expected calibration error over
:data:`ECE_BINS` equal-width confidence bins, and ``n``.
"""

from __future__ import annotations
from beliefgate.errors import InputError

import io
import itertools
import json
import warnings
import zipfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.calibration import DEFAULT_BINS, reliability
from beliefgate.fileio import atomic_write
from beliefgate.calibration import scores as calibration_scores
from beliefgate.envs.overcooked.fitdata import q_and_evidence
from beliefgate.envs.overcooked.observer import OvercookedObserver
from beliefgate.envs.overcooked.tables import NUM_ACTIONS
from beliefgate.figures import pyplot, save_figure
from beliefgate.models.controllers.boltzmann import boltzmann_logprobs

#: controller and filter parameters of the human evaluation, chosen on the TRAIN split by
#: :func:`select_params` (minimum mean log-loss of the filter over the grid
#: :data:`PARAM_GRID`; docs/human_data.md lists the whole grid). Never tuned on test.
HUMAN_PARAMS: Dict[str, Any] = {"beta": 8.0, "epsilon": 0.6, "hazard": 0.2, "require_targets": False,
                                "nearest_beta": 0.25}
#: the grid :func:`select_params` searches (on the train split only)
PARAM_GRID: Dict[str, Tuple[Any, ...]] = {
    "beta": (0.5, 1.0, 2.0, 4.0, 8.0),
    "epsilon": (0.05, 0.1, 0.2, 0.4, 0.6),
    "hazard": (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5),
    "require_targets": (True, False),
}
#: the nearest-target baseline's own temperature, chosen on the train split too
NEAREST_BETA_GRID: Tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
METHODS: Tuple[str, ...] = ("filter", "held_object", "last_completed", "nearest_target", "one_step")
BASELINE_DESCRIPTIONS = {
    "filter": "beliefgate forward filter (Gate belief), hazard model",
    "held_object": "P(skill | held object), counted per layout on train",
    "last_completed": "P(skill | last completed skill), counted per layout on train",
    "nearest_target": "uniform prior, softmax(nearest_beta * -distance to nearest target after the action)",
    "one_step": "ablation: current action's likelihood only, uniform prior",
}
ECE_BINS = DEFAULT_BINS
#: add-one smoothing of the counted baselines
TABLE_ALPHA = 1.0
#: held-object codes
HELD = (None, "onion", "dish", "soup", "tomato")
_TRACK_VERSION = 2

Progress = Callable[[int, int, str], None]


class HumanEvalError(InputError):
    """Bad input to the human evaluation (unknown split, tuning on test, no labelled steps...)."""


# ----------------------------------------------------------------------------- per-partner arrays
@dataclass
class Track:
    """Everything the methods need about one partner in one game (``T`` steps, ``K`` skills, ``A`` actions).

    q : float32[T, K, A]   controller action values ``Q_k(s_t, a)`` of the partner
    mask : bool[T, A]      actions consistent with ``s_t -> s_{t+1}``
    weight : float[T]      tempering weight (0: nothing visible changed; 0.35: a put-down)
    completed : int[T]     skill visibly completed by ``a_t`` (-1 none)
    feasible : bool[T, K]  held-object requirement met and a reachable target (observer default)
    feasible_held : bool[T, K]  held-object requirement met (``require_targets=False``)
    held : int[T]          index into :data:`HELD` of the partner's held object in ``s_t``
    last_done : int[T]     last skill the partner completed before ``t`` (-1 none yet)
    label : int[T]         hindsight label (-1 unknown)
    """

    layout: str
    game: str
    partner: int
    q: np.ndarray
    mask: np.ndarray
    weight: np.ndarray
    completed: np.ndarray
    feasible: np.ndarray
    feasible_held: np.ndarray
    held: np.ndarray
    last_done: np.ndarray
    label: np.ndarray

    @property
    def num_steps(self) -> int:
        return len(self.label)

    def allowed(self, require_targets: bool = True) -> np.ndarray:
        """bool[T, K]: the feasibility the filter uses (with or without reachable targets)."""
        return self.feasible if require_targets else self.feasible_held

    def loglik(self, beta: float, epsilon: float) -> np.ndarray:
        """float[T, K]: tempered ``w_t * log sum_{a in mask_t} pi_hat(a | s_t, k)`` (0 where w_t = 0)."""
        lp = boltzmann_logprobs(self.q, beta, epsilon)
        masked = np.where(self.mask[:, None, :], lp, -np.inf)
        raw = np.logaddexp.reduce(masked, axis=2)
        w = self.weight[:, None]
        return np.where(w > 0, raw * w, 0.0)


def track_from_trajectory(traj, partner: int, layout: Optional[str] = None, game: str = "") -> Track:
    """The arrays of one partner of a trajectory log.

    The evidence (consistent actions, weight, completion, feasibility, ``Q``) is the
    gate's own, read through :func:`beliefgate.envs.overcooked.fitdata.q_and_evidence`:
    the one trajectory -> evidence path that fitting and replays use too.
    """
    layout = layout or traj.header.layout
    observer = OvercookedObserver(layout, partner=partner)
    controller = observer.controller
    library = observer.library
    names = library.names
    states = traj.states()
    if len(states) < len(traj.steps) + 1:
        raise HumanEvalError(f"{game or layout}: the log needs its final state")
    T, K = len(traj.steps), library.num_skills
    q = np.zeros((T, K, NUM_ACTIONS), np.float32)
    mask = np.zeros((T, NUM_ACTIONS), bool)
    weight = np.zeros(T)
    completed = np.full(T, -1, np.int64)
    feasible = np.zeros((T, K), bool)
    feasible_held = np.zeros((T, K), bool)
    held = np.zeros(T, np.int64)
    last_done = np.full(T, -1, np.int64)
    label = np.full(T, -1, np.int64)
    index = {n: i for i, n in enumerate(names)}
    last = -1
    for t, row in enumerate(traj.steps):
        s0 = states[t]
        qt, ev = q_and_evidence(observer, s0, states[t + 1])
        q[t], mask[t], weight[t], feasible[t] = qt, ev.action_mask, ev.weight, ev.feasible
        completed[t] = -1 if ev.completed is None else int(ev.completed)
        feas = controller.feasible(s0, partner, False)
        feasible_held[t] = feas if feas.any() else True
        h = s0.players[partner].held
        held[t] = HELD.index(h) if h in HELD else len(HELD) - 1
        last_done[t] = last
        if ev.completed is not None:
            last = int(ev.completed)
        lab = row.skills[partner] if partner < len(row.skills) else None
        label[t] = index.get(lab, -1) if lab is not None else -1
    return Track(layout, game, partner, q, mask, weight, completed, feasible, feasible_held, held, last_done, label)


def tracks_from_logs(paths: Sequence[Path], progress: Optional[Progress] = None,
                     labels: str = "log") -> List[Track]:
    """Both partners of every log (``labels="log"`` reads the skills column; ``"hindsight"`` recomputes it)."""
    from beliefgate.envs.hindsight import trajectory_labels
    from beliefgate.envs.trajlog import read_log

    out: List[Track] = []
    for i, path in enumerate(paths):
        if progress is not None:
            progress(i, len(paths), f"reading {Path(path).parent.name}/{Path(path).name}")
        traj = read_log(path)
        if labels == "hindsight":
            relabelled = trajectory_labels(traj)
            traj.steps = [r.model_copy(update={"skills": lab}) for r, lab in zip(traj.steps, relabelled)]
        for p in range(len(traj.steps[0].state.players) if traj.steps else 0):
            out.append(track_from_trajectory(traj, p, game=str(path)))
    if progress is not None:
        progress(len(paths), len(paths), "tracks ready")
    return out


def cached_tracks(split: str, cache=None, progress: Optional[Progress] = None) -> List[Track]:
    """Tracks of a converted split, cached next to the logs (rebuilt when the conversion changes)."""
    from beliefgate.envs.human_data import load_dataset

    ds = load_dataset(cache)
    if split not in ds.manifest["splits"]:
        raise HumanEvalError(f"unknown split {split!r}; available: {', '.join(ds.manifest['splits'])}")
    stamp = f"{ds.manifest['created']}|{ds.manifest['converter_version']}|{_TRACK_VERSION}"
    path = ds.root / "tracks" / f"{split}.npz"
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["stamp"]) == stamp:
                    return _unpack(z)
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:  # damaged: rebuild, say so
            TRACK_CACHE_REBUILDS["damaged"] += 1
            warnings.warn(f"track cache {path} is unreadable ({type(exc).__name__}); rebuilding it",
                          RuntimeWarning, stacklevel=2)
    tracks = tracks_from_logs(ds.logs(split), progress)
    buf = io.BytesIO()
    np.savez_compressed(buf, stamp=np.asarray(stamp), **_pack(tracks))
    atomic_write(path, buf.getvalue())
    return tracks


#: Rebuilds of a damaged track cache in this process (a counted fallback).
TRACK_CACHE_REBUILDS = {"damaged": 0}


_FIELDS = ("q", "mask", "weight", "completed", "feasible", "feasible_held", "held", "last_done", "label")


def _pack(tracks: Sequence[Track]) -> Dict[str, np.ndarray]:
    out = {f: np.concatenate([getattr(t, f) for t in tracks]) for f in _FIELDS}
    out["lengths"] = np.array([t.num_steps for t in tracks])
    out["layout"] = np.array([t.layout for t in tracks])
    out["game"] = np.array([t.game for t in tracks])
    out["partner"] = np.array([t.partner for t in tracks])
    return out


def _unpack(z) -> List[Track]:
    bounds = np.concatenate([[0], np.cumsum(z["lengths"])])
    arrays = {f: z[f] for f in _FIELDS}
    return [Track(str(z["layout"][i]), str(z["game"][i]), int(z["partner"][i]),
                  **{f: arrays[f][bounds[i]:bounds[i + 1]] for f in _FIELDS})
            for i in range(len(z["lengths"]))]


# ----------------------------------------------------------------------------- methods
def filter_posteriors(tracks: Sequence[Track], beta: float, epsilon: float, hazard: float,
                      alpha: float = 1.0, logliks: Optional[List[np.ndarray]] = None,
                      require_targets: bool = True) -> List[np.ndarray]:
    """Filtered posteriors ``p(z_t | a_{0:t})`` (float[T, K] per track), batched through ``filter_batch``.

    This is the belief the plug-in ``Gate`` computes step by step (hazard model) with an
    ``OvercookedObserver(require_targets=...)``.
    """
    from beliefgate.beliefs.filter import FilterParams, filter_batch, observations

    if not tracks:
        return []
    K = tracks[0].feasible.shape[1]
    T = max(t.num_steps for t in tracks)
    B = len(tracks)
    ll = np.zeros((B, T, K))
    feas = np.ones((B, T, K), bool)
    comp = np.full((B, T), -1, np.int32)
    valid = np.zeros((B, T), bool)
    for b, tr in enumerate(tracks):
        n = tr.num_steps
        ll[b, :n] = logliks[b] if logliks is not None else tr.loglik(beta, epsilon)
        feas[b, :n] = tr.allowed(require_targets)
        comp[b, :n] = tr.completed
        valid[b, :n] = True
    obs = observations(ll, feas, comp, valid, batched=True)
    res = filter_batch(FilterParams("hazard", hazard, alpha, None), obs)
    post = np.exp(np.asarray(res.log_posterior, np.float64))
    post /= post.sum(axis=2, keepdims=True)
    return [post[b, :tr.num_steps] for b, tr in enumerate(tracks)]


def _masked_softmax(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    s = np.where(allowed, scores, -np.inf)
    top = s.max(axis=1, keepdims=True)
    dead = ~np.isfinite(top[:, 0])
    s = np.where(dead[:, None], np.where(allowed, 0.0, -np.inf), s)
    top = np.where(dead[:, None], 0.0, top)
    e = np.exp(s - top)
    return e / e.sum(axis=1, keepdims=True)


def one_step_posteriors(track: Track, beta: float, epsilon: float, require_targets: bool = True) -> np.ndarray:
    """Ablation: ``p(k) ∝ feasible(k) * pi_hat(a_t | s_t, k)^w_t`` (no memory, uniform prior)."""
    return _masked_softmax(track.loglik(beta, epsilon), track.allowed(require_targets))


def nearest_target_posteriors(track: Track, beta: float, require_targets: bool = True) -> np.ndarray:
    """``p(k) ∝ feasible(k) exp(beta * max_{a in mask} Q_k(s_t, a))``: closest target after the action.

    ``-Q_k(s_t, a) - 1`` is the number of actions from the pose after ``a`` until the
    partner faces skill ``k``'s nearest target; a skill without a reachable target has
    a flat row (Q = 0) and, with ``require_targets``, is infeasible.
    """
    q = np.where(track.mask[:, None, :], track.q.astype(np.float64), -np.inf).max(axis=2)
    return _masked_softmax(beta * q, track.allowed(require_targets))


@dataclass
class CountTable:
    """``P(skill | key)`` counted on training tracks (add-``alpha`` smoothing; unseen key -> marginal)."""

    name: str
    key: str                     # Track attribute used as the key ("held" or "last_done")
    offset: int                  # added to the key to make it a row index
    probs: np.ndarray            # float[num_keys, K]
    counts: np.ndarray           # float[num_keys, K]
    marginal: np.ndarray         # float[K]

    @classmethod
    def fit(cls, name: str, key: str, offset: int, num_keys: int, tracks: Sequence[Track],
            alpha: float = TABLE_ALPHA) -> "CountTable":
        K = tracks[0].feasible.shape[1]
        counts = np.zeros((num_keys, K))
        for tr in tracks:
            known = tr.label >= 0
            np.add.at(counts, (getattr(tr, key)[known] + offset, tr.label[known]), 1.0)
        probs = (counts + alpha) / (counts + alpha).sum(axis=1, keepdims=True)
        total = counts.sum(axis=0)
        marginal = (total + alpha) / (total + alpha).sum()
        seen = counts.sum(axis=1) > 0
        probs[~seen] = marginal
        return cls(name, key, offset, probs, counts, marginal)

    def predict(self, track: Track) -> np.ndarray:
        idx = getattr(track, self.key) + self.offset
        inside = (idx >= 0) & (idx < len(self.probs))
        out = np.tile(self.marginal, (track.num_steps, 1))
        out[inside] = self.probs[idx[inside]]
        return out

    def to_dict(self, names: Sequence[str], key_names: Sequence[str]) -> Dict[str, Any]:
        return {"key": self.key, "alpha": TABLE_ALPHA,
                "table": {key_names[i]: {n: round(float(p), 4) for n, p in zip(names, row)}
                          for i, row in enumerate(self.probs) if self.counts[i].sum() > 0},
                "train_counts": {key_names[i]: int(self.counts[i].sum()) for i in range(len(self.probs))}}


@dataclass
class LayoutTables:
    """A counted baseline per layout (the pooled table for a layout without train games)."""

    pooled: CountTable
    per_layout: Dict[str, CountTable]

    def predict(self, track: Track) -> np.ndarray:
        return self.per_layout.get(track.layout, self.pooled).predict(track)

    def to_dict(self, names: Sequence[str], key_names: Sequence[str]) -> Dict[str, Any]:
        return {"pooled": self.pooled.to_dict(names, key_names),
                "per_layout": {lay: t.to_dict(names, key_names) for lay, t in sorted(self.per_layout.items())}}


def fit_baselines(train_tracks: Sequence[Track]) -> Dict[str, LayoutTables]:
    """The two counted baselines, learned per layout on the train split's tracks."""
    if not train_tracks:
        raise HumanEvalError("no training tracks to count the baselines on")
    K = train_tracks[0].feasible.shape[1]
    specs = {"held_object": ("held", 0, len(HELD)), "last_completed": ("last_done", 1, K + 1)}
    layouts = sorted({t.layout for t in train_tracks})
    out = {}
    for name, (key, offset, num_keys) in specs.items():
        pooled = CountTable.fit(name, key, offset, num_keys, train_tracks)
        per = {lay: CountTable.fit(name, key, offset, num_keys, [t for t in train_tracks if t.layout == lay])
               for lay in layouts}
        out[name] = LayoutTables(pooled, per)
    return out


# ----------------------------------------------------------------------------- metrics
def metrics(probs: np.ndarray, labels: np.ndarray, bins: int = ECE_BINS) -> Dict[str, float]:
    """Accuracy, log-loss, Brier, ECE and n over labelled rows (label >= 0) of ``probs`` [N, K].

    The scoring conventions are :mod:`beliefgate.calibration`'s (shared with ``beliefgate diagnose``).
    """
    probs = np.asarray(probs, np.float64)
    labels = np.asarray(labels)
    keep = labels >= 0
    return calibration_scores(probs[keep], labels[keep], bins)


# ----------------------------------------------------------------------------- the evaluation
@dataclass
class HumanEvalResult:
    """Scores per method, overall and per layout, with everything needed to plot and reproduce them."""

    split: str
    params: Dict[str, float]
    overall: Dict[str, Dict[str, float]]
    by_layout: Dict[str, Dict[str, Dict[str, float]]]
    config: Dict[str, Any] = field(default_factory=dict)
    #: method -> layout -> (confidence[N], correct[N]) of labelled steps (for reliability diagrams)
    calibration: Dict[str, Dict[str, Tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict, repr=False)
    #: method -> filter's advantage over it, with paired bootstrap intervals (:func:`paired_bootstrap`)
    comparison: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    #: method -> ``"overall"`` or layout -> 95% bootstrap interval of the accuracy over tracks
    #: (:func:`accuracy_intervals`)
    accuracy_ci: Dict[str, Dict[str, List[float]]] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"overall": self.overall, "by_layout": self.by_layout, "comparison": self.comparison,
                "accuracy_ci95": self.accuracy_ci, "split": self.split, "params": self.params,
                "config": self.config}


def method_posteriors(tracks: Sequence[Track], tables: Dict[str, LayoutTables],
                      params: Dict[str, float]) -> Dict[str, List[np.ndarray]]:
    """Posteriors of every method on every track."""
    beta, eps, h = params["beta"], params["epsilon"], params["hazard"]
    rt = bool(params.get("require_targets", True))
    logliks = [tr.loglik(beta, eps) for tr in tracks]
    out: Dict[str, List[np.ndarray]] = {
        "filter": filter_posteriors(tracks, beta, eps, h, logliks=logliks, require_targets=rt),
        "held_object": [tables["held_object"].predict(tr) for tr in tracks],
        "last_completed": [tables["last_completed"].predict(tr) for tr in tracks],
        "nearest_target": [nearest_target_posteriors(tr, params.get("nearest_beta", beta), rt) for tr in tracks],
        "one_step": [_masked_softmax(ll, tr.allowed(rt)) for ll, tr in zip(logliks, tracks)],
    }
    return out


def evaluate_tracks(tracks: Sequence[Track], train_tracks: Sequence[Track], params: Optional[Dict[str, float]] = None,
                    split: str = "test", config: Optional[Dict[str, Any]] = None,
                    bootstrap_seed: int = 0) -> HumanEvalResult:
    """Score the filter and the baselines on ``tracks``; the counted baselines are fitted on ``train_tracks``.

    ``result.comparison`` holds paired bootstrap intervals (over tracks, seeded by
    ``bootstrap_seed``) of the filter's advantage over each other method.
    """
    params = {**HUMAN_PARAMS, **(params or {})}
    if not tracks:
        raise HumanEvalError("no tracks to evaluate")
    if not any((t.label >= 0).any() for t in tracks):
        raise HumanEvalError("no labelled steps in the evaluation tracks")
    tables = fit_baselines(train_tracks)
    posts = method_posteriors(tracks, tables, params)
    layouts = sorted({t.layout for t in tracks})
    overall: Dict[str, Dict[str, float]] = {}
    by_layout: Dict[str, Dict[str, Dict[str, float]]] = {lay: {} for lay in layouts}
    calibration: Dict[str, Dict[str, Tuple[np.ndarray, np.ndarray]]] = {}
    labels_all = np.concatenate([t.label for t in tracks])
    for method, plist in posts.items():
        p_all = np.concatenate(plist)
        overall[method] = metrics(p_all, labels_all)
        calibration[method] = {}
        for lay in layouts:
            sel = [i for i, t in enumerate(tracks) if t.layout == lay]
            p = np.concatenate([plist[i] for i in sel])
            y = np.concatenate([tracks[i].label for i in sel])
            by_layout[lay][method] = metrics(p, y)
            keep = y >= 0
            pred = p[keep].argmax(axis=1)
            calibration[method][lay] = (p[keep][np.arange(keep.sum()), pred], pred == y[keep])
        keep = labels_all >= 0
        pred = p_all[keep].argmax(axis=1)
        calibration[method]["overall"] = (p_all[keep][np.arange(keep.sum()), pred], pred == labels_all[keep])
    from beliefgate.skills import load_builtin

    names = load_builtin("overcooked").names
    cfg = {"methods": {m: BASELINE_DESCRIPTIONS[m] for m in METHODS}, "ece_bins": ECE_BINS,
           "posterior": "filtered p(z_t | a_0..a_t), scored against the hindsight label of step t",
           "train_tracks": len(train_tracks), "eval_tracks": len(tracks),
           "baselines": {
               "held_object": tables["held_object"].to_dict(names, [h or "nothing" for h in HELD]),
               "last_completed": tables["last_completed"].to_dict(names, ["none yet", *names]),
           },
           **(config or {})}
    result = HumanEvalResult(split, params, overall, by_layout, cfg, calibration)
    result.comparison = paired_bootstrap(tracks, posts, seed=bootstrap_seed)
    result.accuracy_ci = accuracy_intervals(tracks, posts, seed=bootstrap_seed)
    return result


def accuracy_intervals(tracks: Sequence[Track], posts: Dict[str, List[np.ndarray]], resamples: int = 2000,
                       seed: int = 0) -> Dict[str, Dict[str, List[float]]]:
    """95% percentile intervals of each method's accuracy, overall and per layout, by resampling whole
    tracks (steps within a game are dependent); a layout with one track gets ``[nan, nan]``."""
    rng = np.random.default_rng(seed)
    n = np.array([(t.label >= 0).sum() for t in tracks], float)
    groups = {"overall": np.arange(len(tracks)),
              **{lay: np.array([i for i, t in enumerate(tracks) if t.layout == lay])
                 for lay in sorted({t.layout for t in tracks})}}
    draws = {g: rng.integers(0, len(sel), size=(resamples, len(sel))) for g, sel in groups.items() if len(sel) > 1}
    out: Dict[str, Dict[str, List[float]]] = {}
    for method, plist in posts.items():
        correct = np.array([np.sum(p[t.label >= 0].argmax(axis=1) == t.label[t.label >= 0])
                            for p, t in zip(plist, tracks)], float)
        out[method] = {}
        for g, sel in groups.items():
            if g not in draws:
                out[method][g] = [float("nan"), float("nan")]
                continue
            idx = sel[draws[g]]
            tot = n[idx].sum(axis=1)
            acc = np.divide(correct[idx].sum(axis=1), tot, out=np.full(len(tot), np.nan), where=tot > 0)
            out[method][g] = [float(x) for x in np.nanpercentile(acc, [2.5, 97.5])]
    return out


def paired_bootstrap(tracks: Sequence[Track], posts: Dict[str, List[np.ndarray]], reference: str = "filter",
                     resamples: int = 2000, seed: int = 0) -> Dict[str, Dict[str, Any]]:
    """Paired bootstrap over tracks (a partner in a game) of ``reference - method`` in accuracy and log-loss.

    Steps within a game are dependent, so whole tracks are resampled; returns the
    point difference and a 95% percentile interval for every other method.
    """
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(tracks), size=(resamples, len(tracks)))
    n = np.array([(t.label >= 0).sum() for t in tracks], float)

    def sums(plist):
        correct, loss = np.zeros(len(tracks)), np.zeros(len(tracks))
        for i, (p, t) in enumerate(zip(plist, tracks)):
            keep = t.label >= 0
            y = t.label[keep]
            q = p[keep]
            correct[i] = np.sum(q.argmax(axis=1) == y)
            loss[i] = -np.sum(np.log(np.clip(q[np.arange(len(y)), y], 1e-12, 1.0)))
        return correct, loss

    ref_c, ref_l = sums(posts[reference])
    out: Dict[str, Dict[str, Any]] = {}
    for method, plist in posts.items():
        if method == reference:
            continue
        correct, loss = sums(plist)
        dc, dl = ref_c - correct, ref_l - loss
        boot_acc = dc[idx].sum(axis=1) / n[idx].sum(axis=1)
        boot_ll = dl[idx].sum(axis=1) / n[idx].sum(axis=1)
        out[method] = {
            "accuracy_diff": float(dc.sum() / n.sum()),
            "accuracy_diff_ci95": [float(x) for x in np.percentile(boot_acc, [2.5, 97.5])],
            "log_loss_diff": float(dl.sum() / n.sum()),
            "log_loss_diff_ci95": [float(x) for x in np.percentile(boot_ll, [2.5, 97.5])],
            "resamples": resamples, "unit": "track (one partner in one game)", "seed": seed,
        }
    return out


def select_params(train_tracks: Sequence[Track], grid: Optional[Dict[str, Sequence[float]]] = None,
                  split: str = "train", progress: Optional[Progress] = None) -> Tuple[Dict[str, float], List[Dict]]:
    """Grid search of (beta, epsilon, hazard, require_targets) minimising the filter's mean log-loss on TRAIN.

    Then, with the chosen feasibility rule, the nearest-target baseline's temperature
    ``nearest_beta`` over :data:`NEAREST_BETA_GRID` (same criterion). Returns the best
    parameters and every grid point's scores. Refuses any split but
    ``"train"``: the test split is never used to choose parameters.
    """
    if split != "train":
        raise HumanEvalError(f"parameters are chosen on the train split only, not on {split!r}")
    grid = dict(PARAM_GRID if grid is None else grid)
    for key in ("beta", "epsilon", "hazard", "require_targets"):
        if not grid.get(key):
            raise HumanEvalError(f"grid needs at least one value for {key!r}")
    if not train_tracks:
        raise HumanEvalError("no training tracks to choose parameters on")
    labels = np.concatenate([t.label for t in train_tracks])
    rows: List[Dict[str, Any]] = []
    total = len(grid["beta"]) * len(grid["epsilon"]) * len(grid["hazard"]) * len(grid["require_targets"])
    done = 0
    for beta, eps in itertools.product(grid["beta"], grid["epsilon"]):
        logliks = [tr.loglik(beta, eps) for tr in train_tracks]
        for h, rt in itertools.product(grid["hazard"], grid["require_targets"]):
            if progress is not None:
                progress(done, total, f"beta={beta} epsilon={eps} hazard={h} require_targets={rt}")
            post = filter_posteriors(train_tracks, beta, eps, h, logliks=logliks, require_targets=bool(rt))
            m = metrics(np.concatenate(post), labels)
            rows.append({"beta": beta, "epsilon": eps, "hazard": h, "require_targets": bool(rt), **m})
            done += 1
    if progress is not None:
        progress(total, total, "grid done")
    best = min(rows, key=lambda r: (r["log_loss"], -r["accuracy"]))
    chosen = {k: best[k] for k in ("beta", "epsilon", "hazard", "require_targets")}
    nearest = []
    for b in grid.get("nearest_beta", NEAREST_BETA_GRID):
        post = [nearest_target_posteriors(tr, b, chosen["require_targets"]) for tr in train_tracks]
        nearest.append({"nearest_beta": b, **metrics(np.concatenate(post), labels)})
    chosen["nearest_beta"] = min(nearest, key=lambda r: (r["log_loss"], -r["accuracy"]))["nearest_beta"]
    return chosen, rows + nearest


# ----------------------------------------------------------------------------- plots and tables
def reliability_plots(result: HumanEvalResult, out_dir: str | Path, bins: int = ECE_BINS) -> List[Path]:
    """One reliability diagram PNG per layout (and one overall), every method on it."""
    plt = pyplot()

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for lay in [*sorted(result.by_layout), "overall"]:
        fig, ax = plt.subplots(figsize=(5.2, 5.0))
        ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="perfect calibration")
        for method in METHODS:
            if method not in result.calibration:
                continue
            conf, correct = result.calibration[method][lay]
            mean_conf, acc, count = reliability(conf, correct, bins)
            used = count > 0
            scores = result.overall[method] if lay == "overall" else result.by_layout[lay][method]
            ax.plot(mean_conf[used], acc[used], marker="o", ms=3, lw=1.4 if method == "filter" else 1,
                    label=f"{method} (acc {scores['accuracy']:.2f}, ECE {scores['ece']:.3f})")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence of the MAP skill")
        ax.set_ylabel("accuracy against hindsight labels")
        n = (result.overall if lay == "overall" else result.by_layout[lay])["filter"]["n"]
        ax.set_title(f"{lay} ({result.split} split, n={n})", fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        path = out_dir / f"reliability_{lay}.png"
        save_figure(fig, path)
        written.append(path)
    return written


def evaluate_split(split: str = "test", params: Optional[Dict[str, float]] = None, cache=None,
                   progress: Optional[Progress] = None, layouts: Optional[Iterable[str]] = None,
                   params_origin: Optional[str] = None) -> HumanEvalResult:
    """Evaluate on a converted split (``beliefgate data fetch-human`` first); baselines counted on train.

    ``params_origin`` says where ``params`` came from in the result's config (default: the
    train-split grid of docs/human_data.md without ``params``, ``"given"`` with them)."""
    from beliefgate.envs.human_data import SPLITS, load_dataset
    from beliefgate.envs.overcooked.layouts import resolve_layout

    if split not in SPLITS:
        raise HumanEvalError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    started = time.perf_counter()
    ds = load_dataset(cache)
    train = cached_tracks("train", cache, progress)
    tracks = train if split == "train" else cached_tracks(split, cache, progress)
    if layouts:
        want = {resolve_layout(x) for x in layouts}
        tracks = [t for t in tracks if t.layout in want]
    cfg = {"source": ds.manifest["source"]["requirement"], "sdist_sha256": ds.manifest["source"]["sha256"],
           "label_rule": ds.manifest["label_rule"],
           "params_origin": params_origin or ("train-split grid (docs/human_data.md)" if params is None else "given")}
    result = evaluate_tracks(tracks, train, params, split, cfg)
    result.config["eval_s"] = round(time.perf_counter() - started, 2)
    return result


def result_json(result: HumanEvalResult) -> str:
    def clean(x):
        if isinstance(x, float) and not np.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        if isinstance(x, (np.floating, np.integer)):
            return clean(x.item())
        return x

    return json.dumps(clean(result.to_dict()), indent=2)
