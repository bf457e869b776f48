"""The result line the controller reads, and the errno values a probe may report.

NOTE: a run starts the worker some sixty times, and its imports are most of what a start
costs, so the worker's modules import at run time only what they run: the action's own
module (__main__.py; every action module at once would make an env-names start 149 million
instructions rather than 45), and what only some actions need, where they need it.
"""

from __future__ import annotations

import errno
import json
import sys
from collections.abc import Callable

Result = dict[str, object]
Action = Callable[[list[str]], Result]

RESULT_PREFIX = "ANALYST_RESULT "


def emit(action: str, result: Result) -> None:
    """Writes the single result line; the controller ignores every other line of output."""
    payload = {"action": action, **result, "peak_rss_kib": _peak_rss_kib()}
    sys.stdout.write(RESULT_PREFIX + json.dumps(payload, sort_keys=True) + "\n")
    sys.stdout.flush()


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
