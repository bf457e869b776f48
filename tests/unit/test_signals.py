"""A stop signal inside the command's block: what the block ends with, whatever its clean-up
raises on the way out."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from app.controller.signals import RUNNING, STOP_SIGNALS, Stopped, stop_on_signals
from app.core.errors import AnalystError
from app.core.results import HelperLost


@pytest.fixture
def handlers_kept() -> Iterator[None]:
    """A stop leaves the stop signals ignored (its one line is still to print): the test
    runner's own handlers come back after."""
    previous = {each: signal.getsignal(each) for each in STOP_SIGNALS}
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)


def _signalled(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(10)  # the handler raises here, at once


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda s: signal.Signals(s).name)
@pytest.mark.usefixtures("handlers_kept")
def test_a_stop_is_what_ends_the_block_when_its_clean_up_raises(signum: int) -> None:
    """A helper the same signal ended, found lost as the run's clean-up stops it: an error
    raised on the stop's way out replaced it, and the command would end with the helper's
    line and exit code instead of the stop's."""
    lost = HelperLost("the proxy host did not answer: it has ended")
    with pytest.raises(Stopped) as stopped, stop_on_signals():
        try:
            _signalled(signum)
        finally:
            raise lost
    assert stopped.value.exit_code == 128 + signum
    assert stopped.value.phase == RUNNING
    assert stopped.value.__cause__ is lost
    assert signal.getsignal(signum) == signal.SIG_IGN


@pytest.mark.usefixtures("handlers_kept")
def test_an_error_with_no_stop_is_the_blocks_own() -> None:
    """The control: the same error, no signal, ends the block as itself."""
    with pytest.raises(HelperLost), stop_on_signals():
        raise HelperLost("the proxy host did not answer: it has ended")
    assert issubclass(HelperLost, AnalystError)


@pytest.mark.usefixtures("handlers_kept")
def test_a_stop_calls_what_the_block_asked_before_it_unwinds() -> None:
    """Other threads go on while the main thread unwinds: what must stop at once (the tool
    processes) is done by the handler itself, before any clean-up of the block runs."""
    seen: list[str] = []
    with pytest.raises(Stopped), stop_on_signals(lambda: seen.append("on stop")):
        try:
            _signalled(signal.SIGTERM)
        finally:
            seen.append("clean-up")
    assert seen == ["on stop", "clean-up"]
    with stop_on_signals(lambda: seen.append("again")):
        pass
    assert seen == ["on stop", "clean-up"]  # the control: no signal, not called
