"""Hostile input as data: every row is a case folder, an option or a setting that must be refused
with exit 2 and a message naming what is wrong, before anything of a run exists.

Each row runs the real command line in this process. The local and cluster services and the
run's clean-up process are replaced by tripwires, so a row whose input got as far as starting
anything fails; and every file under the row's own folder is listed before and after, so a row
that left anything behind (a run tree, a report folder, a staging folder) fails too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller import cli
from app.core import cluster_env, cluster_settings
from tests.support.entry_points import listing
from tests.support.input_folder import (
    ESC,
    Folder,
    Row,
    row_folder,
    set_tripwires,
    symlink,
)
from tests.support.input_rows_case import CASE_ROWS
from tests.support.input_rows_options import OPTION_ROWS

ROWS = CASE_ROWS + OPTION_ROWS


def test_the_table_holds_at_least_sixty_distinct_rows() -> None:
    names = [row.name for row in ROWS]
    assert len(names) == len(set(names))
    assert len(ROWS) >= 60


@pytest.fixture
def folder() -> Iterator[Folder]:
    with row_folder("analyst-input-") as made:
        yield made


@pytest.fixture
def tripwires(monkeypatch: pytest.MonkeyPatch) -> None:
    set_tripwires(monkeypatch)


@pytest.mark.usefixtures("tripwires")
@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_hostile_input_is_refused_before_anything_exists(
    row: Row,
    folder: Folder,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = row.build(folder)
    for variable in cluster_settings.VARIABLES:
        monkeypatch.delenv(variable.name, raising=False)
    monkeypatch.delenv(cluster_env.MODE, raising=False)
    for name, value in folder.env.items():
        monkeypatch.setenv(name, value)
    before = listing(folder.base)
    with pytest.raises(SystemExit) as ended:
        code = cli.main(argv)
        raise SystemExit(code)
    stderr = capsys.readouterr().err
    assert ended.value.code == row.code, stderr
    assert row.fragment in stderr
    lines = stderr.strip().splitlines()
    if not row.name.startswith(("unknown", "no layer")):  # argparse prints its usage first
        assert len(lines) == 1 and lines[0].startswith("error (bad input): "), stderr
    assert ESC not in stderr and "\u202e" not in stderr, "input reached the terminal raw"
    assert listing(folder.base) == before, "the row left something behind"
    for path in folder.outside:
        assert not path.exists() or (path.is_dir() and not any(path.iterdir())), path


def test_a_symlinked_proposal_never_has_its_target_digested(
    folder: Folder, tripwires: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The old way round printed the sha256 of whatever root could read: a way to learn a file's
    digest. The link is now refused before it is opened."""
    symlink(folder.case / "proposals" / "cedar.json", "/etc/passwd")
    with pytest.raises(SystemExit) as ended:
        cli.main(folder.argv())
    assert ended.value.code == 2
    stderr = capsys.readouterr().err
    assert hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest() not in stderr
    assert "sha256" not in stderr
