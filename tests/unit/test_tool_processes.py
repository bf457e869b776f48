"""The gate a stop closes on tool processes: none starts after it, and none started before it
(or while it closed) goes on running."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from app.core.results import ToolStartFailed
from app.tools.execution import ToolProcesses


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_stop_kills_every_tool_process_still_running() -> None:
    tools = ToolProcesses()
    running, ended = tools.started(_sleeper, "the reader"), tools.started(_sleeper, "the writer")
    ended.kill()
    ended.wait()
    try:
        assert running.poll() is None  # the control: started, and running until the stop
        tools.stop()
        assert running.wait(timeout=30) == -signal.SIGKILL
    finally:
        running.kill()
        running.wait()
    assert ended.returncode == -signal.SIGKILL


def test_no_tool_process_starts_once_stopping() -> None:
    tools = ToolProcesses()
    tools.stop()
    called: list[bool] = []

    def start() -> subprocess.Popen[bytes]:
        called.append(True)
        return _sleeper()

    with pytest.raises(ToolStartFailed, match="the reader was not started: the program is"):
        tools.started(start, "the reader")
    assert called == []


def test_a_process_whose_start_the_stop_overtook_is_killed_as_it_returns() -> None:
    """The stop's handler runs between two instructions of any thread's start: it cannot wait
    for the start, so the starter kills what it started."""
    tools = ToolProcesses()

    def start() -> subprocess.Popen[bytes]:
        process = _sleeper()
        tools.stop()  # the signal, arriving as the start returns
        return process

    process = tools.started(start, "the reader")
    try:
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        process.kill()
        process.wait()
