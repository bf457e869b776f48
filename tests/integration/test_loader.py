"""The loader (app/tools/loader.py) as a tool process runs it, at the tool's uid: each limit
is the kernel's answer to what passes it, the worker reads its action first, and an option the
loader does not know stops the process before anything else runs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.run_tree import INTERPRETER, LOADER_MODULE, ToolIdentity, stage_worker
from app.tools.loader import ENTRY, FILTER_OPTION
from app.tools.seccomp import nono_baseline_filter

pytestmark = pytest.mark.integration

# 4096 bytes to a file, then one more (a write across the limit is only cut short).
WRITE_PAST_4096 = (
    "[os.write(fd, data) for fd in [os.open('../scratch/past', os.O_WRONLY | os.O_CREAT)]"
    " for data in (b'x' * 4096, b'x')]"
)
# Python's resource module turns the kernel's EPERM into a ValueError.
RAISE_NOFILE_TO_17 = "resource.setrlimit(resource.RLIMIT_NOFILE, (17, 17))"
# A child that ends at once, waited for.
FORK = "os.waitpid(os.fork() or os._exit(0), 0)"


@pytest.fixture
def code() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="analyst-loader-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    stage_worker(base / "code")
    program = base / "code" / "baseline.bpf"
    program.write_bytes(nono_baseline_filter().program)
    os.chmod(program, 0o644)
    (base / "scratch").mkdir(mode=0o777)
    os.chmod(base / "scratch", 0o777)
    yield base / "code"
    shutil.rmtree(base, ignore_errors=True)


def run(code: Path, then: str, *options: str) -> subprocess.CompletedProcess[str]:
    """The loader with ``options``, then ``then`` (Python), at the tool's uid, as a tool starts."""
    return subprocess.run(
        [INTERPRETER, "-S", "-c", f"{ENTRY}\n{then}", *options, "the-action", "its-argument"],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(code)},
        cwd=str(code),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        **ToolIdentity.for_this_controller().process_identity(),
    )


def said(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_loader_is_staged_beside_the_worker_and_not_in_it(code: Path) -> None:
    assert (code / f"{LOADER_MODULE}.py").is_file()
    assert not (code / "analyst_worker" / f"{LOADER_MODULE}.py").exists()


def test_each_limit_is_set_soft_and_hard_and_the_worker_reads_its_action_first(code: Path) -> None:
    done = run(
        code,
        "import resource, sys\n"
        "names = ('AS', 'CPU', 'FSIZE', 'NOFILE', 'NPROC')\n"
        "print([resource.getrlimit(getattr(resource, 'RLIMIT_' + n)) for n in names], sys.argv)",
        "--max-address-space", "268435456",
        "--max-cpu-seconds", "2",
        "--max-file-bytes", "1048576",
        "--max-open-files", "64",
        "--max-processes", "1",
    )  # fmt: skip
    limits = "[(268435456, 268435456), (2, 2), (1048576, 1048576), (64, 64), (1, 1)]"
    assert said(done) == f"{limits} ['-c', 'the-action', 'its-argument']"


def test_an_unknown_option_or_a_bad_value_stops_the_process(code: Path) -> None:
    for options, message in (
        (("--max-threads", "4"), "unknown or incomplete loader option '--max-threads'"),
        (("--max-processes", "0"), "--max-processes must be positive, not '0'"),
        # The option's value is missing: the action's name is read as one.
        (("--max-processes",), "invalid literal for int() with base 10: 'the-action'"),
    ):
        done = run(code, "print('ran')", *options)
        assert (done.returncode, done.stdout) == (1, ""), done
        assert done.stderr.strip().splitlines()[-1].endswith(message), done.stderr


@pytest.mark.parametrize(
    ("options", "attempt", "answer"),
    [
        (("--max-address-space", "268435456"), "bytearray(300 * 1024 * 1024)", "MemoryError"),
        (("--max-file-bytes", "4096"), WRITE_PAST_4096, "EFBIG"),
        (("--max-open-files", "16"), "[os.dup(0) for _ in range(16)]", "EMFILE"),
        # No filter here: what refuses the fork is the process limit alone.
        (("--max-processes", "1"), FORK, "EAGAIN"),
        (("--seccomp-filter", "baseline.bpf"), FORK, "EPERM"),
        (("--max-open-files", "16"), RAISE_NOFILE_TO_17, "ValueError"),
    ],
)  # fmt: skip
def test_what_passes_a_limit_is_refused_by_the_kernel(
    code: Path, options: tuple[str, ...], attempt: str, answer: str
) -> None:
    program = (
        "import errno, os, resource\n"
        "try:\n"
        f"    {attempt}\n"
        "    print('ok')\n"
        "except OSError as error:\n"
        "    print(errno.errorcode[error.errno])\n"
        "except (MemoryError, ValueError) as error:\n"
        "    print(type(error).__name__)\n"
    )
    assert said(run(code, program, *options)) == answer
    assert said(run(code, program)) == "ok"


def test_a_process_past_its_cpu_time_is_killed(code: Path) -> None:
    done = run(code, "exec('while True: pass')", "--max-cpu-seconds", "1")
    assert done.returncode == -signal.SIGKILL
    assert done.stdout == "" and done.stderr == ""


def test_the_filter_is_loaded_before_anything_else_runs(code: Path) -> None:
    done = run(
        code,
        "print([n.split()[1] for n in open('/proc/self/status') if n.startswith('Seccomp')])",
        FILTER_OPTION,
        "baseline.bpf",
    )
    assert said(done) == "['2', '1']"
