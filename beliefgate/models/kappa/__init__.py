"""OverForge's kappa as a model: its errors, data, NumPyro model, posterior and fit.

* :mod:`~beliefgate.models.kappa.errors` -- every kappa error class (the online filter's input
  errors, :class:`KappaDataError`, :class:`KappaFitError`, :class:`KappaFitConfigError`);
* :mod:`~beliefgate.models.kappa.data` -- the checks of one piece of evidence (shared with the
  online kappa, :mod:`beliefgate.beliefs.kappa`), the model's arrays and the decisions JSONL format;
* :mod:`~beliefgate.models.kappa.model` -- the generative model (:func:`utility_model`), its
  priors and parameter ranges, and :func:`simulate_decisions`;
* :mod:`~beliefgate.models.kappa.posterior` -- the NUTS reference (:func:`nuts_argmax_probs`)
  and a fit's point values (:func:`kappa_point_values`);
* :mod:`~beliefgate.models.kappa.fit` -- :class:`KappaFitConfig`, :func:`fit_kappa`, the fit
  file and the posterior predictive check.

Every public name of those modules is importable from ``beliefgate.models.kappa`` itself.
"""

from __future__ import annotations

from beliefgate.models.kappa.data import (
    MAX_DEPTH,
    SCORE_BOUND,
    SCORE_RANGE,
    Decisions,
    KappaData,
    branch_index,
    check_branch_names,
    decisions_from_records,
    evidence_data,
    judgment_outcome,
    parse_decision,
    read_decisions,
    rollout_depth,
    rollout_score,
    write_decisions,
)
from beliefgate.models.kappa.errors import (
    BranchNameError,
    DepthError,
    DuplicateBranchError,
    EvidenceTypeError,
    ExtremeEvidenceError,
    JudgmentValueError,
    KappaDataError,
    KappaFitConfigError,
    KappaFitError,
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
)
from beliefgate.models.kappa.fit import (
    CONFIG_ATTR,
    FORMAT,
    KAPPA_FIT_FILE,
    STAT_DESCRIPTIONS,
    KappaFitConfig,
    KappaStatCheck,
    data_from_idata,
    fit_kappa,
    is_kappa_fit,
    kappa_fit_config,
    kappa_fit_record,
    kappa_predictive_check,
    kappa_prior_draws,
    kappa_replication_group,
    kappa_replications,
    load_kappa_fit,
    save_kappa_fit,
    stored_kappa_replications,
)
from beliefgate.models.kappa.model import PARAM_NAMES, PARAM_RANGES, PRIORS, prior, simulate_decisions, utility_model
from beliefgate.models.kappa.posterior import NutsArgmax, kappa_point_values, nuts_argmax_probs

__all__ = [
    # errors
    "KappaInputError",
    "UnknownBranchError",
    "SelfJudgmentError",
    "JudgmentValueError",
    "ExtremeEvidenceError",
    "NonFiniteScoreError",
    "DepthError",
    "DuplicateBranchError",
    "NoBranchError",
    "TooManyBranchesError",
    "BranchNameError",
    "KappaParamError",
    "KappaStateError",
    "EvidenceTypeError",
    "RoundLimitError",
    "NotInNucleusError",
    "KappaDataError",
    "KappaFitError",
    "KappaFitConfigError",
    # data
    "SCORE_BOUND",
    "SCORE_RANGE",
    "MAX_DEPTH",
    "check_branch_names",
    "branch_index",
    "judgment_outcome",
    "rollout_depth",
    "rollout_score",
    "KappaData",
    "evidence_data",
    "Decisions",
    "parse_decision",
    "decisions_from_records",
    "read_decisions",
    "write_decisions",
    # model
    "PARAM_NAMES",
    "PRIORS",
    "PARAM_RANGES",
    "prior",
    "utility_model",
    "simulate_decisions",
    # posterior
    "NutsArgmax",
    "nuts_argmax_probs",
    "kappa_point_values",
    # fit
    "FORMAT",
    "CONFIG_ATTR",
    "KAPPA_FIT_FILE",
    "KappaFitConfig",
    "fit_kappa",
    "is_kappa_fit",
    "kappa_fit_record",
    "kappa_fit_config",
    "save_kappa_fit",
    "load_kappa_fit",
    "data_from_idata",
    "STAT_DESCRIPTIONS",
    "KappaStatCheck",
    "kappa_predictive_check",
    "kappa_prior_draws",
    "kappa_replications",
    "kappa_replication_group",
    "stored_kappa_replications",
]
