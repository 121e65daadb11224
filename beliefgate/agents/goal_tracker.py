"""One teammate's goal belief from one seat's view (OvercookedV2: the active recipe).

A :class:`GoalTracker` feeds each observed step -- the skill evidence of the teammate's action and
the domain's goal evidence (``Domain.goal_evidence``: the recipe where the viewer sees it, the
teammate's ingredient choices, a redraw after a correct dish, a wrong dish) -- to a
:class:`~beliefgate.beliefs.goal.GoalFilter`. It is the one place this update is written: the
planning agents keep one per teammate, the policy-tree agent one for its teammate, and distillation
replays one over a logged episode so a tree is fitted on the same belief it later reads.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np

from beliefgate.beliefs.goal import GoalEvidence, GoalFilter, GoalInfo, GoalParams


class GoalTracker:
    """The goal belief of seat ``viewer`` about the goal teammate ``teammate`` pursues.

    ``names``: the domain's goal names for the layout; ``skill_names``: the library's skills (in
    the order of the evidence); ``options``: passed to ``Domain.goal_evidence`` (an ablation's
    ``use_view=False``). :attr:`info` is None until the first update.
    """

    def __init__(self, domain, viewer: int, teammate: int, names: Sequence[str], skill_names: Sequence[str],
                 params: Optional[GoalParams] = None, options: Optional[Dict[str, Any]] = None):
        self.domain = domain
        self.viewer = viewer
        self.teammate = teammate
        self.names = tuple(names)
        self.skill_names = tuple(skill_names)
        self.options = dict(options or {})
        self.filter = GoalFilter(len(self.skill_names), num_goals=len(self.names),
                                 params=params if params is not None else GoalParams())
        self.belief = self.filter.init()
        self.info: Optional[GoalInfo] = None
        #: the observer :meth:`observe` reads (set by :meth:`for_layout`)
        self.observer = None

    def update(self, prev, state, evidence, extra_loglik: Optional[np.ndarray] = None) -> float:
        """One observed step ``prev -> state``: ``evidence`` is the teammate's skill evidence of that
        step (its observer's ``StepEvidence``, shared with the skill gate); ``extra_loglik`` adds
        goal evidence from elsewhere (heard claims, ``[G]``). Returns the step's redraw weight (> 0:
        the domain flagged a goal redraw)."""
        log_weights, change, goal_loglik = self.domain.goal_evidence(
            prev, state, self.teammate, self.viewer, self.skill_names, **self.options)
        if extra_loglik is not None:
            goal_loglik = extra_loglik if goal_loglik is None else goal_loglik + extra_loglik
        self.belief, self.info = self.filter.update(self.belief, GoalEvidence(evidence, log_weights, change,
                                                                               goal_loglik))
        return change

    @classmethod
    def for_layout(cls, domain, layout: str, viewer: int, teammate: int) -> Optional["GoalTracker"]:
        """A tracker that reads its own evidence (:meth:`observe`) through the domain's default
        observer of ``teammate`` (``GateParams()``'s, as a default gate's); None where ``layout``
        names fewer than two goals (nothing to infer)."""
        from beliefgate.beliefs.gate import GateParams

        names = domain.goal_names(layout)
        if not names or len(names) < 2:
            return None
        observer = domain.make_observer(GateParams(), layout=layout, partner=teammate)
        tracker = cls(domain, viewer, teammate, names, observer.skill_names)
        tracker.observer = observer
        return tracker

    def observe(self, prev, state) -> float:
        """:meth:`update` with the evidence of this tracker's own observer (:meth:`for_layout`)."""
        return self.update(prev, state, self.observer.evidence(prev, state))

    @property
    def map_goal(self) -> Optional[str]:
        """The most probable goal's name (None before the first update)."""
        return None if self.info is None else self.names[int(self.info.map_goal)]

    @property
    def confidence(self) -> Optional[float]:
        """The most probable goal's posterior probability (None before the first update)."""
        return None if self.info is None else float(self.info.confidence)
