"""The decoy view (app/tools/decoy_view.py) and the secrets it hides: locally the real secrets
are root's alone, and every process started in the view, at the tool's uid, finds decoys of
the same path, owner and mode in their place, while the controller and the host see the real
files and no mount of the view's."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from app.core.run_tree import (
    DECOY_TEXT,
    RunPaths,
    ToolIdentity,
    create_run,
    create_secrets_dir,
    write_secret_file,
)
from app.tools.decoy_view import DecoyView

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="only a root controller makes the decoy view"),
]

SECRET = b"the real key"
TOOL = ToolIdentity.for_this_controller()


@pytest.fixture
def paths() -> Iterator[RunPaths]:
    base = Path(tempfile.mkdtemp(prefix="analyst-view-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    made = create_run(base, TOOL)
    create_secrets_dir(made, TOOL)
    write_secret_file(made.secrets / "supplier.key", SECRET, TOOL)
    yield made
    shutil.rmtree(base, ignore_errors=True)


def read_as_tool(path: Path) -> tuple[int, str]:
    done = subprocess.run(
        ["/usr/bin/cat", str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
        **TOOL.process_identity(),
    )
    return done.returncode, done.stdout or done.stderr.strip().rpartition(": ")[2]


def test_the_real_secrets_are_roots_alone_and_each_decoy_has_their_owner_and_mode(
    paths: RunPaths,
) -> None:
    secrets, decoys = paths.secrets.stat(), paths.decoys.stat()
    assert (stat.S_IMODE(secrets.st_mode), secrets.st_uid, secrets.st_gid) == (0o700, 0, 0)
    assert (stat.S_IMODE(decoys.st_mode), decoys.st_uid, decoys.st_gid) == (0o750, 0, TOOL.gid)
    real, decoy = (paths.secrets / "supplier.key").stat(), (paths.decoys / "supplier.key").stat()
    assert (stat.S_IMODE(real.st_mode), real.st_uid, real.st_gid) == (0o440, 0, TOOL.gid)
    assert (stat.S_IMODE(decoy.st_mode), decoy.st_uid, decoy.st_gid) == (0o440, 0, TOOL.gid)
    assert (paths.decoys / "supplier.key").read_bytes() == DECOY_TEXT
    assert read_as_tool(paths.secrets / "supplier.key") == (1, "Permission denied")


def test_a_process_started_in_the_view_finds_the_decoy_at_the_secrets_path(
    paths: RunPaths,
) -> None:
    view = DecoyView.create(paths.secrets, paths.decoys)
    try:
        process = view.start_in_view(
            partial(
                subprocess.Popen,
                ["/usr/bin/cat", str(paths.secrets / "supplier.key")],
                stdout=subprocess.PIPE,
                cwd="/",
                **TOOL.process_identity(),
            )
        )
        seen, _ = process.communicate(timeout=60)
        assert (process.returncode, seen) == (0, DECOY_TEXT)
        # The controller's own threads never left the host's view: they read the real file.
        assert (paths.secrets / "supplier.key").read_bytes() == SECRET
        with open("/proc/self/mountinfo", encoding="utf-8") as mounts:
            assert str(paths.secrets) not in mounts.read()
    finally:
        view.close()


def test_a_thread_made_for_one_call_may_stay_in_the_view_for_good(
    paths: RunPaths,
) -> None:
    view = DecoyView.create(paths.secrets, paths.decoys)
    seen: list[tuple[int, str]] = []

    def one_call() -> None:
        view.enter_for_good()
        seen.append(read_as_tool(paths.secrets / "supplier.key"))
        seen.append(read_as_tool(paths.secrets / "supplier.key"))

    try:
        thread = threading.Thread(target=one_call)
        thread.start()
        thread.join()
        assert seen == [(0, DECOY_TEXT.decode())] * 2
        assert (paths.secrets / "supplier.key").read_bytes() == SECRET
    finally:
        view.close()


def test_the_run_tree_is_removed_while_the_view_holds_its_mount(paths: RunPaths) -> None:
    view = DecoyView.create(paths.secrets, paths.decoys)
    try:
        shutil.rmtree(paths.top)
        assert not paths.top.exists()
    finally:
        view.close()


def test_a_process_its_caller_kills_and_reaps_at_once_leaves_no_error_behind(
    paths: RunPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop kills and reaps a tool process as soon as its caller has it. The thread holding
    it in the view opened its pidfd only after handing it over: made to look just after the
    reap, it found no such process and its traceback ('Exception in thread tool-held') was a
    second line on the stopped controller's standard error."""
    reaped = threading.Event()
    real_pidfd_open = os.pidfd_open

    def pidfd_open_late(pid: int, flags: int = 0) -> int:
        reaped.wait(2)  # after the caller's reap, if the pidfd is opened after the handover
        return real_pidfd_open(pid, flags)

    errors: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    monkeypatch.setattr(os, "pidfd_open", pidfd_open_late)
    view = DecoyView.create(paths.secrets, paths.decoys)
    try:
        process = view.start_in_view(
            partial(subprocess.Popen, ["/usr/bin/sleep", "60"], cwd="/", **TOOL.process_identity())
        )
        process.kill()
        process.wait()
        reaped.set()
        deadline = threading.Event()
        for _ in range(50):
            if not any(t.name == "tool-held" for t in threading.enumerate()):
                break
            deadline.wait(0.1)
    finally:
        view.close()
    assert [(e.exc_type, str(e.exc_value)) for e in errors] == []
    assert not any(t.name == "tool-held" for t in threading.enumerate())
