"""Quickstart: plug the beliefgate Gate into your own agent (pure NumPy toy domain).

A partner walks on a 5 x 5 grid. It has three skills, each a target cell it walks
to and interacts with: ``fetch`` (top-left), ``cook`` (centre), ``serve``
(bottom-right). Halfway to the fetch target it silently changes its mind and
heads for serve. The ego only sees the partner's moves.

Each step the caller supplies what the Gate needs: a [skills x actions] table of
action log-probabilities (here a Boltzmann-rational controller over "progress
towards the skill's target") and the index of the action the partner took. The
Gate returns the posterior over skills and an ``interrupt`` flag: the partner did
something unlikely under a skill the belief had been confident about for a
while, so the ego should drop its current plan and replan.

Run:  python docs/examples/gate_quickstart.py
"""

from __future__ import annotations

import numpy as np

from beliefgate import Gate, GateParams
from beliefgate.models.controllers import boltzmann_logprobs

SKILLS = ["fetch", "cook", "serve"]
TARGETS = {"fetch": (0, 0), "cook": (2, 2), "serve": (4, 4)}
ACTIONS = ["up", "down", "left", "right", "interact"]
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1), "interact": (0, 0)}
SIZE = 5


def step_pos(pos, action):
    dr, dc = MOVES[action]
    return (min(max(pos[0] + dr, 0), SIZE - 1), min(max(pos[1] + dc, 0), SIZE - 1))


def distance(a, b):
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def action_values(pos):
    """Q[k, a]: minus the distance left to skill k's target after action a (0 for a useful interact)."""
    q = np.empty((len(SKILLS), len(ACTIONS)))
    for k, skill in enumerate(SKILLS):
        target = TARGETS[skill]
        for a, action in enumerate(ACTIONS):
            if action == "interact":
                q[k, a] = 0.0 if pos == target else -(1.0 + distance(pos, target))
            else:
                q[k, a] = -(1.0 + distance(step_pos(pos, action), target))
    return q


def partner_action(pos, skill, rng, beta=3.0, epsilon=0.05):
    """The partner samples from the same kind of controller (a rational-ish teammate)."""
    logp = boltzmann_logprobs(action_values(pos), beta, epsilon)[SKILLS.index(skill)]
    return int(rng.choice(len(ACTIONS), p=np.exp(logp)))


def main() -> int:
    rng = np.random.default_rng(3)
    params = GateParams(hazard=0.05, beta=3.0, epsilon=0.05, tau_obs=0.1, confidence_floor=0.6,
                        n_stable=3, cooldown=5)
    gate = Gate.from_logprobs(len(SKILLS), params, skill_names=SKILLS)
    pos, skill = (2, 4), "fetch"
    interrupts = []
    print(f"{'t':>2}  {'pos':>6}  {'action':>8}  {'MAP before -> after':>19}  {'conf':>5}  {'l_t':>5}  decision")
    for t in range(16):
        if t == 4:
            skill = "serve"  # the partner changes its mind, nothing visible happens
        table = boltzmann_logprobs(action_values(pos), params.beta, params.epsilon)
        a = partner_action(pos, skill, rng, params.beta, params.epsilon)
        d = gate.step(table, a)
        info = d.info
        if d.interrupt:
            verdict = "INTERRUPT: replan now"
            interrupts.append(t)
            gate.notify_replanned()  # our agent replans; the cooldown starts now
        elif d.contradiction:
            verdict = f"contradiction, suppressed ({info.suppressed_reason})"
        else:
            verdict = ""
        judged = f"{SKILLS[info.map_skill]} -> {d.map_name}"
        print(f"{t:>2}  {str(pos):>6}  {ACTIONS[a]:>8}  {judged:>19}  {info.confidence:5.2f}  "
              f"{info.l_t:5.2f}  {verdict}")
        pos = step_pos(pos, ACTIONS[a])
    print("final posterior:", {k: round(float(p), 3) for k, p in zip(SKILLS, d.posterior)})
    print("interrupts at steps:", interrupts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
