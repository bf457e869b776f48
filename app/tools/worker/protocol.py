"""The result line the controller reads, and the errno values a probe may report.

NOTE: a run starts the worker some sixty times, and its imports are most of what a start
costs, so the worker's modules import at run time only what they run: the action's own
module (__main__.py; every action module at once would make an env-names start 143 million
instructions rather than 25), and what only some actions need, where they need it.
"""

from __future__ import annotations

import errno
import sys

Result = dict[str, object]

RESULT_PREFIX = "ANALYST_RESULT "


def emit(action: str, result: Result) -> None:
    """Writes the single result line; the controller ignores every other line of output."""
    payload = {"action": action, **result, "peak_rss_kib": _peak_rss_kib()}
    sys.stdout.write(RESULT_PREFIX + to_json(payload) + "\n")
    sys.stdout.flush()


# The result line is written here rather than by json.dumps: importing json (and the re,
# enum and collections it brings) is 21 of the 46 million instructions an env-names start
# took with it, some 7 ms of a 32 ms plain start (bench.against, Debian 12's python3.11).
def to_json(value: object) -> str:
    """Exactly the text ``json.dumps(value, sort_keys=True)`` gives, errors included: None,
    bool, int, float (NaN and the infinities as json writes them), str (ASCII only, as with
    ensure_ascii), lists and tuples, and dicts whose keys are str, int, float, bool or None,
    sorted. Anything else raises TypeError, a container inside itself ValueError. The tests
    compare the two on every kind of value and on random ones."""
    return _encode(value, set())


def _encode(value: object, open_containers: set[int]) -> str:
    # The order of json's own encoder: bool before int, str before everything else.
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        _enter(value, open_containers)
        text = "[" + ", ".join([_encode(item, open_containers) for item in value]) + "]"
        open_containers.discard(id(value))
        return text
    if isinstance(value, dict):
        if not value:
            return "{}"
        _enter(value, open_containers)
        fields = [
            _quote(_key_text(key)) + ": " + _encode(item, open_containers)
            for key, item in sorted(value.items())
        ]
        open_containers.discard(id(value))
        return "{" + ", ".join(fields) + "}"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _enter(container: object, open_containers: set[int]) -> None:
    if id(container) in open_containers:
        raise ValueError("Circular reference detected")
    open_containers.add(id(container))


def _key_text(key: object) -> str:
    """A dict key as json writes it: a string, or the text of a number, bool or None, which is
    the text json gives that value anywhere (bool is an int)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (int, float)):
        return _encode(key, set())
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


# float's own repr, but for the three values JSON has no number for (json's allow_nan).
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def _float_text(value: float) -> str:
    text = float.__repr__(value)
    return _NON_FINITE.get(text, text)


# JSON's two-character escapes; every other character outside printable ASCII is \\uXXXX.
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}


def _quote(text: str) -> str:
    # str.__str__ gives a subclass's own characters, as json reads them, whatever it overrides.
    text = str.__str__(text)
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return '"' + text + '"'
    return '"' + "".join([_escape(char) for char in text]) + '"'


def _escape(char: str) -> str:
    if " " <= char <= "~":
        return _SHORT_ESCAPES.get(char, char)
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    # Beyond the BMP: the UTF-16 surrogate pair, as json writes it.
    code -= 0x10000
    return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"


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


def ok(**fields: object) -> Result:
    return {"ok": True, "errno": None, **fields}


def errno_name(number: int) -> str:
    """The errno's name as the kernel's errno.h spells the value it returned.

    Python names 95 ENOTSUP (an alias on Linux); the kernel returns it as EOPNOTSUPP.
    """
    if number == errno.EOPNOTSUPP:
        return "EOPNOTSUPP"
    return errno.errorcode.get(number, str(number))


def refused(error: OSError, **fields: object) -> Result:
    """The operation was attempted and the kernel said no; the errno is the whole answer."""
    return {"ok": False, "errno": errno_name(error.errno or 0), **fields}
