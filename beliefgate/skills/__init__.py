"""Skill libraries as data (see :mod:`beliefgate.skills.library`)."""

from beliefgate.skills.library import (
    SkillLibrary,
    SkillLibraryError,
    SkillSpec,
    UnknownSkillError,
    load_builtin,
)

__all__ = ["SkillLibrary", "SkillLibraryError", "SkillSpec", "UnknownSkillError", "load_builtin"]
