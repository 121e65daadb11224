"""The generative model and its components: skill prior, transitions, controllers, the forward step, fitting and kappa; the goal model above the skill chain (:mod:`beliefgate.models.goal`)."""
