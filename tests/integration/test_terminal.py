"""A nono tool process started from a terminal session cannot push input into that terminal.

nono starts a role in the controller's session, with the standard input of the thread that
starts it; when an operator runs the demo by hand, the controller's is their terminal, and
TIOCSTI from the role would type into it. The launcher starts every role with its call's own
pipe there instead (nono/channel.py): without the baseline filter the role gets ENOTTY, with it
EPERM, and nothing arrives either way. The control, TIOCSTI from the session's own process,
shows the character arrive.
"""

from __future__ import annotations

import json
import os
import pty
import sys
from pathlib import Path

import pytest

from app.core.repo import REPO_ROOT

pytestmark = pytest.mark.integration

LEGACY_TIOCSTI = Path("/proc/sys/dev/tty/legacy_tiocsti")


def _run_in_a_terminal() -> dict[str, str]:
    pid, master = pty.fork()
    if pid == 0:  # the child: session leader, the terminal its controlling terminal
        os.chdir(REPO_ROOT)
        os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests")])
        os.execv(sys.executable, [sys.executable, "-m", "support.terminal_session"])
    output = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every process on the slave side has gone
            break
        if not chunk:
            break
        output += chunk
    os.close(master)
    _, status = os.waitpid(pid, 0)
    text = output.decode("utf-8", "replace")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, text
    lines = [line for line in text.replace("\r", "").splitlines() if line.startswith("{")]
    assert len(lines) == 1, text
    result: dict[str, str] = json.loads(lines[0])
    return result


def test_a_nono_tool_has_no_terminal_to_push_input_into_with_or_without_the_filter() -> None:
    if LEGACY_TIOCSTI.exists() and LEGACY_TIOCSTI.read_text().strip() == "0":
        pytest.skip("this kernel refuses TIOCSTI to every process (dev.tty.legacy_tiocsti=0)")
    result = _run_in_a_terminal()
    assert (result["control"], result["injected"]) == ("succeeded", "Z"), result
    assert (result["unfiltered"], result["unfiltered_leak"]) == ("ENOTTY", ""), result
    assert (result["filtered"], result["filtered_leak"]) == ("EPERM", ""), result
