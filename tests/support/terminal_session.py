"""Run as a program on a pseudo-terminal's slave side, as session leader with the terminal as
its controlling terminal (the test starts it with pty.fork): tries TIOCSTI itself (the control),
then from a nono tool process started here, without the baseline filter and with it, and prints
one JSON line of what happened.

This is the controller's position when an operator runs the demo in a terminal.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import select
import shutil
import sys
import tempfile
import termios
import tty
from pathlib import Path

from app.core.roles import Layer
from app.tools.nono.launcher import NonoLayer
from tests.support.whole_runs import bare_run, bare_tree

# The injected character reaches the terminal's input through a work queue; this bounds the
# wait for it, and is only ever waited out when it never comes.
ARRIVAL_SECONDS = 10.0


def _pending_input(timeout: float) -> bytes:
    ready, _, _ = select.select([0], [], [], timeout)
    return os.read(0, 64) if ready else b""


def main() -> int:
    # Raw mode: a pushed character is readable at once, not only after a newline.
    tty.setraw(0, termios.TCSANOW)
    base = Path(tempfile.mkdtemp(prefix="analyst-tty-", dir="/var/tmp"))
    base.chmod(0o755)
    # The control: TIOCSTI works in this terminal, from a process that holds it.
    try:
        fcntl.ioctl(0, termios.TIOCSTI, b"Z")
        control = "succeeded"
    except OSError as error:
        control = errno.errorcode.get(error.errno or 0, str(error.errno))
    injected = _pending_input(ARRIVAL_SECONDS) if control == "succeeded" else b""
    try:
        layer = NonoLayer(bare_run(bare_tree(base), Layer.NONO))
        layer.preflight()
        try:
            unfiltered = layer.run_confined(
                "evaluator", "push-terminal-input", [], baseline=False, purpose="tty control"
            )
            unfiltered_leak = _pending_input(ARRIVAL_SECONDS) if unfiltered.ok else b""
            filtered = layer.run_tool("evaluator", "push-terminal-input")
            filtered_leak = _pending_input(ARRIVAL_SECONDS) if filtered.ok else b""
        finally:
            layer.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(
        json.dumps(
            {
                "control": control,
                "injected": injected.decode("latin-1"),
                "unfiltered": unfiltered.observed,
                "unfiltered_leak": unfiltered_leak.decode("latin-1"),
                "filtered": filtered.observed,
                "filtered_leak": filtered_leak.decode("latin-1"),
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
