"""The result line the controller reads, and the errno values a probe may report."""

from __future__ import annotations

import errno
import json
import resource
import sys
from collections.abc import Callable
from typing import Any

Result = dict[str, Any]
Action = Callable[[list[str]], Result]

RESULT_PREFIX = "ANALYST_RESULT "


def emit(action: str, result: Result) -> None:
    """Writes the single result line; the controller ignores every other line of output."""
    # The process's own peak resident set, for the benchmark's memory figure (KiB on Linux).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    payload = {"action": action, **result, "peak_rss_kib": peak}
    sys.stdout.write(RESULT_PREFIX + json.dumps(payload, sort_keys=True) + "\n")
    sys.stdout.flush()


def ok(**fields: Any) -> Result:
    return {"ok": True, "errno": None, **fields}


def refused(error: OSError, **fields: Any) -> Result:
    """The operation was attempted and the kernel said no; the errno is the whole answer."""
    name = errno.errorcode.get(error.errno or 0, str(error.errno))
    return {"ok": False, "errno": name, **fields}
