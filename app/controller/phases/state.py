"""The state the shared phases of one run pass along, and the helpers they share."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.controller.checks import CheckLog
from app.controller.context import RunContext
from app.controller.environment import RunEnvironment
from app.core.case import Case, Proposal
from app.core.run_tree import Role, ToolIdentity


@dataclass
class RunState:
    """One run as the phases see it: its context, its services and what it has read so far."""

    ctx: RunContext
    env: RunEnvironment
    shipped: dict[str, bytes]  # the case folder's files, as the store must hold them
    proposals: dict[str, Proposal] = field(default_factory=dict)
    proposal_bytes: dict[str, bytes] = field(default_factory=dict)

    @property
    def checks(self) -> CheckLog:
        return self.ctx.checks

    @property
    def case(self) -> Case:
        return self.ctx.case

    @property
    def report_prefix(self) -> str:
        return f"reports/{self.case.case_id}/{self.ctx.run_id}/"

    def role_in(self, role: Role, name: str) -> str:
        """A file in the role's input directory, as the role names it."""
        return self.ctx.layer.role_path(role, "in", name)

    def role_out(self, role: Role, name: str) -> str:
        """A file in the role's output directory, as the role names it."""
        return self.ctx.layer.role_path(role, "out", name)

    def secrets(self) -> dict[str, bytes]:
        """What no file of the run may hold: the real key, and what the layer derived from it."""
        key = self.env.supplier_key
        return {"the supplier key": key} | self.ctx.layer.secrets_to_scan(key)


def json_bytes(document: Any) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def write_input(path: Path, data: bytes, tool: ToolIdentity, *, tool_owned: bool) -> None:
    """Stages a file for a role: readable by the tool's uid, written only by the controller."""
    path.write_bytes(data)
    os.chmod(path, 0o644)
    if tool_owned and os.geteuid() == 0:
        # The reader's case file belongs to the tool's uid, so a refused write through /input
        # is the read-only mount's doing and not the file's mode.
        os.chown(path, tool.uid, tool.gid)
