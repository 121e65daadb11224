"""Validated parameter models whose bad values raise beliefgate's own errors, not pydantic's.

:class:`CheckedModel` is a pydantic model (``GateParams``, ``FitConfig``, ``KappaParams``)
whose every construction path -- ``Model(**values)``, ``model_validate``,
``model_validate_json``, ``model_validate_strings``, ``model_copy(update=...)`` and
``replace`` -- raises its class's :attr:`CheckedModel.error_type` (a ``ValueError`` under
:class:`beliefgate.errors.BeliefgateError`) instead of letting pydantic's ``ValidationError``
escape. :func:`param_error` turns a ``ValidationError`` into such an error: one line naming the
field and the bad value, ``hazard: Input should be less than or equal to 1, got 2``.

Validation of a model *nested* in another (a request body's ``params``) is pydantic's own and
still ends in the outer model's ``ValidationError``, so the HTTP service answers it with its
422 ``validation_error`` as before.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple, Optional, Type, TypeVar

from pydantic import BaseModel, ValidationError

from beliefgate.errors import InputError

E = TypeVar("E", bound=Exception)
M = TypeVar("M", bound="CheckedModel")


class ParamError(InputError):
    """A bad field of a validated parameter model. ``field`` names it (``None`` when the
    problem involves several fields), ``reason`` is pydantic's message without the field."""

    def __init__(self, message: str, field: Optional[str] = None):
        super().__init__(message)
        self.field = field
        self.reason = message


class Problem(NamedTuple):
    """The first error of a ``ValidationError``: where, why, and the one-line message."""

    field: Optional[str]
    reason: str
    message: str


def first_problem(exc: ValidationError, owner: str = "params") -> Problem:
    """The first error of ``exc`` as one line: ``field: reason, got value``.

    A model-level error (no field: a rule across fields, unreadable JSON) is named after
    ``owner`` and shows no input (it would be the whole mapping); further errors are
    counted, ``(and 2 more errors)``.
    """
    errors = exc.errors()
    if not errors:
        return Problem(None, str(exc), f"{owner}: {exc}")
    first = errors[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or None
    reason = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    message = f"{field or owner}: {reason}"
    if field is not None and "input" in first:  # pydantic's reason may itself say "got ...": then the value alone
        message += f" ({first['input']!r})" if ", got " in reason else f", got {first['input']!r}"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
    return Problem(field, reason, message)


def param_error(exc: ValidationError, error: Type[E], owner: str = "params") -> E:
    """``error(message, field)`` for the first error of ``exc`` (see :func:`first_problem`);
    its ``field`` and ``reason`` attributes are set as :class:`ParamError` defines them."""
    problem = first_problem(exc, owner)
    out = error(problem.message, problem.field)
    out.field = problem.field
    out.reason = problem.reason
    return out


class CheckedModel(BaseModel):
    """A pydantic model whose construction raises :attr:`error_type`, never ``ValidationError``."""

    #: the error every construction path raises (a ParamError, or another class taking
    #: ``(message, field)``, also under BeliefgateError and ValueError)
    error_type: ClassVar[Type[Exception]] = ParamError

    def __init__(self, /, **data: Any):
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise param_error(exc, self.error_type, type(self).__name__) from None

    # Marked as pydantic's own __init__ (as pydantic's RootModel marks its): validation then
    # never calls it, so a CheckedModel nested in another model (a request's ``params``) keeps
    # pydantic's per-field errors (``params.hazard``) instead of one wrapped "Value error".
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def _checked(cls: Type[M], validate, obj: Any, options: dict) -> M:
        try:
            return validate(obj, **options)
        except ValidationError as exc:
            raise param_error(exc, cls.error_type, cls.__name__) from None

    @classmethod
    def model_validate(cls: Type[M], obj: Any, **options: Any) -> M:
        return cls._checked(super().model_validate, obj, options)

    @classmethod
    def model_validate_json(cls: Type[M], json_data: Any, **options: Any) -> M:
        return cls._checked(super().model_validate_json, json_data, options)

    @classmethod
    def model_validate_strings(cls: Type[M], obj: Any, **options: Any) -> M:
        return cls._checked(super().model_validate_strings, obj, options)

    def __setattr__(self, name: str, value: Any) -> None:
        # a frozen model's assignment raised pydantic's multi-line ValidationError, outside BeliefgateError
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            raise param_error(exc, self.error_type, type(self).__name__) from None

    def model_copy(self: M, *, update: Optional[dict] = None, deep: bool = False) -> M:
        """A copy; with ``update``, a *validated* one (pydantic's own copy would skip validation)."""
        if not update:
            return super().model_copy(deep=deep)
        return type(self)(**{**self.model_dump(), **update})

    def replace(self: M, **changes: Any) -> M:
        """A validated copy with some fields changed."""
        return self.model_copy(update=changes)


__all__ = ["CheckedModel", "ParamError", "Problem", "first_problem", "param_error", "repeats"]


def repeats(values, key=None) -> list:
    """``[(canonical, [spellings...]), ...]`` for every value given more than once (compared by
    ``key``: a layout's alias, a file's resolved path), in first-seen order; ``[]`` when all differ."""
    groups: dict = {}
    for v in values or ():
        groups.setdefault(key(v) if key is not None else v, []).append(v)
    return [(k, vs) for k, vs in groups.items() if len(vs) > 1]
