"""Fixtures shared by every test tier."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def work_base() -> Iterator[Path]:
    """A fresh directory the tool uid can traverse (pytest's tmp_path sits under 0700 folders)."""
    base = Path(tempfile.mkdtemp(prefix="analyst-test-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)
