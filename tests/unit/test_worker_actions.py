"""The worker's dispatch table: every action where its module says it is, and a tool process
that imports only the module of the action it runs."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
from pathlib import Path

import app.tools.worker as worker_package
from app.core.run_tree import INTERPRETER, WORKER_COMMAND, WORKER_PACKAGE, stage_worker
from app.tools.worker.__main__ import ACTION_MODULES
from app.tools.worker.protocol import RESULT_PREFIX

# Runs the worker as `-m` does, then prints which of its modules were imported.
SHOW_IMPORTS = f"""
import runpy, sys
sys.argv = ["{WORKER_PACKAGE}", *sys.argv[1:]]
try:
    runpy.run_module("{WORKER_PACKAGE}", run_name="__main__")
finally:
    print("IMPORTED", sorted(m for m in sys.modules if m.startswith("{WORKER_PACKAGE}.")))
"""


def _declared() -> dict[str, str]:
    """Each action as its own module's ACTIONS declares it."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(worker_package.__path__):
        module = importlib.import_module(f"{worker_package.__name__}.{info.name}")
        for action in getattr(module, "ACTIONS", {}):
            assert action not in found, f"{action} is declared twice"
            found[action] = info.name
    return found


def test_the_table_names_every_action_where_its_module_declares_it() -> None:
    assert _declared() == ACTION_MODULES


def test_a_tool_process_imports_its_actions_module_alone(tmp_path: Path) -> None:
    stage_worker(tmp_path / "code")
    case = tmp_path / "case.json"
    case.write_text('{"case_id": "rfp-001", "suppliers": [{"id": "northstar"}]}')
    done = subprocess.run(
        [INTERPRETER, "-c", SHOW_IMPORTS, "read-case", str(case)],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "code")},
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.splitlines()
    imported = [line for line in lines if line.startswith("IMPORTED ")]
    assert imported == [
        "IMPORTED " + str([f"{WORKER_PACKAGE}.{m}" for m in ("business", "prologue", "protocol")])
    ], done.stderr
    (result,) = [line for line in lines if line.startswith(RESULT_PREFIX)]
    assert json.loads(result.removeprefix(RESULT_PREFIX))["supplier_ids"] == ["northstar"]


def test_every_action_is_dispatched(tmp_path: Path) -> None:
    """An unknown action is refused with the list of all; each listed one is in the table."""
    stage_worker(tmp_path / "code")
    done = subprocess.run(
        [*WORKER_COMMAND, "no-such-action"],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "code")},
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    listed = done.stderr.split("{", 1)[1].split("}", 1)[0].split(",")
    assert listed == sorted(ACTION_MODULES)
