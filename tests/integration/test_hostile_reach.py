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
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.run_tree import INTERPRETER, ToolIdentity
from app.tools.seccomp import resolve_syscall
from tests.integration.test_hostile_limits import the_stop
from tests.support.attested_run import assert_failure_kept
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
ALL_REFUSED = "scan found 0; " + "; ".join(f"{name} EPERM" for name in TRIED)


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


@pytest.fixture(scope="module")
def interpreter_at_tool_uid() -> Iterator[Path]:
    """An interpreter the tools' uid can run, with this environment's packages: the system's
    own (this one may sit in a folder only root reads), in a venv whose one .pth names this
    environment's site-packages, so that every process the controller starts finds them."""
    system = Path(INTERPRETER)
    here = sysconfig.get_path("purelib")
    version = subprocess.run(
        [str(system), "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if version != str(sys.version_info[:2]):
        pytest.skip(f"{system} is Python {version}, this environment's packages are for another")
    made = Path(tempfile.mkdtemp(prefix="analyst-same-uid-", dir="/var/tmp"))
    os.chmod(made, 0o755)
    venv = made / "python"
    subprocess.run([str(system), "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (site / "environment.pth").write_text(f"{here}\n")
    for path in [made, *made.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o444 | (0o111 if path.is_dir() else 0))
    yield venv / "bin" / "python"
    shutil.rmtree(made, ignore_errors=True)


@pytest.mark.skipif(
    os.geteuid() != 0, reason="starting the controller at the tools' uid needs root"
)
@pytest.mark.parametrize("layer", LAYERS)
def test_with_the_controller_at_the_tools_uid_no_role_reaches_it(
    layer: str, work_base: Path, target: int, interpreter_at_tool_uid: Path
) -> None:
    """As in the pod: the controller, the proxy host and the launch processes run at the uid
    the tools run at, which is all the kernel asks of these calls; the tool's parent is one of
    them, and its scan of the pids near its own finds none of them."""
    tool = ToolIdentity.for_this_controller()
    os.chown(work_base, tool.uid, tool.gid)
    # The controller's own interpreter, at the tools' uid, as the pod's controller runs.
    as_tool = ["setpriv", f"--reuid={tool.uid}", f"--regid={tool.gid}", "--clear-groups"]
    script = f'shift; HOME="{work_base}" exec "{interpreter_at_tool_uid}" "$@"'
    before = _state(target)
    run = run_hostile(
        work_base, layer, [_step([target])], command=[*as_tool, "sh", "-c", script, "sh"]
    )
    stop = the_stop(run)
    assert stop == (
        f"error (run stopped): the {ROLE}'s tool process exited 3 with 0 result lines: "
        f"hostile tried: {ALL_REFUSED}"
    ), stop
    assert _state(target) == before
    # The controller ran at the tools' uid: the checks that only such a run makes were made,
    # and the run's own attack aimed at the controller too, before the hostile tool stopped it.
    assert f"PASS no process at the controller's uid {tool.uid} can open" in run.stdout
    assert "the controller (pid " in run.stdout


@pytest.mark.parametrize("layer", LAYERS)
def test_metadata_changed_outside_the_filter_stops_the_run_naming_who_could(
    layer: str, work_base: Path
) -> None:
    """Were a role's filter ever to let a metadata call through, the controller would still see
    it when it reads the roles' work back: a stand-in at the tools' uid outside any layer (no
    tool can) changes the evaluator's output's mode and puts an attribute on the writer's, and
    the run stops at that check, naming every role that could have done it under the layer."""
    step = Step("tamper", role="control", action="attack-surface", args={"stand_in": True})
    run = run_hostile(work_base, layer, [step])
    assert run.exit_code == 1, run.describe()
    fails = [line for line in run.stdout.splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 1, run.describe()
    if layer == "bubblewrap":
        evaluator, writer = "the evaluator", "the writer"
    else:
        evaluator = writer = "the reader, the evaluator or the writer"
    assert fails[0].endswith(
        "(evaluator/out/comparison.json: mode 0644, not 0600 "
        f"({evaluator} could have changed it); writer/out/check.txt: extended attributes "
        f"user.channel ({writer} could have changed it)) [business.outputs-unchanged]"
    ), fails[0]
    # Stopped before the writer's work is read back, so before its draft is sent: no report,
    # only what a failed run keeps (its check list, its page and its signed statement).
    assert_failure_kept(work_base / "out", "business.outputs-unchanged")
