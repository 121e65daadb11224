"""Adapter over the ``overcooked`` package's ``OvercookedEnv`` (real dynamics).

Speaks beliefgate's language: integer actions (N, S, E, W, STAY, INTERACT),
:class:`SymbolicState` observations and per-player interaction events.
The package's gym wrapper is avoided (it crashes in its shaping potential);
its motion planners are never built, so nothing is written to site-packages.
"""

from __future__ import annotations
from beliefgate.errors import InputError

from dataclasses import dataclass
from typing import List, Sequence, Tuple

from beliefgate.envs.overcooked.dynamics import detect_events
from beliefgate.envs.overcooked.layouts import make_mdp, resolve_layout
from beliefgate.envs.overcooked.state import SymbolicState, from_overcooked
from beliefgate.envs.overcooked.tables import NUM_ACTIONS

DEFAULT_HORIZON = 400


class InvalidActionError(InputError):
    """An action index outside 0..5 or a joint action of the wrong length."""


@dataclass
class StepResult:
    state: SymbolicState
    reward: float
    done: bool
    events: List[List[str]]


class OvercookedAdapter:
    """One Overcooked episode at a time on a classic layout."""

    def __init__(self, layout: str, horizon: int = DEFAULT_HORIZON, old_dynamics: bool = True):
        from overcooked.mdp.actions import Action
        from overcooked.mdp.overcooked_env import OvercookedEnv

        if horizon <= 0:
            raise ValueError(f"horizon must be positive, got {horizon}")
        self.layout = resolve_layout(layout)
        self.horizon = int(horizon)
        self.mdp = make_mdp(self.layout, old_dynamics)
        self._actions = Action.INDEX_TO_ACTION
        self.env = OvercookedEnv.from_mdp(self.mdp, horizon=self.horizon, info_level=0)
        _disable_motion_planner(self.env)
        self.num_players = self.mdp.num_players
        self.score = 0.0
        self.state: SymbolicState = from_overcooked(self.env.state, self.layout)

    def reset(self) -> SymbolicState:
        self.env.reset(regen_mdp=False)
        _disable_motion_planner(self.env)
        self.score = 0.0
        self.state = from_overcooked(self.env.state, self.layout)
        return self.state

    def set_state(self, state: SymbolicState) -> SymbolicState:
        """Continue the episode from a given symbolic state (scenario set-up, forward models)."""
        from beliefgate.envs.overcooked.state import to_overcooked

        if state.layout != self.layout:
            raise ValueError(f"state is for layout {state.layout!r}, this adapter runs {self.layout!r}")
        self.env.state = to_overcooked(state, self.mdp.old_dynamics)
        self.score = float(state.score)
        self.state = state
        return state

    def step(self, joint_action: Sequence[int]) -> StepResult:
        if len(joint_action) != self.num_players:
            raise InvalidActionError(f"expected {self.num_players} actions, got {len(joint_action)}")
        for a in joint_action:
            if isinstance(a, bool) or not isinstance(a, int) or not 0 <= a < NUM_ACTIONS:
                raise InvalidActionError(f"action {a!r} is not an integer in 0..{NUM_ACTIONS - 1}")
        if self.env.is_done():
            raise RuntimeError("episode is over; call reset()")
        _, reward, done, _ = self.env.step(tuple(self._actions[a] for a in joint_action),
                                          [{} for _ in joint_action])  # the package assumes two
        self.score += float(reward)
        prev = self.state
        self.state = from_overcooked(self.env.state, self.layout, self.score)
        events = detect_events(prev, self.state, step=prev.timestep)
        return StepResult(self.state, float(reward), bool(done), events)


class _NoMotionPlanner:
    """Stands in for the package's motion planner, which ``OvercookedEnv.step`` would
    otherwise compute and pickle into site-packages; it is only read when
    ``display_phi=True``, which beliefgate never asks for."""


def _disable_motion_planner(env) -> None:
    env._mp = _NoMotionPlanner()


def raw_env(layout: str, horizon: int = DEFAULT_HORIZON, old_dynamics: bool = True):
    """The bare ``OvercookedEnv`` (for benchmarks against the adapter)."""
    from overcooked.mdp.overcooked_env import OvercookedEnv

    env = OvercookedEnv.from_mdp(make_mdp(resolve_layout(layout), old_dynamics), horizon=horizon, info_level=0)
    _disable_motion_planner(env)
    return env


def joint_action_tuple(actions: Sequence[int]) -> Tuple:
    from overcooked.mdp.actions import Action

    return tuple(Action.INDEX_TO_ACTION[a] for a in actions)
