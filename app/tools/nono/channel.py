"""A nono tool process's channel back (app/tools/channel.py), which nono-py would otherwise read
for the controller, to the end and without a bound.

nono-py's sandboxed_exec (0.16, src/sandboxed_exec.rs) puts pipes of its own on the child's
stdout and stderr, reads each into memory until end of file with no limit on size or time, and
closes every descriptor above 2 before exec; there is no way to hand it others. Standard input
it leaves as the calling thread has it. So each call is made from a thread of its own whose
descriptor table is its own (close_range(2)'s CLOSE_RANGE_UNSHARE) and holds, above 2, nothing
but the call's channel, as descriptor 0. The launcher's command then makes the tool's stdout
and stderr that channel (CHANNEL_PRELUDE), before the worker's package is imported, before any
code the tool could choose runs: nono-py's pipes, closed there, reach end of file at once and
hold nothing.

No other thread's descriptors change: the call's thread has a copy of the table, and it closes
its copies of the rest at once, so it holds no other call's pipe open.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from typing import Final, Generic, TypeVar

from app.core.run_tree import INTERPRETER, WORKER_ENTRY
from app.tools.channel import Channel, Output, failure

T = TypeVar("T")

# Run by the tool's interpreter first of all (see the module's docstring): its stdout and
# stderr become the channel it was given as its standard input.
CHANNEL_PRELUDE: Final = "import os; os.dup2(0, 1); os.dup2(0, 2); "
# How a nono tool process starts the worker: run_tree's WORKER_COMMAND, the prelude first.
NONO_WORKER_COMMAND: Final = (INTERPRETER, "-S", "-c", CHANNEL_PRELUDE + WORKER_ENTRY)
# close_range(2) with this flag first gives the calling thread a table of its own, as
# unshare(CLONE_FILES) would; unlike unshare, container runtimes' default seccomp profiles allow
# it to an unprivileged container.
_CLOSE_RANGE_UNSHARE: Final = 2
_NO_FD: Final = 2**32 - 1
# close_range(2)'s upper bound: every descriptor there can be.
_LAST_FD: Final = 2**31 - 1
# How much longer than the call's own time limit its output is read: only a holder of that
# limit that failed to end the call is ever waited out.
_READING_MARGIN: Final = 5.0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.close_range.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_int]
_libc.close_range.restype = ctypes.c_int


def _keep_only(kept: tuple[int, ...]) -> None:
    """Closes, in this thread's own table, every descriptor above 2 but ``kept``."""
    low = 3
    for fd in sorted(kept):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, _LAST_FD)


class ChannelCall(Generic[T]):
    """``call`` (one sandboxed_exec) made in a thread of its own with ``channel`` as its
    standard input, after ``first`` (entering the decoy view), which runs in that thread while
    its table is still the process's. ``ended_fd`` becomes readable when the call has returned:
    the tool's own process has ended."""

    def __init__(
        self, channel: Channel, call: Callable[[], T], first: Callable[[], None] | None = None
    ) -> None:
        self._channel = channel
        self._call = call
        self._first = first
        self.ended_fd = os.eventfd(0, os.EFD_CLOEXEC)
        self._ready = threading.Event()
        self._outcome: tuple[T] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tool-channel", daemon=True)

    def start(self) -> None:
        """Starts the call; returns once its thread holds its own copy of the channel, when the
        caller drops its own (Channel.close_write) so that end of file means the tool's end."""
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        own_table = False
        try:
            try:
                if self._first is not None:
                    self._first()
                # An empty range: the table becomes this thread's own, and nothing is closed.
                if _libc.close_range(_NO_FD, _NO_FD, _CLOSE_RANGE_UNSHARE) != 0:
                    number = ctypes.get_errno()
                    raise OSError(
                        number, f"close_range(CLOSE_RANGE_UNSHARE): {os.strerror(number)}"
                    )
                own_table = True
                _keep_only((self._channel.write_fd, self.ended_fd))
                os.dup2(self._channel.write_fd, 0)
                os.close(self._channel.write_fd)
            finally:
                self._ready.set()
            self._outcome = (self._call(),)
        except BaseException as error:  # handed to the caller's thread by result()
            self._error = error
        finally:
            if own_table:
                os.close(0)  # this thread's copy of the channel: the tool's end is end of file
            os.eventfd_write(self.ended_fd, 1)

    def join(self) -> None:
        """Waits for the call to return (at once if its thread never started)."""
        if self._thread.ident is not None:
            self._thread.join()
        if self.ended_fd >= 0:
            os.close(self.ended_fd)
            self.ended_fd = -1

    def result(self) -> T:
        """The call's return value, or what it raised; waits for it first."""
        self.join()
        if self._error is not None:
            raise self._error
        assert self._outcome is not None
        return self._outcome[0]


def exec_on_channel(
    call: Callable[[], T],
    *,
    who: str,
    time_limit: float,
    first: Callable[[], None] | None = None,
) -> tuple[Output, T]:
    """Makes ``call`` on a new channel and reads it meanwhile: what the tool sent back, and
    what the call returned once it has. Output past the channel's bounds raises its stop
    (app/tools/channel.py's ``failure``) once the call has returned: the channel is closed
    first, so a tool still writing gets EPIPE, and only nono-py, which alone knows the child,
    ends it, at its time limit if not before. ``time_limit`` is the call's own, which nono-py
    holds; the reading outlasts it a little, and ends only if nono-py failed to. ``first`` runs
    in the call's thread before anything else (ChannelCall)."""
    channel = Channel()
    made = ChannelCall(channel, call, first)
    output: Output | None = None
    try:
        made.start()
        channel.close_write()
        output = channel.read(made.ended_fd, time.monotonic() + time_limit + _READING_MARGIN)
    finally:
        # Closed before waiting: a tool still writing gets EPIPE, and buffers nothing more.
        channel.close()
        made.join()
    failed = failure(who, output, time_limit)
    if failed is not None:
        raise failed
    return output, made.result()
