"""The behaviour-preference population as data (beliefgate/rl/bp_population.yaml) and its shipping."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from beliefgate.errors import InputError
from beliefgate.rl.config import EVENTS
from beliefgate.rl.population import PopulationError, load_population

ROOT = Path(__file__).resolve().parents[1]


def test_twelve_behaviours_three_groups_crossed_two_by_two():
    pop = load_population()
    behaviours = pop.behaviours()
    assert len(behaviours) == 12 and len({b.name for b in behaviours}) == 12
    assert sorted(pop.groups) == ["cooking", "logistics", "sourcing"]
    for gname, group in pop.groups.items():
        mine = [b for b in behaviours if b.group == gname]
        assert len(mine) == 4
        crossed = list(group.crossed)
        # the four settings are the 2 x 2 of the crossed weights; the fixed weights are shared
        assert sorted(tuple(b.settings[e] for e in crossed) for b in mine) == [("hi", "hi"), ("hi", "lo"),
                                                                              ("lo", "hi"), ("lo", "lo")]
        for b in mine:
            assert b.name == f"bp-{gname}-{b.settings[crossed[0]]}-{b.settings[crossed[1]]}"
            for e in crossed:
                assert b.weights[e] == getattr(group.crossed[e], b.settings[e])
            assert all(b.weights[e] == w for e, w in group.fixed.items())
            assert set(b.weights) <= set(EVENTS)
        assert len({tuple(sorted(b.weights.items())) for b in mine}) == 4
    # the six events are each crossed in exactly one group; a put-down is never rewarded (farmable)
    assert sorted(e for g in pop.groups.values() for e in g.crossed) == sorted(EVENTS)
    assert all(b.weights.get("counter_placement", 0.0) <= 0.0 for b in behaviours)
    assert pop.behaviour("bp-cooking-hi-lo").partner_name("v2/coord_ring") == "bp-cooking-hi-lo-coord_ring"


@pytest.mark.parametrize("edit, needle", [
    (lambda d: d["groups"]["cooking"]["crossed"].update({"chopping": {"lo": 0, "hi": 1}}), "chopping"),
    (lambda d: d["groups"]["cooking"]["fixed"].update({"pot_placement": 1.0}), "both crossed and fixed"),
    (lambda d: d["groups"]["logistics"]["crossed"]["delivery"].pop("hi"), "hi"),
    (lambda d: d.update({"format": "v0"}), "format"),
])
def test_a_bad_population_file_is_one_line(tmp_path, edit, needle):
    import yaml

    data = yaml.safe_load((ROOT / "beliefgate" / "rl" / "bp_population.yaml").read_text())
    edit(data)
    path = tmp_path / "pop.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PopulationError, match=needle) as info:
        load_population(path)
    assert "\n" not in str(info.value)
    with pytest.raises(PopulationError, match="unknown behaviour 'bp-x'"):
        load_population().behaviour("bp-x")


def _ship():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import ship_checkpoint
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return ship_checkpoint


def _conditioned_run(tmp_path, weight_sets):
    """A reward-conditioned BP policy file over ``weight_sets`` (freshly initialised parameters and a
    card as the trainer writes it: shipping checks the card, the digest and the shapes, not the skill)."""
    pytest.importorskip("jaxmarl")
    import jax
    import jax.numpy as jnp

    from beliefgate.envs.overcooked_v2.policies.checkpoint import save_policy
    from beliefgate.envs.overcooked_v2.policies.loader import layout_obs_shape
    from beliefgate.envs.overcooked_v2.policies.network import ActorCritic, input_size

    obs_shape = layout_obs_shape("v2/cramped_room")
    net = ActorCritic(num_actions=6, hidden=(8, 8))
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, input_size(obs_shape, len(EVENTS)))))
    out = tmp_path / "bp"
    out.mkdir()
    save_policy(out / "policy.msgpack", params, {
        "layout": "v2/cramped_room", "kind": "bp", "seed": 0, "steps": 0, "event_weights": weight_sets,
        "conditioned_events": list(EVENTS), "obs_shape": list(obs_shape), "num_actions": 6, "hidden": [8, 8]})
    return out


def test_a_conditioned_bp_net_ships_as_twelve_partners(tmp_path):
    ship = _ship()
    pop = load_population()
    out = _conditioned_run(tmp_path, [b.weights for b in pop.behaviours()])
    dest = tmp_path / "trained"
    dest.mkdir()
    ship.ship(out, "bp-cramped_room", dest=dest)
    files = sorted(p.name for p in dest.glob("*.yaml"))
    assert files == sorted(f"{b.partner_name('v2/cramped_room')}.yaml" for b in pop.behaviours())
    assert (dest / "bp-cramped_room" / "policy.msgpack").is_file()
    from beliefgate.envs.overcooked_v2 import trained_agents as T

    for i, b in enumerate(pop.behaviours()):
        spec = T.parse_trained(T.read_partner_file(dest / f"{b.partner_name('v2/cramped_room')}.yaml"), "t", dest)
        assert spec.weights == b.weights and spec.group == b.group and spec.role == b.group
        assert spec.summary()["training"] == "bp" and spec.summary()["layouts"] == ["v2/cramped_room"]
        if i % 4 == 0:             # one per group loads (the shipped ones all load in test_trained_partners)
            T.check_spec(spec)
    # a bad weight in a partner file: one line naming the file and the event
    bad = dest / "bad.yaml"
    data = T.read_partner_file(dest / files[0])
    data["weights"] = {"chopping": 1.0}
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError, match="unknown event 'chopping'"):
        T.check_spec(T.parse_trained(T.read_partner_file(bad), str(bad), dest))
    data.pop("weights")
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError, match="reward-conditioned policy; give event weights"):
        T.check_spec(T.parse_trained(T.read_partner_file(bad), str(bad), dest))


def test_shipping_refuses_a_net_not_trained_on_the_population(tmp_path):
    ship = _ship()
    out = _conditioned_run(tmp_path, [{"delivery": 1.0}, {"plate_pickup": 2.0}])
    dest = tmp_path / "trained"
    dest.mkdir()
    with pytest.raises(InputError, match="bp-logistics-lo-lo .* is not among the weight sets"):
        ship.ship(out, "bp-cramped_room", dest=dest)
    assert not list(dest.iterdir())            # refused before anything was copied
    shutil.rmtree(out)


def test_a_conditioned_net_of_one_behaviour_ships_as_one_partner_naming_its_weights(tmp_path):
    """One weight set with task-only teammates (bp_partner "task") is a conditioned net: it ships as one
    partner whose file carries the weights, and that partner loads."""
    ship = _ship()
    out = _conditioned_run(tmp_path, [{"plate_pickup": 10.0}])
    dest = tmp_path / "trained"
    dest.mkdir()
    ship.ship(out, "bp-plates", dest=dest)
    from beliefgate.envs.overcooked_v2 import trained_agents as T

    spec = T.parse_trained(T.read_partner_file(dest / "bp-plates.yaml"), "t", dest)
    assert spec.weights == {"plate_pickup": 10.0}
    T.check_spec(spec)


@pytest.mark.slow
def test_batched_matches_score_what_their_events_deliver():
    """Two shipped SP policies in one jitted batch: the reward is 20 per delivery event, seeded."""
    pytest.importorskip("jaxmarl")
    import numpy as np

    from beliefgate.envs.overcooked_v2 import trained_agents as T
    from beliefgate.rl.evaluate import play_matches

    specs = T.shipped_specs()
    a, b = (T.load(specs[n].path, layout="v2/cramped_room") for n in ("sp-cramped_room-s0", "sp-cramped_room-s2"))
    res = play_matches("v2/cramped_room", a, b, seeds=[0, 1, 2], horizon=150)
    again = play_matches("v2/cramped_room", a, b, seeds=[0, 1, 2], horizon=150)
    deliveries = res["events"][:, :, EVENTS.index("delivery")].sum(1)
    assert res["events"].shape == (3, 2, len(EVENTS))
    np.testing.assert_array_equal(res["reward"], 20 * deliveries)
    assert deliveries.min() >= 1
    np.testing.assert_array_equal(res["events"], again["events"])
