"""The channel back from a tool process, attacked by a hostile worker (support/hostile.py) in
real runs of either layer: a flood of output, and a process left behind to hold it open.

Each attack ends the run at once with exit 1 and one line naming the process, the controller
holding no more than the channel's bound of what it sent, nothing left running and no secret
left on disk; the unconfined control, which runs the controller's own program, is never the
tools' code.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from app.tools.channel import MAX_OUTPUT_BYTES
from tests.support.hostile import HostileRun, Step, run_hostile

pytestmark = pytest.mark.integration

LAYERS = ["bubblewrap", "nono"]
# The first tool process each layer starts: its preflight's.
PREFLIGHT = {"bubblewrap": ("reader", "proc-status"), "nono": ("evaluator", "env-names")}
FLOODED = (
    f"wrote more than {MAX_OUTPUT_BYTES // 1024} KiB to its stdout and stderr, more than any "
    "result: the controller stopped it and read no further"
)


def the_stop(run: HostileRun) -> str:
    """The run's one error line, after checking it ended with exit 1 and left no secret."""
    assert run.exit_code == 1, run.describe()
    errors = [line for line in run.error_lines() if line.strip()]
    assert len(errors) == 1, run.describe()
    assert run.secrets(), "the harness saw no secret written"
    assert run.secrets_on_disk() == []
    return errors[0]


def kill_left(run: HostileRun) -> list[str]:
    """Kills what the run left running (after noting it), so no test leaves it to the next."""
    left = run.processes_left()
    for entry in left:
        os.kill(int(entry.split(":", 1)[0]), signal.SIGKILL)
    return left


@pytest.mark.parametrize("layer", LAYERS)
def test_an_endless_result_line_stops_the_run_at_the_bound(layer: str, work_base: Path) -> None:
    """The first tool process of the run writes a result line without end: the preflight's."""
    role, action = PREFLIGHT[layer]
    run = run_hostile(work_base, layer, [Step("flood-stdout", role=role, action=action)])
    assert the_stop(run) == f"error (run stopped): the {role}'s tool process {FLOODED}"
    assert kill_left(run) == []


@pytest.mark.parametrize("layer", LAYERS)
def test_a_role_cannot_leave_a_process_behind_to_hold_its_output(
    layer: str, work_base: Path
) -> None:
    """Under nono the baseline filter was once the worker's own code to install: a role forked
    a process into a session of its own, which outlived the run holding its output. Each layer
    has it in force before the worker's first instruction now (bwrap passes it before exec,
    the loader loads it under nono), beside the process limit of 1: the role's fork is refused
    (EPERM), its worker crashes, the run stops naming it, and nothing is left running."""
    run = run_hostile(work_base, layer, [Step("hold-output", role="evaluator", action="evaluate")])
    assert kill_left(run) == []
    stop = the_stop(run)
    assert stop.startswith(
        "error (run stopped): the evaluator's tool process exited 1 with 0 result lines:"
    ), stop
    assert stop.endswith("PermissionError: [Errno 1] Operation not permitted"), stop


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("attack", ["flood-stderr", "hold-output"])
def test_the_tools_code_never_runs_as_the_unconfined_control(
    layer: str, attack: str, work_base: Path
) -> None:
    """The control once ran the staged worker's code outside any layer: a flood of its stderr
    or a process of its own session holding its output went to the controller from there. It
    runs the controller's own copy of the worker now (run_tree.stage_control_probe), which the
    tools' code never reaches: the step is never taken, the run completes, nothing is left."""
    run = run_hostile(work_base, layer, [Step(attack, role="control", action="attack-surface")])
    assert run.exit_code == 0, run.describe()
    assert "ANALYST_COMPLETE=" in run.stdout
    assert kill_left(run) == []
    assert run.secrets_on_disk() == []
