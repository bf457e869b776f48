"""The unconfined control: the same worker, at the same uid and gid, with no layer at all.

Every refusal a layer shows is set beside this process doing the same thing successfully, so
that what refuses is shown to be the layer and not the file's mode or the uid.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.core.results import ToolResult
from app.core.run_tree import RunPaths, ToolIdentity
from app.core.tool_environment import tool_environment
from app.tools.execution import exec_as_tool, worker_command


def control_environment(paths: RunPaths) -> dict[str, str]:
    """What the control starts with: a tool's environment, nothing inherited."""
    return tool_environment(str(paths.code))


def run_unconfined(
    paths: RunPaths, tool: ToolIdentity, action: str, args: Sequence[str]
) -> ToolResult:
    """Runs one worker action at the tool's identity with no confinement."""
    return exec_as_tool(
        worker_command(action, args),
        tool=tool,
        env=control_environment(paths),
        who="the unconfined control",
    )
