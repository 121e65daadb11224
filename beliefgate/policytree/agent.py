"""Play a policy tree as an Overcooked agent (the ``policy-tree:PATH[:bayes]`` agent).

At every timestep (the tree's decision point, as in the paper) the agent builds the flat
state dict (``Domain.flat_state``), calls the tree in its
:class:`~beliefgate.policytree.sandbox.Sandbox` and executes the chosen skill with the shared
:meth:`Domain.executor`. A new choice replaces the running
skill; the same choice lets it run on.

* On a layout where a seat cannot do everything itself (forced_coordination),
  ``place_obj_on_counter`` targets the counters both cooks reach, as the scripted partners do.
* A choice the executor cannot carry out now (its held-object requirement fails or no
  target is reachable) is *not executable*: the agent waits this step and logs it
  (``executable: false``), so the summarizer sees the failure in the trace.
* A tree call that fails (timeout, violation, bad result) is a *fallback*: the agent keeps
  its running skill (or waits), counts it in ``tree_errors`` / ``fallbacks`` and logs the rule.
* ``bayes``: ``teammate_last_inferred_skill`` is the belief gate's MAP skill
  (``Domain.make_gate`` of the layout's domain) instead of the tree's own previous prediction.

Each step's info carries the tree's prediction as ``partner_map`` (so the partner-intent
accuracy metric scores it), the chosen skill, whether it was executable, and the decision
latency (flat state + sandbox call) in microseconds.

Sandboxes are shared per (code, seat, limits) in a process-wide cache so that the many
episodes of an evaluation reuse one worker; :func:`close_sandboxes` kills them all (an
exit handler and each sandbox's finaliser do so at interpreter exit anyway).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from beliefgate.agents.goal_tracker import GoalTracker
from beliefgate.envs.domain import SkillStatus, domain_for_layout
from beliefgate.errors import InputError
from beliefgate.planners.fallbacks import Fallback, FallbackLog
from beliefgate.policytree.distilled import digest, distilled_code
from beliefgate.policytree.sandbox import Sandbox, SandboxError, SandboxTimeout, SandboxViolation

#: the fallback reason (``beliefgate.planners.errors.FALLBACK_REASONS``) under which a refused tree
#: call is counted: over a time limit = deadline, over a CPU budget = budget, a worker that could
#: not run = unavailable, any other refusal (bad result, error in the tree) = unusable_reply
TREE_FALLBACK_REASONS = {"cpu-per-call": "deadline", "wall-clock": "deadline", "cpu-per-episode": "budget",
                         "cpu-lifetime": "budget", "worker-died": "unavailable", "worker-start": "unavailable"}

ENTRY = "PredictTeammateThenPlan"
PREFIX = "policy-tree"

_SANDBOXES: Dict[Tuple, Sandbox] = {}


class TreeSpecError(InputError):
    """A ``policy-tree`` spec or tree file that cannot be used."""


def shared_sandbox(code: str, player: int, self_skills: Sequence[str], partner_skills: Sequence[str],
                   cpu_ms: float, memory_mb: int, episode_cpu_ms: float) -> Sandbox:
    """The cached live sandbox for this code and seat (started, or restarted, on demand)."""
    key = (digest(code), player, tuple(self_skills), tuple(partner_skills),
           cpu_ms, memory_mb, episode_cpu_ms)
    box = _SANDBOXES.get(key)
    if box is None:
        box = Sandbox(code, ENTRY, cpu_ms=cpu_ms, memory_mb=memory_mb, episode_cpu_ms=episode_cpu_ms,
                      self_skills=self_skills, partner_skills=partner_skills)
        _SANDBOXES[key] = box
    return box


def close_sandboxes() -> int:
    """Kill every cached sandbox worker; returns how many sandboxes were closed."""
    n = len(_SANDBOXES)
    for box in _SANDBOXES.values():
        box.close()
    _SANDBOXES.clear()
    return n


def believed_keys(goal: Optional[GoalTracker]) -> Dict[str, object]:
    """The flat state's ``believed_recipe`` / ``believed_confidence`` from a recipe tracker (none
    without one: a layout with one recipe, or the classic game)."""
    if goal is None:
        return {}
    return {"believed_recipe": goal.map_goal, "believed_confidence": goal.confidence}


class PolicyTreeAgent:
    """An ego agent whose every decision is one sandboxed call of ``PredictTeammateThenPlan``."""

    def __init__(self, code: str, *, bayes: bool = False, name: Optional[str] = None, params=None,
                 cpu_ms: float = 50, memory_mb: int = 256, episode_cpu_ms: float = 5000):
        if not isinstance(code, str) or not code.strip():
            raise TreeSpecError("a policy tree needs non-empty code")
        self.code = code
        self.bayes = bool(bayes)
        self.name = name or (f"{PREFIX}:<code>" + (":bayes" if bayes else ""))
        #: the gate runs (and reads ``params``) only in the Bayesian variant
        self.keeps_belief = self.bayes
        if params is None and self.bayes:
            from beliefgate.beliefs.gate import GateParams

            params = GateParams()
        self.params = params
        self.limits = {"cpu_ms": cpu_ms, "memory_mb": memory_mb, "episode_cpu_ms": episode_cpu_ms}
        self.box: Optional[Sandbox] = None
        self.latencies_us: List[float] = []

    # --------------------------------------------------------------------- API
    def reset(self, layout: str, player: int, seed: int) -> None:
        domain = self.domain = domain_for_layout(layout)
        self.layout = layout
        self.player = player
        self.partner = next(i for i in range(domain.players(layout)) if i != player)
        self.rng = np.random.default_rng(seed)
        self.controller = domain.controller(layout)
        self.library = self.controller.library
        self.executor = domain.executor(self.controller, player, self.rng)
        self.self_skills = domain.seat_skills(layout, player)
        try:
            self.box = shared_sandbox(self.code, player, self.self_skills, domain.seat_skills(layout, self.partner),
                                      **self.limits)
        except (SandboxViolation, SandboxTimeout) as exc:  # refused at load: the tree, not the episode
            raise TreeSpecError(f"{self.name}: {exc}") from None
        self.box.new_episode()
        self.gate = None
        if self.bayes:
            self.gate = domain.make_gate(layout, self.params, partner=self.partner)
        #: the recipe belief behind the flat state's ``believed_*`` keys, where the layout draws
        #: several recipes (the same tracker distillation replays over its logs)
        self.goal = GoalTracker.for_layout(domain, layout, player, self.partner)
        self.prev = None  # the domain state of the last step
        self.active: Optional[int] = None
        self.mate_completed: Optional[str] = None
        self.last_prediction: Optional[str] = None
        self.last_choice: Optional[str] = None
        self.belief_map: Optional[str] = None
        self.replans = 0
        self.tree_calls = 0
        self.fallback_log = FallbackLog()
        self.not_executable = 0
        self.latencies_us = []
        self._info: Dict[str, object] = {}

    def act(self, state, my_events: Sequence[str] = ()) -> int:
        domain = self.domain
        if self.prev is not None:
            done = domain.completed_skills(domain.detect_events(self.prev, state)[self.partner], self.library)
            if done:
                self.mate_completed = self.library.names[done[-1]]
            if self.gate is not None:
                self.belief_map = self.gate.observe(self.prev, state, ego_active=self.active is not None).map_name
            if self.goal is not None:
                self.goal.observe(self.prev, state)
        if self.active is not None and self.executor.update(state, my_events) is not SkillStatus.RUNNING:
            self.active = None
        inferred = self.belief_map if self.bayes else self.last_prediction
        started = time.perf_counter()
        error = None
        prediction = choice = None
        try:
            d = domain.flat_state(state, self.player, teammate_last_completed_skill=self.mate_completed,
                                  teammate_last_inferred_skill=inferred, self_last_skill=self.last_choice,
                                  **believed_keys(self.goal))
            prediction, choice = self.box.call(d)
        except SandboxError as exc:
            error = exc.rule
            self.fallback_log.record(Fallback("tree", TREE_FALLBACK_REASONS.get(exc.rule, "unusable_reply"),
                                              str(exc)[:200]))
        self.latencies_us.append((time.perf_counter() - started) * 1e6)
        self.tree_calls += 1
        executable = None
        if choice is not None:
            k = self.library.index(choice)
            # targets grounded as the planning agents ground them (the teacher of a distilled tree):
            # on a split floor a hand-over goes on a shared counter, a surplus item off them
            executable = bool(self.library.requirement_met(k, state.players[self.player].held)
                              and self.executor.can_start(state, k))
            if not executable:
                self.not_executable += 1
                self.active = None
                self.executor.stop()
            elif k != self.active:
                if self.active is not None:
                    self.replans += 1
                self.executor.start_in(state, k)
                self.active = k
            self.last_prediction = prediction
            self.last_choice = choice
        action = (self.executor.act(state) if self.active is not None
                  else domain.idle_action(state, self.player, self.rng))
        self._info = {
            "skill": self.active_skill, "replans": self.replans, "llm_calls": 0,
            "partner_map": prediction, "tree_skill": choice, "executable": executable,
            "tree_error": error, "tree_errors": self.tree_errors, "fallbacks": self.tree_errors,
            "fallback_events": self.fallback_log.drain(),
            "not_executable": self.not_executable, "tree_us": round(self.latencies_us[-1], 1),
            "belief_map": self.belief_map,
        }
        if self.goal is not None:
            self._info["recipe_map"] = self.goal.map_goal
            self._info["recipe_confidence"] = (None if self.goal.confidence is None
                                               else round(self.goal.confidence, 4))
        self.prev = state
        return int(action)

    def info(self) -> Dict[str, object]:
        return dict(self._info) if self._info else {"skill": None, "replans": 0, "llm_calls": 0}

    @property
    def tree_errors(self) -> int:
        """Refused tree calls this episode (each one a fallback of role ``tree``)."""
        return self.fallback_log.total

    def fallback_summary(self) -> Dict[str, object]:
        """This episode's refused tree calls as fallbacks (role ``tree``): the episode summary, the
        results table's ``fallbacks`` and ``fallback_<reason>`` columns and the report count them."""
        return self.fallback_log.summary()

    @property
    def active_skill(self) -> Optional[str]:
        return self.library.names[self.active] if self.active is not None else None


def parse_spec(spec: str) -> Tuple[str, bool]:
    """``PATH`` or ``PATH:bayes`` (also ``seed:LAYOUT[:bayes]``, ``distilled:LAYOUT[:bayes]``) -> (source, bayes)."""
    if not isinstance(spec, str) or not spec:
        raise TreeSpecError(f"a policy-tree spec is PATH or PATH:bayes, got {spec!r}")
    bayes = spec.endswith(":bayes")
    source = spec[: -len(":bayes")] if bayes else spec
    if not source:
        raise TreeSpecError(f"policy-tree spec {spec!r} names no tree file")
    return source, bayes


def load_tree_code(source: str) -> str:
    """The code of a tree file, of a seed tree for ``seed:LAYOUT``, or of the distilled tree shipped
    for ``distilled:LAYOUT``."""
    if source.startswith("seed:"):
        from beliefgate.policytree.seeds import seed_code

        return seed_code(source[len("seed:"):])
    if source.startswith("distilled:"):
        return distilled_code(source[len("distilled:"):])
    from beliefgate.fileio import read_text
    from beliefgate.policytree._worker import MAX_CODE_CHARS

    size = Path(source).stat().st_size if Path(source).is_file() else 0
    if size > 4 * MAX_CODE_CHARS:  # UTF-8: at most 4 bytes a character
        raise TreeSpecError(f"policy tree file {source}: {size} bytes, more than a tree may have "
                            f"({MAX_CODE_CHARS} characters)")
    return read_text(source, TreeSpecError, "policy tree file")


#: digests of the tree codes the sandbox has loaded in this process (each is checked once)
_ACCEPTED: set = set()


def check_tree_source(source: str) -> str:
    """The code of ``source`` (a tree file or ``seed:LAYOUT``), checked as the sandbox checks it
    when an agent loads it (syntax, allowed statements and names, the entry function), without
    playing: a :class:`TreeSpecError` naming the file for code the sandbox would refuse. A code
    once accepted is not started again in this process."""
    code = load_tree_code(source)
    if not code.strip():
        raise TreeSpecError(f"policy tree file {source}: empty (a tree needs a function {ENTRY})")
    key = digest(code)
    if key in _ACCEPTED:
        return code
    try:
        with Sandbox(code, ENTRY):
            pass
    except (SandboxViolation, SandboxTimeout) as exc:  # a module body over the time limits is refused too
        raise TreeSpecError(f"policy tree file {source}: {exc}") from None
    _ACCEPTED.add(key)
    return code


def tree_digest(spec: str) -> Optional[str]:
    """A short hash of the tree's code for ``spec`` (``PATH[:bayes]``); None for a seed tree
    (``seed:LAYOUT``, shipped with the package). The agent table's ``digest`` for ``policy-tree``."""
    source = parse_spec(spec)[0]
    if source.startswith("seed:"):
        return None
    return digest(load_tree_code(source))[:12]


def make_policy_tree_agent(spec: str, llm=None, gate_params=None, **limits) -> PolicyTreeAgent:
    """Build the agent for ``spec`` (``PATH`` or ``PATH:bayes``; ``seed:LAYOUT`` for a seed tree,
    ``distilled:LAYOUT`` for the distilled tree shipped for the layout).

    ``llm`` is accepted so that the registry can pass one uniformly, and ignored: a tree makes
    no LLM calls. ``gate_params`` (a :class:`~beliefgate.beliefs.gate.GateParams`) configures the
    Bayesian variant's gate; giving it to the plain variant is an error (nothing would read it).
    ``limits`` go to the sandbox (``cpu_ms``, ``memory_mb``, ``episode_cpu_ms``).
    """
    source, bayes = parse_spec(spec)
    if gate_params is not None and not bayes:
        from beliefgate.agents.registry import GateParamsNotUsedError

        raise GateParamsNotUsedError(f"agent {PREFIX}:{spec} runs no gate; use {PREFIX}:{source}:bayes")
    # checked as the sandbox will load it, now: a grid that names a refused tree fails when its
    # agents are built, before any episode or run directory (once per code and process)
    return PolicyTreeAgent(check_tree_source(source), bayes=bayes, name=f"{PREFIX}:{spec}", params=gate_params,
                           **limits)


