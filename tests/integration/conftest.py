"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.report_runs import Runs, report_runs


@pytest.fixture(scope="session")
def page_runs() -> Iterator[Runs]:
    """Both layers' runs of the hostile case, made once for the report page tests (its nono
    run reworded): tests/support/report_runs.py."""
    with report_runs() as made:
        yield made


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Under pytest-xdist (make test) every test that reads page_runs goes to one worker, so the
    # two runs are made once, not once per worker.
    for item in items:
        if "page_runs" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("page_runs"))
