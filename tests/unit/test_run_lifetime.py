"""The pieces of a run's life, one at a time: the report folder's claim and its one-step fill,
the sweep of dead runs' trees, the clean-up process, and the start that makes a service die
with its parent."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.controller.cleanup_process import CleanupProcess
from app.controller.output import OutClaim, OutNotWritten, OutUnusable, check_target
from app.controller.services.die_with_controller import dying_with_controller
from app.controller.workdir import RUN_LOCK, claimed_run, sweep_dead_runs
from app.core.run_tree import ToolIdentity

RUN_ID = "0123456789abcdef0123456789abcdef"
TOOL = ToolIdentity.for_this_controller()


def _report(tmp_path: Path) -> dict[str, Path]:
    files = {}
    for name in ("recommendation.md", "evidence.json"):
        files[name] = tmp_path / f"source-{name}"
        files[name].write_text(f"the {name}\n")
    return files


# --- --out --------------------------------------------------------------------------------


def test_a_new_out_is_filled_in_one_step(tmp_path: Path) -> None:
    target = check_target(tmp_path / "out", create_parent=False)
    with OutClaim(target, RUN_ID) as claim:
        assert not (tmp_path / "out").exists()  # nothing there until the whole report is
        assert claim.staging.is_dir() and claim.staging.parent == tmp_path
        claim.publish(_report(tmp_path), kept_elsewhere=None)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "evidence.json",
        "recommendation.md",
    ]
    assert not claim.staging.exists()


def test_an_existing_empty_out_is_filled(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with OutClaim(check_target(tmp_path / "out", create_parent=False), RUN_ID) as claim:
        claim.publish(_report(tmp_path), kept_elsewhere=None)
    assert (tmp_path / "out" / "recommendation.md").read_text() == "the recommendation.md\n"


def test_an_out_filled_meanwhile_is_never_mixed_into(tmp_path: Path) -> None:
    with OutClaim(check_target(tmp_path / "out", create_parent=False), RUN_ID) as claim:
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "someone-else.md").write_text("theirs")
        with pytest.raises(OutNotWritten, match="was filled or replaced by something else"):
            claim.publish(_report(tmp_path), kept_elsewhere=None)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["someone-else.md"]
    assert not claim.staging.exists()


def test_a_failed_run_leaves_no_out_and_no_staging(tmp_path: Path) -> None:
    with (
        pytest.raises(RuntimeError),
        OutClaim(check_target(tmp_path / "out", create_parent=False), RUN_ID),
    ):
        raise RuntimeError("the run stopped")
    assert list(tmp_path.iterdir()) == []


def test_a_second_claim_on_one_out_is_refused_while_the_first_lives(tmp_path: Path) -> None:
    target = check_target(tmp_path / "out", create_parent=False)
    with OutClaim(target, RUN_ID), pytest.raises(OutUnusable, match="another run is writing"):
        OutClaim(target, "f" * 32).__enter__()


def test_the_claim_of_a_dead_run_is_taken_over(tmp_path: Path) -> None:
    """A staging folder whose lock nobody holds is what a killed run left: removed."""
    dead = tmp_path / f".out.partial-{'e' * 32}"
    dead.mkdir()
    (dead / "evidence.json").write_text("trunc")
    with OutClaim(check_target(tmp_path / "out", create_parent=False), RUN_ID) as claim:
        assert not dead.exists()
        claim.publish(_report(tmp_path), kept_elsewhere=None)


# --- the work directory ---------------------------------------------------------------------


def _dead_tree(base: Path, run_id: str) -> Path:
    tree = base / run_id
    (tree / "secrets").mkdir(parents=True)
    (tree / "secrets" / "supplier-api-key").write_text("k")
    (tree / RUN_LOCK).write_text("4242\n")
    return tree


def test_the_sweep_removes_a_dead_runs_tree_and_says_so(tmp_path: Path) -> None:
    tree = _dead_tree(tmp_path, "a" * 32)
    notes: list[str] = []
    sweep_dead_runs(tmp_path, notes.append)
    assert not tree.exists()
    assert notes == [
        f"removed {tree}: the work tree of a run whose controller (pid 4242) ended without "
        "cleaning up"
    ]


def test_the_sweep_leaves_a_live_run_a_kept_tree_and_anything_else(tmp_path: Path) -> None:
    live = _dead_tree(tmp_path, "b" * 32)
    held = os.open(live / RUN_LOCK, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)
    kept = tmp_path / ("c" * 32)
    (kept / "run").mkdir(parents=True)  # a kept tree: its run removed the lock file
    other = tmp_path / ("d" * 31)  # not a run id
    (other / "secrets").mkdir(parents=True)
    (other / RUN_LOCK).write_text("1\n")
    notes: list[str] = []
    try:
        sweep_dead_runs(tmp_path, notes.append)
    finally:
        os.close(held)
    assert live.exists() and kept.exists() and other.exists()
    assert notes == []


def test_a_claimed_run_holds_its_lock_and_removes_or_keeps_its_tree(tmp_path: Path) -> None:
    with claimed_run(tmp_path, TOOL, RUN_ID, keep=False, note=print) as paths:
        probe = os.open(paths.top / RUN_LOCK, os.O_RDONLY)
        with pytest.raises(BlockingIOError):
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(probe)
    assert not paths.top.exists()
    with claimed_run(tmp_path, TOOL, RUN_ID, keep=True, note=print) as paths:
        pass
    assert paths.top.is_dir() and not (paths.top / RUN_LOCK).exists()


def test_a_work_directory_another_run_made_first_is_used_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs starting at once in a new --workdir: the one that makes it second finds it
    there at its own mkdir, and uses it, keeping the first one's modes."""
    base = tmp_path / "work"
    made = Path.mkdir

    def made_by_another_run_first(self: Path, *args: object, **kwargs: object) -> None:
        if self == base:
            made(self, mode=0o711)  # the other run's
            os.chmod(self, 0o711)
        made(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", made_by_another_run_first)
    with claimed_run(base, TOOL, RUN_ID, keep=False, note=print) as paths:
        assert paths.top.is_dir()
    assert os.stat(base).st_mode & 0o777 == 0o711


# --- the clean-up process and dying with the controller ------------------------------------


def test_the_cleanup_process_removes_what_a_dead_controller_left(tmp_path: Path) -> None:
    """The controller's end of the pipe closing is what wakes it, however that happens."""
    secrets, tree = tmp_path / "secrets", tmp_path / "tree"
    for path in (secrets, tree / "deep" / "er"):
        path.mkdir(parents=True)
    (secrets / "key").write_text("k")
    cleanup = CleanupProcess([secrets, tree, tmp_path / "never-made"])
    with cleanup:
        assert secrets.exists(), "nothing is removed while the controller lives"
    assert not secrets.exists() and not tree.exists()


def test_the_cleanup_process_outlives_its_controller(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    script = (
        "import sys, os\n"
        "from app.controller.cleanup_process import CleanupProcess\n"
        f"g = CleanupProcess([__import__('pathlib').Path({str(secrets)!r})]).__enter__()\n"
        "print(g.pid, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL
    pid = int(done.stdout)
    deadline = time.monotonic() + 30
    while secrets.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not secrets.exists()
    _wait_gone(pid)


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return
        if state == "Z":
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} still runs")


def test_a_service_started_dying_with_its_parent_does() -> None:
    """The parent is killed outright; the service (sleep) goes with it, by PR_SET_PDEATHSIG."""
    script = (
        "import subprocess, sys, os\n"
        "from app.controller.services.die_with_controller import dying_with_controller\n"
        "child = subprocess.Popen(dying_with_controller(['/usr/bin/sleep', '300']))\n"
        "print(child.pid, flush=True)\n"
        "import time; time.sleep(0.5)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    _wait_gone(int(done.stdout))


def test_dying_with_controller_runs_the_service_itself() -> None:
    argv = dying_with_controller(["/usr/bin/printf", "%s", "served"])
    assert argv[:2] == [sys.executable, "-I"]
    assert subprocess.run(argv, capture_output=True, text=True).stdout == "served"
