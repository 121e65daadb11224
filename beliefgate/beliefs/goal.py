"""The online goal filter: a belief over what the partner does (its skill) and why (its goal).

:class:`GoalFilter` is the forward algorithm of the goal model of ``docs/goal.md`` in NumPy:
the joint posterior ``p(g_t, k_t | a_{0:t})`` over goals ``g`` and skills ``k`` in log space,
one step per observed partner action. The step is
:func:`beliefgate.models.goal.step.goal_step` with ``xp = numpy``, the very function the
NumPyro model scans with ``jax.numpy`` (tested equal, and the model tested against
brute-force enumeration), so filtering and fitting cannot drift apart.

Functional core (as the skill filter): a small :class:`GoalBelief` state, ``init()`` and
``update(belief, evidence) -> (belief, GoalInfo)`` with no mutable state on the filter;
the info record holds the marginals (goal posterior, MAP goal and its probability as the
confidence, skill posterior) and the step's log-marginal-likelihood increment. This module
imports neither JAX nor NumPyro.

Per step the domain supplies a :class:`GoalEvidence`: the skill model's
:class:`~beliefgate.beliefs.evidence.StepEvidence` (controller log-probabilities, action mask,
tempering weight, completion, feasibility), the goal-conditioned skill log-weights
``[G, K]`` (``beliefgate.models.goal.goal_skill_log_weights`` builds them from a "which goals
each skill serves" table), the probability that the goal is redrawn after this step (e.g. 1
when a delivery resamples the recipe), and optional direct goal evidence ``[G]``.
"""

from __future__ import annotations

import math
from typing import Iterable, NamedTuple, Optional, Sequence

import numpy as np
from pydantic import ConfigDict, Field

from beliefgate.beliefs.evidence import StepEvidence
from beliefgate.models.checks import as_array, as_bool
from beliefgate.models.errors import (
    ActionIndexError,
    CompletedIndexError,
    ImpossibleObservationError,
    InvalidWeightError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
)
from beliefgate.models.goal.step import (
    check_goal_change,
    check_goal_loglik,
    check_goal_prior,
    check_log_weights,
    goal_step,
    initial_log_joint,
    log_sum_exp,
)
from beliefgate.validation import CheckedModel, ParamError


class GoalParamError(ParamError):
    """A :class:`GoalParams` field is bad (one line naming the field and the value)."""


class GoalParams(CheckedModel):
    """Validated configuration of a :class:`GoalFilter`.

    ``hazard`` h in [0, 1]: per-step probability that the partner redraws its skill (from
    the goal-conditioned skill prior), as in the skill model; ``goal_hazard`` eta in [0, 1]:
    per-step probability that it redraws its goal unprompted (the domain's per-step
    ``goal_change`` adds to it: ``r = 1 - (1 - eta)(1 - c)``). Any ``eta > 0`` keeps every
    goal's predicted mass at least ``eta rho(g)``, so no goal with prior mass is ever ruled
    out for good; with ``eta = 0`` a goal whose mass underflows stays at 0 until a flagged change.
    """

    error_type = GoalParamError
    model_config = ConfigDict(frozen=True, extra="forbid")

    hazard: float = Field(0.05, ge=0.0, le=1.0)
    goal_hazard: float = Field(0.002, ge=0.0, le=1.0)


class GoalBelief(NamedTuple):
    """Carried state after ``step`` updates (``G`` goals, ``K`` skills).

    Fields
    ------
    log_joint : float[G, K]
        ``log p(g_{t-1}, k_{t-1} | a_{0:t-1})``, normalised (``logsumexp == 0``). Before the
        first update: ``log rho(g) - log K`` (only its goal marginal matters then).
    reset : bool
        The next predict is a forced skill switch (episode start, visible completion).
    goal_change : float
        The domain's probability that the goal was redrawn after the last step.
    step : int
        Updates applied.
    log_marginal : float
        ``log p(a_{0:t-1})``, the sum of the per-step increments.
    """

    log_joint: np.ndarray
    reset: bool
    goal_change: float
    step: int
    log_marginal: float


class GoalInfo(NamedTuple):
    """Diagnostics of one update (logged, never fed back).

    Fields
    ------
    log_predicted : float[G, K]   ``log p(g_t, k_t | a_{<t})`` before the action enters
    log_posterior : float[G, K]   ``log p(g_t, k_t | a_{<=t})``
    log_z : float                 ``log p(a_t | a_{<t})``: the step's log-marginal-likelihood increment
    goal_posterior : float[G]     ``p(g_t | a_{<=t})``
    skill_posterior : float[K]    ``p(k_t | a_{<=t})``
    map_goal : int                argmax of ``goal_posterior`` (lowest index on ties)
    confidence : float            ``goal_posterior[map_goal]``
    map_skill : int               argmax of ``skill_posterior``
    """

    log_predicted: np.ndarray
    log_posterior: np.ndarray
    log_z: float
    goal_posterior: np.ndarray
    skill_posterior: np.ndarray
    map_goal: int
    confidence: float
    map_skill: int


class GoalEvidence(NamedTuple):
    """One observed partner step for the goal filter.

    Fields
    ------
    step : StepEvidence
        The skill model's evidence (``logprobs [K, A]``, ``action_mask [A]``, ``weight``,
        ``completed``, ``feasible``).
    log_weights : float[G, K]
        Goal-conditioned skill log-weights in ``s_t``: a newly chosen skill is drawn from
        ``pi(k | g) ∝ exp(log_weights[g, k])`` over feasible skills.
    goal_change : float
        Probability in [0, 1] that the goal is redrawn after this step (0: only the filter's
        ``goal_hazard``).
    goal_loglik : float[G] or None
        Direct evidence about the goal in this step (``None``: none).
    """

    step: StepEvidence
    log_weights: np.ndarray
    goal_change: float = 0.0
    goal_loglik: Optional[np.ndarray] = None


class GoalTrace(NamedTuple):
    """:meth:`GoalFilter.run` over a sequence: the stacked :class:`GoalInfo` fields ``[T, ...]``
    and the final belief."""

    log_posterior: np.ndarray
    log_normalizer: np.ndarray
    goal_posterior: np.ndarray
    skill_posterior: np.ndarray
    map_goal: np.ndarray
    confidence: np.ndarray
    log_marginal: float
    belief: GoalBelief


def evidence_loglik(step: StepEvidence, num_skills: int) -> np.ndarray:
    """The tempered ``loglik[k] = w log sum_{a in mask} pi_hat(a | s, k)`` of one step
    (zeros when ``w = 0``), with the skill model's boundary checks naming the field."""
    logprobs = as_array(step.logprobs, "logprobs", float)
    if logprobs.ndim != 2 or logprobs.shape[0] != num_skills or logprobs.shape[1] == 0:
        raise ShapeMismatchError(f"logprobs must have shape [{num_skills}, A], got {logprobs.shape}")
    if np.any(np.isnan(logprobs) | (logprobs == np.inf)):
        raise NonFiniteLoglikError("logprobs must not contain NaN or +inf")
    mask = as_bool(step.action_mask, "action_mask", (logprobs.shape[1],))
    weight = float(step.weight)
    if not math.isfinite(weight) or weight < 0:
        raise InvalidWeightError(f"weight must be a finite number >= 0, got {step.weight!r}")
    if weight == 0.0:
        return np.zeros(num_skills)
    if not mask.any():
        raise ActionIndexError("action_mask selects no action at a weighted step")
    with np.errstate(divide="ignore"):
        return weight * log_sum_exp(np, logprobs[:, mask], axis=-1)


class GoalFilter:
    """Online forward filter of the goal model (NumPy, log space).

    ``goal_prior``: probability weights ``[G]`` (normalised here; :class:`GoalPriorError`
    if they cannot be), or ``None`` with ``num_goals`` for a uniform prior; ``num_skills`` K;
    ``params``: :class:`GoalParams`. The filter holds only this configuration; the state is
    the :class:`GoalBelief` passed in and returned.
    """

    def __init__(self, num_skills: int, goal_prior=None, *, num_goals: Optional[int] = None,
                 params: Optional[GoalParams] = None):
        if isinstance(num_skills, bool) or not isinstance(num_skills, (int, np.integer)) or num_skills < 1:
            raise ShapeMismatchError(f"num_skills must be an integer >= 1, got {num_skills!r}")
        self.num_skills = int(num_skills)
        self.log_goal_prior = check_goal_prior(goal_prior, num_goals)
        if self.log_goal_prior.ndim != 1:
            raise ShapeMismatchError(f"goal_prior must have shape [G], got {self.log_goal_prior.shape}")
        self.num_goals = self.log_goal_prior.shape[0]
        self.params = GoalParams() if params is None else params
        if not isinstance(self.params, GoalParams):
            raise GoalParamError(f"params must be GoalParams, got {type(self.params).__name__}")

    def init(self) -> GoalBelief:
        """The belief before the first step."""
        return GoalBelief(initial_log_joint(np, self.log_goal_prior, self.num_skills), True, 0.0, 0, 0.0)

    def _check_step(self, evidence: GoalEvidence):
        if not isinstance(evidence, GoalEvidence):
            raise ShapeMismatchError(f"evidence must be GoalEvidence, got {type(evidence).__name__}")
        num_skills, num_goals = self.num_skills, self.num_goals
        step = evidence.step
        if not isinstance(step, StepEvidence):
            raise ShapeMismatchError(f"evidence.step must be StepEvidence, got {type(step).__name__}")
        feasible = (np.ones(num_skills, bool) if step.feasible is None
                    else as_bool(step.feasible, "feasible", (num_skills,)))
        if not feasible.any():
            raise NoFeasibleSkillError("no skill is feasible at this step (feasible is all False)")
        completed = -1 if step.completed is None else step.completed
        if isinstance(completed, bool) or not isinstance(completed, (int, np.integer)) \
                or not -1 <= completed < num_skills:
            raise CompletedIndexError(f"completed must be None or an index in [-1, {num_skills}), got {completed!r}")
        loglik = evidence_loglik(step, num_skills)
        w = check_log_weights(evidence.log_weights, (), num_skills, feasible)
        if w.shape[0] != num_goals:
            raise ShapeMismatchError(f"log_weights must have shape ({num_goals}, {num_skills}), got {w.shape}")
        change = float(check_goal_change(evidence.goal_change, ()))
        goal_loglik = check_goal_loglik(evidence.goal_loglik, (num_goals,))
        return loglik, w, feasible, int(completed), change, goal_loglik

    def update(self, belief: GoalBelief, evidence: GoalEvidence) -> tuple:
        """One observed step: ``(belief, GoalInfo)``. Validates the evidence (errors name the
        array); :class:`ImpossibleObservationError` if the step has probability 0 under every
        ``(g, k)`` the model allows."""
        loglik, w, feasible, completed, change, goal_loglik = self._check_step(evidence)
        return self.update_arrays(belief, loglik, w, feasible, completed, change, goal_loglik)

    def update_arrays(self, belief: GoalBelief, loglik, log_weights, feasible, completed: int = -1,
                      goal_change: float = 0.0, goal_loglik=None) -> tuple:
        """The step on already-validated arrays (``loglik [K]``, ``log_weights [G, K]``,
        ``feasible bool [K]``), e.g. rows a caller computed itself: ``(belief, GoalInfo)``."""
        if goal_loglik is None:
            goal_loglik = np.zeros(self.num_goals)
        p = self.params
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pred, log_post, log_z = goal_step(
                np, belief.log_joint, belief.reset, belief.goal_change, self.log_goal_prior, log_weights,
                loglik, goal_loglik, feasible, p.hazard, p.goal_hazard)
        log_z = float(log_z)
        if not math.isfinite(log_z):
            raise ImpossibleObservationError(
                f"step {belief.step}: the observation has probability 0 under every (goal, skill) the model allows")
        joint = np.exp(log_post)
        goals, skills = joint.sum(-1), joint.sum(0)
        map_goal = int(np.argmax(goals))
        info = GoalInfo(log_pred, log_post, log_z, goals, skills, map_goal, float(goals[map_goal]),
                        int(np.argmax(skills)))
        new = GoalBelief(log_post, completed >= 0, float(goal_change), belief.step + 1,
                         belief.log_marginal + log_z)
        return new, info

    def run(self, evidence: Iterable[GoalEvidence], belief: Optional[GoalBelief] = None) -> GoalTrace:
        """:meth:`update` over a sequence (from :meth:`init` unless ``belief`` is given)."""
        belief = self.init() if belief is None else belief
        infos: list = []
        for ev in evidence:
            belief, info = self.update(belief, ev)
            infos.append(info)
        if not infos:
            raise ShapeMismatchError("evidence is empty: nothing to filter")
        stack = lambda name: np.stack([getattr(i, name) for i in infos])  # noqa: E731
        return GoalTrace(stack("log_posterior"), stack("log_z"), stack("goal_posterior"), stack("skill_posterior"),
                         stack("map_goal"), stack("confidence"), belief.log_marginal, belief)


def goal_block(info: GoalInfo, goal_names: Optional[Sequence[str]] = None,
               skill_names: Optional[Sequence[str]] = None) -> dict:
    """A JSON-ready summary of one step for planners and logs: ``map_goal`` and ``map_skill``
    (names when given, else indices), ``confidence`` (the MAP goal's probability), both
    posteriors as ``{name: probability}`` and ``log_z``. Names must match the posteriors' lengths."""
    goals = [str(i) for i in range(len(info.goal_posterior))] if goal_names is None else list(goal_names)
    skills = [str(i) for i in range(len(info.skill_posterior))] if skill_names is None else list(skill_names)
    if len(goals) != len(info.goal_posterior):
        raise ShapeMismatchError(f"goal_names has {len(goals)} names for {len(info.goal_posterior)} goals")
    if len(skills) != len(info.skill_posterior):
        raise ShapeMismatchError(f"skill_names has {len(skills)} names for {len(info.skill_posterior)} skills")
    return {
        "map_goal": goals[info.map_goal] if goal_names is not None else info.map_goal,
        "confidence": float(info.confidence),
        "goal_posterior": {n: float(p) for n, p in zip(goals, info.goal_posterior)},
        "map_skill": skills[info.map_skill] if skill_names is not None else info.map_skill,
        "skill_posterior": {n: float(p) for n, p in zip(skills, info.skill_posterior)},
        "log_z": float(info.log_z),
    }


#: the probability that a teammate's goal claim is true, as the talking agents use it (OverForge's
#: ``trust=`` default and the flat baseline's): set before any measurement, not tuned
CLAIM_TRUST = 0.9


def claim_loglik(num_goals: int, goal: int, trust: float) -> np.ndarray:
    """Direct goal evidence ``[G]`` from a teammate's claim that goal ``goal`` is the one it pursues
    (a message): the claim is true with probability ``trust``, else names one of the other goals
    uniformly, so ``log trust`` at ``goal`` and ``log((1 - trust) / (G - 1))`` elsewhere. ``trust``
    in (0, 1) (1 would rule every other goal out for good; with one goal the claim says nothing)."""
    if not 0.0 < float(trust) < 1.0:
        raise InvalidWeightError(f"claim trust must lie in (0, 1), got {trust!r}")
    if not 0 <= int(goal) < int(num_goals):
        raise ShapeMismatchError(f"claimed goal {goal} is not one of {num_goals} goals")
    out = np.zeros(int(num_goals))
    if num_goals > 1:
        out[:] = math.log((1.0 - trust) / (num_goals - 1))
        out[int(goal)] = math.log(trust)
    return out


def goal_marginals(belief: GoalBelief) -> tuple:
    """``(goal posterior [G], skill posterior [K])`` of a belief."""
    joint = np.exp(belief.log_joint)
    return joint.sum(-1), joint.sum(0)


def steps_to_confidence(goal_posterior: Sequence, goal: int, level: float = 0.9) -> Optional[int]:
    """The number of updates ``n`` such that after the ``n``-th update and every later one
    ``goal``'s posterior (row ``t`` of ``goal_posterior`` is after update ``t + 1``) is at or
    above ``level``; ``None`` if it is below at the last step."""
    post = np.asarray(goal_posterior)[:, goal]
    below = np.flatnonzero(post < level)
    if below.size == 0:
        return 1
    return None if below[-1] == post.shape[0] - 1 else int(below[-1] + 2)


__all__ = ["GoalParams", "GoalParamError", "GoalBelief", "GoalInfo", "GoalEvidence", "GoalTrace", "GoalFilter",
           "CLAIM_TRUST", "claim_loglik", "evidence_loglik", "goal_block", "goal_marginals", "steps_to_confidence"]
