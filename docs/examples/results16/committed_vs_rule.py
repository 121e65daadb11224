"""Where OverForge's committed decisions disagree with the rule planner (a diagnosis, tuning seeds).

    python docs/examples/results16/committed_vs_rule.py coordination_ring plater overforge:uncommitted=rule \
        --seeds 1000 --seats 0

Plays the episodes, and at every OverForge decision also asks the agent's rule planner what it
would choose for the same state; prints the episode rewards, the decision counts (commit / unc,
``-int`` for interrupts, ``-differs`` where the played skill is not the rule planner's), and the
first committed disagreements with their judge values, rollout rounds and argmax probabilities.
"""

import argparse
import collections

from beliefgate.agents.overforge.agent import OverForgeAgent
from beliefgate.eval.episode import run_episode

parser = argparse.ArgumentParser()
parser.add_argument("layout")
parser.add_argument("partner")
parser.add_argument("ego")
parser.add_argument("--seeds", default="1000", help="comma-separated, >= 1000 for tuning")
parser.add_argument("--seats", default="0,1")
parser.add_argument("--show", type=int, default=4)
args = parser.parse_args()

stats: collections.Counter = collections.Counter()
examples = []
play = OverForgeAgent._plan


def traced(self, state, reason, interrupted):
    inp = self.planner_input(state, reason)
    rule = self.planner.choose(inp).skill if inp is not None else None
    play(self, state, reason, interrupted)
    rec = self.record  # this step's PCMDecision (None: nothing was feasible)
    if rec is None:
        return
    key = ("commit" if rec.committed else "unc") + ("-int" if interrupted else "")
    stats[key] += 1
    if rec.skill != rule:
        stats[key + "-differs"] += 1
        if rec.committed and len(examples) < args.show:
            logged = rec.to_log()
            examples.append({"t": state.timestep, "reason": reason, "rule": rule, "played": logged["best"],
                             "kappa": round(rec.kappa, 2), "branches": logged["branches"], "v_imm": logged["v_imm"],
                             "rounds": logged["rollouts"], "argmax": [round(p, 2) for p in rec.argmax]})


OverForgeAgent._plan = traced
rewards = [run_episode(args.layout, args.ego, args.partner, seed=int(seed), seat=int(seat)).summary["reward"]
           for seed in args.seeds.split(",") for seat in args.seats.split(",")]
print("rewards", rewards)
print(dict(stats))
for e in examples:
    print(e)
