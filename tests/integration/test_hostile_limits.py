"""A hostile tool against the launcher's limits, in real runs of either layer: code in place of
the worker (support/hostile.py), from its first instruction, tries what the baseline filter and
each resource limit refuse. The launcher set them all before that instruction (the loader,
app/tools/loader.py), so each attempt gets the kernel's refusal, the run stops with exit 1 on
one line naming the role and saying what it got, nothing of the tool outlives the run, and no
secret is left on disk. A run whose tool got past a limit would exit 0 or show "ok" here.
Every try that returns is made in one run per layer, each answer asserted on its own; the spin
(which never returns) and the control have a run each.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core.tool_limits import tool_limits
from app.tools.seccomp import resolve_syscall
from tests.support.faults import settle
from tests.support.hostile import HostileRun, Step, run_hostile
from tests.support.schemas import validate_tree

pytestmark = pytest.mark.integration

LAYERS = ["bubblewrap", "nono"]
ROLE, ACTION = "evaluator", "evaluate"
SYSCALLS = {name: resolve_syscall(name) for name in ("unshare", "bpf", "keyctl", "io_uring_setup")}
LIMITS = tool_limits()


def attempted(work_base: Path, layer: str, *tries: str, **args: Any) -> str:
    """The evaluator's hostile code tries ``tries``; what it said it got, once the run stopped
    as it must: exit 1, one error line naming the role, nothing left running, no secret left."""
    step = Step(
        "attempt", role=ROLE, action=ACTION, args={"tries": tries, "syscalls": SYSCALLS, **args}
    )
    run = run_hostile(work_base, layer, [step])
    stop = the_stop(run)
    prefix = f"error (run stopped): the {ROLE}'s tool process exited 3 with 0 result lines: "
    assert stop.startswith(prefix), stop
    return stop.removeprefix(prefix).removeprefix("hostile tried: ")


def the_stop(run: HostileRun) -> str:
    # The run's clean-up process ends just after the controller: waited for, not counted.
    left = settle(run.processes_left)
    for entry in left:
        os.kill(int(entry.split(":", 1)[0]), signal.SIGKILL)
    assert left == [], f"the tool's processes outlived the run: {left}"
    assert run.exit_code == 1, run.describe()
    errors = [line for line in run.error_lines() if line.strip()]
    assert len(errors) == 1, run.describe()
    assert run.secrets(), "the harness saw no secret written"
    assert run.secrets_on_disk() == []
    return errors[0]


# Every try that returns, in one run per layer: each answer is the kernel's (or Python's word
# for it) to that try alone. The descriptors go last, as they leave none free for what follows.
TRIES = ("unshare-user", "bpf", "keyctl", "io_uring_setup", "daemon", "thread", "write",
         "allocate", "secrets", "descriptors")  # fmt: skip


@pytest.fixture(scope="module")
def answers() -> Iterator[Callable[[str], dict[str, str]]]:
    """What the evaluator's hostile code got for each of TRIES, by layer: one run each, made
    when a test first asks for its layer, each in a directory as conftest's work_base makes
    one (the tool uid can traverse it; its runs' documents are validated against their
    schemas at the end)."""
    bases: list[Path] = []
    made: dict[str, dict[str, str]] = {}

    def answers_under(layer: str) -> dict[str, str]:
        if layer not in made:
            bases.append(Path(tempfile.mkdtemp(prefix="analyst-test-", dir="/var/tmp")))
            os.chmod(bases[-1], 0o755)
            said = attempted(
                bases[-1], layer, *TRIES, write=2**31, allocate=2**31, descriptors=10_000
            )
            made[layer] = dict(part.split(" ", 1) for part in said.split("; "))
            assert list(made[layer]) == list(TRIES), said
        return made[layer]

    try:
        yield answers_under
        for base in bases:
            validate_tree(base)
    finally:
        for base in bases:
            shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("layer", LAYERS)
def test_the_baseline_filter_binds_code_that_runs_before_the_worker(
    layer: str, answers: Callable[[str], dict[str, str]]
) -> None:
    """Under nono the filter was the worker's own to install: code in its place made a user
    namespace, and reached bpf and keyctl. The loader installs it first; bwrap's own answer to
    the namespace is its --disable-userns (ENOSPC)."""
    got = answers(layer)
    userns = "ENOSPC" if layer == "bubblewrap" else "EPERM"
    assert [got[name] for name in ("unshare-user", "bpf", "keyctl", "io_uring_setup")] == [
        userns, "EPERM", "EPERM", "EPERM"
    ]  # fmt: skip


@pytest.mark.parametrize("layer", LAYERS)
def test_no_process_or_thread_the_tool_starts_can_outlive_it(
    layer: str, answers: Callable[[str], dict[str, str]]
) -> None:
    """A daemon in a session of its own outlived the run under nono, holding the controller's
    pipes; the baseline refuses every new process and thread first (EPERM), and the process
    limit (1) would refuse them too. (The run itself left nothing running: attempted.)"""
    got = answers(layer)
    assert (got["daemon"], got["thread"]) == ("EPERM", "RuntimeError")


@pytest.mark.parametrize("layer", LAYERS)
def test_a_file_stops_at_the_file_size_limit(
    layer: str, answers: Callable[[str], dict[str, str]]
) -> None:
    """A tool that skipped the worker's own limit wrote 2 GiB to its check.txt under bwrap."""
    assert answers(layer)["write"] == f"EFBIG after {LIMITS.file_bytes.value} bytes"


@pytest.mark.parametrize("layer", LAYERS)
def test_memory_stops_at_the_address_space_limit(
    layer: str, answers: Callable[[str], dict[str, str]]
) -> None:
    """2 GiB allocated and nothing noticed, on both layers."""
    assert answers(layer)["allocate"] == "MemoryError"


@pytest.mark.parametrize("layer", LAYERS)
def test_descriptors_stop_at_the_open_file_limit(
    layer: str, answers: Callable[[str], dict[str, str]]
) -> None:
    assert answers(layer)["descriptors"] == "EMFILE"


@pytest.mark.parametrize("layer", LAYERS)
def test_a_tool_that_spins_is_killed_at_its_cpu_time_limit(layer: str, work_base: Path) -> None:
    """Nothing but the 60 s wall-clock limit ended a spinning tool; the CPU-time limit kills it
    after its seconds of CPU, and the run stops naming the role and the signal."""
    step = Step("attempt", role=ROLE, action=ACTION, args={"tries": ["spin"]})
    stop = the_stop(run_hostile(work_base, layer, [step]))
    assert stop.startswith(
        f"error (run stopped): the {ROLE}'s tool process was killed by SIGKILL before it "
        "reported a result"
    ), stop


@pytest.mark.parametrize("layer", LAYERS)
def test_a_role_reaches_no_secret_by_its_host_path(
    layer: str, answers: Callable[[str], dict[str, str]]
) -> None:
    """The supplier key and the AWS credentials, by the paths the host gives them (under bwrap
    found through /proc/self/mountinfo): absent from a bwrap role's view, refused to a nono
    role by Landlock; and in the tools' decoy view either would be a decoy."""
    assert answers(layer)["secrets"] == ("ENOENT" if layer == "bubblewrap" else "EACCES")


@pytest.mark.parametrize("layer", LAYERS)
def test_the_control_never_runs_the_tools_code(layer: str, work_base: Path) -> None:
    """The unconfined control ran the staged worker's own code, outside any layer: it copied
    the key and the credentials. Now it runs the controller's own program: a step that would
    stop the run from the control is never taken, and the run completes."""
    steps = [Step("say", role="control", args={"stderr": "the tools' code ran unconfined"})]
    run = run_hostile(work_base, layer, steps)
    assert run.exit_code == 0, run.describe()
    assert "ANALYST_COMPLETE=" in run.stdout
    assert "the tools' code ran unconfined" not in run.stderr
