"""OverForge on OvercookedV2 (issue 43): rollouts in JaxMARL's dynamics, batched in one jitted call
per imagined step, under an imagined recipe the ego believes (never the hidden true one), with every
teammate drawn from its own posterior; two- and three-player episodes; no recompiles in the loop."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jaxmarl")

from beliefgate.agents.overforge import make_overforge_agent
from beliefgate.envs.domain import register_domain, unregister_domain
from beliefgate.envs.overcooked_v2.domain import DOMAIN
from beliefgate.envs.overcooked_v2.env import BatchStepper, V2Env, batch_stepper
from beliefgate.envs.overcooked_v2.layouts import V2Options
from beliefgate.eval.episode import run_episode
from beliefgate.eval.pcm import check_record, decision_records

LAYOUT = "v2/cramped_room_v2"
OPTIONS = {"agent_view_size": 1, "sample_recipe_on_delivery": True}


@pytest.fixture(scope="module", autouse=True)
def _registered():
    register_domain(DOMAIN)
    yield
    unregister_domain(DOMAIN.name)


def test_batch_stepper_steps_as_the_env_does_and_compiles_once():
    env = V2Env(LAYOUT, 50, V2Options(**OPTIONS), seed=3)
    stepper = batch_stepper(LAYOUT)
    rng = np.random.default_rng(0)
    state = env.state
    stepper.step([state], [[4, 4]], [0])
    traces = BatchStepper.traces
    for _ in range(25):
        a = [int(v) for v in rng.integers(0, 6, 2)]
        rows = stepper.step([state, state, state], [a, [4, 4], a], [0, 0, 1])
        real = env.step(a)
        assert rows[0] == (real.state, real.reward, real.events) and rows[2][0] == real.state
        stayed = rows[1][0]   # both players stay: only the clock moves
        assert stayed.timestep == state.timestep + 1 and [p.position for p in stayed.players] == [
            p.position for p in state.players]
        state = real.state
    assert BatchStepper.traces == traces   # 25 calls of 3 rows: no new trace


def test_overforge_two_player_v2_episode_rolls_out_under_a_believed_recipe():
    run_episode(LAYOUT, "overforge", ["v2-cook"], seed=1000, horizon=4, seat=1, env_options=OPTIONS)  # warm
    traces = BatchStepper.traces
    res = run_episode(LAYOUT, "overforge", ["v2-cook"], seed=1001, horizon=14, seat=1, env_options=OPTIONS)
    assert BatchStepper.traces == traces   # a whole episode of rollouts: no recompile
    records = decision_records(res.trajectory)
    assert records and any(r["depth"] >= 1 for r in records)
    for r in records:
        assert check_record(r) is None
    names = set(DOMAIN.goal_names(LAYOUT))
    goals = [g for row in res.trajectory.steps for g in (row.info[1] or {}).get("imagined_goals", [])]
    assert goals and set(goals) <= names


def test_imagined_recipe_is_the_belief_or_what_the_ego_observes_never_the_hidden_truth():
    env = V2Env("v2/demo_cook_simple", 20, V2Options(agent_view_size=2), seed=4)
    state = env.state
    agent = make_overforge_agent("overforge")
    agent.reset("v2/demo_cook_simple", 1, 0)          # seat 1 never sees the recipe here
    assert not state.sees_recipe(1)
    rng = np.random.default_rng(0)
    seen = {agent.imagined_goal(state, rng) for _ in range(5)}
    assert seen == {DOMAIN.observable_goal(state, 1)}   # no belief yet: the no-belief agent's rule
    for goal in DOMAIN.goal_names("v2/demo_cook_simple"):
        imagined = DOMAIN.with_goal(state, goal)
        assert "-".join(map(str, imagined.recipe_ingredients)) == goal and imagined.players == state.players


def test_overforge_three_player_v2_episode_keeps_a_filter_per_teammate():
    layout = "v2/cramped_room_v2_3p"
    res = run_episode(layout, "overforge", ["v2-cook", "v2-server"], seed=1000, horizon=10, seat=0,
                      env_options={"agent_view_size": 1})
    records = decision_records(res.trajectory)
    assert records and all(check_record(r) is None for r in records)
    assert any(r["depth"] >= 1 for r in records)
    agent = make_overforge_agent("overforge")
    agent.reset(layout, 0, 0)
    assert set(agent.gates) == {1, 2} and set(agent.model.filters) == {1, 2}


def test_v2_strategy_file_names_only_skills_and_roles_some_layout_has():
    import yaml
    from importlib import resources

    from beliefgate.agents.overforge.strategies import _expand, strategies_for
    from beliefgate.envs.overcooked_v2.controller import library_for

    libraries = [library_for(name) for name in DOMAIN.layouts()]
    skills = {n for lib in libraries for n in lib.names}
    roles = {s.role for lib in libraries for s in lib.skills}
    text = resources.files("beliefgate.agents.overforge").joinpath("strategies_overcooked_v2.yaml").read_text()
    for body in yaml.safe_load(text)["strategies"].values():
        for name in body["weights"]:
            assert _expand([name], skills), name
        for role in body["roles"]:
            assert _expand([role], roles), role
    lib = strategies_for(DOMAIN.name, library_for(LAYOUT))
    assert lib["loader"].weight("pickup_ingredient_1") == 1.0 and "ingredient_0" in lib["loader"].roles


def test_an_unsure_recipe_belief_is_imagined_as_its_map_recipe_by_default():
    """``recipe=map`` (the default, chosen on seeds >= 1000): below the acting floor every imagined
    continuation runs under the MAP recipe; ``recipe=auto`` draws from the posterior instead."""
    from types import SimpleNamespace

    env = V2Env("v2/demo_cook_simple", 20, V2Options(agent_view_size=2), seed=4)
    names = DOMAIN.goal_names("v2/demo_cook_simple")
    posterior = {n: (0.55 if i == 1 else 0.45 / (len(names) - 1)) for i, n in enumerate(names)}
    block = SimpleNamespace(posterior=posterior, map_goal=names[1], confidence=0.55)
    draws = {}
    for spec in ("overforge", "overforge:recipe=auto"):
        agent = make_overforge_agent(spec)
        agent.reset("v2/demo_cook_simple", 1, 0)
        agent.goal_block = lambda: block
        rng = np.random.default_rng(0)
        draws[spec] = {agent.imagined_goal(env.state, rng) for _ in range(40)}
    assert draws["overforge"] == {names[1]}
    assert len(draws["overforge:recipe=auto"]) > 1


def _teammate_path(first_skill: str, seed: int, steps: int, layout: str = "v2/grounded_coord_simple"):
    """The imagined teammate's (seat 0) positions over ``steps`` steps of one branch from the start
    of ``layout`` whose ego (seat 1) starts with ``first_skill``; the teammate draws uniformly."""
    from beliefgate.agents.overforge.rollout import BranchRollout, extend_together

    agent = make_overforge_agent("overforge")
    agent.reset(layout, 1, 0)
    state = DOMAIN.make_env(layout, 50, seed=seed, agent_view_size=2).reset(seed)
    roll = BranchRollout(agent.model, state, 1, agent.library.index(first_skill),
                         agent._choose_next(agent.strategy_of("generalist")), "uniform", None, None,
                         np.random.default_rng([seed, 0]))
    path = []
    for _ in range(steps):
        extend_together([roll], 1)
        path.append((roll.state.players[0].position, roll.state.players[0].inventory))
    return path


def test_branches_of_one_sample_imagine_the_same_teammate_whatever_the_ego_does():
    """Common random numbers: sample j of every branch starts from the same random numbers, and the
    ego's own choices (its executor's tie-breaks) draw from a stream of their own, so a teammate in
    the other room of grounded_coord_simple, whom the ego's branch cannot touch, is imagined doing
    exactly the same in two branches (with one shared stream the ego's branch shifted its draws)."""
    for seed in (0, 1, 2):
        a = _teammate_path("pickup_ingredient_0", seed, 12)
        b = _teammate_path("pickup_plate", seed, 12)
        assert a == b
    assert _teammate_path("pickup_plate", 0, 12) != _teammate_path("pickup_plate", 5, 12)  # draws matter


def test_a_branch_that_sits_out_a_round_is_scored_and_logged_at_its_own_depth():
    """Round r extends only kappa's nucleus; a branch left out of round 2 and back in round 3 has been
    imagined two depth units, not three: its rollout evidence says depth 2 (its rate divides by 2)."""
    res = run_episode("v2/grounded_coord_simple", "overforge", ["v2-cook"], seed=1000, horizon=80, seat=1,
                      env_options={"agent_view_size": 2})
    came_back = 0
    for record in decision_records(res.trajectory):
        assert check_record(record) is None
        seen: dict = {}
        for r, entry in enumerate((e for e in record["evidence"] if "round" in e), 1):
            names = {x["branch"] for x in entry["round"]}
            for x in entry["round"]:
                seen[x["branch"]] = seen.get(x["branch"], 0) + 1
                assert x["depth"] == seen[x["branch"]]
            came_back += sum(seen[n] < r for n in names)
    assert came_back > 0   # the case arose in this episode


def test_overforge_tells_the_recipe_it_sees_once_and_a_heard_recipe_moves_the_listeners_belief():
    """Grounded talk (issue 45 on V2): a seat that sees the recipe says it (``inform`` with ``goal``)
    once until a redraw; a listening OverForge reads the claim as evidence about the active recipe
    (``trust`` 0.9: 0.9 against 0.1/3 per other recipe, so a flat belief over four recipes moves to
    0.9), an OverForge without messages does not, and the channel refuses a recipe the layout lacks."""
    from beliefgate.envs.messages import Channel, Inform

    env = V2Env(LAYOUT, 50, V2Options(**OPTIONS), seed=1000)
    s0 = env.state
    recipe = DOMAIN.seen_goal(s0, 0) or DOMAIN.seen_goal(s0, 1)
    seer = 0 if DOMAIN.seen_goal(s0, 0) else 1
    assert recipe is None or recipe in DOMAIN.goal_names(LAYOUT)
    # walk the seat that is to see the recipe onto the indicator's column when neither does yet
    states = [s0]
    while recipe is None:
        states.append(env.step([2, 4]).state)   # seat 0 walks right
        recipe, seer = DOMAIN.seen_goal(states[-1], 0), 0
        assert len(states) < 10
    here, stay = states[-1], env.step([4, 4]).state   # both players stay: the seat still sees it
    assert DOMAIN.seen_goal(stay, seer) == recipe
    speaker = make_overforge_agent("overforge")
    speaker.reset(LAYOUT, seer, 0)
    speaker.act(here)
    told = [m for m in speaker.messages_out() if isinstance(m, Inform)]
    assert [m.goal for m in told] == [recipe]
    speaker.act(stay)
    assert not any(isinstance(m, Inform) for m in speaker.messages_out())    # said once

    listener_seat = 1 - seer
    names = list(DOMAIN.goal_names(LAYOUT))
    posts = {}
    for name in ("overforge", "overforge:-messages"):
        agent = make_overforge_agent(name)
        agent.reset(LAYOUT, listener_seat, 0)
        agent.act(here)
        agent.hear([Inform(goal=recipe, sender=seer, t=0, id=0)])
        agent.act(stay)
        posts[name] = agent.goal_infos[seer].goal_posterior
        assert agent.claims_read == (1 if name == "overforge" else 0)
        assert agent.info().get("goal_claims_read") == (1 if name == "overforge" else None)
    moved, flat = posts["overforge"], posts["overforge:-messages"]
    k = names.index(recipe)
    assert moved[k] > 0.85 and flat[k] < 0.5 and np.isclose(moved.sum(), 1.0)
    ch = Channel(2, speaker.library.names, speaker.library.roles, goals=names)
    assert ch.send(seer, 0, [Inform(goal="9-9-9")]) is None
    assert ch.end_step().refused[0].reason == "unknown_goal"


def test_overforge_interrupts_a_skill_its_confident_recipe_belief_no_longer_needs():
    """The ``recipe`` interrupt OverForge shares with bayes-belief (``recipe_contradicts``): the ego
    carries ingredient 0 to the pot under 0-0-0; a teammate tells it the recipe is 1-1-1 (trust 0.9
    moves its belief past the 0.8 it acts on), under which ingredient 0 goes on a counter: the
    running skill is interrupted (reason ``recipe``). Without the claim it runs on."""
    from beliefgate.envs.messages import Inform

    layout, ing0 = "v2/demo_cook_simple", 1 << 2
    env = V2Env(layout, 50, V2Options(agent_view_size=2), seed=0)
    ego = 1                                          # the right room never sees the recipe

    def holding(state):
        players = [p.model_dump() for p in state.players]
        players[ego]["inventory"] = ing0
        return type(state).model_validate({**state.model_dump(), "players": players})

    s0 = holding(env.state)
    s1 = holding(env.step([4, 4]).state)
    got = {}
    for told in (False, True):
        agent = make_overforge_agent("overforge")
        agent.reset(layout, ego, 0)
        agent.act(s0)
        if told:
            agent.hear([Inform(goal="1-1-1", sender=0, t=0, id=0)])
        agent.act(s1)
        agent.active = agent.library.index("put_ingredient_0_in_pot")
        agent.planned_goal = "0-0-0"
        got[told] = (agent.believed_goal(), agent.trigger(s1, agent.decision, ()))
    assert got[True] == ("1-1-1", "recipe")
    assert got[False][0] is None and got[False][1] != "recipe"


@pytest.mark.parametrize("name", ["overforge", "bayes-belief:full"])
def test_a_skill_a_teammate_has_since_done_is_interrupted_under_the_same_recipe(name):
    """The pot needs one more ingredient 0 (recipe 0-0-1, one 0 in) and the ego carries one there;
    the teammate puts its own 0 in first. Under the same believed recipe the ego's skill, needed
    when chosen, would now spoil the dish: the ``recipe`` interrupt fires (before, it fired only
    when the believed recipe changed, and both cooks' zeros went in: 0-0-0, a dish no one pays for;
    seed 1001 of the connected room, step 306). A skill chosen without a need is not interrupted."""
    from beliefgate.agents.registry import make_agent
    from beliefgate.envs.overcooked_v2.layouts import recipe_code

    env = V2Env(LAYOUT, 50, V2Options(agent_view_size=None, sample_recipe_on_delivery=True), seed=0)
    start = env.state
    pot = start.info.pots[0]
    ing0 = 1 << 2

    def kitchen(zeros, t):
        players = [p.model_dump() for p in start.players]
        players[0]["inventory"] = ing0
        return type(start).model_validate({**start.model_dump(), "players": players, "recipe": recipe_code([0, 0, 1]),
                                           "items": [[pot[0], pot[1], zeros * ing0, 0]], "timestep": t})

    def carrying(planned_need=None):
        agent = make_agent(name)
        agent.reset(LAYOUT, 0, 0)
        agent.act(kitchen(1, 0))
        agent.act(kitchen(1, 1))   # the first observed step: the recipe belief forms
        agent.active = agent.library.index("put_ingredient_0_in_pot")
        # as a decision at this step would record it (``_plan``): the goal and the skill's need then
        agent.planned_goal = agent.goal_block().map_goal
        agent.planned_need = agent._need_of(kitchen(1, 1), "put_ingredient_0_in_pot") if planned_need is None else planned_need
        return agent

    agent = carrying()
    assert agent.planned_goal == "0-0-1" and agent.planned_need > 0
    assert agent.trigger(kitchen(1, 1), agent.decision, ()) != "recipe"   # still needed: runs on
    agent.act(kitchen(2, 2))   # the teammate's 0 went in
    assert agent.info()["reason"] == "recipe" and agent.active_skill != "put_ingredient_0_in_pot"
    # the same kitchen change does not interrupt a skill that was chosen with no need for it
    agent = carrying(planned_need=0.0)
    agent.prev = kitchen(1, 1)
    assert agent.trigger(kitchen(2, 2), agent.decision, ()) != "recipe"


def test_overforge_asks_a_teammate_to_change_only_a_real_duplicate():
    """Both cooks fetching ingredient 0 is a duplicate when the pot needs one more, not when it needs
    two. Before, OverForge asked for another skill in both cases; in the split room (seeds 0-19) it
    sent 223 requests of which 2 were followed, fewer than chance (0.009 against 0.118)."""
    from types import SimpleNamespace

    from beliefgate.envs.messages import Request
    from beliefgate.envs.overcooked_v2.layouts import recipe_code

    agent = make_overforge_agent("overforge")
    agent.reset(LAYOUT, 0, 1000)
    env = V2Env(LAYOUT, 50, V2Options(**OPTIONS), seed=0)
    start = env.state
    pot = start.info.pots[0]
    ing0 = 1 << 2

    def asks(recipe, contents):
        state = type(start).model_validate({**start.model_dump(), "recipe": recipe_code(recipe),
                                            "items": [[pot[0], pot[1], contents, 0]] if contents else []})
        # the ego sees the recipe (a view of the whole kitchen) so its needs follow it
        state = type(state).model_validate({**state.model_dump(), "agent_view_size": None})
        agent.talk.outbox.clear()
        agent.talk.last_request_t = -100
        agent.t_now = 0
        agent.teammate_decisions = {1: SimpleNamespace(map_name="pickup_ingredient_0")}
        agent.talk._maybe_request(state, "pickup_ingredient_0")
        return [m for m in agent.talk.outbox if isinstance(m, Request)]

    assert asks([0, 0, 1], 0) == []              # two of ingredient 0 missing: both fetching is right
    (req,) = asks([0, 0, 1], 2 * ing0)            # only ingredient 1 is missing: a duplicate
    assert req.to == 1 and req.skill != "pickup_ingredient_0"


def test_overforge_remembers_agreed_roles_and_requests_and_trusts_by_them(tmp_path):
    """With a partner memory, OverForge keeps each episode's agreed split and how often the teammate
    did what it was asked; the next episode starts the teammate's reliability from that record."""
    from beliefgate.agents.memory import MemoryStore
    from beliefgate.envs.overcooked_v2.layouts import HIDDEN_RECIPE

    store = tmp_path / "mem.sqlite"
    opts = HIDDEN_RECIPE[LAYOUT]
    # seed 1008: seat 0 asks its teammate at step 102, which follows (requests are rare: see docs/overforge.md)
    first = run_episode(LAYOUT, "overforge", "overforge", seed=1008, horizon=150, env_options=opts, memory=store)
    talk = first.trajectory.steps[-1].info[0]["talk"]
    assert talk["agreements"] >= 1 and talk["requested"] >= 1, talk
    mem = MemoryStore(store)
    try:
        (entry,) = mem.entries(partner="overforge")
    finally:
        mem.close()
    assert entry["roles"] and set(entry["roles"].values()) <= set(DOMAIN.controller(LAYOUT).library.roles)
    asked = sum(r["asked"] for r in entry["requests"].values())
    followed = sum(r["followed"] for r in entry["requests"].values())
    assert asked == talk["requested"] and followed == talk["followed"] <= asked
    second = run_episode(LAYOUT, "overforge", "overforge", seed=1001, horizon=2, env_options=opts, memory=store)
    prior = (1 + followed) / (2 + asked)
    assert second.trajectory.steps[0].info[0]["talk"]["reliability"]["1"] == pytest.approx(prior, abs=1e-3)
