"""A tool process that breaks stops the run with one line naming it by its role, whatever it did
and whenever: in the layer's preflight too, where what a started tool does is the tool's (exit
1, a stopped run) and never a missing piece of the machine (exit 3).

Real runs of either layer with a hostile worker (support/hostile.py) in place of the worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.tools.worker.protocol import RESULT_PREFIX
from tests.support.hostile import HostileRun, Step, run_hostile

pytestmark = pytest.mark.integration

LAYERS = ["bubblewrap", "nono"]
# The first tool process each layer starts: its preflight's.
PREFLIGHT = {"bubblewrap": ("reader", "proc-status"), "nono": ("evaluator", "env-names")}


def the_stop(run: HostileRun) -> str:
    """The run's one line on stderr, after checking it ended with exit 1, no secret left."""
    assert run.exit_code == 1, run.describe()
    lines = [line for line in run.error_lines() if line.strip()]
    assert len(lines) == 1, run.describe()
    assert run.secrets_on_disk() == []
    assert run.processes_left() == []
    return lines[0]


@pytest.mark.parametrize("layer", LAYERS)
def test_a_preflight_tool_that_exits_on_its_own_stops_the_run_naming_its_role(
    layer: str, work_base: Path
) -> None:
    """It was read as the machine's fault: exit 3, its words shown as bubblewrap's own."""
    role, action = PREFLIGHT[layer]
    said = Step("say", role=role, action=action, args={"stderr": "bwrap: not me\n", "exit": 1})
    run = run_hostile(work_base, layer, [said])
    assert the_stop(run) == (
        f"error (run stopped): the {role}'s tool process exited 1 with 0 result lines: "
        "bwrap: not me"
    )


def test_a_preflight_tool_that_says_it_failed_stops_the_run_naming_its_role(
    work_base: Path,
) -> None:
    """nono's preflight read a result of ok false as the layer unable to run here (exit 3):
    env-names never reports a refusal, so its shape has no refused form."""
    line = f'{RESULT_PREFIX}{{"action": "env-names", "ok": false, "errno": "EPERM"}}\n'
    lied = Step("answer", role="evaluator", action="env-names", args={"line": line})
    run = run_hostile(work_base, "nono", [lied])
    assert the_stop(run) == (
        "error (run stopped): the evaluator's tool process printed a result for env-names "
        "where the result reports a refusal (EPERM), which this action never does"
    )


MALFORMED = [
    ("bubblewrap", "not json", "printed a result line that is not usable JSON: Expecting value"),
    ("nono", "not json", "printed a result line that is not usable JSON: Expecting value"),
    ("bubblewrap", "[1]", "printed a result line that is not a JSON object"),
    (
        "nono",
        '{"ok": true, "errno": null}',
        "printed a result for evaluate where action is missing",
    ),
    (
        "bubblewrap",
        '{"action": "evaluate", "ok": true, "errno": "EPERM"}',
        "printed a result for evaluate where the result says ok=True with errno 'EPERM'",
    ),
    (
        "nono",
        '{"action": "evaluate", "ok": false, "errno": "EWHAT"}',
        "printed a result for evaluate where errno is 'EWHAT', not an errno name",
    ),
]


@pytest.mark.parametrize(
    ("layer", "line", "problem"),
    MALFORMED,
    ids=[f"{layer}: {problem.split(':')[0]}" for layer, _, problem in MALFORMED],
)
def test_a_malformed_result_line_stops_the_run_naming_the_role(
    layer: str, line: str, problem: str, work_base: Path
) -> None:
    """The line once said only 'the tool's result line ...', whichever of the three sent it."""
    answered = Step(
        "answer", role="evaluator", action="evaluate", args={"line": f"{RESULT_PREFIX}{line}\n"}
    )
    run = run_hostile(work_base, layer, [answered])
    assert the_stop(run).startswith(f"error (run stopped): the evaluator's tool process {problem}")
