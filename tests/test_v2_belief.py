"""The recipe (goal) belief on OvercookedV2, on JaxMARL's real dynamics (issue 43).

The V2 domain's recipe evidence fed to the GoalFilter equals a by-hand forward computation (loops
over goals and skills, the equations of docs/goal.md) on a scripted partner's steps; the MAP recipe
is the true one after the partner's pickups; a bayes-belief episode on a hidden-recipe layout
logs the recipe belief and plans with it; the no-belief rival's rule reads the pot and the
teammates' hands; the rule planner acts on a confident MAP recipe only.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("jaxmarl")

from beliefgate.beliefs.goal import GoalEvidence, GoalFilter, GoalParams
from beliefgate.envs.domain import register_domain, unregister_domain
from beliefgate.envs.overcooked_v2.domain import DOMAIN, GOAL_CONCENTRATION
from beliefgate.envs.overcooked_v2.kitchen import (UnknownRecipeError, candidate_recipes, parse_recipe,
                                                  recipe_evidence, recipe_serves, skill_needs)

LAYOUT = "v2/demo_cook_simple"       # the partner (seat 0) sees the recipe, the ego (seat 1) does not
OPTIONS = {"agent_view_size": 2}
ING0, ING1 = 1 << 2, 1 << 4           # JaxMARL's codes of one ingredient 0 / 1 (held, or in a pot)


@pytest.fixture(scope="module", autouse=True)
def _registered():
    register_domain(DOMAIN)
    yield
    unregister_domain(DOMAIN.name)


def _with(state, **update):
    """A fresh state with fields replaced (``model_copy`` would keep the cached pot views)."""
    return type(state).model_validate({**state.model_dump(), **update})


def _holding(state, player: int, code: int):
    players = [p.model_dump() for p in state.players]
    players[player]["inventory"] = code
    return _with(state, players=players)


def _scripted(env, seed: int, steps: int):
    """The recipe-seeing scripted cook (seat 0) with an idle ego (seat 1) from ``env.reset(seed)``."""
    from beliefgate.envs.overcooked_v2.partners import make_scripted

    states = [env.reset(seed)]
    cook = make_scripted("v2-cook")
    cook.reset(LAYOUT, 0, seed)
    prev_events = ()
    for _ in range(steps):
        out = env.step([cook.act(states[-1], prev_events), 4])
        prev_events = DOMAIN.detect_events(states[-1], out.state)[0]
        states.append(out.state)
    return states


@pytest.fixture(scope="module")
def episodes():
    """Scripted episodes for seeds whose recipes are 0-0-0 and 1-1-1 (70 steps each)."""
    env = DOMAIN.make_env(LAYOUT, 400, seed=1000, **OPTIONS)
    out = {}
    for seed in range(1000, 1020):
        name = "-".join(map(str, env.reset(seed).recipe_ingredients))
        if name not in out:
            out[name] = (seed, _scripted(env, seed, 70))
        if len(out) == 2:
            break
    assert set(out) == {"0-0-0", "1-1-1"}
    return out


def _by_hand(evidence, names_g, K, h, eta):
    """The forward algorithm with explicit loops over (g', k') -> (g, k), from docs/goal.md."""
    G = len(names_g)
    rho = np.full(G, 1.0 / G)
    belief = None
    reset, change = True, 0.0
    log_z_total = 0.0
    for ev in evidence:
        step = ev.step
        f = np.asarray(step.feasible, float)
        w = np.exp(ev.log_weights)
        pi = w / w.sum(axis=1, keepdims=True)                       # pi(k | g) over all skills
        F = np.array([[pi[g, k] * f[k] / (pi[g] * f).sum() for k in range(K)] for g in range(G)])
        lik_k = np.array([math.exp(step.weight * math.log(sum(math.exp(step.logprobs[k, a])
                                                             for a in range(step.logprobs.shape[1])
                                                             if step.action_mask[a])))
                          if step.weight > 0 else 1.0 for k in range(K)])
        lik_g = np.ones(G) if ev.goal_loglik is None else np.exp(ev.goal_loglik)
        pred = np.zeros((G, K))
        if belief is None:
            for g in range(G):
                for k in range(K):
                    pred[g, k] = rho[g] * F[g, k]
        else:
            r = 1.0 - (1.0 - eta) * (1.0 - change)
            for gp in range(G):
                for kp in range(K):
                    for g in range(G):
                        for k in range(K):
                            if reset or f[kp] == 0:
                                stay = F[g, k]
                            else:
                                num = ((1 - h) * (k == kp) + h * pi[g, k]) * f[k]
                                den = sum(((1 - h) * (j == kp) + h * pi[g, j]) * f[j] for j in range(K))
                                stay = num / den
                            pred[g, k] += belief[gp, kp] * ((1 - r) * (g == gp) * stay + r * rho[g] * F[g, k])
        post = pred * lik_g[:, None] * lik_k[None, :]
        z = post.sum()
        log_z_total += math.log(z)
        belief = post / z
        reset = step.completed is not None and step.completed >= 0
        change = ev.goal_change
    return belief, log_z_total


def test_recipe_posterior_equals_a_by_hand_forward_computation(episodes):
    seed, states = episodes["1-1-1"]
    names = DOMAIN.controller(LAYOUT).library.names
    observer = DOMAIN.make_observer(layout=LAYOUT, partner=0)
    evidence = []
    for s0, s1 in zip(states[:12], states[1:13]):
        lw, change, direct = DOMAIN.goal_evidence(s0, s1, 0, 1, names)
        evidence.append(GoalEvidence(observer.evidence(s0, s1), lw, change, direct))
    assert any(ev.step.weight > 0 for ev in evidence)
    params = GoalParams(hazard=0.05, goal_hazard=0.002)
    filt = GoalFilter(len(names), num_goals=2, params=params)
    trace = filt.run(evidence)
    want, want_log_z = _by_hand(evidence, ["0-0-0", "1-1-1"], len(names), 0.05, 0.002)
    np.testing.assert_allclose(np.exp(trace.belief.log_joint), want, atol=1e-10)
    assert trace.log_marginal == pytest.approx(want_log_z, abs=1e-8)


def test_recipe_serves_and_evidence_by_hand(episodes):
    _, states = episodes["0-0-0"]
    s = states[0]
    names = DOMAIN.controller(LAYOUT).library.names
    recipes = [(0, 0, 0), (1, 1, 1)]
    # an empty pot: fetching / putting ingredient i serves exactly the recipe of i; plates serve both
    table = recipe_serves(s, 0, names, recipes)
    for k, n in enumerate(names):
        if n in ("pickup_ingredient_0", "put_ingredient_0_in_pot"):
            assert table[:, k].tolist() == [True, False]
        elif n in ("pickup_ingredient_1", "put_ingredient_1_in_pot"):
            assert table[:, k].tolist() == [False, True]
        elif "ingredient_" in n:
            assert not table[:, k].any()         # ingredient 2 serves no recipe
        else:
            assert table[:, k].all()
    pot = DOMAIN.layout_info(LAYOUT).pots[0]
    full = _with(s, items=((pot[0], pot[1], 3 * ING0, 0),))   # the pot is full: nothing to fetch
    assert not recipe_serves(full, 0, names, recipes)[:, names.index("pickup_ingredient_0")].any()
    lw, change, direct = recipe_evidence(states[0], states[1], 0, 1, names, GOAL_CONCENTRATION)
    assert lw[0, names.index("pickup_ingredient_0")] == pytest.approx(math.log1p(GOAL_CONCENTRATION))
    assert lw[1, names.index("pickup_ingredient_0")] == 0.0
    assert change == 0.0
    # the ego in seat 1 does not see the recipe at the start; the partner in seat 0 does
    assert states[0].sees_recipe(0) and not states[0].sees_recipe(1)
    assert direct is None
    _, _, seen = recipe_evidence(states[0], states[1], 1, 0, names, GOAL_CONCENTRATION)
    assert seen is not None and seen[0] == 0.0 and seen[1] < -5   # seat 0 sees 0-0-0


def test_map_recipe_is_the_true_one_after_the_partners_pickups(episodes):
    names = DOMAIN.controller(LAYOUT).library.names
    observer = DOMAIN.make_observer(layout=LAYOUT, partner=0)
    for truth, (seed, states) in episodes.items():
        filt = GoalFilter(len(names), num_goals=2)
        belief = filt.init()
        first = None
        maps = []
        for t, (s0, s1) in enumerate(zip(states[:-1], states[1:])):
            lw, change, direct = DOMAIN.goal_evidence(s0, s1, 0, 1, names)
            belief, info = filt.update(belief, GoalEvidence(observer.evidence(s0, s1), lw, change, direct))
            if first is None and any(e.startswith("pickup:ingredient_") for e in DOMAIN.detect_events(s0, s1)[0]):
                first = t
            maps.append((DOMAIN.goal_names(LAYOUT)[info.map_goal], info.confidence))
        assert first is not None, f"seed {seed}: the cook never picked an ingredient"
        after = maps[first:]
        assert all(m == truth for m, _ in after), (truth, after)
        assert after[-1][1] > 0.9


def test_bayes_belief_episode_logs_the_recipe_belief_and_plans_with_it(episodes):
    from beliefgate.eval.episode import run_episode

    seed, _ = episodes["1-1-1"]
    res = run_episode(LAYOUT, "bayes-belief:full", "v2-cook", seed=seed, horizon=60, seat=1, env_options=OPTIONS)
    rows = res.trajectory.steps
    assert not all(r.state.sees_recipe(1) for r in rows)      # the recipe is hidden from the ego
    infos = [r.info[1] for r in rows]
    assert infos[0]["recipe_map"] is None                      # nothing observed yet
    later = [i for i in infos[1:]]
    assert all(abs(sum(i["recipe_belief"]) - 1.0) < 1e-3 for i in later)
    assert all(i["recipe_map"] == ("1-1-1" if i["recipe_belief"][1] > 0.5 else "0-0-0") for i in later)
    assert later[-1]["recipe_map"] == "1-1-1" and later[-1]["recipe_confidence"] > 0.8
    # acting on it: once confident, the ego never fetches ingredient 0 for a 1-1-1 recipe
    confident = next(r.t for r in rows if (r.info[1]["recipe_confidence"] or 0) >= 0.8)
    fetched = [e for r in rows if r.t > confident for e in r.events[1] if e.startswith("pickup:ingredient_")]
    assert fetched and set(fetched) == {"pickup:ingredient_1"}
    # the no-belief rival keeps no recipe belief
    base = run_episode(LAYOUT, "bayes-belief:no_belief", "v2-cook", seed=seed, horizon=5, seat=1,
                       env_options=OPTIONS)
    assert all("recipe_map" not in r.info[1] for r in base.trajectory.steps)


def test_the_no_belief_rule_reads_the_pot_and_the_teammates_hands(episodes):
    _, states = episodes["0-0-0"]
    s = states[0]
    ctrl = DOMAIN.controller(LAYOUT)
    ego, partner = 1, 0
    assert not s.sees_recipe(ego)
    # empty pot, empty hands: every recipe is possible, both ingredients are needed
    assert candidate_recipes(s, ego) == [(0, 0, 0), (1, 1, 1)]
    # the partner holds ingredient 1: copy it (only 1-1-1 takes it), one fewer to fetch
    holding = _holding(s, partner, ING1)
    assert candidate_recipes(holding, ego) == [(1, 1, 1)]
    need = skill_needs(holding, ego, ctrl)
    assert need["pickup_ingredient_0"] == 0 and need["pickup_ingredient_1"] == 2
    # an ingredient 0 in the pot: copy the pot
    pot = DOMAIN.layout_info(LAYOUT).pots[0]
    potted = _with(s, items=((pot[0], pot[1], ING0, 0),))
    assert candidate_recipes(potted, ego) == [(0, 0, 0)]
    # a believed recipe is used only while the pot can still become it, and never over a seen one
    assert candidate_recipes(s, ego, (1, 1, 1)) == [(1, 1, 1)]
    assert candidate_recipes(potted, ego, (1, 1, 1)) == [(0, 0, 0)]
    assert candidate_recipes(s, partner, (1, 1, 1)) == [(0, 0, 0)]     # seat 0 sees 0-0-0
    assert DOMAIN.skill_needs(s, ego, ctrl, goal="1-1-1")["pickup_ingredient_0"] == 0
    assert parse_recipe("1-1-1", LAYOUT) == (1, 1, 1)
    with pytest.raises(UnknownRecipeError, match="0-1-1"):
        parse_recipe("0-1-1", LAYOUT)


def test_the_rule_planner_acts_on_a_confident_map_recipe_only():
    from beliefgate.planners.rule import RulePlanner
    from beliefgate.planners.types import GoalBlock, PlannerInput

    feasible = ("pickup_ingredient_0", "pickup_ingredient_1", "pickup_plate")
    needs = {"pickup_ingredient_0": 3.0, "pickup_ingredient_1": 3.0, "pickup_plate": 0.0}
    goal_needs = {"1-1-1": {"pickup_ingredient_0": 0.0, "pickup_ingredient_1": 3.0, "pickup_plate": 0.0}}
    planner = RulePlanner()
    plain = PlannerInput(scene="", feasible=feasible, needs=needs)
    assert planner.choose(plain).skill == "pickup_ingredient_0"        # ties go to the feasible order
    sure = GoalBlock({"0-0-0": 0.1, "1-1-1": 0.9}, "1-1-1", 0.9)
    unsure = GoalBlock({"0-0-0": 0.3, "1-1-1": 0.7}, "1-1-1", 0.7)
    assert planner.choose(PlannerInput(scene="", feasible=feasible, needs=needs, goal=sure,
                                       goal_needs=goal_needs)).skill == "pickup_ingredient_1"
    assert planner.choose(PlannerInput(scene="", feasible=feasible, needs=needs, goal=unsure,
                                       goal_needs=goal_needs)).skill == "pickup_ingredient_0"


def test_a_held_plate_counts_toward_the_recipe_only_while_a_soup_waits_for_it():
    """The rollouts' value (``recipe_progress``): a plate held over a pot that is still filling is no
    progress (``skill_needs`` asks for a plate only for a full, cooking or cooked pot); over a
    cooking pot it is, once per pot."""
    from beliefgate.envs.overcooked_v2.kitchen import recipe_progress
    from beliefgate.envs.overcooked_v2.layouts import PLATE, recipe_code

    s = DOMAIN.make_env(LAYOUT, 50, seed=0, **OPTIONS).reset(0)
    pot = s.info.pots[0]
    base = _with(s, recipe=recipe_code([0, 0, 0]))
    filling = _with(base, items=((pot[0], pot[1], ING0, 0),))
    assert recipe_progress(_holding(filling, 1, PLATE)) == recipe_progress(filling)
    cooking = _with(base, items=((pot[0], pot[1], 3 * ING0, 5),))
    one = _holding(cooking, 1, PLATE)
    assert recipe_progress(one) == pytest.approx(recipe_progress(cooking) + 1.0 / 20.0)
    both = _holding(one, 0, PLATE)   # two plates for one soup: the second is no progress
    assert recipe_progress(both) == pytest.approx(recipe_progress(one))


def test_a_dead_pot_is_filled_with_any_ingredient_not_left_to_block_the_kitchen():
    """A pot whose contents no candidate recipe fits (the recipe was redrawn under it) can only be
    cleared: every ingredient is needed until it is full and a held one fits it. Before, a player who
    saw the recipe found nothing needed and picked an ingredient up and set it down for 200 steps."""
    s = DOMAIN.make_env(LAYOUT, 50, seed=0, **OPTIONS).reset(0)
    pot = s.info.pots[0]
    from beliefgate.envs.overcooked_v2.layouts import recipe_code

    dead = _with(s, recipe=recipe_code([1, 1, 1]), items=((pot[0], pot[1], 2 * ING0, 0),))
    seer = 0
    assert dead.sees_recipe(seer) and candidate_recipes(dead, seer) == [(1, 1, 1)]
    ctrl = DOMAIN.controller(LAYOUT)
    need = skill_needs(dead, seer, ctrl)
    assert need["pickup_ingredient_0"] == 1 and need["pickup_ingredient_1"] == 1
    assert skill_needs(_holding(dead, 1, ING1), seer, ctrl)["pickup_ingredient_1"] == 0   # the teammate's fills it
    held = skill_needs(_holding(dead, seer, ING0), seer, ctrl)
    assert held.get("put_ingredient_0_in_pot", 0) == 1 and held.get("place_on_counter", 0) == 0
    live = _with(dead, items=((pot[0], pot[1], ING1, 0),))      # a pot the recipe fits: only its ingredient
    assert skill_needs(live, seer, ctrl)["pickup_ingredient_0"] == 0


def test_a_plate_waits_at_a_filling_pot_only_while_someone_can_fill_it():
    """Holding a plate beside a pot that is still filling is worth it only while another player could
    fill the pot. Before, on the split room (dev seed 1000), both players held plates at a pot with one
    ingredient the redrawn recipe did not fit and waited for it for 180 steps."""
    from beliefgate.envs.overcooked_v2.layouts import PLATE

    s = DOMAIN.make_env(LAYOUT, 50, seed=0, **OPTIONS).reset(0)
    pot = s.info.pots[0]
    filling = _with(s, items=((pot[0], pot[1], ING1, 0),))
    ctrl = DOMAIN.controller(LAYOUT)
    alone = skill_needs(_holding(filling, 0, PLATE), 0, ctrl)            # the teammate's hands are free
    assert alone.get("plate_soup", 0) == 1 and alone.get("place_on_counter", 0) == 0
    both = skill_needs(_holding(_holding(filling, 0, PLATE), 1, PLATE), 0, ctrl)   # nobody can fill it
    assert both.get("plate_soup", 0) == 0 and both.get("place_on_counter", 0) == 1
    cooking = _with(s, items=((pot[0], pot[1], 3 * ING1, 4),))          # a cooking soup is worth the wait
    assert skill_needs(_holding(_holding(cooking, 0, PLATE), 1, PLATE), 0, ctrl).get("plate_soup", 0) == 1


def test_the_recipe_in_making_is_a_held_dish_a_cooking_pot_or_the_likeliest_a_started_pot_fits():
    from beliefgate.envs.overcooked_v2.kitchen import goal_in_making
    from beliefgate.envs.overcooked_v2.layouts import COOKED, PLATE, recipe_code

    s = DOMAIN.make_env(LAYOUT, 50, seed=0, **OPTIONS).reset(0)
    pot = s.info.pots[0]
    even = {"0-0-0": 0.5, "1-1-1": 0.5}
    empty = _with(s, items=tuple(it for it in s.items if (it[0], it[1]) != pot))
    assert goal_in_making(empty, even) is None                      # nothing started: no opinion
    started = _with(empty, items=((pot[0], pot[1], ING1, 0),))
    assert goal_in_making(started, even) == "1-1-1"                 # the only recipe the pot can become
    assert goal_in_making(started, {"0-0-0": 0.6, "1-1-1": 0.0}) is None   # ruled out by the belief
    assert DOMAIN.goal_in_making(started, even) == "1-1-1"
    cooking = _with(empty, items=((pot[0], pot[1], 3 * ING0, 4),))
    assert goal_in_making(cooking, {"0-0-0": 0.1, "1-1-1": 0.9}) == "0-0-0"
    dish = _holding(started, 1, recipe_code([0, 0, 0]) | PLATE | COOKED)
    assert goal_in_making(dish, even) == "0-0-0"                   # a held dish first, then the pots


def test_the_v2_gap_judges_complementarity_by_the_recipe_the_role_table_cannot_see():
    """Each ingredient is its own role, so the table calls fetching another ingredient complementary
    to a teammate's fetch and the same ingredient a duplicate; under the true recipe 1-1-1 with one
    ingredient 1 potted, fetching ingredient 0 serves nothing and fetching ingredient 1 beside a
    teammate who fetches it too is needed (two are missing), the third time not."""
    from beliefgate.envs.overcooked_v2.layouts import recipe_code

    s = DOMAIN.make_env(LAYOUT, 50, seed=0, **OPTIONS).reset(0)
    ctl = DOMAIN.controller(LAYOUT)
    pot = s.info.pots[0]
    base = _with(s, recipe=recipe_code([1, 1, 1]), items=((pot[0], pot[1], ING1, 0),))
    lib = ctl.library
    assert lib.is_complementary("pickup_ingredient_0", "pickup_ingredient_1")
    assert not lib.is_complementary("pickup_ingredient_1", "pickup_ingredient_1")
    assert DOMAIN.complements(base, 1, "pickup_ingredient_0", "pickup_ingredient_1", ctl) is False
    assert DOMAIN.complements(base, 1, "pickup_ingredient_1", "pickup_ingredient_1", ctl) is True
    two = _with(base, items=((pot[0], pot[1], 2 * ING1, 0),))   # one missing: the teammate brings it
    assert DOMAIN.complements(two, 1, "pickup_ingredient_1", "pickup_ingredient_1", ctl) is False
    assert DOMAIN.complements(two, 1, "pickup_ingredient_1", "pickup_plate", ctl) is True
    from beliefgate.envs.overcooked.domain import DOMAIN as CLASSIC

    classic = CLASSIC.controller("cramped_room")   # elsewhere the role table decides
    for skill, partner in (("pickup_onion", "pickup_dish"), ("pickup_onion", "pickup_onion")):
        assert CLASSIC.complements(None, 0, skill, partner, classic) is classic.library.is_complementary(skill, partner)


def test_the_interrupt_filter_judges_complementarity_under_the_recipe_the_agent_believes():
    """The ``still_complementary`` veto on V2: fetching ingredient 0 beside a teammate who fetches
    ingredient 1 serves nothing under a believed 1-1-1 and is needed under a believed 0-0-0 (the role
    table calls it complementary whatever the recipe); below the confidence floor the agent judges
    by the recipe the no-belief rule would cook, never by the hidden one."""
    from types import SimpleNamespace

    from beliefgate.agents.planning import BayesBeliefAgent
    from beliefgate.envs.overcooked_v2.layouts import recipe_code

    s = DOMAIN.make_env(LAYOUT, 50, seed=0, **OPTIONS).reset(0)
    pot = s.info.pots[0]
    empty = _with(s, recipe=recipe_code([0, 0, 0]), items=tuple(it for it in s.items if (it[0], it[1]) != pot))
    agent = BayesBeliefAgent("full")
    agent.reset(LAYOUT, 1, 0)
    names = DOMAIN.goal_names(LAYOUT)
    for believed, expected in (("1-1-1", False), ("0-0-0", True)):
        agent.goal_block = lambda b=believed: SimpleNamespace(
            posterior={n: (0.95 if n == b else 0.05) for n in names}, map_goal=b, confidence=0.95)
        judge = agent._complements(empty)
        assert judge("pickup_ingredient_0", "pickup_ingredient_1") is expected, believed
        assert judge("pickup_ingredient_1", "pickup_ingredient_1") is (not expected)   # 1-1-1: two fetchers help
    agent.goal_block = lambda: SimpleNamespace(posterior={n: 0.5 for n in names}, map_goal="1-1-1", confidence=0.5)
    unsure = agent._complements(empty)
    # unsure: the observable rule's recipe (the first the empty pot allows, 0-0-0), not the MAP
    assert DOMAIN.observable_goal(empty, 1) == "0-0-0" and unsure("pickup_ingredient_0", "pickup_ingredient_1")


def test_an_interrupt_has_an_alternative_under_the_recipe_the_agent_acts_on():
    """The ``no_alternative`` veto judges the kitchen's needs as the planner does: holding ingredient
    0 beside an empty pot, a believed 0-0-0 leaves only potting it (no other skill is needed: the
    veto stands), a believed 1-1-1 makes it useless there and putting it down the thing to do (an
    alternative: the interrupt goes on); unsure, the agent judges by the no-belief rule's recipe."""
    from types import SimpleNamespace

    from beliefgate.agents.planning import BayesBeliefAgent
    from beliefgate.envs.overcooked_v2.layouts import ingredient_code, recipe_code

    s = DOMAIN.make_env(LAYOUT, 50, seed=0, **OPTIONS).reset(0)
    pot = s.info.pots[0]
    empty = _with(s, recipe=recipe_code([0, 0, 0]), items=tuple(it for it in s.items if (it[0], it[1]) != pot))
    held = _holding(empty, 1, ingredient_code(0))
    agent = BayesBeliefAgent("full")
    agent.reset(LAYOUT, 1, 0)
    agent.active = agent.library.index("put_ingredient_0_in_pot")
    names = DOMAIN.goal_names(LAYOUT)

    def believe(goal, confidence):
        agent.goal_block = lambda: SimpleNamespace(posterior={n: (confidence if n == goal else 0.0) for n in names},
                                                   map_goal=goal, confidence=confidence)

    believe("0-0-0", 0.95)
    assert agent.acted_goal(held) == "0-0-0" and not agent._has_alternative(held)
    believe("1-1-1", 0.95)
    assert agent.acted_goal(held) == "1-1-1" and agent._has_alternative(held)
    believe("1-1-1", 0.5)   # below the planner's floor: the recipe the no-belief rule cooks (the pot allows 0-0-0 first)
    assert agent.acted_goal(held) == DOMAIN.observable_goal(held, 1) == "0-0-0" and not agent._has_alternative(held)
