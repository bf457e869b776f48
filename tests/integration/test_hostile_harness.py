"""The hostile-worker harness itself (tests/support/hostile.py): its code runs in the process
each step names, under each layer, before any of the worker's own code; and a plan that does
nothing leaves the run as it always is, complete.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.tool_limits import tool_limits
from tests.support.hostile import Step, run_hostile

pytestmark = pytest.mark.integration

LAYERS = ["bubblewrap", "nono"]


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(("who", "action"), [("evaluator", "evaluate"), ("reader", "read-case")])
def test_the_hostile_code_runs_in_the_process_its_step_names(
    layer: str, who: str, action: str, work_base: Path
) -> None:
    """The step's attack ('report') exits 3 with a line saying where it ran; the controller
    shows that line as the tool's own words, and the run stops there. It ran after the
    launcher's loader alone: its file size limit is already the loader's."""
    run = run_hostile(work_base, layer, [Step("report", role=who, action=action)])
    assert run.exit_code == 1, run.describe()
    (error,) = [line for line in run.error_lines() if line.startswith("error (run stopped):")]
    limit = tool_limits().file_bytes.value
    assert f"hostile worker ran as {who} for {action}: RLIMIT_FSIZE {limit}" in error, (
        run.describe()
    )
    assert run.secrets(), "the run wrote no secret the harness saw"
    assert run.secrets_on_disk() == []
    assert run.processes_left() == []


@pytest.mark.parametrize("layer", LAYERS)
def test_a_plan_that_does_nothing_leaves_the_run_complete(layer: str, work_base: Path) -> None:
    run = run_hostile(work_base, layer, [Step("passthrough")])
    assert run.exit_code == 0, run.describe()
    assert "ANALYST_COMPLETE=" in run.stdout
