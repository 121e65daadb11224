"""The Overcooked domain against the real dynamics of the `overcooked` package."""

import json

import numpy as np
import pytest

from beliefgate.envs.overcooked.adapter import InvalidActionError, OvercookedAdapter
from beliefgate.envs.overcooked.controller import controller_for, q_from_tables, q_values_jax
from beliefgate.envs.overcooked.dynamics import (
    ImpossibleTransitionError,
    completion_matches,
    detect_events,
    infer_actions,
)
from beliefgate.envs.overcooked.layouts import LAYOUTS, UnknownLayoutError, layout_info, resolve_layout
from beliefgate.envs.overcooked.state import (
    CounterObject,
    PlayerView,
    PotView,
    StateFormatError,
    SymbolicState,
    from_human_2019,
)
from beliefgate.envs.overcooked.tables import INTERACT, STAY, cache_dir, pose_tables
from beliefgate.models.controllers import boltzmann_logprobs, boltzmann_logprobs_jax


def test_layout_names():
    assert resolve_layout("random3") == "counter_circuit"
    assert resolve_layout("random0") == "forced_coordination"
    with pytest.raises(UnknownLayoutError, match="cramped_room"):
        resolve_layout("kitchen_of_doom")


def test_tables_go_to_user_cache(_isolated_cache):
    t = pose_tables("coordination_ring")
    assert any(p.name.startswith("pose_tables_coordination_ring") for p in cache_dir().iterdir())
    assert str(cache_dir()).startswith(str(_isolated_cache))
    # facing a cell costs 0; every pose of a connected layout reaches the pot
    pot = t.inter_index[layout_info("coordination_ring").pots[0]]
    assert np.isfinite(t.dist[pot]).all()
    faced = t.facing == pot
    assert (t.dist[pot][faced] == 0).all() and (t.dist[pot][~faced] > 0).all()


def _scenario(layout, skill, player, cell, other_cell):
    info = layout_info(layout)
    held = {"pickup_onion": None, "pickup_dish": None, "put_onion_in_pot": "onion",
            "fill_dish_with_soup": "dish", "deliver_soup": "soup", "place_obj_on_counter": "onion"}[skill]
    ready = skill == "fill_dish_with_soup"
    players = [None, None]
    players[player] = PlayerView(position=cell, orientation=(0, -1), held=held)
    players[1 - player] = PlayerView(position=other_cell, orientation=(0, -1))
    pots = tuple(PotView(position=p, ingredients=3 if ready else 0, ready=ready) for p in info.pots)
    return SymbolicState(layout=layout, timestep=0, players=tuple(players), pots=pots)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_controller_argmax_completes_every_skill(layout):
    """Following the controller's most likely action from several start poses completes each skill."""
    ctrl = controller_for(layout)
    info = layout_info(layout)
    env = OvercookedAdapter(layout, horizon=10_000)
    rng = np.random.default_rng(0)
    checked = 0
    for k, skill in enumerate(ctrl.library.names):
        cells = list(info.floor)
        rng.shuffle(cells)
        tried = 0
        for cell in cells:
            others = [c for c in info.floor if c != cell]
            other = max(others, key=lambda c: abs(c[0] - cell[0]) + abs(c[1] - cell[1]))
            state = _scenario(layout, skill, 0, cell, other)
            q = ctrl.q_values(state, 0, other_blocks=True)
            if np.all(q[k] == 0):  # no reachable target from here (e.g. the other side of forced_coordination)
                continue
            env.reset()
            env.set_state(state)
            done = False
            for _ in range(40):
                logp = ctrl.logprobs(env.state, 0, beta=2.0, epsilon=0.1, other_blocks=True)
                a = int(np.argmax(logp[k]))
                result = env.step([a, STAY])
                if any(completion_matches(e, ctrl.library.skills[k].completion) for e in result.events[0]):
                    done = True
                    break
            assert done, f"{layout}: {skill} from {cell} not completed"
            tried += 1
            if tried == 5:
                break
        checked += tried
    assert checked >= 20


@pytest.mark.parametrize("layout", LAYOUTS)
def test_controller_rows_normalised_and_numpy_matches_jax(layout):
    import jax.numpy as jnp

    ctrl = controller_for(layout)
    t = ctrl.tables
    info = layout_info(layout)
    state = SymbolicState(
        layout=layout, timestep=0,
        players=(PlayerView(position=info.floor[0], orientation=(0, -1)),
                 PlayerView(position=info.floor[-1], orientation=(0, 1))),
        pots=tuple(PotView(position=p, ingredients=1) for p in info.pots),
        counters=(CounterObject(position=info.counters[0], name="dish"),),
    )
    mask = ctrl.target_mask(state)
    jd, jn, jf, jm = map(jnp.asarray, (t.dist, t.next_pose, t.facing, mask))
    for pose in range(t.num_poses):
        q = q_from_tables(t.dist, t.next_pose, t.facing, mask, pose)
        for eps in (0.1, 0.0):
            logp = boltzmann_logprobs(q, 2.0, eps)
            p = np.exp(logp)
            assert np.all(np.isfinite(logp)) or eps == 0.0
            np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
            if eps > 0:
                assert np.all(p > 0)
        qj = np.asarray(q_values_jax(jd, jn, jf, jm, pose))
        np.testing.assert_allclose(qj, q, atol=1e-6)
        lj = np.asarray(boltzmann_logprobs_jax(jnp.asarray(q), 2.0, 0.1))
        np.testing.assert_allclose(lj, boltzmann_logprobs(q, 2.0, 0.1), atol=1e-6)


def test_state_json_round_trip_and_flat_dict():
    s = SymbolicState(
        layout="cramped_room", timestep=3, score=20.0,
        players=(PlayerView(position=(1, 2), orientation=(0, -1), held="dish"),
                 PlayerView(position=(3, 1), orientation=(1, 0))),
        pots=(PotView(position=(2, 0), ingredients=3, cooking=True, timer=12),),
        counters=(CounterObject(position=(0, 2), name="onion"),),
    )
    assert SymbolicState.from_json(s.to_json()) == s
    flat = s.to_flat_dict()
    assert flat["p0_held"] == "dish" and flat["pot0_timer"] == 12 and flat["counter_onions"] == 1
    with pytest.raises(StateFormatError):
        SymbolicState.from_json('{"layout": "cramped_room", "timestep": -1, "players": []}')
    bad = s.model_copy(update={"players": (PlayerView(position=(0, 0), orientation=(0, 1)), s.players[1])})
    with pytest.raises(StateFormatError, match="not on a floor cell"):
        bad.validate_against_layout()


def test_from_human_2019_old_dynamics():
    raw = {
        "players": [
            {"position": [1, 2], "orientation": [0, -1], "held_object": {"name": "onion", "position": [1, 2]}},
            {"position": [3, 1], "orientation": [1, 0], "held_object": None},
        ],
        "objects": [
            {"name": "soup", "position": [2, 0], "state": ["onion", 3, 7]},
            {"name": "dish", "position": [0, 2]},
        ],
        "order_list": None,
    }
    s = from_human_2019(json.dumps(raw), "cramped_room")
    pot = s.pots[0]
    assert pot.ingredients == 3 and pot.cooking and not pot.ready and pot.timer == 13
    assert s.players[0].held == "onion" and s.counter_object((0, 2)) == "dish"
    raw["objects"][0]["state"] = ["onion", 3, 20]
    assert from_human_2019(raw, "cramped_room").pots[0].ready
    raw["objects"][0]["state"] = ["onion", 2, 0]
    p = from_human_2019(raw, "cramped_room").pots[0]
    assert p.ingredients == 2 and not p.cooking and not p.ready
    with pytest.raises(StateFormatError):
        from_human_2019("{broken", "cramped_room")


def _pair(layout="cramped_room", **p0):
    base = dict(position=(1, 2), orientation=(0, -1), held=None)
    s0 = SymbolicState(layout=layout, timestep=0,
                       players=(PlayerView(**base), PlayerView(position=(3, 1), orientation=(0, -1))),
                       pots=(PotView(position=(2, 0), ingredients=0),))
    s1 = s0.model_copy(update={"timestep": 1, "players": (PlayerView(**{**base, **p0}), s0.players[1])})
    return s0, s1


def test_action_inference_unit_cases():
    s0, s1 = _pair(position=(1, 1))
    assert infer_actions(s0, s1, 0) == {0}
    s0, s1 = _pair(orientation=(-1, 0))  # west of (1,2) is a counter: a turn
    assert infer_actions(s0, s1, 0) == {3}
    s0, s1 = _pair()
    assert STAY in infer_actions(s0, s1, 0)
    s0, s1 = _pair(position=(3, 2), orientation=(1, 0))
    with pytest.raises(ImpossibleTransitionError, match="step 7"):
        infer_actions(s0, s1, 0, step=7)
    s0, s1 = _pair(held="onion")  # facing (1,1) floor: nothing to pick up there
    with pytest.raises(ImpossibleTransitionError):
        infer_actions(s0, s1, 0)
    s0, s1 = _pair()
    s1 = s1.model_copy(update={"counters": (CounterObject(position=(4, 2), name="dish"),)})
    with pytest.raises(ImpossibleTransitionError, match="appeared from nowhere"):
        detect_events(s0, s1, step=3)


def test_adapter_validates_actions():
    env = OvercookedAdapter("cramped_room")
    env.reset()
    with pytest.raises(InvalidActionError):
        env.step([0])
    with pytest.raises(InvalidActionError):
        env.step([0, 9])
    assert env.step([INTERACT, STAY]).state.timestep == 1


@pytest.mark.parametrize("scooper", [0, 1])
def test_soup_taken_and_onion_potted_in_one_step(scooper):
    """The simulator resolves interactions in player order. When the player who takes a ready soup
    comes first, the other can put an onion into the pot it has just emptied, in the same step
    (seen with a BC partner on asymmetric_advantages). When the onion comes first, it meets a full
    pot and stays in hand. Both go through the real dynamics and are explained, not refused."""
    potter = 1 - scooper
    players = [None, None]
    players[scooper] = PlayerView(position=(5, 3), orientation=(-1, 0), held="dish")
    players[potter] = PlayerView(position=(3, 3), orientation=(1, 0), held="onion")
    start = SymbolicState(layout="asymmetric_advantages", timestep=130, players=tuple(players),
                          pots=(PotView(position=(4, 2), ingredients=1),
                                PotView(position=(4, 3), ingredients=3, ready=True)))
    env = OvercookedAdapter("asymmetric_advantages")
    env.reset()
    env.set_state(start)
    after = env.step([INTERACT, INTERACT]).state
    pot = after.pot_at((4, 3))
    assert after.players[scooper].held == "soup"
    events = detect_events(start, after)
    assert events[scooper] == ["pickup:soup"]
    if scooper == 0:
        assert pot.ingredients == 1 and after.players[potter].held is None
        assert events[potter] == ["potting:onion"]
    else:
        assert pot.ingredients == 0 and after.players[potter].held == "onion" and events[potter] == []
    # the reverse of the legal case cannot happen: the earlier player's onion met a full pot
    if scooper == 1:
        forged = after.model_copy(update={
            "players": (after.players[0].model_copy(update={"held": None}), after.players[1]),
            "pots": (after.pots[0], pot.model_copy(update={"ingredients": 1}))})
        with pytest.raises(ImpossibleTransitionError, match="taken by player 1"):
            detect_events(start, forged)


# ------------------------------------------------- hand-over counters on a layout split by a counter


def _forced(ego_held, partner_held, counters, pots, ego_at=(3, 2), partner_at=(1, 2)):
    """forced_coordination: player 0 on the pot side (right), player 1 on the supply side."""
    return SymbolicState(
        layout="forced_coordination", timestep=100,
        players=(PlayerView(position=ego_at, orientation=(-1, 0), held=ego_held),
                 PlayerView(position=partner_at, orientation=(1, 0), held=partner_held)),
        pots=tuple(PotView(position=p, ingredients=n, ready=r) for p, n, r in pots),
        counters=tuple(CounterObject(position=c, name=o) for c, o in counters))


MIDDLE = {(2, 1), (2, 2), (2, 3)}  # the counters both sides reach
READY = [((3, 0), 3, True), ((4, 1), 3, True)]


def test_layout_regions_and_the_counters_each_side_reaches():
    info = layout_info("forced_coordination")
    a, b = info.start_positions
    assert info.region(a) == {(3, 1), (3, 2), (3, 3)} and info.region(b) == {(1, 1), (1, 2), (1, 3)}
    assert info.touching(a) & info.touching(b) == MIDDLE
    cramped = layout_info("cramped_room")
    assert cramped.region(cramped.start_positions[0]) == set(cramped.floor)


def test_surplus_item_is_put_down_off_the_hand_over_counters():
    from beliefgate.envs.overcooked.kitchen import held_wanted, placement_targets, sole_cook

    # the stall seen on forced_coordination: both soups ready, the pot side holds a surplus onion,
    # the supply side holds a dish for them; putting the onion on the one free middle counter
    # would leave the dish nowhere to go
    s = _forced("onion", "dish", [((2, 1), "onion"), ((2, 3), "onion")], READY)
    assert sole_cook(s, 0) and not sole_cook(s, 1)
    assert not held_wanted(s, 0)
    allowed, excluded = placement_targets(s, 0)
    assert allowed is None and excluded == MIDDLE
    # a wanted item the holder cannot use is a hand-over: only the middle counters
    assert held_wanted(s, 1)
    assert placement_targets(s, 1) == (MIDDLE, frozenset())
    # a shared floor: no restriction at all
    cramped = SymbolicState(layout="cramped_room", timestep=0,
                            players=(PlayerView(position=(1, 1), orientation=(0, -1), held="onion"),
                                     PlayerView(position=(3, 1), orientation=(0, -1))),
                            pots=(PotView(position=(2, 0), ingredients=3, ready=True),))
    assert placement_targets(cramped, 0) == (None, frozenset())


def test_sole_cook_puts_its_dish_down_for_a_pot_it_must_still_fill():
    from beliefgate.envs.overcooked.kitchen import held_wanted, skill_needs

    s = _forced("dish", "onion", [((2, 1), "dish"), ((2, 2), "dish"), ((2, 3), "dish")],
                [((3, 0), 0, False), ((4, 1), 2, False)])
    assert not held_wanted(s, 0)  # no full pot, and only it can load the third onion
    ctl = controller_for("forced_coordination")
    needs = skill_needs(s, 0, ctl, ctl.feasible(s, 0, require_targets=True))
    assert needs.get("place_obj_on_counter") == 1.0 and needs.get("fill_dish_with_soup", 0.0) == 0.0


def test_a_full_set_of_hand_over_counters_is_cleared_by_the_sole_cook():
    from beliefgate.envs.overcooked.executor import Executor
    from beliefgate.envs.overcooked.kitchen import clearing_targets

    full = [((2, 1), "dish"), ((2, 2), "dish"), ((2, 3), "dish")]
    s = _forced(None, "onion", full, [((3, 0), 0, False), ((4, 1), 2, False)])
    assert clearing_targets(s, 0, "pickup_dish") == MIDDLE
    assert clearing_targets(s, 0, "pickup_onion") is None  # no onion on them
    assert clearing_targets(s, 1, "pickup_dish") is None  # the supply side does not undo hand-overs
    one_free = _forced(None, "onion", full[:2], [((3, 0), 0, False), ((4, 1), 2, False)])
    assert clearing_targets(one_free, 0, "pickup_dish") is None
    ctl = controller_for("forced_coordination")
    ex = Executor(ctl, 0, np.random.default_rng(0))
    ex.start_in(s, "pickup_dish")
    cells = [c for c, on in zip(ctl.tables.interactables, ex.targets(s)) if on]
    assert set(cells) <= MIDDLE and cells
    held = _forced("onion", "dish", [((2, 1), "onion"), ((2, 3), "onion")], READY)
    ex.start_in(held, "place_obj_on_counter")
    cells = {c for c, on in zip(ctl.tables.interactables, ex.targets(held)) if on}
    assert cells and not cells & MIDDLE  # (4, 2) / (4, 3): the pot side's own counters


@pytest.mark.parametrize("agent,seat", [("overforge", 0), ("bayes-belief:full", 1)])
def test_forced_coordination_episodes_keep_delivering(agent, seat):
    """End to end in the real dynamics: before the hand-over rules both of these stalled
    (seat 0, the pot side: items on all three middle counters, 2 deliveries in 400 steps;
    seat 1, the supply side: its dish put on its own counter and picked up again, 0)."""
    from beliefgate.eval.episode import run_episode

    r = run_episode("forced_coordination", agent, "onion-sourcer", seed=1001, horizon=400, seat=seat)
    assert r.summary["deliveries"] >= 5


@pytest.mark.parametrize("partner", [2, -1, "1", 1.0, True, None])
def test_overcooked_gate_checks_the_partner_index_up_front(partner):
    from beliefgate.envs.overcooked.gate import overcooked_gate
    from beliefgate.models.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match=r"partner index must be an integer in \[0, 2\) on cramped_room"):
        overcooked_gate("cramped_room", partner=partner)
    assert overcooked_gate("cramped_room", partner=np.int64(0))._observer.partner == 0


def test_a_malformed_state_is_one_line():
    from beliefgate.envs.overcooked.gate import overcooked_gate

    gate = overcooked_gate("cramped_room")
    with pytest.raises(StateFormatError) as info:
        gate.observe({"a": 1}, {"b": 2})
    message = str(info.value)
    assert "\n" not in message and "pydantic.dev" not in message
    assert message.startswith("malformed symbolic state: layout: Field required") and "more errors" in message
