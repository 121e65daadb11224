"""Trained policies as domain data: the actor-critic network, policy files with their cards, and the
jitted loader. The training code (:mod:`beliefgate.rl`) imports these; nothing here imports it, so a
trained partner (:mod:`beliefgate.envs.overcooked_v2.trained_agents`) loads a policy without the
trainer and without a cycle between ``envs`` and ``rl``."""
