"""Parity of the classic game (the ``overcooked`` package, old dynamics) with JaxMARL's OvercookedV2
on the five classic kitchens' ``v2/`` twins (issue 44, item 4).

Every step of three kinds of classic trajectories per layout -- both players random from the
start, a scripted pair from the start (cooking and delivering), and one step from random states
(random poses, held objects, pot contents and timers, counter objects; interact-heavy actions) --
is replayed in JaxMARL from the same state (:mod:`beliefgate.envs.overcooked.jaxmarl_bridge`)
with the same joint action, and the next states (positions, orientations, held objects, pots'
onions / cooking / ready / cook timer, counter objects), the sparse rewards and every player's
observation (the bridge's numpy encoding of the classic state against JaxMARL's ``get_obs``) are
compared. The differences that exist are in docs/overcooked_v2.md ("Classic <-> JaxMARL parity");
the tests below pin each of them.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("jaxmarl")

from beliefgate.envs.overcooked import jaxmarl_bridge as B  # noqa: E402
from beliefgate.envs.overcooked.adapter import OvercookedAdapter  # noqa: E402
from beliefgate.envs.overcooked.layouts import DIRECTIONS, LAYOUTS, layout_info  # noqa: E402
from beliefgate.envs.overcooked.partners import make_scripted  # noqa: E402
from beliefgate.envs.overcooked.state import CounterObject, PlayerView, PotView, SymbolicState  # noqa: E402

#: the scripted pair of each layout (forced_coordination: a counter-passer on the supply side)
PAIRS = {
    "cramped_room": ("balanced", "plater"),
    "asymmetric_advantages": ("onion-sourcer", "plater"),
    "coordination_ring": ("balanced", "plater"),
    "forced_coordination": ("counter-passer", "balanced"),
    "counter_circuit": ("balanced", "onion-sourcer"),
}
RANDOM_STEPS, SCRIPTED_STEPS, RANDOM_STATES = 60, 150, 80


def shared_cells(layout: str):
    """Non-floor cells two players can face at once: ``[(cell, [(floor cell, direction), ...])]``."""
    info = layout_info(layout)
    out = []
    for c in info.interactables:
        poses = [((c[0] - d[0], c[1] - d[1]), d) for d in DIRECTIONS if info.is_floor((c[0] - d[0], c[1] - d[1]))]
        if len(poses) >= 2:
            out.append((c, poses))
    return out


def random_state(layout: str, rng: random.Random, shared: bool = False) -> SymbolicState:
    """A legal old-dynamics state: players on distinct floor cells (mostly facing a non-floor
    cell; with ``shared``, both facing one, where the layout has such a cell), any held object,
    pots empty / filling / cooking (any timer) / ready, objects on counters."""
    info = layout_info(layout)
    held = [rng.choice([None, None, "onion", "dish", "soup"]) for _ in range(2)]
    both = shared_cells(layout) if shared else []
    if both:
        _, poses = rng.choice(both)
        players = [PlayerView(position=p, orientation=d, held=h) for (p, d), h in zip(rng.sample(poses, 2), held)]
    else:
        players = []
        for cell, h in zip(rng.sample(info.floor, 2), held):
            facing = [d for d in DIRECTIONS if not info.is_floor((cell[0] + d[0], cell[1] + d[1]))]
            d = rng.choice(facing) if facing and rng.random() < 0.8 else rng.choice(DIRECTIONS)
            players.append(PlayerView(position=cell, orientation=d, held=h))
    pots = []
    for cell in info.pots:
        k = rng.random()
        if k < 0.3:
            pots.append(PotView(position=cell, ingredients=0))
        elif k < 0.55:
            pots.append(PotView(position=cell, ingredients=rng.randint(1, 2)))
        elif k < 0.8:
            pots.append(PotView(position=cell, ingredients=3, cooking=True, timer=rng.randint(1, 20)))
        else:
            pots.append(PotView(position=cell, ingredients=3, ready=True))
    counters = [CounterObject(position=c, name=rng.choice(["onion", "dish", "soup"]))
                for c in info.counters if rng.random() < 0.3]
    return SymbolicState(layout=layout, timestep=rng.randrange(300), players=tuple(players), pots=tuple(pots),
                         counters=tuple(counters))


def classic_transitions(layout: str, seed: int):
    """``(kind, state, joint action, next state, reward, events)`` of the three trajectory kinds."""
    rng = random.Random(seed)
    env = OvercookedAdapter(layout, horizon=10**6)
    out = []
    state = env.reset()
    for _ in range(RANDOM_STEPS):
        joint = [rng.choice((0, 1, 2, 3, 4, 5, 5)) for _ in range(2)]
        r = env.step(joint)
        out.append(("random", state, joint, r.state, r.reward, r.events))
        state = r.state
    agents = [make_scripted(name) for name in PAIRS[layout]]
    for i, a in enumerate(agents):
        a.reset(layout, i, seed + i)
    state, events = env.reset(), [[], []]
    for _ in range(SCRIPTED_STEPS):
        joint = [int(a.act(state, events[i])) for i, a in enumerate(agents)]
        r = env.step(joint)
        out.append(("scripted", state, joint, r.state, r.reward, r.events))
        state, events = r.state, r.events
    for k in range(RANDOM_STATES):
        shared = k % 4 == 0    # a quarter: both players at one cell (a middle counter, a pot between them)
        state = random_state(layout, rng, shared)
        env.set_state(state)
        joint = [5, 5] if shared else [rng.choice((0, 1, 2, 3, 4, 5, 5, 5)) for _ in range(2)]
        r = env.step(joint)
        out.append(("state", state, joint, r.state, r.reward, r.events))
    return out


def coverage(layout: str, transitions) -> Counter:
    """What the transitions exercised (so that agreement is not vacuous)."""
    info = layout_info(layout)
    seen = Counter()
    for _, s, joint, n, reward, events in transitions:
        for ev in (e for per in events for e in per):
            seen[ev.split(":")[0] if not ev.startswith("pickup:soup") else "pickup:soup"] += 1
        seen["delivery reward"] += reward > 0
        seen["cook start"] += sum(not a.cooking and b.cooking for a, b in zip(s.pots, n.pots))
        seen["soup ready"] += sum(a.cooking and b.ready for a, b in zip(s.pots, n.pots))
        for i, (a, p) in enumerate(zip(joint, s.players)):
            if a < 4:
                target = (p.position[0] + DIRECTIONS[a][0], p.position[1] + DIRECTIONS[a][1])
                if info.is_floor(target) and n.players[i].position == p.position:
                    seen["move blocked by the other player"] += 1
                if not info.is_floor(target):
                    seen["move into a non-floor cell (turn only)"] += 1
        if joint == [5, 5] and s.players[0].facing == s.players[1].facing:
            seen["both interact with one cell"] += 1
    return seen


@pytest.fixture(scope="module")
def parity():
    """Per layout: the classic transitions and JaxMARL's step from each of their states."""
    results = {}
    for k, layout in enumerate(LAYOUTS):
        transitions = classic_transitions(layout, seed=k)
        twin = B.JaxmarlTwin(layout)
        nxt, rewards, obs = twin.step([t[1] for t in transitions], [t[2] for t in transitions])
        results[layout] = (transitions, nxt, rewards, obs)
    return results


FIELDS = ("positions", "orientations", "held", "pots", "counters", "reward", "observation")


def compare(transitions, nxt, rewards, obs) -> Counter:
    """Per field, how many steps agree."""
    agree = Counter()
    for (_, _, _, want, reward, _), got, r, o in zip(transitions, nxt, rewards, obs):
        agree["positions"] += [p.position for p in want.players] == [p.position for p in got.players]
        agree["orientations"] += [p.orientation for p in want.players] == [p.orientation for p in got.players]
        agree["held"] += [p.held for p in want.players] == [p.held for p in got.players]
        agree["pots"] += want.pots == got.pots          # onions, cooking, ready, cook ticks remaining
        agree["counters"] += want.counters == got.counters
        agree["reward"] += reward == r
        agree["observation"] += np.array_equal(B.observations(want), o)
    return agree


def test_classic_and_jaxmarl_agree_step_by_step(parity):
    total, covered = 0, Counter()
    for layout, (transitions, nxt, rewards, obs) in parity.items():
        agree = compare(transitions, nxt, rewards, obs)
        n = len(transitions)
        total += n
        assert n == RANDOM_STEPS + SCRIPTED_STEPS + RANDOM_STATES
        assert {f: agree[f] for f in FIELDS} == {f: n for f in FIELDS}, (layout, agree)
        assert obs.shape[1:] == (2,) + B.static_grid(layout).shape + (30,)
        covered += coverage(layout, transitions)
    assert total == 5 * 290
    # the agreement covers every kind of interaction, cooking, delivery and the movement rules
    for what, least in (("pickup", 100), ("potting", 30), ("pickup:soup", 10), ("deliver", 10), ("drop", 30),
                        ("delivery reward", 10), ("cook start", 10), ("soup ready", 5),
                        ("move blocked by the other player", 10), ("move into a non-floor cell (turn only)", 100),
                        ("both interact with one cell", 30)):
        assert covered[what] >= least, (what, covered)


def test_the_scripted_pairs_cook_and_deliver(parity):
    """The scripted trajectories reach the parts of the game the random ones rarely do."""
    for layout, (transitions, *_rest) in parity.items():
        scripted = [t for t in transitions if t[0] == "scripted"]
        assert sum(t[4] for t in scripted) >= 20, layout
        assert any(p.cooking for t in scripted for p in t[3].pots), layout


def test_the_encoder_would_see_a_wrong_state(parity):
    """The comparison can fail: one moved object, one tick of a pot's timer or a turned player
    changes the encoded observation against JaxMARL's."""
    transitions, nxt, rewards, obs = parity["cramped_room"]
    k = next(i for i, t in enumerate(transitions) if any(p.cooking for p in t[3].pots))
    state = transitions[k][3]
    assert np.array_equal(B.observations(state), obs[k])
    pots = tuple(p.model_copy(update={"timer": p.timer + 1}) if p.cooking else p for p in state.pots)
    assert not np.array_equal(B.observations(state.model_copy(update={"pots": pots})), obs[k])
    p0 = state.players[0]
    turned = p0.model_copy(update={"orientation": next(d for d in DIRECTIONS if d != p0.orientation)})
    assert not np.array_equal(B.observations(state.model_copy(update={"players": (turned,) + state.players[1:]})),
                              obs[k])


def test_states_round_trip_and_the_twins_match_cell_by_cell():
    rng = random.Random(7)
    for layout in LAYOUTS:
        assert B.checked_twin(layout) == B.V2_TWINS[layout]
        for _ in range(20):
            s = random_state(layout, rng)
            assert B.from_v2_state(B.to_v2_state(s), layout) == s
    for a in range(6):
        assert B.CLASSIC_ACTION[B.V2_ACTION[a]] == a


def test_documented_difference_start_cells():
    """Difference 1 (docs/overcooked_v2.md): JaxMARL's reset seats the players elsewhere on three
    kitchens; the bridge converts states, never resets."""
    from beliefgate.envs.overcooked_v2.layouts import layout_info as v2_info

    differ = [layout for layout in LAYOUTS
              if tuple(layout_info(layout).start_positions) != v2_info(B.V2_TWINS[layout]).starts]
    assert differ == ["cramped_room", "asymmetric_advantages", "counter_circuit"]


def test_documented_difference_partial_soups_and_other_layouts():
    """Differences 4 and 5: a plated soup of fewer than three onions (JaxMARL, or the classic game's
    new dynamics) has no classic symbolic form; the three-player kitchens have no JaxMARL twin."""
    from beliefgate.envs.overcooked_v2.state import V2Player

    s = random_state("cramped_room", random.Random(3))
    v2 = B.to_v2_state(s)
    one_onion_soup = B.ONION | B.PLATE | B.COOKED
    bad = v2.model_copy(update={"players": (V2Player(position=v2.players[0].position, direction=0,
                                                     inventory=one_onion_soup),) + v2.players[1:]})
    with pytest.raises(B.BridgeError, match="player 0: JaxMARL object 7"):
        B.from_v2_state(bad, "cramped_room")
    with pytest.raises(B.BridgeError, match="cramped_room_3p.*no JaxMARL twin"):
        B.v2_twin("cramped_room_3p")
    with pytest.raises(B.BridgeError, match="tomato"):
        B.to_v2_state(s.model_copy(update={"players": (s.players[0].model_copy(update={"held": "tomato"}),
                                                        s.players[1])}))


# ------------------------------------------------------------------ trained policies on the classic backend
def shipped_partner_file(name: str) -> str:
    from importlib import resources

    return str(resources.files("beliefgate.envs.overcooked_v2").joinpath("trained", f"{name}.yaml"))


def test_a_trained_ppo_pair_plays_classic_cramped_room():
    """``ppo:sp-cramped_room-s0`` as the ego and a ``kind: ppo`` partner file as the partner play the
    classic game through the bridge (classic start cells, classic dynamics), deliver, and their
    logged skills are hindsight labels from the classic events."""
    from beliefgate.envs.domain import PartnerLayoutError
    from beliefgate.envs.overcooked.domain import DOMAIN
    from beliefgate.eval.episode import run_episode

    partner = "ppo:" + shipped_partner_file("sp-cramped_room-s0")
    result = run_episode("cramped_room", "ppo:sp-cramped_room-s0", partner, seed=0, horizon=60)
    steps = result.trajectory.steps
    assert result.summary["layout"] == "cramped_room" and len(steps) == 60
    assert result.summary["reward"] >= 20 and result.summary["deliveries"] >= 1
    assert all(0 <= a < 6 for row in steps for a in row.actions)
    moved = sum(row.state.players[0].position != nxt.state.players[0].position for row, nxt in zip(steps, steps[1:]))
    assert moved >= 5
    labels = [row.skills for row in steps]
    lib = set(DOMAIN.controller("cramped_room").library.names)
    named = [s for pair in labels for s in pair if s is not None]
    assert len(named) >= 40 and set(named) <= lib
    assert "deliver_soup" in named
    # a policy trained on another kitchen, or a kitchen without a JaxMARL twin: refused before any step
    with pytest.raises(PartnerLayoutError, match="trained on v2/cramped_room, not v2/coord_ring"):
        run_episode("coordination_ring", "ppo:sp-cramped_room-s0", "balanced", seed=0, horizon=5)
    with pytest.raises(B.BridgeError, match="cramped_room_3p.*no JaxMARL twin"):
        run_episode("cramped_room_3p", "ppo:sp-cramped_room-s0", ["balanced", "plater"], seed=0, horizon=5)


@pytest.mark.slow
def test_a_greedy_trained_pair_plays_the_same_game_in_both_backends():
    """From JaxMARL's start state, the greedy SP pair's 200 steps on the classic backend (through the
    bridge) are the 200 steps it plays on JaxMARL's: same actions, states and rewards."""
    from beliefgate.envs.overcooked_v2.env import V2Env
    from beliefgate.envs.overcooked_v2.trained_agents import ppo_agent

    v2 = V2Env("v2/cramped_room", horizon=200)
    v2_state = v2.reset(0)
    classic = OvercookedAdapter("cramped_room", horizon=200)
    state = classic.set_state(B.from_v2_state(v2_state, "cramped_room"))
    on_v2, on_classic = ([ppo_agent("sp-cramped_room-s0") for _ in range(2)] for _ in range(2))
    for i in range(2):
        on_v2[i].greedy = on_classic[i].greedy = True
        on_v2[i].reset("v2/cramped_room", i, 0)
        on_classic[i].reset("cramped_room", i, 0)
    total = 0.0
    for t in range(200):
        a2 = [p.act(v2_state) for p in on_v2]
        ac = [p.act(state) for p in on_classic]
        assert [B.V2_ACTION[a] for a in ac] == a2, t
        r2, rc = v2.step(a2), classic.step(ac)
        v2_state, state = r2.state, rc.state
        assert B.from_v2_state(v2_state, "cramped_room") == state.model_copy(update={"score": r2.state.score}), t
        assert r2.reward == rc.reward, t
        total += rc.reward
    assert total >= 60


# ------------------------------------------------------------------ the cooking rule (docs: difference 2)
def new_dynamics_state(layout: str, rng: random.Random) -> SymbolicState:
    """A legal new-dynamics state: as :func:`random_state`, but a pot may hold 1-3 idle onions and
    cook or hold a soup of any size (cooking starts by interaction)."""
    s = random_state(layout, rng)
    pots = []
    for pot in s.pots:
        n = rng.randint(1, 3)
        pots.append(rng.choice([PotView(position=pot.position, ingredients=0),
                                PotView(position=pot.position, ingredients=n),
                                PotView(position=pot.position, ingredients=n, cooking=True, timer=rng.randint(1, 20)),
                                PotView(position=pot.position, ingredients=n, ready=True)]))
    return s.model_copy(update={"pots": tuple(pots)})


def cooking_rule_comparison(layout: str, old_dynamics: bool, start_cooking_interaction: bool, n: int,
                            seed: int) -> Counter:
    """Steps from ``n`` random states (new-dynamics states, which include the old ones) in the
    classic package's env (``old_dynamics``) and JaxMARL (``start_cooking_interaction``): per field,
    how many agree; ``unrepresentable``: JaxMARL's next state holds a soup of < 3 onions on a plate."""
    from beliefgate.envs.overcooked.adapter import joint_action_tuple
    from beliefgate.envs.overcooked.state import from_overcooked, to_overcooked

    rng = random.Random(seed)
    env = OvercookedAdapter(layout, horizon=10**6, old_dynamics=old_dynamics)
    states, joints, want, rewards = [], [], [], []
    for _ in range(n):
        s = new_dynamics_state(layout, rng) if not old_dynamics else random_state(layout, rng)
        joint = [rng.choice((0, 1, 2, 3, 4, 5, 5, 5)) for _ in range(2)]
        env.env.state = to_overcooked(s, old_dynamics)   # the package's own step: the adapter's event
        _, reward, _, _ = env.env.step(joint_action_tuple(joint), [{}, {}])  # check refuses < 3-onion cooking
        states.append(s)
        joints.append(joint)
        want.append(from_overcooked(env.env.state, layout))
        rewards.append(float(reward))
    nxt, got_rewards, obs = B.JaxmarlTwin(layout, start_cooking_interaction).step(states, joints, strict=False)
    agree = Counter()
    for s, w, r, g, gr, o in zip(states, want, rewards, nxt, got_rewards, obs):
        agree["steps"] += 1
        if g is None:
            agree["unrepresentable"] += 1
            continue
        agree["players"] += w.players == g.players
        agree["pots"] += w.pots == g.pots
        agree["counters"] += w.counters == g.counters
        agree["reward"] += r == gr
        agree["observation"] += np.array_equal(B.observations(w), o)
    return agree


@pytest.mark.slow
def test_the_cooking_rule_option_makes_the_games_agree():
    """Classic old dynamics (auto-cook at three onions) = JaxMARL without
    ``start_cooking_interaction``; classic new dynamics (an interaction starts cooking, any number
    of onions) = JaxMARL with it. Crossed, the pots differ."""
    fields = ("players", "pots", "counters", "reward", "observation")
    for old, sci in ((True, False), (False, True)):
        agree = cooking_rule_comparison("cramped_room", old, sci, 300, seed=11)
        ok = agree["steps"] - agree["unrepresentable"]
        assert all(agree[f] == ok for f in fields), (old, sci, agree)
        assert agree["unrepresentable"] <= 0.1 * agree["steps"]
    crossed = cooking_rule_comparison("cramped_room", False, False, 300, seed=11)
    assert crossed["players"] == crossed["steps"] - crossed["unrepresentable"]
    assert crossed["pots"] < crossed["steps"] - crossed["unrepresentable"]


def test_without_jaxmarl_the_bridge_names_the_extra(monkeypatch):
    """The bridge's JaxMARL side (the twin's geometry, its step, a trained policy's layout check)
    stops with one line naming the ``v2`` extra; the numpy encoder needs no JaxMARL."""
    import sys

    from beliefgate.envs.overcooked_v2 import _jaxmarl
    from beliefgate.envs.overcooked_v2 import layouts as v2_layouts

    state = random_state("cramped_room", random.Random(5))
    monkeypatch.setattr(_jaxmarl, "_MODULES", None)
    monkeypatch.setattr(v2_layouts, "_BUILT", {})
    for name in [m for m in sys.modules if m == "jaxmarl" or m.startswith("jaxmarl.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "jaxmarl", None)
    B.checked_twin.cache_clear()
    try:
        with pytest.raises(_jaxmarl.MissingExtraError, match=r'install the v2 extra with pip install -e "\.\[v2\]"'):
            B.twin("cramped_room")
        assert B.observations(state).shape == (2, 4, 5, 30)
    finally:
        B.checked_twin.cache_clear()
