"""The policy tree on OvercookedV2 (real JaxMARL dynamics, short horizons): the V2 flat state through
the Domain, the shipped V2 seed tree in two- and three-player episodes, and the classic tree's
refusals there."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("jaxmarl")

from beliefgate.envs.domain import register_domain, unregister_domain
from beliefgate.envs.overcooked_v2.domain import DOMAIN
from beliefgate.envs.overcooked_v2.flat_state import FLAT_STATE_KEYS, V2FlatStateError
from beliefgate.envs.overcooked_v2.kitchen import skill_needs
from beliefgate.eval.episode import run_episode
from beliefgate.policytree.agent import close_sandboxes

TWO, THREE = "v2/cramped_room_v2", "v2/cramped_room_v2_3p"


@pytest.fixture(scope="module", autouse=True)
def _registered():
    register_domain(DOMAIN)   # the shared venv's metadata may predate the entry point
    yield
    close_sandboxes()
    unregister_domain(DOMAIN.name)


@pytest.fixture(scope="module")
def episodes():
    """The seed tree with v2-cook partners: 60 steps on the two- and the three-player kitchen."""
    return {TWO: run_episode(TWO, f"policy-tree:seed:{TWO}", "v2-cook", seed=1, horizon=60),
            THREE: run_episode(THREE, f"policy-tree:seed:{THREE}", ["v2-cook", "v2-cook"], seed=0, horizon=60, seat=2)}


@pytest.mark.parametrize("layout", [TWO, THREE])
def test_the_v2_seed_tree_cooks_typed_ingredients_and_a_soup_is_served(episodes, layout):
    res = episodes[layout]
    seat = res.summary["seat"]
    steps = res.trajectory.steps
    assert res.summary["fallbacks"] == 0 and res.summary["llm_calls"] == 0
    assert res.summary["deliveries"] >= 1 and res.summary["reward"] > 0
    chosen = {s.info[seat]["tree_skill"] for s in steps}
    assert chosen <= set(DOMAIN.controller(layout).library.names)
    # the tree's own hands put an ingredient in a pot (its choice, its executor, the real dynamics)
    assert any(e.startswith("potting:ingredient_") for s in steps for e in s.events[seat])
    assert all(s.info[seat]["partner_map"] is not None for s in steps)


@pytest.mark.parametrize("layout", [TWO, THREE])
def test_flat_state_fields_follow_the_v2_state(episodes, layout):
    states = [DOMAIN.state_from_json(s) for s in episodes[layout].trajectory.states()]
    n = DOMAIN.players(layout)
    names = set(DOMAIN.controller(layout).library.names)
    seen_ingredient = seen_pot = False
    for state in states:
        for seat in range(n):
            d = DOMAIN.flat_state(state, seat, teammate_last_completed_skill="pickup_plate")
            assert tuple(d) == FLAT_STATE_KEYS and json.loads(json.dumps(d)) == d
            assert d["game"] == "overcooked_v2" and d["players"] == n and d["self_player"] == seat
            assert d["teammates"] == [i for i in range(n) if i != seat]
            assert d["hold"] == [p.held or "empty" for p in state.players]
            assert d["holdings"] == {"self": d["hold"][seat], "teammate": d["hold"][d["teammates"][0]]}
            assert d["teammate_holds"] == [d["hold"][i] for i in d["teammates"]]
            assert [p["ingredients"] for p in d["pot"]] == [sorted(p.ingredients) for p in state.pots]
            assert d["recipe_visible"] == state.sees_recipe(seat)
            assert d["recipe"] == ("-".join(map(str, state.recipe_ingredients)) if d["recipe_visible"] else None)
            if d["recipe_visible"]:
                assert d["candidate_recipes"] == [d["recipe"]]
            need = skill_needs(state, seat, DOMAIN.controller(layout))
            for key, count in d["ingredient_need"].items():   # what the no-belief agent's needs say
                if f"pickup_{key}" in need:
                    assert count == need[f"pickup_{key}"]
            for key, count in d["ingredient_sure"].items():   # sure <= possible; equal when one candidate
                assert count <= d["ingredient_need"][key]
                if len(d["candidate_recipes"]) == 1:
                    assert count == d["ingredient_need"][key]
            steps = DOMAIN.controller(layout).steps_to_targets(state, seat)
            assert d["self_reachable"] == [k for k, v in zip(DOMAIN.controller(layout).library.names, steps)
                                           if v < float("inf")]
            assert "deliver_dish" in d["self_reachable"]   # the connected kitchen: every seat reaches the goal
            assert d["teammate_last_completed_skill"] == "pickup_plate"
            seen_ingredient |= d["hold"][seat].startswith("ingredient_")
            seen_pot |= any(p["count"] for p in d["pot"])
            if d["hold"][seat].startswith("ingredient_"):
                assert d["held_fits"] == (f"put_{d['hold'][seat]}_in_pot" in need and need[f"put_{d['hold'][seat]}_in_pot"] == 1)
            for p in d["pot"]:
                assert p["count"] == len(p["ingredients"]) and p["state"] in ("idle", "cooking", "ready")
                assert (p["timers"] is None) == (p["state"] == "idle")
        assert {f"pickup_ingredient_{i}" for i in DOMAIN.layout_info(layout).ingredients} <= names
    assert seen_ingredient and seen_pot
    # out of the recipe's sight: no recipe, the candidates every open pot allows
    blind = states[0].model_copy(update={"agent_view_size": 1})
    seat = next(i for i in range(n) if not blind.sees_recipe(i))
    d = DOMAIN.flat_state(blind, seat)
    assert d["recipe"] is None and d["recipe_visible"] is False
    assert set(d["candidate_recipes"]) <= set(d["recipes"]) and len(d["candidate_recipes"]) > 1
    if not any(p["count"] for p in d["pot"]) and all(h == "empty" for h in d["teammate_holds"]):
        assert d["ingredient_sure"] != d["ingredient_need"]   # several recipes: less is sure than possible
    with pytest.raises(V2FlatStateError, match="player must be a seat"):
        DOMAIN.flat_state(states[0], n)


def test_the_flat_state_carries_the_callers_recipe_belief_and_what_the_pot_needs_under_it():
    """``believed_*``: the caller's MAP recipe and its probability (None without a belief, then
    ``believed_need`` is ``ingredient_need``); ``believed_need`` counts for the believed recipe where
    the pot can still become it; a belief that does not fit the layout is one line."""
    from beliefgate.envs.overcooked_v2.env import V2Env

    env = V2Env(TWO, 100, options=DOMAIN.options(TWO, agent_view_size=1), seed=0)
    state = env.state
    seat = next(i for i in range(2) if not state.sees_recipe(i))
    plain = DOMAIN.flat_state(state, seat)
    assert (plain["believed_recipe"], plain["believed_confidence"]) == (None, None)
    assert plain["believed_need"] == plain["ingredient_need"]
    assert len(plain["candidate_recipes"]) > 1   # empty pots, empty hands: every recipe is possible
    for name in plain["recipes"]:
        d = DOMAIN.flat_state(state, seat, believed_recipe=name, believed_confidence=0.75)
        assert d["believed_recipe"] == name and d["believed_confidence"] == 0.75
        counts = [int(i) for i in name.split("-")]
        assert d["believed_need"] == {k: counts.count(int(k.rsplit("_", 1)[1])) for k in d["ingredient_need"]}
        assert {k: d[k] for k in FLAT_STATE_KEYS if not k.startswith("believed")} == \
            {k: plain[k] for k in FLAT_STATE_KEYS if not k.startswith("believed")}
    for kwargs, words in (({"believed_recipe": "2-2-2", "believed_confidence": 0.5}, "not a recipe of"),
                          ({"believed_recipe": plain["recipes"][0]}, "both or neither"),
                          ({"believed_recipe": plain["recipes"][0], "believed_confidence": 1.5}, "a probability")):
        with pytest.raises(V2FlatStateError, match=words) as err:
            DOMAIN.flat_state(state, seat, **kwargs)
        assert "\n" not in str(err.value)


def test_the_tree_agent_reads_the_recipe_belief_distillation_replays_from_its_log():
    """On a kitchen that hides the recipe the policy-tree agent keeps a recipe belief (logged as
    ``recipe_map`` / ``recipe_confidence``) and hands it to the tree; distillation's labels,
    rebuilt from the log, carry the very same belief at every step -- a tree is fitted on what it
    will read. The belief is not the recipe seen now: it remembers."""
    from beliefgate.policytree.distil import DistilConfig, label_episode

    opts = {"agent_view_size": 1, "sample_recipe_on_delivery": True}
    res = run_episode(TWO, f"policy-tree:seed:{TWO}", "v2-cook", seed=4, horizon=80, seat=1, env_options=opts)
    steps = res.trajectory.steps
    cfg = DistilConfig(layout=TWO, partners=("v2-cook",), teacher="bayes-belief", env_options=opts)
    records, _ = label_episode(res.trajectory, cfg, 1, 4, teacher_played=False)
    assert len(records) == len(steps)
    remembered = 0
    for rec, row in zip(records, steps):
        info, flat = row.info[1], rec["flat"]
        assert flat["believed_recipe"] == info["recipe_map"]
        assert flat["believed_confidence"] == info["recipe_confidence"]
        remembered += (not flat["recipe_visible"] and flat["believed_confidence"] is not None
                       and flat["believed_confidence"] > 0.9)
    assert steps[0].info[1]["recipe_map"] is None and steps[-1].info[1]["recipe_map"] is not None
    assert remembered > 0
    # the one-recipe kitchen has nothing to infer: no tracker, no belief
    one = run_episode("v2/cramped_room", "policy-tree:seed:v2/cramped_room", "v2-cook", seed=0, horizon=5)
    assert "recipe_map" not in one.trajectory.steps[-1].info[0]


def test_in_a_split_kitchen_the_flat_state_says_who_reaches_the_pot():
    from beliefgate.envs.overcooked_v2.state import V2Player, V2State

    layout = "v2/grounded_coord_simple"   # only the right room (seat 1) reaches the pot
    info = DOMAIN.layout_info(layout)
    state = V2State(layout=layout, timestep=0, recipe=0, players=tuple(
        V2Player(position=p, direction=0) for p in info.starts))
    left, right = DOMAIN.flat_state(state, 0), DOMAIN.flat_state(state, 1)
    puts = {n for n in DOMAIN.controller(layout).library.names if n.startswith("put_ingredient_")}
    assert puts <= set(right["self_reachable"]) and not puts & set(left["self_reachable"])
    assert left["teammate_reachable"] == right["self_reachable"]


def test_the_seed_tree_answers_legal_skills_on_every_v2_layouts_probe_states():
    from beliefgate.policytree.learn import check_tree

    code = DOMAIN.seed_tree(TWO)
    for layout in (TWO, THREE, "v2/grounded_coord_simple", "v2/asymm_advantages_3p"):
        for seat in range(DOMAIN.players(layout)):
            assert DOMAIN.probe_states(layout, seat)
            assert check_tree(code, layout, seat) is None, (layout, seat)


def test_the_classic_seed_tree_on_a_v2_kitchen_is_a_counted_fallback_every_step():
    res = run_episode(TWO, "policy-tree:seed:cramped_room", "v2-cook", seed=1, horizon=5)
    # it answers classic skills (pickup_onion, ...) that no V2 seat has: the sandbox refuses each answer
    assert res.summary["fallbacks"] == 5 and res.summary["fallback_counts"]
