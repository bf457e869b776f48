"""Fixtures for the infrastructure tests: runs of the program under the recording mock engine."""

from __future__ import annotations

import pytest

from tests.support.stack_run import StackRun, run_stack


@pytest.fixture(scope="session")
def default_stack() -> StackRun:
    """The program with every config key at its default (existing cluster, build, both layers)."""
    return run_stack()
