"""The controller's side of the nono launch processes (launch_process.py): a few processes, each
making one nono-py call at a time, so that calls made at once (CheckLog.at_once) overlap without
nono-py ever forking the controller itself.

A call takes an idle process, hands it the request and the call's channel, waits for it to say
the request is in hand (TAKEN_SECONDS), and reads the channel meanwhile, as for any tool
(app/tools/channel.py): bounded, until the tool's end (the reply readable on the process's
socket) or a deadline a little past the call's own time limit, which nono-py holds, and watching
that the launch process is not stopped. A process that dies, is stopped, or does not answer in
time, is killed and another takes its place; the call stops the run (exit 1), naming the launch
process and the role's call.

The processes are started from a thread of their own that lives until ``close`` (at_once's
InTurn): each asks to die with the thread that started it (PR_SET_PDEATHSIG is tied to that
thread, not to the controller), and a check's thread ends with its check.

Each is sent the view its tools start in as its first message (launch_process.py's VIEW or
HOST_VIEW) and is idle only then. Given VIEW_LATER, the pool may start its processes before the
view exists (the nono layer's head start, started as soon as the run tree is claimed, before the
run's services: app/tools/nono/head_start.py), so that their interpreters and nono-py's import
overlap the services' start; ``serve_in`` then sends each the view.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Final

import nono_py

from app.core.repo import REPO_ROOT
from app.core.results import HelperLost
from app.core.run import ToolView
from app.core.tool_counts import ToolCounts
from app.tools import waiting
from app.tools.at_once import InTurn
from app.tools.channel import Channel, Output, failure
from app.tools.nono.helper_state import described, is_stopped
from app.tools.nono.launch_process import HOST_VIEW, TAKEN, VIEW
from app.tools.nono.translate import Grants, apply

# How much longer than the call's own time limit its output is read: only a holder of that
# limit that failed to end the call is ever waited out.
READING_MARGIN_SECONDS: Final = 5.0
# How long a reply may take once the tool has ended: nono-py reaps it and returns at once
# (measured: under 1 ms, at load averages of 7 to 9 on 2 cores).
REPLY_SECONDS: Final = 5.0
# How long a launch process may take to say it has a request in hand: a fresh one first starts
# its interpreter and loads nono-py (measured below 1 s at load averages of 7 to 9 on 2 cores),
# an idle one answers at once.
TAKEN_SECONDS: Final = 10.0
_MAX_REPLY_BYTES: Final = 64 * 1024
# Each access mode by the name the launch process looks up on nono-py.
_MODE_NAMES: Final = {
    nono_py.AccessMode.READ: "READ",
    nono_py.AccessMode.WRITE: "WRITE",
    nono_py.AccessMode.READ_WRITE: "READ_WRITE",
}


class _ViewLater:
    """A pool's view not known at its start: ``serve_in`` gives it."""


VIEW_LATER: Final = _ViewLater()


class LaunchFailed(RuntimeError):
    """nono-py, in a launch process, raised before the tool ran: a piece of the machine."""


class LaunchProcessLost(HelperLost):
    """A launch process ended, or stopped answering, during a call: the run stops (exit 1)."""


class _Recorder:
    """translate.py's Capabilities, as the calls a launch process replays on nono-py's set."""

    def __init__(self) -> None:
        self.calls: list[list[Any]] = []

    def allow_path(self, path: str, mode: nono_py.AccessMode) -> None:
        self.calls.append(["allow_path", path, _MODE_NAMES[mode]])

    def allow_file(self, path: str, mode: nono_py.AccessMode) -> None:
        self.calls.append(["allow_file", path, _MODE_NAMES[mode]])

    def block_network(self) -> None:
        self.calls.append(["block_network"])

    def allow_tcp_connect_port(self, port: int) -> None:
        self.calls.append(["allow_tcp_connect_port", port])


def capability_calls(grants: Grants, front_port: int | None = None) -> list[list[Any]]:
    """The grants as the capability calls a launch process makes (translate.apply's own)."""
    recorder = _Recorder()
    apply(grants, recorder, front_port)
    return recorder.calls


@dataclass(frozen=True)
class LaunchRequest:
    """One sandboxed_exec, as its launch process makes it."""

    capabilities: list[list[Any]]
    command: list[str]
    cwd: str
    timeout_secs: float
    env: list[tuple[str, str]]
    inherit_env: bool
    enforcement_mode: str
    max_file_size_bytes: int | None = None
    uid: int | None = None
    gid: int | None = None

    def encoded(self) -> bytes:
        fields = {key: value for key, value in asdict(self).items() if value is not None}
        return json.dumps(fields).encode("utf-8")


@dataclass(frozen=True)
class _LaunchProcess:
    process: subprocess.Popen[bytes]
    connection: socket.socket


class LaunchProcesses:
    """``count`` launch processes, started by ``start`` or on first use (see the module's
    docstring)."""

    def __init__(self, count: int, view: ToolView | _ViewLater | None, counts: ToolCounts) -> None:
        self._count = count
        self._view = None if isinstance(view, _ViewLater) else view
        # Whether the view is known: until then, started processes wait in _unsettled.
        self._settled = not isinstance(view, _ViewLater)
        self._unsettled: list[_LaunchProcess] = []
        # The run's: the CPU of the tools each process reaped, until it is reaped itself.
        self._counts = counts
        # Idle processes; a start's failure, put back by each call that takes it.
        self._idle: queue.SimpleQueue[_LaunchProcess | LaunchFailed] = queue.SimpleQueue()
        self._all: list[_LaunchProcess] = []
        # How many of the ``count`` processes ``start`` has asked for so far.
        self._begun = 0
        self._lock = threading.Lock()
        # The thread every process is started from, until close.
        self._starter: InTurn | None = None

    def start(self, count: int | None = None) -> None:
        """Starts ``count`` more of the pool's processes (by default, all it has not started),
        without waiting for them to be ready."""
        with self._lock:
            if self._starter is None:
                self._starter = InTurn("nono-launchers")
            starter, left = self._starter, self._count - self._begun
            more = left if count is None else min(count, left)
            self._begun += more
        if more > 0:
            starter.hand(partial(self._start_some, more))

    def _start_some(self, count: int) -> None:
        for _ in range(count):
            try:
                launcher = self._start_one()
            except OSError as error:
                self._idle.put(LaunchFailed(f"a nono launch process could not start: {error}"))
                continue
            with self._lock:
                self._all.append(launcher)
                settled = self._settled
                if not settled:
                    self._unsettled.append(launcher)
            if settled:
                self._ready(launcher)

    def serve_in(self, view: ToolView | None) -> None:
        """Gives a pool made with VIEW_LATER its view: each process started so far is sent it
        and is idle from now, as is each started later. Once only; later calls change
        nothing."""
        with self._lock:
            if self._settled:
                return
            self._view, self._settled = view, True
            waiting, self._unsettled = self._unsettled, []
        for launcher in waiting:
            self._ready(launcher)

    def _ready(self, launcher: _LaunchProcess) -> None:
        """Sends a started process its view; it is idle from now."""
        view = self._view
        # A process that has died cannot take it: its first call finds it lost, as any
        # other's, and names it.
        with suppress(OSError):
            if view is None:
                launcher.connection.send(HOST_VIEW)
            else:
                socket.send_fds(launcher.connection, [VIEW], [view.namespace_fd])
        self._idle.put(launcher)

    def _start_one(self) -> _LaunchProcess:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        passed = [theirs.fileno()]
        argv = [sys.executable, "-m", "app.tools.nono.launch_process", str(os.getpid())]
        argv.append(str(theirs.fileno()))
        try:
            process = subprocess.Popen(
                argv,
                # The controller's own environment, unchanged: a profile that inherits the
                # environment inherits the controller's, as it would from nono-py called here.
                cwd=REPO_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=passed,
                # A Ctrl-C at the terminal is the controller's to handle.
                start_new_session=True,
            )
        finally:
            theirs.close()
        return _LaunchProcess(process, ours)

    def _take(self) -> _LaunchProcess:
        """An idle process; the pool's view must be known (a VIEW_LATER pool's ``serve_in``)."""
        self.start()
        if not self._settled:
            raise RuntimeError("a nono launch pool was called before it was given its view")
        taken = waiting.take(self._idle)
        if isinstance(taken, LaunchFailed):
            self._idle.put(taken)  # for every other call waiting: none will start now
            raise taken
        return taken

    def call(
        self,
        request: LaunchRequest,
        *,
        who: str,
        on_start: Callable[[], None] = lambda: None,
    ) -> tuple[Output, int]:
        """Makes ``request`` in an idle launch process; what the tool sent back on its channel
        and its exit status. Output past the channel's bounds raises its stop once the call has
        returned, as a timeout does; ``on_start`` runs as the request is sent."""
        launcher = self._take()
        channel = Channel()
        healthy = False
        try:
            try:
                socket.send_fds(launcher.connection, [request.encoded()], [channel.write_fd])
            except OSError as error:
                lost = self._lost(launcher)
                raise LaunchProcessLost(
                    f"the nono launch process (pid {launcher.process.pid}) could not take the "
                    f"call for {who}: {lost}"
                ) from error
            on_start()
            channel.close_write()
            self._taken(launcher, who)
            limit = request.timeout_secs
            deadline = time.monotonic() + limit + READING_MARGIN_SECONDS
            output = channel.read(
                launcher.connection.fileno(), deadline, watch=lambda: self._watch(launcher, who)
            )
            # Closed before the reply is read: a tool still writing gets EPIPE, and buffers
            # nothing more.
            channel.close()
            reply = self._reply(launcher, who, time.monotonic() + REPLY_SECONDS)
            healthy = True
        finally:
            channel.close()
            if healthy:
                self._idle.put(launcher)
            else:
                self._replace(launcher)
        if "error" in reply:
            raise LaunchFailed(f"{reply['error']}: {reply.get('message', '')}")
        self._counts.unreaped(launcher.process.pid, float(reply["children_cpu_seconds"]))
        failed = failure(who, output, limit)
        if failed is not None:
            raise failed
        return output, int(reply["exit_code"])

    def _taken(self, launcher: _LaunchProcess, who: str) -> None:
        """The launch process's word that the request is in hand, within TAKEN_SECONDS."""
        launcher.connection.settimeout(TAKEN_SECONDS)
        pid = launcher.process.pid
        try:
            message: bytes | None = launcher.connection.recv(_MAX_REPLY_BYTES)
        except TimeoutError:
            message = None
        except OSError:
            message = b""
        if message == TAKEN:
            return
        what = (
            f"did not take the call for {who} within {TAKEN_SECONDS:g} s"
            if message is None
            else f"ended before it took the call for {who}"
            if not message
            else f"answered the call for {who} with something else"
        )
        raise LaunchProcessLost(f"the nono launch process (pid {pid}) {what}: {described(pid)}")

    @staticmethod
    def _watch(launcher: _LaunchProcess, who: str) -> None:
        """A launch process stopped mid-call would hold the call until its deadline: the run
        stops at once instead, naming it."""
        if is_stopped(launcher.process.pid):
            raise LaunchProcessLost(
                f"the nono launch process (pid {launcher.process.pid}) making the call for {who} "
                f"stopped answering: {described(launcher.process.pid)}"
            )

    def _reply(self, launcher: _LaunchProcess, who: str, deadline: float) -> dict[str, Any]:
        launcher.connection.settimeout(max(0.0, deadline - time.monotonic()))
        try:
            message = launcher.connection.recv(_MAX_REPLY_BYTES)
        except TimeoutError:
            raise LaunchProcessLost(
                f"{who} outlasted its time limit and nono-py did not end it"
            ) from None
        except OSError as error:
            raise LaunchProcessLost(
                f"the nono launch process (pid {launcher.process.pid}) making the call for "
                f"{who} failed: {error}"
            ) from None
        if not message:
            raise LaunchProcessLost(
                f"the nono launch process (pid {launcher.process.pid}) making the call for "
                f"{who} ended: {self._lost(launcher)}"
            )
        reply: dict[str, Any] = json.loads(message)
        return reply

    @staticmethod
    def _lost(launcher: _LaunchProcess) -> str:
        # Its socket closes as it exits, a moment before it can be reaped.
        try:
            code = launcher.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "it is still running"
        return f"it ended with status {code}"

    def _replace(self, launcher: _LaunchProcess) -> None:
        """Ends a launch process that failed a call, and asks for another in its place."""
        self._end(launcher)
        starter = self._starter
        if starter is not None:
            starter.hand(partial(self._start_some, 1))

    def _end(self, launcher: _LaunchProcess) -> None:
        launcher.connection.close()
        with suppress(ProcessLookupError):
            launcher.process.kill()
        launcher.process.wait()
        self._counts.reaped(launcher.process.pid)
        with self._lock:
            if launcher in self._all:
                self._all.remove(launcher)

    def pids(self) -> list[int]:
        with self._lock:
            return [launcher.process.pid for launcher in self._all]

    def close(self) -> None:
        """Ends every launch process: its socket closed, it ends at once if idle; one still in
        a call (a run stopped by a signal) is killed when its starting thread ends."""
        with self._lock:
            starter, self._starter = self._starter, None
        if starter is None:
            return
        starter.close()
        with self._lock:
            launchers, self._all = self._all, []
            self._unsettled = []
        for launcher in launchers:
            launcher.connection.close()
        for launcher in launchers:
            with suppress(ProcessLookupError):
                launcher.process.kill()
            launcher.process.wait()
            self._counts.reaped(launcher.process.pid)
