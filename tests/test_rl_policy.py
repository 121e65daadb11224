"""Trained-policy files (beliefgate.envs.overcooked_v2.policies.loader / checkpoint): the loader's round trip and its refusals
(corrupt file, another layout or observation shape, an unknown kind), and the ``train ppo`` command's
bad input: one line, exit 2, before any training step."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

jax = pytest.importorskip("jax")
pytest.importorskip("jaxmarl")

from beliefgate.cli import app  # noqa: E402
from beliefgate.envs.overcooked_v2.policies.checkpoint import CheckpointError, save_policy  # noqa: E402
from beliefgate.envs.overcooked_v2.policies.loader import load_policy  # noqa: E402


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    """An untrained network saved as the trainer saves it (no training needed for the file format)."""
    from beliefgate.envs.overcooked_v2.policies.network import ActorCritic

    net = ActorCritic(num_actions=6, hidden=(16,))
    params = net.init(jax.random.PRNGKey(3), np.zeros((1, 600), np.float32))
    path = tmp_path_factory.mktemp("pol") / "policy.msgpack"
    card = {"layout": "v2/cramped_room", "kind": "sp", "seed": 3, "steps": 0, "event_weights": [],
            "conditioned_events": [], "obs_shape": [4, 5, 30], "num_actions": 6, "hidden": [16]}
    save_policy(path, params, card)
    return path, net, params


def _copy(src, dst_dir):
    dst = dst_dir / src.name
    shutil.copy(src, dst)
    shutil.copy(src.with_suffix(".json"), dst.with_suffix(".json"))
    return dst


def test_loader_round_trip_is_the_network_argmax(policy_file):
    path, net, params = policy_file
    policy = load_policy(path, layout="v2/cramped_room")
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 2, size=(16, 4, 5, 30)).astype(np.uint8)
    logits, _ = net.apply(params, obs.reshape(16, -1).astype(np.float32))
    want = np.argmax(np.asarray(logits), -1)
    assert np.array_equal(np.asarray(policy.batch(obs)), want)
    assert [policy(o) for o in obs[:4]] == list(want[:4])
    a = policy(obs[0], key=jax.random.PRNGKey(0), greedy=False)
    assert 0 <= a < 6
    with pytest.raises(CheckpointError, match="observation of shape"):
        policy(np.zeros((5, 4, 30)))


def test_loader_refuses_corrupt_and_mismatched_files(policy_file, tmp_path):
    path, _, _ = policy_file
    with pytest.raises(CheckpointError, match="trained on layout v2/cramped_room, not v2/coord_ring"):
        load_policy(path, layout="v2/coord_ring")
    bad = _copy(path, tmp_path)
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=f"{bad}: its contents do not match"):
        load_policy(bad)
    shape = _copy(path, tmp_path / "shape") if (tmp_path / "shape").mkdir() is None else None
    card = json.loads(shape.with_suffix(".json").read_text())
    card["obs_shape"] = [5, 5, 30]
    shape.with_suffix(".json").write_text(json.dumps(card))
    with pytest.raises(CheckpointError, match=r"observation shape \(5, 5, 30\) does not match"):
        load_policy(shape, layout="v2/cramped_room")
    with pytest.raises(CheckpointError, match="parameter shapes do not match"):
        load_policy(shape)
    card["obs_shape"], card["kind"] = [4, 5, 30], "mep"
    shape.with_suffix(".json").write_text(json.dumps(card))
    with pytest.raises(CheckpointError, match="unknown kind 'mep'"):
        load_policy(shape)
    shape.with_suffix(".json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not a JSON card"):
        load_policy(shape)
    shape.with_suffix(".json").unlink()
    with pytest.raises(CheckpointError, match="no card"):
        load_policy(shape)


def test_the_loader_imports_no_training_code():
    import subprocess
    import sys

    code = ("import sys, beliefgate.envs.overcooked_v2.policies.loader; "
            "print(any(m in sys.modules for m in ('optax', 'beliefgate.rl.ppo')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def _run(*args):
    return CliRunner().invoke(app, ["train", "ppo", *args], catch_exceptions=False)


def _one_line_exit_2(result, *needles):
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2, result.output
    assert len(errors) == 1, result.output
    for needle in needles:
        assert needle in errors[0], result.output


@pytest.mark.parametrize("args, needles", [
    (["--steps", "0"], ["--steps", "0"]),
    (["--steps", "10", "--layout", "v2/kitchen"], ["v2/kitchen", "unknown OvercookedV2 layout"]),
    (["--steps", "10", "--kind", "bp", "--weights", "delivery=1,chopping=2"], ["unknown event 'chopping'"]),
    (["--steps", "10", "--kind", "bp"], ["event_weights"]),
    (["--steps", "10", "--kind", "fcp"], ["pool_dir"]),
    (["--steps", "10", "--kind", "mep"], ["kind"]),
])
def test_cli_bad_input_is_one_line(tmp_path, args, needles):
    base = ["--layout", "v2/cramped_room", "--out", str(tmp_path / "run")]
    result = _run(*base, *args)
    _one_line_exit_2(result, *needles)
    assert not (tmp_path / "run" / "state.msgpack").exists()


def test_cli_bad_pool_and_bad_state_are_one_line(tmp_path, policy_file):
    (tmp_path / "pool").mkdir()
    result = _run("--layout", "v2/cramped_room", "--steps", "10", "--kind", "fcp", "--pool", str(tmp_path / "pool"),
                  "--out", str(tmp_path / "fcp"))
    _one_line_exit_2(result, str(tmp_path / "pool"), "no policy checkpoints")
    other = tmp_path / "other"
    other.mkdir()
    path, _, _ = policy_file
    moved = _copy(path, other)
    card = json.loads(moved.with_suffix(".json").read_text())
    card["layout"] = "v2/coord_ring"
    moved.with_suffix(".json").write_text(json.dumps(card))
    result = _run("--layout", "v2/cramped_room", "--steps", "10", "--kind", "fcp", "--pool", str(other),
                  "--out", str(tmp_path / "fcp"))
    _one_line_exit_2(result, str(moved), "v2/coord_ring")
    run = tmp_path / "run"
    run.mkdir()
    (run / "state.msgpack").write_bytes(b"\x93garbage")
    result = _run("--layout", "v2/cramped_room", "--steps", "10", "--out", str(run), "--resume")
    _one_line_exit_2(result, str(run / "state.msgpack"))
    result = _run("--layout", "v2/cramped_room", "--steps", "10", "--out", str(run))
    _one_line_exit_2(result, "--resume")
