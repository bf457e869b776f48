"""The sandbox processes a stop may orphan: the controller adopts them (PR_SET_CHILD_SUBREAPER)
and, once a stop signal's clean-up has run, kills and reaps whatever of them is left.

bwrap's outer process clones the sandbox's first process, which asks for SIGKILL at its
parent's death (--die-with-parent) only a moment later. An outer bwrap killed in that moment (a
stop kills every tool process; a terminal's Ctrl-C or hang-up reaches the whole group) leaves
that process without a parent and without the request: measured under load, it outlived the
stopped controller, reparented to init. Adopted, it is the controller's child instead, and the
stop ends it before the one line is printed.
"""

from __future__ import annotations

import ctypes
import os
import signal
from contextlib import suppress
from pathlib import Path
from typing import Final

PR_SET_CHILD_SUBREAPER: Final = 36
_adopting = False


def adopt_orphans() -> None:
    """From now on a process orphaned below the controller becomes its child, not init's. The
    entry point's call alone: a test's process that calls the command line keeps its own."""
    global _adopting
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    _adopting = True


def children() -> list[int]:
    """The controller's children, every thread's."""
    found: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        with suppress(OSError):
            found += [int(pid) for pid in (task / "children").read_text().split()]
    return found


def end_orphans() -> list[int]:
    """Kills and reaps every child still left (the run's services and clean-up process were
    stopped and waited for before): the orphans a stop made. Returns their pids; none when
    the controller adopts none."""
    if not _adopting:
        return []
    left = children()
    for pid in left:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in left:
        with suppress(ChildProcessError):
            os.waitpid(pid, 0)
    return left
