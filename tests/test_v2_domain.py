"""The OvercookedV2 backend on JaxMARL's real dynamics (short horizons; one compile per layout).

Layouts and options, the symbolic state against stepped JaxMARL states (JSON and set_state round
trips, one compile per layout), events, the observer against stepped pairs, the executor reaching
every skill, scripted / bayes-belief / three-player episodes through the runner, and bad input.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("jaxmarl")

from beliefgate.envs.domain import UnknownLayoutError, domain_for_layout, register_domain, unregister_domain
from beliefgate.envs.overcooked_v2 import layouts as L
from beliefgate.envs.overcooked_v2.domain import DOMAIN
from beliefgate.errors import InputError

LAYOUT = "v2/cramped_room_v2"


@pytest.fixture(scope="module", autouse=True)
def _registered():
    # the shared venv's metadata may predate the entry point: register in process
    register_domain(DOMAIN)
    yield
    unregister_domain(DOMAIN.name)


@pytest.fixture(scope="module")
def rollout():
    """60 random joint actions on cramped_room_v2 (seeded): the states and the env."""
    from beliefgate.envs.overcooked_v2.env import V2Env

    env = V2Env(LAYOUT, 200, seed=7)
    rng = np.random.default_rng(0)
    states, actions = [env.state], []
    for _ in range(60):
        a = [int(x) for x in rng.integers(0, 6, 2)]
        states.append(env.step(a).state)
        actions.append(a)
    return env, states, actions


# ------------------------------------------------------------------ layouts
def test_layouts_are_jaxmarls_with_a_pot_and_a_goal_plus_two_three_player_kitchens():
    from beliefgate.envs.overcooked_v2._jaxmarl import jaxmarl_v2

    mod = jaxmarl_v2()
    S = mod.common.StaticObject
    assert (L.WALL, L.GOAL, L.POT, L.RECIPE_INDICATOR, L.BUTTON_INDICATOR, L.PLATE_PILE, L.INGREDIENT_PILE_BASE) == \
        (S.WALL, S.GOAL, S.POT, S.RECIPE_INDICATOR, S.BUTTON_RECIPE_INDICATOR, S.PLATE_PILE, S.INGREDIENT_PILE_BASE)
    assert (L.POT_COOK_TIME, L.INDICATOR_TIME) == (mod.settings.POT_COOK_TIME, mod.settings.INDICATOR_ACTIVATION_TIME)
    want = sorted(n for n, lay in mod.layouts.overcooked_v2_layouts.items()
                  if len(lay.agent_positions) == 2 and (lay.static_objects == S.POT).any()
                  and (lay.static_objects == S.GOAL).any())
    assert sorted(L.JAXMARL_LAYOUTS) == want
    for name in DOMAIN.layouts():
        info = DOMAIN.layout_info(name)
        assert info.pots and info.goals and DOMAIN.players(name) == info.players
        assert domain_for_layout(name) is DOMAIN
    three = DOMAIN.layout_info("v2/cramped_room_v2_3p")
    assert three.players == 3 and three.starts[2] == (2, 2)
    assert DOMAIN.layout_info("v2/asymm_advantages_3p").starts[2] == (1, 2)   # the left half
    row = DOMAIN.describe_layout("v2/cramped_room_v2_3p")
    assert row["backend"] == "v2" and row["players"] == 3 and row["recipes"]


def test_layouts_json_lists_the_v2_backend():
    from typer.testing import CliRunner

    from beliefgate.cli import app

    res = CliRunner().invoke(app, ["layouts", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.output)}
    assert rows["v2/cramped_room_v2"]["backend"] == "v2" and rows["v2/cramped_room_v2"]["players"] == 2
    assert rows["v2/asymm_advantages_3p"]["players"] == 3


# ------------------------------------------------------- state and dynamics
@pytest.mark.slow  # compiling JaxMARL's own reset (its observation included) takes ~12 s
def test_reset_is_jaxmarls_reset():
    import jax

    from beliefgate.envs.overcooked_v2.env import V2Env

    env = V2Env(LAYOUT, 10, seed=5)
    _, ref = env._c.env.reset(jax.random.split(jax.random.PRNGKey(5))[1])
    for a, b in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(env._jstate)):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_state_round_trips_and_steps_like_jaxmarl(rollout):
    from beliefgate.envs.overcooked_v2.env import V2Env
    from beliefgate.envs.overcooked_v2.state import V2State, host_arrays

    env, states, actions = rollout
    assert any(s.items for s in states), "the rollout should move some item"
    for s in states:
        assert DOMAIN.state_from_json(json.loads(s.to_json())) == s
        assert V2State.from_json(s.to_json()) == s
    # set_state -> the JaxMARL state holds the same leaves; stepping it with the same key and
    # actions gives the same next state as the original rollout
    other = V2Env(LAYOUT, 200, seed=7)
    replay = V2Env(LAYOUT, 200, seed=7)
    for t in (0, 17, 40):
        other.set_state(states[t])
        assert other.state == states[t]
        for _ in range(t):
            replay.step([4, 4])  # advance the key stream like the rollout's
    fresh = V2Env(LAYOUT, 200, seed=7)
    for t in range(25):
        fresh.step(actions[t])
    assert fresh.state == states[25]
    probe = V2Env(LAYOUT, 200, seed=7)
    probe.set_state(states[25])
    probe._key = fresh._key
    for t in range(25, 35):
        assert probe.step(actions[t]).state == fresh.step(actions[t]).state
    # one compile of the step for the layout, whatever set_state fed it
    assert env._c.step._cache_size() == 1
    assert host_arrays(probe._jstate)[6] == 35


def test_events_from_pairs_of_states(rollout):
    env, states, _ = rollout
    seen = {e for a, b in zip(states, states[1:]) for evs in DOMAIN.detect_events(a, b) for e in evs}
    assert any(e.startswith("pickup:ingredient_") for e in seen), seen
    # a scripted cook's episode covers the whole chain up to a correct delivery
    from beliefgate.eval.episode import run_episode

    res = run_episode(LAYOUT, "v2-cook", "v2-cook-adaptive", seed=0, horizon=120)
    events = {e for row in res.trajectory.steps for evs in row.events for e in evs}
    for e in ("pickup:plate", "pickup:dish", "deliver:correct"):
        assert e in events, events
    assert any(e.startswith("potting:ingredient_") for e in events)
    correct = sum(evs.count("deliver:correct") for row in res.trajectory.steps for evs in row.events)
    assert res.summary["reward"] == 20.0 * correct and correct >= 1


def test_recipe_exposure(rollout):
    _, states, _ = rollout
    s = states[0]
    assert DOMAIN.recipe_set(LAYOUT) == ((0, 0, 0), (0, 0, 1), (0, 1, 1), (1, 1, 1)) or \
        sorted(DOMAIN.recipe_set(LAYOUT)) == sorted(DOMAIN.layout_info(LAYOUT).recipes)
    assert DOMAIN.active_recipe(s) in DOMAIN.recipe_set(LAYOUT)
    assert DOMAIN.recipe_viewers(s) == [0, 1]   # the indicator is in view of everyone (no view limit)
    near = s.model_copy(update={"agent_view_size": 1})
    r = DOMAIN.layout_info(LAYOUT).indicators[0]
    assert DOMAIN.recipe_viewers(near) == [i for i, p in enumerate(s.players)
                                           if abs(p.position[0] - r[0]) <= 1 and abs(p.position[1] - r[1]) <= 1]


# ------------------------------------------------------------------ observer
def test_observer_against_stepped_pairs(rollout):
    _, states, actions = rollout
    obs = DOMAIN.make_observer(layout=LAYOUT, partner=1)
    lib = DOMAIN.controller(LAYOUT).library
    informative = 0
    for t, (a, b) in enumerate(zip(states, states[1:])):
        ev = obs.evidence(a, b)
        assert ev.action_mask[actions[t][1]], (t, actions[t], ev.action_mask)  # the true action is consistent
        assert ev.logprobs.shape == (lib.num_skills, 6)
        assert np.allclose(np.exp(ev.logprobs).sum(axis=1), 1.0)
        informative += ev.weight > 0
        done = DOMAIN.completed_skills(DOMAIN.detect_events(a, b)[1], lib)
        assert ev.completed == (done[0] if done else None)
    assert informative > 10


# ------------------------------------------------------------------ executor
def _setup(state, skill, player, info):
    """``state`` changed so that ``player`` can run ``skill`` (its requirement and a target)."""
    from beliefgate.envs.overcooked_v2.layouts import COOKED, PLATE, ingredient_code

    recipe = state.recipe
    inv = {"plate_soup": PLATE, "deliver_dish": recipe | PLATE | COOKED, "place_on_counter": PLATE}.get(skill, 0)
    if skill.startswith("put_ingredient_"):
        inv = ingredient_code(int(skill.split("_")[2]))
    items = [it for it in state.items if (it[0], it[1]) not in info.pots]
    if skill == "plate_soup":
        items += [(x, y, recipe | COOKED, 0) for x, y in info.pots]
    if skill == "start_cooking":   # only where pots cook by interaction: a filled pot waits for a hand
        items += [(x, y, recipe, 0) for x, y in info.pots]
        state = state.model_copy(update={"start_cooking_interaction": True})
    players = list(state.players)
    players[player] = players[player].model_copy(update={"inventory": inv})
    return state.model_copy(update={"players": tuple(players), "items": tuple(items)})


def _reaches_every_skill(layout: str, steps: int = 40):
    from beliefgate.envs.overcooked_v2.env import V2Env
    from beliefgate.envs.overcooked_v2.layouts import V2Options

    info = DOMAIN.layout_info(layout)
    plain = V2Env(layout, 1000, seed=0)
    cooking = V2Env(layout, 1000, options=V2Options(start_cooking_interaction=True), seed=0)
    start = plain.state
    ctrl = DOMAIN.controller(layout)
    tables = ctrl.tables
    for skill in ctrl.library.names:
        best = None   # the player nearest a target of the skill (the others stand still)
        for player in range(info.players):
            state = _setup(start, skill, player, info)
            mask = ctrl.target_mask(state)[ctrl.library.index(skill)]
            me = state.players[player]
            d = tables.dist[mask, tables.pose(me.position, me.direction)].min() if mask.any() else np.inf
            if np.isfinite(d) and (best is None or d < best[0]):
                best = (d, player, state)
        if best is None:
            pytest.fail(f"{layout}: no player reaches a target of {skill}")
        _, player, state = best
        ex = DOMAIN.executor(ctrl, player, np.random.default_rng(1))
        env = cooking if state.start_cooking_interaction else plain
        env.set_state(state)
        ex.start_in(state, skill)
        status, t = None, 0
        while t < steps:
            joint = [4] * info.players
            joint[player] = ex.act(env.state)
            res = env.step(joint)
            status = ex.update(res.state, res.events[player])
            t += 1
            if status.value != "running":
                break
        assert status is not None and status.value == "completed", (layout, skill, player, status, t)


def test_target_masks_are_shared_by_states_with_the_same_items_and_never_written(rollout):
    """The controller keeps one mask per (items, cooking rule): every state of a rollout gets the
    mask a fresh controller computes for it, also after its players moved (targets never depend
    on where the players stand), and a caller cannot write into the shared array."""
    from beliefgate.envs.overcooked_v2.controller import V2Controller

    _, states, _ = rollout
    shared = V2Controller.create(LAYOUT)
    for state in states + states[::-1]:
        fresh = V2Controller.create(LAYOUT)
        got = shared.target_mask(state)
        np.testing.assert_array_equal(got, fresh.target_mask(state))
        swapped = state.model_copy(update={"players": state.players[::-1]})
        np.testing.assert_array_equal(shared.target_mask(swapped), V2Controller.create(LAYOUT).target_mask(swapped))
        for k in range(shared.library.num_skills):
            np.testing.assert_array_equal(shared.target_row(state, k), got[k])
    assert len(shared._masks) == len({(s.items, s.start_cooking_interaction) for s in states})
    with pytest.raises(ValueError):
        got[0, 0] = not got[0, 0]
    cooking = states[-1].model_copy(update={"start_cooking_interaction": True})
    assert shared.target_mask(cooking) is not shared.target_mask(states[-1])


def test_executor_reaches_every_skill_on_cramped_room_v2():
    _reaches_every_skill(LAYOUT)


@pytest.mark.slow
@pytest.mark.parametrize("layout", [n for n in L.layout_names() if n != LAYOUT])
def test_executor_reaches_every_skill_on_every_layout(layout):
    _reaches_every_skill(layout, steps=60)


def test_every_skill_has_a_reachable_target_on_every_layout():
    """Static check on every layout: each skill's target kind is faced from some start's room."""
    from beliefgate.envs.overcooked_v2.controller import pose_tables

    for name in DOMAIN.layouts():
        info = DOMAIN.layout_info(name)
        tables = pose_tables(name)
        index = {c: i for i, c in enumerate(tables.interactables)}
        kinds = {"pots_open": info.pots, "pots_with_soup": info.pots, "pots_to_start": info.pots, "plate_sources": info.plate_piles,
                 "goals": info.goals, "empty_counters": info.counters, "recipe_buttons": info.buttons,
                 **{f"ingredient_sources_{i}": info.ingredient_piles(i) for i in info.ingredients}}
        for skill in DOMAIN.controller(name).library.skills:
            cells = [index[c] for c in kinds[skill.targets] if c in index]
            poses = [tables.pose(p, 0) for p in info.starts]
            assert cells and np.isfinite(tables.dist[np.ix_(cells, poses)]).any(), (name, skill.name)


# ------------------------------------------------------------------ episodes
def test_bayes_belief_episode_writes_a_log_the_metrics_read(tmp_path):
    from beliefgate.envs.trajlog import read_log
    from beliefgate.eval.episode import run_episode
    from beliefgate.eval.metrics import episode_metrics

    log = tmp_path / "v2.jsonl"
    res = run_episode(LAYOUT, "bayes-belief:full", "v2-cook", seed=3, horizon=80, log_path=log,
                      env_options={"sample_recipe_on_delivery": True})
    traj = read_log(log)
    assert traj.header.config["sample_recipe_on_delivery"] is True
    assert traj.header.config["agent_view_size"] is None
    assert len(traj.steps) == 80 and traj.final.summary["reward"] == res.summary["reward"]
    assert any(info.get("beliefs") is not None or "belief" in json.dumps(info) for info in
               (row.info[0] for row in traj.steps))
    m = episode_metrics(traj)
    assert m["reward"] == res.summary["reward"]
    frame = DOMAIN.render_frame(traj.steps[10].state)
    assert len(frame[2]) == 2 and frame[5]["recipe"] == list(traj.steps[10].state.recipe_ingredients)
    assert DOMAIN.render_layout(LAYOUT)["terrain"][0] == "XXPXX"


def test_three_player_episode():
    from beliefgate.eval.episode import run_episode

    res = run_episode("v2/cramped_room_v2_3p", "bayes-belief:full", ["v2-cook", "v2-server"], seed=0, horizon=60)
    steps = res.trajectory.steps
    assert len(steps[0].actions) == 3 and res.summary["partners"] == ["v2-cook", "v2-server"]
    assert "beliefs" in steps[-1].info[0] or any("belief" in k for k in steps[-1].info[0])
    obs = DOMAIN.make_observer(layout="v2/cramped_room_v2_3p", partner=2)   # the third player's gate
    for a, b in zip(steps, steps[1:]):
        assert obs.evidence(a.state, b.state).action_mask[a.actions[2]]


def test_partners_listed_as_scripted():
    from typer.testing import CliRunner

    from beliefgate.cli import app

    res = CliRunner().invoke(app, ["partners", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.output)}
    assert {"v2-cook", "v2-cook-adaptive", "v2-fetcher", "v2-server"} <= set(rows)
    assert rows["v2-cook"]["kind"] == "scripted" and rows["v2-cook"]["layouts"] is None


# ------------------------------------------------------------------ bad input
def test_bad_input_is_one_line_naming_the_field():
    from beliefgate.eval.episode import run_episode

    with pytest.raises(UnknownLayoutError, match="v2/nope"):
        run_episode("v2/nope", "v2-cook", "v2-cook", horizon=5)
    with pytest.raises(InputError, match="agent_view_size") as exc:
        run_episode(LAYOUT, "v2-cook", "v2-cook", horizon=5, env_options={"agent_view_size": 0})
    assert "\n" not in str(exc.value)
    with pytest.raises(InputError, match=r"recipes: recipe \[0, 0, 5\] uses ingredient 5"):
        run_episode(LAYOUT, "v2-cook", "v2-cook", horizon=5, env_options={"recipes": [[0, 0, 5]]})
    with pytest.raises(InputError, match="no_such_option"):
        run_episode(LAYOUT, "v2-cook", "v2-cook", horizon=5, env_options={"no_such_option": 1})
    for grid, what in (("WWWWW\n0A AX\nWBWRW", "pot"), ("WWPWW\n0A A1\nWBWRW", "goal"),
                       ("WWPWW\n0   1\nWBWXR", "agent")):
        with pytest.raises(L.LayoutStringError, match=what):
            L.register_layout_string("bad", grid)
    with pytest.raises(L.LayoutStringError, match="uses ingredient 3"):
        L.register_layout_string("bad", "WWPWW\n0A A1\nWBWXW", recipes=[[0, 1, 3]])


def test_cli_exits_2_on_an_unknown_v2_layout():
    from typer.testing import CliRunner

    from beliefgate.cli import app

    res = CliRunner().invoke(app, ["episode", "--layout", "v2/nope", "--ego", "v2-cook", "--partner", "v2-cook",
                                   "--horizon", "5"])
    assert res.exit_code == 2, res.output
    assert "v2/nope" in res.output


def test_a_classic_partner_on_a_v2_layout_is_named_as_such_and_the_default_ego_plays():
    """`balanced` belongs to the classic game: asked for a v2/ kitchen it is refused as another domain's
    partner (not "unknown agent 'balanced'; available: balanced, ..."); with no --ego the episode's ego is
    the layout's default partner, as its partners are."""
    from typer.testing import CliRunner

    from beliefgate.agents.registry import make_agent
    from beliefgate.cli import app
    from beliefgate.envs.domain import UnknownPartnerError

    with pytest.raises(UnknownPartnerError, match="'balanced' is a partner of the overcooked domain and does not "
                                                  "play overcooked_v2 layouts; overcooked_v2 partners: v2-cook"):
        make_agent("balanced", domain=DOMAIN)
    assert type(make_agent("balanced")).__name__ == type(make_agent("balanced", domain=domain_for_layout(
        "cramped_room"))).__name__        # without a domain, or on its own, it is still built
    for flag in ("--ego", "--partner"):
        res = CliRunner().invoke(app, ["episode", "--layout", LAYOUT, flag, "balanced", "--horizon", "3"])
        assert res.exit_code == 2 and f"{flag} 'balanced': 'balanced' is a partner of the overcooked" in res.output
    res = CliRunner().invoke(app, ["episode", "--layout", LAYOUT, "--horizon", "3", "--seed", "1000"])
    assert res.exit_code == 0, res.output
    assert "v2-cook-adaptive" in res.output


def test_missing_jaxmarl_names_the_extra(monkeypatch):
    import sys

    from beliefgate.envs.overcooked_v2 import _jaxmarl

    monkeypatch.setattr(_jaxmarl, "_MODULES", None)
    for name in [m for m in sys.modules if m == "jaxmarl" or m.startswith("jaxmarl.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "jaxmarl", None)
    with pytest.raises(_jaxmarl.MissingExtraError, match=r'pip install -e "\.\[v2\]"'):
        _jaxmarl.jaxmarl_v2()


@pytest.mark.parametrize("option, field", [("agent_view_size=0", "agent_view_size"),
                                           ("recipes=[[0,0,7]]", "recipes"), ("colour=3", "colour")])
def test_cli_refuses_a_bad_env_option_with_exit_2(option, field):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    res = CliRunner().invoke(app, ["episode", "--layout", LAYOUT, "--ego", "v2-cook", "--partner", "v2-cook",
                                   "--horizon", "5", "--env-option", option])
    assert res.exit_code == 2, res.output
    assert field in res.output and "Traceback" not in res.output


def test_a_person_plays_a_v2_kitchen_on_the_play_page(tmp_path):
    """The play page's game (no server): keys in the classic words move the person the right way."""
    from beliefgate.viewer.play import PlayGame, PlaySettings

    settings = PlaySettings(layout=LAYOUT, agent="bayes-belief", horizon=6, human_seat=1, log=str(tmp_path / "p"))
    game = PlayGame(settings, tmp_path / "play.jsonl")
    start = game.state.players[1]
    assert game.press("south")
    msg = game.tick()
    assert msg["frame"][2][1][:2] == [start.position[0], start.position[1] + 1]   # south is down: y + 1
    assert game.trajectory.steps[0].actions[1] == DOMAIN.action_names.index("south")
    assert game.press("north") and game.tick()["frame"][2][1][:2] == list(start.position)


def test_skill_library_is_typed_by_ingredient_with_roles_and_complements():
    lib = DOMAIN.controller(LAYOUT).library
    assert lib.names == ("pickup_ingredient_0", "put_ingredient_0_in_pot", "pickup_ingredient_1",
                         "put_ingredient_1_in_pot", "pickup_plate", "plate_soup", "deliver_dish", "start_cooking",
                         "place_on_counter")
    assert lib.is_complementary("pickup_ingredient_1", "pickup_ingredient_0")
    assert not lib.is_complementary("put_ingredient_0_in_pot", "pickup_ingredient_0")   # the same role
    assert lib.is_complementary("pickup_plate", "pickup_ingredient_0")
    assert lib.requirement_met("put_ingredient_1_in_pot", "ingredient_1")
    assert not lib.requirement_met("put_ingredient_1_in_pot", "ingredient_0")
    button = DOMAIN.controller("v2/grounded_coord_simple").library
    assert "press_recipe_button" in button.names and "press_recipe_button" not in lib.names
    assert [n for n in button.names if n.startswith("pickup_ingredient_")] == \
        [f"pickup_ingredient_{i}" for i in DOMAIN.layout_info("v2/grounded_coord_simple").ingredients]


def test_needs_and_scene_use_the_recipe_only_where_the_player_sees_it(rollout):
    from beliefgate.envs.overcooked_v2.kitchen import skill_needs

    _, states, _ = rollout
    s = states[0]
    ctrl = DOMAIN.controller(LAYOUT)
    recipe = s.recipe_ingredients
    seen = skill_needs(s, 0, ctrl)
    for i in (0, 1):
        assert seen[f"pickup_ingredient_{i}"] == recipe.count(i)
    assert "Recipe: " + "+".join(f"ingredient_{i}" for i in recipe) in DOMAIN.scene_text(s, 0)
    blind = s.model_copy(update={"agent_view_size": 1})
    far = [i for i in range(2) if not blind.sees_recipe(i)]
    assert far == [0]   # the indicator (4, 2) is two cells beyond player 0's view of one
    # out of view, it reasons over every recipe an empty pot can become
    need = skill_needs(blind, 0, ctrl)
    assert need["pickup_ingredient_0"] == 3 and need["pickup_ingredient_1"] == 3
    assert "not visible to you" in DOMAIN.scene_text(blind, 0)
    assert DOMAIN.flat_state(blind, 0)["recipe"] is None and not DOMAIN.flat_state(blind, 0)["recipe_visible"]
    assert 0.0 <= DOMAIN.progress(s) <= DOMAIN.progress(s.model_copy(update={"score": 20.0}))


def test_the_entry_point_names_the_domain():
    import importlib.metadata as md
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    value = re.search(r'^overcooked_v2 = "([^"]+)"', text, re.M).group(1)
    assert md.EntryPoint("overcooked_v2", value, "beliefgate.domains").load() is DOMAIN


def test_the_adaptive_cook_changes_course_when_the_recipe_changes(rollout):
    from beliefgate.envs.overcooked_v2.layouts import ingredient_code, recipe_code

    _, states, _ = rollout
    s0 = states[0]
    pot = DOMAIN.layout_info(LAYOUT).pots[0]
    items = tuple(it for it in s0.items if (it[0], it[1]) != pot) + ((pot[0], pot[1], ingredient_code(0), 0),)
    players = tuple(p.model_copy(update={"inventory": 0}) for p in s0.players)
    before = s0.model_copy(update={"recipe": recipe_code([0, 0, 0]), "items": items, "players": players})
    after = before.model_copy(update={"recipe": recipe_code([0, 1, 1]), "timestep": before.timestep + 1})
    wants = {}
    for name in ("v2-cook", "v2-cook-adaptive"):
        cook = DOMAIN.make_partner(name)
        cook.reset(LAYOUT, 1, 0)
        cook.act(before)
        first = cook.active_skill
        cook.act(after)
        wants[name] = (first, cook.active_skill)
    assert wants["v2-cook"] == ("pickup_ingredient_0", "pickup_ingredient_0")           # commits per dish
    assert wants["v2-cook-adaptive"] == ("pickup_ingredient_0", "pickup_ingredient_1")  # re-reads the recipe


def test_a_bad_logged_state_is_one_line_naming_the_field(rollout):
    from beliefgate.envs.overcooked_v2.state import V2StateError

    data = json.loads(rollout[1][5].to_json())
    data["players"][1]["direction"] = 7
    with pytest.raises(V2StateError, match=r"players\.1\.direction") as exc:
        DOMAIN.state_from_json(data)
    assert "\n" not in str(exc.value)
    data["players"][1]["direction"] = 0
    data["players"][0]["position"] = [0, 0]   # a wall
    with pytest.raises(V2StateError, match=r"players\.0\.position: \[0, 0\] is not a floor cell"):
        DOMAIN.state_from_json(json.dumps(data))
