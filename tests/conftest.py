"""Fixtures shared by every test tier."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller.signing_key import KEY_PATH_VARIABLE
from tests.support import xdist_order
from tests.support.schemas import validate_tree


@pytest.fixture(autouse=True, scope="session")
def signing_key() -> Iterator[Path]:
    """Every run the tests make signs with one key of the session's, never the home folder's
    (the installation's key a run would otherwise make on first use)."""
    folder = Path(tempfile.mkdtemp(prefix="analyst-test-key-"))
    path = folder / "attestation-key.pem"
    before = os.environ.get(KEY_PATH_VARIABLE)
    os.environ[KEY_PATH_VARIABLE] = str(path)
    try:
        yield path
    finally:
        if before is None:
            os.environ.pop(KEY_PATH_VARIABLE, None)
        else:
            os.environ[KEY_PATH_VARIABLE] = before
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def work_base() -> Iterator[Path]:
    """A fresh directory the tool uid can traverse (pytest's tmp_path sits under 0700 folders).

    Every evidence.json and checks.json a run left in it is validated against its schema when
    the test ends: a run whose files break their schema fails its test."""
    base = Path(tempfile.mkdtemp(prefix="analyst-test-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    try:
        yield base
        validate_tree(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/integration/ is marked `integration`, or the session stops before
    any runs: `make test-fast` (-m "not integration") must never start a real sandbox, server
    or rehearsal, and it leaves out only what is so marked."""
    integration = Path(__file__).parent / "integration"
    unmarked = [
        item.nodeid
        for item in items
        if item.path.is_relative_to(integration) and item.get_closest_marker("integration") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "tests under tests/integration/ without the integration marker: " + ", ".join(unmarked)
        )


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`--dist loadfile` hands out the costliest file left first: tests/support/xdist_order.py."""
    if config.getvalue("dist") == "loadfile":
        return xdist_order.CostliestFileFirst(config, log)
    return None


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(xdist_order.FileSeconds(config), "file-seconds")
