"""OverForge confidence kappa: the online posterior over branch utilities (SPEC §5).

A decision forms ``K`` branches ``b`` (strategy x first action). Their utilities are
independent a priori, ``U_b ~ Normal(mu0, sigma0^2)``; the evidence is

* pairwise judgments ``y`` with ``P(y = 1) = sigmoid((U_b - U_c) / tau)`` ("b better than c");
* rollout scores ``r ~ Normal(U_b, sigma_r^2 / d)`` of branch ``b`` imagined ``d`` steps ahead.

The online signal is the argmax probability ``P(argmax_c U_c = b | evidence)`` of every
branch, ``kappa`` = the largest of them, ``best`` = its branch, the *nucleus* (the smallest
set of branches whose argmax probabilities sum to ``>= nucleus_p``) and ``commit = kappa >=
theta``. Rollout rounds (:class:`RolloutRound`) extend only the nucleus, at most
``max_rounds`` of them. The generative model itself is :mod:`beliefgate.models.kappa`.

The posterior (deterministic; ``docs/kappa.md`` states and tests its error)
    * Prior and rollouts are Gaussian: they are conditioned on exactly (natural parameters).
    * Judgments are grouped by unordered pair ``{i, j}``; the pair's whole likelihood
      ``sigmoid(f/tau)^n_ij sigmoid(-f/tau)^n_ji`` in ``f = U_i - U_j`` gets one Gaussian
      expectation-propagation site ``exp(-p f^2 / 2 + nu f)``. A new judgment refreshes its
      pair's site against the cavity of the current approximation; the tilted moments are
      computed by composite Gauss-Legendre quadrature over the tilted density's range
      (pieces graded geometrically away from 0, 10 nodes each): within 4e-9 of adaptive
      quadrature even for skewed tilts.
    * Argmax probabilities, by the number of branches and the evidence:

      - ``K = 1``: 1.
      - ``K = 2``: ``P(U_0 > U_1)`` in closed form (``Phi``) without judgments, else by
        composite Gauss-Legendre quadrature of the exact one-dimensional posterior of
        ``U_0 - U_1`` (with a piece boundary at 0): exact to about 1e-9.
      - no judgments: the posterior is an exact diagonal Gaussian;
        ``P_b = E[prod_{c != b} Phi((U_b - m_c) / s_c)]`` by 64-node Gauss-Hermite
        quadrature over ``U_b`` (about 1e-8).
      - otherwise: a fixed quasi-random rule over the Gaussian approximation ``q`` (a
        scrambled Sobol set with its antithetic mirror, ``num_points`` points, fixed
        ``seed``). Each point contributes the *conditional* probability
        ``Phi((E[U_b | U_-b] - max_{c != b} U_c) / sd[U_b | U_-b])`` (Rao-Blackwellised:
        smooth, so the rule converges fast), and an importance-weighted control variate
        with the exact judgment likelihood, ``sum_i (w_i - 1/N) 1[argmax U_i = b]``
        (``w`` = normalised ``prod_pairs likelihood / site``), removes the bias of the
        Gaussian approximation. ``info.ess`` is the weights' effective sample fraction.

Everything is plain NumPy on a small immutable :class:`KappaState`:
``kappa_init(params, branches) -> state``, ``kappa_update(params, state, evidence) ->
(state, info)``, ``kappa_info(params, state) -> info``. :class:`Kappa` binds the
parameters and swaps the state after each step, so a step that raises leaves it as it was.
"""

from __future__ import annotations

import math
import threading
from functools import lru_cache
from pathlib import Path
from typing import Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.special import log_ndtr, ndtr, ndtri

from beliefgate.models.kappa import (  # errors and checks live with the model: beliefs build on models
    KappaDataError,
    PARAM_RANGES,
    BranchNameError,
    DepthError,
    DuplicateBranchError,
    EvidenceTypeError,
    ExtremeEvidenceError,
    JudgmentValueError,
    KappaInputError,
    KappaParamError,
    KappaStateError,
    NoBranchError,
    TooManyBranchesError,
    NonFiniteScoreError,
    NotInNucleusError,
    RoundLimitError,
    SelfJudgmentError,
    UnknownBranchError,
    judgment_outcome,
)
from beliefgate.models.kappa.data import (  # the one definition of a valid piece of evidence
    branch_index as _index,
    check_branch_names as _check_names,
    rollout_depth as _depth,
    rollout_score as _score,
)
from beliefgate.validation import CheckedModel

# --------------------------------------------------------------------------- parameters


#: default of :attr:`KappaParams.ess_points`: off (the rule's cost as before). 8192 is what meets the
#: NUTS criterion at every tau >= 0.01 (tests/test_kappa_sharp.py; docs/kappa.md, "Sharp likelihoods")
ESS_POINTS_DEFAULT = 0
#: the ess_points that tests/test_kappa_sharp.py checks against NUTS (about 8x the default rule's cost)
ESS_POINTS_ACCURATE = 8192


class KappaParamFields(BaseModel):
    """The fields of :class:`KappaParams` and their ranges (pydantic-validated)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    mu0: float = Field(0.0, ge=PARAM_RANGES["mu0"][0], le=PARAM_RANGES["mu0"][1],
                       description="prior mean of every branch utility")
    sigma0: float = Field(1.0, ge=PARAM_RANGES["sigma0"][0], le=PARAM_RANGES["sigma0"][1],
                          description="prior sd of every branch utility")
    tau: float = Field(0.5, ge=PARAM_RANGES["tau"][0], le=PARAM_RANGES["tau"][1],
                       description="judgment temperature: P(b over c) = sigmoid((U_b - U_c)/tau)")
    sigma_r: float = Field(1.0, ge=PARAM_RANGES["sigma_r"][0], le=PARAM_RANGES["sigma_r"][1],
                           description="rollout noise sd at depth 1 (sd/sqrt(d) at depth d)")
    theta: float = Field(0.6, gt=0.0, le=1.0, description="commit when kappa >= theta")
    nucleus_p: float = Field(0.9, gt=0.0, le=1.0, description="nucleus: smallest set with argmax mass >= p")
    max_rounds: int = Field(3, ge=1, le=64, description="rollout rounds at most (R)")
    # 2048: the smallest power of two whose error against NUTS is consistent with the NUTS
    # noise (docs/kappa.md: 512 points leave 8 of 247 probabilities outside 3 SE, 2048 leave 2)
    num_points: int = Field(2048, ge=64, le=16384, multiple_of=2,
                            description="points of the quasi-random rule (Sobol + antithetic mirror)")
    seed: int = Field(0, ge=0, lt=2 ** 32, description="scrambling seed of the quasi-random rule")
    # ESS-driven rule size (docs/kappa.md, "Sharp likelihoods"): at sharp tau the importance
    # weights spread and 2048 points leave 9 of 118 probabilities outside 3 NUTS SE; 8192 leaves 1.
    # Its worst case (16384 points a step) is the one the 8x enlargement already reached
    ess_points: int = Field(ESS_POINTS_DEFAULT, ge=0, le=16384,
                            description="grow the rule (powers of two, up to 16384 points) until its "
                                        "effective sample size (ESS fraction x points) reaches this; 0: off")


class KappaParams(CheckedModel, KappaParamFields):
    """Immutable, validated parameters of kappa (see ``docs/kappa.md``).

    Model: ``mu0`` in [-1e6, 1e6]; ``sigma0``, ``tau``, ``sigma_r`` in [1e-6, 1e6] (scales far
    outside would only overflow float64). Decision rule:
    ``theta`` and ``nucleus_p`` in (0, 1], ``max_rounds`` R >= 1. Numerics:
    ``num_points`` (even, 64..16384) and ``seed`` of the fixed quasi-random rule.
    A field outside its range raises :class:`KappaParamError` naming it and the value, on every
    way of building one (``KappaParams(...)``, ``replace``, ``model_validate``, ``from_json``).
    """

    error_type = KappaParamError

    def to_json(self, indent: Optional[int] = 2) -> str:
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "KappaParams":
        from beliefgate.fileio import DataSyntaxError, parse_data

        if not isinstance(text, (str, bytes)):
            raise KappaParamError(f"KappaParams JSON must be text, got {type(text).__name__}")
        try:
            data = parse_data(text.decode() if isinstance(text, bytes) else text, "json")
        except (DataSyntaxError, UnicodeDecodeError) as exc:
            raise KappaParamError(f"KappaParams JSON is not readable: {exc}") from None
        if not isinstance(data, dict):
            raise KappaParamError("KappaParams JSON must be an object")
        return cls(**data)

    def save(self, path: Union[str, Path]) -> Path:
        path = Path(path)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: Union[str, Path]) -> "KappaParams":
        """The parameters of a JSON file; a file that is missing, a folder, not UTF-8 text or not
        valid raises :class:`KappaParamError` (the reading errors name the file), as GateParams.load."""
        from beliefgate.fileio import read_text

        return cls.from_json(read_text(path, KappaParamError))

    @classmethod
    def from_fit(cls, path: Union[str, Path], point: str = "median", **overrides) -> "KappaParams":
        """Parameters from a kappa fit (``beliefgate fit --model kappa``): ``mu0``, ``sigma0``,
        ``tau``, ``sigma_r`` at the posterior ``point`` (or the value the fit pinned)."""
        from beliefgate.models.kappa import kappa_point_values, load_kappa_fit

        values = kappa_point_values(load_kappa_fit(path), point)
        return cls(**{**values, **overrides})


# --------------------------------------------------------------------------- evidence


class Judgment(NamedTuple):
    """``y = 1``: branch ``left`` was judged better than ``right`` (``y = 0``: the reverse)."""

    left: Union[str, int]
    right: Union[str, int]
    y: int


class Rollout(NamedTuple):
    """Branch ``branch`` imagined ``depth`` >= 1 steps ahead scored ``score``."""

    branch: Union[str, int]
    depth: int
    score: float


class RolloutRound(NamedTuple):
    """One rollout round: rollouts of distinct branches, counted as one of the ``max_rounds``.

    After the first round every branch must lie in the nucleus the previous step reported.
    """

    rollouts: tuple


Evidence = Union[Judgment, Rollout, RolloutRound]


# --------------------------------------------------------------------------- state and info


class KappaState(NamedTuple):
    """Everything kappa carries for one decision (immutable; arrays never change in place).

    Fields
    ------
    names : tuple[str]
        Branch names, in index order.
    roll_prec, roll_h : float[K]
        Rollout precision ``sum d / sigma_r^2`` and precision-weighted score sum per branch
        (the exact Gaussian part, with the prior).
    pairs : int[P, 2]
        Judged unordered pairs ``(i, j)``, ``i < j``.
    wins : int[P, 2]
        ``(n_ij, n_ji)``: judgments won by ``i`` and by ``j`` on each pair.
    site_p, site_nu : float[P]
        The pairs' EP sites ``exp(-p f^2 / 2 + nu f)`` in ``f = U_i - U_j``.
    mean, cov, lam : float[K], float[K, K], float[K, K]
        The Gaussian approximation ``q`` (prior x rollouts x pair sites): mean, covariance
        and precision, kept up to date by rank-one updates.
    design : float[P, K]
        Row ``k`` is ``e_i - e_j`` of pair ``k`` (so ``f = design @ U``).
    nucleus : tuple[int]
        The nucleus after the last step (round rule).
    rounds, num_judgments, num_rollouts, t : int
        Rollout rounds done; evidence counts; steps taken.
    refinements : int
        EP sweeps over every pair run because the importance weights degenerated
        (effective sample fraction below :data:`REFINE_ESS`); counted, reported in the info.
    """

    names: tuple
    roll_prec: np.ndarray
    roll_h: np.ndarray
    pairs: np.ndarray
    wins: np.ndarray
    site_p: np.ndarray
    site_nu: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    lam: np.ndarray
    design: np.ndarray
    nucleus: tuple
    rounds: int
    num_judgments: int
    num_rollouts: int
    t: int
    refinements: int = 0


class KappaInfo(NamedTuple):
    """What one step (or :func:`kappa_info`) reports.

    ``argmax_probs`` float[K] sums to one; ``kappa`` = its maximum; ``best`` its index
    (lowest on ties) and ``best_name``; ``nucleus`` / ``nucleus_names`` in decreasing
    probability; ``commit`` = ``kappa >= theta``; ``rounds`` used and ``rounds_left``;
    ``next``: ``"commit"``, ``"rollout"`` (extend the nucleus) or ``"stop"`` (rounds spent
    without confidence); ``mean``/``sd``: the Gaussian approximation's marginals of ``U``;
    ``method``: how the argmax probabilities were computed (``"single"``,
    ``"closed_form"``, ``"quadrature_1d"``, ``"product_quadrature"``, ``"qmc_rb_is"``);
    ``ess``: effective sample fraction of the importance weights (1 where unused);
    ``refinements``: EP sweeps run so far because the weights degenerated; ``points``: size
    of the rule used (``num_points``, enlarged up to :data:`MAX_POINTS` when ``ess *
    num_points`` falls below ``num_points / 2``, and further while ``ess * points`` is below
    ``params.ess_points``).
    """

    argmax_probs: np.ndarray
    kappa: float
    best: int
    best_name: str
    nucleus: tuple
    nucleus_names: tuple
    commit: bool
    rounds: int
    rounds_left: int
    next: str
    mean: np.ndarray
    sd: np.ndarray
    method: str
    ess: float
    t: int
    num_judgments: int
    num_rollouts: int
    refinements: int = 0
    points: int = 0

    def probs_dict(self, names: Sequence[str]) -> dict:
        return {n: float(p) for n, p in zip(names, self.argmax_probs)}

    def to_dict(self, names: Optional[Sequence[str]] = None) -> dict:
        """JSON-ready dict (arrays become lists)."""
        out = self._asdict()
        for key in ("argmax_probs", "mean", "sd"):
            out[key] = [float(v) for v in out[key]]
        out["nucleus"] = [int(i) for i in self.nucleus]
        out["nucleus_names"] = list(self.nucleus_names)
        if names is not None:
            out["argmax"] = self.probs_dict(names)
        return out


# --------------------------------------------------------------------------- numerics

_GH64_X, _GH64_W = np.polynomial.hermite_e.hermegauss(64)
_GH64_W = _GH64_W / _GH64_W.sum()
#: Gauss-Legendre nodes per piece of the tilted-density grid and the widest piece in Laplace
#: sds (measured: 600 random tilts, mu_c ~ N(0, 9), log v_c ~ U(-6, 3), log tau ~ U(-3, 1),
#: up to 7 + 7 judgments: moments within 4e-9 relative of scipy.integrate.quad at 1e-13)
GRID_NODES = 10
GRID_GAUSS_WIDTH = 4.0
#: most evenly spaced pieces of the tilted-density grid. A sharp likelihood (small tau) next to
#: a wide cavity makes the Laplace sd tiny against the range; the geometric cuts already
#: resolve the steep side near 0, so the flat side needs only range / MAX_PIECES (<= 0.3
#: cavity sds, the range being <= ~19 of them). Bounds the work of one update (without it,
#: tau = 1e-6 with sigma0 = 1e6 asked for 1.7e8 nodes)
MAX_PIECES = 64
_GL_X, _GL_W = np.polynomial.legendre.leggauss(GRID_NODES)
_GEO = 2.0 ** np.arange(64)
_ZERO = np.zeros(1)
_EMPTY_I = np.zeros((0, 2), dtype=np.int64)
_EMPTY_F = np.zeros(0)
for _a in (_EMPTY_I, _EMPTY_F):
    _a.setflags(write=False)


def _log_sigmoid(x):
    """``log sigmoid(x) = min(x, 0) - log1p(exp(-|x|))`` (stable for any ``x``)."""
    t = np.abs(x)
    np.negative(t, out=t)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    out = np.minimum(x, 0.0)
    out -= t
    return out


def _pair_loglik(f, n_ij: float, n_ji: float, tau: float):
    """``log [sigmoid(f/tau)^n_ij sigmoid(-f/tau)^n_ji]`` (``log sigmoid(-x) = log sigmoid(x) - x``)."""
    x = f / tau
    return (n_ij + n_ji) * _log_sigmoid(x) - n_ji * x


#: catch_warnings changes the process's warning filters: one thread at a time (a service runs
#: kappa updates on several threads)
_POINTS_LOCK = threading.Lock()


@lru_cache(maxsize=64)
def _points(k: int, num_points: int, seed: int) -> np.ndarray:
    """Fixed standard-normal rule in ``k`` dimensions: scrambled Sobol + antithetic mirror."""
    import warnings

    from scipy.stats import qmc

    half = num_points // 2
    with _POINTS_LOCK, warnings.catch_warnings():  # a non-power-of-two count only loses balance, not validity
        warnings.simplefilter("ignore", UserWarning)
        u = qmc.Sobol(k, scramble=True, rng=np.random.default_rng(seed)).random(half)
    z = ndtri(u)
    out = np.vstack([z, -z])
    out.setflags(write=False)
    return out


def warm_up() -> None:
    """Import what the first update with judgments needs (SciPy's quasi-random module, about
    0.5 s cold on an idle 2-core machine, seconds under load) now, so that a service's first
    request does not pay it."""
    from scipy.stats import qmc  # noqa: F401


def _tilted_log(f, mu_c: float, v_c: float, n_ij: float, n_ji: float, tau: float):
    return -0.5 * (f - mu_c) ** 2 / v_c + _pair_loglik(f, n_ij, n_ji, tau)


def _tilted_log_scalar(f: float, mu_c: float, v_c: float, n_ij: float, n_ji: float, tau: float) -> float:
    """:func:`_tilted_log` at one point in plain float arithmetic (no NumPy call overhead)."""
    x = f / tau
    log_sig = min(x, 0.0) - math.log1p(math.exp(-abs(x)))
    return -0.5 * (f - mu_c) ** 2 / v_c + (n_ij + n_ji) * log_sig - n_ji * x


def _tilted_grid(mu_c: float, v_c: float, n_ij: float, n_ji: float, tau: float, breaks: tuple = ()):
    """Nodes and normalised weights of the tilted density
    ``N(f; mu_c, v_c) sigmoid(f/tau)^n_ij sigmoid(-f/tau)^n_ji`` on a composite Gauss-Legendre grid.

    The density is log-concave: from its mode (Newton) the range is widened until the log
    density has dropped by 46 (a relative density of 1e-20) on both sides; the range is cut
    into pieces no wider than :data:`GRID_GAUSS_WIDTH` Laplace sds, cut at 0 and at
    ``+-tau 2^k`` (geometric grading away from the likelihood's poles at ``+-i pi tau``) and
    at any ``breaks``, with :data:`GRID_NODES` Gauss-Legendre nodes each. Returns
    ``(nodes, weights)``. The scalar steps (Newton, range search) are plain float
    arithmetic; only the grid itself is one vectorised evaluation.
    """
    if not (math.isfinite(mu_c) and math.isfinite(v_c) and v_c > 0.0):
        raise ExtremeEvidenceError(
            f"the evidence is too extreme for float64: a judged difference has cavity mean {mu_c!r} and "
            f"variance {v_c!r}", "evidence")
    n = n_ij + n_ji
    f = mu_c
    sd_c = math.sqrt(v_c)
    cap = 4.0 * tau + sd_c
    for _ in range(200):
        x = f / tau
        s = 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0
        g = -(f - mu_c) / v_c + (n * (1.0 - s) - n_ji) / tau
        hess = -1.0 / v_c - n * s * (1.0 - s) / (tau * tau)
        step = g / hess
        f -= max(-cap, min(cap, step))  # damped Newton
        if abs(step) < 1e-12 * (1.0 + abs(f)):
            break
    floor = _tilted_log_scalar(f, mu_c, v_c, n_ij, n_ji, tau) - 46.0
    if not (math.isfinite(f) and math.isfinite(floor) and math.isfinite(hess) and hess < 0.0):
        raise ExtremeEvidenceError("the evidence is too extreme for float64: the judged difference's "
                                   "posterior has no finite mode", "evidence")
    s_t = 1.0 / math.sqrt(-hess)  # Laplace sd; log-concave: the range is at least ~9.6 s_t wide
    ends = []
    for sign in (-1.0, 1.0):
        reach = 4.0 * s_t
        while _tilted_log_scalar(f + sign * reach, mu_c, v_c, n_ij, n_ji, tau) > floor:
            reach *= 2.0
        ends.append(f + sign * reach)
    lo, hi = ends
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ExtremeEvidenceError("the evidence is too extreme for float64: the judged difference's "
                                   "posterior has no finite range", "evidence")
    # pieces: no wider than GRID_GAUSS_WIDTH Laplace sds of the tilted density (its Gaussian
    # scale) and graded geometrically away from 0, where the likelihood's poles (f = +-i pi tau)
    # sit: [tau 2^k, tau 2^(k+1)] keeps every piece well inside its analyticity ellipse
    span = max(abs(lo), abs(hi))
    geo = _GEO[: max(0, min(len(_GEO), math.ceil(math.log2(span / tau)) + 1 if span > tau else 0))] * tau
    cuts = np.concatenate([np.linspace(lo, hi, min(MAX_PIECES, max(2, math.ceil((hi - lo) / (GRID_GAUSS_WIDTH * s_t)))) + 1),
                           _ZERO, geo, -geo, np.asarray(breaks, dtype=np.float64)])
    points = np.unique(cuts[(cuts >= lo) & (cuts <= hi)])
    a, b = points[:-1], points[1:]
    half = 0.5 * (b - a)
    nodes = (half[:, None] * _GL_X + (0.5 * (a + b))[:, None]).ravel()
    logw = np.log((half[:, None] * _GL_W).ravel()) + _tilted_log(nodes, mu_c, v_c, n_ij, n_ji, tau)
    w = np.exp(logw - logw.max())
    return nodes, w / w.sum()


def _tilted_moments(mu_c: float, v_c: float, n_ij: float, n_ji: float, tau: float):
    """Mean and variance of the tilted density of :func:`_tilted_grid`."""
    nodes, w = _tilted_grid(mu_c, v_c, n_ij, n_ji, tau)
    mean = float(w @ nodes)
    d = nodes - mean
    return mean, float(w @ (d * d))


def _base(params: KappaParams, state: KappaState):
    """Prior plus rollouts: diagonal precision and precision-weighted mean (exact)."""
    p0 = 1.0 / (params.sigma0 * params.sigma0)
    return p0 + state.roll_prec, params.mu0 * p0 + state.roll_h


def _gaussian(params: KappaParams, state: KappaState):
    """``(m, S, lam)`` of ``q`` rebuilt from scratch (prior x rollouts x pair sites).

    The state carries the same three, updated by rank-one steps; this rebuild is the
    reference a test compares them with.
    """
    prec, h = _base(params, state)
    lam = np.diag(prec) + (state.design.T * state.site_p) @ state.design
    h = h + state.design.T @ state.site_nu
    cov = np.linalg.inv(lam)
    cov = 0.5 * (cov + cov.T)
    return cov @ h, cov, lam


def _rank_one(state: KappaState, a_idx: tuple, a_sign: tuple, dp: float, dnu: float) -> tuple:
    """``q`` after its precision gains ``dp a a^T`` and its shift ``dnu a`` (Sherman-Morrison).

    ``a = sum_s sign_s e_{idx_s}`` (one or two entries).
    """
    m, cov, lam = state.mean, state.cov, state.lam
    sa = sum(sg * cov[:, i] for i, sg in zip(a_idx, a_sign))
    v = float(sum(sg * sa[i] for i, sg in zip(a_idx, a_sign)))
    mu = float(sum(sg * m[i] for i, sg in zip(a_idx, a_sign)))
    denom = 1.0 + dp * v
    new_cov = cov - (dp / denom) * np.outer(sa, sa)
    new_m = m + sa * ((dnu - dp * mu) / denom)
    new_lam = lam.copy()
    for i, si in zip(a_idx, a_sign):
        for j, sj in zip(a_idx, a_sign):
            new_lam[i, j] += dp * si * sj
    return _frozen(new_m), _frozen(new_cov), _frozen(new_lam)


def _site_update(params: KappaParams, state: KappaState, k: int) -> tuple[float, float]:
    """EP update of pair ``k``'s site against the cavity of the current ``q``: new ``(p, nu)``."""
    m, cov = state.mean, state.cov
    i, j = int(state.pairs[k, 0]), int(state.pairs[k, 1])
    mu = m[i] - m[j]
    v = cov[i, i] + cov[j, j] - 2.0 * cov[i, j]
    p_old, nu_old = float(state.site_p[k]), float(state.site_nu[k])
    if not (math.isfinite(mu) and math.isfinite(v) and v > 0.0 and 1.0 / v > p_old):
        raise ExtremeEvidenceError(
            f"the evidence is too extreme for float64: U_{state.names[i]} - U_{state.names[j]} has "
            f"posterior variance {float(v):.3g} against its site precision {p_old:.3g} (no positive "
            f"cavity left)", "evidence")
    prec_c = 1.0 / v - p_old
    v_c = 1.0 / prec_c
    mu_c = v_c * (mu / v - nu_old)
    n_ij, n_ji = float(state.wins[k, 0]), float(state.wins[k, 1])
    mean, var = _tilted_moments(mu_c, v_c, n_ij, n_ji, params.tau)
    return 1.0 / var - prec_c, mean / var - mu_c / v_c


def _probs_two(params: KappaParams, state: KappaState):
    """K = 2: exact posterior of ``D = U_0 - U_1`` (Gaussian part exact, pair likelihood exact)."""
    prec, h = _base(params, state)
    mean = h / prec
    var = 1.0 / prec
    mu_d = mean[0] - mean[1]
    v_d = var[0] + var[1]
    if not len(state.pairs):
        p0 = float(ndtr(mu_d / math.sqrt(v_d)))
        return np.array([p0, 1.0 - p0]), "closed_form"
    n01, n10 = float(state.wins[0, 0]), float(state.wins[0, 1])
    nodes, w = _tilted_grid(mu_d, v_d, n01, n10, params.tau, breaks=(0.0,))
    p1 = float(w[nodes < 0.0].sum())  # mass of D < 0: branch 1 wins (0 is a piece boundary)
    return np.array([1.0 - p1, p1]), "quadrature_1d"


def _probs_diagonal(params: KappaParams, state: KappaState):
    """No judgments: independent Gaussians, ``P_b = E[prod_{c != b} Phi((U_b - m_c)/s_c)]``."""
    prec, h = _base(params, state)
    m = h / prec
    s = 1.0 / np.sqrt(prec)
    u = m[:, None] + s[:, None] * _GH64_X[None, :]  # [K, G]: nodes of U_b
    log_cdf = log_ndtr((u[:, None, :] - m[None, :, None]) / s[None, :, None])
    k = len(m)
    log_cdf[np.arange(k), np.arange(k), :] = 0.0
    probs = (np.exp(log_cdf.sum(axis=1)) * _GH64_W).sum(axis=1)
    return probs / probs.sum(), "product_quadrature"


def _probs_qmc(params: KappaParams, state: KappaState, num_points: int):
    """Rao-Blackwellised quasi-random rule over ``q`` plus an importance-weighted control variate."""
    m, cov, lam = state.mean, state.cov, state.lam
    k = len(m)
    z = _points(k, num_points, params.seed)
    chol = np.linalg.cholesky(cov)
    n = z.shape[0]
    d = np.diag(lam)
    # one product gives the points and their conditional means: (u - m) lam = z chol^T lam
    both = z @ np.hstack([chol.T, (chol.T @ lam) / d])
    u = both[:, :k]
    u += m
    cond = u - both[:, k:]  # E[U_b | U_-b] at each point
    top = u.argmax(axis=1)
    part = np.partition(u, k - 2, axis=1)
    rest = np.where(u >= part[:, k - 1:], part[:, k - 2:k - 1], part[:, k - 1:])  # max over the others
    rb = np.ones(n) @ ndtr((cond - rest) * np.sqrt(d))
    rb /= rb.sum()
    x = u @ (state.design.T / params.tau)  # f / tau per point and pair
    tau = params.tau
    n_all = (state.wins[:, 0] + state.wins[:, 1]).astype(np.float64)
    lin = -state.wins[:, 1] - tau * state.site_nu
    quad = 0.5 * tau * tau * state.site_p
    # the log-weights are sums of terms that cancel; float64 resolves them only while the terms
    # stay below ~1e11 (relative error <= WEIGHT_TOLERANCE): beyond, refuse rather than answer noise
    x_max = max(float(x.max()), -float(x.min()))
    terms = x_max * (float(n_all.sum()) + float(np.abs(lin).sum())) + x_max * x_max * float(np.abs(quad).sum())
    if not terms * 4.0 * np.finfo(np.float64).eps <= WEIGHT_TOLERANCE:
        raise ExtremeEvidenceError(
            f"the evidence is too extreme for float64: the judged differences reach {x_max * tau:.3g} "
            f"(tau {tau:g}), where the likelihood ratio's terms ({terms:.3g}) cancel below float64's "
            f"resolution", "evidence")
    log_w = _log_sigmoid(x) @ n_all + x @ lin + (x * x) @ quad
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    correction = np.bincount(top, weights=w - 1.0 / n, minlength=k)
    ess = float(1.0 / (n * np.dot(w, w)))
    return rb + correction, ess


def _nucleus(probs: np.ndarray, p: float) -> tuple:
    order = np.argsort(-probs, kind="stable")
    cum = np.cumsum(probs[order])
    hit = np.flatnonzero(cum >= p)
    size = int(hit[0]) + 1 if len(hit) else len(order)  # rounding below p at p = 1: all
    return tuple(int(i) for i in order[:size])


def _check_state(state) -> KappaState:
    if not isinstance(state, KappaState):
        raise KappaStateError(f"state must be a KappaState (from kappa_init or kappa_update), got "
                              f"{type(state).__name__}", "state")
    return state


def kappa_info(params: KappaParams, state: KappaState) -> KappaInfo:
    """The argmax probabilities, kappa, nucleus and decision of ``state`` (no update)."""
    _check_params(params)
    _check_state(state)
    k = len(state.names)
    ess = 1.0
    points = params.num_points
    mean, sd = state.mean, np.sqrt(np.diag(state.cov))
    if k == 1:
        probs, method = np.ones(1), "single"
    elif k == 2:
        probs, method = _probs_two(params, state)
    elif not len(state.pairs):
        probs, method = _probs_diagonal(params, state)
    else:
        probs, ess = _probs_qmc(params, state, points)
        method = "qmc_rb_is"
        if ess < REFINE_ESS and points < MAX_POINTS:
            # degenerate weights (after the EP sweeps): the control variate is noisy; use 8x the points
            points = min(MAX_POINTS, 8 * params.num_points)
            probs, ess = _probs_qmc(params, state, points)
        if ess * points < params.ess_points and points < MAX_POINTS:
            # too few effective points for the accuracy asked: the smallest power-of-two multiple
            # of the rule whose expected effective size (at this ESS fraction) reaches ess_points
            grow = 2 ** math.ceil(math.log2(params.ess_points / (max(ess, 1e-6) * points)))
            points = min(MAX_POINTS, points * grow)
            probs, ess = _probs_qmc(params, state, points)
    if not (np.all(np.isfinite(probs)) and np.all(np.isfinite(mean)) and np.all(np.isfinite(sd))):
        raise ExtremeEvidenceError("the evidence is too extreme for float64: the posterior is not finite", "evidence")
    # the control variate can leave a value a rounding error below 0; the clip is explicit
    # and the vector is renormalised, so the probabilities sum to one
    probs = np.clip(probs, 0.0, None)
    probs = probs / probs.sum()
    probs.setflags(write=False)
    best = int(np.argmax(probs))
    kappa = float(probs[best])
    nucleus = _nucleus(probs, params.nucleus_p)
    commit = kappa >= params.theta
    left = max(0, params.max_rounds - state.rounds)
    nxt = "commit" if commit else ("rollout" if left > 0 else "stop")
    return KappaInfo(probs, kappa, best, state.names[best], nucleus, tuple(state.names[i] for i in nucleus),
                     commit, state.rounds, left, nxt, mean, sd, method, ess, state.t,
                     state.num_judgments, state.num_rollouts, state.refinements, points)


def monte_carlo_argmax(params: KappaParams, state: KappaState, num_samples: int = 200_000,
                       seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A slow, independent reference: ``(probs, standard errors)`` by self-normalised
    importance sampling from ``q`` with the exact judgment likelihood and plain
    pseudo-random draws (consistent: the error shrinks as ``1/sqrt(num_samples)``)."""
    rng = np.random.default_rng(seed)
    k = len(state.names)
    u = rng.standard_normal((num_samples, k)) @ np.linalg.cholesky(state.cov).T + state.mean
    if len(state.pairs):
        f = u @ state.design.T
        log_w = (_pair_loglik(f, state.wins[:, 0], state.wins[:, 1], params.tau)
                 - (-0.5 * state.site_p * f * f + state.site_nu * f)).sum(axis=1)
        w = np.exp(log_w - log_w.max())
    else:
        w = np.ones(num_samples)
    w /= w.sum()
    best = u.argmax(axis=1)
    probs = np.bincount(best, weights=w, minlength=k)
    se = np.array([math.sqrt(float(np.sum(w * w * ((best == b) - probs[b]) ** 2))) for b in range(k)])
    return probs, se


def _check_params(params) -> KappaParams:
    if not isinstance(params, KappaParams):
        raise KappaParamError(f"params must be a KappaParams, got {type(params).__name__}", "params")
    return params


# --------------------------------------------------------------------------- functional core


def kappa_init(params: KappaParams, branches: Sequence[str]) -> KappaState:
    """The state of a fresh decision over ``branches`` (distinct non-empty names)."""
    _check_params(params)
    names = _check_names(branches)
    k = len(names)
    zeros = _frozen(np.zeros(k))
    var = params.sigma0 * params.sigma0
    state = KappaState(names, zeros, zeros, _EMPTY_I, _EMPTY_I, _EMPTY_F, _EMPTY_F,
                       _frozen(np.full(k, float(params.mu0))), _frozen(np.eye(k) * var),
                       _frozen(np.eye(k) / var), _frozen(np.zeros((0, k))), tuple(range(k)), 0, 0, 0, 0)
    return state._replace(nucleus=kappa_info(params, state).nucleus)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _add_judgment(params: KappaParams, state: KappaState, ev: Judgment) -> KappaState:
    b = _index(state, ev.left, "left")
    c = _index(state, ev.right, "right")
    y = judgment_outcome(ev.y)
    if b == c:
        raise SelfJudgmentError(f"branch {state.names[b]!r} cannot be judged against itself", "right")
    winner = b if y == 1 else c
    i, j = min(b, c), max(b, c)
    pairs, wins, design = state.pairs, state.wins, state.design
    hit = np.flatnonzero((pairs[:, 0] == i) & (pairs[:, 1] == j)) if len(pairs) else ()
    if len(hit):
        k = int(hit[0])
        wins = wins.copy()
        site_p, site_nu = state.site_p.copy(), state.site_nu.copy()
    else:
        k = len(pairs)
        pairs = np.vstack([pairs, [[i, j]]])
        wins = np.vstack([wins, [[0, 0]]])
        row = np.zeros((1, len(state.names)))
        row[0, i], row[0, j] = 1.0, -1.0
        design = _frozen(np.vstack([design, row]))
        site_p, site_nu = np.append(state.site_p, 0.0), np.append(state.site_nu, 0.0)
    wins[k, 0 if winner == i else 1] += 1
    trial = state._replace(pairs=pairs, wins=wins, design=design, site_p=site_p, site_nu=site_nu)
    p, nu = _site_update(params, trial, k)
    if not (math.isfinite(p) and math.isfinite(nu)):
        raise ExtremeEvidenceError("the judgments are too extreme for float64 (non-finite site)", "y")
    mean, cov, lam = _rank_one(trial, (i, j), (1.0, -1.0), p - site_p[k], nu - site_nu[k])
    site_p[k], site_nu[k] = p, nu
    return trial._replace(pairs=_frozen(pairs), wins=_frozen(wins), site_p=_frozen(site_p),
                          site_nu=_frozen(site_nu), mean=mean, cov=cov, lam=lam,
                          num_judgments=state.num_judgments + 1)


def _rollout_terms(state: KappaState, ev: Rollout, params: KappaParams) -> tuple[int, float, float]:
    b = _index(state, ev.branch, "branch")
    d = _depth(ev.depth)
    r = _score(ev.score)
    prec = d / (params.sigma_r * params.sigma_r)
    return b, prec, prec * r


def _apply_rollouts(state: KappaState, terms) -> KappaState:
    roll_prec, roll_h = state.roll_prec.copy(), state.roll_h.copy()
    new = state
    for b, prec, ph in terms:
        roll_prec[b] += prec
        roll_h[b] += ph
        mean, cov, lam = _rank_one(new, (b,), (1.0,), prec, ph)
        new = new._replace(mean=mean, cov=cov, lam=lam)
    if not all(np.all(np.isfinite(a)) for a in (roll_prec, roll_h, new.mean, new.cov)):
        raise NonFiniteScoreError("rollout evidence overflows float64 (score or depth too large)", "score")
    return new._replace(roll_prec=_frozen(roll_prec), roll_h=_frozen(roll_h),
                        num_rollouts=state.num_rollouts + len(terms))


def _round(params: KappaParams, state: KappaState, ev: RolloutRound) -> KappaState:
    rollouts = ev.rollouts
    if not isinstance(rollouts, (tuple, list)) or not rollouts:
        raise EvidenceTypeError("a rollout round needs at least one Rollout", "rollouts")
    if state.rounds >= params.max_rounds:
        raise RoundLimitError(f"all {params.max_rounds} rollout rounds are used; commit or stop", "rollouts")
    terms, seen = [], set()
    for r in rollouts:
        if not isinstance(r, Rollout):
            raise EvidenceTypeError(f"a rollout round holds Rollouts, got {type(r).__name__}", "rollouts")
        term = _rollout_terms(state, r, params)
        if term[0] in seen:
            raise DuplicateBranchError(f"branch {state.names[term[0]]!r} appears twice in one round", "rollouts")
        if state.rounds > 0 and term[0] not in state.nucleus:
            raise NotInNucleusError(
                f"round {state.rounds + 1} extends only the nucleus {[state.names[i] for i in state.nucleus]}, "
                f"not {state.names[term[0]]!r}", "rollouts")
        seen.add(term[0])
        terms.append(term)
    return _apply_rollouts(state, terms)._replace(rounds=state.rounds + 1)


def kappa_update(params: KappaParams, state: KappaState, evidence: Evidence) -> tuple[KappaState, KappaInfo]:
    """Condition on one piece of evidence; returns the new state and its :class:`KappaInfo`.

    Validates everything first: on any error (a :class:`KappaInputError` subclass) the
    input ``state`` is untouched (it is immutable anyway) and nothing is returned.
    """
    _check_params(params)
    _check_state(state)
    try:
        return _update(params, state, evidence)
    except KappaInputError:
        raise
    except (ArithmeticError, np.linalg.LinAlgError, ValueError) as exc:
        # float64 broke down on evidence too extreme for it (a math domain error, a
        # covariance no longer positive definite): refused like any bad input, state unchanged
        raise ExtremeEvidenceError(f"the evidence is too extreme for float64 ({type(exc).__name__}: {exc})",
                                   "evidence") from exc


def _update(params: KappaParams, state: KappaState, evidence: Evidence) -> tuple[KappaState, KappaInfo]:
    if isinstance(evidence, Judgment):
        new = _add_judgment(params, state, evidence)
    elif isinstance(evidence, Rollout):
        new = _apply_rollouts(state, [_rollout_terms(state, evidence, params)])
    elif isinstance(evidence, RolloutRound):
        new = _round(params, state, evidence)
    else:
        raise EvidenceTypeError(f"evidence must be a Judgment, Rollout or RolloutRound (`from beliefgate import "
                                f"Judgment, Rollout`), got {type(evidence).__name__}", "evidence")
    new = new._replace(t=state.t + 1)
    info = kappa_info(params, new)
    sweeps = 0
    while info.ess < REFINE_ESS and sweeps < MAX_SWEEPS:
        new = _ep_sweep(params, new)._replace(refinements=new.refinements + 1)
        info = kappa_info(params, new)
        sweeps += 1
    return new._replace(nucleus=info.nucleus), info


#: largest relative error of an importance log-weight the argmax rule accepts (float64
#: rounding of its terms); beyond it the step raises ExtremeEvidenceError
WEIGHT_TOLERANCE = 1e-4
#: below this effective sample fraction of the importance weights, ``kappa_update`` runs
#: EP sweeps over every pair (at most :data:`MAX_SWEEPS` per update) and recomputes
REFINE_ESS = 0.5
MAX_SWEEPS = 2
#: largest quasi-random rule kappa_info enlarges to when the importance weights degenerate
MAX_POINTS = 16384


def _ep_sweep(params: KappaParams, state: KappaState) -> KappaState:
    """One sequential EP sweep: every pair's site refreshed against its cavity."""
    site_p, site_nu = state.site_p.copy(), state.site_nu.copy()
    for k in range(len(state.pairs)):
        st = state._replace(site_p=site_p, site_nu=site_nu)
        p, nu = _site_update(params, st, k)
        if not (math.isfinite(p) and math.isfinite(nu)):
            raise ExtremeEvidenceError("the judgments are too extreme for float64 (non-finite site)", "y")
        i, j = int(state.pairs[k, 0]), int(state.pairs[k, 1])
        mean, cov, lam = _rank_one(st, (i, j), (1.0, -1.0), p - site_p[k], nu - site_nu[k])
        site_p = site_p.copy()
        site_nu = site_nu.copy()
        site_p[k], site_nu[k] = p, nu
        state = state._replace(mean=mean, cov=cov, lam=lam)
    return state._replace(site_p=_frozen(site_p), site_nu=_frozen(site_nu))


# --------------------------------------------------------------------------- the convenience class


class Kappa:
    """Online kappa for one decision: ``Kappa(["a", "b", "c"], KappaParams(...))``.

    ``judge``/``rollout``/``round``/``update`` condition on evidence and return the new
    :class:`KappaInfo`; a call that raises leaves the object unchanged. Picklable.
    """

    def __init__(self, branches: Sequence[str], params: Optional[KappaParams] = None):
        params = KappaParams() if params is None else _check_params(params)
        self._params = params
        self._state = kappa_init(params, branches)
        self._info = kappa_info(params, self._state)
        self._log: list = []

    # ----------------------------------------------------------------- evidence

    def update(self, evidence: Evidence) -> KappaInfo:
        """Condition on a :class:`Judgment`, :class:`Rollout` or :class:`RolloutRound`."""
        state, info = kappa_update(self._params, self._state, evidence)
        self._state, self._info = state, info
        self._log.append(evidence_record(state.names, evidence))
        return info

    def update_many(self, evidence: Sequence) -> KappaInfo:
        """Condition on several pieces of evidence, all or nothing (one error: no change)."""
        if isinstance(evidence, (str, bytes)) or not isinstance(evidence, Sequence) or not evidence:
            raise EvidenceTypeError("update_many takes a non-empty sequence of evidence", "evidence")
        state, info, log = self._state, self._info, list(self._log)
        for index, ev in enumerate(evidence):
            try:
                state, info = kappa_update(self._params, state, ev)
            except KappaInputError as exc:
                exc.index = index  # which piece: a service names it in its error's location
                raise
            log.append(evidence_record(state.names, ev))
        self._state, self._info, self._log = state, info, log
        return info

    def judge(self, left, right, y) -> KappaInfo:
        """``y = 1``: ``left`` judged better than ``right`` (0: ``right`` better)."""
        return self.update(Judgment(left, right, y))

    def rollout(self, branch, depth, score) -> KappaInfo:
        """Score ``score`` of ``branch`` imagined ``depth`` steps ahead (not counted as a round)."""
        return self.update(Rollout(branch, depth, score))

    def round(self, scores: Mapping, depth=None) -> KappaInfo:
        """One rollout round: ``{branch: score}`` at ``depth`` (default: the round's number)."""
        if not isinstance(scores, Mapping):
            raise EvidenceTypeError(f"round() takes a mapping branch -> score, got {type(scores).__name__}",
                                    "rollouts")
        d = self._state.rounds + 1 if depth is None else depth
        return self.update(RolloutRound(tuple(Rollout(b, d, s) for b, s in scores.items())))

    def restore(self, state: KappaState) -> None:
        """Put back a state this object returned earlier (from :attr:`state`): the evidence
        log is cut back to it and the read-outs recomputed. Raises
        :class:`~beliefgate.models.kappa.KappaStateError` for a state of other branches, one
        ahead of this object's log, or one its log did not reach (checked by replaying the log
        up to the state's step: the state and the log a fit reads always agree)."""
        if not isinstance(state, KappaState) or state.names != self._state.names:
            raise KappaStateError(f"restore() takes a KappaState of these branches {list(self._state.names)}")
        if state.t > len(self._log):
            raise KappaStateError(f"restore(): the state is at step {state.t}, "
                                  f"this object has logged only {len(self._log)} steps")
        # the current state is what the whole log reached (from_log's case): replay only for an earlier step
        reached = self._state if state.t == self._state.t else kappa_init(self._params, self._state.names)
        for rec in self._log[reached.t:state.t]:
            reached, _ = kappa_update(self._params, reached, evidence_from_record(rec))
        if not _same_state(reached, state):
            raise KappaStateError(f"restore(): the state at step {state.t} is not the one this object's "
                                  f"evidence log reached (another decision's state, or other parameters)")
        self._state = state
        self._info = kappa_info(self._params, state)
        self._log = self._log[:state.t]

    @classmethod
    def from_log(cls, branches: Sequence[str], params: Optional[KappaParams], log: Sequence[Mapping],
                 state: Optional[KappaState] = None) -> "Kappa":
        """A Kappa rebuilt from its :attr:`log` (records of :func:`evidence_record`), all or
        nothing; with ``state`` (one this log reached, e.g. a committed state) put back
        exactly with :meth:`restore`."""
        kappa = cls(branches, params)
        if log:
            kappa.update_many([evidence_from_record(r) for r in log])
        if state is not None:
            kappa.restore(state)
        return kappa

    def reset(self) -> None:
        """Forget the evidence (same branches and parameters)."""
        self._state = kappa_init(self._params, self._state.names)
        self._info = kappa_info(self._params, self._state)
        self._log = []

    # ----------------------------------------------------------------- read-outs

    @property
    def params(self) -> KappaParams:
        return self._params

    @property
    def state(self) -> KappaState:
        return self._state

    @property
    def info(self) -> KappaInfo:
        return self._info

    @property
    def log(self) -> tuple:
        """The evidence applied so far, one plain record (:func:`evidence_record`) per step."""
        return tuple(self._log)


    @property
    def branches(self) -> tuple:
        return self._state.names

    @property
    def argmax_probs(self) -> dict:
        """``{branch: P(argmax U = branch | evidence)}``, sums to one."""
        return self._info.probs_dict(self._state.names)

    @property
    def kappa(self) -> float:
        return self._info.kappa

    @property
    def best(self) -> str:
        return self._info.best_name

    @property
    def nucleus(self) -> list:
        return list(self._info.nucleus_names)

    @property
    def commit(self) -> bool:
        return self._info.commit

    @property
    def rounds(self) -> int:
        return self._state.rounds

    def to_record(self, decision: Optional[str] = None, **extra) -> dict:
        """This decision as one line of the decisions JSONL format (``docs/kappa.md``)."""
        judgments = [e for e in self._log if "y" in e]
        rollouts = [r for e in self._log for r in (e["round"] if "round" in e else [e] if "depth" in e else [])]
        out = {"branches": list(self._state.names), "judgments": judgments, "rollouts": rollouts,
               "kappa": self._info.kappa, "best": self._info.best_name}
        if decision is not None:
            out["decision"] = decision
        clash = sorted(set(extra) & (set(out) | {"decision"}))
        if clash:  # a record whose evidence was replaced would be fitted as if it were the decision's
            raise KappaDataError(f"to_record: {', '.join(clash)} would replace the record's own field(s); "
                                 "give extra fields other names")
        out.update(extra)
        return out

    def __repr__(self) -> str:
        return (f"Kappa({list(self._state.names)!r}, kappa={self._info.kappa:.3f}, best={self.best!r}, "
                f"commit={self.commit})")

    def __getstate__(self) -> dict:
        return {"params": self._params.to_json(indent=None), "state": self._state, "log": self._log}

    def __setstate__(self, data: dict) -> None:
        self._params = KappaParams.from_json(data["params"])
        self._state = data["state"]
        self._log = list(data.get("log", []))
        self._info = kappa_info(self._params, self._state)


def _same_state(a: KappaState, b: KappaState) -> bool:
    """Field by field, arrays exactly (the updates are deterministic)."""
    if type(b) is not KappaState:
        return False
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.shape == y.shape
                    and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


def evidence_record(names: Sequence[str], ev: Evidence) -> dict:
    """One piece of evidence as the plain record of the decisions format (``docs/kappa.md``):
    ``{"left", "right", "y"}``, ``{"branch", "depth", "score"}`` or ``{"round": [rollouts]}``,
    branches by name. What :attr:`Kappa.log` holds, what the service snapshots and what
    ``beliefgate fit --model kappa`` reads; :func:`evidence_from_record` is its inverse."""
    def name(ref):
        return ref if isinstance(ref, str) else names[int(ref)]

    if isinstance(ev, Judgment):
        return {"left": name(ev.left), "right": name(ev.right), "y": int(ev.y)}
    if isinstance(ev, Rollout):
        return {"branch": name(ev.branch), "depth": int(ev.depth), "score": float(ev.score)}
    if isinstance(ev, RolloutRound):
        return {"round": [evidence_record(names, r) for r in ev.rollouts]}
    raise EvidenceTypeError(f"evidence must be a Judgment, Rollout or RolloutRound, got {type(ev).__name__}",
                            "evidence")


def evidence_from_record(rec: Mapping) -> Evidence:
    """The evidence object of a record written by :func:`evidence_record` (values are
    validated when the evidence is applied, not here)."""
    if not isinstance(rec, Mapping):
        raise EvidenceTypeError(f"an evidence record is an object, got {type(rec).__name__}", "evidence")
    def fields(r: Mapping, names: tuple, what: str) -> list:
        if not isinstance(r, Mapping):
            raise EvidenceTypeError(f"a {what} record is an object {{{', '.join(names)}}}, got {r!r}", "evidence")
        missing = [n for n in names if n not in r]
        extra = sorted(set(r) - set(names))
        if missing or extra:
            raise EvidenceTypeError(f"{what} record {dict(r)!r}: " + "; ".join(
                ([f"lacks {', '.join(missing)}"] if missing else []) + ([f"unknown {', '.join(extra)}"] if extra else [])),
                "evidence")
        return [r[n] for n in names]

    if "round" in rec:
        rollouts = rec["round"]
        if set(rec) != {"round"} or not isinstance(rollouts, (list, tuple)):
            raise EvidenceTypeError(f"a round record is {{\"round\": [rollout records]}}, got {dict(rec)!r}", "evidence")
        return RolloutRound(tuple(Rollout(*fields(r, ("branch", "depth", "score"), "rollout")) for r in rollouts))
    if {"left", "right", "y"} & set(rec):
        return Judgment(*fields(rec, ("left", "right", "y"), "judgment"))
    return Rollout(*fields(rec, ("branch", "depth", "score"), "rollout"))


__all__ = [
    "KappaInputError",
    "UnknownBranchError",
    "SelfJudgmentError",
    "JudgmentValueError",
    "NonFiniteScoreError",
    "DepthError",
    "DuplicateBranchError",
    "NoBranchError",
    "TooManyBranchesError",
    "BranchNameError",
    "KappaParamError",
    "EvidenceTypeError",
    "RoundLimitError",
    "NotInNucleusError",
    "KappaParamFields",
    "KappaParams",
    "Judgment",
    "Rollout",
    "RolloutRound",
    "KappaState",
    "KappaInfo",
    "kappa_init",
    "kappa_update",
    "kappa_info",
    "monte_carlo_argmax",
    "evidence_record",
    "evidence_from_record",
    "Kappa",
]
