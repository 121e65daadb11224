"""Trained (PPO) partners and ego baselines on the OvercookedV2 backend, with the shipped checkpoints.

Real JaxMARL dynamics, real checkpoints: the SP policy shipped in
``beliefgate/envs/overcooked_v2/trained/`` and a tiny FCP fixture (``tests/fixtures/trained/``,
trained for a few thousand steps against the shipped SP policy: a check that an FCP checkpoint
plays, not a strong one).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jaxmarl")
pytest.importorskip("flax")

from beliefgate.envs.domain import (PartnerLayoutError, PartnerSpecError, UnknownPartnerError,  # noqa: E402
                                    register_domain, unregister_domain)
from beliefgate.envs.hindsight import domain_labels  # noqa: E402
from beliefgate.envs.overcooked_v2 import trained_agents as T  # noqa: E402
from beliefgate.envs.overcooked_v2.domain import DOMAIN  # noqa: E402
from beliefgate.errors import InputError  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "trained"
LAYOUT = "v2/cramped_room"


@pytest.fixture(scope="module", autouse=True)
def _v2_registered():
    # the shared venv's entry points may predate the overcooked_v2 domain
    register_domain(DOMAIN)
    yield
    unregister_domain(DOMAIN.name)


@pytest.fixture(scope="module")
def shipped():
    specs = T.shipped_specs()
    assert specs, "no trained partner is shipped"
    return specs


@pytest.fixture()
def fcp_fixture(monkeypatch, shipped):
    """The FCP fixture listed among the shipped partners (``fcp:<layout>`` finds it)."""
    spec = T.parse_trained(T.read_partner_file(FIXTURES / "fcp-cramped_room-tiny.yaml"), "fixture", FIXTURES)
    monkeypatch.setattr(T, "shipped_specs", lambda: {**shipped, spec.name: spec})
    return spec


# ---------------------------------------------------------------- one layout resolver
def test_trainer_layouts_are_the_domains():
    from beliefgate.envs.overcooked_v2.layouts import layout_info
    from beliefgate.rl.layouts import LayoutNameError, resolve_layout

    for name in ("v2/coordination_ring", "v2/coord_ring", "v2/cramped_room_v2_3p"):
        canonical, spec = resolve_layout(name)
        assert canonical == DOMAIN.resolve_layout(name)
        assert spec is layout_info(canonical).jax_layout      # the very kitchen an episode plays
    assert resolve_layout("v2/forced_coordination")[0] == "v2/forced_coord"
    with pytest.raises(LayoutNameError, match="v2/kitchen"):
        resolve_layout("v2/kitchen")


# ---------------------------------------------------------------- the seat's observation
def test_observation_of_a_symbolic_state_is_jaxmarls():
    from beliefgate.envs.overcooked_v2.env import V2Env, observations

    env = V2Env(LAYOUT, 50, seed=3)
    rng = np.random.default_rng(0)
    for _ in range(25):
        env.step([int(a) for a in rng.integers(0, 6, size=2)])
    direct = env.observation()                 # get_obs of the env's own JaxMARL state
    rebuilt = observations(env.state)          # from the symbolic state, as a trained partner sees it
    assert direct.shape == (2,) + env.obs_shape
    np.testing.assert_array_equal(direct, rebuilt)
    assert not np.array_equal(rebuilt[0], rebuilt[1])   # each seat its own view


# ---------------------------------------------------------------- shipped checkpoints
def test_every_shipped_checkpoint_loads(shipped):
    from beliefgate.envs.overcooked_v2.policies.checkpoint import MAX_POLICY_BYTES

    for name, spec in shipped.items():
        assert spec.path.is_file() and spec.path.stat().st_size <= MAX_POLICY_BYTES, name
        T.check_spec(spec)                                    # digest, shapes, the layout's obs shape
        card = spec.card()
        assert card["kind"] in T.TRAINING_KINDS and DOMAIN.resolve_layout(card["layout"]) == card["layout"]
        assert DOMAIN.is_partner(name) and DOMAIN.partner_restriction(name, card["layout"]) is None


def test_partners_json_gives_kinds(shipped):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    result = CliRunner().invoke(app, ["partners", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert all(r["kind"] in ("scripted", "bc", "ppo") for r in rows.values())
    assert rows["balanced"]["kind"] == "scripted" and rows["bc"]["kind"] == "bc"
    fixture = FIXTURES / "fcp-cramped_room-tiny.yaml"
    result = CliRunner().invoke(app, ["partners", "--json", str(fixture)])   # a trained partner file, validated
    assert result.exit_code == 0, result.output
    mine = json.loads(result.output)[-1]
    assert (mine["name"], mine["kind"], mine["training"], mine["layouts"]) == \
        ("fcp-cramped_room-tiny", "ppo", "fcp", [LAYOUT])
    for name, spec in shipped.items():
        assert rows[name]["kind"] == "ppo"
        assert rows[name]["training"] == spec.card()["kind"]
        assert rows[name]["layouts"] == [spec.card()["layout"]]


def _episode(ego, partner, seed=0, horizon=80, seat=0, log_path=None):
    from beliefgate.eval.episode import run_episode

    return run_episode(LAYOUT, ego, partner, seed=seed, horizon=horizon, seat=seat, log_path=log_path)


def _kinds(shipped):
    """One shipped partner per training kind (of the layout the tests play)."""
    out = {}
    for name, spec in shipped.items():
        if spec.card()["layout"] == LAYOUT:
            out.setdefault(spec.card()["kind"], name)
    return out


def test_one_episode_per_kind_of_trained_partner_and_ego(shipped, fcp_fixture, tmp_path):
    kinds = _kinds(shipped)
    kinds.setdefault("fcp", str(FIXTURES / "fcp-cramped_room-tiny.yaml"))   # a partner file by path
    assert {"sp", "fcp"} <= set(kinds)
    for kind, name in sorted(kinds.items()):
        as_partner = _episode("v2-cook", name, seed=1, horizon=60)
        as_ego = _episode(f"ppo:{name}", "v2-cook", seed=1, horizon=60, seat=1)
        for res in (as_partner, as_ego):
            assert res.summary["steps"] == 60
    fcp = _episode(f"fcp:{LAYOUT}", "v2-cook", seed=2, horizon=40)
    assert fcp.summary["ego"] == f"fcp:{LAYOUT}" and fcp.summary["steps"] == 40
    # by path: a policy file and a run folder play the same policy as the shipped name
    sp = kinds["sp"]
    by_name = _episode(f"ppo:{sp}", "v2-cook", seed=4, horizon=30)
    by_file = _episode(f"ppo:{shipped[sp].path}", "v2-cook", seed=4, horizon=30)
    by_dir = _episode(f"ppo:{shipped[sp].path.parent}", "v2-cook", seed=4, horizon=30)
    acts = [[r.actions for r in res.trajectory.steps] for res in (by_name, by_file, by_dir)]
    assert acts[0] == acts[1] == acts[2]


def test_trained_policies_play_the_game(shipped):
    """Two copies of the shipped SP policy cook together (seeded: the same seed, the same episode)."""
    sp = _kinds(shipped)["sp"]
    first = _episode(f"ppo:{sp}", sp, seed=0, horizon=250)
    again = _episode(f"ppo:{sp}", sp, seed=0, horizon=250)
    other = _episode(f"ppo:{sp}", sp, seed=5, horizon=250)
    assert first.summary["deliveries"] >= 2, first.summary
    assert [r.actions for r in first.trajectory.steps] == [r.actions for r in again.trajectory.steps]
    assert [r.actions for r in first.trajectory.steps] != [r.actions for r in other.trajectory.steps]


# ---------------------------------------------------------------- hindsight labels
def test_hindsight_labels_of_a_trained_partner(shipped, tmp_path):
    from beliefgate.envs.trajlog import read_log
    from beliefgate.eval import metrics as M

    sp = _kinds(shipped)["sp"]
    log = tmp_path / "ep.jsonl"
    res = _episode("bayes-belief", sp, seed=0, horizon=150, log_path=log)
    traj = res.trajectory
    partner = 1
    labels = [row.skills[partner] for row in traj.steps]
    assert sum(lab is not None for lab in labels) > 50
    library = DOMAIN.controller(LAYOUT).library
    # the rule, step by step: a step's label is the skill its next interaction completes
    upcoming = None
    for row in reversed(traj.steps):
        if row.events[partner]:
            done = DOMAIN.completed_skills(row.events[partner], library)
            upcoming = library.names[done[0]] if done else None
        assert row.skills[partner] == upcoming
    assert labels == [lab[partner] for lab in domain_labels(DOMAIN, LAYOUT, [r.events for r in traj.steps])]
    # the log on disk carries them too, and the metrics read them
    on_disk = read_log(log)
    assert [row.skills[partner] for row in on_disk.steps] == labels
    acc = M.skill_accuracy(on_disk)
    dup = M.duplicate_skill_rate(on_disk)
    gap = M.belief_action_gap_rate(on_disk)
    comp = M.comp_at_k(on_disk, k=3)
    assert 0.0 <= acc <= 1.0 and 0.0 <= dup <= 1.0
    assert np.isnan(gap) or 0.0 <= gap <= 1.0
    assert np.isnan(comp) or 0.0 <= comp <= 1.0


# ---------------------------------------------------------------- bad checkpoints: one line, exit 2
def _copy_ship(tmp_path, spec, edit_card=None, corrupt=False, kind=None):
    folder = tmp_path / "ck"
    folder.mkdir()
    shutil.copyfile(spec.path, folder / "policy.msgpack")
    card = json.loads(spec.path.with_suffix(".json").read_text())
    if edit_card:
        card.update(edit_card)
    (folder / "policy.json").write_text(json.dumps(card))
    if corrupt:
        data = bytearray((folder / "policy.msgpack").read_bytes())
        data[len(data) // 2] ^= 0xFF
        (folder / "policy.msgpack").write_bytes(bytes(data))
    partner = tmp_path / "mine.yaml"
    partner.write_text(f"format: beliefgate.v2partner/1\nname: mine\nkind: {kind or 'ppo'}\n"
                       f"checkpoint: ck/policy.msgpack\n")
    return partner, folder / "policy.msgpack"


@pytest.mark.parametrize("case, expect", [
    ("corrupt", "sha256"),
    ("obs_shape", "observation shape"),
    ("training_kind", "unknown kind"),
    ("layout", "which the v2 backend does not have"),
    ("partner_kind", "kind 'imitation' is not a v2 partner kind"),
])
def test_bad_checkpoint_is_one_line_exit_2(shipped, tmp_path, case, expect):
    from typer.testing import CliRunner

    from beliefgate.cli import app

    spec = shipped[_kinds(shipped)["sp"]]
    partner, policy = _copy_ship(tmp_path, spec, corrupt=case == "corrupt",
                                 edit_card={"obs_shape": [5, 5, 30]} if case == "obs_shape" else
                                 {"kind": "mep"} if case == "training_kind" else
                                 {"layout": "v2/moon_base"} if case == "layout" else None,
                                 kind="imitation" if case == "partner_kind" else None)
    with pytest.raises(InputError, match=expect):
        DOMAIN.check_partners([str(partner)])
    for args in (["--partner", str(partner), "--ego", "v2-cook"], ["--ego", f"ppo:{policy}", "--partner", "v2-cook"]):
        if case == "partner_kind" and args[1] != str(partner):
            continue
        out = tmp_path / "log.jsonl"
        result = CliRunner().invoke(app, ["episode", "--layout", LAYOUT, "--horizon", "20", "--log", str(out), *args])
        assert result.exit_code == 2, result.output
        lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
        # one line naming the file at fault (the partner file, the policy or its card)
        assert len(lines) == 1 and str(tmp_path) in lines[0] and expect in lines[0], lines
        assert not out.exists()   # refused before any episode


def test_trained_partner_on_another_layout_is_refused(shipped, tmp_path):
    spec = shipped[_kinds(shipped)["sp"]]
    with pytest.raises(PartnerLayoutError, match="plays only v2/cramped_room"):
        from beliefgate.eval.episode import run_episode

        run_episode("v2/coord_ring", "v2-cook", spec.name, horizon=10)
    player = T.ppo_agent(str(spec.path))
    with pytest.raises(PartnerLayoutError, match=r"trained on v2/cramped_room, not v2/coord_ring"):
        player.reset("v2/coord_ring", 0, 0)
    from beliefgate.envs.overcooked_v2.policies.loader import load_policy

    with pytest.raises(InputError, match="trained on layout v2/cramped_room, not v2/coord_ring"):
        load_policy(spec.path, layout="v2/coordination_ring")


def test_unknown_trained_names(tmp_path):
    with pytest.raises(UnknownPartnerError, match="ppo:nobody"):
        T.ppo_agent("nobody")
    with pytest.raises(UnknownPartnerError, match="no FCP checkpoint is shipped for v2/counter_circuit"):
        T.fcp_agent("v2/counter_circuit")
    with pytest.raises(PartnerSpecError, match="no such policy file"):
        T.ppo_agent(str(tmp_path / "missing.msgpack"))


# ---------------------------------------------------------------- grids (eval run)
def test_a_grid_with_trained_egos_and_partners(shipped, fcp_fixture, tmp_path):
    from beliefgate.eval.grid import parse_grid
    from beliefgate.eval.runner import load_results, run_grid

    sp = _kinds(shipped)["sp"]
    spec = parse_grid({"name": "trained", "agents": [f"ppo:{sp}", f"fcp:{LAYOUT}", "v2-cook"], "layouts": [LAYOUT],
                       "partners": [sp], "seeds": [0], "seats": [0], "horizon": 25})
    summary = run_grid(spec, tmp_path / "run")
    assert not summary.failed
    rows = load_results(tmp_path / "run")
    assert sorted(r["agent"] for r in rows) == sorted([f"ppo:{sp}", f"fcp:{LAYOUT}", "v2-cook"])
    assert all(r["partner"] == sp and r["steps"] == 25 for r in rows)
    # a grid naming a broken checkpoint stops before any episode, naming the file
    from beliefgate.eval.grid import resolve_grid
    from beliefgate.errors import InputError as _InputError

    partner, _ = _copy_ship(tmp_path, shipped[sp], corrupt=True)
    with pytest.raises(_InputError, match="sha256"):
        resolve_grid(parse_grid({"name": "bad", "agents": ["v2-cook"], "layouts": [LAYOUT], "partners": [str(partner)],
                                 "seeds": [0], "seats": [0], "horizon": 25}))
