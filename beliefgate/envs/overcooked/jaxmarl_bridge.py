"""The classic game encoded as JaxMARL's OvercookedV2: states, actions and observations.

The five classic kitchens are JaxMARL layouts too (``v2/cramped_room``, ``v2/asymm_advantages``,
``v2/coord_ring``, ``v2/forced_coord``, ``v2/counter_circuit``: the same grids, a counter ``X`` is a
wall ``W``, an onion dispenser ``O`` ingredient pile ``0``, a dish dispenser ``D`` the plate pile
``B``, a serving cell ``S`` the goal ``X``). This module maps one onto the other:

* :func:`v2_twin` -- the ``v2/`` layout that replays a classic one (checked cell by cell);
* :func:`to_v2_state` -- a classic :class:`~.state.SymbolicState` as the OvercookedV2 domain's
  :class:`~beliefgate.envs.overcooked_v2.state.V2State` (JaxMARL's encodings: an onion is
  ingredient 0, a dish a plate, a held soup a plated cooked three-onion dish, a pot's onions and
  cook timer its cell's content and timer; the recipe three onions), and :func:`to_jaxmarl`
  the JaxMARL ``State`` itself; :func:`from_v2_state` the way back;
* :data:`V2_ACTION` / :data:`CLASSIC_ACTION` -- the two action orders (classic N, S, E, W, stay,
  interact; JaxMARL right, down, left, up, stay, interact);
* :func:`observation` -- JaxMARL's default observation of a player (``(h, w, c)``, the whole grid in
  view), computed here from the classic state with numpy (the parity test compares it with
  JaxMARL's ``get_obs``), and :func:`observations` for every player;
* :func:`twin` -- what a JaxMARL-trained policy needs to play a classic kitchen (the twin, the
  observation encoder, the action map): the classic domain's ``jaxmarl_twin``;
* :class:`JaxmarlTwin` -- JaxMARL's own step and observation applied to classic states.

Player ``i`` of the classic state is JaxMARL's ``agent_i``. The start cells of the two games differ
on three layouts (``cramped_room``, ``asymmetric_advantages``, ``counter_circuit``), which a
converted state does not depend on.
Where the two dynamics differ is measured by ``tests/test_classic_v2_parity.py`` and tabled in
``docs/overcooked_v2.md`` ("Classic <-> JaxMARL parity").

jaxmarl is the optional ``v2`` extra: the geometry check, :func:`to_jaxmarl` and anything reading
JaxMARL's layouts import it lazily and stop with one line naming the extra when it is missing
(:class:`~beliefgate.envs.overcooked_v2._jaxmarl.MissingExtraError`, exit 2).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Dict, NamedTuple, Optional, Tuple

import numpy as np

from beliefgate.envs.overcooked.layouts import layout_info, resolve_layout
from beliefgate.envs.overcooked.state import POT_CAPACITY, CounterObject, PlayerView, PotView, SymbolicState
from beliefgate.errors import InputError

#: classic layout -> the JaxMARL layout that replays it
V2_TWINS: Dict[str, str] = {
    "cramped_room": "v2/cramped_room",
    "asymmetric_advantages": "v2/asymm_advantages",
    "coordination_ring": "v2/coord_ring",
    "forced_coordination": "v2/forced_coord",
    "counter_circuit": "v2/counter_circuit",
}

#: classic terrain character -> JaxMARL StaticObject code (values as in ``overcooked_v2.layouts``)
_STATIC = {" ": 0, "X": 1, "S": 4, "P": 5, "D": 9, "O": 10}

#: classic action index (N, S, E, W, stay, interact) -> JaxMARL's (right, down, left, up, stay, interact)
V2_ACTION: Tuple[int, ...] = (3, 1, 0, 2, 4, 5)
#: JaxMARL action index -> the classic one
CLASSIC_ACTION: Tuple[int, ...] = tuple(V2_ACTION.index(a) for a in range(6))
#: classic direction vector -> JaxMARL ``Direction`` (0 up, 1 down, 2 right, 3 left)
V2_DIRECTION: Dict[Tuple[int, int], int] = {(0, -1): 0, (0, 1): 1, (1, 0): 2, (-1, 0): 3}
_CLASSIC_DIRECTION = {v: k for k, v in V2_DIRECTION.items()}

#: JaxMARL DynamicObject bits: a plate, cooked, one onion (ingredient 0)
PLATE, COOKED, ONION = 1, 2, 4
#: the classic objects' encodings (a held or counter soup is a plated, cooked three-onion dish)
OBJECT_CODE: Dict[str, int] = {"onion": ONION, "dish": PLATE, "soup": POT_CAPACITY * ONION | PLATE | COOKED}
_OBJECT_NAME = {v: k for k, v in OBJECT_CODE.items()}
#: the recipe of every classic kitchen: three onions
ONION_SOUP = POT_CAPACITY * ONION


class BridgeError(InputError):
    """A classic state or layout the JaxMARL encoding cannot hold (a layout without a ``v2/`` twin,
    a tomato, a V2 state with an object the classic game lacks); the message names it."""


def v2_twin(layout: str) -> str:
    """The ``v2/`` layout replaying classic ``layout``; :class:`BridgeError` for one without a twin."""
    name = resolve_layout(layout)
    twin = V2_TWINS.get(name)
    if twin is None:
        raise BridgeError(f"layout {name!r} has no JaxMARL twin (the bridge plays {', '.join(V2_TWINS)})")
    return twin


def static_grid(layout: str) -> np.ndarray:
    """The classic layout's terrain as JaxMARL StaticObject codes ``(h, w)`` (no JaxMARL import)."""
    info = layout_info(layout)
    try:
        return np.array([[_STATIC[c] for c in row] for row in info.terrain], dtype=np.int64)
    except KeyError as exc:
        raise BridgeError(f"layout {info.name!r}: terrain {exc.args[0]!r} has no JaxMARL object") from None


@lru_cache(maxsize=None)
def checked_twin(layout: str) -> str:
    """:func:`v2_twin`, after checking that its JaxMARL grid is the classic terrain cell by cell
    (imports jaxmarl; :class:`BridgeError` naming the first differing cell)."""
    from beliefgate.envs.overcooked_v2.layouts import layout_info as v2_info

    twin = v2_twin(layout)
    ours, theirs = static_grid(layout), v2_info(twin).static
    if ours.shape != theirs.shape:
        raise BridgeError(f"{layout}: the classic grid is {ours.shape[::-1]}, {twin}'s {theirs.shape[::-1]}")
    bad = np.argwhere(ours != theirs)
    if len(bad):
        y, x = (int(v) for v in bad[0])
        raise BridgeError(f"{layout}: cell ({x}, {y}) is {ours[y, x]} in the classic grid, {theirs[y, x]} in {twin}")
    return twin


# ------------------------------------------------------------------ states
def _code(name: Optional[str], where: str) -> int:
    if name is None:
        return 0
    if name not in OBJECT_CODE:
        raise BridgeError(f"{where}: a {name} has no place in the classic kitchens' JaxMARL encoding (onion soup only)")
    return OBJECT_CODE[name]


def pot_cell(pot: PotView) -> Tuple[int, int]:
    """(content, timer) of a classic pot in JaxMARL's encoding: the onions, ``COOKED`` once ready,
    the cook ticks remaining while cooking."""
    content = pot.ingredients * ONION
    if pot.ready:
        return content | COOKED, 0
    return content, (pot.timer if pot.cooking else 0)


def to_v2_state(state: SymbolicState, start_cooking_interaction: bool = False):
    """``state`` as a :class:`~beliefgate.envs.overcooked_v2.state.V2State` on the twin layout
    (imports jaxmarl for the twin's geometry)."""
    from beliefgate.envs.overcooked_v2.state import V2Player, V2State

    twin = checked_twin(state.layout)
    players = tuple(V2Player(position=tuple(p.position), direction=V2_DIRECTION[tuple(p.orientation)],
                             inventory=_code(p.held, f"player {i}"))
                    for i, p in enumerate(state.players))
    items = []
    for pot in state.pots:
        content, timer = pot_cell(pot)
        if content or timer:
            items.append((pot.position[0], pot.position[1], content, timer))
    for obj in state.counters:
        items.append((obj.position[0], obj.position[1], _code(obj.name, f"counter {obj.position}"), 0))
    items.sort(key=lambda it: (it[1], it[0]))
    return V2State(layout=twin, timestep=state.timestep, score=state.score, recipe=ONION_SOUP, players=players,
                   items=tuple(items), start_cooking_interaction=start_cooking_interaction)


def from_v2_state(v2, layout: str) -> SymbolicState:
    """A V2 state on a classic twin as the classic :class:`SymbolicState` of ``layout``
    (:class:`BridgeError` for a content the classic game cannot hold, e.g. a soup of two onions on a plate)."""
    info = layout_info(layout)
    if v2.recipe != ONION_SOUP:
        raise BridgeError(f"recipe {v2.recipe}: the classic kitchens cook three-onion soup ({ONION_SOUP}) only")

    def name(code: int, where: str) -> Optional[str]:
        if code == 0:
            return None
        if code not in _OBJECT_NAME:
            raise BridgeError(f"{where}: JaxMARL object {code} is not a classic object")
        return _OBJECT_NAME[code]

    players = tuple(PlayerView(position=tuple(p.position), orientation=_CLASSIC_DIRECTION[p.direction],
                               held=name(p.inventory, f"player {i}")) for i, p in enumerate(v2.players))
    cells = {(x, y): (content, timer) for x, y, content, timer in v2.items}
    pots = []
    for pos in info.pots:
        content, timer = cells.pop(pos, (0, 0))
        n = (content >> 2) & 0x3
        if content & ~(0xC | COOKED):
            raise BridgeError(f"pot {pos}: JaxMARL content {content} is not onions")
        ready = bool(content & COOKED)
        pots.append(PotView(position=pos, ingredients=n, cooking=timer > 0, ready=ready, timer=timer))
    counters = [CounterObject(position=pos, name=name(content, f"counter {pos}"))
                for pos, (content, _) in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0])) if content]
    return SymbolicState(layout=info.name, timestep=v2.timestep, score=v2.score, players=players,
                         pots=tuple(pots), counters=tuple(counters))


def to_jaxmarl(state: SymbolicState, start_cooking_interaction: bool = False):
    """``state`` as a JaxMARL OvercookedV2 ``State`` of the twin layout's environment (whole grid in
    view; ``start_cooking_interaction`` as given), ready for its ``step_agents`` and ``get_obs``."""
    from beliefgate.envs.overcooked_v2.env import compiled
    from beliefgate.envs.overcooked_v2.layouts import V2Options
    from beliefgate.envs.overcooked_v2.state import to_jax

    v2 = to_v2_state(state, start_cooking_interaction)
    env = compiled(v2.info, V2Options(start_cooking_interaction=start_cooking_interaction))
    return to_jax(v2, env.template())


# ------------------------------------------------------------------ observations
def _object_layers(code: np.ndarray) -> np.ndarray:
    """JaxMARL's ingredient layers of an object grid: plate bit, cooked bit, onion count."""
    return np.stack([code & 1, (code >> 1) & 1, (code >> 2) & 0x3], axis=-1)


@lru_cache(maxsize=None)
def _static_layers(layout: str) -> np.ndarray:
    static = static_grid(layout)
    # walls, goal, pot, recipe indicator, recipe button, plate pile; then the onion pile
    return np.stack([static == c for c in (1, 4, 5, 6, 7, 9, 10)], axis=-1).astype(np.int32)


def observations(state: SymbolicState) -> np.ndarray:
    """Every player's JaxMARL observation of ``state``, ``(players, h, w, 30)`` int32: per player
    its own position, direction and held object (8 layers), the others' summed (8), the static
    objects (6) and the onion pile (1), the objects in cells (3), the recipe as shown by an
    indicator (3: none in the classic kitchens) and the pots' cook timers (1) -- JaxMARL's
    ``get_obs_default`` with one ingredient and no delivery indicator. No JaxMARL import."""
    static = _static_layers(state.layout)
    h, w = static.shape[:2]
    cells = np.zeros((h, w), dtype=np.int64)
    timers = np.zeros((h, w), dtype=np.int64)
    for pot in state.pots:
        (x, y), (content, timer) = pot.position, pot_cell(pot)
        cells[y, x], timers[y, x] = content, timer
    for obj in state.counters:
        x, y = obj.position
        cells[y, x] = _code(obj.name, f"counter {obj.position}")
    agent = np.zeros((len(state.players), h, w, 8), dtype=np.int64)
    for i, p in enumerate(state.players):
        x, y = p.position
        agent[i, y, x, 0] = 1
        agent[i, y, x, 1 + V2_DIRECTION[tuple(p.orientation)]] = 1
        agent[i, y, x, 5:] = _object_layers(np.asarray(_code(p.held, f"player {i}")))
    total = agent.sum(axis=0)
    shared = np.concatenate([static, _object_layers(cells), np.zeros((h, w, 3), np.int64), timers[..., None]],
                            axis=-1)
    return np.stack([np.concatenate([agent[i], total - agent[i], shared], axis=-1)
                     for i in range(len(state.players))]).astype(np.int32)


def observation(state: SymbolicState, player: int) -> np.ndarray:
    """Player ``player``'s JaxMARL observation of ``state`` (``(h, w, 30)``; see :func:`observations`)."""
    return observations(state)[player]


class Twin(NamedTuple):
    """How a JaxMARL-trained policy plays a classic layout: the ``v2/`` layout it must have been
    trained on, ``observe(state, player)`` (its observation of a classic state) and
    ``action(a)`` (a JaxMARL action as the classic action)."""

    layout: str
    observe: Callable[[SymbolicState, int], np.ndarray]
    action: Callable[[int], int]


def classic_action(action: int) -> int:
    """The classic action of JaxMARL action ``action``."""
    return CLASSIC_ACTION[int(action)]


def twin(layout: str) -> Twin:
    """The :class:`Twin` of classic ``layout`` (the domain's ``jaxmarl_twin``, which a trained
    policy asks for on a classic layout); :class:`BridgeError` for a layout without one."""
    return Twin(checked_twin(resolve_layout(layout)), observation, classic_action)


# ------------------------------------------------------------------ JaxMARL's step on classic states
#: XLA options of the parity stepper's compile (see :meth:`JaxmarlTwin._stepper`)
COMPILER_OPTIONS = {"xla_backend_optimization_level": 0}


class JaxmarlTwin:
    """JaxMARL's own OvercookedV2 transition and observation for a classic layout's twin, applied
    to classic states: :meth:`step` converts each state (as :func:`to_v2_state`), runs
    ``step_agents`` and ``get_obs`` of the twin's environment (one ``jax.jit`` of the two, compiled
    once), and returns the next states as classic states, the rewards and every player's
    observation. Used by the parity test; imports jaxmarl."""

    def __init__(self, layout: str, start_cooking_interaction: bool = False):
        import jax
        import jax.numpy as jnp

        from beliefgate.envs.overcooked_v2.env import compiled
        from beliefgate.envs.overcooked_v2.layouts import V2Options, layout_info as v2_info

        self.layout = resolve_layout(layout)
        self.twin = checked_twin(self.layout)
        self.start_cooking_interaction = bool(start_cooking_interaction)
        self._c = compiled(v2_info(self.twin), V2Options(start_cooking_interaction=self.start_cooking_interaction))
        env = self._c.env
        agents = tuple(env.agents)
        key = jax.random.PRNGKey(0)   # step_agents draws only a new recipe on delivery, which is off

        def one(state, actions):
            nxt, reward, _shaped = env.step_agents(key, state, actions)
            nxt = nxt.replace(step=nxt.step + 1)
            obs = env.get_obs(nxt)
            return nxt, reward, jnp.stack([obs[a] for a in agents])

        self._jit = jax.jit(one)
        self._compiled: Optional[Callable] = None

    def _stepper(self, state, actions) -> Callable:
        """The jitted step, compiled once with XLA's backend optimisation off (the same program,
        compiled in about 40% less time, which a few hundred steps do not win back)."""
        if self._compiled is None:
            self._compiled = self._jit.lower(state, actions).compile(compiler_options=COMPILER_OPTIONS)
        return self._compiled

    def states(self, states):
        """Each classic state as a JaxMARL ``State`` with host (numpy) leaves of the env's dtypes."""
        import jax

        t = jax.device_get(self._c.template())
        static = static_grid(self.layout)
        out = []
        for s in states:
            grid = np.zeros(static.shape + (3,), dtype=t.grid.dtype)
            grid[..., 0] = static
            for x, y, content, timer in to_v2_state(s, self.start_cooking_interaction).items:
                grid[y, x, 1], grid[y, x, 2] = content, timer
            a = t.agents
            pos = a.pos.replace(x=np.array([p.position[0] for p in s.players], dtype=a.pos.x.dtype),
                                y=np.array([p.position[1] for p in s.players], dtype=a.pos.y.dtype))
            agents = a.replace(pos=pos, dir=np.array([V2_DIRECTION[tuple(p.orientation)] for p in s.players],
                                                     dtype=a.dir.dtype),
                               inventory=np.array([_code(p.held, f"player {i}") for i, p in enumerate(s.players)],
                                                  dtype=a.inventory.dtype))
            out.append(t.replace(agents=agents, grid=grid, step=np.asarray(s.timestep, dtype=t.step.dtype),
                                 recipe=np.asarray(ONION_SOUP, dtype=t.recipe.dtype)))
        return out

    def step(self, states, joint_actions, strict: bool = True):
        """``(next states, rewards, observations)`` of JaxMARL's step from each classic state with its
        joint action (classic action indices); observations ``(len(states), players, h, w, c)``.
        A next state the classic game cannot hold (a plated soup of fewer than three onions, which
        only cooking by interaction makes) raises :class:`BridgeError`, or is None with ``strict=False``."""
        import jax

        from beliefgate.envs.overcooked_v2.state import from_arrays, host_arrays

        if len(states) != len(joint_actions) or not states:
            raise BridgeError(f"{len(states)} states and {len(joint_actions)} joint actions: give one joint action "
                              "per state (at least one)")
        done = []
        for state, joint in zip(self.states(states), joint_actions):
            actions = np.array([V2_ACTION[a] for a in joint], dtype=np.int32)
            done.append(self._stepper(state, actions)(state, actions))
        done = jax.device_get(done)
        out, rewards, obs = [], [], []
        for s, (nxt, reward, o) in zip(states, done):
            leaves = host_arrays(nxt)
            v2 = from_arrays(self.twin, leaves, s.score + float(reward), None, self.start_cooking_interaction)
            try:
                out.append(from_v2_state(v2, self.layout))
            except BridgeError:
                if strict:
                    raise
                out.append(None)
            rewards.append(float(reward))
            obs.append(o)
        return out, rewards, np.stack(obs)


__all__ = ["V2_TWINS", "V2_ACTION", "CLASSIC_ACTION", "V2_DIRECTION", "BridgeError", "Twin", "JaxmarlTwin",
           "COMPILER_OPTIONS", "v2_twin", "checked_twin", "twin", "static_grid", "to_v2_state", "from_v2_state",
           "to_jaxmarl", "observations", "observation", "classic_action", "pot_cell"]
