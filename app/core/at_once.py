"""Calls made at the same time, their results returned in the order they were asked.

A local case spends most of its wall time waiting for tool processes to start and end; with
two per core the machine is kept busy instead. CheckLog.at_once makes whole checks this way;
``results_at_once`` serves a check whose one judgement reads several tool calls.

The calls run in daemon threads, and the caller waits for them in short slices
(app/core/waiting.py): a stop signal (app/controller/signals.py) unwinds the caller within one,
as it would a call made in its own thread, and no call not yet begun is begun after it. A call
already running goes on in its thread until its tool ends or the process exits, as a nono
call's channel thread does (app/tools/nono/channel.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Generic, TypeVar

from app.core.waiting import join

K = TypeVar("K")
T = TypeVar("T")

# How many calls run at the same time: each mostly waits on a process it started (fork, the
# layer's set-up, the interpreter), so two per core keep every core busy. Measured against one
# at a time (python -m bench.against, 5 rounds, 2 cores): the bubblewrap case 2.84 -> 2.25 s.
AT_ONCE_WIDTH: Final = min(8, max(2, 2 * (os.cpu_count() or 1)))


class Ended(Generic[T]):
    """How one call ended: its result, or what it raised."""

    __slots__ = ("error", "result")

    def __init__(self, result: T | None, error: BaseException | None) -> None:
        self.result = result
        self.error = error

    def value(self) -> T:
        """The result, or the call's own error raised again."""
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]


def ends_at_once(calls: Sequence[Callable[[], T]]) -> list[Ended[T]]:
    """Makes ``calls``, at most AT_ONCE_WIDTH at a time, and returns how each ended, in order."""
    ended: list[Ended[T] | None] = [None] * len(calls)
    taken = iter(range(len(calls)))
    lock = threading.Lock()
    stopping = threading.Event()

    def work() -> None:
        while not stopping.is_set():
            with lock:
                index = next(taken, None)
            if index is None:
                return
            try:
                ended[index] = Ended(calls[index](), None)
            except BaseException as error:  # raised again by whoever reads it (Ended.value)
                ended[index] = Ended(None, error)

    threads = [
        threading.Thread(target=work, name="at-once", daemon=True)
        for _ in range(min(AT_ONCE_WIDTH, len(calls)))
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            join(thread)
    except BaseException:
        stopping.set()
        raise
    return [end for end in ended if end is not None]


def results_at_once(calls: Mapping[K, Callable[[], T]]) -> dict[K, T]:
    """Each call's result by its name, the calls made at the same time; the first call (in
    the mapping's order) that raised has its error raised, once every call has ended."""
    if len(calls) < 2:
        return {name: call() for name, call in calls.items()}
    ended = ends_at_once(list(calls.values()))
    return {name: end.value() for name, end in zip(calls, ended, strict=True)}
