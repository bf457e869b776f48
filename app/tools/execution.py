"""Starting one worker process at the tool's uid and reading its one result line.

Used by the bubblewrap launcher (bwrap is the program started) and by the unconfined control
(the worker itself is). A start-up failure, a timeout, a crash or a missing result raises
ToolRunError: it is never read as a refusal. So does output past the channel's bounds
(ToolOutputRefused, app/tools/channel.py).
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Final

from app.core.results import ToolKilled, ToolResult, ToolRunError, ToolStartFailed
from app.core.run import ToolView
from app.core.run_tree import WORKER_COMMAND, ToolIdentity
from app.core.tool_counts import ToolCounts
from app.tools.channel import Channel, failure
from app.tools.worker.protocol import RESULT_PREFIX

TOOL_TIMEOUT_SECONDS: Final = 60


class ToolProcesses:
    """Every tool process this controller started and has not reaped, and the gate that stops
    any more from starting once the program is stopping.

    A stop signal unwinds the controller's main thread, but a check made at once with others
    goes on in its own thread: one that started its next tool after the stop began could fork
    bwrap as the controller exited, before bwrap had asked to die with its parent, and that
    sandbox then outlived the run whose tree was being removed. ``stop`` (the stop signal's
    handler calls it) closes the gate and kills each tool process still running; one whose
    start was under way is killed by its starter as the start returns."""

    def __init__(self) -> None:
        # Re-entrant: the stop runs in the main thread, which may itself be inside ``started``.
        self._lock = threading.RLock()
        self._stopping = False
        # Weak: a process that was waited for and dropped leaves by itself; kill() on one
        # already reaped does nothing.
        self._live: weakref.WeakSet[subprocess.Popen[bytes]] = weakref.WeakSet()

    def started(
        self, start: Callable[[], subprocess.Popen[bytes]], who: str
    ) -> subprocess.Popen[bytes]:
        """``start``'s process, kept for ``stop``; ToolStartFailed once the program stops."""
        with self._lock:
            if self.stopping():
                raise ToolStartFailed(f"{who} was not started: the program is stopping")
        process = start()
        with self._lock:
            self._live.add(process)
            stopped_meanwhile = self.stopping()
        if stopped_meanwhile:
            process.kill()
        return process

    def stopping(self) -> bool:
        """Whether ``stop`` was called."""
        return self._stopping

    def stop(self) -> None:
        """No tool process starts from now on, and none still running goes on."""
        with self._lock:
            self._stopping = True
            live = list(self._live)
        for process in live:
            process.kill()


TOOL_PROCESSES: Final = ToolProcesses()


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


def parse_output(
    output: bytes, returncode: int, *, who: str, action: str, args: Sequence[str]
) -> ToolResult:
    """Finds exactly one result line in a tool's output (its stdout and stderr together), the
    result of ``action`` asked with ``args`` in its declared shape; anything else is a failure
    to run, not a refusal, and says so naming ``who``."""
    lines = output.decode("utf-8", "replace").splitlines()
    results = [line[len(RESULT_PREFIX) :] for line in lines if line.startswith(RESULT_PREFIX)]
    if returncode != 0 or len(results) != 1:
        tail = [line for line in lines if line.strip() and not line.startswith(RESULT_PREFIX)][-3:]
        said = f": {' | '.join(line.strip() for line in tail)}" if tail else ""
        killer = signal_of(returncode)
        if killer is not None:
            raise ToolKilled(
                f"{who} was killed by {killer} before it reported a result{said}",
                "something outside the run ended it (a kill, the OOM killer); run again",
            )
        raise ToolRunError(f"{who} exited {returncode} with {len(results)} result lines" + said)
    return ToolResult.from_line(results[0], who=who, action=action, args=args)


def exec_as_tool(
    argv: Sequence[str],
    *,
    tool: ToolIdentity,
    counts: ToolCounts,
    env: Mapping[str, str],
    who: str,
    action: str,
    args: Sequence[str],
    pass_fds: Sequence[int] = (),
    executable: str | None = None,
    decoys: ToolView | None = None,
) -> ToolResult:
    """Runs ``argv`` as the tool's uid/gid (with no supplementary groups) and parses its result
    as the answer to ``action`` with ``args``, counting its start in ``counts``.

    A root controller drops the process's identity before exec, so whatever runs (bwrap, or
    the worker itself for a control) is never host root. The working directory is ``/``: the
    controller's own may be closed to the tool's uid, and ``/`` holds no module the worker's
    ``-m`` could pick up from it. Its stdout and stderr are one channel, read with a bound
    (app/tools/channel.py); ``who`` names the process in the run's stop if it breaks one.
    """
    channel = Channel()
    try:
        process = spawn_as_tool(
            argv,
            tool=tool,
            counts=counts,
            who=who,
            env=env,
            pass_fds=pass_fds,
            executable=executable,
            output=channel.write_fd,
            decoys=decoys,
        )
        channel.close_write()
        try:
            ended = os.pidfd_open(process.pid)
            try:
                output = channel.read(ended, time.monotonic() + TOOL_TIMEOUT_SECONDS)
            finally:
                os.close(ended)
        finally:
            # However the reading ended (a broken bound, a signal), nothing started here is
            # left running; a process that ended on its own is only reaped.
            if process.poll() is None:
                process.kill()
            process.wait()
    finally:
        channel.close()
    stop = failure(who, output, TOOL_TIMEOUT_SECONDS)
    if stop is not None:
        raise stop
    return parse_output(output.data, process.returncode, who=who, action=action, args=args)


def spawn_as_tool(
    argv: Sequence[str],
    *,
    tool: ToolIdentity,
    counts: ToolCounts,
    who: str,
    env: Mapping[str, str],
    pass_fds: Sequence[int] = (),
    executable: str | None = None,
    output: int | None = None,
    decoys: ToolView | None = None,
) -> subprocess.Popen[bytes]:
    """Starts ``argv`` as exec_as_tool does, without waiting: for a tool process held open.
    Its stdout and stderr go to ``output`` (a channel's write end), or to pipes of its own.
    An exec that fails is the launcher's own finding (ToolStartFailed), naming ``who``. It
    starts in ``decoys`` where there is one (app/tools/decoy_view.py)."""
    if decoys is not None:
        return decoys.start_in_view(
            partial(
                spawn_as_tool,
                argv,
                tool=tool,
                counts=counts,
                who=who,
                env=env,
                pass_fds=pass_fds,
                executable=executable,
                output=output,
            )
        )
    counts.started()

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            list(argv),
            executable=executable,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if output is None else output,
            stderr=subprocess.PIPE if output is None else output,
            pass_fds=tuple(pass_fds),
            env=dict(env),
            cwd="/",
            **tool.process_identity(),
        )

    try:
        return TOOL_PROCESSES.started(start, who)
    except OSError as error:
        raise ToolStartFailed(f"{who} could not start: {error}") from error


def make_release_fifo(directory: Path, name: str) -> Path:
    """A FIFO in a role's input directory, which a held tool reads until it is released."""
    path = directory / name
    os.mkfifo(path, 0o644)
    os.chmod(path, 0o644)  # mkfifo's mode is filtered by the umask
    return path


def open_when_held(fifo: Path, finished: Callable[[], bool], *, who: str) -> int:
    """Waits until a tool holds ``fifo`` open for reading; returns the controller's write end.

    Opening the writing end without blocking fails with ENXIO until a reader is there. The
    wait ends early, with ToolRunError naming ``who``, if the tool finished without ever
    holding it. It tries
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
            raise ToolRunError(f"{who} ended before it held {fifo.name}")
        if time.monotonic() > deadline:
            raise ToolRunError(f"{who} did not hold {fifo.name} within the timeout")
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
