"""Offline planner-driven agents and the rule planner."""

import numpy as np
import pytest

from beliefgate.agents.registry import make_agent
from beliefgate.envs.overcooked.partners import UnknownPartnerError
from beliefgate.eval.episode import run_episode
from beliefgate.eval.metrics import belief_action_gap_rate, episode_metrics
from beliefgate.planners.errors import PlannerConfigError
from beliefgate.planners.rule import RulePlanner
from beliefgate.planners.types import BeliefBlock, PlannerInput
from beliefgate.skills import load_builtin

LIB = load_builtin()
COMP = {s: LIB.complementary_skills(s) for s in LIB.names}


def _input(posterior=None, needs=None, feasible=("pickup_onion", "pickup_dish")):
    belief = None
    if posterior is not None:
        m = max(posterior, key=posterior.get)
        belief = BeliefBlock(posterior, m, posterior[m])
    return PlannerInput(scene="", feasible=feasible, belief=belief, needs=needs or {},
                        roles={s.name: s.role for s in LIB.skills}, complementary=COMP)


def test_rule_planner_prefers_complementary_among_useful():
    needs = {"pickup_onion": 1.0, "pickup_dish": 1.0}
    # cover="map": a confident MAP covers the partner's own fetch, the other useful pickup wins
    covering = RulePlanner(cover="map")
    assert covering.choose(_input({"pickup_onion": 0.9, "pickup_dish": 0.1}, needs)).skill == "pickup_dish"
    assert covering.choose(_input({"pickup_onion": 0.1, "pickup_dish": 0.9}, needs)).skill == "pickup_onion"
    # the default (cover="none", w = 0): an ordinary call plans as without a belief, however confident
    for post in ({"pickup_onion": 0.9, "pickup_dish": 0.1}, {"pickup_onion": 0.1, "pickup_dish": 0.9}):
        assert RulePlanner().choose(_input(post, needs)).skill == "pickup_onion"
    # without a belief: need alone, ties to the feasible order
    assert RulePlanner().choose(_input(None, needs)).skill == "pickup_onion"
    # the old rule (posterior-weighted cover, w = 0.5 everywhere) follows the posterior even when unsure
    old = RulePlanner(complementary_weight=0.5, min_confidence=0.0, useful_first=False, cover="posterior")
    assert old.choose(_input({"pickup_onion": 0.6, "pickup_dish": 0.4}, needs)).skill == "pickup_dish"
    with pytest.raises(PlannerConfigError):
        RulePlanner().choose(_input(None, needs, feasible=()))


def test_rule_planner_uses_the_belief_only_when_confident_and_never_against_need():
    needs = {"pickup_onion": 1.0, "pickup_dish": 1.0}
    unsure = _input({"pickup_onion": 0.6, "pickup_dish": 0.4}, needs)
    assert RulePlanner(cover="map").choose(unsure).skill == "pickup_onion"  # below min_confidence: no belief
    assert RulePlanner(min_confidence=0.5, cover="map").choose(unsure).skill == "pickup_dish"  # confident: covered
    # after a gate interrupt complementarity orders only useful skills: an unneeded dish never wins
    import dataclasses

    gate = dataclasses.replace(_input({"pickup_onion": 0.9, "pickup_dish": 0.1},
                                      {"pickup_onion": 2.0, "pickup_dish": 0.0}), reason="gate")
    assert RulePlanner().choose(gate).skill == "pickup_onion"
    assert RulePlanner(useful_first=False).choose(gate).skill == "pickup_dish"
    for bad in ({"min_confidence": 1.5}, {"cover": "sometimes"}):
        with pytest.raises(PlannerConfigError, match=next(iter(bad))):
            RulePlanner(**bad)


def test_rule_planner_puts_complementarity_first_after_a_contradiction():
    import dataclasses

    # the partner is believed to fetch onions; fetching a dish is complementary but not needed yet
    needs = {"pickup_onion": 2.0, "pickup_dish": 0.2}
    inp = _input({"pickup_onion": 0.8, "pickup_dish": 0.2}, needs)
    assert RulePlanner().choose(inp).skill == "pickup_onion"  # an ordinary call: need first
    for reason in ("gate", "judge"):  # an interrupt that asserts a contradiction: complement first
        assert RulePlanner().choose(dataclasses.replace(inp, reason=reason)).skill == "pickup_dish"
    for reason in ("periodic", "partner_completed", "timed_out"):  # generic triggers do not
        assert RulePlanner().choose(dataclasses.replace(inp, reason=reason)).skill == "pickup_onion"
    assert RulePlanner(interrupt_weight=0.5).choose(dataclasses.replace(inp, reason="gate")).skill == "pickup_onion"
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(PlannerConfigError):
            RulePlanner(interrupt_weight=bad)


@pytest.mark.parametrize("ego", ["bayes-belief", "bayes-belief:no_replan", "bayes-belief:no_prompt",
                                 "bayes-belief:no_belief", "proagent", "periodic-10", "completion-held",
                                 "llm-judge", "hypothetical-minds"])
def test_every_offline_agent_plays_and_logs(ego):
    result = run_episode("cramped_room", ego, "switch-sourcer-to-plater", seed=1, horizon=150)
    assert result.summary["deliveries"] >= 1
    infos = [row.info[0] for row in result.trajectory.steps]
    assert all({"skill", "replanned", "reason", "belief", "replans", "llm_calls"} <= set(i) for i in infos)
    has_belief = ego not in ("bayes-belief:no_belief", "proagent")
    assert all((i["belief"] is not None) == has_belief for i in infos[1:])
    if has_belief:
        assert all(abs(sum(i["belief"]) - 1.0) < 1e-3 for i in infos[1:])
    assert result.summary["llm_calls"] == 0
    assert infos[0]["reason"] == "start" and infos[0]["skill"] is not None


def test_gate_replans_far_fewer_than_periodic():
    full = [run_episode("cramped_room", "bayes-belief", p, seed=s).summary["replans"]
            for s in range(2) for p in ("switch-sourcer-to-plater", "switch-plater-to-sourcer")]
    periodic = [run_episode("cramped_room", "periodic-10", p, seed=s).summary["replans"]
                for s in range(2) for p in ("switch-sourcer-to-plater", "switch-plater-to-sourcer")]
    assert 0 < np.mean(full) < np.mean(periodic) / 2
    no_replan = run_episode("cramped_room", "bayes-belief:no_replan", "switch-sourcer-to-plater", seed=0)
    assert no_replan.summary["replans"] == 0


def test_agent_names():
    assert make_agent("periodic-7").period == 7
    assert make_agent("bayes-belief").condition == "full"
    with pytest.raises(ValueError, match="condition"):
        make_agent("bayes-belief:sometimes")
    with pytest.raises(UnknownPartnerError):
        make_agent("wizard")


def test_gap_rate_definition_on_hand_checked_episode():
    traj = run_episode("coordination_ring", "bayes-belief", "plater", seed=2, horizon=120).trajectory
    m = episode_metrics(traj)
    assert 0.0 <= m["gap_rate"] <= 1.0 and 0.0 <= m["map_accuracy"] <= 1.0
    # all-complementary logs have no gap: relabel the ego's skills to the complement of the truth
    from beliefgate.eval.replay import replay

    ref = replay(traj, partner=1)
    for t, row in enumerate(traj.steps):
        if ref.truth[t] >= 0:
            row.skills[0] = LIB.complementary_skills(int(ref.truth[t]))[0]
    assert belief_action_gap_rate(traj, ref) == 0.0


def test_hypothetical_minds_rescorla_wagner():
    from beliefgate.agents.hypothetical_minds import Hypothesis, HypotheticalMindsAgent

    agent = HypotheticalMindsAgent()
    agent.reset("cramped_room", 0, 0)
    agent.store = [Hypothesis("onions", "pickup_onion", 0.0, 0), Hypothesis("dishes", "pickup_dish", 0.5, 0)]
    agent._score(["pickup_onion"])
    assert agent.store[0].score == pytest.approx(0.3) and agent.store[1].score == pytest.approx(0.5 + 0.3 * -1.5)
    for _ in range(5):
        agent._score(["pickup_onion"])
    assert agent.best.skill == "pickup_onion" and agent.best.score > 0.7
    result = run_episode("cramped_room", "hypothetical-minds", "onion-sourcer", seed=0, horizon=200)
    assert result.summary["deliveries"] >= 1


@pytest.mark.slow
def test_the_gate_pays_on_the_switching_population(tmp_path):
    """Issue 17, through the evaluation harness: coordination_ring, the 12 shipped BP switchers, seeds 0-4
    (180 episodes, ~2 min on 2 workers; the same episodes as docs/results_gap.md). The belief never lowers
    reward: the full agent (posterior + gate interrupts) against the same planner without a belief, paired
    95% interval lower bound >= -1 point; with the default planner the posterior as context alone changes
    nothing (no_replan plays no_belief's episodes exactly); and at least 30% of the gate's replans change
    the ego's skill."""
    from beliefgate.envs.overcooked.partners import shipped_partners
    from beliefgate.eval.executors import make_executor
    from beliefgate.eval.grid import parse_grid
    from beliefgate.eval.report import paired_bootstrap
    from beliefgate.eval.runner import load_results, run_grid

    partners = sorted(n for n in shipped_partners() if n.startswith("bp-"))
    assert len(partners) == 12
    spec = parse_grid({"name": "gate-pays", "agents": ["bayes-belief:full", "bayes-belief:no_replan",
                                                       "bayes-belief:no_belief"],
                       "layouts": ["coordination_ring"], "partners": partners, "seeds": {"start": 0, "count": 5},
                       "seats": [0], "horizon": 400})
    summary = run_grid(spec, tmp_path, executor=make_executor(workers=2))
    assert not summary.failed
    rows = load_results(tmp_path)
    by = {a: [r for r in rows if r["agent"] == f"bayes-belief:{a}"] for a in ("full", "no_replan", "no_belief")}
    diff = paired_bootstrap(by["full"], by["no_belief"], "reward")
    assert diff.pairs == 60 and diff.lo >= -1.0, diff
    key = lambda r: (r["partner"], r["seed"])  # noqa: E731
    assert sorted((key(r), r["reward"]) for r in by["no_replan"]) == sorted((key(r), r["reward"]) for r in by["no_belief"])
    full = by["full"]
    assert sum(r["effective_replans"] for r in full) >= 0.3 * sum(r["replans"] for r in full) > 0


# ----------------------------------------------------------------------- the agent table
def test_listing_agents_imports_no_agent_code_and_bc_registers_nothing():
    import subprocess
    import sys

    code = ("import sys; from beliefgate.agents import registry as r; names = r.agent_names(); "
            "assert 'bc' in names and 'policy-tree' in names; "
            "print(sorted(m for m in sys.modules if m.startswith('beliefgate.agents.') or m == 'beliefgate.eval.episode'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['beliefgate.agents.registry']"
    # importing bc no longer touches the registry (the cycle bc -> registry -> episode -> registry is gone)
    code = "import sys, beliefgate.envs.overcooked.bc; print('beliefgate.agents.registry' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_agent_names_and_options_are_checked_by_the_table():
    from beliefgate.agents.registry import AgentNameError, GateParamsNotUsedError, parse_name, uses_llm
    from beliefgate.beliefs.gate import GateParams
    from beliefgate.errors import InputError

    assert parse_name("periodic-7") == ("periodic", "7") and parse_name("bayes-belief") == ("bayes-belief", None)
    assert make_agent("periodic").period == 10
    for bad in ("periodic-0", "proagent:x", "periodic:3", "bayes-belief-3", "bayes-belief:"):
        with pytest.raises(InputError):
            make_agent(bad)
    with pytest.raises(AgentNameError, match="does not use an LLM"):
        make_agent("balanced", llm=object())
    with pytest.raises(GateParamsNotUsedError):
        make_agent("proagent", gate_params=GateParams())
    with pytest.raises(GateParamsNotUsedError):
        make_agent("bayes-belief:no_belief", gate_params=GateParams())
    assert make_agent("periodic-3", gate_params=GateParams(hazard=0.2)).params.hazard == 0.2
    assert uses_llm("llm-judge") and not uses_llm("bc") and not uses_llm("plater")


def test_a_table_row_is_one_line_with_a_lazily_imported_factory(monkeypatch):
    from beliefgate.agents import registry as R
    from beliefgate.errors import RuntimeFailure

    monkeypatch.setitem(R.AGENTS, "slow-periodic", R.AgentEntry(
        "slow-periodic", "beliefgate.agents.planning:periodic_agent", "every N steps", option="number", llm=True))
    assert make_agent("slow-periodic-40").period == 40 and "slow-periodic" in R.agent_names()
    monkeypatch.setitem(R.AGENTS, "ghost", R.AgentEntry("ghost", "beliefgate.no_such_module:make", "missing"))
    with pytest.raises(RuntimeFailure, match="not part of this installation"):
        make_agent("ghost")


# ----------------------------------------------------------------------- fallbacks, counted
class RoleScript:
    """A ChatModel double answering by role: a list of replies (or exceptions) per role, the last repeated."""

    def __new__(cls, **script):
        from beliefgate.planners.model import ChatModel, ModelResponse

        class _Model(ChatModel):
            def __init__(self):
                self.script = {role: list(items) for role, items in script.items()}
                self.calls = []

            def get_response(self, system_instructions, input, *, role="planner", output_schema=None):
                self.calls.append(role)
                items = self.script[role]
                item = items.pop(0) if len(items) > 1 else items[0]
                if isinstance(item, Exception):
                    raise item
                return ModelResponse(item)

        return _Model()


def test_judge_fallbacks_reach_the_log_and_the_summary():
    from beliefgate.planners.errors import LLMUnavailableError

    model = RoleScript(planner=["1"],  # the first feasible skill: always an allowed answer
                       judge=["maybe", LLMUnavailableError("server down")])
    result = run_episode("cramped_room", "llm-judge", "onion-sourcer", seed=0, horizon=60, llm=model)
    judged = model.calls.count("judge")
    assert judged >= 2
    counts = result.summary["fallback_counts"]
    assert counts["by_role"]["judge"] == judged == result.summary["fallbacks"] and counts["by_role"]["planner"] == 0
    assert counts["by_reason"]["unusable_reply"] == 1 and counts["by_reason"]["unavailable"] == judged - 1
    events = [e for row in result.trajectory.steps for e in row.info[0]["fallback_events"]]
    assert [e["reason"] for e in events if e["role"] == "judge"][:2] == ["unusable_reply", "unavailable"]
    assert result.trajectory.steps[-1].info[0]["fallbacks_by_role"]["judge"] == judged
    assert result.summary["llm_calls"] == model.calls.count("planner") + 1  # one judge answer ("maybe")
    metrics = episode_metrics(result.trajectory)
    assert metrics["fallbacks_judge"] == judged and metrics["fallback_unavailable"] == judged - 1


def test_hypothesis_fallbacks_are_counted_and_keep_the_store():
    model = RoleScript(planner=["1"], hypothesis=["no idea"])
    result = run_episode("cramped_room", "hypothetical-minds", "onion-sourcer", seed=0, horizon=20, llm=model)
    asked = model.calls.count("hypothesis")
    assert asked >= 1 and result.summary["fallback_counts"]["by_role"]["hypothesis"] == asked
    events = [e for row in result.trajectory.steps for e in row.info[0]["fallback_events"]]
    assert len(events) == asked and {e["role"] for e in events} == {"hypothesis"}
    assert all(e["reason"] == "unusable_reply" and "no usable answer" in e["detail"] for e in events)
    assert episode_metrics(result.trajectory)["fallbacks_hypothesis"] == asked


def test_planner_fallback_decision_carries_its_reason():
    from beliefgate.planners.errors import CircuitOpenError
    from beliefgate.planners.llm import LLMPlanner

    model = RoleScript(planner=[CircuitOpenError("open")])
    d = LLMPlanner(model).choose(_input(None, {"pickup_dish": 1.0}))
    assert d.source == "fallback" and d.fallback.reason == "breaker_open" and d.fallback.role == "planner"
    assert d.skill == "pickup_dish" and d.attempts == 0
