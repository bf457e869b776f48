"""A nono tool process looked at from outside while it waits: what the host's /proc says of it.

No profile grants a role /proc (it would show every process of the host: nono gives a role no
pid namespace), so the role cannot read its own seccomp state. The controller can: the role
runs the worker's ``hold`` action, writes its pid to one of its own output files and blocks
on a FIFO in its input directory; the controller reads /proc/<pid>/status, then releases it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.core.results import ToolResult, ToolRunError
from app.tools.execution import (
    TOOL_TIMEOUT_SECONDS,
    make_release_fifo,
    open_when_held,
    parse_output,
)
from app.tools.worker.system import read_status

# Runs the role's ``hold`` action with this FIFO and pid file; returns (output, exit status).
Starter = Callable[[Path, str], tuple[bytes, int]]


@dataclass(frozen=True)
class HeldReading:
    """The held role's status fields and command line, read on the host, and its result."""

    pid: int
    status: dict[str, str]
    command: list[str]
    result: ToolResult


def read_while_held(fifo: Path, *, who: str, pid_file: str, start: Starter) -> HeldReading:
    """Starts the role in a thread (nono-py's call blocks until the role exits), reads its
    /proc entries once it holds ``fifo``, and releases it."""
    make_release_fifo(fifo.parent, fifo.name)
    outcome: dict[str, tuple[bytes, int] | BaseException] = {}

    def run() -> None:
        try:
            outcome["exit"] = start(fifo, pid_file)
        except BaseException as error:  # handed to the caller's thread below
            outcome["error"] = error

    thread = threading.Thread(target=run, name="held-tool", daemon=True)
    thread.start()
    try:
        writer = open_when_held(fifo, lambda: not thread.is_alive(), who=who)
        try:
            # The role wrote its pid before it opened the FIFO, so it is there now, and the
            # process is alive (it holds the FIFO): the pid is its own, not a reused one.
            pid = int(Path(pid_file).read_text(encoding="ascii").strip())
            status = read_status(f"/proc/{pid}/status")
            command = [
                part.decode("utf-8", "replace")
                for part in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if part
            ]
        finally:
            os.close(writer)
    except ToolRunError:
        # The role ended without ever holding the FIFO: say why in its own words if it can.
        thread.join(TOOL_TIMEOUT_SECONDS)
        ended = outcome.get("error") or outcome.get("exit")
        if isinstance(ended, BaseException):
            raise ended from None
        if isinstance(ended, tuple):
            parse_output(*ended, who=who, action="hold", args=())
        raise
    finally:
        thread.join(TOOL_TIMEOUT_SECONDS)
        fifo.unlink()
    error = outcome.get("error")
    if isinstance(error, BaseException):
        raise error
    exit_ = outcome.get("exit")
    if not isinstance(exit_, tuple):
        raise ToolRunError(f"{who} did not finish once released")
    return HeldReading(pid, status, command, parse_output(*exit_, who=who, action="hold", args=()))
