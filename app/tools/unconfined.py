"""The unconfined control: the controller's own probe program, at the tool's uid and gid, with
no layer at all.

Every refusal a layer shows is set beside this process doing the same thing successfully, so
that what refuses is shown to be the layer and not the file's mode or the uid. Its program is
the worker as the controller's package holds it, staged apart from the tools' code
(run_tree.stage_control_probe) where no tool process is given it: whatever a tool's code is,
none of it runs outside a layer. A control that opens a secret's path starts in the tools'
decoy view (app/tools/decoy_view.py), so it opens the secret's decoy, never the secret; every
other control runs where the real secrets are root's alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.core.results import ToolResult
from app.core.run import ToolView
from app.core.run_tree import RunPaths, ToolIdentity
from app.core.tool_counts import ToolCounts
from app.core.tool_environment import tool_environment
from app.tools.execution import exec_as_tool, worker_command


def control_environment(paths: RunPaths) -> dict[str, str]:
    """What the control starts with: a tool's environment, nothing inherited, with its own
    program's directory, not the tools' code."""
    return tool_environment(str(paths.control_code))


def run_unconfined(
    paths: RunPaths,
    tool: ToolIdentity,
    action: str,
    args: Sequence[str],
    *,
    counts: ToolCounts,
    decoys: ToolView | None,
) -> ToolResult:
    """Runs one action of the control's program at the tool's identity with no confinement,
    in ``decoys`` where there is one, counting its start in ``counts``."""
    return exec_as_tool(
        worker_command(action, args),
        tool=tool,
        counts=counts,
        env=control_environment(paths),
        who="the unconfined control",
        action=action,
        args=args,
        decoys=decoys,
    )
