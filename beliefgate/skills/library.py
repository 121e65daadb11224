"""Skill libraries as data.

A skill library lists the temporally extended skills a partner may execute,
each with its role, the held object it requires, a *named* target predicate
(resolved by the domain) and a *named* completion event (detected by the
domain). A complementary-role table says which roles of the ego complement a
partner role; a skill in the partner's own role is never complementary.

Libraries load from JSON or YAML and are validated by pydantic; unknown
fields, duplicate or unknown skills and bad roles are rejected with a
:class:`SkillLibraryError` naming the problem.
"""

from __future__ import annotations
from beliefgate.errors import InputError, LookupFailure
from beliefgate.validation import param_error

import json
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Dict, List, Tuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class SkillLibraryError(InputError):
    """A skill library file or object is malformed."""


class UnknownSkillError(LookupFailure):
    """A skill name or index that the library does not define."""

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0]) if self.args else "unknown skill"


class SkillSpec(BaseModel):
    """One skill: its name, role, held-object requirement, targets and completion event."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    role: str
    requires: str = Field(
        default="none",
        description="held object required: 'empty', 'any' (non-empty), 'none' (no requirement) or an object name",
    )
    targets: str = Field(default="", description="name of the domain's target predicate")
    completion: str = Field(default="", description="name of the domain's completion event")
    description: str = ""


class SkillLibrary(BaseModel):
    """An ordered skill library; skill indices are positions in ``skills``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    domain: str
    description: str = ""
    roles: List[str]
    held_objects: List[str] = Field(default_factory=list)
    skills: List[SkillSpec] = Field(min_length=1)
    complementary: Dict[str, List[str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> "SkillLibrary":
        if len(set(self.roles)) != len(self.roles):
            raise ValueError(f"duplicate role in roles {self.roles}")
        names = [s.name for s in self.skills]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate skill name(s): {', '.join(dupes)}")
        allowed_req = {"empty", "any", "none", *self.held_objects}
        for s in self.skills:
            if s.role not in self.roles:
                raise ValueError(f"skill {s.name!r} has unknown role {s.role!r}; roles are {self.roles}")
            if s.requires not in allowed_req:
                raise ValueError(
                    f"skill {s.name!r} requires unknown held object {s.requires!r}; "
                    f"allowed: {sorted(allowed_req)}"
                )
        for role, comp in self.complementary.items():
            if role not in self.roles:
                raise ValueError(f"complementary table names unknown role {role!r}")
            bad = [r for r in comp if r not in self.roles]
            if bad:
                raise ValueError(f"complementary[{role!r}] names unknown role(s) {bad}")
            if role in comp:
                raise ValueError(f"role {role!r} cannot be complementary to itself")
        return self

    # ------------------------------------------------------------------ lookup
    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(s.name for s in self.skills)

    @property
    def num_skills(self) -> int:
        return len(self.skills)

    @cached_property
    def _index(self) -> Dict[str, int]:
        return {s.name: i for i, s in enumerate(self.skills)}

    def index(self, skill: str | int) -> int:
        """Index of a skill given its name or index; raises :class:`UnknownSkillError`."""
        if isinstance(skill, bool):
            raise UnknownSkillError(f"unknown skill {skill!r}")
        if isinstance(skill, int):
            if 0 <= skill < self.num_skills:
                return skill
            raise UnknownSkillError(f"skill index {skill} out of range 0..{self.num_skills - 1}")
        try:
            return self._index[skill]
        except KeyError:
            raise UnknownSkillError(
                f"unknown skill {skill!r}; this library has {', '.join(self.names)}"
            ) from None

    def __getitem__(self, skill: str | int) -> SkillSpec:
        return self.skills[self.index(skill)]

    def role_of(self, skill: str | int) -> str:
        return self[skill].role

    def is_complementary(self, ego_skill: str | int, partner_skill: str | int) -> bool:
        """True when ``ego_skill`` complements a partner executing ``partner_skill``."""
        ego_role, partner_role = self.role_of(ego_skill), self.role_of(partner_skill)
        if ego_role == partner_role:
            return False
        return ego_role in self.complementary.get(partner_role, [])

    def complementary_skills(self, partner_skill: str | int) -> Tuple[str, ...]:
        """Names of the skills complementary to a partner skill, in library order."""
        return tuple(s.name for s in self.skills if self.is_complementary(s.name, partner_skill))

    def requirement_met(self, skill: str | int, held: str | None) -> bool:
        """Does a player holding ``held`` (None = empty hands) meet the skill's requirement?"""
        req = self[skill].requires
        if req == "none":
            return True
        if req == "empty":
            return held is None
        if req == "any":
            return held is not None
        return held == req

    # ---------------------------------------------------------------- loading
    @classmethod
    def from_dict(cls, data: dict) -> "SkillLibrary":
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise param_error(exc, SkillLibraryError, model=cls, all_errors=True,
                              source="invalid skill library") from None

    @classmethod
    def from_file(cls, path: str | Path) -> "SkillLibrary":
        """Load a library from a ``.json`` or ``.yaml``/``.yml`` file."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise SkillLibraryError(f"cannot read skill library {path}: {exc}") from exc
        if path.suffix in {".yaml", ".yml"}:
            import yaml

            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise SkillLibraryError(f"{path}: not valid YAML: {exc}") from exc
        else:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise SkillLibraryError(f"{path}: not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise SkillLibraryError(f"{path}: top level must be a mapping")
        return cls.from_dict(data)

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)


def load_builtin(name: str = "overcooked") -> SkillLibrary:
    """Load a library shipped with beliefgate (``beliefgate/skills/data/NAME.json``)."""
    try:
        text = resources.files("beliefgate.skills").joinpath("data", f"{name}.json").read_text()
    except FileNotFoundError:
        raise SkillLibraryError(f"no built-in skill library named {name!r}") from None
    return SkillLibrary.from_dict(json.loads(text))
