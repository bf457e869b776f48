"""Independent tool calls made at once, their outcomes read back in a fixed order.

A check asks up front for the tool results it needs, when no call depends on another's result
and none shares with another anything one of them changes (a file in a role's output, a proxy's
audit, a request id). It then decides and prints its lines from the outcomes in the order it
always did, each control before its refusal. An outcome is its call's result, or the call's
exception, raised where the outcome is read: a run stops at the line it would stop at with one
call after another, and every call has ended by then.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

# Two calls per core: part of each call's life is the controller forking it and the tool's
# interpreter starting and exiting, when its core would otherwise wait (measured here: a whole
# case about 5% shorter than with one per core). At most eight: nono-py refuses to fork from a
# process of more than 32 threads, and its proxies' runtimes hold some of them already.
WIDTH: Final = min(8, max(2, 2 * len(os.sched_getaffinity(0))))


def run_together(calls: Sequence[Callable[[], T]]) -> list[Future[T]]:
    """Makes the calls, at most WIDTH at a time; returns once every one has ended, with one
    finished future per call, in the calls' order."""
    if len(calls) <= 1:
        return [_outcome(call) for call in calls]
    with ThreadPoolExecutor(max_workers=min(WIDTH, len(calls))) as pool:
        futures = [pool.submit(call) for call in calls]
    return futures


def _outcome(call: Callable[[], T]) -> Future[T]:
    """The same outcome for a single call, made in this thread."""
    future: Future[T] = Future()
    try:
        future.set_result(call())
    except Exception as error:
        future.set_exception(error)
    return future


class NotMade(RuntimeError):
    """A call run_in_turn did not make, because an earlier one raised."""


def run_in_turn(calls: Sequence[Callable[[], T]]) -> list[Future[T]]:
    """Makes the calls one after another, each one's outcome a finished future. After a call
    that raised, the later ones are not made (their outcomes raise NotMade): read in the calls'
    order, the call that raised is read first, and stops the reading there."""
    outcomes: list[Future[T]] = []
    for call in calls:
        if outcomes and outcomes[-1].exception() is not None:
            skipped: Future[T] = Future()
            skipped.set_exception(NotMade("an earlier call in turn raised"))
            outcomes.append(skipped)
        else:
            outcomes.append(_outcome(call))
    return outcomes


def run_named(calls: Mapping[K, Callable[[], T]]) -> dict[K, Future[T]]:
    """run_together for named calls: each outcome under its call's name."""
    return dict(zip(calls, run_together(list(calls.values())), strict=True))


@dataclass(frozen=True)
class Pending(Generic[T]):
    """One check's calls, and how it judges their outcomes (given in the calls' order)."""

    calls: Sequence[Callable[[], T]]
    judge: Callable[[list[Future[T]]], None]


def judge_together(checks: Sequence[Pending[T]]) -> None:
    """Makes the calls of several checks at once, then has each check judge its own outcomes,
    in the checks' order: for checks none of which changes what another's calls read."""
    outcomes = iter(run_together([call for check in checks for call in check.calls]))
    for check in checks:
        check.judge([next(outcomes) for _ in check.calls])
