"""The result line the controller reads, and the errno values a probe may report.

NOTE: a run starts the worker some sixty times, and its imports are most of what a start
costs, so the worker's modules import at run time only what they run. Names needed only in
annotations are imported under TYPE_CHECKING, a constant mypy reads as true: importing
``typing`` alone would add several milliseconds to every tool process.
"""

from __future__ import annotations

import errno
import sys

# The C string escaper json.dumps itself uses. Importing json would bring in re, enum and
# collections: about 4.5 ms of a 15 ms tool start, for one line written with fixed types.
from _json import encode_basestring_ascii

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    Result: TypeAlias = dict[str, Any]
    Action: TypeAlias = Callable[[list[str]], Result]

RESULT_PREFIX = "ANALYST_RESULT "


def emit(action: str, result: Result) -> None:
    """Writes the single result line; the controller ignores every other line of output."""
    payload = {"action": action, **result, "peak_rss_kib": _peak_rss_kib()}
    sys.stdout.write(RESULT_PREFIX + to_json(payload) + "\n")
    sys.stdout.flush()


def to_json(value: object) -> str:
    """The text ``json.dumps(value, sort_keys=True)`` gives, for the types a result holds:
    None, bool, int, float, str, and lists, tuples and str-keyed dicts of them. Anything else
    raises TypeError, as json.dumps would. The tests compare the two on every kind of value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_json(item) for item in value) + "]"
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("a result's keys are strings")
        items = sorted(value.items())
        return "{" + ", ".join(f"{to_json(k)}: {to_json(v)}" for k, v in items) + "}"
    raise TypeError(f"a result holds no {type(value).__name__}")


def _float_text(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _peak_rss_kib() -> int | None:
    """This program's own high-water mark, for the benchmark's memory figure.

    VmHWM belongs to the address space exec created, unlike getrusage's ru_maxrss, which
    keeps the peak of whatever process forked this one. None where /proc is not readable.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def ok(**fields: Any) -> Result:
    return {"ok": True, "errno": None, **fields}


def errno_name(number: int) -> str:
    """The errno's name as the kernel's errno.h spells the value it returned.

    Python names 95 ENOTSUP (an alias on Linux); the kernel returns it as EOPNOTSUPP.
    """
    if number == errno.EOPNOTSUPP:
        return "EOPNOTSUPP"
    return errno.errorcode.get(number, str(number))


def refused(error: OSError, **fields: Any) -> Result:
    """The operation was attempted and the kernel said no; the errno is the whole answer."""
    return {"ok": False, "errno": errno_name(error.errno or 0), **fields}
