"""The controller's own entry point, held still right after chosen check lines, so that a fault
test can look at the run or hurt it at exactly those points instead of racing it there.

Test-only. ``ANALYST_TEST_PAUSE_AT`` holds patterns, one per line, for the checks to hold at, in
order, each matched against ``<outcome> <check id>`` ("PASS files.supplier-key.control"). After
the n-th such check the controller prints ``test-pause: <its line>`` and waits (its signal
handlers stay live) until the file ``<ANALYST_TEST_RESUME_FILE>.<n>`` exists. Nothing of the
controller is changed but the one method that prints a check line, which is wrapped.
"""

from __future__ import annotations

import os
import re
import runpy
import sys
import time
from pathlib import Path

from app.core.catalogue import Claim
from app.core.checklog import CheckLog, CheckRecord, Outcome

PAUSES = [re.compile(p) for p in os.environ["ANALYST_TEST_PAUSE_AT"].splitlines()]
RESUME = os.environ["ANALYST_TEST_RESUME_FILE"]
_real_emit = CheckLog._emit
_held: list[str] = []


def _emit(self: CheckLog, claim: Claim, outcome: Outcome, detail: str) -> CheckRecord:
    record = _real_emit(self, claim, outcome, detail)
    if len(_held) == len(PAUSES) or not PAUSES[len(_held)].search(f"{outcome} {record.id}"):
        return record
    line = f"{record.outcome} {record.claim}"
    _held.append(line)
    print(f"test-pause: {line}", file=self.stream, flush=True)
    resume = Path(f"{RESUME}.{len(_held)}")
    while not resume.exists():
        time.sleep(0.01)
    return record


def install() -> None:
    """Wraps the method; support/hostile.py calls this too, to hold a hostile run still."""
    CheckLog._emit = _emit  # type: ignore[method-assign]


if __name__ == "__main__":
    install()
    sys.argv[0] = "app.controller"
    runpy.run_module("app.controller", run_name="__main__", alter_sys=True)
