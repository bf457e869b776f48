"""The standard streams, handled as what they are when they fail.

- Closed at start (``<&-``, ``>&-``, ``2>&-``): the descriptor is given /dev/null before any
  file, socket or pipe can take its number (a service's socket on descriptor 1 once made every
  print go to moto). A closed standard output is then refused (exit 2): the check lines and the
  result have nowhere to go. Closed input and error output are harmless: the controller reads
  nothing, and says what it must on a stream that discards it.
- Failing mid-run (a reader gone: ``| head -1``; a full file: ``> /dev/full``; a terminal hung
  up): the first failed write raises OutputLost, a stop of the run (exit 1) named for the
  stream, never read as a full disk of the run's own; later writes go nowhere, so the run's
  clean-up and the interpreter's exit never fail on it again.
- An encoding that cannot show a character (``PYTHONIOENCODING=ascii``): the character is
  written as its escape, so a line is never lost for one character.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Final, TextIO

from app.core.errors import BadInput, RunStopped

DESCRIPTORS: Final = {0: "standard input", 1: "standard output", 2: "standard error"}
# Which of them were closed when the program started.
closed_at_start: set[int] = set()


class OutputLost(RunStopped):
    """A standard stream can no longer be written: the command stopped there (a run, after
    cleaning up: see ``in_a_run``)."""

    def in_a_run(self) -> OutputLost:
        """The same stop, saying what a run did before it ended."""
        return OutputLost(
            f"{self.message}; the run stopped there",
            f"its services were stopped and its secrets and unfinished files removed; "
            f"{self.remedy}",
        )


class OutputClosed(BadInput):
    """Standard output was closed before the program started."""


def reopen_closed() -> None:
    """Gives each closed standard descriptor /dev/null, lowest first (as os.open picks)."""
    for fd in DESCRIPTORS:
        try:
            os.fstat(fd)
        except OSError:
            closed_at_start.add(fd)
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:  # a lower one was free after all; never expected
                os.dup2(opened, fd)
                os.close(opened)


def refuse_closed_output() -> None:
    if 1 in closed_at_start:
        raise OutputClosed(
            "standard output is closed: the check lines and the run's result are written there",
            "run it with its output on a terminal, in a file or into a pipe",
        )


def _reason(error: OSError) -> str:
    if error.errno == errno.EPIPE:
        return "its reader has closed it (Broken pipe)"
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the file it goes to is full ({error.strerror})"
    return f"it cannot be written ({error.strerror})"


class _GuardedFile(io.FileIO):
    """A standard descriptor whose first failed write raises OutputLost (or, for standard
    error, nothing), and whose later writes are dropped."""

    def __init__(self, fd: int, *, report: bool) -> None:
        super().__init__(fd, "w", closefd=False)
        self._report = report
        self.lost = False

    def write(self, data: object) -> int:
        size = len(memoryview(data))  # type: ignore[arg-type]
        if self.lost:
            return size
        try:
            return super().write(data)  # type: ignore[arg-type]
        except OSError as error:
            self.lost = True
            if not self._report:
                return size
            raise OutputLost(
                f"{DESCRIPTORS[self.fileno()]} failed: {_reason(error)}",
                "send the output where it can be written",
            ) from None


def _guarded(stream: TextIO | None, *, report: bool) -> io.TextIOWrapper | None:
    """``stream`` rebuilt over a guarded descriptor, or None when it is not a real one (a
    test's captured stream: left as it is)."""
    if stream is None:
        return None
    try:
        fd = stream.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    stream.flush()
    return io.TextIOWrapper(
        io.BufferedWriter(_GuardedFile(fd, report=report)),
        encoding=stream.encoding,
        errors="backslashreplace",
        line_buffering=bool(stream.line_buffering),
    )


@contextmanager
def guarded_streams() -> Iterator[None]:
    """Within the block, sys.stdout and sys.stderr are guarded; the originals come back after,
    with nothing left in them to flush."""
    originals = sys.stdout, sys.stderr
    out = _guarded(sys.stdout, report=True)
    err = _guarded(sys.stderr, report=False)
    sys.stdout = out or sys.stdout
    sys.stderr = err or sys.stderr
    try:
        yield
    finally:
        for replacement in (out, err):
            if replacement is not None:
                # Said already, or ending anyway: the exit code stands.
                with suppress(OutputLost):
                    replacement.flush()
                replacement.detach()
        sys.stdout, sys.stderr = originals
