"""The channel back from a tool process (app/tools/channel.py), read against real processes:
each way its reading ends, and the stop each one makes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from app.core.results import ToolOutputRefused, ToolRunError
from app.tools.channel import MAX_OUTPUT_BYTES, Channel, Ending, Output, failure


def _read(program: str, seconds: float = 30.0) -> Output:
    """Runs ``program`` (Python) with the channel as its stdout and stderr, and reads it."""
    channel = Channel()
    process = subprocess.Popen(
        [sys.executable, "-S", "-c", program],
        stdin=subprocess.DEVNULL,
        stdout=channel.write_fd,
        stderr=channel.write_fd,
        start_new_session=True,
    )
    channel.close_write()
    ended = os.pidfd_open(process.pid)
    try:
        return channel.read(ended, time.monotonic() + seconds)
    finally:
        os.close(ended)
        channel.close()
        os.killpg(process.pid, 9)
        process.wait()


def test_output_to_its_end_is_complete_stdout_and_stderr_together() -> None:
    output = _read("import sys; print('out'); sys.stdout.flush(); print('err', file=sys.stderr)")
    assert output == Output(b"out\nerr\n", Ending.COMPLETE)
    assert failure("the reader's tool process", output, 60) is None


def test_output_past_the_bound_is_cut_there_and_refused() -> None:
    output = _read("import os\nwhile True: os.write(1, b'x' * 65536)")
    assert (len(output.data), output.ending) == (MAX_OUTPUT_BYTES, Ending.TOO_LONG)
    stop = failure("the reader's tool process", output, 60)
    assert isinstance(stop, ToolOutputRefused)
    assert str(stop).startswith("the reader's tool process wrote more than 64 KiB")


def test_exactly_the_bound_is_complete() -> None:
    output = _read(f"import os; os.write(1, b'x' * {MAX_OUTPUT_BYTES})")
    assert (len(output.data), output.ending) == (MAX_OUTPUT_BYTES, Ending.COMPLETE)


def test_output_held_open_after_the_end_is_refused_without_waiting_for_the_deadline() -> None:
    started = time.monotonic()
    output = _read("import os, time\nif os.fork() == 0: time.sleep(60)\nprint('done')")
    assert output.ending is Ending.HELD
    assert time.monotonic() - started < 20
    assert isinstance(failure("the unconfined control", output, 60), ToolOutputRefused)


def test_a_process_that_outlives_the_deadline_is_a_timeout() -> None:
    output = _read("import time; time.sleep(60)", seconds=0.5)
    assert output.ending is Ending.TIMED_OUT
    stop = failure("the writer's tool process", output, 0.5)
    assert type(stop) is ToolRunError
    assert str(stop) == "the writer's tool process timed out after 0.5s"


@pytest.mark.parametrize("limit", [1, 100])
def test_the_bound_is_the_callers_to_lower(limit: int) -> None:
    channel = Channel()
    os.write(channel.write_fd, b"y" * 1000)
    channel.close_write()
    ended = os.eventfd(1)
    try:
        output = channel.read(ended, time.monotonic() + 5, limit=limit)
    finally:
        os.close(ended)
        channel.close()
    assert output == Output(b"y" * limit, Ending.TOO_LONG)
