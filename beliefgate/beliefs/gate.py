"""The plug-in gate: ``from beliefgate import Gate, GateParams``.

A :class:`Gate` is the convenience class over the functional core
(:mod:`beliefgate.beliefs.core`, ``make_gate(params, num_skills) -> GateFunctions``): it binds
one :class:`GateParams`, holds one immutable :class:`GateState` and swaps it after
each step, so a step that raises leaves the gate exactly as it was. The state is a
plain value: read it with :attr:`Gate.state`, put an earlier one back with
:meth:`Gate.restore` (the HTTP service rolls a session back this way).

Entry points (each validates, then calls :func:`beliefgate.beliefs.core.advance`):

* :meth:`Gate.step` - a ``[K, A]`` table of action log-probabilities (the caller's
  likelihood controller) and the index of the action the partner took;
* :meth:`Gate.step_evidence` - a :class:`~beliefgate.beliefs.evidence.StepEvidence`
  (table, consistent-action mask, weight, completion, feasibility);
* :meth:`Gate.step_loglik` - only the log-likelihood of the observed action per skill;
* :meth:`Gate.observe` - two domain states, for a gate built by a domain plug-in
  (:meth:`Gate.for_domain`; Overcooked: ``beliefgate.envs.overcooked.overcooked_gate``).

The core is domain-free: domains register an observer factory under the entry-point
group ``beliefgate.domains`` (see :mod:`beliefgate.plugins`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from beliefgate.beliefs import core as _core
from beliefgate.beliefs.config import GateParamError, GateParams
from beliefgate.beliefs.core import (
    BeliefState,
    Decision,
    GateInfo,
    GateState,
    LoglikEvidence,
    TableEvidence,  # noqa: F401  (re-exported)
)
from beliefgate.plugins import make_observer
from beliefgate.beliefs.errors import (
    ActionIndexError,
    BeliefInputError,
    CompletedIndexError,
    ImpossibleObservationError,
    InvalidParameterError,
    InvalidWeightError,
    NoFeasibleSkillError,
    NonFiniteLoglikError,
    ShapeMismatchError,
    UnknownSkillError,
)
from beliefgate.beliefs.evidence import StepEvidence

# the per-step functions, bound once (a module attribute lookup per call is ~30 ns)
_advance, _decide, _reduce_table_args = _core.advance, _core.decide, _core.reduce_table_args


class Gate:
    """Online partner-skill belief plus interrupt signals for one teammate.

    Build with :meth:`from_logprobs` (any domain) or :meth:`for_domain`.
    Not thread-safe; use one gate per teammate. Picklable.
    """

    def __init__(
        self,
        num_skills: int,
        params: Optional[GateParams] = None,
        skill_names: Optional[Sequence[str]] = None,
        prior_counts=None,
        *,
        observer=None,
        domain: Optional[tuple] = None,
    ):
        self._config = _core.gate_config(params, num_skills, skill_names, prior_counts)
        self._observer = observer
        self._domain = domain  # (name, options) to rebuild the observer after unpickling
        self._state = _core.init(self._config)

    # ----------------------------------------------------------------- construction

    @classmethod
    def from_logprobs(
        cls,
        num_skills: int,
        params: Optional[GateParams] = None,
        skill_names: Optional[Sequence[str]] = None,
        prior_counts=None,
    ) -> "Gate":
        """A domain-agnostic gate fed with per-step action log-probability tables (at most
        :data:`~beliefgate.limits.MAX_SKILLS` skills: more is a :class:`~beliefgate.limits.SizeLimitError`)."""
        return cls(num_skills, params, skill_names, prior_counts)

    @classmethod
    def for_domain(cls, domain: str, params: Optional[GateParams] = None, **options) -> "Gate":
        """A gate whose :meth:`observe` reads two states of a registered domain.

        ``options`` go to the domain's observer factory (Overcooked: ``layout``,
        ``partner``). Raises :class:`beliefgate.plugins.UnknownDomainError`
        when no installed package registers ``domain``.
        """
        return cls.for_observer(lambda p, **o: make_observer(domain, p, **o), params, domain=domain, **options)

    @classmethod
    def for_observer(cls, factory, params: Optional[GateParams] = None, *, domain: Optional[str] = None,
                     **options) -> "Gate":
        """A gate whose :meth:`observe` reads states through ``factory(params, **options)``, an
        observer (``skill_names``, ``evidence(state, next_state)``); ``params`` default to
        ``GateParams()``. ``domain``: the name the domain is registered under, so that an unpickled
        gate rebuilds its observer through the plug-in (``None``: it cannot observe after pickling).
        :meth:`for_domain` and ``Domain.make_gate`` are this with the domain's observer factory."""
        params = GateParams() if params is None else params
        observer = factory(params, **options)
        return cls(len(observer.skill_names), params, observer.skill_names, observer=observer,
                   domain=None if domain is None else (domain, dict(options)))

    @classmethod
    def for_overcooked(cls, layout: str, params: Optional[GateParams] = None, partner: int = 1) -> "Gate":
        """Deprecated alias of ``beliefgate.envs.overcooked.overcooked_gate(layout, params, partner)``."""
        warnings.warn("Gate.for_overcooked is deprecated; use "
                      "beliefgate.envs.overcooked.overcooked_gate(layout, params, partner)",
                      DeprecationWarning, stacklevel=2)
        return cls.for_domain("overcooked", params, layout=layout, partner=partner)

    # ----------------------------------------------------------------- properties

    @property
    def params(self) -> GateParams:
        return self._config.params

    @property
    def config(self) -> _core.GateConfig:
        """The bound configuration the functional core runs with."""
        return self._config

    @property
    def state(self) -> GateState:
        """The current (immutable) state; its arrays are never modified in place."""
        return self._state

    def restore(self, state: GateState) -> None:
        """Put back a state this gate returned earlier (from :attr:`state`).

        The state must have this gate's layout field by field (a state of a gate with another
        window or change-point horizon was taken and gave wrong posteriors silently) and
        finite numbers where the gate keeps probabilities."""
        problem = _layout_problem(state, _core.init(self._config), "state")
        if problem is None and not all(np.all(np.isfinite(np.asarray(a, dtype=np.float64)))
                                       for a in (state.belief.belief, state.belief.pi0, state.belief.counts)):
            problem = "state.belief: non-finite values"
        if problem is not None:
            raise ShapeMismatchError(f"restore() takes a GateState of this gate ({self._config.num_skills} skills, "
                                     f"gate={self._config.mode!r}, model={self.params.model!r}): {problem}")
        self._state = state

    @property
    def observer(self):
        """The domain observer behind :meth:`observe` (``None`` for a plain gate)."""
        if self._observer is None and self._domain is not None:
            name, options = self._domain
            self._observer = make_observer(name, self.params, **options)
        return self._observer

    @property
    def domain(self) -> Optional[tuple]:
        """``(name, options)`` of the domain plug-in, or ``None``."""
        return self._domain

    @property
    def num_skills(self) -> int:
        return self._config.num_skills

    @property
    def skill_names(self) -> tuple[str, ...]:
        return self._config.names

    @property
    def memory(self) -> np.ndarray:
        """Completion counts the smoothed prior uses now (earlier episodes included)."""
        return self._state.belief.counts.copy()

    @property
    def t(self) -> int:
        """Index of the next step."""
        return self._state.belief.t

    # ----------------------------------------------------------------- control

    def notify_replanned(self) -> None:
        """The ego replanned for its own reasons: start both cooldowns now.

        Equivalent to an interrupt at the most recent step (``t - 1``), so the next
        interrupt can come ``cooldown`` steps after it.
        """
        self._state = _core.notify_replanned(self._state)

    def reset(self, keep_memory: bool = False, *, memory=None) -> None:
        """Start a new episode.

        ``keep_memory=True`` keeps the completion counts (same partner: they seed the
        smoothed prior of the next episode); ``False`` returns to the counts the gate
        was built with. Anything but a bool is an :class:`InvalidParameterError` (a string such
        as ``"no"`` would read as true). ``memory`` (float[K], in :attr:`skill_names` order) starts
        the episode from these counts instead: the counts an earlier process kept, e.g. read back
        from a partner-memory store (:mod:`beliefgate.agents.memory`); checked as ``prior_counts``
        are, and not combined with ``keep_memory=True``.
        """
        keep_memory = check_keep_memory(keep_memory)
        if memory is not None:
            if keep_memory:
                raise InvalidParameterError("reset(): give keep_memory=True or memory=..., not both")
            counts = _core.check_counts(memory, self._config.num_skills, "memory")
            counts.setflags(write=False)
            self._state = _core.init(self._config, counts)
            return
        self._state = _core.init(self._config, self._state.belief.counts if keep_memory else None)

    def save_params(self, path: Union[str, Path]) -> Path:
        return self.params.save(path)

    # ----------------------------------------------------------------- pickling

    def __getstate__(self) -> dict:
        return {
            "params": self.params.to_json(indent=None),
            "skill_names": self._config.names,
            "prior_counts": np.asarray(self._config.prior_counts),
            "domain": self._domain,
            "state": self._state,
        }

    def __setstate__(self, data: dict) -> None:
        self._config = _core.gate_config(GateParams.from_json(data["params"]), len(data["skill_names"]),
                                         data["skill_names"], data["prior_counts"])
        self._domain = data.get("domain")
        self._observer = None
        self._state = data["state"]

    def __repr__(self) -> str:
        p = self.params
        return f"Gate(num_skills={self.num_skills}, model={p.model!r}, gate={p.gate.kind!r}, t={self.t})"

    # ----------------------------------------------------------------- steps

    def _take(self, reduced: _core.Reduced, ego_active) -> Decision:
        if ego_active is not True:  # checked after the evidence, as before
            ego_active = check_ego_active(ego_active)
        config = self._config
        state, info = _advance(config, self._state, reduced, ego_active)
        self._state = state  # swapped last: a raising step leaves the gate as it was
        return _decide(config, info)

    def step(self, action_logprobs, action, completed=None, *, feasible=None, weight=1.0,
             ego_active: bool = True) -> Decision:
        """Condition on one partner action.

        ``action_logprobs``: float[K, A], ``log pi_hat(a | s_t, k)`` of every action
        under every skill (``-inf`` allowed where a row keeps a finite entry);
        ``action``: index of the action taken; ``completed``: skill name or index
        the action visibly finished (or ``None``); ``feasible``: bool[K] (``None`` =
        all); ``weight``: tempering weight (0 = exclude, e.g. STAY); ``ego_active``:
        whether the ego is executing a skill that could be interrupted.
        """
        reduced = _reduce_table_args(self._config, action_logprobs, action, completed, feasible, weight)
        return self._take(reduced, ego_active)

    def step_evidence(self, ev: StepEvidence, *, ego_active: bool = True) -> Decision:
        """Condition on a :class:`StepEvidence` (the general entry point).

        The likelihood of the observation under skill ``k`` is
        ``sum_{a in mask} pi_hat(a | s_t, k)`` tempered by ``weight``; the gate's
        ``l_t`` uses the best consistent action under the MAP skill.
        """
        return self._take(_core.reduce_step(self._config, ev), ego_active)

    def step_loglik(self, loglik, completed=None, *, feasible=None, weight=1.0,
                    ego_active: bool = True) -> Decision:
        """Condition on ``loglik[k] = log pi_hat(a_t | s_t, k)`` only.

        The gate then compares the MAP skill with the best feasible skill:
        ``l_t = exp(lambda (loglik[m] - max_k loglik[k]))``.
        """
        ev = LoglikEvidence(loglik, completed, feasible, weight)
        return self._take(_core.reduce_loglik(self._config, ev), ego_active)

    def update(self, evidence, *, ego_active: bool = True) -> Decision:
        """Condition on any evidence form of :mod:`beliefgate.beliefs.core`."""
        return self._take(_core.reduce(self._config, evidence), ego_active)

    def observe(self, state, next_state, *, ego_active: bool = True) -> Decision:
        """Infer the partner's action from two domain states and condition on it."""
        observer = self.observer
        if observer is None:
            raise InvalidParameterError(
                "observe() needs a gate built by a domain plug-in (Gate.for_domain, "
                "beliefgate.envs.overcooked.overcooked_gate)")
        return self.step_evidence(observer.evidence(state, next_state), ego_active=ego_active)


def _layout_problem(value, template, where: str) -> Optional[str]:
    """Where ``value`` differs in layout from ``template`` (same NamedTuple types, array shapes,
    ``None`` where ``None``), or ``None`` when it does not."""
    if template is None or value is None:
        return None if value is None and template is None else f"{where}: {'missing' if value is None else 'unexpected'}"
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        if type(value) is not type(template):
            return f"{where}: a {type(template).__name__} is needed, got {type(value).__name__}"
        for name in template._fields:
            problem = _layout_problem(getattr(value, name), getattr(template, name), f"{where}.{name}")
            if problem is not None:
                return problem
        return None
    if hasattr(template, "shape"):
        shape = getattr(value, "shape", None)
        if shape is None or tuple(shape) != tuple(template.shape):
            return f"{where}: shape {tuple(template.shape)} is needed, got {shape}"
        return None
    return None


def check_keep_memory(value) -> bool:
    """``keep_memory`` of a reset must be a bool (``np.bool_`` too): ``"no"`` or ``1`` is refused, not
    read as true (the in-process gate and the HTTP client share this check)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"keep_memory must be True or False, got {value!r}")
    return bool(value)


def check_ego_active(value) -> bool:
    """``ego_active`` must be a real boolean: the string "false" is not False."""
    if value is True or value is False:
        return value
    if isinstance(value, (np.bool_, int)) and not isinstance(value, str) and value in (0, 1):
        return bool(value)
    raise InvalidParameterError(f"ego_active must be a boolean, got {value!r}")


__all__ = [
    "Gate",
    "GateParams",
    "GateState",
    "BeliefState",
    "GateInfo",
    "Decision",
    "GateParamError",
    # errors re-exported for callers of the gate (defined in beliefgate.beliefs.errors)
    "BeliefInputError",
    "ActionIndexError",
    "CompletedIndexError",
    "UnknownSkillError",
    "InvalidWeightError",
    "ShapeMismatchError",
    "NonFiniteLoglikError",
    "NoFeasibleSkillError",
    "InvalidParameterError",
    "ImpossibleObservationError",
]
