"""The controller's reading of the roles' outputs' metadata (app/tools/output_metadata.py): a
run tree as create_run makes it passes; a changed mode, a setgid bit, a wider directory or any
extended attribute is named, with every role that could have done it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.core.roles import ROLES, Role
from app.core.run_tree import RunPaths, ToolIdentity, create_run
from app.tools.output_metadata import changed_outputs

TOOL = ToolIdentity(os.geteuid(), os.getegid())


@pytest.fixture
def run(tmp_path: Path) -> RunPaths:
    return create_run(tmp_path / "runs", TOOL)


def every_role(role: Role) -> tuple[Role, ...]:
    return ROLES


def its_own(role: Role) -> tuple[Role, ...]:
    return (role,)


def test_outputs_as_the_controller_made_them_pass(run: RunPaths) -> None:
    assert changed_outputs(run, TOOL, every_role) == []


def test_a_mode_changed_by_any_role_names_every_role_that_reaches_it(run: RunPaths) -> None:
    os.chmod(run.workspace("evaluator").output / "comparison.json", 0o644)
    assert changed_outputs(run, TOOL, every_role) == [
        "evaluator/out/comparison.json: mode 0644, not 0600 "
        "(the reader, the evaluator or the writer could have changed it)"
    ]


def test_a_role_that_makes_its_own_output_setgid_or_its_folder_open_is_named(run: RunPaths) -> None:
    os.chmod(run.workspace("writer").output / "draft.txt", 0o2600)
    os.chmod(run.workspace("reader").output, 0o777)
    assert changed_outputs(run, TOOL, its_own) == [
        "reader/out: mode 0777, not 0700 (the reader could have changed it)",
        "writer/out/draft.txt: mode 2600, not 0600 (the writer could have changed it)",
    ]


def test_any_extended_attribute_is_named(run: RunPaths) -> None:
    path = run.workspace("writer").output / "check.txt"
    try:
        os.setxattr(path, "user.from-the-reader", b"x")
    except OSError as error:
        pytest.skip(f"this filesystem holds no user.* attribute: {error.strerror}")
    assert changed_outputs(run, TOOL, every_role) == [
        "writer/out/check.txt: extended attributes user.from-the-reader "
        "(the reader, the evaluator or the writer could have changed it)"
    ]
