"""Deprecated location: the scene serializer is part of the Overcooked domain (``Domain.scene_text``)."""

from beliefgate.envs.overcooked.scene import scene_text  # noqa: F401
