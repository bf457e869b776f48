"""Run as a program on a pseudo-terminal's slave side, as session leader with the terminal as
its controlling terminal (the test starts it with pty.fork): tries TIOCSTI from a nono tool
process that inherits that terminal as its standard input, with the baseline filter and
without it, and prints one JSON line of what happened.

This is the controller's position when an operator runs the demo in a terminal.
"""

from __future__ import annotations

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
from tests.support.runs import bare_run, bare_tree

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
    try:
        layer = NonoLayer(bare_run(bare_tree(base), Layer.NONO))
        layer.preflight()
        try:
            control = layer.run_confined(
                "evaluator", "push-terminal-input", [], baseline=False, purpose="tty control"
            )
            injected = _pending_input(ARRIVAL_SECONDS) if control.ok else b""
            refused = layer.run_tool("evaluator", "push-terminal-input")
            leaked = _pending_input(0.5) if refused.ok else b""
        finally:
            layer.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(
        json.dumps(
            {
                "control": control.observed,
                "injected": injected.decode("latin-1"),
                "refused": refused.observed,
                "leaked": leaked.decode("latin-1"),
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
