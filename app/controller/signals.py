"""The signals that stop a run: SIGINT (Ctrl-C), SIGTERM (``kill``, the kubelet) and SIGHUP (a
closed terminal).

Each becomes an exception raised wherever the controller is, so every clean-up of the run (its
services, its secrets, its unfinished files) runs as the stack unwinds; the command line then
prints one line and exits 128 plus the signal's number: 130, 143 and 129. Standard library only:
the entry point installs the first handler before it imports anything heavy.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Final, NoReturn

STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """A signal stopped the run. A BaseException, like KeyboardInterrupt: no ``except
    Exception`` on the way may swallow it."""

    def __init__(self, signum: int) -> None:
        self.signal_name = signal.Signals(signum).name
        self.exit_code = 128 + signum
        super().__init__(self.signal_name)


def _stop(signum: int, frame: FrameType | None) -> NoReturn:
    # The first signal stops the run; later ones (a second Ctrl-C) are ignored from here on, so
    # that the clean-up the first one started is not itself cut short.
    for each in STOP_SIGNALS:
        signal.signal(each, signal.SIG_IGN)
    raise Stopped(signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, a stop signal raises Stopped; the previous handlers come back after."""
    previous = {each: signal.getsignal(each) for each in STOP_SIGNALS}
    for each in STOP_SIGNALS:
        signal.signal(each, _stop)
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)


def _exit_before_start(signum: int, frame: FrameType | None) -> NoReturn:
    name = signal.Signals(signum).name
    print(f"stopped by {name} before the run began; nothing was created", file=sys.stderr)
    sys.exit(128 + signum)


def exit_quietly_until_the_run_begins() -> None:
    """Installed first thing by the entry point: a signal while the program is still loading
    ends it with one line and the same exit code, not an import's traceback."""
    for each in STOP_SIGNALS:
        signal.signal(each, _exit_before_start)
