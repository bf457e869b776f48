"""A hostile tool against other processes at its uid and other roles' files' metadata, in real
runs of either layer: code in place of the worker (support/hostile.py), from its first
instruction, re-limits (RLIMIT_CORE 0), renices (19), pins to one CPU and gives the idle I/O
class to a process at the tools' uid outside any sandbox and to its own parent, opens a pidfd
of each and compares their descriptors; then makes another role's output 0666, sets its times
and an attribute on it, makes its own output setgid and watches the other's folder.

The baseline filter refuses every call (EPERM), the run stops with exit 1 on one line naming
the role and what it got, and the target is as it was. Once with the controller as root and
its tools at uid 1000 (the target is a process the test starts at that uid), once with the
controller itself at the tools' uid, as in the pod, where the tool's parent is a process of the
controller's own (a launch process under nono).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.run_tree import ToolIdentity
from app.tools.seccomp import resolve_syscall
from tests.integration.test_hostile_limits import the_stop
from tests.support.hostile import Step, run_hostile

pytestmark = pytest.mark.integration

LAYERS = ["bubblewrap", "nono"]
ROLE, ACTION, OTHER = "evaluator", "evaluate", "writer"
CALLS = (
    "prlimit64",
    "setpriority",
    "sched_setaffinity",
    "ioprio_set",
    "pidfd_open",
    "kcmp",
    "fchmodat2",
    "inotify_init1",
    "inotify_add_watch",
)
TRIED = (
    "prlimit64",
    "setpriority",
    "sched_setaffinity",
    "ioprio_set",
    "pidfd_open",
    "kcmp",
    "chmod",
    "chmod own setgid",
    "fchmodat2",
    "utime",
    "setxattr",
    "setxattr own",
    "inotify",
    "inotify_add_watch",
)
ALL_REFUSED = "; ".join(f"{name} EPERM" for name in TRIED)


@pytest.fixture
def target() -> Iterator[int]:
    """A process at the tools' uid outside any sandbox."""
    process = subprocess.Popen(
        ["sleep", "300"], **ToolIdentity.for_this_controller().process_identity()
    )
    yield process.pid
    process.kill()
    process.wait()


def _state(pid: int) -> tuple[object, ...]:
    return (
        # Read from /proc: a root without CAP_SYS_RESOURCE may not call prlimit on it.
        [line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if "core" in line],
        os.getpriority(os.PRIO_PROCESS, pid),
        os.sched_getaffinity(pid),
    )


def _step(pids: list[int]) -> Step:
    numbers = {name: resolve_syscall(name) for name in CALLS}
    return Step(
        "reach",
        role=ROLE,
        action=ACTION,
        args={"syscalls": numbers, "pids": pids, "other": OTHER},
    )


@pytest.mark.parametrize("layer", LAYERS)
def test_no_role_reaches_another_process_or_file_metadata(
    layer: str, work_base: Path, target: int
) -> None:
    before = _state(target)
    run = run_hostile(work_base, layer, [_step([target])])
    stop = the_stop(run)
    assert stop == (
        f"error (run stopped): the {ROLE}'s tool process exited 3 with 0 result lines: "
        f"hostile tried: {ALL_REFUSED}"
    ), stop
    assert _state(target) == before
