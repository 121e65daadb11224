"""PPO in JAX on JaxMARL's OvercookedV2 dynamics: self-play (``sp``), behaviour-preference agents
trained with event-reward shaping (``bp``) and fictitious co-play (``fcp``), shipped as small
checkpoints with a JSON card.

* :mod:`beliefgate.rl.layouts` -- ``v2/<name>`` layout names (one resolver function);
* :mod:`beliefgate.rl.config` -- :class:`PPOConfig` and the game's events;
* :mod:`beliefgate.rl.events` -- per-player events derived from state pairs (jittable);
* :mod:`beliefgate.rl.ppo` -- the trainer (vmapped envs, ``lax.scan`` rollouts, GAE, clipped loss);
* :mod:`beliefgate.rl.cli` -- ``beliefgate train ppo``.

The network, the policy files with their cards (and the resumable training state's atomic writes) and
:func:`load_policy` are the OvercookedV2 domain's data, in :mod:`beliefgate.envs.overcooked_v2.policies`
(no training code there), so trained partners load without this package.

Nothing here is imported by the package root: JAX loads only when training or loading a policy.
"""
