"""The time limit of a nono tool process, held by the controller rather than by nono-py.

Given a timeout, nono-py's sandboxed_exec waits for its child by polling waitpid and sleeping
10 ms between tries, so every tool process ends up to 10 ms late: about 5 ms on average, a
third of a whole start. Given none, it waits in one blocking waitpid. So the controller holds
the limit itself: one thread that, if a call outlives its limit, kills the child the calling thread
forked, and its process group (nono-py makes the child the leader of a group of its own).

The child is the one process that became a child of the calling thread during the call: the
kernel lists a thread's children in /proc/self/task/<tid>/children, and each is told apart
from one that was there before by its start time, so a reused pid is never taken for it.

nono-py's polling loop does one more thing: it answers the seccomp supervisor of a proxy-only
role when Landlock cannot filter TCP itself (ABI below 4). There, and where the kernel keeps no
children list, the launcher gives nono-py the timeout instead (see ``held_here``).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import signal
import threading
import time
from pathlib import Path
from types import TracebackType

# A process as its start time tells it apart from any later one given the same pid.
Process = tuple[int, str]


def _children_file(tid: int) -> Path:
    return Path(f"/proc/self/task/{tid}/children")


def held_here() -> bool:
    """Whether this kernel lists a thread's children (CONFIG_PROC_CHILDREN)."""
    return _children_file(threading.get_native_id()).exists()


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # Field 22, counted after the command name, which may itself hold spaces and parentheses.
    return stat.rsplit(")", 1)[1].split()[19]


def _children(tid: int) -> set[Process]:
    found: set[Process] = set()
    for word in _children_file(tid).read_text(encoding="ascii").split():
        started = _start_time(int(word))
        if started is not None:
            found.add((int(word), started))
    return found


class ToolDeadline:
    """``with ToolDeadline(seconds): nono_py.sandboxed_exec(...)`` kills the call's child if
    the call is still running after ``seconds``; ``expired`` says whether it did."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._tid = threading.get_native_id()
        self._before: set[Process] = set()
        self._running = False
        self._lock = threading.Lock()

    def __enter__(self) -> ToolDeadline:
        self._tid = threading.get_native_id()
        self._before = _children(self._tid)
        self._running = True
        _KEEPER.watch(self, time.monotonic() + self.seconds)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with self._lock:
            # From here the thread may fork again: the keeper must not look at its children.
            self._running = False

    def expire(self) -> None:
        """Called by the keeper when the time is up: kills the call's child, if still running."""
        with self._lock:
            if self._running:
                self.expired = True
                self._kill()

    def stop(self) -> None:
        """Kills the call's child now, before its time is up (its output broke the channel's
        bounds: nono/channel.py), if it is still running."""
        with self._lock:
            if self._running:
                self._kill()

    def _kill(self) -> None:
        for pid, _ in _children(self._tid) - self._before:
            # nono-py made the child a group leader from both sides of its fork; the
            # group may have ended meanwhile.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


class _Keeper:
    """One thread for every deadline of the process. A thread per call would count against
    nono-py's own limit: sandboxed_exec refuses to fork from a process of more than 32."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, ToolDeadline]] = []
        self._added = itertools.count()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, deadline: ToolDeadline, at: float) -> None:
        with self._changed:
            heapq.heappush(self._due, (at, next(self._added), deadline))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tool-deadlines")
                self._thread.daemon = True
                self._thread.start()
            self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][0] > time.monotonic():
                    left = self._due[0][0] - time.monotonic() if self._due else None
                    self._changed.wait(None if left is None else max(left, 0.0))
                _, _, deadline = heapq.heappop(self._due)
            deadline.expire()


_KEEPER = _Keeper()
