"""The run directory left with what a hostile process at the tool's uid can make there (the
unconfined control, which runs the staged worker: support/hostile.py), in real runs of either
layer: a FIFO, a link to /dev/zero, a dangling link, a file and a folder without permissions,
1,100 nested folders.

The last scan neither waits on the FIFO nor reads /dev/zero nor runs out of recursion: it names
each thing it could not read as a regular file, and the run stops (exit 1). The tree goes
however the run ends: removed by the controller, or by the clean-up process when the controller is
killed first.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from app.core.tree import MAX_DEPTH
from tests.support.attested_run import assert_failure_kept
from tests.support.faults import Controller, settle
from tests.support.hostile import HostileRun, Step, run_hostile

pytestmark = pytest.mark.integration

LAYERS = ["bubblewrap", "nono"]
PLANTED = ["fifo", "zero-link", "dangling-link", "unreadable-file", "unreadable-dir", "deep"]
# Planted by a stand-in at the tool's uid outside any layer (support/hostile.py): no tool can.
PLANT = Step(
    "plant", role="control", action="attack-surface", args={"kinds": PLANTED, "stand_in": True}
)
# Printed once the run's secret files are gone: after the attacks, before the last scan.
SECRETS_GONE = r"^PASS secrets\.removed$"
NAMED = [
    "reader/out/pipe: a FIFO",
    "reader/out/zero: a symbolic link (to /dev/zero)",
    "reader/out/dangling: a symbolic link (to ",
    f"reader/out{'/d' * (MAX_DEPTH - 2)}: a folder nested more than {MAX_DEPTH} deep",
]


def trees_left(run: HostileRun) -> list[str]:
    work = run.controller.work
    return [p.name for p in work.iterdir() if re.fullmatch(r"[0-9a-f]{32}", p.name)]


@pytest.mark.parametrize("layer", LAYERS)
def test_the_last_scan_names_what_it_cannot_read_and_the_tree_goes(
    layer: str, work_base: Path
) -> None:
    run = run_hostile(work_base, layer, [PLANT])
    assert run.exit_code == 1, run.describe()
    fails = [line for line in run.stdout.splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 1, run.describe()
    assert fails[0].startswith(
        "FAIL and so was every file left in the run directory, read back after the last write "
        "(not regular files the scan could read, so not scanned: "
    ), fails[0]
    assert fails[0].endswith(" [evidence.scanned-after]"), fails[0]
    for named in NAMED:
        assert named in fails[0], fails[0]
    (stop,) = [line for line in run.error_lines() if line.strip()]
    assert stop.startswith("ANALYST_FAILED: and so was every file left in the run"), stop
    assert trees_left(run) == []
    # Only what the failure path wrote and scanned itself is kept, never the run directory's.
    assert_failure_kept(work_base / "out", "evidence.scanned-after")
    assert run.secrets() and run.secrets_on_disk() == []
    assert run.processes_left() == []


@pytest.mark.parametrize("layer", LAYERS)
def test_the_clean_up_process_removes_the_tree_whatever_it_holds(
    layer: str, work_base: Path
) -> None:
    """The controller is killed (SIGKILL: no clean-up of its own runs) once the planted tree is
    there; the clean-up process removes it."""

    def kill(controller: Controller) -> None:
        controller.kill(signal.SIGKILL)

    run = run_hostile(work_base, layer, [PLANT], pause_at=[SECRETS_GONE], while_paused=kill)
    assert run.exit_code == -signal.SIGKILL, run.describe()
    assert settle(lambda: trees_left(run)) == [], run.describe()
    assert settle(run.secrets_on_disk) == []
    assert settle(run.processes_left) == []
