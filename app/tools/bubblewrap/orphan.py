"""What becomes of a tool process when its bwrap is killed, as a timeout kills it.

The tool is started holding a FIFO open (the worker's ``hold`` action), so it stays alive
until the controller releases it. Its stdout is a pipe only the processes of the sandbox hold:
once every one of them is gone, the controller reads end of file there.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from app.tools.channel import MAX_OUTPUT_BYTES
from app.tools.execution import has_reader, open_when_held
from app.tools.worker.protocol import RESULT_PREFIX

# How long a killed sandbox may take to disappear. Only a failing run ever waits this long.
GONE_DEADLINE_SECONDS: Final = 20.0


@dataclass(frozen=True)
class Orphan:
    """What the controller saw after it killed the held tool's bwrap."""

    bwrap_returncode: int
    # The sandbox's output reached end of file before the controller released the tool:
    # every process of the sandbox was gone.
    output_closed: bool
    # After bwrap was reaped, the tool still held its FIFO open.
    outlived: bool
    # The tool printed its result line, which it does only once released.
    answered: bool


def _read_until_eof(stream: int, deadline: float) -> tuple[bytes, bool]:
    """What is readable on ``stream`` until end of file or the deadline, (data, at_eof): the
    first MAX_OUTPUT_BYTES of it; the rest is read and dropped, so a tool that floods its
    output costs the controller no memory."""
    chunks: list[bytes] = []
    kept = 0
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            chunk = os.read(stream, 65536)
            if not chunk:
                return b"".join(chunks), True
            if kept < MAX_OUTPUT_BYTES:
                chunks.append(chunk[: MAX_OUTPUT_BYTES - kept])
                kept += len(chunks[-1])
    return b"".join(chunks), False


def observe_orphan(
    process: subprocess.Popen[bytes], fifo: Path, *, who: str, wait_for_death: bool
) -> Orphan:
    """Kills ``process`` (bwrap) once its tool holds ``fifo``, then looks at the tool.

    With ``wait_for_death`` the controller waits for the sandbox's output to close before it
    releases the tool (the tool should be killed with bwrap); without it, the controller looks
    at once whether the tool still holds the FIFO (nothing else would end it) and releases it.
    """
    assert process.stdout is not None and process.stderr is not None
    writer = open_when_held(fifo, lambda: process.poll() is not None, who=who)
    output = b""
    try:
        process.kill()
        process.wait()
        closed = False
        if wait_for_death:
            output, closed = _read_until_eof(
                process.stdout.fileno(), time.monotonic() + GONE_DEADLINE_SECONDS
            )
        outlived = has_reader(fifo)
    finally:
        os.close(writer)  # releases a tool that is still there
    rest, _ = _read_until_eof(process.stdout.fileno(), time.monotonic() + GONE_DEADLINE_SECONDS)
    process.stdout.close()
    process.stderr.close()
    answered = any(line.startswith(RESULT_PREFIX) for line in (output + rest).decode().splitlines())
    return Orphan(process.returncode, closed, outlived, answered)
