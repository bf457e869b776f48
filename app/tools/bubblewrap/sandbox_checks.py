"""The rest of what a bubblewrap tool process got: its working directory, its session, what
its parent's death does to it, its scratch space and its read-only root.

Each reading is set beside a control that starts the same reader with the one switch left
out, so the line shows that switch is what makes the difference.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from functools import partial
from typing import Final

from app.core.results import Errno, ToolResult
from app.core.run import Run
from app.core.run_tree import MAX_OUTPUT_FILE_BYTES
from app.tools.bubblewrap.policy import CODE_MOUNT, SANDBOX_ID, SCRATCH_BYTES, SCRATCH_MODE
from app.tools.bubblewrap.runner import BwrapRunner
from app.tools.catalogue import bubblewrap as c

MIB: Final = 1024 * 1024
# A little past the scratch space's size, so the write must stop short of it.
SCRATCH_FILL: Final = SCRATCH_BYTES + 64 * 1024
ROOT_PROBE: Final = "/probe.txt"


def _mib(size: int) -> str:
    return f"{size / MIB:g} MiB"


class SandboxChecks:
    """Part of the "layer" section of a bubblewrap run, from the reader's first reading."""

    def __init__(self, run: Run, layer: BwrapRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks

    def checks_of(self, tool: ToolResult) -> list[Callable[[], None]]:
        """The checks, in the order they print, from the reader's first reading ``tool`` and
        each control's: for CheckLog.at_once, or to be called in turn."""
        return [
            partial(self._working_directory, tool),
            partial(self._session, tool),
            partial(self._parent_death, tool),
            partial(self._scratch, tool),
            self._read_only_root,
        ]

    def _control(self, action: str, args: list[str], without: str) -> ToolResult:
        """The same reader started with one switch left out."""
        return self.layer.run_confined(
            "reader", action, args, omit={without}, purpose=f"control without {without}"
        )

    def _working_directory(self, tool: ToolResult) -> None:
        self.checks.expect_equal(
            c.WORKING_DIRECTORY(directory=CODE_MOUNT), tool.data["cwd"], CODE_MOUNT
        )

    def _session(self, tool: ToolResult) -> None:
        sid = tool.data["sid"]
        self.checks.require(
            c.SESSION,
            sid != 0,
            detail=f"getsid(0) is {sid}"
            + ("" if sid != 0 else ": the session's leader is outside its pid namespace"),
        )
        control = self._control("proc-status", [], "--new-session")
        self.checks.require(
            c.SESSION_CONTROL,
            control.data.get("sid") == 0,
            detail=f"getsid(0) is {control.data.get('sid')}",
        )

    def _parent_death(self, tool: ToolResult) -> None:
        kill = int(signal.SIGKILL)
        self.checks.expect_equal(c.PARENT_DEATH(signal=kill), tool.data["pdeathsig"], kill)
        control = self._control("proc-status", [], "--die-with-parent")
        self.checks.expect_equal(c.PARENT_DEATH_CONTROL, control.data.get("pdeathsig"), 0)

    def _scratch(self, tool: ToolResult) -> None:
        scratch = tool.data["scratch"] if tool.data["scratch"] else {}
        self.checks.require(
            c.SCRATCH_OWN(mode=f"{SCRATCH_MODE:04o}", uid=SANDBOX_ID),
            scratch.get("mode") == SCRATCH_MODE and scratch.get("uid") == SANDBOX_ID,
            detail=f"observed {dict(scratch) or 'no /tmp'}",
        )
        self.checks.require(
            c.SCRATCH_SIZE(size=_mib(SCRATCH_BYTES)),
            scratch.get("bytes") == SCRATCH_BYTES,
            detail=f"statvfs: {scratch.get('bytes')} bytes",
        )
        fill = ["/tmp", str(SCRATCH_FILL), str(MAX_OUTPUT_FILE_BYTES)]
        control = self._control("fill-scratch", fill, "--size")
        self.checks.require(
            c.SCRATCH_CONTROL(fill=SCRATCH_FILL, limit=_mib(MAX_OUTPUT_FILE_BYTES)),
            control.ok and control.data.get("written") == SCRATCH_FILL,
            detail=f"the write {control.observed}, {control.data.get('written')} bytes",
        )
        filled = self.layer.run_tool("reader", "fill-scratch", *fill)
        self.checks.require(
            c.SCRATCH_FULL(size=_mib(SCRATCH_BYTES)),
            filled.refused_with(Errno.ENOSPC),
            detail=f"observed {filled.observed} after {filled.data.get('written')} bytes",
        )

    def _read_only_root(self) -> None:
        probe = [f"create:{ROOT_PROBE}"]
        control = self._control("access", probe, "--remount-ro /")
        self.checks.require(
            c.ROOT_CONTROL(probe=ROOT_PROBE),
            control.data.get("answers") == ["ok"],
            detail=f"the create {control.data.get('answers')}",
        )
        refused = self.layer.run_tool("reader", "access", *probe)
        self.checks.expect_equal(
            c.ROOT_READ_ONLY(probe=ROOT_PROBE), refused.data.get("answers"), [Errno.EROFS.value]
        )
