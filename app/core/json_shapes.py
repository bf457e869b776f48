"""The shapes a tool's JSON values are declared in, and the one check that holds a value to its
shape: every field there with its JSON type, nested ones too, every number within its bound,
and no field the shape does not name (app/core/result_shapes.py declares each action's)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, cast

from app.core.errnos import Errno
from app.core.escaping import escaped

# How much of a wrong value a stop line shows: enough to recognise it, never a flood.
_SHOWN_CHARACTERS: Final = 60
_ERRNO_NAMES: Final = frozenset(Errno)
# The fields an operation's result has besides its form's own: a nested one's (each of
# proxy-requests' requests), and the whole line's.
_OUTCOME_FIELDS: Final = frozenset({"ok", "errno"})
_LINE_FIELDS: Final = _OUTCOME_FIELDS | {"action", "peak_rss_kib"}


@dataclass(frozen=True)
class Scalar:
    """A JSON string, integer or boolean (an integer is never a boolean, as in JSON)."""

    name: str
    accepts: Callable[[object], bool]


@dataclass(frozen=True)
class ListOf:
    item: Shape


@dataclass(frozen=True)
class MapOf:
    """An object whose keys the action chooses, every value of one shape."""

    value: Shape


@dataclass(frozen=True)
class Fields:
    """An object with exactly these fields, each of its shape."""

    fields: Mapping[str, Shape]


@dataclass(frozen=True)
class Nullable:
    inner: Shape


@dataclass(frozen=True)
class Outcome:
    """A nested result of one operation, as the worker's ok() and refused() build it: ``ok``
    and ``errno`` agree (an errno name exactly when not ok), then the form's own fields."""

    ok: Fields
    refused: Fields | None


@dataclass(frozen=True)
class Bounded:
    """A JSON integer from ``low`` to ``high()`` (read when a line is checked: a bound from the
    tool limits is the committed file's), ``what`` saying where the bound comes from."""

    low: int
    high: Callable[[], int]
    what: str


Shape = Scalar | ListOf | MapOf | Fields | Nullable | Outcome | Bounded

STRING: Final = Scalar("a string", lambda value: isinstance(value, str))
_ANY_INTEGER: Final = Scalar(
    "an integer", lambda value: isinstance(value, int) and not isinstance(value, bool)
)


def within(low: int, high: int, what: str) -> Bounded:
    return Bounded(low, lambda: high, what)


BOOLEAN: Final = Scalar("a boolean", lambda value: isinstance(value, bool))
NO_FIELDS: Final = Fields({})


def shown_value(value: object) -> str:
    """A value from a tool's line as a stop line may show it: its repr, cut short, escaped."""
    text = repr(value)
    if len(text) > _SHOWN_CHARACTERS:
        text = text[:_SHOWN_CHARACTERS] + "..."
    return escaped(text)


def _at(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _whole(path: str) -> str:
    return path or "the result"


def _envelope(path: str) -> frozenset[str]:
    return _OUTCOME_FIELDS if path else _LINE_FIELDS


def _kind(shape: Shape) -> str:
    if isinstance(shape, Scalar):
        return shape.name
    if isinstance(shape, Bounded):
        return _ANY_INTEGER.name
    if isinstance(shape, ListOf):
        return "a list"
    if isinstance(shape, Nullable):
        return f"{_kind(shape.inner)} or null"
    return "an object"


def outcome_problem(
    document: Mapping[str, object], ok_form: Fields, refused_form: Fields | None, path: str
) -> str | None:
    """What is wrong with one operation's result (its ok and errno, then its form's fields)."""
    for name in ("ok", "errno"):
        if name not in document:
            return f"{_at(path, name)} is missing"
    ok, errno = document["ok"], document["errno"]
    if not isinstance(ok, bool):
        return f"{_at(path, 'ok')} is {shown_value(ok)}, not a boolean"
    if ok != (errno is None):
        return f"{_whole(path)} says ok={ok} with errno {shown_value(errno)}"
    if ok:
        return _fields_problem(ok_form, document, path, _envelope(path))
    if not isinstance(errno, str) or errno not in _ERRNO_NAMES:
        return f"{_at(path, 'errno')} is {shown_value(errno)}, not an errno name"
    if refused_form is None:
        return f"{_whole(path)} reports a refusal ({errno}), which this action never does"
    return _fields_problem(refused_form, document, path, _envelope(path))


def _fields_problem(
    shape: Fields, value: Mapping[str, object], path: str, envelope: frozenset[str] = frozenset()
) -> str | None:
    """What is wrong with an object's fields: one the shape names missing or not of its shape,
    or one it does not name (other than the ``envelope``'s, checked by the caller)."""
    unknown = set(value) - set(shape.fields) - envelope
    if unknown:
        return f"{_whole(path)} has an undeclared field {shown_value(min(unknown))}"
    for name, inner in shape.fields.items():
        place = _at(path, name)
        if name not in value:
            return f"{place} is missing (expected {_kind(inner)})"
        problem = value_problem(inner, value[name], place)
        if problem is not None:
            return problem
    return None


def value_problem(shape: Shape, value: object, path: str) -> str | None:
    """What is wrong with ``value`` for ``shape`` (the first problem found), naming the place
    by ``path`` ("comparison.suppliers[0].id"); None when it fits."""
    if isinstance(shape, Nullable):
        return None if value is None else value_problem(shape.inner, value, path)
    if isinstance(shape, Scalar):
        return None if shape.accepts(value) else f"{path} is {shown_value(value)}, not {shape.name}"
    if isinstance(shape, Bounded):
        problem = value_problem(_ANY_INTEGER, value, path)
        high = shape.high()
        if problem is not None or shape.low <= cast(int, value) <= high:
            return problem
        return f"{path} is {shown_value(value)}, beyond {shape.what}: {shape.low} to {high}"
    if isinstance(shape, ListOf):
        if not isinstance(value, list):
            return f"{path} is {shown_value(value)}, not a list"
        for index, item in enumerate(value):
            problem = value_problem(shape.item, item, f"{path}[{index}]")
            if problem is not None:
                return problem
        return None
    if not isinstance(value, dict):
        return f"{path} is {shown_value(value)}, not an object"
    if isinstance(shape, MapOf):
        for key, item in value.items():
            problem = value_problem(shape.value, item, f"{path}[{shown_value(key)}]")
            if problem is not None:
                return problem
        return None
    if isinstance(shape, Outcome):
        return outcome_problem(value, shape.ok, shape.refused, path)
    return _fields_problem(shape, value, path)
