"""Waits of the program's main thread on its other threads, made in short slices so that a stop
signal (app/controller/signals.py) is acted on within one slice, however it was delivered.

CPython runs a signal's Python handler only in the main thread, and only between two bytecodes:
the C-level handler merely notes the signal. A wait on a lock without a timeout (Thread.join,
Event.wait, Queue.get) wakes for it only when the kernel interrupts that very wait. A signal
that the kernel delivers to another thread, or that lands in the main thread after its last
look at the noted signals and before its wait begins (the interpreter has let go of its lock
there, and another thread may hold the core for as long as the machine's load keeps it), is
noted and left there: the main thread sleeps on until the thread it waits for ends, which may
be never. A wait of one slice returns to the interpreter, which then runs the handler.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_futures
from typing import Final, TypeVar

T = TypeVar("T")

# How long a noted stop signal may wait for the main thread to act on it.
SLICE_SECONDS: Final = 0.05


def join(thread: threading.Thread) -> None:
    """Waits until ``thread`` has ended."""
    while thread.is_alive():
        thread.join(SLICE_SECONDS)


def wait(event: threading.Event) -> None:
    """Waits until ``event`` is set."""
    while not event.wait(SLICE_SECONDS):
        pass


def take(items: queue.SimpleQueue[T]) -> T:
    """The next item of ``items``, waiting for one."""
    while True:
        try:
            return items.get(timeout=SLICE_SECONDS)
        except queue.Empty:
            continue


def result(future: Future[T]) -> T:
    """``future``'s result (or its error raised), waiting for it."""
    # Not result(timeout): the call's own TimeoutError would read as a slice that ran out.
    while not future.done():
        wait_for_futures([future], timeout=SLICE_SECONDS)
    return future.result()
