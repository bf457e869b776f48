"""`case new` and `case check --write-digests` on a full filesystem, through the real entry
point: a small tmpfs in a private mount namespace (``unshare -m``; nothing of the host is
mounted over). Each is exit 2, one line naming the file and the cause, and leaves nothing
behind: no half-written folder that the next `case new` would refuse, no temporary file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.core.repo import REPO_ROOT

pytestmark = pytest.mark.integration

_SCRIPT = """
mount -t tmpfs -o size="$1" tmpfs "$2" || exit 99
mp="$2"; shift 2
"$@" > "$mp.out" 2> "$mp.err"; echo $? > "$mp.rc"
find "$mp" -mindepth 1 | sort > "$mp.listing"
cat "$mp"/*/case.json > "$mp.case-json" 2>/dev/null || true
"""


def _in_small_tmpfs(
    tmp_path: Path, size: str, setup: str, *args: str
) -> tuple[int, str, list[str]]:
    """Runs ``setup`` (a shell line, with $mp the tmpfs) then the controller's ``args`` on a
    tmpfs of ``size``; its exit code, its stderr and what is left on the tmpfs."""
    mountpoint = tmp_path / "small"
    mountpoint.mkdir()
    script = _SCRIPT.replace('"$@" >', f'{setup}\n"$@" >')
    done = subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            size,
            str(mountpoint),
            sys.executable,
            "-m",
            "app.controller",
            *args,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    read = lambda suffix: Path(f"{mountpoint}.{suffix}").read_text()  # noqa: E731
    left = [line.removeprefix(f"{mountpoint}/") for line in read("listing").splitlines()]
    return int(read("rc")), read("err"), left


def test_case_new_on_a_full_filesystem_leaves_no_folder(tmp_path: Path) -> None:
    mountpoint = tmp_path / "small"
    code, errors, left = _in_small_tmpfs(
        tmp_path, "8k", "", "case", "new", str(mountpoint / "my-case")
    )
    assert code == 2, errors
    assert errors.splitlines() == [
        f"error (bad input): {mountpoint / 'my-case'}: the case could not be written (No space "
        "left on device); nothing of it was left; free space on that filesystem, or pass a "
        "folder on another"
    ]
    assert left == []


def test_write_digests_on_a_full_filesystem_leaves_case_json_alone(tmp_path: Path) -> None:
    mountpoint = tmp_path / "small"
    case = mountpoint / "my-case"
    # A case made while there is room; then the disk filled, and a proposal edited in place
    # (one byte in a page it already has), so its digest must be written.
    setup = (
        f"{sys.executable} -m app.controller case new {case} >/dev/null || exit 98; "
        'head -c 1M /dev/zero > "$mp/filler" 2>/dev/null; '
        f"printf ' ' >> {case}/proposals/aster.json || exit 97; "
        f"cp {case}/case.json {mountpoint}.before"
    )
    code, errors, left = _in_small_tmpfs(
        tmp_path, "64k", setup, "case", "check", str(case), "--write-digests"
    )
    assert code == 2, errors
    assert errors.splitlines() == [
        f"error (bad input): {case / 'case.json'}: cannot be written (No space left on device); "
        "it is unchanged and nothing was left beside it; free space on that filesystem"
    ]
    assert sorted(left) == [
        "filler",
        "my-case",
        "my-case/case.json",
        "my-case/proposals",
        "my-case/proposals/aster.json",
        "my-case/proposals/birch.json",
        "my-case/proposals/cobalt.json",
    ]
    assert (tmp_path / "small.case-json").read_bytes() == (tmp_path / "small.before").read_bytes()
