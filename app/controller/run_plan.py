"""A run's options and its plan: every option checked before anything of the run exists."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from app.controller.environment import RunMode, mode_from_environment
from app.controller.limits import check_file_size_limit
from app.controller.output import OutTarget, check_apart, check_parent, check_target
from app.controller.workdir import check_chosen, choose_work_base
from app.core.case import CaseFolder, load_case_folder
from app.core.roles import Layer
from app.core.run_tree import new_run_id
from app.tools.policy_breaks import PolicyBreak


@dataclass(frozen=True)
class RunOptions:
    layer: Layer
    case_dir: Path
    out_dir: Path | None = None  # exactly here; otherwise <out_parent>/<layer>/<run id>
    out_parent: Path | None = None  # default: runs/ locally, the run's volume in the cluster
    work_base: Path | None = None
    keep_workdir: bool = False
    # The layers whose tool processes will use the work directory (the demo runs both).
    workdir_layers: tuple[Layer, ...] = ()
    # One element of one role's policy left out on purpose (--break), of this layer's policy.
    policy_break: PolicyBreak | None = None
    # Print only FAIL and SKIP lines (and the summary): --quiet.
    quiet: bool = False


@dataclass(frozen=True)
class RunPlan:
    """The options, every one checked; nothing exists yet."""

    options: RunOptions
    folder: CaseFolder
    mode: RunMode
    work_base: Path
    run_id: str
    out: OutTarget

    @property
    def top(self) -> Path:
        return self.work_base / self.run_id


def plan_run(options: RunOptions) -> RunPlan:
    """Checks the case, the mode's settings, the process limits, --workdir and --out; raises
    BadInput (exit 2) naming the file, setting, limit or option, before anything is created."""
    folder = load_case_folder(options.case_dir)
    mode = mode_from_environment()
    check_file_size_limit()
    layers = options.workdir_layers or (options.layer,)
    base = check_chosen(choose_work_base(options.work_base, os.environ, mode.default_base), layers)
    run_id = new_run_id()
    if options.out_dir is not None:
        out = check_target(options.out_dir, create_parent=False)
        check_apart(out.path, base)
    else:
        parent = options.out_parent or mode.default_out_parent
        check_parent(parent)
        check_apart(parent if options.out_parent else parent / options.layer.value, base)
        out = check_target(parent / options.layer.value / run_id, create_parent=True)
    return RunPlan(options, folder, mode, base, run_id, out)
