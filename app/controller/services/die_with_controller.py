"""Starts a local service so that it dies with the controller that started it, however the
controller ends, ``kill -9`` included.

Run as ``python -I die_with_controller.py <controller pid> <program> [args...]``: it asks the
kernel to send it SIGKILL when its parent dies (PR_SET_PDEATHSIG), checks that its parent is
still the controller (which may have died before the request was made), then replaces itself
with the service, which keeps the request across exec. Standard library only, run by path: it
starts in milliseconds and imports nothing of the app.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

PR_SET_PDEATHSIG = 1
PROGRAM = Path(__file__).resolve()


def dying_with_controller(argv: Sequence[str]) -> list[str]:
    """The command that runs ``argv`` tied to this process's life."""
    return [sys.executable, "-I", str(PROGRAM), str(os.getpid()), *argv]


def main(argv: list[str]) -> int:
    parent, program = int(argv[1]), argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        print(f"die_with_controller: prctl: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    if os.getppid() != parent:
        return 1  # the controller died before the request: the service must not start at all
    os.execv(program[0], program)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
