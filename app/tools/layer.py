"""What the controller needs from a confinement layer, whichever one it is.

A layer starts a tool process for one role and one action and returns the one result line
the worker printed. A start-up failure, a timeout, a crash or a missing result raises
ToolRunError: it is never read as a refusal.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from app.controller.context import LayerChecks, RunContext
from app.core.run_tree import Role
from app.tools.worker.protocol import RESULT_PREFIX

TOOL_TIMEOUT_SECONDS = 60


class LayerUnavailable(RuntimeError):
    """This machine cannot start a confined tool process; the message names the fix."""


class ToolRunError(RuntimeError):
    """The tool process did not produce a result: start-up failure, timeout or crash."""


@dataclass(frozen=True)
class ToolOutcome:
    """The worker's result line, parsed, and the exact command that produced it."""

    result: dict[str, Any]
    command: list[str]


def parse_result(stdout: bytes, stderr: bytes, returncode: int, command: list[str]) -> ToolOutcome:
    """Finds exactly one result line; anything else is a failure to run, not a refusal."""
    lines = [
        line[len(RESULT_PREFIX) :]
        for line in stdout.decode("utf-8", "replace").splitlines()
        if line.startswith(RESULT_PREFIX)
    ]
    if returncode != 0 or len(lines) != 1:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise ToolRunError(
            f"tool process exited {returncode} with {len(lines)} result lines"
            + (f": {' | '.join(tail)}" if tail else "")
        )
    return ToolOutcome(json.loads(lines[0]), command)


class ConfinementLayer(ABC):
    """One way of confining the three roles. Implementations: bubblewrap, nono."""

    name: ClassVar[str]

    @abstractmethod
    def preflight(self) -> None:
        """Starts one real tool process; raises LayerUnavailable naming the missing piece."""

    @abstractmethod
    def run(self, role: Role, action: str, args: list[str]) -> ToolOutcome:
        """Runs one worker action for one role under this layer's policy for that role."""

    @abstractmethod
    def role_dir(self, role: Role, direction: Literal["in", "out"]) -> str:
        """The role's input or output directory as the role itself sees it."""

    def role_path(self, role: Role, direction: Literal["in", "out"], name: str) -> str:
        """A file in the role's input or output directory, as the role names it."""
        base = self.role_dir(role, direction)
        return f"{base}/{name}" if name else base

    @abstractmethod
    def evidence(self) -> dict[str, Any]:
        """The policy this run actually applied (argument lists, profiles), for evidence.json."""

    @abstractmethod
    def check_suite(self, ctx: RunContext) -> LayerChecks:
        """This layer's own checks, which the orchestrator calls at fixed points of the run."""

    def secrets_to_scan(self, supplier_key: bytes) -> dict[str, bytes]:
        """Further values (named) that no file of the run may hold: credentials the layer made."""
        return {}

    def close(self) -> None:  # noqa: B027 (an optional hook)
        """Releases what the layer started (proxies). Idempotent."""
