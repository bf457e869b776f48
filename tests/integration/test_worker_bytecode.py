"""The staged worker's bytecode: compiled once by the interpreter that runs the tools, and
what a tool process at the tool's uid loads instead of compiling its modules again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from app.controller.bytecode import WorkerBytecode
from app.core.errors import RunStopped
from app.core.run_tree import (
    INTERPRETER,
    WORKER_COMMAND,
    WORKER_PACKAGE,
    ToolIdentity,
    stage_worker,
)

pytestmark = pytest.mark.integration


def _loaded_from(code: Path) -> list[str]:
    """Where a tool process at the tool's uid loads each of the worker's modules from
    (python -v: "code object from <file>")."""
    done = subprocess.run(
        [INTERPRETER, "-v", *WORKER_COMMAND[1:], "read-case", "/nonexistent"],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1"},
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
        **ToolIdentity.for_this_controller().process_identity(),
    )
    return [
        line.split("code object from ", 1)[1].strip("'")
        for line in done.stderr.splitlines()
        if "code object from" in line and str(code) in line
    ]


def test_a_tool_process_loads_the_compiled_worker(work_base: Path) -> None:
    code = work_base / "code"
    stage_worker(code)
    assert all(path.endswith(".py") for path in _loaded_from(code))  # the control: source
    WorkerBytecode(code).wait()
    loaded = _loaded_from(code)
    assert {Path(path).name.split(".")[0] for path in loaded} == {
        "__init__",
        "__main__",
        "analyst_loader",
        "protocol",
        "business",
    }
    assert all("/__pycache__/" in path and path.endswith(".pyc") for path in loaded), loaded
    for path in loaded:
        assert os.stat(path).st_mode & 0o777 == 0o644


def test_a_worker_that_does_not_compile_stops_the_run(work_base: Path) -> None:
    code = work_base / "code"
    stage_worker(code)
    (code / WORKER_PACKAGE / "broken.py").write_text("def (:\n")
    with pytest.raises(RunStopped) as stopped:
        WorkerBytecode(code).wait()
    assert "could not compile the staged worker" in str(stopped.value)
    assert "broken.py" in str(stopped.value)
