"""The channel back from a tool process: one pipe for its stdout and stderr together, read by
the controller up to a fixed size and until a deadline.

Whatever comes through it is the tool's to choose, so the controller never holds more of it than
MAX_OUTPUT_BYTES, never waits on it past the call's time limit, and never waits for it once the
tool's own process has ended: output still held open then is held by something the tool left
behind. The first two end the call with ToolOutputRefused, the deadline with ToolRunError, as a
timeout always has (the run stops, exit 1, naming the process); the caller kills what it
started. Closing the read end is what bounds a tool that
keeps writing: it gets EPIPE (or SIGPIPE) and nothing more is buffered for it.
"""

from __future__ import annotations

import enum
import os
import selectors
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from app.core.results import ToolOutputRefused, ToolRunError

# The most a tool may send back: stdout and stderr together. A result line is one JSON object;
# the largest a case allows (the evaluator's comparison of 50 suppliers with 63-character ids)
# is about 8 KiB, the largest in the sample case's runs 1.1 KiB, and a Python traceback a few
# KiB: 64 KiB is eight times the largest result, and what the controller holds per call.
MAX_OUTPUT_BYTES: Final = 64 * 1024
# Once the tool's process has ended, the channel has reached end of file already (the kernel
# closes an exiting process's descriptors before its parent learns of its end), unless another
# process holds it. This only outlasts the two events being seen one after the other.
HELD_AFTER_END_SECONDS: Final = 1.0
# How often a caller's ``watch`` is asked, while the channel is quiet.
WATCH_SECONDS: Final = 0.25
_CHUNK: Final = 65536


class Ending(enum.Enum):
    """How the reading of one call's output ended."""

    COMPLETE = "complete"  # end of file, and the tool's process has ended
    TOO_LONG = "too long"
    HELD = "held after the tool ended"
    TIMED_OUT = "timed out"


@dataclass(frozen=True)
class Output:
    data: bytes
    ending: Ending


class Channel:
    """One call's pipe: the write end for the tool (stdout and stderr), the read end here."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe2(os.O_CLOEXEC)

    def close_write(self) -> None:
        """Drops the controller's copy of the write end, once the tool holds its own."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def close(self) -> None:
        """Closes both ends; a tool still writing gets EPIPE from here on."""
        self.close_write()
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1

    def read(
        self,
        ended_fd: int,
        deadline: float,
        limit: int = MAX_OUTPUT_BYTES,
        watch: Callable[[], None] | None = None,
    ) -> Output:
        """Reads until end of file after the tool's end (``ended_fd`` readable: a pidfd, or an
        eventfd the caller signals), or until more than ``limit`` bytes, the tool's end without
        end of file, or ``deadline`` (time.monotonic) stop it. ``watch``, asked every
        WATCH_SECONDS, raises to stop the reading (a helper the call depends on has stopped)."""
        chunks: list[bytes] = []
        size = 0
        at_eof = ended = False
        ended_at = 0.0
        with selectors.DefaultSelector() as selector:
            selector.register(self.read_fd, selectors.EVENT_READ)
            selector.register(ended_fd, selectors.EVENT_READ)
            while True:
                now = time.monotonic()
                if ended and at_eof:
                    return Output(b"".join(chunks), Ending.COMPLETE)
                if ended and now - ended_at >= HELD_AFTER_END_SECONDS:
                    return Output(b"".join(chunks), Ending.HELD)
                if now >= deadline:
                    return Output(b"".join(chunks), Ending.TIMED_OUT)
                wait = deadline - now
                if ended:
                    wait = min(wait, ended_at + HELD_AFTER_END_SECONDS - now)
                if watch is not None:
                    watch()
                    wait = min(wait, WATCH_SECONDS)
                for key, _ in selector.select(wait):
                    if key.fd == ended_fd:
                        selector.unregister(ended_fd)
                        ended, ended_at = True, time.monotonic()
                        continue
                    chunk = os.read(self.read_fd, min(_CHUNK, limit + 1 - size))
                    if not chunk:
                        selector.unregister(self.read_fd)
                        at_eof = True
                        continue
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > limit:
                        return Output(b"".join(chunks)[:limit], Ending.TOO_LONG)


def failure(who: str, output: Output, time_limit: float) -> ToolRunError | None:
    """The stop for an output that did not end complete, naming ``who`` (a role's tool process,
    or the unconfined control); None for a complete one."""
    match output.ending:
        case Ending.COMPLETE:
            return None
        case Ending.TOO_LONG:
            return ToolOutputRefused(
                f"{who} wrote more than {MAX_OUTPUT_BYTES // 1024} KiB to its stdout and stderr, "
                "more than any result: the controller stopped it and read no further"
            )
        case Ending.HELD:
            return ToolOutputRefused(
                f"{who} ended, but a process it left behind still held its stdout or stderr "
                "open: the controller stopped reading them"
            )
        case Ending.TIMED_OUT:
            return ToolRunError(f"{who} timed out after {time_limit:g}s")
