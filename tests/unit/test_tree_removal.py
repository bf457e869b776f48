"""Removing a run's tree whatever a tool left in it (``remove``, app/controller/cleanup_process.py,
which the controller and the clean-up process both use): deep folders, folders and files
without permissions, links of every kind, FIFOs and sockets; never following a link out."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller.cleanup_process import PROGRAM, remove
from app.core.run_tree import INTERPRETER, UNPRIVILEGED_ID


@pytest.fixture
def place() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="analyst-removal-", dir="/var/tmp"))
    os.chmod(made, 0o755)
    yield made
    remove(made)


def _nest(top: Path, depth: int, name: str, owner: int = -1) -> None:
    """``depth`` folders, each made relative to the last: deeper than any path can name."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
        os.fchown(fd, owner, owner)
    leaf = os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.fchown(leaf, owner, owner)
    os.close(leaf)
    os.close(fd)


def _hostile_tree(tree: Path, outside: Path, owner: int = -1) -> None:
    """Everything a tool may leave, each entry owned by ``owner`` (-1: by whoever runs this)."""
    tree.mkdir()
    os.mkfifo(tree / "pipe")
    (tree / "zero").symlink_to("/dev/zero")
    (tree / "dangling").symlink_to(tree / "nothing")
    (tree / "out").symlink_to(outside)  # a link to a folder outside the tree
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tree / "socket"))
    listener.close()
    (tree / "closed").mkdir()
    (tree / "closed" / "inside").write_bytes(b"x")
    (tree / "unreadable").write_bytes(b"x")
    for entry in [tree, *tree.iterdir(), tree / "closed" / "inside"]:
        os.lchown(entry, owner, owner)
    os.chmod(tree / "unreadable", 0)
    os.chmod(tree / "closed", 0)
    _nest(tree, 1100, "d", owner)


def test_a_tree_of_everything_a_tool_may_leave_is_removed_and_nothing_outside(
    place: Path,
) -> None:
    outside = place / "outside"
    outside.mkdir()
    (outside / "kept").write_bytes(b"kept")
    tree = place / "tree"
    _hostile_tree(tree, outside)
    remove(tree)
    assert not os.path.lexists(tree)
    assert (outside / "kept").read_bytes() == b"kept"


def test_folders_nested_past_the_longest_path_are_removed(place: Path) -> None:
    tree = place / "tree"
    tree.mkdir()
    _nest(tree, 40, "n" * 200)  # 8,000 bytes of path below the tree: past PATH_MAX
    remove(tree)
    assert not os.path.lexists(tree)


def test_a_file_a_link_and_what_is_gone_already(place: Path) -> None:
    (place / "file").write_bytes(b"x")
    (place / "link").symlink_to(place / "file")
    remove(place / "link")
    assert (place / "file").exists()
    remove(place / "file")
    remove(place / "file")  # gone already: fine
    remove(place / "no-such-folder" / "file")
    assert list(place.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a tree owned by another uid")
def test_a_tree_its_owner_closed_is_removed_by_that_owner(place: Path) -> None:
    """In the cluster the controller and its tools share one uid: a tool can take every
    permission away from its own folders, and the controller, their owner, gives them back.
    (A root controller needs none: here the clean-up process runs at the tool's uid.)"""
    tree = place / "tree"
    _hostile_tree(tree, place, owner=UNPRIVILEGED_ID)
    os.chmod(place, 0o777)
    removed = subprocess.run(
        [INTERPRETER, "-I", "-S", str(PROGRAM), str(tree)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        user=UNPRIVILEGED_ID,
        group=UNPRIVILEGED_ID,
        extra_groups=[],
        check=False,
    )
    assert (removed.returncode, removed.stderr) == (0, b"")
    assert not os.path.lexists(tree)
