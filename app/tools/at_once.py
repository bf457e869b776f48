"""The controller's one way of making calls in threads: calls made at the same time, their
results returned in the order they were asked (``ends_at_once``), and calls handed to one thread
of its own that makes them in turn for as long as it is open (``InTurn``).

A local case spends most of its wall time waiting for tool processes to start and end; with
two per core the machine is kept busy instead. CheckLog.at_once makes whole checks this way
(the run hands it ``made_at_once``); ``results_at_once`` serves a check whose one judgement
reads several tool calls. ``InTurn`` serves work bound to the thread that does it: the nono
launch processes each ask to die with the thread that started them (app/tools/nono/launch_pool.py).

Every thread here is a daemon that serves calls from one source until the source has none
(``_serve``), and its caller waits for it in short slices (app/tools/waiting.py): a stop signal
(app/controller/signals.py) unwinds the caller within one, as it would a call made in its own
thread, and no call not yet begun is begun after it. A call already running goes on in its
thread until its tool ends or the process exits, as a nono call's channel thread does
(app/tools/channel.py).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Final, Generic, TypeVar

from app.tools.waiting import join

K = TypeVar("K")
T = TypeVar("T")

# How many calls run at the same time: each mostly waits on a process it started (fork, the
# layer's set-up, the interpreter), so two per core keep every core busy. Measured against one
# at a time (python -m bench.against, 5 rounds, 2 cores): the bubblewrap case 2.84 -> 2.25 s.
AT_ONCE_WIDTH: Final = min(8, max(2, 2 * (os.cpu_count() or 1)))

# What a serving thread is handed next: a call, or None when there is nothing more.
_NextCall = Callable[[], Callable[[], object] | None]


def _serve(next_call: _NextCall) -> None:
    """A thread's whole life: it makes each call ``next_call`` hands it, until it hands None."""
    while (call := next_call()) is not None:
        call()


def _serving(next_call: _NextCall, name: str) -> threading.Thread:
    thread = threading.Thread(target=_serve, args=(next_call,), name=name, daemon=True)
    thread.start()
    return thread


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

    def end(index: int) -> None:
        try:
            ended[index] = Ended(calls[index](), None)
        except BaseException as error:  # raised again by whoever reads it (Ended.value)
            ended[index] = Ended(None, error)

    def next_call() -> Callable[[], object] | None:
        if stopping.is_set():
            return None
        with lock:
            index = next(taken, None)
        return None if index is None else partial(end, index)

    threads = [_serving(next_call, "at-once") for _ in range(min(AT_ONCE_WIDTH, len(calls)))]
    try:
        for thread in threads:
            join(thread)
    except BaseException:
        stopping.set()
        raise
    return [end for end in ended if end is not None]


def made_at_once(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Each call's result in order, the calls made at the same time; the first call (in order)
    that raised has its error raised, once every call has ended. CheckLog.at_once's way."""
    return [end.value() for end in ends_at_once(calls)]


def results_at_once(calls: Mapping[K, Callable[[], T]]) -> dict[K, T]:
    """Each call's result by its name, the calls made at the same time; the first call (in
    the mapping's order) that raised has its error raised, once every call has ended."""
    if len(calls) < 2:
        return {name: call() for name, call in calls.items()}
    return dict(zip(calls, made_at_once(list(calls.values())), strict=True))


class InTurn:
    """One thread of its own that makes the calls handed to it, one after another, until
    ``close``: for work that must stay on the thread that did it (a child process that asks to
    die with the thread that started it, PR_SET_PDEATHSIG)."""

    def __init__(self, name: str) -> None:
        # Each call handed over, then None once closed.
        self._calls: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._thread = _serving(self._calls.get, name)

    def hand(self, call: Callable[[], object]) -> None:
        """Has ``call`` made after every call handed before it, without waiting for it."""
        self._calls.put(call)

    def close(self) -> None:
        """Waits for the calls handed so far, then ends the thread."""
        self._calls.put(None)
        join(self._thread)
