"""The signals that stop the program: SIGINT (Ctrl-C), SIGTERM (``kill``, the kubelet) and SIGHUP
(a closed terminal), from the first line of the entry point to its exit.

Each becomes an exception raised wherever the controller is, so every clean-up of the run (its
services, its secrets, its unfinished files) runs as the stack unwinds; the command line then
prints one line and exits 128 plus the signal's number: 130, 143 and 129. The line says where
the program was: still loading (nothing was created), in a command (its clean-up ran), or done.

The entry point installs the handlers before it loads anything else, so this module imports
nothing the interpreter has not loaded to start (no typing: its annotations stay strings).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

LOADING, RUNNING, ENDED = "loading", "running", "ended"
_phase = LOADING
# The stop the first signal raised, kept: the clean-up it starts may raise on its way out.
_received: Stopped | None = None
# What the command's block asked to be done the moment a signal stops it, before it unwinds.
_on_stop: tuple[Callable[[], object], ...] = ()


class Stopped(BaseException):
    """A signal stopped the program. A BaseException, like KeyboardInterrupt: no ``except
    Exception`` on the way may swallow it."""

    def __init__(self, signum: int, phase: str) -> None:
        self.signal_name = signal.Signals(signum).name
        self.exit_code = 128 + signum
        self.phase = phase
        super().__init__(self.signal_name)

    def line(self) -> str:
        """The one line the program ends with."""
        if self.phase == LOADING:
            return f"stopped by {self.signal_name} before the run began; nothing was created"
        if self.phase == ENDED:
            return f"stopped by {self.signal_name} as the program ended, after its command had"
        # The run's clean-up ran as the stack unwound: this is the one line left to say.
        return (
            f"stopped by {self.signal_name}: the run was cut short; its services were stopped "
            "and its secrets and unfinished files removed"
        )


def say(line: str) -> None:
    """The one line the program ends with, on standard error if it still takes one."""
    with suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _stop(signum: int, frame: FrameType | None) -> None:
    # The first signal stops the program; later ones (a second Ctrl-C) are ignored from here
    # on, so that the clean-up the first one started is not itself cut short.
    global _received
    for each in STOP_SIGNALS:
        signal.signal(each, signal.SIG_IGN)
    _received = Stopped(signum, _phase)
    for hook in _on_stop:
        hook()
    raise _received


def stop_signals_from_here() -> None:
    """The entry point's first call: from now on a stop signal raises Stopped."""
    for each in STOP_SIGNALS:
        signal.signal(each, _stop)


def _stop_received() -> Stopped | None:
    """The stop a signal raised since the command's block began, if one did."""
    return _received


@contextmanager
def stop_on_signals(*on_stop: Callable[[], object]) -> Iterator[None]:
    """The command's block: a stop signal calls ``on_stop`` (what must not wait for the main
    thread to unwind: other threads go on meanwhile), then raises Stopped, which says the run
    was cut short.
    The previous handlers come back after (the entry point's own, whose Stopped then says the
    command had ended; or, in a test's process, the test runner's), unless a signal ended the
    block: later signals stay ignored while its one line is printed.

    A stop is what ends the block even when the clean-up it set going raised an error of its
    own on the way out (a helper or a service the same signal ended, a tool cut off): that
    error is the stop's consequence, not a second fault, and the one line is the stop's."""
    global _phase, _received, _on_stop
    previous = {each: signal.getsignal(each) for each in STOP_SIGNALS}
    _phase, _received, _on_stop = RUNNING, None, on_stop
    for each in STOP_SIGNALS:
        signal.signal(each, _stop)
    stopped = False
    try:
        yield
    except Stopped:
        stopped = True
        raise
    except BaseException as error:
        received = _stop_received()
        if received is None:
            raise
        stopped = True
        raise received from error
    finally:
        _phase, _on_stop = ENDED, ()
        if not stopped:
            for each, handler in previous.items():
                signal.signal(each, handler)
