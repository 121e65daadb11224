"""PPO on JaxMARL's OvercookedV2 (beliefgate.rl): a smoke run on the real dynamics, determinism,
resume after a simulated kill, no recompiles, the events, BP and FCP wiring.

One small config is compiled once per module (the trainer is shared) so the file stays fast."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("jaxmarl")
pytest.importorskip("optax")

from beliefgate.rl.config import EVENTS, PPOConfig, PPOConfigError, parse_weights  # noqa: E402
from beliefgate.envs.overcooked_v2.policies.checkpoint import CheckpointError  # noqa: E402
from beliefgate.rl.layouts import LayoutNameError, resolve_layout  # noqa: E402

SMALL = dict(layout="v2/cramped_room", horizon=64, num_envs=8, rollout_len=32, hidden=(32,), epochs=2,
             minibatches=2, checkpoint_every=2)


def small(**kw) -> PPOConfig:
    return PPOConfig(**{**SMALL, "total_steps": 6 * 8 * 32, **kw})


@pytest.fixture(scope="module")
def trainer():
    from beliefgate.rl.ppo import Trainer

    return Trainer(small())


@pytest.fixture(scope="module")
def full_run(trainer, tmp_path_factory):
    from beliefgate.rl.ppo import train

    out = tmp_path_factory.mktemp("full")
    return train(small(), out, trainer=trainer)


def _params(path):
    from beliefgate.envs.overcooked_v2.policies.checkpoint import load_params

    return load_params(path)[0]


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def test_smoke_run_logs_finite_losses_returns_and_a_card(full_run):
    out = full_run.out
    assert full_run.updates == 6 and full_run.env_steps == 6 * 256
    rows = full_run.curve
    assert len(rows) == 6
    for row in rows:
        assert math.isfinite(row["loss"]) and math.isfinite(row["value_loss"]) and row["entropy"] > 0
    # horizon 64 and 32-step rollouts: an episode ends every other update
    assert sum(r["episodes"] for r in rows) == 8 * 3
    assert all(math.isfinite(r["mean_return"]) and r["mean_return"] >= 0 for r in rows if r["episodes"])
    card = json.loads((out / "policy.json").read_text())
    for key in ("layout", "kind", "event_weights", "seed", "steps", "final_return", "wall_time_s", "commit",
                "versions", "obs_shape", "sha256"):
        assert key in card
    assert card["layout"] == "v2/cramped_room" and card["kind"] == "sp" and card["steps"] == 6 * 256
    assert card["obs_shape"] == [4, 5, 30] and card["versions"]["jaxmarl"]
    assert (out / "policy.msgpack").stat().st_size <= 1 << 20
    header = (out / "curve.csv").read_text().splitlines()
    assert header[0].startswith("update,env_steps,mean_return") and len(header) == 7
    assert (out / "curve.png").stat().st_size > 1000


def test_same_seed_same_params_other_seed_differs(trainer, full_run, tmp_path):
    from beliefgate.rl.ppo import train

    again = train(small(), tmp_path / "again", trainer=trainer)
    assert _same(_params(again.policy), _params(full_run.policy))
    assert [r["loss"] for r in again.curve] == [r["loss"] for r in full_run.curve]
    state = trainer.init(seed=1)
    state, _ = trainer.update(state)
    assert not _same(state["params"], _params(full_run.policy))


def test_resume_after_a_kill_matches_the_uninterrupted_run(trainer, full_run, tmp_path):
    from beliefgate.rl.ppo import STATE_FILE, train

    out = tmp_path / "killed"
    killed = train(small(), out, stop_after=3, trainer=trainer)  # killed during update 4: update 3 unsaved
    assert killed.updates == 3
    with pytest.raises(CheckpointError, match="--resume"):
        train(small(), out, trainer=trainer)
    resumed = train(small(), out, resume=True, trainer=trainer)
    assert resumed.resumed_from == 2  # the last checkpoint; at most one update lost
    assert _same(_params(resumed.policy), _params(full_run.policy))
    assert [r["loss"] for r in resumed.curve] == [r["loss"] for r in full_run.curve]
    with pytest.raises(CheckpointError, match="seed=0, this one 1"):
        train(small(seed=1), out, resume=True, trainer=trainer)
    (out / STATE_FILE).write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match=STATE_FILE):
        train(small(), out, resume=True, trainer=trainer)


def test_the_update_is_traced_once(trainer, full_run):
    # the fixture runs, determinism, resume and reload all went through one compiled update
    state = trainer.init()
    for _ in range(2):
        state, _ = trainer.update(state)
    assert trainer.traces == 1


R, D, L, U, S, I = range(6)  # right, down, left, up, stay, interact
#: scripted cramped_room play of agent_1 (agent_0 starts at (3,1) (swap_agents) and stays; agent_1 at
#: (1,1)): face the onion pile (0,1), then three times: pick, step right to (2,1), face the pot (2,0),
#: place, step back; a plate from the pile (1,3); wait for the soup; plate it -- holding the soup at (2,1)
COOK = [L] + [I, R, U, I, L] * 3 + [D, I] + [S] * 25 + [U, R, U, I]
#: from there: carry the soup to (3,2) and deliver it at (3,3)
SERVE = [D, R, D, I]


def _cramped_room():
    """``(env, static grid, start state)`` of the scripted play (the real JaxMARL dynamics)."""
    from jaxmarl.environments.overcooked_v2 import OvercookedV2

    env = OvercookedV2(layout=resolve_layout("v2/cramped_room")[1], max_steps=400)
    _, state = env.reset(jax.random.PRNGKey(0))
    return env, jax.numpy.asarray(env.layout.static_objects), state


def _trainer_shaping(trainer, plan):
    """Per step of ``plan`` (agent_1's actions): each player's dish drops and the shaped reward the
    trainer's step adds to JaxMARL's, ``(steps, players)`` each."""
    from beliefgate.rl.events import dish_drops

    env, static, state = _cramped_room()

    def body(state, a1):
        actions = jax.numpy.stack([jax.numpy.asarray(S), a1])
        _, nxt, _, _, info = env.step_env(jax.random.PRNGKey(1), state, {"agent_0": actions[0], "agent_1": a1})
        *_, shaped, _, _ = trainer._env_step(jax.random.PRNGKey(1), state, actions)
        raw = jax.numpy.stack([info["shaped_reward"]["agent_0"], info["shaped_reward"]["agent_1"]])
        return nxt, (dish_drops(static, state, nxt), shaped - raw)

    _, (drops, added) = jax.jit(lambda s0, acts: jax.lax.scan(body, s0, acts))(state, jax.numpy.asarray(plan))
    return np.asarray(drops), np.asarray(added)


def test_events_from_state_pairs_on_the_real_dynamics():
    """Scripted cramped_room play: onion to the pot three times, a plate, the soup, the delivery."""
    from beliefgate.rl.events import step_events

    env, static, state = _cramped_room()
    # the soup delivered, then another onion, put down on the counter (0,2) and taken back
    plan = COOK + SERVE + [L, L, U, L, I, D, L, I, I]

    def body(state, a1):
        _, nxt, *_ = env.step_env(jax.random.PRNGKey(1), state, {"agent_0": S, "agent_1": a1})
        return nxt, jax.numpy.stack([step_events(static, state, nxt, counter_pickups=c) for c in (False, True)])

    _, per_step = jax.jit(lambda s0, acts: jax.lax.scan(body, s0, acts))(state, jax.numpy.asarray(plan))
    counts, with_counter = np.asarray(per_step).sum(0)
    got = dict(zip(EVENTS, counts[1]))
    # the onion taken back from the counter is no pickup (only the piles count), unless asked
    assert got["ingredient_pickup"] == 4 and dict(zip(EVENTS, with_counter[1]))["ingredient_pickup"] == 5, got
    assert got["pot_placement"] == 3, got
    assert got["plate_pickup"] == 1 and got["soup_pickup"] == 1 and got["delivery"] == 1, got
    assert got["counter_placement"] == 1, got
    assert counts[0].sum() == 0


def test_bad_settings_are_one_line_input_errors():
    with pytest.raises(PPOConfigError, match="total_steps"):
        PPOConfig(total_steps=0)
    with pytest.raises(PPOConfigError, match="unknown event 'chopping'"):
        PPOConfig(kind="bp", event_weights=[{"chopping": 1.0}])
    with pytest.raises(PPOConfigError, match="unknown event 'chop'"):
        parse_weights("delivery=1,chop=2")
    with pytest.raises(PPOConfigError, match="event_weights"):
        PPOConfig(kind="bp")
    with pytest.raises(PPOConfigError, match="pool_dir"):
        PPOConfig(kind="fcp")
    with pytest.raises(LayoutNameError, match="v2/kitchen"):
        resolve_layout("v2/kitchen")
    assert resolve_layout("v2/coordination_ring")[0] == "v2/coord_ring"
    assert parse_weights("delivery=1, plate_pickup=3") == {"delivery": 1.0, "plate_pickup": 3.0}


def test_fcp_pool_errors_before_training(tmp_path):
    from beliefgate.rl.ppo import load_pool

    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="no policy checkpoints"):
        load_pool(str(tmp_path / "empty"), "v2/cramped_room", (4, 5, 30))
    with pytest.raises(CheckpointError, match="not a directory"):
        load_pool(str(tmp_path / "nope"), "v2/cramped_room", (4, 5, 30))


@pytest.mark.slow
def test_bp_conditioned_and_fcp_train_on_the_real_dynamics(tmp_path):
    """A reward-conditioned BP network over two weight sets, then an FCP ego against snapshots of
    an SP run (two more compilations: slow-marked)."""
    from beliefgate.rl.ppo import train
    from beliefgate.envs.overcooked_v2.policies.loader import load_policy

    sp = train(small(snapshots=2), tmp_path / "sp")
    snaps = sorted((tmp_path / "sp" / "snapshots").glob("*.msgpack"))
    assert len(snaps) == 2
    grid = [{"plate_pickup": 3.0, "delivery": 1.0}, {"ingredient_pickup": 3.0, "counter_placement": -1.0}]
    bp = train(small(kind="bp", event_weights=grid, total_steps=2 * 256), tmp_path / "bp")
    assert all(math.isfinite(r["loss"]) for r in bp.curve)
    with pytest.raises(CheckpointError, match="give event weights"):
        load_policy(bp.policy)
    policy = load_policy(bp.policy, layout="v2/cramped_room", weights=grid[0])
    assert 0 <= policy(np.zeros((4, 5, 30), np.uint8)) < 6
    fcp = train(small(kind="fcp", pool_dir=str(tmp_path / "sp" / "snapshots"), total_steps=2 * 256), tmp_path / "fcp")
    card = json.loads((tmp_path / "fcp" / "policy.json").read_text())
    assert card["kind"] == "fcp" and len(card["pool"]) == 2 and fcp.updates == 2
    assert sp.updates == 6


def test_bp_task_partner_carries_no_weights_and_each_set_trains_from_every_seat():
    """``bp_partner="task"``: in each environment one seat sees and is rewarded by the env's weights,
    the other sees zeros (the task behaviour of the same network); every weight set has a block of
    environments per seat, so no behaviour is learnt from one seat only."""
    from beliefgate.rl.ppo import Trainer

    grid = [{"plate_pickup": 3.0}, {"delivery": -2.0}, {"ingredient_pickup": 4.0}]
    t = Trainer(small(kind="bp", event_weights=grid, num_envs=6, bp_partner="task", minibatches=2))
    mask = np.asarray(t.weight_mask)
    assert mask.shape == (6, 2) and (mask.sum(1) == 1).all()
    seats = {(j % 3, int(mask[j].argmax())) for j in range(6)}
    assert seats == {(k, s) for k in range(3) for s in range(2)}, seats
    obs = jax.numpy.zeros((6, 2, 4, 5, 30))
    x = np.asarray(t._inputs(obs))[..., -len(EVENTS):]
    for j in range(6):
        seat = int(mask[j].argmax())
        assert x[j, 1 - seat].sum() == 0
        assert x[j, seat].tolist() == [grid[j % 3].get(e, 0.0) for e in EVENTS]
    same = Trainer(small(kind="bp", event_weights=grid, num_envs=6, minibatches=2, bp_partner="same"))
    assert np.asarray(same.weight_mask).min() == 1.0
    assert small(kind="bp", event_weights=grid).bp_mode == "task" and small().bp_mode is None
    one = small(kind="bp", event_weights=grid[:1])
    assert one.conditioned and not small(kind="bp", event_weights=grid[:1], bp_partner="same").conditioned
    with pytest.raises(PPOConfigError, match="bp_partner"):
        small(bp_partner="task")


def test_a_dish_left_on_a_counter_is_a_dish_drop_and_a_delivery_is_not():
    """``dish_drops`` on the real dynamics: the soup of the scripted cramped_room play put down on the
    counter (1,0) counts once, the delivered one never; the trainer charges the refund against the
    shaped reward of that step only."""
    from beliefgate.rl.ppo import Trainer

    refund = Trainer(small(dish_drop_refund=5.0))
    for tail, drops in (([L, U, I], 1), (SERVE, 0)):   # put down on the counter / deliver
        per_step, charged = _trainer_shaping(refund, COOK + tail)
        assert per_step[:, 0].sum() == 0 and per_step[:, 1].sum() == drops, (tail, per_step.sum(0))
        assert np.allclose(charged, -5.0 * per_step), tail


def test_a_run_that_never_scores_gives_up_with_its_state_saved(trainer, tmp_path):
    """``give_up_at``: a (tiny) run whose episodes score nothing stops at that step with one line, the
    state, policy and GAVE_UP marker on disk; a resume gives up again without a silent restart."""
    from beliefgate.rl.ppo import GAVE_UP_FILE, STATE_FILE, TrainingGaveUp, train

    cfg = small(give_up_at=2 * 8 * 32)
    with pytest.raises(TrainingGaveUp, match=r"no episode of the last five logged updates scored by 512 env steps"):
        train(cfg, tmp_path / "dead", trainer=trainer)  # the update does not read give_up_at
    assert (tmp_path / "dead" / GAVE_UP_FILE).read_text().startswith(str(tmp_path / "dead"))
    assert (tmp_path / "dead" / STATE_FILE).is_file() and (tmp_path / "dead" / "policy.msgpack").is_file()
    with pytest.raises(TrainingGaveUp):
        train(cfg, tmp_path / "dead", resume=True, trainer=trainer)


def test_a_conditioned_bp_net_warm_starts_from_an_sp_policy(full_run):
    """``init_from``: every layer of the SP policy is copied, the BP net's six weight inputs start at zero
    (so at the start it plays the SP policy whatever the weights); another network is refused naming the
    file, before any training step."""
    from flax.traverse_util import flatten_dict

    from beliefgate.rl.ppo import Trainer

    grid = [{"plate_pickup": 10.0}, {"delivery": -10.0}]
    t = Trainer(small(kind="bp", event_weights=grid, init_from=str(full_run.policy)))
    got = flatten_dict(jax.device_get(t.init()["params"]))
    src = flatten_dict(_params(full_run.policy))
    for k, v in src.items():
        g = np.asarray(got[k])
        if g.shape == v.shape:
            assert np.array_equal(g, v), k
        else:   # a first layer: the observation rows are the SP policy's, the weight rows zero
            assert np.array_equal(g[:v.shape[0]], v) and not g[v.shape[0]:].any() and g.shape[0] - v.shape[0] == len(EVENTS)
    with pytest.raises(CheckpointError, match=r"init_from .*policy.msgpack: .* has shape"):
        Trainer(small(hidden=(16,), init_from=str(full_run.policy))).init()


def test_serve_shaping_is_the_potential_difference_along_a_delivery():
    """``serve_shaping``: distances to the serving cells by breadth-first search (coord_ring by hand),
    and on the real cramped_room dynamics the added shaped reward of each step is
    ``gamma * phi(s') - phi(s)`` with ``phi = D - d`` while a cooked dish is held: a bonus when the soup
    is taken out at distance 2, about one per step toward the goal, the potential paid back at delivery."""
    from beliefgate.rl.events import serve_distances
    from beliefgate.rl.ppo import Trainer

    ring = serve_distances(resolve_layout("v2/coord_ring")[1].static_objects)
    assert ring[3].tolist() == [5, 1, 0, 1, 5] and ring[1].tolist() == [5, 3, 4, 3, 5]
    _, extra = _trainer_shaping(Trainer(small(serve_shaping=1.0)), COOK + SERVE)
    g = 0.99
    # D = 4 on cramped_room; the soup is taken out at (2,1) (d 2), carried to (2,2) (d 1), (3,2) (d 0),
    # turned to the goal (d 0) and delivered
    want = [g * 2, g * 3 - 2, g * 4 - 3, g * 4 - 4, -4]
    assert np.allclose(extra[-5:, 1], want, atol=1e-5), extra[-5:, 1]
    assert not extra[:-5].any() and not extra[:, 0].any()


def test_pot_shaping_is_the_potential_difference_while_carrying_to_a_pot():
    """``pot_shaping``: the same breadth-first distances to the pots (cramped_room by hand), and on the
    real dynamics the added shaped reward is ``gamma * phi(s') - phi(s)`` with ``phi = D - d`` while a
    raw ingredient or an empty plate is held: each onion is paid as it nears the pot and paid back as it
    goes in, the plate likewise until the soup is on it; the teammate (who holds nothing) gets nothing."""
    from beliefgate.rl.events import pot_distances
    from beliefgate.rl.ppo import Trainer

    room = pot_distances(resolve_layout("v2/cramped_room")[1].static_objects)
    assert room[1].tolist() == [3, 1, 0, 1, 3] and room[2].tolist() == [3, 2, 1, 2, 3]
    _, extra = _trainer_shaping(Trainer(small(pot_shaping=1.0)), COOK + SERVE)
    g = 0.99
    # D = 3: an onion picked at (1,1) (d 1), carried to (2,1) (d 0), turned to the pot, put in
    onion = [0.0, g * 2, g * 3 - 2, g * 3 - 3, -3]
    assert np.allclose(extra[:16, 1], onion * 3 + [0.0], atol=1e-5), extra[:16, 1]
    # the plate: picked at (1,2) (d 2), held 25 steps while the soup cooks, brought to (2,1), soup taken
    plate = [g * 1] + [g * 1 - 1] * 25 + [g * 2 - 1, g * 3 - 2, g * 3 - 3, -3]
    assert np.allclose(extra[17:47, 1], plate, atol=1e-5), extra[17:47, 1]
    assert not extra[47:].any() and not extra[:, 0].any()
    # off by default: the trainer's step is then JaxMARL's shaped reward alone
    assert not _trainer_shaping(Trainer(small()), COOK)[1].any()
