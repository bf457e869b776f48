"""The scan of the run directory for secrets (app/controller/report.py over app/core/tree.py),
against what a tool process may leave there: it reads regular files alone, follows nothing,
waits on nothing, goes as deep as it is let without recursion, and names everything else."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller.cleanup_process import remove
from app.controller.secret_scan import KeyLeak, ScanIncomplete, scan_directory
from app.core.repo import REPO_ROOT
from app.core.run_tree import INTERPRETER, UNPRIVILEGED_ID
from app.core.tree import MAX_DEPTH, MAX_FILE_BYTES, Kind, walk

SECRETS = {"the supplier key": b"s3cr3t-k3y-value"}


@pytest.fixture
def run_dir() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="analyst-scan-", dir="/var/tmp"))
    (made / "reader" / "out").mkdir(parents=True)
    (made / "reader" / "out" / "check.txt").write_bytes(b"fine")
    (made / "evidence.json").write_bytes(b"{}")
    yield made
    remove(made)


def _nest(top: Path, depth: int) -> None:
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)


def test_the_regular_files_are_read_and_listed(run_dir: Path) -> None:
    assert scan_directory(run_dir, SECRETS) == ["evidence.json", "reader/out/check.txt"]


@pytest.mark.parametrize(
    ("plant", "found"),
    [
        (lambda out: (out / "x").write_bytes(b"..s3cr3t-k3y-value.."), "in reader/out/x"),
        (lambda out: (out / "s3cr3t-k3y-value").write_bytes(b""), "in the name reader/out/s3cr3t"),
        (lambda out: (out / "l").symlink_to("s3cr3t-k3y-value"), "in the target of the link"),
    ],
    ids=["content", "name", "link target"],
)
def test_a_secret_is_found_in_a_file_a_name_or_a_link(
    run_dir: Path, plant: object, found: str
) -> None:
    assert callable(plant)
    plant(run_dir / "reader" / "out")
    with pytest.raises(KeyLeak, match=f"the supplier key {found}"):
        scan_directory(run_dir, SECRETS)


def test_whatever_is_not_a_regular_file_is_named_and_nothing_is_followed_or_waited_on(
    run_dir: Path,
) -> None:
    out = run_dir / "reader" / "out"
    os.mkfifo(out / "pipe")
    (out / "zero").symlink_to("/dev/zero")
    (out / "dangling").symlink_to(out / "nothing")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(out / "socket"))
    listener.close()
    with open(out / "large", "wb") as large:
        large.truncate(MAX_FILE_BYTES + 1)
    _nest(out, 1100)
    with pytest.raises(ScanIncomplete) as stopped:
        scan_directory(run_dir, SECRETS)
    message = str(stopped.value)
    for named in (
        "reader/out/pipe: a FIFO",
        "reader/out/zero: a symbolic link",
        "reader/out/dangling: a symbolic link",
        "reader/out/socket: a socket",
        f"reader/out/large: a regular file larger than 16 MiB ({MAX_FILE_BYTES + 1} bytes)",
        f"reader/out{'/d' * (MAX_DEPTH - 2)}: a folder nested more than {MAX_DEPTH} deep",
    ):
        assert named in message, message


def test_the_walk_is_iterative_past_any_recursion_limit(run_dir: Path) -> None:
    _nest(run_dir, 1100)
    kinds = [entry.kind for entry in walk(run_dir)]
    assert kinds.count(Kind.TOO_DEEP) == 1
    assert kinds.count(Kind.FOLDER) == MAX_DEPTH + 2  # the nest's, and reader and reader/out


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to scan as another uid")
def test_what_the_scanning_uid_cannot_open_is_named_not_a_traceback(run_dir: Path) -> None:
    """In the cluster the controller is not root: a file or folder a tool closed to it is an
    entry of its own in the scan's answer."""
    out = run_dir / "reader" / "out"
    (out / "unreadable").write_bytes(b"x")
    os.chmod(out / "unreadable", 0)
    (out / "closed").mkdir()
    os.chmod(out / "closed", 0)
    os.chmod(run_dir, 0o755)
    scan = (
        "import sys; from pathlib import Path; from app.core.tree import walk; "
        "print('\\n'.join(e.described for e in walk(Path(sys.argv[1]))))"
    )
    listed = subprocess.run(
        [
            INTERPRETER,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); " + scan,
            str(run_dir),
        ],
        capture_output=True,
        text=True,
        user=UNPRIVILEGED_ID,
        group=UNPRIVILEGED_ID,
        extra_groups=[],
        check=True,
    ).stdout.splitlines()
    assert "reader/out/unreadable: an entry that cannot be read (Permission denied)" in listed
    assert "reader/out/closed: an entry that cannot be read (Permission denied)" in listed
