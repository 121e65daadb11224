"""Validated models whose bad values raise beliefgate's own errors, not pydantic's.

:class:`CheckedModel` is the one base of every configuration and specification model
(``GateParams``, ``FitConfig``, ``KappaParams``, ``KappaFitConfig``, ``OverForgeConfig``,
``GridSpec``, ``PartnerSpec`` ...): every construction path -- ``Model(**values)``,
``model_validate``, ``model_validate_json``, ``model_validate_strings``, :meth:`CheckedModel.from_data`,
``model_copy(update=...)``, ``replace`` and assignment -- raises its class's
:attr:`CheckedModel.error_type` (a ``ValueError`` under :class:`beliefgate.errors.BeliefgateError`)
instead of letting pydantic's ``ValidationError`` escape.

:func:`param_error` is the one conversion of a ``ValidationError`` into such an error: one line
naming the field and the bad value, ``hazard: Input should be less than or equal to 1, got 2``
(the first error, the others counted; or every error, ``; ``-joined), an unknown field listed with
the fields its model has, optionally after the ``source`` it came from (a file, an option string).
:func:`describe` is the same message without the error (for a message of one's own).

Validation of a model *nested* in another (a request body's ``params``) is pydantic's own and
still ends in the outer model's ``ValidationError``, so the HTTP service answers it with its
422 ``validation_error`` as before.
"""

from __future__ import annotations

import types
from typing import (Annotated, Any, ClassVar, List, Mapping, NamedTuple, Optional, Sequence, Type, TypeVar, Union,
                    get_args, get_origin)

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
    """A ``ValidationError`` in one line: the first error's field and reason, and the message."""

    field: Optional[str]
    reason: str
    message: str


def _model_in(annotation: Any, loc: Sequence[Any]) -> Optional[type]:
    """The pydantic model a location ``loc`` inside a value of type ``annotation`` ends in
    (through lists, tuples, dicts, unions and Optional), or ``None`` where it leaves the models."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _model_in(args[0], loc)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if not loc:
            return annotation
        field = annotation.model_fields.get(loc[0]) if isinstance(loc[0], str) else None
        return None if field is None else _model_in(field.annotation, loc[1:])
    if origin in (Union, types.UnionType):  # Optional[M] too
        members = [a for a in args if a is not type(None)]
        tagged = [a for a in members if loc and getattr(a, "__name__", None) == loc[0]]  # pydantic's member tag
        if tagged:
            return _model_in(tagged[0], loc[1:])
        found = [m for m in (_model_in(a, loc) for a in members) if m is not None]
        return found[0] if found else None
    if not loc:
        return None
    if origin in (list, tuple, set, frozenset) and isinstance(loc[0], int) and args:
        return _model_in(args[0], loc[1:])
    if origin is dict and len(args) == 2:
        return _model_in(args[1], loc[1:])
    return None


def fields_at(model: Optional[type], loc: Sequence[Any]) -> List[str]:
    """The field names of the model that holds the last part of ``loc`` (an error's location in
    ``model``): what an unknown field could have been. Empty where that model is not found."""
    holder = _model_in(model, tuple(loc)[:-1]) if model is not None and loc else None
    return list(holder.model_fields) if holder is not None else []


def _problem(error: Mapping[str, Any], owner: Optional[str], model: Optional[type]) -> Problem:
    """One pydantic error as ``field: reason, got value`` (``owner: reason`` without a field)."""
    loc = tuple(error.get("loc", ()))
    field = ".".join(str(p) for p in loc) or None
    reason = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    known = fields_at(model, loc) if error.get("type") == "extra_forbidden" else []
    if known:
        reason = f"unknown field (fields: {', '.join(known)})"
    message = f"{field}: {reason}" if field is not None else f"{owner}: {reason}" if owner else reason
    # the input of a missing field is the whole mapping, of a field-less (model) error too, and of
    # a nested model's own rule (``gate.changepoint: release ... must not exceed ...``): not shown
    whole = error.get("type") == "value_error" and model is not None and _model_in(model, loc) is not None
    if field is not None and "input" in error and error.get("type") != "missing" and not whole:
        value = error["input"]
        if ", got " not in reason:
            message += f", got {value!r}"
        elif reason.rpartition(", got ")[2] not in (repr(value), str(value)):
            # the reason says "got" something other than the value ("got a number with a fractional part")
            message += f" ({value!r})"
    return Problem(field, reason, message)


def describe(exc: ValidationError, owner: Optional[str] = "params", *, model: Optional[type] = None,
             all_errors: bool = False, source: Optional[str] = None) -> Problem:
    """``exc`` in one line: ``field: reason, got value`` for the first error, the others counted
    (``(and 2 more errors)``), or with ``all_errors`` every error, ``; ``-joined.

    An error without a field (a rule across fields, unreadable JSON) is named after ``owner`` and
    shows no input (it would be the whole mapping). An unknown field lists the fields of its model
    when ``model`` (the validated class) is given. With ``source`` the line starts ``source: ``
    and a field-less error is not named after ``owner``.
    """
    owner = None if source is not None else owner
    errors = exc.errors()
    if not errors:
        text = str(exc).replace("\n", " ")
        return Problem(None, text, f"{source or owner}: {text}" if source or owner else text)
    problems = [_problem(e, owner, model) for e in (errors if all_errors else errors[:1])]
    message = "; ".join(p.message for p in problems)
    if not all_errors and len(errors) > 1:
        message += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
    if source is not None:
        message = f"{source}: {message}"
    return Problem(problems[0].field, problems[0].reason, message)


def first_problem(exc: ValidationError, owner: str = "params") -> Problem:
    """The first error of ``exc`` as one line, the others counted: :func:`describe` with its defaults."""
    return describe(exc, owner)


def param_error(exc: ValidationError, error: Type[E], owner: Optional[str] = "params", *,
                model: Optional[type] = None, all_errors: bool = False, source: Optional[str] = None,
                kinds: Optional[Mapping[str, type]] = None) -> E:
    """``exc`` as an ``error``: the one conversion of a pydantic ``ValidationError`` into
    beliefgate's one-line error (message: :func:`describe`, same arguments).

    ``kinds`` maps pydantic error types (``extra_forbidden``, a custom ``partner_weight``) to
    subclasses of ``error``: the first error of such a type picks the class raised. The error's
    ``field`` and ``reason`` attributes are the first error's, as :class:`ParamError` defines them.
    """
    problem = describe(exc, owner, model=model, all_errors=all_errors, source=source)
    chosen = next((kinds[e.get("type")] for e in exc.errors() if e.get("type") in (kinds or {})), error)
    out = chosen(problem.message)
    out.field = problem.field
    out.reason = problem.reason
    return out


class CheckedModel(BaseModel):
    """A pydantic model whose construction raises :attr:`error_type`, never ``ValidationError``.

    A subclass sets :attr:`error_type` (and, where its errors come in kinds, :attr:`error_kinds`;
    where a file's every mistake should be listed at once, :attr:`all_errors`); the message is
    :func:`param_error`'s. Field-less errors are named after the class, or after the ``source``
    given to :meth:`from_data`.
    """

    #: the error every construction path raises (a ParamError, or another class under
    #: BeliefgateError and ValueError taking the message)
    error_type: ClassVar[Type[Exception]] = ParamError
    #: pydantic error types mapped to subclasses of :attr:`error_type` (``extra_forbidden``:
    #: an unknown-field error class); the first error of such a type picks the class raised
    error_kinds: ClassVar[Mapping[str, Type[Exception]]] = {}
    #: list every error (``; ``-joined) instead of the first with the others counted
    all_errors: ClassVar[bool] = False

    def __init__(self, /, **data: Any):
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise type(self).validation_error(exc) from None

    # Marked as pydantic's own __init__ (as pydantic's RootModel marks its): validation then
    # never calls it, so a CheckedModel nested in another model (a request's ``params``) keeps
    # pydantic's per-field errors (``params.hazard``) instead of one wrapped "Value error".
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def validation_error(cls, exc: ValidationError, source: Optional[str] = None) -> Exception:
        """``exc`` (raised validating this class) as this class's one-line error (:func:`param_error`)."""
        return param_error(exc, cls.error_type, cls.__name__, model=cls, all_errors=cls.all_errors,
                           source=source, kinds=cls.error_kinds)

    @classmethod
    def _checked(cls: Type[M], validate, obj: Any, options: dict, source: Optional[str] = None) -> M:
        try:
            return validate(obj, **options)
        except ValidationError as exc:
            raise cls.validation_error(exc, source) from None

    @classmethod
    def model_validate(cls: Type[M], obj: Any, **options: Any) -> M:
        return cls._checked(super().model_validate, obj, options)

    @classmethod
    def model_validate_json(cls: Type[M], json_data: Any, **options: Any) -> M:
        return cls._checked(super().model_validate_json, json_data, options)

    @classmethod
    def model_validate_strings(cls: Type[M], obj: Any, **options: Any) -> M:
        return cls._checked(super().model_validate_strings, obj, options)

    @classmethod
    def from_data(cls: Type[M], data: Any, source: Optional[str] = None) -> M:
        """``model_validate(data)`` whose error message starts with ``source: `` (the file or the
        option string the data came from) when given."""
        return cls._checked(super().model_validate, data, {}, source)

    def __setattr__(self, name: str, value: Any) -> None:
        # a frozen model's assignment raised pydantic's multi-line ValidationError, outside BeliefgateError
        try:
            super().__setattr__(name, value)
        except ValidationError as exc:
            raise type(self).validation_error(exc) from None

    def model_copy(self: M, *, update: Optional[dict] = None, deep: bool = False) -> M:
        """A copy; with ``update``, a *validated* one (pydantic's own copy would skip validation)."""
        if not update:
            return super().model_copy(deep=deep)
        return type(self)(**{**self.model_dump(), **update})

    def replace(self: M, **changes: Any) -> M:
        """A validated copy with some fields changed."""
        return self.model_copy(update=changes)


__all__ = ["CheckedModel", "ParamError", "Problem", "describe", "fields_at", "first_problem", "param_error", "repeats"]


def repeats(values, key=None) -> list:
    """``[(canonical, [spellings...]), ...]`` for every value given more than once (compared by
    ``key``: a layout's alias, a file's resolved path), in first-seen order; ``[]`` when all differ."""
    groups: dict = {}
    for v in values or ():
        groups.setdefault(key(v) if key is not None else v, []).append(v)
    return [(k, vs) for k, vs in groups.items() if len(vs) > 1]
