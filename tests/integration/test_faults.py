"""Faults: the controller killed at several points, a tool and each service killed, a full
disk, and two runs given one --out. After each: no secret on disk, no process of the run left,
and no report folder unless the run completed.

The controller runs as its own process (``python -m app.controller``), so its death is real;
a tool is killed inside its real sandbox (its command replaced by one that kills itself).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.controller.run import run_case
from app.controller.run_plan import RunOptions
from app.core.repo import SAMPLE_CASE
from app.core.results import ToolKilled
from app.core.roles import Layer
from app.tools.bubblewrap import launcher as bubblewrap_launcher
from app.tools.nono.launch_pool import LaunchProcesses, LaunchRequest
from tests.support.faults import (
    Controller,
    processes_of,
    secret_leftovers,
    settle,
    start_controller,
)

pytestmark = pytest.mark.integration

# Points of a run, each a check line it holds still at (support/paused.py): the services are
# up and preflight passed; the boundary is being checked with the secret files on disk; the
# secret files are gone and the model turn comes next; the report is being written.
SERVICES_UP = r"^PASS bubblewrap\.bwrap\.version$"
MID_BOUNDARY = r"^PASS files\.supplier-key\.control$"
SECRETS_GONE = r"^PASS secrets\.removed$"
REPORTING = r"^PASS report\.stored\.recommendation$"


@pytest.fixture
def base() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="analyst-faults-", dir="/var/tmp"))
    os.chmod(made, 0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def assert_nothing_left(controller: Controller, base: Path, *, out: Path | None = None) -> None:
    """No process of the run, no secret on disk, no report folder or staging folder."""
    out = out or base / "out"
    assert settle(lambda: processes_of(controller.work)) == []
    assert settle(lambda: secret_leftovers([base], controller.secrets_seen)) == []
    assert not out.exists()
    assert not [p.name for p in out.parent.iterdir() if ".partial-" in p.name]


# --- the controller killed ----------------------------------------------------------------


@pytest.mark.parametrize(
    "point",
    [SERVICES_UP, MID_BOUNDARY, SECRETS_GONE, REPORTING],
    ids=["services up", "mid boundary", "secrets gone", "reporting"],
)
def test_a_controller_killed_with_sigkill_leaves_nothing(point: str, base: Path) -> None:
    """No handler runs on SIGKILL: the services die with it (PR_SET_PDEATHSIG) and the clean-up
    process removes the secrets, the unfinished report and the tree."""
    # Held first where the secret files are on disk, to learn them; then at the point.
    pauses = [SERVICES_UP] if point == SERVICES_UP else [SERVICES_UP, point]
    controller = start_controller(base, pause_at=pauses)
    controller.wait_paused()
    controller.remember_secrets()
    if len(pauses) == 2:
        controller.resume()
        controller.wait_paused()
    assert controller.kill(signal.SIGKILL) == -signal.SIGKILL
    assert_nothing_left(controller, base)
    assert settle(lambda: [str(p) for p in controller.work.iterdir()]) == []


def test_a_killed_run_kept_for_inspection_keeps_its_tree_without_secrets(base: Path) -> None:
    controller = start_controller(base, "--keep-workdir", pause_at=[MID_BOUNDARY])
    controller.wait_paused()
    controller.remember_secrets()
    tree = controller.run_tree()
    controller.kill(signal.SIGKILL)
    assert_nothing_left(controller, base)
    assert (tree / "run" / "reader" / "in" / "case.json").is_file()
    # Ended, not dead: no lock file, so a later run's sweep leaves the kept tree alone.
    assert not (tree / "run.lock").exists()


def test_the_tree_of_a_run_that_died_unguarded_is_removed_by_the_next_run(base: Path) -> None:
    """Its clean-up process killed first, a dead run's tree (secrets included) stays behind; the
    next run in the same work directory finds its lock free, removes it, and says so."""
    dead = start_controller(base, pause_at=[SERVICES_UP])
    dead.wait_paused()
    dead.remember_secrets()
    tree = dead.run_tree()
    (cleanup,) = [p for p in processes_of(dead.work) if "cleanup_process.py" in p]
    os.kill(int(cleanup.split(":")[0]), signal.SIGKILL)
    dead.kill(signal.SIGKILL)
    assert settle(lambda: processes_of(dead.work)) == []
    assert (tree / "secrets").is_dir(), "the unguarded tree should still be there"

    later_base = base / "later"
    later_base.mkdir()
    later = start_controller(
        later_base, work=dead.work, out=later_base / "out", pause_at=[SERVICES_UP]
    )
    later.wait_paused()
    notes = [line for line in later.output().splitlines() if line.startswith("note: ")]
    assert notes == [
        f"note: removed {tree}: the work tree of a run whose controller (pid "
        f"{dead.process.pid}) ended without cleaning up"
    ]
    assert not tree.exists()
    assert later.kill(signal.SIGTERM) == 128 + signal.SIGTERM
    assert_nothing_left(later, base, out=later_base / "out")


# --- a service killed ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layer", "point", "service", "name"),
    [
        ("bubblewrap", SERVICES_UP, "moto_listener", "moto (the local S3, IAM and STS)"),
        ("bubblewrap", SERVICES_UP, "app.supplier_api", "the supplier API"),
        ("nono", r"^PASS nono\.profiles\.committed$", "app.supplier_api", "the supplier API"),
    ],
    ids=["moto", "supplier API", "supplier API, nono"],
)
def test_a_service_killed_mid_run_stops_it_cleanly(
    layer: str, point: str, service: str, name: str, base: Path
) -> None:
    """Whatever meets the dead service first (a check's control, a tool, the controller's own
    call), the run stops naming the service, never as a FAIL of that check."""
    controller = start_controller(base, layer=layer, pause_at=[point])
    controller.wait_paused()
    controller.remember_secrets()
    (victim,) = [p for p in processes_of(controller.work) if service in p]
    os.kill(int(victim.split(":")[0]), signal.SIGKILL)
    controller.resume()
    assert controller.finish() == 1, controller.errors()
    errors = controller.errors()
    (line,) = errors.strip().splitlines()
    assert line.startswith(
        f"error (run stopped): {name} ended (killed by SIGKILL) while the run used it; the run "
        "met it at: "
    ), line
    assert "FAIL" not in controller.output()
    assert_nothing_left(controller, base)


# --- a tool killed ------------------------------------------------------------------------


def _self_killing(command: list[str], action: str, seen: list[str]) -> list[str]:
    """The tool's command, or for the targeted action one that kills itself with SIGKILL."""
    if action in command and not seen:
        seen.append(action)
        return ["/usr/bin/sh", "-c", "kill -KILL $$"]
    return command


@pytest.fixture
def tool_killer(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Makes the first tool process of one action kill itself, under either layer's real
    sandbox: bwrap's vector keeps every option, nono-py's call (in a launch process) its whole
    capability set."""

    def arm(action: str) -> list[str]:
        seen: list[str] = []
        real_exec = bubblewrap_launcher.exec_as_tool
        real_nono = LaunchProcesses.call

        def bwrap(argv: list[str], **kwargs: Any) -> Any:
            split = argv.index("--")
            tail = _self_killing(argv[split + 1 :], action, seen)
            return real_exec([*argv[: split + 1], *tail], **kwargs)

        def nono(pool: LaunchProcesses, request: LaunchRequest, **kwargs: Any) -> Any:
            command = _self_killing(request.command, action, seen)
            return real_nono(pool, dataclasses.replace(request, command=command), **kwargs)

        monkeypatch.setattr(bubblewrap_launcher, "exec_as_tool", bwrap)
        monkeypatch.setattr(LaunchProcesses, "call", nono)
        return seen

    return arm


@pytest.mark.parametrize(
    ("layer", "action"),
    [
        (Layer.BUBBLEWRAP, "proc-status"),
        (Layer.NONO, "env-names"),
        (Layer.BUBBLEWRAP, "evaluate"),
        (Layer.NONO, "write-draft"),
    ],
    ids=["bubblewrap preflight", "nono preflight", "bubblewrap evaluator", "nono writer"],
)
def test_a_tool_killed_stops_the_run_as_stopped_not_as_an_unusable_layer(
    layer: Layer, action: str, tool_killer: Any, base: Path
) -> None:
    """A kill is not a missing piece of the machine, even in preflight: exit 1, not 3."""
    killed = tool_killer(action)
    options = RunOptions(
        layer=layer, case_dir=SAMPLE_CASE, out_dir=base / "out", work_base=base / "work"
    )
    with pytest.raises(ToolKilled, match="tool process was killed by SIGKILL") as stopped:
        run_case(options, stream=io.StringIO())
    assert killed == [action]
    assert stopped.value.exit_code == 1
    assert processes_of(base / "work") == []
    assert list((base / "work").iterdir()) == []
    assert not (base / "out").exists()


# --- a full disk --------------------------------------------------------------------------


def _on_a_small_filesystem(mountpoint: Path, size: str, listing: Path) -> list[str]:
    """A command prefix: a private mount namespace with a tmpfs of ``size`` at ``mountpoint``;
    after the controller, what is left on it is listed in ``listing`` (the namespace, and the
    tmpfs with it, end with the command)."""
    script = (
        'mount -t tmpfs -o size="$1" tmpfs "$2" || exit 99; mp="$2"; list="$3"; shift 3; '
        '"$@"; rc=$?; find "$mp" -mindepth 1 > "$list"; exit $rc'
    )
    mountpoint.mkdir()
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", size,
            str(mountpoint), str(listing)]  # fmt: skip


def test_a_full_report_filesystem_leaves_no_partial_report(base: Path) -> None:
    """Every check passes; the report files do not fit where --out is: nothing of them is
    there, not even a truncated evidence.json, and the run says so (exit 1)."""
    small, listing = base / "small", base / "listing"
    controller = start_controller(
        base,
        command=_on_a_small_filesystem(small, "16k", listing),
        out=small / "out",
        pause_at=[SERVICES_UP],
    )
    controller.wait_paused()
    controller.remember_secrets()
    controller.resume()
    assert controller.finish() == 1, controller.errors()
    assert "ANALYST_COMPLETE" not in controller.output()
    assert controller.errors().strip().splitlines() == [
        f"error (run stopped): --out {small / 'out'}: the report could not be written (No "
        "space left on device); nothing of this run is in it, and the local store ends with "
        "the run, so this report is kept nowhere; free space or pass another --out, and run "
        "the case again"
    ]
    assert listing.read_text() == ""
    assert_nothing_left(controller, base, out=small / "out")


def test_a_full_work_filesystem_stops_the_run_naming_it(base: Path) -> None:
    small, listing = base / "small", base / "listing"
    controller = start_controller(
        base, command=_on_a_small_filesystem(small, "16k", listing), work=small / "work"
    )
    assert controller.finish() == 1, controller.errors()
    (line,) = controller.errors().strip().splitlines()
    assert line.startswith(f"error (run stopped): {small / 'work'}/")
    assert "No space left on device; free space on that filesystem" in line
    # The work directory itself was made by the run (its parent existed); nothing is in it.
    assert listing.read_text().split() == [str(small / "work")]
    assert_nothing_left(controller, base)


# --- two runs, one --out ------------------------------------------------------------------


def test_two_runs_given_one_out_never_mix(base: Path) -> None:
    out = base / "shared"
    first_base = base / "first"
    first_base.mkdir()
    first = start_controller(first_base, out=out, pause_at=[SERVICES_UP])
    first.wait_paused()
    second_base = base / "second"
    second_base.mkdir()
    second = subprocess.run(
        [*_cli("run", "--layer", "nono", "--workdir", str(second_base / "w"), "--out", str(out))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert second.returncode == 2, second.stderr
    assert second.stderr == (
        f"error (bad input): --out {out}: another run is writing its report there now; give "
        "each run its own --out\n"
    )
    first.resume()
    assert first.finish() == 0, first.errors()
    (run_id,) = [line.split("=")[1] for line in first.output().splitlines() if "COMPLETE=" in line]
    assert json.loads((out / "evidence.json").read_text())["run_id"] == run_id
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "attestation.intoto.jsonl",
            "attestation.pub",
            "calls.json",
            "checks.json",
            "comparison.json",
            "evidence.json",
            "recommendation.md",
            "report.html",
        ]
    )
    third = subprocess.run(
        [*_cli("run", "--layer", "nono", "--workdir", str(second_base / "w"), "--out", str(out))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert third.returncode == 2
    assert "is not empty; a run never mixes its files with others'" in third.stderr
    assert not (second_base / "w").exists()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "app.controller", *args]
