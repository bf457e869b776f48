"""A result line that is JSON with an action, ok and errno but is not the action's result, in
real runs of either layer: a hostile worker (support/hostile.py) prints it in place of the
worker's. The line is held to the action's declared shape (app/core/result_shapes.py) before a
check reads it, so the run stops with exit 1 on one line naming the role and what is wrong,
where it ended in a controller's KeyError or TypeError; nothing is left running and no secret
is left on disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.tools.worker.protocol import RESULT_PREFIX
from tests.support.hostile import HostileRun, Step, run_hostile

pytestmark = pytest.mark.integration


def _line(action: str, **fields: Any) -> str:
    document = {"action": action, "ok": True, "errno": None, **fields}
    return f"{RESULT_PREFIX}{json.dumps(document)}\n"


# (layer, role, action, the line it prints, what its role's stop says after "printed a result")
CASES = [
    (
        "bubblewrap",
        "evaluator",
        "proc-status",
        _line("proc-status"),
        "for proc-status where uid is missing (expected an integer)",
    ),
    (
        "nono",
        "reader",
        "env-names",
        _line("env-names", names=5),
        "for env-names where names is 5, not a list",
    ),
    (
        "bubblewrap",
        "reader",
        "env-names",
        _line("env-names", names=5),
        "for env-names where names is 5, not a list",
    ),
    (
        "bubblewrap",
        "evaluator",
        "evaluate",
        _line("evaluate"),
        "for evaluate where comparison is missing (expected an object)",
    ),
    (
        "nono",
        "evaluator",
        "evaluate",
        _line("evaluate"),
        "for evaluate where comparison is missing (expected an object)",
    ),
    (
        "nono",
        "evaluator",
        "evaluate",
        _line("read-proposal", path="/x", sha256="0", supplier_id="cedar"),
        "for evaluate where action is 'read-proposal'",
    ),
    (
        "bubblewrap",
        "writer",
        "write-draft",
        _line("evaluate", sha256="0", comparison={}),
        "for write-draft where action is 'evaluate'",
    ),
    # A field no shape declares, named to clear the screen: shown escaped, on the one line.
    (
        "nono",
        "writer",
        "write-draft",
        _line(
            "write-draft", comparison_sha256="0", draft_sha256="0", winner=None, **{"\x1b[2J": 1}
        ),
        "for write-draft where the result has an undeclared field '\\x1b[2J'",
    ),
]


def the_stop(run: HostileRun) -> str:
    """The run's one error line, after checking it ended with exit 1 as a stop (no traceback),
    with nothing left running and no secret left on disk."""
    assert run.exit_code == 1, run.describe()
    errors = [line for line in run.error_lines() if line.strip()]
    assert len(errors) == 1, run.describe()
    assert "Traceback" not in run.stdout + run.stderr, run.describe()
    assert "\x1b" not in run.stderr, run.describe()
    assert run.secrets(), "the harness saw no secret written"
    assert run.secrets_on_disk() == []
    assert run.processes_left() == []
    return errors[0]


@pytest.mark.parametrize(
    ("layer", "role", "action", "line", "problem"),
    CASES,
    ids=[f"{layer}: {role} {action}: {problem}" for layer, role, action, _, problem in CASES],
)
def test_a_result_not_in_its_actions_shape_stops_the_run_naming_the_role(
    layer: str, role: str, action: str, line: str, problem: str, work_base: Path
) -> None:
    answered = Step("answer", role=role, action=action, args={"line": line})
    run = run_hostile(work_base, layer, [answered])
    stop = the_stop(run)
    assert f"the {role}'s tool process printed a result {problem}" in stop, run.describe()


@pytest.mark.parametrize("layer", ["bubblewrap", "nono"])
def test_a_peak_memory_no_process_under_the_limits_could_report_stops_the_run(
    layer: str, work_base: Path
) -> None:
    """A peak_rss_kib of 4001 digits (json reads it as a number): the run stops naming the role,
    and the number is in no file the run left, evidence.json among them."""
    digits = "9" * 4001
    line = f'{RESULT_PREFIX}{{"action": "write-draft", "ok": true, "errno": null, '
    line += f'"peak_rss_kib": {digits}}}\n'
    answered = Step("answer", role="writer", action="write-draft", args={"line": line})
    run = run_hostile(work_base, layer, [answered], "--keep-workdir")
    stop = the_stop(run)
    assert (
        "the writer's tool process printed a result for write-draft where peak_rss_kib is 999"
        in stop
    ), stop
    assert stop.endswith(
        "..., beyond what a process under its address-space limit can hold (KiB): 0 to 262144"
    ), stop
    # The hostile worker's own plan holds the line it printed; nothing else may.
    left = [
        path
        for path in work_base.rglob("*")
        if path.is_file()
        and not path.is_symlink()
        and path.name != "hostile_plan.json"
        and digits[:200].encode() in _read(path)
    ]
    assert left == [], left


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
