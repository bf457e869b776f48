"""How a tool process's end is read: a result, a failure to run, or a kill from outside."""

from __future__ import annotations

import signal

import pytest

from app.core.errors import LayerUnavailable, RunStopped
from app.core.results import ToolKilled, ToolRunError, ToolStartFailed
from app.tools.bubblewrap.preflight import start_failure
from app.tools.execution import parse_output, signal_of
from app.tools.worker.protocol import RESULT_PREFIX

RESULT = (
    f'{RESULT_PREFIX}{{"action": "env-names", "ok": true, "errno": null, "names": []}}\n'.encode()
)


@pytest.mark.parametrize(
    ("returncode", "name"),
    [
        (-signal.SIGKILL, "SIGKILL"),  # the process started here was killed
        (128 + signal.SIGKILL, "SIGKILL"),  # bwrap reporting its sandboxed child killed
        (128 + signal.SIGSYS, "SIGSYS"),
        (-signal.SIGTERM, "SIGTERM"),
        (0, None),
        (1, None),
        (2, None),
        (128, None),
        (128 + 99, None),
    ],
)
def test_the_signal_is_read_from_the_exit_status(returncode: int, name: str | None) -> None:
    assert signal_of(returncode) == name


def test_a_killed_tool_is_a_stopped_run_not_a_missing_layer() -> None:
    with pytest.raises(ToolKilled, match="killed by SIGKILL before it reported a result") as e:
        parse_output(
            b"", 128 + signal.SIGKILL, who="the reader's tool process", action="env-names", args=()
        )
    assert isinstance(e.value, RunStopped) and e.value.exit_code == 1


def test_a_tool_that_fails_on_its_own_is_a_failure_to_run_never_a_start_failure() -> None:
    """Whatever it prints, even bwrap's words: only the launcher's own exec failing
    (ToolStartFailed) is read as a missing piece of the machine."""
    with pytest.raises(ToolRunError) as e:
        parse_output(
            b"bwrap: Creating new namespace failed",
            1,
            who="the reader's tool process",
            action="env-names",
            args=(),
        )
    assert not isinstance(e.value, ToolKilled | ToolStartFailed)
    assert str(e.value) == (
        "the reader's tool process exited 1 with 0 result lines: "
        "bwrap: Creating new namespace failed"
    )
    assert isinstance(start_failure(ToolStartFailed("could not start")), LayerUnavailable)


def test_a_result_line_is_a_result() -> None:
    assert parse_output(RESULT, 0, who="the reader's tool process", action="env-names", args=()).ok


def test_a_result_line_nested_past_the_parsers_reach_is_a_failure_to_run() -> None:
    """A hostile tool prints a line nested 100000 deep: the run stops cleanly (RunStopped)."""
    line = f"{RESULT_PREFIX}{'[' * 100_000}{']' * 100_000}\n".encode()
    with pytest.raises(ToolRunError, match="not usable JSON"):
        parse_output(line, 0, who="the reader's tool process", action="env-names", args=())
