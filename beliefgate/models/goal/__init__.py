"""A latent goal above the skill chain (``docs/goal.md``), domain-free.

* :mod:`beliefgate.models.goal.step` -- the forward step over ``xp`` (NumPy or JAX), the
  boundary checks and :func:`~beliefgate.models.goal.step.goal_skill_log_weights`; no JAX import;
* :mod:`beliefgate.models.goal.model` -- the NumPyro model (marginalised and explicit), the JAX
  scan, simulation and :func:`~beliefgate.models.goal.model.fit_goal`.

The names of both are available here; those of ``model`` are imported on first use, so that
``beliefgate.beliefs.goal`` (the NumPy online filter) does not load JAX.
"""

from beliefgate.models.goal.step import *  # noqa: F401,F403
from beliefgate.models.goal.step import __all__ as _step_all

_MODEL_NAMES = (
    "GOAL_HAZARD", "GOAL_PARAMS", "GoalObs", "GoalData", "goal_data", "goal_observations", "GoalScan", "scan_goal", "filter_goal",
    "goal_trajectory_log_likelihood", "partner_goal_model", "partner_goal_model_explicit",
    "sample_goal_paths", "GoalFitConfig", "GoalFitError", "GoalFitData", "fit_goal", "goal_datasets",
    "goal_data_from_idata", "GOAL_FIT_ATTR", "GOAL_FIT_FORMAT", "goal_fit_file",
)


def __getattr__(name):
    if name in _MODEL_NAMES:
        from beliefgate.models.goal import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_step_all) + list(_MODEL_NAMES)
