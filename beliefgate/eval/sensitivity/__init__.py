"""Sensitivity analyses of the gates: one-at-a-time (OAT), global (Sobol, Morris) and closed loop.

Everything except the closed loop replays *logged* partner behaviour
(``beliefgate.envs.trajlog`` logs) through the gate for many
:class:`~beliefgate.beliefs.config.GateParams` configurations and measures, per
configuration (:data:`OUTPUTS`): interrupts per episode; against the partner's
ground-truth hidden switches (when the logs carry the partner's true skills) mean
detection delay, detection rate and false alarms per 100 steps; MAP accuracy and
mean confidence. ``docs/sensitivity.md`` is the user guide.

Modules (every public name is re-exported here, loaded on first use so that the
CLI's ``--help`` stays fast):

* :mod:`~beliefgate.eval.sensitivity.errors` -- ``SensitivityError`` and its subclasses;
* :mod:`~beliefgate.eval.sensitivity.ranges` -- the sweepable parameters and ``NAME=...`` ranges;
* :mod:`~beliefgate.eval.sensitivity.configs` -- ``C`` configurations as columns;
* :mod:`~beliefgate.eval.sensitivity.traces` -- logged episodes and belief traces (one pass of the
  gate's functional core per belief-side configuration and log);
* :mod:`~beliefgate.eval.sensitivity.replay` -- the batched decision replay and the scores;
* :mod:`~beliefgate.eval.sensitivity.oat`, :mod:`~beliefgate.eval.sensitivity.global_` (SALib),
  :mod:`~beliefgate.eval.sensitivity.closed_loop` (the evaluation harness),
  :mod:`~beliefgate.eval.sensitivity.plots`;
* :mod:`~beliefgate.eval.sensitivity.cli` -- ``beliefgate sensitivity oat|global``.

Why the replay is cheap
    The belief (posterior, pre-update MAP ``m_t``, ``conf_t``, ``stable_t``, the log
    ratio ``r_t``, the change-point statistic) depends only on the belief and evidence
    parameters; the decision parameters only turn it into interrupts. Configurations
    are grouped by their belief-side values, the belief is computed once per (group,
    log), and the gate's own decision rules (:mod:`beliefgate.beliefs.gates`, written
    once for one configuration or ``[C]`` arrays) advance every configuration of the
    group together.
"""

from __future__ import annotations

import importlib

_MODULES = {
    "errors": ("SensitivityError", "RangeSpecError", "UnknownParameterError", "IrrelevantParameterError"),
    "ranges": ("Kind", "ParamSpec", "PARAMETERS", "DECISION_PARAMS", "BELIEF_PARAMS", "GATE_FIVE",
               "TABLE7_DIRECTIONS", "AUTO_LOG_RATIO", "Scale", "ParamRange", "looks_like_range", "parse_range",
               "parse_ranges", "prepare_global_ranges"),
    "configs": ("ConfigTable", "DecisionColumns"),
    "traces": ("LoggedEpisode", "prepare_episode", "resolve_log_paths", "load_episodes", "BeliefTrace",
               "belief_params", "belief_trace"),
    "replay": ("OUTPUTS", "TRUTH_OUTPUTS", "GATE_MODES", "vectorised_interrupts", "score_configs",
               "evaluate_configs", "count_belief_passes"),
    "oat": ("OATRow", "OATResult", "oat_values", "run_oat", "table7_directions"),
    "global_": ("Evaluator", "GlobalResult", "global_sample", "run_global", "GateReplayEvaluator",
                "run_gate_global"),
    "closed_loop": ("CLOSED_LOOP_OUTPUTS", "CLOSED_LOOP_COLUMNS", "BASE_DIR", "CLOSED_LOOP_FORMAT",
                    "ClosedLoopConfig", "ClosedLoopPlan", "plan_closed_loop", "count_interrupts", "ClosedLoopRow",
                    "ClosedLoopResult", "run_closed_loop_oat"),
    "plots": ("plot_oat", "plot_global", "plot_closed_loop"),
}
#: public name -> the submodule that defines it
_WHERE = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
