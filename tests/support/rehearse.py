"""`python -m rehearsal` run as a reader would run it, in a process of its own, its output kept
in the test's log."""

from __future__ import annotations

import subprocess
import sys

from app.core.repo import REPO_ROOT

TIMEOUT_SECONDS = 600


def rehearse(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "rehearsal", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    print(done.stdout[-20000:], done.stderr[-4000:])
    return done
