"""Online partner-skill beliefs and the gates built on them.

* :mod:`beliefgate.beliefs.gate` -- the plug-in :class:`Gate` (NumPy, microseconds per step)
* :mod:`beliefgate.beliefs.gates` -- the stable-MAP and change-point gates as pure functions
* :mod:`beliefgate.beliefs.filter` -- the JAX functional filter, smoother and Viterbi (offline work)
* :mod:`beliefgate.beliefs.evidence` -- the domain -> belief boundary
* :mod:`beliefgate.beliefs.goal` -- the goal filter: a latent goal above the skill chain (NumPy)

This package never imports :mod:`beliefgate.planners` or any domain module at import time.
"""

from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.beliefs.gate import Decision, Gate, GateParams
from beliefgate.beliefs.goal import GoalEvidence, GoalFilter, GoalParams

__all__ = ["Decision", "Gate", "GateParams", "GoalEvidence", "GoalFilter", "GoalParams", "StepEvidence"]
