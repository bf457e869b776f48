"""The order pytest-xdist workers take test files in: the costliest left first, and the files
that share the report page runs as one unit (tests/support/xdist_order.py)."""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.support.xdist_order import (
    CACHE_KEY,
    FILE_SECONDS,
    TOGETHER,
    CostliestFileFirst,
    FileSeconds,
)

TESTS = Path(__file__).parent.parent


class _Cache:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str, default: Any) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = json.loads(json.dumps(value))  # as pytest's cache keeps it: JSON


class _Config:
    """What the scheduler reads of pytest's configuration: two workers, a cache."""

    def __init__(self) -> None:
        self.cache = _Cache()

    def getvalue(self, name: str) -> list[str]:
        assert name == "tx"
        return ["2*popen"]


class _Worker:
    def __init__(self) -> None:
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)


def _handed_out(timed: dict[str, float], files: dict[str, int]) -> list[str]:
    """The files in the order one worker is handed them, each of ``files`` with its tests."""
    scheduler = CostliestFileFirst(_Config())
    scheduler.timed = timed
    collection = [f"{name}::test_{i}" for name, count in files.items() for i in range(count)]
    worker = _Worker()
    scheduler.registered_collections[worker] = collection
    scheduler.workqueue = OrderedDict(
        (name, {nodeid: False for nodeid in collection if nodeid.startswith(name + "::")})
        for name in files
    )
    order = []
    while scheduler.workqueue:
        scheduler._assign_work_unit(worker)
        order.append(collection[worker.sent[-1][0]].split("::")[0])
    return order


def test_the_costliest_file_left_is_handed_out_first() -> None:
    files = {"tests/unit/test_a.py": 300, "tests/integration/test_b.py": 2,
             "tests/integration/test_c.py": 3, "tests/integration/test_d.py": 1}  # fmt: skip
    timed = {"tests/integration/test_b.py": 100.0, "tests/integration/test_d.py": 2.0}
    # test_a and test_c not timed: 300 x 0.05 s and 3 x 3 s.
    assert _handed_out(timed, files) == [
        "tests/integration/test_b.py",
        "tests/unit/test_a.py",
        "tests/integration/test_c.py",
        "tests/integration/test_d.py",
    ]
    # Untimed, each is estimated from its tests: 15 s, 6 s, 9 s, 3 s.
    assert _handed_out({}, files) == [
        "tests/unit/test_a.py",
        "tests/integration/test_c.py",
        "tests/integration/test_b.py",
        "tests/integration/test_d.py",
    ]


def test_the_files_that_share_the_page_runs_are_one_unit_and_no_other_file_uses_them() -> None:
    using = {
        f"tests/integration/{path.name}"
        for path in (TESTS / "integration").glob("test_*.py")
        if "page_runs" in path.read_text(encoding="utf-8")
    }
    assert using == set(TOGETHER)
    scheduler = CostliestFileFirst(_Config())
    assert {scheduler._split_scope(f"{name}::test_x") for name in using} == {"page_runs"}
    assert scheduler._split_scope("tests/unit/test_x.py::test_y[1]") == "tests/unit/test_x.py"


def test_the_committed_seconds_are_seconds_of_test_files() -> None:
    measured = json.loads(FILE_SECONDS.read_text(encoding="utf-8"))
    assert measured and all(isinstance(seconds, int | float) for seconds in measured.values())
    assert all(name.startswith("tests/") and name.endswith(".py") for name in measured)


def _timed_run(config: _Config, tests: dict[str, int]) -> None:
    """A session whose every test of each file in ``tests`` took 1 s in each phase."""
    plugin = FileSeconds(config)
    for name, count in tests.items():
        for i in range(count):
            for when in ("setup", "call", "teardown"):
                report = SimpleNamespace(nodeid=f"{name}::test_{i}", when=when, duration=1.0)
                plugin.pytest_runtest_logreport(report)
    plugin.pytest_sessionfinish()


def test_a_run_of_fewer_of_a_files_tests_keeps_the_fuller_runs_seconds() -> None:
    config = _Config()
    _timed_run(config, {"tests/a.py": 4, "tests/b.py": 2})
    assert config.cache.values[CACHE_KEY] == {"tests/a.py": [12.0, 4], "tests/b.py": [6.0, 2]}
    _timed_run(config, {"tests/a.py": 1, "tests/b.py": 2})  # -k: one test of a.py
    assert config.cache.values[CACHE_KEY] == {"tests/a.py": [12.0, 4], "tests/b.py": [6.0, 2]}
    _timed_run(config, {"tests/a.py": 5})
    assert config.cache.values[CACHE_KEY] == {"tests/a.py": [15.0, 5], "tests/b.py": [6.0, 2]}
    # And the scheduler takes those seconds over the committed ones.
    assert CostliestFileFirst(config).timed["tests/a.py"] == 15.0
