"""The hostile-worker harness: the real controller, run by its own entry point in its own
process, with arbitrary code in place of the worker from the worker's first instruction.

Test-only, never shipped; the shipped code has no switch for it. ``python -m support.hostile``
is ``python -m app.controller`` (same arguments, same exit codes, same output) with two things
changed inside the controller's process before the controller is imported:

- ``app.core.run_tree.stage_worker``, which copies the worker into each run's code directory, is
  wrapped: after the genuine worker is staged, the package's ``__init__.py`` is replaced by
  support/hostile_worker.py and the plan (``ANALYST_TEST_HOSTILE_PLAN``, a JSON list of steps) is
  put beside it. Every tool process imports that package first of all the worker's code, so the
  hostile code runs first of all that the tools' code holds, after the launcher's own loader
  alone (app/tools/loader.py), in every process the layers start: each role under its committed
  policy (bwrap's argument list and filters, nono's profile and proxy). From there it may do
  anything, including exec another program. The unconfined control runs the controller's own
  copy of the worker (run_tree.stage_control_probe), which the seam never reaches: a step for
  the control is never taken, as in a real run. A step for the control whose args hold
  ``"stand_in": true`` is the one exception: the seam then stages the hostile code as the
  control's program too, standing in for a process at the tool's uid outside any layer (none
  of the tools can be one now), to plant in the run tree what no confined role can (a FIFO, a
  link to /dev/zero) and show the controller's scan meets it.
- ``app.core.run_tree.write_secret_file`` is wrapped to note each secret the run writes in the
  file ``ANALYST_TEST_SECRETS_RECORD`` (outside the run's folders), so that a test can search the
  disk for the real bytes once the run is over, however it ended.

A run may also be held still at chosen check lines, as support/paused.py holds one (its wrapper
is installed too when its variables are set), so that a test can kill the controller there.

The seam is the staged code directory, reached by patching a module global in this process: a
real run never imports this module, and nothing from outside the controller's process (an
environment variable, a file, an option) can change what a real run stages.

A test builds a plan from ``Step``s and calls ``run_hostile``: each step names the process it
applies to (a role, ``control``, or ``any``), the worker action it applies to (or ``any``),
and the attack (see hostile_worker.py's ATTACKS). The first step that matches a process and its
action is done; a process no step matches runs the genuine worker.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tests.support.faults import Controller, processes_of, secret_leftovers, start_controller

PLAN_VARIABLE: Final = "ANALYST_TEST_HOSTILE_PLAN"
RECORD_VARIABLE: Final = "ANALYST_TEST_SECRETS_RECORD"
WORKER: Final = Path(__file__).with_name("hostile_worker.py")
PLAN_FILE: Final = "hostile_plan.json"
# A whole run takes seconds; one that has not ended after this has hung.
HUNG_AFTER_SECONDS: Final = 240.0


@dataclass(frozen=True)
class Step:
    """One attack: done by the first process that is ``role`` and runs ``action``."""

    attack: str
    role: str = "any"
    action: str = "any"
    args: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"attack": self.attack, "role": self.role, "action": self.action, "args": self.args}


@dataclass(frozen=True)
class HostileRun:
    """A finished run under a hostile worker: how it ended, and what it may have left."""

    controller: Controller
    record: Path
    # The exit status, or None when the run hung and was killed by the test.
    exit_code: int | None

    @property
    def stdout(self) -> str:
        return self.controller.output()

    @property
    def stderr(self) -> str:
        return self.controller.errors()

    def error_lines(self) -> list[str]:
        return self.stderr.splitlines()

    def secrets(self) -> dict[str, bytes]:
        """The secret values the run wrote, as a search of the disk looks for them."""
        found: dict[str, bytes] = {}
        if not self.record.exists():
            return found
        for line in self.record.read_text(encoding="ascii").splitlines():
            entry = json.loads(line)
            data = bytes.fromhex(entry["hex"])
            if entry["name"] == "aws-credentials":
                for key in re.findall(rb"aws_secret_access_key = (\S+)", data):
                    found[f"the AWS secret key {key[:4]!r}..."] = key
            else:
                found[entry["name"]] = data.strip()
        return found

    def secrets_on_disk(self) -> list[str]:
        out = self.controller.work.parent / "out"
        return secret_leftovers([self.controller.work, out], self.secrets())

    def processes_left(self) -> list[str]:
        return processes_of(self.controller.work)

    def describe(self) -> str:
        return f"exit {self.exit_code}\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-4000:]}"


def run_hostile(
    base: Path,
    layer: str,
    steps: Sequence[Step],
    *args: str,
    hung_after: float = HUNG_AFTER_SECONDS,
    pause_at: Sequence[str] = (),
    while_paused: Callable[[Controller], None] | None = None,
    command: Sequence[str] = (),
) -> HostileRun:
    """Runs the sample case under ``layer`` with the hostile worker doing ``steps``; waits for
    the run to end (a run still going after ``hung_after`` is killed, its exit_code None).
    With ``pause_at`` the run holds still after each such check line (support/paused.py), and
    ``while_paused`` is called at the first: to kill the controller there, say. ``command``
    wraps the controller (``prlimit --as=...``, to bound what a flood can take of the machine)."""
    record = base / "secrets-record.jsonl"
    controller = start_controller(
        base,
        *args,
        layer=layer,
        entry_module="support.hostile",
        entry_env={
            PLAN_VARIABLE: json.dumps([step.as_json() for step in steps]),
            RECORD_VARIABLE: str(record),
        },
        pause_at=pause_at,
        command=command,
    )
    if while_paused is not None:
        controller.wait_paused()
        while_paused(controller)
    try:
        code: int | None = controller.finish(timeout=hung_after)
    except subprocess.TimeoutExpired:
        os.killpg(controller.process.pid, signal.SIGKILL)
        controller.process.wait()
        code = None
    return HostileRun(controller, record, code)


def _install() -> None:
    """Patches the two functions named in the module's docstring, before the controller loads."""
    from app.core import run_tree

    plan = os.environ[PLAN_VARIABLE]
    json.loads(plan)  # a plan that does not parse stops here, not inside a tool process
    record = Path(os.environ[RECORD_VARIABLE])
    genuine_stage = run_tree.stage_worker
    genuine_control = run_tree.stage_control_probe
    genuine_secret = run_tree.write_secret_file
    stand_in = any(
        step["role"] == "control" and step["args"].get("stand_in") for step in json.loads(plan)
    )

    def made_hostile(package: Path) -> Path:
        (package / "__init__.py").write_bytes(WORKER.read_bytes())
        (package / PLAN_FILE).write_text(plan, encoding="utf-8")
        for name in ("__init__.py", PLAN_FILE):
            os.chmod(package / name, 0o644)
        return package

    def stage_hostile(code_dir: Path) -> Path:
        return made_hostile(genuine_stage(code_dir))

    def stage_hostile_control(paths: run_tree.RunPaths) -> Path:
        return made_hostile(genuine_control(paths))

    def note_secret(path: Path, data: bytes, tool: run_tree.ToolIdentity) -> None:
        with record.open("a", encoding="ascii") as notes:
            notes.write(json.dumps({"name": path.name, "hex": data.hex()}) + "\n")
        genuine_secret(path, data, tool)

    run_tree.stage_worker = stage_hostile
    if stand_in:
        run_tree.stage_control_probe = stage_hostile_control
    run_tree.write_secret_file = note_secret
    if "ANALYST_TEST_PAUSE_AT" in os.environ:
        from tests.support.paused import install

        install()


if __name__ == "__main__":
    import runpy
    import sys

    _install()
    sys.argv[0] = "app.controller"
    runpy.run_module("app.controller", run_name="__main__", alter_sys=True)
