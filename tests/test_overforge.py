"""OverForge PCM agent: logged decisions recompute with the kappa API, variants, the -belief partner."""

import os

import numpy as np
import pytest

os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

from beliefgate.agents.overforge import OverForgeOptionError, make_overforge_agent, parse_option
from beliefgate.agents.overforge.rollout import BranchRollout
from beliefgate.envs.overcooked.adapter import OvercookedAdapter
from beliefgate.errors import InputError
from beliefgate.eval.episode import run_episode
from beliefgate.eval.pcm import PCMRecordError, check_record, decision_records, pcm_metrics, recompute_kappa
from beliefgate.planners.model import ChatModel, ModelResponse

LAYOUTS = ["cramped_room", "asymmetric_advantages", "coordination_ring", "forced_coordination", "counter_circuit"]
HORIZON = 30


@pytest.mark.parametrize("i,layout", list(enumerate(LAYOUTS)))
def test_short_episode_decisions_recompute(i, layout):
    result = run_episode(layout, "overforge", "balanced", seed=1000 + i, horizon=HORIZON, seat=i % 2)
    records = decision_records(result.trajectory)
    assert records, "the agent made no decision"
    assert any(r["depth"] >= 1 for r in records), "no decision used a rollout"
    for rec in records:
        assert check_record(rec) is None
        assert rec["best"] in rec["branches"]
        if rec["committed"] or rec["skill_source"] == "best":
            assert rec["skill"] == rec["best"].split("/", 1)[1] and rec["skill_source"] == "best"
        assert rec["committed"] == (rec["kappa"] >= rec["kappa_params"]["theta"])
        assert rec["depth"] <= rec["kappa_params"]["max_rounds"]
    m = pcm_metrics(result.trajectory)
    assert 0.0 < m["kappa_mean"] <= 1.0 and m["decisions"] == len(records)


def test_check_record_notices_a_changed_log():
    result = run_episode("cramped_room", "overforge", "balanced", seed=1010, horizon=20)
    rec = next(r for r in decision_records(result.trajectory) if r["depth"] >= 1)
    rec = dict(rec, evidence=[e for e in rec["evidence"] if "y" not in e] or rec["evidence"][:-1])
    assert check_record(rec) is not None or abs(recompute_kappa(rec).kappa - rec["kappa"]) <= 1e-9
    renamed = dict(rec, evidence=[{"left": "no-such-branch", "right": rec["branches"][0], "y": 1}] + rec["evidence"])
    assert "does not replay" in check_record(renamed)  # a changed log is reported, not raised
    bad = dict(rec, evidence=[{"oops": 1}])
    with pytest.raises(PCMRecordError, match="oops"):
        recompute_kappa(bad)
    with pytest.raises(PCMRecordError, match="no 'kappa_params'"):
        check_record({k: v for k, v in rec.items() if k != "kappa_params"})


def test_the_decision_record_is_typed_and_logs_kappas_own_evidence(tmp_path):
    """Every logged ``pcm`` entry parses into a PCMDecision whose branches are (strategy, skill)
    pairs and whose evidence is kappa's own log (``Kappa.log``): it replays through
    ``Kappa.from_log`` to the logged kappa, and writing the parsed record gives the entry back,
    through a trajectory log file too."""
    from beliefgate.agents.overforge.record import Branch, PCMDecision
    from beliefgate.beliefs.kappa import Kappa, evidence_from_record
    from beliefgate.envs.trajlog import read_log

    log = tmp_path / "of.jsonl"
    run_episode("coordination_ring", "overforge", "plater", seed=1004, horizon=40, log_path=log)
    logged = decision_records(read_log(log))
    assert logged and any(r["depth"] for r in logged)
    for entry in logged:
        rec = PCMDecision.from_log(entry)
        assert rec.to_log() == entry
        assert all(isinstance(b, Branch) and b.name == f"{b.strategy}/{b.skill}" for b in rec.branches)
        assert rec.best in rec.branches and set(rec.nucleus) <= set(rec.branches)
        if rec.skill_source == "best":
            assert rec.skill == rec.best.skill
        kinds = [type(evidence_from_record(e)).__name__ for e in entry["evidence"]]
        assert kinds == sorted(kinds, key=lambda k: k != "Judgment")  # judgments first, then rounds
        assert kinds.count("RolloutRound") == rec.depth
        kappa = Kappa.from_log(rec.names, rec.kappa_params, entry["evidence"])
        assert abs(kappa.kappa - rec.kappa) <= 1e-12 and kappa.best == rec.best.name
        assert list(kappa.log) == entry["evidence"]


def test_a_record_logged_in_the_old_evidence_format_still_reads():
    """Logs written before the evidence went through the kappa API hold ``{"judge": [l, r, y]}`` and
    ``{"round": r, "scores": {...}}``: they parse to the same evidence and still check."""
    result = run_episode("cramped_room", "overforge", "balanced", seed=1010, horizon=20)
    rec = next(r for r in decision_records(result.trajectory) if r["depth"] >= 1)
    old = []
    for e in rec["evidence"]:
        if "y" in e:
            old.append({"judge": [e["left"], e["right"], e["y"]]})
        else:
            old.append({"round": e["round"][0]["depth"], "scores": {r["branch"]: r["score"] for r in e["round"]}})
    legacy = dict(rec, evidence=old)
    assert check_record(legacy) is None
    assert recompute_kappa(legacy).log == recompute_kappa(rec).log


@pytest.mark.parametrize("name,field,value", [
    ("overforge", "rollouts", True), ("overforge:-rollouts", "rollouts", False),
    ("overforge:-hierarchy", "hierarchy", False), ("overforge:-belief", "belief", False),
    ("overforge:pinned=loader", "pinned", "loader"), ("-belief,k=3", "k", 3), ("theta=0.8", "theta", 0.8),
    ("overforge:hold=1", "hold", True), ("overforge:uncommitted=rule", "uncommitted", "rule"),
    ("overforge:uncommitted=best", "uncommitted", "best"), ("overforge:uncommitted=auto", "uncommitted", "auto"), ("overforge:pairs=all", "pairs", "all"), ("overforge:score=rate", "score", "rate"), ("overforge:score=gain", "score", "gain"),
    ("overforge:sigma_r=0.3", "sigma_r", 0.3), ("overforge:tau=0.2", "tau", 0.2),
])
def test_variants_parse(name, field, value):
    agent = make_overforge_agent(name)
    assert getattr(agent.config, field) == value
    if field in ("tau", "sigma_r"):
        assert getattr(agent.kappa_params, field) == value
    assert agent.name.startswith("overforge")


@pytest.mark.parametrize("name,named", [
    ("overforge:-rollout", "-rollout"), ("overforge:k=0", "k"), ("overforge:pinned=chef", "chef"),
    ("overforge:theta=high", "high"), ("overforge:llm", "llm"), ("overforge:-belief,-belief", "belief"),
    ("overforge:-hierarchy,pinned=loader", "pinned"), ("overforge:interrupts=2", "interrupts"),
    ("overforge:hold=yes", "hold"), ("overforge:uncommitted=random", "random"), ("overforge:pairs=some", "some"), ("overforge:score=max", "max"),
    ("overforge:sigma_r=0", "sigma_r"), ("overforge:tau=x", "x"),
])
def test_bad_options_name_the_option(name, named):
    with pytest.raises(InputError) as err:
        make_overforge_agent(name)
    assert isinstance(err.value, OverForgeOptionError) and named in str(err.value)


@pytest.mark.parametrize("option", ["hold=1", "uncommitted=rule"])
def test_uncommitted_decisions_play_what_the_option_says(option):
    """``hold=1``: an uncommitted interrupted decision keeps the running skill; ``uncommitted=rule``:
    an uncommitted decision plays the rule planner's choice (which may or may not be b*)."""
    result = run_episode("coordination_ring", f"overforge:{option}", "switch-sourcer-to-plater", seed=1001,
                         horizon=120)
    traj = result.trajectory
    seen = set()
    previous = None
    for step in traj.steps:
        info = step.info[0]
        rec = info.get("pcm")
        if rec is not None:
            assert check_record(rec) is None
            if rec["committed"] or len(rec["branches"]) == 1:
                assert rec["skill_source"] == "best"
            seen.add(rec["skill_source"])
            if rec["skill_source"] == "hold":
                assert rec["reason"] == "gate" and rec["skill"] == previous
        previous = info.get("skill")
    assert seen - {"best"}, f"{option}: no uncommitted decision used the option in 120 steps"


@pytest.mark.parametrize("layout, same_as", [("coordination_ring", "overforge:uncommitted=rule"),
                                             ("forced_coordination", "overforge:uncommitted=rule"),
                                             ("asymmetric_advantages", "overforge:uncommitted=best")])
def test_default_uncommitted_auto_plays_best_only_in_separate_kitchens(layout, same_as):
    """The default ``uncommitted=auto`` resolves by the layout's geometry: the episode is exactly
    the paper's ``uncommitted=best`` one where the players share neither floor nor a counter
    (asymmetric_advantages), the ``uncommitted=rule`` one elsewhere (so runs of those options
    on those layouts are runs of the default)."""
    from beliefgate.envs.overcooked.layouts import layout_info

    assert make_overforge_agent("overforge").config.uncommitted == "auto"
    assert layout_info(layout).separate_kitchens == same_as.endswith("best")
    assert [n for n in ("cramped_room", "asymmetric_advantages", "coordination_ring", "forced_coordination",
                        "counter_circuit") if layout_info(n).separate_kitchens] == ["asymmetric_advantages"]
    auto = run_episode(layout, "overforge", "plater", seed=1002, horizon=120).trajectory
    other = run_episode(layout, same_as, "plater", seed=1002, horizon=120).trajectory
    assert [s.actions for s in auto.steps] == [s.actions for s in other.steps]
    sources = {s.info[0]["pcm"]["skill_source"] for s in auto.steps if s.info[0].get("pcm")}
    if same_as.endswith("rule"):
        assert "rule" in sources and sources <= {"best", "rule"}
    else:
        assert sources == {"best"}


def test_hierarchy_ablation_has_one_strategy_and_single_branch_kappa_one():
    agent = make_overforge_agent("overforge:-hierarchy")
    env = OvercookedAdapter("cramped_room", horizon=50)
    state = env.reset()
    agent.reset("cramped_room", 0, 3)
    agent.act(state)
    rec = agent.info()["pcm"]
    assert rec["strategies"] == ["flat"] and all(b.startswith("flat/") for b in rec["branches"])
    assert parse_option("-hierarchy").hierarchy is False
    if len(rec["branches"]) == 1:
        assert rec["kappa"] == 1.0 and rec["depth"] == 0


def _partner_draws(mode, predictive, n=60, name="overforge"):
    agent = make_overforge_agent(name)
    env = OvercookedAdapter("cramped_room", horizon=50)
    state = env.reset()
    agent.reset("cramped_room", 0, 0)
    names = agent.library.names
    draws = []
    for i in range(n):
        roll = BranchRollout(agent.model, state, 0, names.index("pickup_onion"), lambda s, partner=None: None, mode,
                             agent.gate.state, predictive, np.random.default_rng(i), mix=agent.config.mix)
        roll._draw_partner(roll.partner)
        draws.append(names[roll.partner_active])
    return draws


def test_minus_belief_partner_is_uniform_and_belief_partner_follows_the_posterior():
    from beliefgate.skills import load_builtin

    names = load_builtin("overcooked")
    peaked = np.zeros(names.num_skills)
    peaked[names.index("pickup_dish")] = 1.0
    belief = _partner_draws("belief", peaked)
    uniform = _partner_draws("uniform", peaked)
    assert set(belief) == {"pickup_dish"}
    assert set(uniform) == {"pickup_onion", "pickup_dish"}  # the two skills feasible with empty hands
    assert 15 <= uniform.count("pickup_dish") <= 45
    agent = make_overforge_agent("overforge:-belief")
    agent.reset("cramped_room", 0, 5)
    env = OvercookedAdapter("cramped_room", horizon=50)
    state = env.reset()
    for _ in range(40):
        agent.act(state)
        rec = agent.info()["pcm"]
        if rec is not None and rec["depth"]:
            assert rec["rollout_partner"] == "uniform"
            break
        state = env.step([agent.act(state), 4]).state
    # mix=0.5: half the draws are uniform over the two feasible skills, so ~1/4 are the other one
    mixed = _partner_draws("belief", peaked, n=200, name="overforge:mix=0.5")
    assert set(mixed) == {"pickup_onion", "pickup_dish"}
    assert 25 <= mixed.count("pickup_onion") <= 75
    assert set(_partner_draws("belief", peaked, name="overforge:mix=0")) == {"pickup_dish"}
    full = make_overforge_agent("overforge")
    full.reset("cramped_room", 0, 5)
    full.act(OvercookedAdapter("cramped_room", horizon=50).reset())
    assert full.info()["pcm"]["rollout_partner"] in ("belief", None)


class _Garbage(ChatModel):
    """A scripted double that never answers usably (unit test of the fallback path)."""

    def __init__(self):
        self.calls = []

    def get_response(self, system_instructions, input, *, role="planner", output_schema=None):
        self.calls.append(role)
        return ModelResponse("I cannot decide")


def test_llm_roles_fall_back_counted():
    client = _Garbage()
    agent = make_overforge_agent("overforge:llm", llm=client)
    env = OvercookedAdapter("cramped_room", horizon=50)
    agent.reset("cramped_room", 0, 1)
    agent.act(env.reset())
    info = agent.info()
    assert "strategy" in client.calls
    assert info["fallbacks"] == len(client.calls) > 0
    assert info["llm_calls"] == len(client.calls)
    assert info["fallbacks_by_role"].get("strategy", 0) >= 1
    assert info["pcm"]["proposer"] == "offline"


@pytest.mark.slow  # a benchmark script's smoke run: `make test-slow` / `make bench`, not the default suite
def test_bench_overforge_quick_runs_every_arm():
    """`make bench`'s OverForge script runs (100-step episodes) and reports each arm's decisions."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_overforge.py"
    out = subprocess.run([sys.executable, str(script), "--quick", "--json"], capture_output=True, text=True,
                         timeout=300, check=True)
    rows = {r["agent"]: r for r in json.loads(out.stdout)["rows"]}
    assert set(rows) == {"bayes-belief:full", "overforge:-rollouts", "overforge:-belief", "overforge"}
    assert rows["overforge"]["decisions"] > 0 and rows["overforge"]["decision_p50_ms"] is not None
    assert all(r["horizon"] == 100 for r in rows.values())


def test_judge_pairs_neighbours_or_all():
    from beliefgate.agents.overforge.record import Branch

    branches, values = [Branch("g", s) for s in "abcd"], [0.5, 0.9, 0.5, 0.1]
    neighbours = make_overforge_agent("overforge")._judgments(branches, values)
    every = make_overforge_agent("overforge:pairs=all")._judgments(branches, values)
    # order b, a=c, d: neighbouring value levels, every branch of a level over every branch of the next
    # (b>a, b>c, a>d, c>d); all pairs: every unequal pair (kappa's branches are named by the branches'
    # "strategy/skill" text). Before, neighbours in the order gave b>a, (a=c: nothing), c>d: the tie broke
    # the chain and c, below b, had b's record (one win, no loss) -- in the split room that made kappa's
    # best a wrong pickup for the rest of an episode (docs/results_social.md)
    assert [(j.left, j.right) for j in neighbours] == [("g/b", "g/a"), ("g/b", "g/c"), ("g/a", "g/d"),
                                                       ("g/c", "g/d")]
    assert {(j.left, j.right) for j in every} == {("g/b", "g/a"), ("g/b", "g/c"), ("g/b", "g/d"), ("g/a", "g/d"),
                                                  ("g/c", "g/d")}
    assert all(j.y == 1 for j in neighbours + every)


def test_rate_scores_are_the_gains_per_depth_unit():
    """``score=rate`` plays the same first decision's rollouts as ``score=gain`` (same seed, same
    branches) and logs round r's score as the gain divided by r."""
    recs = {}
    for score in ("gain", "rate"):
        result = run_episode("cramped_room", f"overforge:score={score}", "balanced", seed=1003, horizon=2)
        recs[score] = decision_records(result.trajectory)[0]
        assert check_record(recs[score]) is None
    gain, rate = recs["gain"], recs["rate"]
    assert gain["branches"] == rate["branches"] and len(rate["rollouts"]) >= 1
    first = gain["rollouts"][0]
    assert rate["rollouts"][0] == first  # round 1: gain / 1
    for r, scores in enumerate(rate["rollouts"][1:], start=2):
        if gain["rollouts"][r - 1].keys() == scores.keys():  # same nucleus extended: same gains
            assert all(abs(scores[n] * r - gain["rollouts"][r - 1][n]) < 1e-5 for n in scores)


def test_overforge_run_and_report_end_to_end(tmp_path):
    """`beliefgate overforge run` plays a small grid into a run directory and `report` writes the
    pooled, by-partner and Table 5/6 tables and the Figure-16 PNGs from it (real episodes)."""
    from typer.testing import CliRunner

    from beliefgate.cli import app

    grid = tmp_path / "grid.yaml"
    grid.write_text("name: tiny\nagents: [overforge, 'bayes-belief:full']\nlayouts: [cramped_room]\n"
                    "partners: [onion-sourcer, plater]\nseeds: {start: 1000, count: 2}\nseats: [0]\n"
                    "horizon: 60\n")
    out, md, img = tmp_path / "run", tmp_path / "results.md", tmp_path / "img"
    runner = CliRunner()
    res = runner.invoke(app, ["overforge", "run", str(grid), "--out", str(out), "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert "8 played, 0 already done, 0 failed" in res.output
    res = runner.invoke(app, ["overforge", "report", str(out), "--md", str(md), "--img", str(img)])
    assert res.exit_code == 0, res.output
    text = md.read_text()
    assert "Episodes per arm: overforge 4, bayes-belief:full 4" in text
    pooled = next(line for line in text.splitlines() if line.startswith("| bayes-belief:full | 4 |"))
    by_partner = text.split("## By partner")[1].split("##")[0]
    row = next(line for line in by_partner.splitlines() if line.startswith("| bayes-belief:full |"))
    assert row.count("(n 2)") == 2, row  # one cell per partner, two matched seeds each
    assert "| overforge | cramped_room | 4 |" in text and pooled
    assert sorted(p.name for p in img.iterdir()) == ["overforge_depth.png", "overforge_gap.png", "overforge_kappa.png"]
    # a second report beside the first names its figures with --prefix and links those
    res = runner.invoke(app, ["overforge", "report", str(out), "--md", str(tmp_path / "bc.md"), "--img", str(img),
                              "--prefix", "overforge_bc"])
    assert res.exit_code == 0, res.output
    assert len(list(img.glob("overforge_bc_*.png"))) == 3 and len(list(img.iterdir())) == 6
    assert "](img/overforge_bc_kappa.png)" in (tmp_path / "bc.md").read_text()
    res = runner.invoke(app, ["overforge", "report", str(out), "--md", str(tmp_path / "y.md"), "--prefix", "../x"])
    assert res.exit_code != 0 and "--prefix" in res.output and not (tmp_path / "y.md").exists()
    # part of the grid played again into a second directory replaces those episodes, says so, and
    # a notes file goes under the title
    again = tmp_path / "again"
    res = runner.invoke(app, ["overforge", "run", str(grid), "--out", str(again), "--workers", "1",
                              "--agents", "overforge", "--partners", "plater"])
    assert res.exit_code == 0 and "2 played" in res.output, res.output
    notes = tmp_path / "notes.md"
    notes.write_text("**Runs.** what they mean.\n")
    res = runner.invoke(app, ["overforge", "report", str(out), str(again), "--md", str(md), "--img", str(img),
                              "--notes", str(notes)])
    assert res.exit_code == 0, res.output
    text = md.read_text()
    assert "Episodes per arm: overforge 4, bayes-belief:full 4" in text
    assert f"2 of `{out}` by `{again}`" in text and "**Runs.** what they mean." in text and f"--notes {notes}" in text
    res = runner.invoke(app, ["overforge", "report", str(out), "--md", str(md), "--notes", str(tmp_path / "none.md")])
    assert res.exit_code != 0 and "--notes" in res.output and "none.md" in res.output
    # a missing run directory is one clear line and writes nothing
    res = runner.invoke(app, ["overforge", "report", str(tmp_path / "nope"), "--md", str(tmp_path / "x.md")])
    assert res.exit_code != 0 and "does not exist" in res.output and not (tmp_path / "x.md").exists()


def test_run_splits_agent_lists_with_comma_options():
    """`overforge run --agents` takes names whose options carry commas (`overforge:samples=4,-belief`)."""
    from beliefgate.experiments.overforge_report import _split

    assert _split("overforge:-belief,overforge:samples=4,-belief,bayes-belief:full") == [
        "overforge:-belief", "overforge:samples=4,-belief", "bayes-belief:full"]
    assert _split("overforge:hold=1,uncommitted=rule, plater,switch-sourcer-to-plater,") == [
        "overforge:hold=1,uncommitted=rule", "plater", "switch-sourcer-to-plater"]
    assert _split("-belief,overforge") == ["-belief", "overforge"]  # nothing to continue: left for the grid check
    assert _split(None) is None


def test_next_complement_continuation_reacts_to_the_imagined_partner():
    """``next=complement``: the rollout ego's later skills count the imagined partner's skill; the
    default ignores it. A pot with 2 onions needs one more: with the partner fetching it, the
    complement continuation takes a dish instead."""
    from beliefgate.agents.overforge.strategies import flat_strategy
    from beliefgate.envs.overcooked.state import PlayerView, PotView, SymbolicState

    state = SymbolicState(layout="cramped_room", timestep=3,
                          players=(PlayerView(position=(1, 2), orientation=(0, -1)),
                                   PlayerView(position=(3, 1), orientation=(0, -1))),
                          pots=(PotView(position=(2, 0), ingredients=2),))
    chosen = {}
    for name in ("overforge", "overforge:next=complement"):
        agent = make_overforge_agent(name)
        agent.reset("cramped_room", 0, 5)
        choose, lib = agent._choose_next(flat_strategy()), agent.library
        chosen[name] = (lib.names[choose(state)], lib.names[choose(state, lib.index("pickup_onion"))])
    assert chosen["overforge"] == ("pickup_onion", "pickup_onion")
    assert chosen["overforge:next=complement"] == ("pickup_onion", "pickup_dish")
    assert parse_option("next=complement").next == "complement" and parse_option(None).next == "strategy"
    with pytest.raises(OverForgeOptionError, match="next must be one of strategy, complement"):
        parse_option("next=greedy")


def test_overforge_grid_through_dask_equals_inline(tmp_path):
    """An OverForge grid played by a local Dask cluster gives the inline runner's episodes exactly
    (rewards, PCM metrics, decision counts), so `eval run --scheduler` can carry the whole grid."""
    pytest.importorskip("distributed")
    from beliefgate.eval.executors import DaskExecutor
    from beliefgate.eval.grid import parse_grid
    from beliefgate.eval.runner import run_grid

    grid = {"name": "of-dask", "agents": ["overforge", "overforge:-belief"], "layouts": ["cramped_room"],
            "partners": ["plater"], "seeds": [1000], "seats": [0, 1], "horizon": 40}
    inline = run_grid(parse_grid(grid), tmp_path / "inline")
    assert inline.complete and inline.ran == 4
    with DaskExecutor("local", workers=2) as dask:
        remote = run_grid(parse_grid(grid), tmp_path / "dask", dask)
    assert remote.complete and remote.ran == 4

    def key(rows):
        return {r["episode_key"]: {k: v for k, v in r.items() if k not in ("wall_s", "log")} for r in rows}

    a, b = key(inline.rows), key(remote.rows)
    assert a.keys() == b.keys()
    for k in a:
        for col, v in a[k].items():
            w = b[k][col]
            assert v == w or (isinstance(v, float) and np.isnan(v) and np.isnan(w)), (k, col, v, w)
    # the logged decisions (branches, evidence, kappa, commit) are the same, timings aside
    from beliefgate.envs.trajlog import read_log

    def decisions(summary, root):
        out = {}
        for r in summary.rows:
            recs = decision_records(read_log(root / r["log"]))
            out[r["episode_key"]] = [{k: v for k, v in rec.items() if "time" not in k and not k.endswith("_ms")}
                                     for rec in recs]
        return out

    da, db = decisions(inline, tmp_path / "inline"), decisions(remote, tmp_path / "dask")
    assert da == db and all(da.values())


def test_overforge_run_resumes_a_subset_and_never_moves_results_silently(tmp_path):
    """`overforge run` resumes the same (subset) command; another subset or the whole grid into the
    same directory is refused with one line and the finished results stay; --force moves them aside
    and says so."""
    from typer.testing import CliRunner

    from beliefgate.cli import app

    grid = tmp_path / "grid.yaml"
    grid.write_text("name: tiny\nagents: [overforge, 'bayes-belief:full']\nlayouts: [cramped_room]\n"
                    "partners: [plater]\nseeds: {start: 1000, count: 2}\nseats: [0]\nhorizon: 20\n")
    out = tmp_path / "run"
    runner = CliRunner()
    args = ["overforge", "run", str(grid), "--out", str(out), "--workers", "1"]
    res = runner.invoke(app, args + ["--seeds", "1"])
    assert res.exit_code == 0 and "2 played, 0 already done" in res.output, res.output
    res = runner.invoke(app, args + ["--seeds", "1"])
    assert res.exit_code == 0 and "0 played, 2 already done" in res.output, res.output
    before = (out / "results.csv").read_text()
    for other in ([], ["--agents", "overforge"]):
        res = runner.invoke(app, args + other)
        assert res.exit_code == 2 and "holds the results of another grid" in res.output, res.output
        assert len(res.output.strip().splitlines()) == 1
        assert (out / "results.csv").read_text() == before and not list(out.glob("superseded-*"))
    res = runner.invoke(app, args + ["--force"])
    assert res.exit_code == 0 and "4 played" in res.output and "note:" in res.output, res.output
    assert len(list(out.glob("superseded-*"))) == 1


def test_overforge_report_pairs_against_the_arm_given(tmp_path):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    grid = tmp_path / "grid.yaml"
    grid.write_text("name: tiny\nagents: [overforge, 'bayes-belief:full']\nlayouts: [cramped_room]\n"
                    "partners: [plater, balanced]\nseeds: {start: 1000, count: 1}\nseats: [0]\nhorizon: 20\n")
    out, md = tmp_path / "run", tmp_path / "r.md"
    runner = CliRunner()
    assert runner.invoke(app, ["overforge", "run", str(grid), "--out", str(out), "--workers", "1"]).exit_code == 0
    res = runner.invoke(app, ["overforge", "report", str(out), "--md", str(md), "--arm", "bayes-belief:full"])
    assert res.exit_code == 0, res.output
    assert len(list((tmp_path / "img").glob("overforge_*.png"))) == 3  # --img defaults to img/ beside --md
    text = md.read_text()
    assert "## Pooled reward: `bayes-belief:full` minus each arm" in text and "--arm bayes-belief:full" in text
    assert "| overforge | 2 |" in text
    res = runner.invoke(app, ["overforge", "report", str(out), "--md", str(tmp_path / "n.md"), "--img",
                              str(tmp_path / "img"), "--arm", "overforge:nope"])
    assert res.exit_code == 2 and "--arm 'overforge:nope'" in res.output and "bayes-belief:full" in res.output
    assert not (tmp_path / "n.md").exists()


def test_episode_cli_reports_the_pcm_read_outs():
    import json as _json

    from typer.testing import CliRunner

    from beliefgate.cli import app

    res = CliRunner().invoke(app, ["episode", "--ego", "overforge", "--partner", "plater", "--layout",
                                   "cramped_room", "--horizon", "30", "--seed", "1000", "--json"])
    assert res.exit_code == 0, res.output
    pcm = _json.loads(res.output)["pcm"]
    assert pcm["decisions"] > 0 and 0.0 < pcm["kappa_mean"] <= 1.0 and 0.0 <= pcm["commit_rate"] <= 1.0
    res = CliRunner().invoke(app, ["episode", "--ego", "bayes-belief", "--partner", "plater", "--layout",
                                   "cramped_room", "--horizon", "10", "--json"])
    assert res.exit_code == 0 and "pcm" not in _json.loads(res.output)


def test_rollouts_never_touch_the_live_gate(monkeypatch):
    """Rollouts filter their imagined trajectories with their own gate states: over a whole episode
    the live gate observes exactly the real steps and is never restored, and one imagined step is
    what the gate would do from the same state."""
    import copy

    from beliefgate.agents.overforge.rollout import ImaginedFilter
    from beliefgate.beliefs.gate import Gate

    observed = []
    real_observe = Gate.observe

    def observe(self, state, next_state, **kw):
        observed.append(state.timestep)
        return real_observe(self, state, next_state, **kw)

    monkeypatch.setattr(Gate, "observe", observe)
    monkeypatch.setattr(Gate, "restore", lambda self, st: pytest.fail("a rollout restored the live gate"))
    result = run_episode("cramped_room", "overforge", "balanced", seed=1000, horizon=30)
    assert any(r["depth"] >= 1 and r["rollout_partner"] == "belief" for r in decision_records(result.trajectory))
    assert observed == list(range(29))  # one observation per real step after the first
    monkeypatch.undo()

    agent = make_overforge_agent("overforge")
    env = OvercookedAdapter("cramped_room", horizon=50)
    s0 = env.reset()
    agent.reset("cramped_room", 0, 7)
    s1 = env.step([agent.act(s0), 3]).state
    before = agent.gate.state
    state, predictive = ImaginedFilter(agent.gate).step(before, s0, s1, True)
    twin = copy.deepcopy(agent.gate)
    expected = twin.observe(s0, s1, ego_active=True)
    assert agent.gate.state is before and state.belief.t == before.belief.t + 1
    np.testing.assert_array_equal(predictive, expected.predictive)
    np.testing.assert_array_equal(state.belief.belief, twin.state.belief.belief)
