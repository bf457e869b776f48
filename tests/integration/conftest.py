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
