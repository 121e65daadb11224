"""The OvercookedV2 environment the episode runner drives: JaxMARL's dynamics, jitted once per layout.

:class:`V2Env` holds a JaxMARL ``State`` on the device and its :class:`~.state.V2State` on the host.
``step`` runs JaxMARL's own ``step_agents`` (the transition of ``OvercookedV2.step_env`` without the
observation, which the symbolic layer does not read) and advances the step counter, under one
``jax.jit`` per (layout, options) kept for the process: no step recompiles it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from beliefgate.envs.overcooked_v2.layouts import NUM_ACTIONS, V2Layout, V2Options, layout_info
from beliefgate.envs.overcooked_v2.state import V2State, V2StateError, detect_events, from_arrays, host_arrays, to_jax
from beliefgate.errors import InputError


class InvalidActionError(InputError):
    """A joint action of the wrong length or with an action outside 0..5."""


@dataclass
class StepResult:
    state: V2State
    reward: float
    done: bool
    events: List[List[str]]


class _Compiled:
    """JaxMARL's env for one (layout, options) with its jitted reset and step."""

    def __init__(self, info: V2Layout, options: V2Options):
        import dataclasses

        import jax

        from beliefgate.envs.overcooked_v2._jaxmarl import jaxmarl_v2

        mod = jaxmarl_v2()
        layout = info.jax_layout
        if options.recipes is not None:
            layout = dataclasses.replace(layout, possible_recipes=[list(r) for r in options.recipes])
        self.env = mod.env.OvercookedV2(
            layout=layout, max_steps=10**9, agent_view_size=options.agent_view_size,
            start_cooking_interaction=options.start_cooking_interaction, negative_rewards=options.negative_rewards,
            sample_recipe_on_delivery=options.sample_recipe_on_delivery,
            indicate_successful_delivery=options.indicate_successful_delivery)
        env = self.env

        common = mod.common
        starts = info.starts
        static = jax.numpy.asarray(info.static, dtype=jax.numpy.int32)

        def _reset(key):
            # OvercookedV2.reset for these options (no random reset, no ingredient permutations)
            # without its observation: the same key split, the same recipe draw, the same state
            key, sub = jax.random.split(key)
            jnp = jax.numpy
            agents = common.Agent(
                pos=common.Position(x=jnp.asarray([p[0] for p in starts], dtype=jnp.int32),
                                    y=jnp.asarray([p[1] for p in starts], dtype=jnp.int32)),
                dir=jnp.full((len(starts),), common.Direction.UP, dtype=jnp.int32),
                inventory=jnp.zeros((len(starts),), dtype=jnp.int32))
            grid = jnp.stack([static, jnp.zeros_like(static), jnp.zeros_like(static)], axis=-1)
            return mod.env.State(agents=agents, grid=grid, step=jnp.asarray(0, dtype=jnp.int32),
                                 done=jnp.asarray(False), recipe=env._sample_recipe(sub),
                                 new_correct_delivery=jnp.asarray(False), ingredient_permutations=None)

        def _step(key, state, actions):
            key, sub = jax.random.split(key)
            state, reward, _shaped = env.step_agents(sub, state, actions)
            return key, state.replace(step=state.step + 1), reward

        self.reset = jax.jit(_reset)
        self.step = jax.jit(_step)
        agents = tuple(env.agents)
        #: every player's JaxMARL observation of a state, stacked (players, h, w, c): one jit per env
        self.observe = jax.jit(lambda state: jax.numpy.stack([env.get_obs(state)[a] for a in agents]))
        self._template = None

    def template(self):
        """A JaxMARL state of this env (the dtypes a symbolic state is converted into)."""
        if self._template is None:
            import jax

            self._template = strong_types(self.reset(jax.random.PRNGKey(0)))
        return self._template


_CACHE: Dict[Tuple[str, str], _Compiled] = {}
_LOCK = threading.Lock()


def compiled(info: V2Layout, options: V2Options) -> _Compiled:
    """The jitted JaxMARL env of ``info`` under ``options`` (built once per process)."""
    key = (info.name, options.model_dump_json())
    found = _CACHE.get(key)
    if found is None:
        found = _Compiled(info, options)
        with _LOCK:
            _CACHE.setdefault(key, found)
            found = _CACHE[key]
    return found


def strong_types(jstate):
    """``jstate`` with no weakly typed leaf (JaxMARL's reset leaves ``step`` and ``dir`` weak; a
    state built by ``set_state`` is not), so every state the jitted step sees has one signature."""
    import jax
    import jax.numpy as jnp

    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype=x.dtype), jstate)


def observations(state: V2State, options: Optional[V2Options] = None):
    """Every player's JaxMARL observation of ``state`` (``(players, h, w, c)``, numpy), as the env
    with ``options`` (default: the view size and cooking rule ``state`` records) encodes it."""
    import numpy as np

    if options is None:
        options = V2Options(agent_view_size=state.agent_view_size,
                            start_cooking_interaction=state.start_cooking_interaction)
    c = compiled(state.info, options.checked_for(state.info))
    return np.asarray(c.observe(to_jax(state, c.template())))


class V2Env:
    """One OvercookedV2 episode at a time: ``reset``, ``step``, ``set_state``, ``score``."""

    #: ``reset`` takes the episode seed (the recipe is drawn from it)
    reset_takes_seed = True

    def __init__(self, layout: str, horizon: int, options: Optional[V2Options] = None, seed: int = 0):
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon <= 0:
            raise InputError(f"horizon must be a positive integer, got {horizon!r}")
        self.info = layout_info(layout)
        self.layout = self.info.name
        self.horizon = horizon
        self.options = (options or V2Options()).checked_for(self.info)
        self.num_players = self.info.players
        self.seed = int(seed)
        self._c = compiled(self.info, self.options)
        self.score = 0.0
        self.state = self.reset(self.seed)

    def _sync(self, arrays=None) -> V2State:
        arrays = host_arrays(self._jstate) if arrays is None else arrays
        self.state = from_arrays(self.layout, arrays, self.score, self.options.agent_view_size,
                                 self.options.start_cooking_interaction, self.options.sample_recipe_on_delivery)
        return self.state

    def reset(self, seed: Optional[int] = None) -> V2State:
        import jax

        if seed is not None:
            self.seed = int(seed)
        key, sub = jax.random.split(jax.random.PRNGKey(self.seed))
        self._key = key
        self._jstate = strong_types(self._c.reset(sub))
        self.score = 0.0
        return self._sync()

    def set_state(self, state: V2State) -> V2State:
        """Continue from a given symbolic state (scenario set-up, forward models)."""
        if not isinstance(state, V2State):
            state = V2State.from_json(state)
        if state.layout != self.layout:
            raise V2StateError(f"state is for layout {state.layout!r}, this env runs {self.layout!r}")
        self._jstate = to_jax(state, self._jstate)
        self.score = float(state.score)
        return self._sync()

    def step(self, joint_action: Sequence[int]) -> StepResult:
        import jax.numpy as jnp

        if len(joint_action) != self.num_players:
            raise InvalidActionError(f"expected {self.num_players} actions, got {len(joint_action)}")
        for a in joint_action:
            if isinstance(a, bool) or not isinstance(a, int) or not 0 <= a < NUM_ACTIONS:
                raise InvalidActionError(f"action {a!r} is not an integer in 0..{NUM_ACTIONS - 1}")
        prev = self.state
        self._key, self._jstate, reward = self._c.step(self._key, self._jstate, jnp.asarray(joint_action, jnp.int32))
        *arrays, reward = host_arrays(self._jstate, reward)   # one transfer
        reward = float(reward)
        self.score += reward
        state = self._sync(arrays)
        return StepResult(state, reward, state.timestep >= self.horizon, detect_events(prev, state))

    def observation(self, player: Optional[int] = None):
        """JaxMARL's observation of the current state: every player's ``(players, h, w, c)``, or
        ``player``'s ``(h, w, c)``."""
        import numpy as np

        obs = np.asarray(self._c.observe(self._jstate))
        return obs if player is None else obs[player]

    @property
    def obs_shape(self) -> Tuple[int, ...]:
        """The shape of one player's observation (JaxMARL's ``obs_shape``)."""
        return tuple(int(s) for s in self._c.env.obs_shape)

    def describe(self) -> Dict[str, object]:
        return json.loads(self.options.model_dump_json())


#: batch sizes a :class:`BatchStepper` pads to (one jit each, built on first use; no other shape is compiled)
BATCH_SIZES = (8, 32, 128)


class BatchStepper:
    """Step many V2 states at once (OverForge's rollouts): JaxMARL's ``step_agents`` mapped over a
    batch (``lax.map``: the rows in turn, in one call; ``vmap`` compiled several times slower here
    and a call's cost is its dispatch), jitted once per padded batch size (:data:`BATCH_SIZES`) and environment options, fed and
    read back as plain host arrays (one transfer each way per call). The options of each state's
    episode that the state records (view size, cooking by interaction, recipe redraw on delivery)
    choose the dynamics; ``negative_rewards`` and a custom recipe list are not recorded in a state,
    so imagined steps use the layout's recipes and no negative rewards."""

    #: how many times any stepper traced its step function (the no-recompile test reads it)
    traces = 0

    def __init__(self, layout: str):
        self.info = layout_info(layout)
        self.layout = self.info.name
        self._fns: Dict[Tuple[str, int], object] = {}

    def _fn(self, options: V2Options, size: int):
        key = (options.model_dump_json(), size)
        fn = self._fns.get(key)
        if fn is not None:
            return fn
        import jax
        import jax.numpy as jnp

        from beliefgate.envs.overcooked_v2._jaxmarl import jaxmarl_v2

        mod = jaxmarl_v2()
        common = mod.common
        c = compiled(self.info, options)
        env, template = c.env, c.template()

        def one(key, x, y, d, inv, grid, recipe, step, ncd, actions):
            BatchStepper.traces += 1   # runs only while tracing
            st = template.replace(
                agents=template.agents.replace(pos=common.Position(x=x, y=y), dir=d, inventory=inv),
                grid=grid, recipe=recipe, step=step, new_correct_delivery=ncd, done=jnp.asarray(False))
            st, reward, _ = env.step_agents(key, st, actions)
            a = st.agents
            return a.pos.x, a.pos.y, a.dir, a.inventory, st.grid, st.recipe, st.step + 1, st.new_correct_delivery, reward

        def batch(*args):   # the rows one after another inside one call: compiles like a single step
            return jax.lax.map(lambda row: one(*row), args)

        fn = jax.jit(batch)
        self._fns[key] = fn
        return fn

    def step(self, states: Sequence[V2State], joint_actions: Sequence[Sequence[int]],
             seeds: Sequence[int]) -> List[Tuple[V2State, float, List[List[str]]]]:
        """Each state stepped by its joint action (``seeds``: one integer per state for the step's
        random key, used by a recipe redraw): ``(next state, reward, per-player events)`` per state."""
        import numpy as np

        n = len(states)
        if n == 0:
            return []
        first = states[0]
        options = V2Options(agent_view_size=first.agent_view_size,
                            start_cooking_interaction=first.start_cooking_interaction,
                            sample_recipe_on_delivery=first.sample_recipe_on_delivery)
        size = next((b for b in BATCH_SIZES if b >= n), None)
        if size is None:   # more rows than the largest bucket: in chunks of it
            out: List[Tuple[V2State, float, List[List[str]]]] = []
            big = BATCH_SIZES[-1]
            for lo in range(0, n, big):
                out += self.step(states[lo:lo + big], joint_actions[lo:lo + big], seeds[lo:lo + big])
            return out
        info = self.info
        p = info.players
        x = np.zeros((size, p), np.int32)
        y = np.zeros((size, p), np.int32)
        d = np.zeros((size, p), np.int32)
        inv = np.zeros((size, p), np.int32)
        grid = np.zeros((size, info.height, info.width, 3), np.int32)
        grid[:, :, :, 0] = info.static
        recipe = np.zeros(size, np.int32)
        step = np.zeros(size, np.int32)
        ncd = np.zeros(size, bool)
        acts = np.full((size, p), 4, np.int32)
        keys = np.zeros((size, 2), np.uint32)
        for b, s in enumerate(states):
            if (s.agent_view_size, s.start_cooking_interaction, s.sample_recipe_on_delivery) != (
                    first.agent_view_size, first.start_cooking_interaction, first.sample_recipe_on_delivery):
                raise V2StateError("a batch of states must share the episode options they record")
            for i, pl in enumerate(s.players):
                x[b, i], y[b, i] = pl.position
                d[b, i], inv[b, i] = pl.direction, pl.inventory
            for cx, cy, content, timer in s.items:
                grid[b, cy, cx, 1], grid[b, cy, cx, 2] = content, timer
            recipe[b], step[b], ncd[b] = s.recipe, s.timestep, s.new_correct_delivery
            acts[b] = joint_actions[b]
            keys[b] = (0, int(seeds[b]) & 0xFFFFFFFF)
        for arr in (x, y, d, inv, grid, recipe, step, ncd, acts):   # padding rows repeat the first state
            arr[n:] = arr[0]
        import jax

        out_arrays = jax.device_get(self._fn(options, size)(keys, x, y, d, inv, grid, recipe, step, ncd, acts))
        xs, ys, ds, invs, grids, recipes, steps, ncds, rewards = out_arrays
        rows = []
        for b, s in enumerate(states):
            reward = float(rewards[b])
            nxt = from_arrays(self.layout, (xs[b], ys[b], ds[b], invs[b], grids[b], recipes[b], steps[b], ncds[b]),
                              s.score + reward, s.agent_view_size, s.start_cooking_interaction,
                              s.sample_recipe_on_delivery)
            rows.append((nxt, reward, detect_events(s, nxt)))
        return rows


_STEPPERS: Dict[str, BatchStepper] = {}


def batch_stepper(layout: str) -> BatchStepper:
    """The process's :class:`BatchStepper` of ``layout`` (its jits are kept across episodes)."""
    name = layout_info(layout).name
    found = _STEPPERS.get(name)
    if found is None:
        with _LOCK:
            found = _STEPPERS.setdefault(name, BatchStepper(name))
    return found
