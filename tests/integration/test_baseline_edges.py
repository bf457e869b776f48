"""The baseline filter's edges, in a process that loads it as a tool does (app/tools/loader.py):
the calls on another process refused however their int arguments are spelt, the ones the
loader itself makes allowed, and the syscalls newer than libseccomp refused by their raw
number. Each beside the same call in the same kind of process without the filter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.run_tree import INTERPRETER, ToolIdentity, stage_worker
from app.tools.loader import ENTRY, FILTER_OPTION
from app.tools.seccomp import NEWER_SYSCALLS, baseline_filter, resolve_syscall

pytestmark = pytest.mark.integration

HIGH = 1 << 32
# Each call, by name: (syscall, its arguments); "<PARENT>" is the pid of a process at the same
# uid (the test's own sleeper), "<PARENT_HIGH>" the same with bit 32 set, "<FILE>" a file of
# the process's own, "<BUF>" 64 zeroed bytes.
CALLS: dict[str, tuple[str, tuple[object, ...]]] = {
    # The loader's setrlimit and glibc's getrlimit: pid 0.
    "prlimit64 own": ("prlimit64", (0, 4, None, "<BUF>")),
    "prlimit64 other": ("prlimit64", ("<PARENT>", 4, None, "<BUF>")),
    # The kernel reads a pid_t, the low half: a high bit over another pid is that pid to it.
    "prlimit64 other, high bit": ("prlimit64", ("<PARENT_HIGH>", 4, None, "<BUF>")),
    "prlimit64 0, high bit": ("prlimit64", (HIGH, 4, None, "<BUF>")),
    "getpriority own": ("getpriority", (0, 0)),
    "getpriority other": ("getpriority", (0, "<PARENT>")),
    # PRIO_USER with who 0: every process of the caller's uid.
    "getpriority user": ("getpriority", (2, 0)),
    "getpriority other, high bit": ("getpriority", (0, "<PARENT_HIGH>")),
    "fchmodat2": ("fchmodat2", (-100, "<FILE>", 0o600, 0)),
    "setxattrat": ("setxattrat", (-100, "<FILE>", 0, b"user.analyst-edge", None, 0)),
    "removexattrat": ("removexattrat", (-100, "<FILE>", 0, b"user.analyst-edge")),
    "file_setattr": ("file_setattr", (-100, "<FILE>", None, 24, 0)),
}
UNFILTERED = {
    "prlimit64 own": "ok",
    "prlimit64 other": "ok",
    "prlimit64 other, high bit": "ok",
    "prlimit64 0, high bit": "ok",  # the kernel reads 0
    "getpriority own": "ok",
    "getpriority other": "ok",
    "getpriority user": "ok",
    "getpriority other, high bit": "ok",
    "fchmodat2": "ok",
    "setxattrat": "EINVAL",  # a NULL argument block of size 0
    "removexattrat": "ENODATA",
    "file_setattr": "EFAULT",
}
FILTERED = {
    **{name: "EPERM" for name in CALLS},
    "prlimit64 own": "ok",
    "getpriority own": "ok",
}

PROGRAM = """
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
calls, numbers, parent, path = json.loads(sys.argv[1])
buf = ctypes.create_string_buffer(64)
def value(arg):
    if arg == "<PARENT>": return ctypes.c_long(parent)
    if arg == "<PARENT_HIGH>": return ctypes.c_long((1 << 32) | parent)
    if arg == "<FILE>": return path.encode()
    if arg == "<BUF>": return buf
    if isinstance(arg, str): return arg.encode("latin-1")
    return None if arg is None else ctypes.c_long(arg)
answers = {}
for name, (call, args) in calls.items():
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(numbers[call]), *[value(a) for a in args])
    answers[name] = "ok" if rc != -1 else errno.errorcode[ctypes.get_errno()]
print(json.dumps(answers))
"""


@pytest.fixture
def staged() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="analyst-edges-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    stage_worker(base / "code")
    program = base / "code" / "baseline.bpf"
    program.write_bytes(baseline_filter().program)
    os.chmod(program, 0o644)
    tool = ToolIdentity.for_this_controller()
    own = base / "own.txt"
    own.write_bytes(b"")
    os.chmod(own, 0o600)
    if os.geteuid() == 0:
        os.chown(own, tool.uid, tool.gid)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _answers(base: Path, *, filtered: bool) -> dict[str, str]:
    identity = ToolIdentity.for_this_controller().process_identity()
    sleeper = subprocess.Popen(["sleep", "60"], **identity)
    try:
        numbers = {call: resolve_syscall(call) for call, _ in CALLS.values()}
        encoded = {
            name: (call, [a.decode("latin-1") if isinstance(a, bytes) else a for a in args])
            for name, (call, args) in CALLS.items()
        }
        argument = json.dumps([encoded, numbers, sleeper.pid, str(base / "own.txt")])
        options = [FILTER_OPTION, str(base / "code" / "baseline.bpf")] if filtered else []
        done = subprocess.run(
            [INTERPRETER, "-S", "-c", f"{ENTRY}\n{PROGRAM}", *options, argument],
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(base / "code")},
            cwd=str(base / "code"),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            **identity,
        )
    finally:
        sleeper.kill()
        sleeper.wait()
    assert done.returncode == 0, done.stderr
    answers: dict[str, str] = json.loads(done.stdout)
    return answers


def test_without_the_filter_each_call_gets_the_kernels_own_answer(staged: Path) -> None:
    assert _answers(staged, filtered=False) == UNFILTERED


def test_the_filter_refuses_another_pid_and_every_newer_call_by_its_number(staged: Path) -> None:
    assert _answers(staged, filtered=True) == FILTERED


def test_the_newer_calls_are_numbered_alike_on_both_architectures_libseccomp_knows() -> None:
    for name, number in NEWER_SYSCALLS.items():
        assert resolve_syscall(name) == number
