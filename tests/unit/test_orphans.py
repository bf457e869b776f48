"""A process orphaned below the controller (a sandbox's first process whose outer bwrap a stop
killed) is adopted by it and ended by the stop, never left to init."""

from __future__ import annotations

import subprocess
import sys

from app.core.repo import REPO_ROOT

# Run in a process of its own: adopting orphans changes the process that does it.
SCRIPT = """
import os, subprocess, sys, time
from pathlib import Path
from app.controller import subreaper
if sys.argv[1] == "adopt":
    subreaper.adopt_orphans()
# A shell that starts a sleeper and exits at once, orphaning it.
started = ["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"]
pid = int(subprocess.run(started, capture_output=True, text=True, check=True).stdout)
deadline = time.monotonic() + 10
def parent():
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])
while parent() != os.getpid() and time.monotonic() < deadline and sys.argv[1] == "adopt":
    time.sleep(0.01)
adopted = parent() == os.getpid()
ended = subreaper.end_orphans()
alive = Path(f"/proc/{pid}").exists()
if alive:
    os.kill(pid, 9)
print(adopted, ended == [pid], alive)
"""


def _run(mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_an_orphan_is_adopted_and_ended() -> None:
    assert _run("adopt") == "True True False"


def test_without_adopting_an_orphan_goes_to_init_and_is_not_the_stops_to_end() -> None:
    """The control: the same orphan, not adopted, is no child of the process and lives on."""
    assert _run("leave") == "False False True"
