"""The controller's standard streams and stop signals, black-box through `python -m app.controller`.

Closed streams, a reader that goes away, a full file and an encoding that cannot show a
character are each handled as what they are; a stop signal at any moment from the entry
point's first line on ends it with the documented code and one line.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.entry_points import (
    CONTROLLER,
    REPO_ROOT,
    clean_env,
    command,
    controller,
    in_shell,
    listing,
    the_one_line,
)
from tests.support.faults import processes_of, settle

pytestmark = pytest.mark.integration

LOST = "error (run stopped): standard output failed: "
CLEANED = (
    "; the run stopped there; its services were stopped and its secrets and unfinished files "
    "removed; send the output where it can be written"
)


def _run_args(work_base: Path, layer: str = "nono") -> list[str]:
    return [
        "run",
        "--layer",
        layer,
        "--workdir",
        str(work_base / "work"),
        "--out",
        str(work_base / "out"),
    ]


def _nothing_left(work_base: Path) -> None:
    """No run tree, no report folder, and (once the run's clean-up process, which outlives the
    controller by design, has done) no process of the run."""
    work = work_base / "work"
    assert settle(lambda: processes_of(work)) == []
    assert not (work_base / "out").exists()
    assert not work.exists() or list(work.iterdir()) == []


# --- 6: closed standard streams ---------------------------------------------------------------


def test_a_closed_standard_output_is_refused_before_anything(work_base: Path) -> None:
    """It was misdiagnosed as 'moto did not answer': a service's socket took descriptor 1."""
    ran = controller(*_run_args(work_base), prefix=in_shell("exec >&-"))
    assert ran.returncode == 2, ran.stderr
    assert the_one_line(ran) == (
        "error (bad input): standard output is closed: the check lines and the run's result "
        "are written there; run it with its output on a terminal, in a file or into a pipe"
    )
    assert listing(work_base) == set()


@pytest.mark.parametrize("closing", ["exec <&-", "exec 2>&-"], ids=["stdin", "stderr"])
def test_a_closed_standard_input_or_error_changes_nothing(closing: str, work_base: Path) -> None:
    ran = controller(*_run_args(work_base), prefix=in_shell(closing))
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr
    assert re.search(r"^ANALYST_COMPLETE=[0-9a-f]{32}$", ran.stdout, re.MULTILINE)


# --- 7: a reader that goes away, a full file --------------------------------------------------


@pytest.mark.parametrize("layer", ["bubblewrap", "nono"])
def test_a_reader_that_goes_away_stops_the_run_cleanly(layer: str, work_base: Path) -> None:
    """`run ... | head -1`: a BrokenPipeError traceback once; now one line and a clean stop."""
    process = subprocess.Popen(
        [*CONTROLLER, *_run_args(work_base, layer)],
        cwd=REPO_ROOT,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    assert first.startswith(f"==> {layer}: run ".encode()), first
    process.stdout.close()
    errors = process.stderr.read().decode()
    assert process.wait(timeout=300) == 1, errors
    assert errors.splitlines() == [f"{LOST}its reader has closed it (Broken pipe){CLEANED}"]
    _nothing_left(work_base)


def test_a_full_output_file_is_named_as_such(work_base: Path) -> None:
    """`> /dev/full` was reported as 'a file of the run: No space left on device'."""
    with open("/dev/full", "w") as full:
        ran = subprocess.run(
            [*CONTROLLER, *_run_args(work_base)],
            cwd=REPO_ROOT, env=clean_env(), stdin=subprocess.DEVNULL, stdout=full,
            stderr=subprocess.PIPE, text=True, timeout=300,
        )  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    assert ran.stderr.splitlines() == [
        f"{LOST}the file it goes to is full (No space left on device){CLEANED}"
    ]
    _nothing_left(work_base)


@pytest.mark.parametrize(
    "args",
    [["doctor", "--layer", "nono"], ["case", "check", "cases/rfp-001"], ["--help"]],
    ids=["doctor", "case check", "--help"],
)
def test_a_full_output_file_fails_a_command_that_is_no_run_in_its_own_words(
    args: list[str],
) -> None:
    """They said the run's services had stopped and its secrets were removed (no run began),
    and --help exited 0 with nothing of its help written."""
    with open("/dev/full", "w") as full:
        ran = subprocess.run(
            [*CONTROLLER, *args], cwd=REPO_ROOT, env=clean_env(), stdin=subprocess.DEVNULL,
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    assert ran.stderr.splitlines() == [
        f"{LOST}the file it goes to is full (No space left on device); send the output where "
        "it can be written"
    ]


# --- 15: an encoding that cannot show the text ------------------------------------------------


def test_an_ascii_only_output_gets_escapes_not_a_traceback(work_base: Path) -> None:
    ran = command([*CONTROLLER, *_run_args(work_base)], env=clean_env(PYTHONIOENCODING="ascii"))
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stderr == ""
    assert "\\u2026" in ran.stdout  # the ellipsis of a shortened digest, escaped
    assert ran.stdout.isascii()


# --- 14: stop signals from the entry point's first line on --------------------------------------


def _opened_before_the_handlers(log: str) -> list[str]:
    """The module files the entry point opened after its own and before its stop handlers."""
    lines = log.splitlines()
    entry = re.compile(r'"[^"]*/app/controller/(__pycache__/)?__main__\.(py|cpython-\d+\.pyc)"')
    start = next(i for i, line in enumerate(lines) if entry.search(line))
    installed = next(
        i
        for i, line in enumerate(lines[start:], start)
        if re.search(r"rt_sigaction\(SIGTERM, \{sa_handler=0x", line)
    )
    # Without a cached bytecode file the entry point is opened twice (its missing cache, then
    # its source): neither is a module loaded before the handlers.
    window = [line for line in lines[start + 1 : installed] if not entry.search(line)]
    paths = [re.search(r'openat\([^"]*"([^"]+)"', line) for line in window]
    return [p.group(1) for p in paths if p and p.group(1).endswith((".py", ".pyc"))]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_the_stop_handlers_are_the_entry_points_first_act(work_base: Path) -> None:
    """Watched from outside with strace: after the entry point's own file, nothing loads
    before SIGINT, SIGTERM and SIGHUP have their handlers but the signals module itself and
    what it needs of the standard library (the typing module and re once loaded first,
    leaving the interpreter's KeyboardInterrupt and SIGTERM's silent death in that window)."""
    log = work_base / "strace.log"
    ran = command(
        ["strace", "-qq", "-e", "trace=openat,rt_sigaction", "-o", str(log), *CONTROLLER, "--help"]
    )
    assert ran.returncode == 0, ran.stderr
    modules = {
        Path(path).name.split(".")[0] for path in _opened_before_the_handlers(log.read_text())
    }
    assert modules <= {"signals", "__future__", "signal", "enum", "abc"}, modules
    assert "signals" in modules


def _catches(pid: int, signum: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    (mask,) = [line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")]
    return bool(int(mask, 16) & (1 << (signum - 1)))


ONE_LINE = re.compile(
    r"stopped by (SIGINT|SIGTERM|SIGHUP)(?: before the run began; nothing was created|: the run "
    r"was cut short; its services were stopped and its secrets and unfinished files removed)"
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_at_any_moment_gives_its_code_and_one_line(
    signum: int, work_base: Path
) -> None:
    """From the moment the handlers are in place (SIGTERM caught: Python sets none of its
    own) through loading, the checks of the options and the run itself."""
    for delay_ms in (0, 3, 30, 300, 1500):
        base = work_base / f"{delay_ms}"
        base.mkdir()
        process = subprocess.Popen(
            [*CONTROLLER, *_run_args(base)],
            cwd=REPO_ROOT, env=clean_env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not _catches(process.pid, signal.SIGTERM):
            assert process.poll() is None and time.monotonic() < deadline
        time.sleep(delay_ms / 1000)
        process.send_signal(signum)
        _, errors = process.communicate(timeout=300)
        assert process.returncode == 128 + signum, (delay_ms, errors)
        (line,) = errors.splitlines()
        found = ONE_LINE.fullmatch(line)
        assert found and found.group(1) == signal.Signals(signum).name, (delay_ms, line)
        _nothing_left(base)
