"""Which test file a pytest-xdist worker takes next: the costliest left, so none starts last.

`--dist loadfile` gives each worker whole files, so a module's costly fixture is made once, and
hands them out largest first by number of tests. Test count is a poor measure here: a file of
ten whole rehearsals costs more than one of five hundred parsed help lines, and a costly file
started last holds its worker while the other has finished. So each file's seconds (setup,
call and teardown of its tests) are kept in pytest's cache after a run (`FileSeconds`),
and the scheduler below hands out the file that cost most the last time. A file this checkout
has not timed yet (a fresh clone, as in CI) takes its seconds from FILE_SECONDS, a copy of that
cache measured on a 2-core machine under load (only the order matters; refresh it with the
seconds .pytest_cache/v/analyst/seconds-per-file holds after a full run); a file in neither (a
new file) is estimated from its tests: a few seconds each under tests/integration/ (a real run
each), a fraction of a second elsewhere.

Files that share a session fixture of tests/integration/conftest.py go to one worker together
(`TOGETHER`), so its runs are made once in the whole session, not once in each worker.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

import pytest
from xdist.scheduler import LoadFileScheduling

CACHE_KEY: Final = "analyst/seconds-per-file"
FILE_SECONDS: Final = Path(__file__).with_name("file_seconds.json")
# The estimate for a file not yet timed, per test.
INTEGRATION_SECONDS: Final = 3.0
OTHER_SECONDS: Final = 0.05
INTEGRATION_FOLDER: Final = "tests/integration/"

# The files whose tests use page_runs (both layers' runs of the hostile case, made once per
# worker that asks for them): one work unit, so it is one worker.
TOGETHER: Final = {
    "tests/integration/test_report_page.py": "page_runs",
    "tests/integration/test_report_security.py": "page_runs",
    "tests/integration/test_reworded_claims.py": "page_runs",
}


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


class FileSeconds:
    """A plugin of the main process (not of a pytest-xdist worker): each file's seconds in this
    run, every phase of every test (setup, call, teardown, fixtures included), kept in the
    cache when the session ends with the number of its tests that ran. A run of fewer of a
    file's tests than the kept figure's (``-k``, one test) does not replace that figure."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.spent: dict[str, float] = defaultdict(float)
        self.tests: dict[str, int] = defaultdict(int)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.spent[file_of(report.nodeid)] += report.duration
        if report.when == "setup":
            self.tests[file_of(report.nodeid)] += 1

    def pytest_sessionfinish(self) -> None:
        if self.config.cache is None or not self.spent:
            return
        kept = kept_figures(self.config)
        for name, seconds in self.spent.items():
            if self.tests[name] >= kept.get(name, (0.0, 0))[1]:
                kept[name] = (round(seconds, 1), self.tests[name])
        self.config.cache.set(CACHE_KEY, {name: list(figure) for name, figure in kept.items()})


def kept_figures(config: pytest.Config) -> dict[str, tuple[float, int]]:
    """The cache's seconds and number of tests per file; anything else in it is dropped."""
    kept = config.cache.get(CACHE_KEY, {}) if config.cache is not None else {}
    if not isinstance(kept, dict):
        return {}
    return {
        name: (float(figure[0]), int(figure[1]))
        for name, figure in kept.items()
        if isinstance(figure, list) and len(figure) == 2
    }


class CostliestFileFirst(LoadFileScheduling):  # type: ignore[misc]  # xdist ships no types
    """`--dist loadfile`, handing out the costliest work unit left first."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        measured = json.loads(FILE_SECONDS.read_text(encoding="utf-8"))
        kept = {name: seconds for name, (seconds, _) in kept_figures(config).items()}
        self.timed: dict[str, float] = {**measured, **kept}

    def _split_scope(self, nodeid: str) -> str:
        name = file_of(nodeid)
        return TOGETHER.get(name, name)

    def cost(self, nodeids: Iterable[str]) -> float:
        total, counted = 0.0, set()
        for nodeid in nodeids:
            name = file_of(nodeid)
            if name in self.timed:
                if name not in counted:
                    counted.add(name)
                    total += float(self.timed[name])
            else:
                integration = name.startswith(INTEGRATION_FOLDER)
                total += INTEGRATION_SECONDS if integration else OTHER_SECONDS
        return total

    def _assign_work_unit(self, node: Any) -> None:
        costliest = max(self.workqueue, key=lambda scope: self.cost(self.workqueue[scope]))
        self.workqueue.move_to_end(costliest, last=False)
        super()._assign_work_unit(node)
