"""Checks made at once print as if made in turn: in the order given, a FAIL stopping the group
at its own line, errors raised in the checks' order, and each check really run at the same time
as the others."""

from __future__ import annotations

import io
import os
import signal
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest

from app.core.catalogue import CatalogueError, Check, Section, each
from app.core.checklog import CheckFailed, CheckLog
from app.tools.at_once import AT_ONCE_WIDTH, InTurn, ends_at_once, made_at_once, results_at_once

ITEM = Check("test.{n}.item", "item {n} holds")
SECTION = Section("test", each("n", tuple(str(n) for n in range(6)), ITEM))


def _log() -> tuple[CheckLog, io.StringIO]:
    stream = io.StringIO()
    checks = CheckLog(stream=stream, make_at_once=made_at_once)
    checks.begin(SECTION)
    return checks, stream


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()[1:]


def test_lines_print_in_the_order_given_whatever_order_the_checks_end_in() -> None:
    checks, stream = _log()

    def item(n: int) -> None:
        # The later the check in the list, the sooner it ends.
        time.sleep(0.01 * (6 - n))
        checks.require(ITEM(n=str(n)), True, detail=f"seen {n}")

    checks.at_once(*(lambda n=n: item(n) for n in range(6)))
    checks.close()
    assert _lines(stream) == [f"PASS item {n} holds (seen {n})" for n in range(6)]
    assert [record.id for record in checks.records] == [f"test.{n}.item" for n in range(6)]


def test_the_checks_run_at_the_same_time() -> None:
    checks, _ = _log()
    width = min(6, AT_ONCE_WIDTH)
    # The first checks each wait for all of them: made in turn, the first would wait in vain.
    together = threading.Barrier(width, timeout=10)

    def item(n: int) -> None:
        if n < width:
            together.wait()
        checks.require(ITEM(n=str(n)), True)

    checks.at_once(*(lambda n=n: item(n) for n in range(6)))
    assert len(checks.records) == 6


def test_a_fail_prints_after_the_lines_before_it_and_stops_the_group_there() -> None:
    checks, stream = _log()

    def item(n: int) -> None:
        checks.require(ITEM(n=str(n)), n != 2, detail=f"seen {n}")

    with pytest.raises(CheckFailed) as failed:
        checks.at_once(*(lambda n=n: item(n) for n in range(6)))
    assert failed.value.check_id == "test.2.item"
    assert failed.value.record == checks.records[-1]
    assert _lines(stream) == [
        "PASS item 0 holds (seen 0)",
        "PASS item 1 holds (seen 1)",
        "FAIL item 2 holds (seen 2) [test.2.item]",
    ]


def test_an_error_is_raised_in_the_checks_order_after_the_lines_before_it() -> None:
    checks, stream = _log()

    def item(n: int) -> None:
        if n in (3, 4):
            raise RuntimeError(f"broke at {n}")
        checks.require(ITEM(n=str(n)), True)

    with pytest.raises(RuntimeError, match="broke at 3"):
        checks.at_once(*(lambda n=n: item(n) for n in range(6)))
    assert _lines(stream) == [f"PASS item {n} holds" for n in range(3)]


def test_the_plan_is_held_as_the_lines_print() -> None:
    checks, _ = _log()
    with pytest.raises(CatalogueError, match=r"made test\.1\.item where it plans test\.0\.item"):
        checks.at_once(lambda: checks.require(ITEM(n="1"), True))


def test_at_once_inside_a_check_made_at_once_makes_its_checks_in_turn() -> None:
    checks, stream = _log()
    threads: dict[int, set[int]] = {0: set(), 3: set()}

    def item(n: int) -> None:
        threads[n - n % 3].add(threading.get_ident())
        checks.require(ITEM(n=str(n)), True)

    def group(first: int) -> None:
        checks.at_once(*(lambda n=n: item(n) for n in range(first, first + 3)))

    checks.at_once(lambda: group(0), lambda: group(3))
    checks.close()
    assert _lines(stream) == [f"PASS item {n} holds" for n in range(6)]
    # Each group's checks in its own one thread, one after another.
    assert [len(idents) for idents in threads.values()] == [1, 1]


def test_a_section_cannot_begin_or_end_inside_a_check_made_at_once() -> None:
    checks, _ = _log()
    with pytest.raises(CatalogueError, match="begin inside a check made at once"):
        checks.at_once(lambda: checks.begin(SECTION), lambda: None)


def test_results_come_back_by_name_and_the_first_error_in_order_is_raised() -> None:
    assert results_at_once({"a": lambda: 1, "b": lambda: 2}) == {"a": 1, "b": 2}

    def broken(what: str) -> int:
        raise ValueError(what)

    with pytest.raises(ValueError, match="first"):
        results_at_once(
            {"a": lambda: 1, "b": lambda: broken("first"), "c": lambda: broken("second")}
        )


def test_a_signal_unwinds_the_caller_at_once_and_no_call_not_yet_begun_begins() -> None:
    begun: list[int] = []
    release = threading.Event()

    def call(n: int) -> int:
        begun.append(n)
        release.wait(10)
        return n

    class Stop(BaseException):
        pass

    def stop(signum: int, frame: object) -> None:
        raise Stop

    previous = signal.signal(signal.SIGUSR1, stop)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(Stop):
            ends_at_once([partial(call, n) for n in range(AT_ONCE_WIDTH + 4)])
        waited = time.monotonic() - started
    finally:
        release.set()
        timer.join()
        signal.signal(signal.SIGUSR1, previous)
    assert waited < 5
    time.sleep(0.2)
    assert sorted(begun) == list(range(AT_ONCE_WIDTH))


def _in_its_wait(thread: threading.Thread) -> bool:
    """Whether ``thread`` is asleep inside a wait for another thread's end (Thread.join's)."""
    frame = sys._current_frames().get(thread.ident or 0)
    stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
    asleep = stat.rpartition(")")[2].split()[0] == "S"
    return asleep and frame is not None and frame.f_code.co_name == "_wait_for_tstate_lock"


def test_a_signal_noted_by_another_thread_still_unwinds_the_waiting_caller() -> None:
    """The kernel may give a process's signal to any of its threads, and one may reach the
    caller after its last look and before its wait begins: either way the interpreter only
    notes it, and a wait without a timeout slept on until the call ended (a stopped
    controller hung for good, one of its checks held still). Sent here to the call's own
    thread, once the caller sleeps in its wait."""
    release = threading.Event()
    main = threading.main_thread()

    def call() -> None:
        deadline = time.monotonic() + 10
        time.sleep(0.2)
        while not _in_its_wait(main) and time.monotonic() < deadline:
            time.sleep(0.01)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        release.wait(30)

    class Stop(BaseException):
        pass

    def stop(signum: int, frame: object) -> None:
        raise Stop

    previous = signal.signal(signal.SIGUSR1, stop)
    started = time.monotonic()
    try:
        with pytest.raises(Stop):
            ends_at_once([call])
        waited = time.monotonic() - started
    finally:
        release.set()
        signal.signal(signal.SIGUSR1, previous)
    assert waited < 5


def test_calls_handed_in_turn_are_made_in_one_thread_in_order_and_close_waits_for_them() -> None:
    """The nono launch processes' starter: each process asks to die with the thread that
    started it, so every start is made by the one thread, which lives until close."""
    made: list[tuple[int, int]] = []
    release = threading.Event()

    def make(n: int) -> None:
        made.append((n, threading.get_ident()))

    in_turn = InTurn("test-in-turn")
    in_turn.hand(lambda: release.wait(10))
    for n in range(3):
        in_turn.hand(partial(make, n))
    assert made == []  # handed over, not waited for
    release.set()
    in_turn.close()
    assert [n for n, _ in made] == [0, 1, 2]
    assert len({ident for _, ident in made}) == 1
    assert made[0][1] != threading.get_ident()


def test_a_log_given_no_way_of_its_own_makes_checks_at_once_in_turn() -> None:
    checks = CheckLog(stream=io.StringIO())
    checks.begin(SECTION)
    idents: set[int] = set()

    def item(n: int) -> None:
        idents.add(threading.get_ident())
        checks.require(ITEM(n=str(n)), True)

    checks.at_once(*(lambda n=n: item(n) for n in range(6)))
    assert idents == {threading.get_ident()}
    assert len(checks.records) == 6


def test_checks_named_by_id_are_made_at_once_in_the_order_their_section_plans() -> None:
    checks, stream = _log()
    makers = {
        ITEM.id_for(n=str(n)): partial(checks.require, ITEM(n=str(n)), True) for n in (5, 3, 4)
    }
    makers.update(
        {ITEM.id_for(n=str(n)): partial(checks.require, ITEM(n=str(n)), True) for n in (2, 0, 1)}
    )
    checks.at_once_in_plan(makers)
    checks.close()
    assert _lines(stream) == [f"PASS item {n} holds" for n in range(6)]
    checks.begin(SECTION)
    with pytest.raises(CatalogueError, match=r"section 'test' plans no check \['test\.9\.item'\]"):
        checks.at_once_in_plan({"test.9.item": lambda: None})
