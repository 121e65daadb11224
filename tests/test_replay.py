"""Replaying logged partners through the gate, and the switch-detection scores."""

import numpy as np
import pytest

from beliefgate.eval.episode import run_episode
from beliefgate.eval.replay import ground_truth, partner_evidence, replay, score_switches


def test_score_switches_hand_made():
    hidden = np.zeros(40, dtype=bool)
    hidden[[5, 25]] = True
    alarms = np.zeros(40, dtype=bool)
    alarms[[7, 18, 30, 39]] = True  # 7 detects switch 5 (delay 2); 30 detects 25 (delay 5); 18 and 39 are false
    sc = score_switches(alarms, hidden, window=10)
    assert (sc.switches, sc.detected, sc.false_alarms, sc.steps) == (2, 2, 2, 40)
    assert sc.mean_delay == pytest.approx(3.5)
    assert sc.false_alarms_per_100 == pytest.approx(5.0)
    missed = score_switches(np.zeros(40, dtype=bool), hidden, window=10)
    assert missed.detected == 0 and missed.mean_delay == 10 and missed.false_alarms == 0
    both = sc + missed
    assert both.switches == 4 and both.mean_delay == pytest.approx((2 + 5 + 10 + 10) / 4)


@pytest.fixture(scope="module")
def switching_episode():
    return run_episode("coordination_ring", "balanced", "switch-sourcer-to-plater", seed=3).trajectory


def test_replay_tracks_the_partner(switching_episode):
    rep = replay(switching_episode, partner=1)
    np.testing.assert_allclose(rep.posterior.sum(axis=1), 1.0, atol=1e-12)
    assert rep.map_accuracy > 0.75  # the partner's true skill is the MAP most of the time
    assert rep.interrupt.sum() < len(rep.interrupt) / 5


def test_evidence_respects_feasibility(switching_episode):
    ev = partner_evidence(switching_episode, 1)
    states = switching_episode.states()
    for t in range(0, len(ev), 7):
        held = states[t].players[1].held
        if held == "onion":
            assert not ev[t].feasible[0] and not ev[t].feasible[2]  # no pickups with full hands
        if held is None:
            assert not ev[t].feasible[5]  # nothing to put down


def test_hidden_switches_exclude_completions(switching_episode):
    names = ("pickup_onion", "put_onion_in_pot", "pickup_dish", "fill_dish_with_soup", "deliver_soup",
             "place_obj_on_counter")
    truth, hidden = ground_truth(switching_episode, 1, names)
    changes = np.flatnonzero((truth[1:] != truth[:-1]) & (truth[1:] >= 0) & (truth[:-1] >= 0)) + 1
    assert len(changes) > 10 and hidden.sum() < len(changes)  # most changes follow visible completions


def test_table7_directions_on_a_scripted_episode(switching_episode):
    """Raising tau_obs or lambda never lowers the interrupt count; raising c_floor or cooldown never raises it."""
    from beliefgate.beliefs.gate import GateParams

    ev = partner_evidence(switching_episode, 1)
    base = GateParams(n_stable=1, cooldown=3)

    def count(**change):
        return int(replay(switching_episode, base.replace(**change), partner=1, evidence=ev).interrupt.sum())

    for ref in ("skill", "action"):
        by_tau = [count(tau_obs=v, reference=ref) for v in (0.02, 0.05, 0.1, 0.2, 0.4, 0.7)]
        by_lam = [count(likelihood_scale=v, reference=ref) for v in (0.25, 0.5, 1.0, 2.0, 4.0)]
        by_floor = [count(confidence_floor=v, reference=ref) for v in (0.3, 0.5, 0.7, 0.9, 0.99)]
        by_cool = [count(cooldown=v, reference=ref) for v in (0, 2, 5, 10, 20)]
        assert by_tau == sorted(by_tau) and by_tau[-1] > by_tau[0], (ref, by_tau)
        assert by_lam == sorted(by_lam) and by_lam[-1] > by_lam[0], (ref, by_lam)
        assert by_floor == sorted(by_floor, reverse=True) and by_floor[0] > by_floor[-1], (ref, by_floor)
        assert by_cool == sorted(by_cool, reverse=True) and by_cool[0] > by_cool[-1], (ref, by_cool)
