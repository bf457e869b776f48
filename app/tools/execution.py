"""Starting one worker process at the tool's uid and reading its one result line.

Used by the bubblewrap launcher (bwrap is the program started) and by the unconfined control
(the worker itself is). A start-up failure, a timeout, a crash or a missing result raises
ToolRunError: it is never read as a refusal.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

from app.core.results import ToolKilled, ToolResult, ToolRunError
from app.core.run_tree import WORKER_COMMAND, ToolIdentity
from app.tools.worker.protocol import RESULT_PREFIX

TOOL_TIMEOUT_SECONDS: Final = 60
# The only search path a tool process (and bwrap itself) is given.
SYSTEM_PATH: Final = "/usr/bin:/bin"


class ToolStarts:
    """How many tool processes this controller has started, every run and thread together;
    the run's phase table reads it as differences, as it reads getrusage."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def add(self) -> None:
        with self._lock:
            self._count += 1

    @property
    def count(self) -> int:
        return self._count


TOOL_STARTS: Final = ToolStarts()


def worker_command(action: str, args: Sequence[str]) -> list[str]:
    """The worker's command line for one action."""
    return [*WORKER_COMMAND, action, *args]


def signal_of(returncode: int) -> str | None:
    """The signal that ended a process, from its exit status: negative when the process started
    here was killed; 128 + the signal when bwrap reports its sandboxed child killed (the worker
    itself never exits above 128)."""
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if not 0 < number < signal.NSIG:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def parse_output(stdout: bytes, stderr: bytes, returncode: int) -> ToolResult:
    """Finds exactly one result line; anything else is a failure to run, not a refusal."""
    lines = [
        line[len(RESULT_PREFIX) :]
        for line in stdout.decode("utf-8", "replace").splitlines()
        if line.startswith(RESULT_PREFIX)
    ]
    if returncode != 0 or len(lines) != 1:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        said = f": {' | '.join(tail)}" if tail else ""
        killer = signal_of(returncode)
        if killer is not None:
            raise ToolKilled(
                f"tool process was killed by {killer} before it reported a result{said}",
                "something outside the run ended it (a kill, the OOM killer); run again",
            )
        raise ToolRunError(
            f"tool process exited {returncode} with {len(lines)} result lines" + said
        )
    return ToolResult.from_line(lines[0])


def exec_as_tool(
    argv: Sequence[str],
    *,
    tool: ToolIdentity,
    env: Mapping[str, str],
    pass_fds: Sequence[int] = (),
    executable: str | None = None,
) -> ToolResult:
    """Runs ``argv`` as the tool's uid/gid (with no supplementary groups) and parses its result.

    A root controller drops the process's identity before exec, so whatever runs (bwrap, or
    the worker itself for a control) is never host root. The working directory is ``/``: the
    controller's own may be closed to the tool's uid, and ``/`` holds no module the worker's
    ``-m`` could pick up from it.
    """
    TOOL_STARTS.add()
    try:
        completed = subprocess.run(
            list(argv),
            executable=executable,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TOOL_TIMEOUT_SECONDS,
            pass_fds=tuple(pass_fds),
            env=dict(env),
            cwd="/",
            check=False,
            **tool.process_identity(),
        )
    except subprocess.TimeoutExpired as error:
        raise ToolRunError(f"tool process timed out after {TOOL_TIMEOUT_SECONDS}s") from error
    except OSError as error:
        raise ToolRunError(f"tool process could not start: {error}") from error
    return parse_output(completed.stdout, completed.stderr, completed.returncode)


def spawn_as_tool(
    argv: Sequence[str],
    *,
    tool: ToolIdentity,
    env: Mapping[str, str],
    pass_fds: Sequence[int] = (),
    executable: str | None = None,
) -> subprocess.Popen[bytes]:
    """Starts ``argv`` as exec_as_tool does, without waiting: for a tool process held open."""
    TOOL_STARTS.add()
    try:
        return subprocess.Popen(
            list(argv),
            executable=executable,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=tuple(pass_fds),
            env=dict(env),
            cwd="/",
            **tool.process_identity(),
        )
    except OSError as error:
        raise ToolRunError(f"tool process could not start: {error}") from error


def make_release_fifo(directory: Path, name: str) -> Path:
    """A FIFO in a role's input directory, which a held tool reads until it is released."""
    path = directory / name
    os.mkfifo(path, 0o644)
    os.chmod(path, 0o644)  # mkfifo's mode is filtered by the umask
    return path


def open_when_held(fifo: Path, finished: Callable[[], bool]) -> int:
    """Waits until a tool holds ``fifo`` open for reading; returns the controller's write end.

    Opening the writing end without blocking fails with ENXIO until a reader is there. The
    wait ends early, with ToolRunError, if the tool finished without ever holding it. It tries
    every 2 ms: a tool holds the FIFO some 15 ms after it starts, and each try is one open(2).
    """
    deadline = time.monotonic() + TOOL_TIMEOUT_SECONDS
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
        if finished():
            raise ToolRunError(f"the tool process ended before it held {fifo.name}")
        if time.monotonic() > deadline:
            raise ToolRunError(f"the tool process did not hold {fifo.name} within the timeout")
        time.sleep(0.002)


def has_reader(fifo: Path) -> bool:
    """Whether some process (the held tool) still has ``fifo`` open for reading."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ENXIO:
            return False
        raise
    os.close(fd)
    return True
