"""Fixtures for the infrastructure tests: offline runs of the program under recording mocks."""

from __future__ import annotations

import pytest

from tests.support.stack_run import StackRun, run_stack


@pytest.fixture(scope="session")
def default_stack() -> StackRun:
    """The program with every config key at its default (existing cluster, build, both layers)."""
    return run_stack()
