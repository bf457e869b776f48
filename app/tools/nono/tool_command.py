"""The command a nono role's tool process runs: the worker, started by the loader with the
limits its profile sets and the seccomp filter its profile names, staged in the code directory
where every role may read it.

nono-py has no way to stack a filter of the caller's, so the loader (app/tools/loader.py) loads
the filter itself, first of all, before the worker's own code.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.core.tool_limits import tool_limits
from app.tools.loader import FILTER_OPTION
from app.tools.nono.channel import NONO_WORKER_COMMAND
from app.tools.nono.policy import SECCOMP_FILTER_FILE
from app.tools.seccomp import nono_baseline_filter
from app.tools.seccomp_policy import GROUP_ELEMENTS


def stage_filter(code_dir: Path) -> None:
    """The baseline filter every shipped profile names, written once into ``code_dir``."""
    path = code_dir / SECCOMP_FILTER_FILE
    if path.exists():
        return
    path.write_bytes(nono_baseline_filter().program)
    os.chmod(path, 0o644)


def tool_command(
    code_dir: Path, profile: dict[str, Any], action: str, args: Sequence[str], baseline: bool
) -> list[str]:
    """The worker's command line for ``action`` under ``profile``; without ``baseline``, it
    loads no filter (a control call)."""
    process = profile.get("process", {})
    options: list[str] = []
    # The loader's options, each from the profile (a limit left out of it is not set), the
    # limits first: the filter refuses nothing the loader does, but is loaded last.
    for limit in tool_limits().all():
        if limit.key in process:
            options += [limit.option, str(int(process[limit.key]))]
    if baseline and "seccomp_filter" in process:
        # Loaded by the loader, first of all: nono-py has no way to stack a filter of the
        # caller's (app/tools/loader.py).
        options += [FILTER_OPTION, _filter_for(code_dir, process)]
    return [*NONO_WORKER_COMMAND, *options, action, *args]


def _filter_for(code_dir: Path, process: dict[str, Any]) -> str:
    """The filter the profile names, holding the rule groups it lists: the staged baseline
    when it lists them all (every shipped profile), else a filter without the others, staged
    beside it (a group left out on purpose: ``--break``, the removal test)."""
    listed = process.get("seccomp_groups", [])
    left_out = frozenset(GROUP_ELEMENTS) - set(listed)
    if not left_out:
        return str(process["seccomp_filter"])
    path = code_dir / f"nono-baseline-without-{'-'.join(sorted(left_out))}.bpf"
    if not path.exists():
        path.write_bytes(nono_baseline_filter(left_out).program)
        os.chmod(path, 0o644)
    return str(path)
