"""Starts each tool process under bwrap at the unprivileged tool uid, with its seccomp filters."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from app.core.repo import POLICIES_DIR
from app.core.results import Errno, ToolResult, ToolRunError, ToolStartFailed
from app.core.roles import ROLES, Layer, Role
from app.core.run import Run
from app.tools.bubblewrap.accounting import CODE_PLACEHOLDER, RUN_PLACEHOLDER
from app.tools.bubblewrap.checks import BubblewrapChecks
from app.tools.bubblewrap.orphan import Orphan, observe_orphan
from app.tools.bubblewrap.policy import (
    INPUT_MOUNT,
    OUTPUT_MOUNT,
    BubblewrapPolicy,
    bwrap_argv,
    mounts,
    per_call_args,
    shipped_elements,
)
from app.tools.bubblewrap.preflight import (
    BWRAP_ENVIRONMENT,
    BwrapPrerequisites,
    BwrapReadings,
    start_failure,
)
from app.tools.execution import exec_as_tool, make_release_fifo, spawn_as_tool
from app.tools.layer import ConfinementLayer, Direction, Grant, GrantMode, Refusals, grants_json
from app.tools.seccomp import SeccompFilter, baseline_filter, program_fd

REFUSALS = Refusals(
    hidden_file=Errno.ENOENT,
    hidden_file_reason="it is not in that role's filesystem at all, not merely unreadable",
    input_write=Errno.EROFS,
    input_write_reason="what refuses is the read-only mount, not the file's mode",
    output_create=Errno.EROFS,
    output_create_reason="the directory is mounted read-only; only its files are bound writable",
)


# How each mount of a vector shows a place to the role, for the boundary picture.
MOUNT_MODES: dict[str, GrantMode] = {
    "--ro-bind": "read-only",
    "--bind": "read-write",
    "--tmpfs": "own tmpfs",
    "--proc": "own /proc",
}


@dataclass(frozen=True)
class ControlCall:
    """One bwrap call that differs from the role's policy vector (a control), for evidence."""

    role: Role
    purpose: str
    argv: list[str]


class BubblewrapLayer(ConfinementLayer):
    """The roles run under bwrap: one argument vector per role from one BubblewrapPolicy."""

    name = Layer.BUBBLEWRAP
    refusals = REFUSALS

    def __init__(self, run: Run, policy: BubblewrapPolicy | None = None) -> None:
        super().__init__(run)
        self.policy = policy or BubblewrapPolicy()
        self._readings: BwrapReadings | None = None
        self._argument_lists: dict[Role, list[str]] = {}
        self._controls: list[ControlCall] = []
        self._holds = 0

    # --- policy -------------------------------------------------------------------------------

    def role_argv(self, role: Role, policy: BubblewrapPolicy | None = None) -> list[str]:
        """The role's vector under `policy` (default: this layer's), with this run's paths."""
        workspace = self.run.paths.workspace(role)
        return bwrap_argv(
            policy or self.policy,
            role=role,
            input_dir=PurePosixPath(workspace.input),
            output_dir=PurePosixPath(workspace.output),
            code_dir=PurePosixPath(self.run.paths.code),
        )

    def roles_reaching_output(self, role: Role) -> tuple[Role, ...]:
        # No other role's output is in its mount list.
        return (role,)

    def role_dir(self, role: Role, direction: Direction) -> str:
        # Every role sees its own workspace at the same two paths.
        return INPUT_MOUNT if direction == "in" else OUTPUT_MOUNT

    @property
    def readings(self) -> BwrapReadings:
        if self._readings is None:
            raise RuntimeError("BubblewrapLayer.preflight() has not run")
        return self._readings

    # --- preflight ----------------------------------------------------------------------------

    def prerequisites(self) -> BwrapPrerequisites:
        """What this machine must offer: the same list `doctor` shows."""
        secure = self.role_argv("reader", BubblewrapPolicy())
        return BwrapPrerequisites(secure, self.run.tool, self.run.paths.code)

    def preflight(self) -> None:
        self._readings = self.prerequisites().require()
        try:
            # The machine's part only: one tool process started under the shipped vector. What
            # this run's own vector does is for the checks to show, each on its own line.
            self.run_confined("reader", "proc-status", [], shipped=True, purpose="preflight")
        except ToolStartFailed as error:
            # The controller could not exec bwrap: a piece of the machine (exit 3).
            self._readings = None
            raise start_failure(error) from error
        except ToolRunError:
            # bwrap started, and the prerequisites' own probes showed it makes the tool's
            # namespaces and procfs here: how the process then ended (killed, flooding, no
            # result, an exit of its own) is the tool's, untrusted: the run stops (exit 1).
            self._readings = None
            raise

    # --- running ------------------------------------------------------------------------------

    def run_tool(self, role: Role, action: str, *args: str) -> ToolResult:
        return self.run_confined(role, action, args)

    def _variant(self, omit: Iterable[str], shipped: bool) -> BubblewrapPolicy:
        base = BubblewrapPolicy() if shipped else self.policy
        dropped = frozenset(omit)
        return replace(base, omit=base.omit | dropped) if dropped else base

    @contextmanager
    def _command(
        self,
        role: Role,
        action: str,
        args: Sequence[str],
        policy: BubblewrapPolicy,
        extra_filters: Sequence[SeccompFilter],
        purpose: str,
    ) -> Iterator[tuple[list[str], list[int]]]:
        """The whole command line of one call and the filter fds it passes; the fds are closed
        when the call is done with them."""
        base = self.role_argv(role, policy)
        filters = (
            [baseline_filter(policy.filter_groups_left_out(role))]
            if policy.passes_seccomp(role)
            else []
        )
        filters += extra_filters
        fds = [program_fd(f) for f in filters]
        try:
            argv = base + per_call_args(fds, action, args, policy.limits(role))
            if policy == self.policy and not extra_filters:
                self._argument_lists.setdefault(role, base)
            else:
                self._controls.append(ControlCall(role, purpose or action, argv))
            yield argv, fds
        finally:
            for fd in fds:
                os.close(fd)

    def run_confined(
        self,
        role: Role,
        action: str,
        args: Sequence[str],
        *,
        omit: Iterable[str] = (),
        shipped: bool = False,
        extra_filters: Sequence[SeccompFilter] = (),
        bwrap_env: Mapping[str, str] | None = None,
        purpose: str = "",
    ) -> ToolResult:
        """Runs one action for one role; the keyword arguments make a control call.

        ``omit`` leaves elements of the vector out for this call only (by key), ``shipped``
        starts from the shipped policy instead of this layer's, ``extra_filters`` are stacked
        after the baseline, and ``bwrap_env`` is bwrap's own environment (default: the minimal
        BWRAP_ENVIRONMENT). Such a call is recorded, with ``purpose``, apart from the role's
        vector.
        """
        policy = self._variant(omit, shipped)
        with self._command(role, action, args, policy, extra_filters, purpose) as (argv, fds):
            result = exec_as_tool(
                argv,
                tool=self.run.tool,
                counts=self.run.tool_counts,
                env=BWRAP_ENVIRONMENT if bwrap_env is None else bwrap_env,
                who=f"the {role}'s tool process",
                action=action,
                args=args,
                pass_fds=fds,
                executable=self.readings.path,
            )
        return self._seen(result)

    def kill_while_held(
        self, role: Role, *, wait_for_death: bool, omit: Iterable[str] = (), purpose: str = ""
    ) -> Orphan:
        """Starts the role holding a FIFO, kills its bwrap with SIGKILL (as a timeout does),
        and reports what became of the tool process (see orphan.observe_orphan)."""
        policy = self._variant(omit, shipped=False)
        inputs = self.run.paths.workspace(role).input
        self._holds += 1
        fifo = make_release_fifo(inputs, f"release-{self._holds}.fifo")
        inside = f"{INPUT_MOUNT}/{fifo.name}"
        try:
            with self._command(role, "hold", [inside], policy, (), purpose) as (argv, fds):
                process = spawn_as_tool(
                    argv,
                    tool=self.run.tool,
                    counts=self.run.tool_counts,
                    who=f"the {role}'s tool process",
                    env=BWRAP_ENVIRONMENT,
                    pass_fds=fds,
                    executable=self.readings.path,
                )
            return observe_orphan(
                process, fifo, who=f"the {role}'s tool process", wait_for_death=wait_for_death
            )
        finally:
            fifo.unlink()

    # --- reporting ----------------------------------------------------------------------------

    def argument_lists(self) -> dict[Role, list[str]]:
        """Each role's vector as actually passed (per-call fds and command excluded)."""
        return {
            role: list(self._argument_lists[role]) for role in ROLES if role in self._argument_lists
        }

    def grants(self) -> dict[Role, tuple[Grant, ...]]:
        return {
            role: tuple(Grant(m.destination, MOUNT_MODES[m.option], m.source) for m in mounts(argv))
            for role, argv in self.argument_lists().items()
        }

    def evidence(self) -> dict[str, Any]:
        baseline = baseline_filter()
        readings = self._readings
        return {
            "bwrap": None
            if readings is None
            else {"path": readings.path, "version": readings.version},
            "policy": {
                # Read from the reader's vector as applied, for the boundary picture.
                "unshare_net": "--unshare-net" in self.argument_lists().get("reader", []),
                "shipped_elements": self.policy.elements_for is shipped_elements,
                "omit": sorted(self.policy.omit),
                "omit_for": sorted(f"{role}: {key}" for role, key in self.policy.omit_for),
            },
            "bwrap_argument_lists": self.argument_lists(),
            "grants": grants_json(self.grants()),
            "largest_tool_peak_kib": self.tool_peak_kib,
            "bwrap_control_calls": [
                {"role": c.role, "purpose": c.purpose, "argv": c.argv}
                # Made at once with other checks' calls: in an order of their own, not the run's.
                for c in sorted(self._controls, key=lambda c: (c.role, c.purpose))
            ],
            "seccomp_baseline": {
                "rules": [rule.as_json() for rule in baseline.rules],
                "bpf_bytes": len(baseline.program),
            },
        }

    def policy_in_force(self) -> dict[Role, Any]:
        return dict(self.argument_lists())

    def committed_policy(self) -> dict[Role, Any]:
        run_dir, code_dir = str(self.run.paths.run), str(self.run.paths.code)
        committed: dict[Role, Any] = {}
        for role in ROLES:
            path = POLICIES_DIR / "bubblewrap" / f"{role}.argv.json"
            argv = json.loads(path.read_text(encoding="utf-8"))["argv"]
            committed[role] = [
                token.replace(str(RUN_PLACEHOLDER), run_dir).replace(
                    str(CODE_PLACEHOLDER), code_dir
                )
                for token in argv
            ]
        return committed

    def checks(self) -> BubblewrapChecks:
        return BubblewrapChecks(self.run, self)
