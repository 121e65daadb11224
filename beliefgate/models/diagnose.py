"""Diagnose a fit: convergence, posterior predictive check, calibration of the filter.

:func:`diagnose` reads an InferenceData written by :func:`beliefgate.models.fit.fit`
and returns a :class:`Diagnosis`:

* **summary** (``arviz.summary``, 94% HDI): mean, sd, HDI, ``ess_bulk``,
  ``ess_tail``, ``r_hat`` per parameter (``beta[skill]`` when per skill);
* **warnings**: ``r_hat > 1.01``, ``ess_bulk`` or ``ess_tail < 400``, any divergent
  transition, fewer than two chains, and a failed predictive check;
* **posterior predictive check** (:func:`predictive_check`) of the action
  frequencies per *skill-state bucket*. A step's bucket is the set of skills
  feasible in its state (in Overcooked: what the player holds and which targets
  exist). For a posterior draw ``theta`` the model predicts each step's action
  one step ahead, ``p(a_t | a_{<t}, theta) = sum_k p(z_t = k | a_{<t}) pi_hat(a | s_t, k)``
  (the filter's predicted belief: exactly what the gate works with, for both the
  hazard and the windowed model), so the expected counts ``E`` per bucket are
  exact and a replication draws one action per step. Two views of the actions:

  - ``skill``: each action classed relative to the skill the model predicts at
    that step (the MAP of the predicted belief): *toward* it (maximises its
    ``Q``), *toward another feasible skill*, or *neither*. A model that misses
    switches (e.g. ``h`` fixed at 0 on a switching partner) predicts too few
    "toward another skill" actions and too many "neither" ones (it explains the
    switches as noise): this view catches it where raw frequencies cannot;
  - ``primitive``: the actions themselves (north, ..., interact).

  The discrepancy is Pearson's ``X^2 = sum (n - E)^2 / E`` over (bucket, class)
  cells with ``E >= 1``; its posterior predictive p-value
  ``ppp = P(X^2(rep) >= X^2(obs))`` is near 0 when the observed frequencies are
  further from the model than its own replications (a warning below 0.05). Also
  reported: the count-weighted total-variation distance between observed and
  predicted frequencies. Steps with weight 0 (STAY in Overcooked) are left out on
  both sides: replicated actions are drawn from the predictive renormalised over
  the non-excluded actions;
* **calibration** (:func:`calibration`, when the data carry true or hindsight
  skills): the filtered posterior ``p(z_t | a_{0:t})`` at the fitted point
  estimate (and, for reference, at the package defaults) scored against the true
  skill: MAP accuracy, Brier score, log loss, top-label expected calibration error
  and a reliability table.

:func:`write_plots` draws trace, rank, predictive-check and reliability plots
(matplotlib, Agg).
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Union

import numpy as np

from beliefgate.calibration import confidence_and_correct, reliability_table
from beliefgate.calibration import scores as calibration_scores
from beliefgate.figures import pyplot, save_figure
from beliefgate.models.transitions import unused_params
from beliefgate.models.data import FitData
from beliefgate.models.fit import (FitConfig, FitError, fit_config, fit_record, model_loglik, parameter_draws, point_values,
                                  predictive_replications, prepare)
from beliefgate.models.fitio import REPLICATION_ATTR, stored_replication_record
from beliefgate.models.predictive import SKILL_CLASSES, filter_pass, replicable, run_checks, skill_state_buckets
from beliefgate.fileio import finite_or_none as _finite_or_none

RHAT_MAX = 1.01
ESS_MIN = 400
HDI_PROB = 0.94
PPP_ALPHA = 0.05


class ParameterSummary(NamedTuple):
    """One row of the summary table (``hdi_*``: 94% highest-density interval)."""

    mean: float
    sd: float
    hdi_low: float
    hdi_high: float
    ess_bulk: float
    ess_tail: float
    r_hat: float


class BucketCheck(NamedTuple):
    """Predictive check of one skill-state bucket (frequencies over the checked actions)."""

    label: str
    steps: int
    observed: List[float]
    predicted: List[float]
    low: List[float]
    high: List[float]
    tv: float


class PredictiveCheck(NamedTuple):
    """One view of the posterior predictive check of action frequencies per skill-state bucket.

    ``view``: ``"skill"`` or ``"primitive"``; ``actions``: the action classes
    (skill view) or the checked actions (primitive view, excluded ones dropped);
    ``chi2_observed``: posterior mean of ``X^2(obs)``; ``chi2_replicated``: of
    ``X^2(rep)``; ``ppp``: ``P(X^2(rep) >= X^2(obs))``; ``tv``: count-weighted
    total-variation distance between observed and predicted frequencies;
    ``passed``: ``ppp >= alpha``.
    """

    view: str
    actions: List[str]
    buckets: List[BucketCheck]
    chi2_observed: float
    chi2_replicated: float
    ppp: float
    tv: float
    draws: int
    steps: int
    alpha: float
    passed: bool

    def to_dict(self) -> dict:
        out = self._asdict()
        out["buckets"] = [b._asdict() for b in self.buckets]
        return out


#: what a failed view of the predictive check points at, and what to do next
PPC_HINTS = {
    "skill": ("It points at the skill dynamics: how often and to what the partner switches skills, and whether "
              "its actions lean toward the running skill as the controller's Boltzmann policy says. Try a free "
              "hazard or the windowed model and `beliefgate compare` them; with scripted partners (they wait, "
              "pass and detour in ways the controller does not model) expect this check to fail, and judge the "
              "fit by its calibration (on by default, `--calibration`: the filtered posterior against the logged skills) instead."),
    "primitive": ("It points at the actions within a skill: the controller's Boltzmann policy (beta, epsilon) "
                  "does not reproduce which moves the partner makes (waits, detours, a different route or "
                  "controller); the skill posterior may still be calibrated (see the calibration rows), and a large "
                  "epsilon is the model absorbing those moves as noise."),
}


def ppc_hint(view: str) -> str:
    """What a failed predictive check of ``view`` (``"skill"``, ``"primitive"``) points at, in general
    (:func:`ppc_advice` says it for one check's numbers)."""
    return PPC_HINTS.get(view, "")


#: per skill-view class the model under-predicts: what that points at and what to try
_SKILL_ADVICE = (
    "the partner keeps to the skill the model predicts more than the softmax over Q allows: it is more "
    "deterministic than beta and epsilon say (scripted partners are); try a larger beta (a wider prior, "
    "or `--fix beta=...`), `--per-skill-beta`, or `--model windowed`, and `beliefgate compare` the fits",
    "It points at the skill dynamics: the partner turns to another skill more often than the hazard "
    "allows; free the hazard (no `--fix hazard=...`), try `--model windowed`, and `beliefgate compare` the fits",
    "the partner makes moves no feasible skill explains (scripted partners wait for a soup, detour and "
    "pass) or another player is modelled: check `--partner-side`{sides}; a large epsilon is the model "
    "absorbing such moves",
)


def ppc_advice(ppc: PredictiveCheck, partner_sides=None) -> str:
    """One or two sentences on a failed check: which class (skill view) or action (primitive view) the
    model misses most, where (the bucket with the largest gap), what that points at and what to try.

    Skill view: the class the model under-predicts most (step-weighted excess of observed over
    predicted share, summed over buckets); primitive view: the action whose share it misses most
    either way. ``partner_sides``: the modelled player per trajectory (the fit data's meta)."""
    if not ppc.buckets:
        return ppc_hint(ppc.view)
    n = np.asarray([b.steps for b in ppc.buckets], float)[:, None]
    gap = np.asarray([b.observed for b in ppc.buckets]) - np.asarray([b.predicted for b in ppc.buckets])
    score = (n * np.clip(gap, 0.0, None)) if ppc.view == "skill" else n * np.abs(gap)
    worst = int(np.argmax(score.sum(axis=0)))
    b = ppc.buckets[int(np.argmax(score[:, worst]))]
    where = (f"'{ppc.actions[worst]}' {b.observed[worst]:.0%} observed vs {b.predicted[worst]:.0%} predicted in "
             f"bucket '{b.label}'")
    sides = sorted({int(x) for x in partner_sides or []})
    side_text = f" (modelled: player {', '.join(map(str, sides))})" if sides else ""
    if ppc.view == "skill":
        return f"Most missed: {where}: {_SKILL_ADVICE[worst].format(sides=side_text)}."
    more = "more" if b.observed[worst] > b.predicted[worst] else "less"
    return (f"Most missed: {where}: it points at the actions within a skill, the partner choosing it {more} often "
            f"than the controller's Boltzmann policy says; try `--per-skill-beta` or a larger beta, check "
            f"`--partner-side`{side_text}; a large epsilon is the model absorbing moves it does not explain.")


class CalibrationRow(NamedTuple):
    """Scores of one filtered posterior against the true skills."""

    accuracy: float
    brier: float
    log_loss: float
    ece: float
    n: int
    bins: List[dict]
    #: steps whose true skill had filtered probability < 1e-12 (log-loss term capped; see beliefgate.calibration)
    floored: int = 0


class Calibration(NamedTuple):
    """Calibration of the filtered skill posterior: ``fitted`` (point estimate) and ``defaults``."""

    point: str
    params: dict
    fitted: CalibrationRow
    defaults: CalibrationRow

    def to_dict(self) -> dict:
        return {"point": self.point, "params": self.params, "fitted": self.fitted._asdict(),
                "defaults": self.defaults._asdict()}


class Diagnosis(NamedTuple):
    """Everything :func:`diagnose` found."""

    parameters: Dict[str, ParameterSummary]
    divergences: int
    warnings: List[str]
    method: str
    chains: int
    draws: int
    predictive: List[PredictiveCheck]
    calibration: Optional[Calibration]
    #: what made this diagnosis (seed, draws of the check, bucket size, point estimate, the fit's record)
    settings: Optional[dict] = None

    def to_json_dict(self) -> dict:
        """``{"parameters": {NAME: {mean, sd, hdi_low, hdi_high, ess_bulk, ess_tail, r_hat}},
        "divergences": N, "warnings": [...]}`` (NaN -> null)."""
        return _summary_json(self)

    def report(self) -> dict:
        """The JSON shape plus the predictive check and calibration (for files)."""
        out = self.to_json_dict()
        out["method"] = self.method
        out["predictive_check"] = {p.view: p.to_dict() for p in self.predictive}
        out["calibration"] = None if self.calibration is None else self.calibration.to_dict()
        out["settings"] = self.settings
        return json.loads(json.dumps(out, default=_finite_or_none))


def _summary_json(diag) -> dict:
    """The JSON shape both diagnoses share: per-parameter rows (NaN -> null), divergences, warnings."""
    return {
        "parameters": {name: {k: _finite_or_none(v) for k, v in row._asdict().items()}
                       for name, row in diag.parameters.items()},
        "divergences": int(diag.divergences),
        "warnings": list(diag.warnings),
    }




# --------------------------------------------------------------------------------------
# Summary and convergence warnings
# --------------------------------------------------------------------------------------


def summarize(idata, hdi_prob: float = HDI_PROB) -> Dict[str, ParameterSummary]:
    """``{name: ParameterSummary}`` from ``arviz.summary`` over the sampled parameters
    (skill-model fits and kappa fits)."""
    from beliefgate.models.goal import GoalFitConfig, goal_fit_file
    from beliefgate.models.kappa import is_kappa_fit, kappa_fit_config

    goal_file = goal_fit_file()
    if goal_file.has(idata):
        config = GoalFitConfig(**goal_file.record(idata)["config"])
    else:
        config = kappa_fit_config(idata) if is_kappa_fit(idata) else fit_config(idata)
    return summarize_names(idata, [n for n in config.parameter_names() if n in idata.posterior], hdi_prob)


def summarize_names(idata, names: List[str], hdi_prob: float = HDI_PROB) -> Dict[str, ParameterSummary]:
    """``{name: ParameterSummary}`` of the posterior variables ``names``."""
    import arviz as az

    if not names:
        return {}
    # unrounded: ArviZ's default rounds r_hat to 2 decimals, which would hide 1.01 < r_hat < 1.015
    table = az.summary(idata, var_names=names, hdi_prob=hdi_prob, round_to="none")
    hdi = [c for c in table.columns if c.startswith("hdi_")]
    out = {}
    for label, row in table.iterrows():
        out[str(label)] = ParameterSummary(
            float(row["mean"]), float(row["sd"]), float(row[hdi[0]]), float(row[hdi[1]]),
            float(row["ess_bulk"]), float(row["ess_tail"]), float(row["r_hat"]))
    return out


def count_divergences(idata) -> int:
    """Number of divergent transitions (0 for SVI fits)."""
    if "sample_stats" not in idata.groups() or "diverging" not in idata.sample_stats:
        return 0
    return int(np.asarray(idata.sample_stats["diverging"].values).sum())


def convergence_warnings(parameters: Dict[str, ParameterSummary], divergences: int, chains: int,
                         draws: int, method: str) -> List[str]:
    """Explicit warnings: a summary that is not finite (NaN or infinite draws), r_hat > 1.01,
    ESS < 400, divergences, fewer than two chains. Every check is written so that NaN fails it
    (a comparison with NaN is false, so each one asks ``isfinite`` first)."""
    out: List[str] = []
    for name, row in parameters.items():
        bad = [f"{field} {value}" for field, value in (("mean", row.mean), ("sd", row.sd), ("hdi_low", row.hdi_low),
                                                        ("hdi_high", row.hdi_high)) if not math.isfinite(value)]
        if bad:
            out.append(f"{name}: posterior summary not finite ({', '.join(bad)}): some draws are NaN or "
                       "infinite, the fit failed; refit (check the data and the priors)")
    if method == "nuts" and chains < 2:
        out.append(f"only {chains} chain: r_hat cannot be computed; run at least 2 chains (--chains)")
    # with one NUTS chain r_hat is undefined (said above); SVI draws are independent by construction
    rhat_defined = method == "nuts" and chains >= 2
    for name, row in parameters.items():
        # SVI draws are i.i.d. from the guide: their r_hat is noise, not a verdict on chains
        if method == "nuts" and math.isfinite(row.r_hat) and row.r_hat > RHAT_MAX:
            out.append(f"{name}: r_hat {row.r_hat:.4f} > {RHAT_MAX} (chains disagree; run longer "
                       "or check the model)")
        elif rhat_defined and not math.isfinite(row.r_hat):
            out.append(f"{name}: r_hat is {row.r_hat} (a chain is stuck or constant; check the "
                       "trace plot and rerun)")
        for kind, ess in (("ess_bulk", row.ess_bulk), ("ess_tail", row.ess_tail)):
            if math.isfinite(ess) and ess < ESS_MIN:
                out.append(f"{name}: {kind} {ess:.0f} < {ESS_MIN} (too few effective draws; "
                           "increase --draws)")
            elif method == "nuts" and not math.isfinite(ess):
                out.append(f"{name}: {kind} is {ess} (the draws do not move; check the trace plot)")
    if divergences > 0:
        out.append(f"{divergences} divergent transition(s) of {chains * draws}: the sampler may "
                   "have missed part of the posterior (raise target_accept or check the model)")
    return out


#: an SVI fit whose ELBO loss still falls over the last half of its steps by more than this
#: share of its level (and by more than twice the trend's standard error) has not converged
SVI_LOSS_DRIFT = 1e-3


def svi_warnings(idata, method: str) -> List[str]:
    """An SVI fit's own check. Its draws are i.i.d. from the fitted guide, so r_hat and ESS say
    nothing about convergence: the ELBO loss trace does. The loss is a noisy one-particle
    estimate, so the check is a least-squares trend over the last half of the steps: a fall
    larger than :data:`SVI_LOSS_DRIFT` of the loss and than twice its standard error warns."""
    if method != "svi":
        return []
    if "sample_stats" not in idata.groups() or "loss" not in idata.sample_stats:
        return ["SVI fit without its ELBO loss trace: convergence cannot be checked (r_hat and ESS of "
                "guide draws do not show it)"]
    losses = np.asarray(idata.sample_stats["loss"].values, dtype=np.float64).ravel()
    if not np.isfinite(losses).all():
        return [f"SVI: the ELBO loss is not finite at {int((~np.isfinite(losses)).sum())} of {len(losses)} steps: "
                "the optimisation failed; refit (lower --learning-rate)"]
    half = losses[len(losses) // 2:]
    if len(half) < 10:
        return [f"SVI fit of {len(losses)} steps: too few to check the ELBO loss for convergence"]
    x = np.arange(len(half), dtype=np.float64) - (len(half) - 1) / 2.0
    slope = float(x @ (half - half.mean()) / (x @ x))
    resid = half - half.mean() - slope * x
    se = float(np.sqrt(resid @ resid / (len(half) - 2) / (x @ x)))
    fall = -slope * len(half)
    level = max(1.0, abs(float(half.mean())))
    if fall > SVI_LOSS_DRIFT * level and fall > 2.0 * se * len(half):
        return [f"SVI: the ELBO loss still falls over the last half of the {len(losses)} steps (by {fall:.4g}, "
                f"{fall / level:.2%} of its level): not converged; raise --svi-steps (r_hat and ESS of guide "
                "draws do not show this)"]
    return []


# --------------------------------------------------------------------------------------
# Posterior draws
# --------------------------------------------------------------------------------------


def _point_arrays(values: dict, dtype) -> dict:
    return {k: np.asarray(v, dtype) for k, v in values.items()}


# --------------------------------------------------------------------------------------
# One-step-ahead predictive (traceable)
# --------------------------------------------------------------------------------------


def stored_replications(idata, data: FitData):
    """``(actions [S, B, T], draws [S], seed)`` of the fit's ``posterior_predictive`` group, or ``None``
    when it has none written by :func:`predictive_replications`; :class:`FitError` when it does not
    match the fit's data or posterior (a damaged or edited file)."""
    stored = stored_replication_record(idata, ("action",), FitError)
    if stored is None:
        return None
    group, draws, seed = stored
    actions = np.asarray(group["action"].values)
    actions = actions.reshape((-1,) + actions.shape[2:])
    post = idata.posterior
    total = post.sizes["chain"] * post.sizes["draw"]
    lead = tuple(np.shape(data.skill.valid))
    if actions.shape != (len(draws),) + lead or (len(draws) and (draws.min() < 0 or draws.max() >= total)):
        raise FitError(f"the fit's posterior_predictive group ({actions.shape[0]} draws of {actions.shape[1:]}) "
                       f"does not match its data ({lead}) or posterior ({total} draws)")
    _, _, keep = replicable(data)
    if np.any(actions[:, keep] < 0) or np.any(actions >= data.skill.q.shape[-1]):
        raise FitError("the fit's posterior_predictive group holds actions outside the checked steps' range")
    return actions, draws, seed


def predictive_check(idata, data: Optional[FitData] = None, *, num_draws: int = 100, seed: int = 0,
                     alpha: float = PPP_ALPHA, min_bucket_steps: int = 20, stored: bool = False) -> List[PredictiveCheck]:
    """One-step-ahead posterior predictive check of action frequencies per skill-state bucket.

    Returns two views (see the module doc): ``"skill"`` (actions classed
    relative to the skill the model predicts: toward it, toward another feasible
    skill, neither) and ``"primitive"`` (the actions themselves). ``stored``: replicate with the
    fit's ``posterior_predictive`` group (its draws and actions; ``num_draws`` and ``seed`` are
    then the stored ones) instead of drawing new replications.
    """
    config = fit_config(idata)
    data = FitData.from_idata(idata) if data is None else data
    dtype = np.asarray(data.skill.q).dtype
    checked_np, _, keep = replicable(data)
    bucket, labels = skill_state_buckets(data, min_bucket_steps)
    keep &= bucket >= 0
    if not keep.any():
        raise FitError("no step to check: every step is excluded or its action unknown")
    saved = stored_replications(idata, data) if stored else None
    if stored and saved is None:
        raise FitError("the fit has no posterior_predictive group of `beliefgate fit` to check with")
    if saved is None:
        draws, _ = parameter_draws(idata, num_draws, dtype)
        reps = None
    else:
        reps, pick, seed = saved
        draws, _ = parameter_draws(idata, len(pick), dtype, pick=pick)
    results = run_checks(prepare(data), data, config, draws, seed, keep, bucket, len(labels), model_loglik, reps)
    steps = int(keep.sum())
    views = []
    for view, classes, cols in (
            ("skill", list(SKILL_CLASSES), np.arange(len(SKILL_CLASSES))),
            ("primitive", [data.action_names[a] for a in np.flatnonzero(checked_np)],
             np.flatnonzero(checked_np))):
        parts = [np.stack([np.asarray(r[view][i]) for r in results]) for i in range(5)]
        views.append(_view(view, classes, cols, labels, *parts, steps=steps, alpha=alpha))
    return views


def _view(view, classes, cols, labels, expected, observed, replicated, chi_obs, chi_rep, *,
          steps, alpha) -> PredictiveCheck:
    """Summarise one view from per-draw counts ``[S, G, C]`` and X^2 values ``[S]``."""
    buckets, tv_sum = [], 0.0
    for g, label in enumerate(labels):
        n = observed[0, g].sum()
        if n == 0:
            continue
        obs_f = observed[:, g, cols].mean(axis=0) / n
        pred_f = expected[:, g, cols].mean(axis=0) / n
        rep_f = replicated[:, g, cols] / n
        tv = 0.5 * float(np.abs(obs_f - pred_f).sum())
        tv_sum += tv * n
        buckets.append(BucketCheck(label, int(n), obs_f.tolist(), pred_f.tolist(),
                                   np.quantile(rep_f, 0.05, axis=0).tolist(),
                                   np.quantile(rep_f, 0.95, axis=0).tolist(), tv))
    ppp = float(np.mean(chi_rep >= chi_obs))
    return PredictiveCheck(view, classes, buckets, float(chi_obs.mean()), float(chi_rep.mean()), ppp,
                           tv_sum / steps, len(chi_obs), steps, alpha, ppp >= alpha)


# --------------------------------------------------------------------------------------
# Calibration of the filtered posterior
# --------------------------------------------------------------------------------------


def _score(post: np.ndarray, truth: np.ndarray, num_bins: int) -> CalibrationRow:
    """Scores of posteriors ``post [N, K]`` against ``truth [N]`` (:mod:`beliefgate.calibration`)."""
    s = calibration_scores(post, truth, num_bins)
    conf, correct = confidence_and_correct(post, truth)
    return CalibrationRow(s["accuracy"], s["brier"], s["log_loss"], s["ece"], s["n"],
                          reliability_table(conf, correct, num_bins), s["floored"])


def filtered_posterior(data: FitData, config: FitConfig, values: dict) -> np.ndarray:
    """Filtered ``p(z_t | a_{0:t})`` [B, T, K] at fixed parameter ``values`` (the fitted model's filter)."""
    import jax

    dtype = np.asarray(data.skill.q).dtype
    draw = _point_arrays({k: v for k, v in values.items()}, dtype)
    draw.setdefault("hazard", np.asarray(0.0, dtype))
    fn = jax.jit(lambda inputs, skill, d: filter_pass(inputs, skill, config, d, model_loglik)[1].log_posterior)
    return np.exp(np.asarray(fn(prepare(data), data.skill, draw), np.float64))


def calibration(idata, data: Optional[FitData] = None, *, point: str = "median",
                num_bins: int = 10) -> Optional[Calibration]:
    """Calibration of the filtered skill posterior against the logged skills (None if none)."""
    from beliefgate.models.params import default_values

    config = fit_config(idata)
    data = FitData.from_idata(idata) if data is None else data
    truth = data.true_skill
    sel = (truth >= 0) & np.asarray(data.skill.valid)
    if not sel.any():
        return None
    values = point_values(idata, point)
    defaults = default_values()
    if config.fit_weight:
        defaults["ambiguous_weight"] = float(data.meta.get("ambiguous_weight", 0.35))
    for name in unused_params(config.model):  # e.g. the windowed model has no hazard
        defaults.pop(name)
    rows = []
    for vals in (values, defaults):
        post = filtered_posterior(data, config, vals)
        rows.append(_score(post[sel], truth[sel], num_bins))
    return Calibration(point, values, rows[0], rows[1])


# --------------------------------------------------------------------------------------
# Everything
# --------------------------------------------------------------------------------------


def diagnose(idata, *, ppc_draws: int = 100, seed: int = 0, predictive: bool = True,
             calibrate: bool = True, min_bucket_steps: int = 20, point: str = "median",
             stored: Optional[bool] = None) -> Diagnosis:
    """Summary, warnings, predictive check and calibration of a fit (see the module doc).

    ``seed`` and ``ppc_draws`` drive the predictive replications, ``min_bucket_steps``
    the skill-state buckets, ``point`` the parameters the calibration filter runs at;
    all of them, with the fit's own record, are kept in ``Diagnosis.settings``. ``stored``:
    check with the replications the fit file stores (its ``posterior_predictive`` group; then its
    draws and seed replace ``ppc_draws`` and ``seed``); ``None``: when the file has them.
    """
    record = fit_record(idata)
    config = FitConfig(**record["config"])
    post = idata.posterior
    chains, draws = int(post.sizes["chain"]), int(post.sizes["draw"])
    parameters = summarize(idata)
    divergences = count_divergences(idata)
    warnings = convergence_warnings(parameters, divergences, chains, draws, config.method)
    warnings += svi_warnings(idata, config.method)
    # a float64 (--x64) fit is checked in float64 too
    import jax

    with jax.enable_x64(True) if record.get("jax_x64") else contextlib.nullcontext():
        data = FitData.from_idata(idata) if (predictive or calibrate) else None
        saved = stored_replications(idata, data) if predictive and stored is not False else None
        if stored and saved is None:
            raise FitError("the fit has no posterior_predictive group of `beliefgate fit` to check with")
        if saved is not None:
            ppc_draws, seed = len(saved[1]), saved[2]
        ppc = (predictive_check(idata, data, num_draws=ppc_draws, seed=seed, min_bucket_steps=min_bucket_steps,
                                stored=saved is not None) if predictive else [])
        cal = calibration(idata, data, point=point) if calibrate else None
    for view in ppc:
        if view.passed:
            continue
        worst = max(view.buckets, key=lambda b: b.tv * b.steps)
        warnings.append(
            f"posterior predictive check ({view.view} view) failed: action frequencies per "
            f"skill-state bucket differ from the model's (ppp {view.ppp:.3f} < {view.alpha}, "
            f"X^2 {view.chi2_observed:.1f} observed vs {view.chi2_replicated:.1f} replicated, "
            f"TV {view.tv:.3f}; worst bucket '{worst.label}': TV {worst.tv:.3f} over "
            f"{worst.steps} steps). {ppc_advice(view, (data.meta if data is not None else {}).get('partner_sides'))}")
    settings = {"seed": seed, "ppc_draws": ppc_draws, "predictive": predictive, "calibrate": calibrate,
                "replications": ("stored" if saved is not None else "drawn") if predictive else None,
                "min_bucket_steps": min_bucket_steps, "point": point, "fit": record}
    return Diagnosis(parameters, divergences, warnings, config.method, chains, draws, ppc, cal, settings)


# --------------------------------------------------------------------------------------
# Kappa fits
# --------------------------------------------------------------------------------------


def goal_recipe_accuracy(idata, values: Optional[dict] = None) -> Optional[dict]:
    """How often the MAP goal of the filtered goal posterior (at parameter ``values``; default: the
    model's defaults) is the goal active in the log, over the valid steps whose goal is known, and
    over those from the partner's first ingredient pickup on (a completed ``pickup_ingredient_*``
    skill; ``None`` when it never picks one). ``None`` when the fit holds no logged goals."""
    from beliefgate.models.goal import filter_goal, goal_data_from_idata, goal_fit_file

    if "true_goal" not in idata.constant_data:
        return None
    record = goal_fit_file().record(idata)
    data = goal_data_from_idata(idata)
    truth = np.asarray(idata.constant_data["true_goal"].values)
    scan = filter_goal(data, values or {})
    post = np.asarray(scan.log_posterior)                           # [B, T, G, K]
    goal_post = np.log(np.exp(post - post.max(axis=(-2, -1), keepdims=True)).sum(axis=-1))
    at_truth = np.take_along_axis(goal_post, np.maximum(truth, 0)[..., None], axis=-1)[..., 0]
    others = np.where(np.arange(goal_post.shape[-1]) == np.maximum(truth, 0)[..., None], -np.inf, goal_post)
    right = at_truth > others.max(axis=-1) + 1e-9                   # [B, T]: strictly the MAP (a tie is not)
    known = np.asarray(data.skill.valid) & (truth >= 0)
    names = record.get("skill_names") or []
    pickups = [i for i, n in enumerate(names) if str(n).startswith("pickup_ingredient")]
    completed = np.asarray(data.skill.completed)
    picked = np.isin(completed, pickups) if pickups else np.zeros_like(known)
    after = np.cumsum(picked, axis=-1) > 0                          # from the pickup step on (its posterior counts)
    n_all, n_after = int(known.sum()), int((known & after).sum())
    return {"steps": n_all, "accuracy": float(right[known].mean()) if n_all else None,
            "steps_after_evidence": n_after,
            "accuracy_after_evidence": float(right[known & after].mean()) if n_after else None}


def diagnose_goal(idata) -> dict:
    """A goal fit's diagnosis (JSON-ready): the parameter summary (R-hat, ESS), divergences, warnings
    (as the skill model's, plus SVI's loss check) and :func:`goal_recipe_accuracy` at the posterior
    median (``fitted``) and at the model's defaults (``defaults``)."""
    from beliefgate.models.goal import GOAL_PARAMS, GoalFitConfig, goal_fit_file

    record = goal_fit_file().record(idata)
    config = GoalFitConfig(**record["config"])
    parameters = summarize(idata)
    divergences = count_divergences(idata)
    post = idata.posterior
    chains, draws = int(post.sizes["chain"]), int(post.sizes["draw"])
    warnings = convergence_warnings(parameters, divergences, chains, draws, config.method)
    warnings += svi_warnings(idata, config.method)
    median = {name: float(np.median(np.asarray(post[name].values))) for name in config.parameter_names()}
    median.update(config.fixed)
    fitted = goal_recipe_accuracy(idata, median)
    accuracy = None if fitted is None else {"fitted": fitted, "defaults": goal_recipe_accuracy(idata, {}),
                                            "point": {k: median[k] for k in sorted(median)}}
    return {"model": "goal", "method": config.method, "chains": chains, "draws": draws,
            "parameters": {k: v._asdict() for k, v in parameters.items()}, "divergences": divergences,
            "warnings": warnings, "recipe_accuracy": accuracy, "goal_names": record.get("goal_names"),
            "defaults": {s.name: s.default for s in GOAL_PARAMS}}


class KappaDiagnosis(NamedTuple):
    """What :func:`diagnose_kappa` found: summary, warnings and the predictive check."""

    parameters: Dict[str, ParameterSummary]
    divergences: int
    warnings: List[str]
    method: str
    chains: int
    draws: int
    checks: list  # KappaStatCheck
    settings: Optional[dict] = None

    def to_json_dict(self) -> dict:
        """The same shape as :meth:`Diagnosis.to_json_dict` (``parameters``, ``divergences``, ``warnings``)."""
        return _summary_json(self)

    def report(self) -> dict:
        out = self.to_json_dict()
        out["model"] = "kappa"
        out["method"] = self.method
        out["predictive_check"] = [c._asdict() for c in self.checks]
        out["settings"] = self.settings
        return json.loads(json.dumps(out, default=_finite_or_none))


def diagnose_kappa(idata, *, ppc_draws: int = 200, seed: int = 0, predictive: bool = True,
                   stored: Optional[bool] = None) -> KappaDiagnosis:
    """Summary, convergence warnings and the posterior predictive check of a kappa fit
    (:func:`beliefgate.models.kappa.kappa_predictive_check`; ``stored``: with the fit file's
    ``posterior_predictive`` group, ``None``: when it has one)."""
    from beliefgate.models.kappa import kappa_fit_config, kappa_fit_record, kappa_predictive_check
    from beliefgate.models.kappa.fit import data_from_idata, stored_kappa_replications

    record = kappa_fit_record(idata)
    config = kappa_fit_config(idata)
    post = idata.posterior
    chains, draws = int(post.sizes["chain"]), int(post.sizes["draw"])
    parameters = summarize_names(idata, [n for n in config.parameter_names() if n in post])
    divergences = count_divergences(idata)
    warnings = convergence_warnings(parameters, divergences, chains, draws, config.method)
    warnings += svi_warnings(idata, config.method)
    saved = stored_kappa_replications(idata, data_from_idata(idata)) if predictive and stored is not False else None
    if saved is not None:
        ppc_draws, seed = len(saved[2]), saved[3]
    checks = (kappa_predictive_check(idata, num_draws=ppc_draws, seed=seed, stored=saved is not None)
              if predictive else [])
    for c in checks:
        if not c.passed:
            warnings.append(f"posterior predictive check failed: {c.name} ({c.description}) observed "
                            f"{c.observed:.3f}, replicated {c.replicated_mean:.3f} [{c.low:.3f}, {c.high:.3f}], "
                            f"ppp {c.ppp:.3f}")
    settings = {"seed": seed, "ppc_draws": ppc_draws, "predictive": predictive, "fit": record,
                "replications": ("stored" if saved is not None else "drawn") if predictive else None}
    return KappaDiagnosis(parameters, divergences, warnings, config.method, chains, draws, checks, settings)


def write_kappa_plots(idata, diagnosis: KappaDiagnosis, out_dir: Union[str, Path]) -> List[Path]:
    """Trace, rank and predictive-check plots (PNG) plus diagnosis.json in ``out_dir``."""
    import arviz as az

    plt = pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = list(diagnosis.parameters)
    written: List[Path] = []
    if names:
        axes = az.plot_trace(idata, var_names=names, compact=True)
        fig = np.asarray(axes).ravel()[0].figure
        fig.tight_layout()
        written.append(save_figure(fig, out / "trace.png", bbox_inches="tight"))
        if idata.posterior.sizes["chain"] > 1:
            axes = az.plot_rank(idata, var_names=names)
            written.append(save_figure(np.asarray(axes).ravel()[0].figure, out / "rank.png", bbox_inches="tight"))
    if diagnosis.checks:
        fig, axes = plt.subplots(1, len(diagnosis.checks), figsize=(3.2 * len(diagnosis.checks), 2.8), squeeze=False)
        for ax, c in zip(axes.ravel(), diagnosis.checks):
            ax.errorbar([0], [c.replicated_mean], yerr=[[c.replicated_mean - c.low], [c.high - c.replicated_mean]],
                        fmt="s", color="#3182bd", capsize=4, label="replicated (90%)")
            ax.plot([0], [c.observed], "o", color="#d62728", label="observed")
            ax.set_xticks([])
            ax.set_title(f"{c.name}\nppp {c.ppp:.2f}", fontsize=8)
        axes.ravel()[0].legend(fontsize=6)
        fig.tight_layout()
        written.append(save_figure(fig, out / "ppc_kappa.png", bbox_inches="tight"))
    path = out / "diagnosis.json"
    path.write_text(json.dumps(diagnosis.report(), indent=2) + "\n", encoding="utf-8")
    written.append(path)
    return written


# --------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------


def write_plots(idata, diagnosis: Diagnosis, out_dir: Union[str, Path]) -> List[Path]:
    """Trace, rank, predictive-check and reliability plots as PNG in ``out_dir``; returns the paths."""
    import arviz as az

    plt = pyplot()

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = [n for n in fit_config(idata).parameter_names() if n in idata.posterior]
    written: List[Path] = []

    def save(fig, name):
        written.append(save_figure(fig, out / name, bbox_inches="tight"))

    if names:
        axes = az.plot_trace(idata, var_names=names, compact=True)
        fig = np.asarray(axes).ravel()[0].figure
        fig.tight_layout()
        save(fig, "trace.png")
        if idata.posterior.sizes["chain"] > 1:
            axes = az.plot_rank(idata, var_names=names)
            save(np.asarray(axes).ravel()[0].figure, "rank.png")
    for view in diagnosis.predictive:
        save(_plot_predictive(view, plt), f"ppc_{view.view}.png")
    if diagnosis.calibration is not None:
        save(_plot_calibration(diagnosis.calibration, plt), "calibration.png")
    path = out / "diagnosis.json"
    path.write_text(json.dumps(diagnosis.report(), indent=2) + "\n", encoding="utf-8")
    written.append(path)
    return written


def _plot_predictive(ppc: PredictiveCheck, plt):
    num = len(ppc.buckets)
    cols = min(3, num)
    rows = math.ceil(num / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    x = np.arange(len(ppc.actions))
    for ax, b in zip(axes.ravel(), ppc.buckets):
        pred = np.asarray(b.predicted)
        err = np.vstack([pred - np.asarray(b.low), np.asarray(b.high) - pred]).clip(min=0)
        ax.bar(x, pred, color="#9ecae1", label="model (90% replicated)")
        ax.errorbar(x, pred, yerr=err, fmt="none", ecolor="#3182bd", capsize=3)
        ax.plot(x, b.observed, "o", color="#d62728", label="observed")
        ax.set_xticks(x, [a.replace(" ", "\n", 1) if len(a) > 10 else a for a in ppc.actions],
                      rotation=0 if ppc.view == "skill" else 45, fontsize=6)
        ax.set_title(f"{b.label}\n{b.steps} steps, TV {b.tv:.3f}", fontsize=7)
        ax.set_ylim(0, 1)
    for ax in axes.ravel()[num:]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=6)
    fig.suptitle(f"Action frequencies per skill-state bucket ({ppc.view} view): ppp {ppc.ppp:.3f}, "
                 f"TV {ppc.tv:.3f}", fontsize=9)
    fig.tight_layout()
    return fig


def _plot_calibration(cal: Calibration, plt):
    fig, ax = plt.subplots(figsize=(4.2, 4.0))
    ax.plot([0, 1], [0, 1], ":", color="grey")
    for row, name, style in ((cal.fitted, "fitted", "o-"), (cal.defaults, "defaults", "s--")):
        conf = [b["confidence"] for b in row.bins]
        acc = [b["accuracy"] for b in row.bins]
        ax.plot(conf, acc, style, label=f"{name}: acc {row.accuracy:.2f}, ECE {row.ece:.3f}")
    ax.set_xlabel("MAP confidence")
    ax.set_ylabel("MAP accuracy")
    ax.set_title(f"Filtered skill posterior ({cal.fitted.n} steps)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


__all__ = [
    "diagnose_goal", "goal_recipe_accuracy",
    "ParameterSummary",
    "BucketCheck",
    "PredictiveCheck",
    "CalibrationRow",
    "Calibration",
    "Diagnosis",
    "summarize",
    "summarize_names",
    "KappaDiagnosis",
    "diagnose_kappa",
    "write_kappa_plots",
    "count_divergences",
    "convergence_warnings",
    "skill_state_buckets",
    "predictive_check",
    "predictive_replications",
    "stored_replications",
    "ppc_advice",
    "REPLICATION_ATTR",
    "filtered_posterior",
    "calibration",
    "diagnose",
    "write_plots",
]
