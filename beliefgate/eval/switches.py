"""How well do the gates detect hidden partner switches?

Plays scripted episodes (real dynamics), replays the partner through the gate
and scores three alarm sequences against the partner's true *hidden* switches
(a change of its active skill that no visible completion announced):

* the stable-MAP contradiction gate (SPEC §4) at the given parameters,
* the change-point gate,
* the naive rule "alarm whenever the observed action is unlikely under the MAP"
  (l_t < tau) for a grid of thresholds tau, so the gates can be compared with it
  at equal or better delay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Sequence


from beliefgate.eval.episode import run_episode
from beliefgate.eval.replay import SwitchScores, replay, score_switches

DEFAULT_PARTNERS = ("switch-sourcer-to-plater", "switch-plater-to-sourcer")
DEFAULT_LAYOUTS = ("cramped_room", "asymmetric_advantages", "coordination_ring", "counter_circuit")
NAIVE_TAUS = (0.01, 0.02, 0.03, 0.04, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5)


@dataclass
class SwitchReport:
    rows: Dict[str, SwitchScores]
    episodes: int
    window: int

    def to_dict(self) -> Dict[str, object]:
        return {
            "episodes": self.episodes, "window": self.window,
            "methods": {
                name: {"switches": s.switches, "detected": s.detected, "detection_rate": s.detection_rate,
                       "mean_delay": s.mean_delay, "false_alarms": s.false_alarms,
                       "false_alarms_per_100_steps": s.false_alarms_per_100, "steps": s.steps}
                for name, s in self.rows.items()
            },
        }

    def naive_false_alarms_at(self, delay: float) -> Optional[float]:
        """False alarms per 100 steps of the naive rule at the given mean delay.

        The naive rule's thresholds trace a curve of (delay, false alarms); this
        interpolates it piecewise-linearly in delay (mixing two thresholds at random
        reaches any point in between). ``None`` outside the range of the sweep.
        """
        pts = sorted((s.mean_delay, s.false_alarms_per_100) for n, s in self.rows.items() if n.startswith("naive"))
        for (d0, f0), (d1, f1) in zip(pts, pts[1:]):
            if d0 <= delay <= d1:
                return f0 if d1 == d0 else f0 + (delay - d0) / (d1 - d0) * (f1 - f0)
        return None

def evaluate_switches(params=None, layouts: Sequence[str] = DEFAULT_LAYOUTS,
                      partners: Sequence[str] = DEFAULT_PARTNERS, seeds: Iterable[int] = range(4),
                      horizon: int = 400, window: int = 10, taus: Sequence[float] = NAIVE_TAUS,
                      ego: str = "balanced", progress=None) -> SwitchReport:
    """Score the gates and the naive rule on scripted switching partners."""
    totals: Dict[str, SwitchScores] = {}
    episodes = 0
    jobs = [(l, p, s) for l in layouts for p in partners for s in seeds]
    for i, (layout, partner, seed) in enumerate(jobs):
        if progress is not None:
            progress(i, len(jobs), f"{layout} / {partner} / seed {seed}")
        result = run_episode(layout, ego, partner, seed=seed, horizon=horizon, seat=0)
        rep = replay(result.trajectory, params, partner=1)
        scored = {
            "stable-map gate": score_switches(rep.interrupt, rep.hidden_switch, window),
            "change-point gate": score_switches(rep.changepoint, rep.hidden_switch, window),
        }
        for tau in taus:
            scored[f"naive tau={tau:g}"] = score_switches(rep.naive_alarms(tau), rep.hidden_switch, window)
        for name, sc in scored.items():
            totals[name] = totals[name] + sc if name in totals else sc
        episodes += 1
    return SwitchReport(totals, episodes, window)
