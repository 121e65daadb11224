"""Agents as plug-ins (entry-point group ``beliefgate.agents`` and ``register_agent``) and the
PlanningAgent template method (an agent is its ``choose``; the base class keeps the books)."""

import json
from importlib.metadata import EntryPoint

import pytest

from beliefgate.agents import registry as R
from beliefgate.agents.planning import Choice, PlanningAgent
from beliefgate.errors import InputError
from beliefgate.eval.episode import run_episode


class FirstFeasible(PlanningAgent):
    """A user's agent: always the first feasible skill of the library; replans every 7 steps."""

    def __init__(self, params=None):
        super().__init__("first-feasible", None, params)

    def reset(self, layout, player, seed):
        super().reset(layout, player, seed)
        self.chosen = 0

    def trigger(self, state, decision, partner_events):
        return "every7" if state.timestep and state.timestep % 7 == 0 else None

    def choose(self, state, reason):
        inp = self.planner_input(state, reason)
        if inp is None:
            return None
        self.chosen += 1
        return Choice(inp.feasible[0], "first", attempts=0)

    def step_info(self):
        return {"chosen": self.chosen}


def make_first_feasible(option, *, gate_params=None):
    return FirstFeasible(params=gate_params)


ENTRY = R.AgentEntry("first-feasible", make_first_feasible, "the first feasible skill", gate=True)
#: what an installed package would name in its entry point (a "module:function" factory)
EP_ENTRY = R.AgentEntry("ep-first", f"{__name__}:make_first_feasible", "installed: the first feasible skill",
                        gate=True)
NOT_AN_ENTRY = make_first_feasible
COLLIDING = R.AgentEntry("periodic", f"{__name__}:make_first_feasible", "takes a built-in's name")
BAD_OPTION = R.AgentEntry("ep-bad-option", f"{__name__}:make_first_feasible", "x", option="sometimes")
NOT_AN_AGENT = R.AgentEntry("ep-not-agent", f"{__name__}:not_an_agent", "builds a string")


def not_an_agent(option):
    return "hello"


@pytest.fixture
def registered():
    R.register_agent(ENTRY)
    yield ENTRY
    R.unregister_agent(ENTRY.prefix)


def _installed(monkeypatch, **targets):
    """Pretend these entry points are installed in ``beliefgate.agents`` (name -> "module:object")."""
    points = {name.replace("_", "-"): EntryPoint(name.replace("_", "-"), value, "beliefgate.agents")
              for name, value in targets.items()}
    monkeypatch.setattr(R, "_entry_points", lambda: points)


def test_an_agent_registered_in_process_plays_an_episode_through_the_template_method(registered):
    """Its choose() picks every skill; the base class counts the plans and interrupts, notifies the
    gate, starts the skill and logs plan_source and the agent's own info key."""
    assert "first-feasible" in R.agent_names()
    assert any(r["name"] == "first-feasible" and r["gate"] for r in R.agent_table())
    result = run_episode("cramped_room", "first-feasible", "balanced", seed=3, horizon=40)
    steps = [row.info[0] for row in result.trajectory.steps]
    last = steps[-1]
    assert last["plans"] == last["chosen"] > 0
    assert {s["plan_source"] for s in steps if s["replanned"] and s["skill"]} == {"first"}
    assert last["replans"] == sum(s["interrupt"] for s in steps) >= 1  # counted by the base
    assert {s["reason"] for s in steps if s["interrupt"]} == {"every7"}
    assert all(s["belief"] is not None for s in steps[1:])  # the base ran the gate
    assert result.summary["replans"] == last["replans"]


def test_an_in_process_agent_is_usable_in_a_grid(registered, tmp_path):
    from beliefgate.eval.grid import parse_grid
    from beliefgate.eval.runner import load_results, run_grid

    spec = parse_grid({"name": "plug", "agents": ["first-feasible"], "layouts": ["cramped_room"],
                       "partners": ["balanced"], "seeds": [0], "seats": [0], "horizon": 20})
    summary = run_grid(spec, tmp_path)
    assert not summary.failed and [r["agent"] for r in load_results(tmp_path)] == ["first-feasible"]


def test_register_agent_refuses_what_it_cannot_use():
    for bad, needle in ((R.AgentEntry("bayes-belief", make_first_feasible, "x"), "collides with the built-in"),
                        (R.AgentEntry("plater", make_first_feasible, "x"), "collides with the built-in"),
                        (R.AgentEntry("mine-3", make_first_feasible, "x"), "-N"),
                        (R.AgentEntry("mine", "no colon", "x"), "module:function"),
                        (make_first_feasible, "not an AgentEntry")):
        with pytest.raises(R.AgentPluginError, match=needle):
            R.register_agent(bad)
    assert "mine" not in R.agent_names()


def test_an_installed_plug_in_is_found_by_name_through_its_entry_point(monkeypatch):
    """The entry-point path (the lookup monkeypatched, nothing reinstalled): the CLI's episode, the
    agent table and run_episode all know the installed agent by its entry point's name."""
    from typer.testing import CliRunner

    from beliefgate.cli import app

    _installed(monkeypatch, ep_first=f"{__name__}:EP_ENTRY")
    assert "ep-first" in R.agent_names() and R.parse_name("ep-first") == ("ep-first", None)
    assert isinstance(R.make_agent("ep-first"), FirstFeasible) and not R.uses_llm("ep-first")
    assert any(r["name"] == "ep-first" for r in R.agent_table())
    res = CliRunner().invoke(app, ["episode", "--layout", "cramped_room", "--ego", "ep-first", "--horizon", "15",
                                   "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["steps"] == 15
    with pytest.raises(R.AgentNameError, match="takes no option"):
        R.make_agent("ep-first:x")


@pytest.mark.parametrize("name,target,needle", [
    ("ep-callable", "NOT_AN_ENTRY", "is a function, not an AgentEntry"),
    ("ep-other-name", "EP_ENTRY", "names the prefix 'ep-first'"),
    ("ep-bad-option", "BAD_OPTION", "option 'sometimes'"),
    ("ep-missing", "NO_SUCH_OBJECT", "cannot be loaded"),
])
def test_an_unusable_plug_in_is_refused_with_one_line_naming_it(monkeypatch, name, target, needle):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    _installed(monkeypatch, **{name.replace("-", "_"): f"{__name__}:{target}"})
    with pytest.raises(R.AgentPluginError, match=needle) as err:
        R.make_agent(name)
    assert repr(name) in str(err.value) and "\n" not in str(err.value) and isinstance(err.value, InputError)
    res = CliRunner().invoke(app, ["episode", "--layout", "cramped_room", "--ego", name, "--horizon", "5"])
    assert res.exit_code == 2 and needle in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_a_plug_in_taking_a_built_in_name_is_refused_and_the_built_in_stays(monkeypatch):
    _installed(monkeypatch, periodic=f"{__name__}:COLLIDING", ep_not_agent=f"{__name__}:NOT_AN_AGENT")
    assert R.make_agent("periodic-5").period == 5  # the table's row, never the plug-in
    with pytest.raises(R.AgentPluginError, match="'periodic' collides with the built-in"):
        R.agent_table()
    with pytest.raises(R.AgentPluginError, match="'ep-not-agent': its factory returned a str"):
        R.make_agent("ep-not-agent")
