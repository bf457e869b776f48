"""Calls made at once and calls made in turn: outcomes in the calls' order, an exception raised
where its outcome is read, and nothing made in turn after a call that raised."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from app.tools.together import NotMade, run_in_turn, run_named, run_together


def test_calls_made_together_really_overlap_and_come_back_in_order() -> None:
    # Each call waits for the other at the barrier: made one after another, both would time out.
    barrier = threading.Barrier(2, timeout=5)

    def meet(value: str) -> str:
        barrier.wait()
        return value

    outcomes = run_together([lambda: meet("first"), lambda: meet("second")])
    assert [outcome.result() for outcome in outcomes] == ["first", "second"]


def test_an_exception_is_raised_where_its_outcome_is_read() -> None:
    def fails() -> str:
        raise ValueError("the second call")

    first, second = run_together([lambda: "fine", fails])
    assert first.result() == "fine"
    with pytest.raises(ValueError, match="the second call"):
        second.result()


def test_named_calls_keep_their_names() -> None:
    outcomes = run_named({"a": lambda: 1, "b": lambda: 2})
    assert {name: outcome.result() for name, outcome in outcomes.items()} == {"a": 1, "b": 2}


def test_calls_in_turn_are_made_one_after_another_and_stop_at_the_first_that_raises() -> None:
    made: list[str] = []

    def call(name: str, fail: bool = False) -> Callable[[], str]:
        def make() -> str:
            made.append(name)
            if fail:
                raise RuntimeError(name)
            return name

        return make

    outcomes = run_in_turn([call("one"), call("two", fail=True), call("three")])
    assert made == ["one", "two"]
    assert outcomes[0].result() == "one"
    with pytest.raises(RuntimeError, match="two"):
        outcomes[1].result()
    with pytest.raises(NotMade):
        outcomes[2].result()
