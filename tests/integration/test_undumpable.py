"""The non-dumpable controller (app/controller/undumpable.py), seen by the probe the run uses
(the worker's peek-process, as the unconfined control runs it) from a process at the same uid:
a process that made itself non-dumpable is refused its memory, its environment and its
descriptors; the same process without the flag, and a dumpable sibling, are not."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller.undumpable import make_undumpable
from app.core.run_tree import INTERPRETER, WORKER_COMMAND, ToolIdentity, stage_worker
from app.tools.seccomp import resolve_syscall
from app.tools.undumpable_checks import DUMPABLE, UNDUMPABLE
from app.tools.worker.protocol import RESULT_PREFIX

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="the test drops a process to the tool's uid"),
]

TOOL = ToolIdentity.for_this_controller()
_PR_SET_DUMPABLE = 4


@pytest.fixture
def code() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="analyst-undumpable-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    stage_worker(base / "code")
    yield base / "code"
    shutil.rmtree(base, ignore_errors=True)


def _holder(undumpable: bool) -> tuple[int, int]:
    """A process at the tool's uid that holds still on a pipe, made non-dumpable by the
    controller's own function or not; its pid and the pipe's writing end."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.close(write_end)
            os.setgroups([])
            os.setgid(TOOL.gid)
            os.setuid(TOOL.uid)
            if undumpable:
                make_undumpable()
            else:
                # Changing uid above cleared the flag; a process started at its uid (the
                # cluster's controller) has it, as this one has it now.
                ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
            os.read(read_end, 1)
        finally:
            os._exit(0)
    os.close(read_end)
    return pid, write_end


def _peek(code: Path, pid: int) -> dict[str, str]:
    done = subprocess.run(
        [
            *WORKER_COMMAND,
            "peek-process",
            f"pidfd_getfd={resolve_syscall('pidfd_getfd')}",
            str(pid),
        ],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(code)},
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
        **TOOL.process_identity(),
    )
    (line,) = [x for x in done.stdout.splitlines() if x.startswith(RESULT_PREFIX)]
    answers: dict[str, dict[str, str]] = json.loads(line.removeprefix(RESULT_PREFIX))["answers"]
    return answers[str(pid)]


@pytest.mark.parametrize("undumpable", [True, False], ids=["undumpable", "dumpable"])
def test_a_process_at_the_same_uid_is_refused_only_an_undumpable_process(
    code: Path, undumpable: bool
) -> None:
    pid, release = _holder(undumpable)
    sibling = subprocess.Popen(
        [INTERPRETER, "-c", "import sys; sys.stdin.buffer.read()"],
        stdin=subprocess.PIPE,
        cwd="/",
        **TOOL.process_identity(),
    )
    try:
        assert _peek(code, sibling.pid) == DUMPABLE
        assert _peek(code, pid) == (UNDUMPABLE if undumpable else DUMPABLE)
    finally:
        os.close(release)
        os.waitpid(pid, 0)
        assert sibling.stdin is not None
        sibling.stdin.close()
        sibling.wait()
