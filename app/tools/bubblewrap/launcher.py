"""Starts each tool process under bwrap at the unprivileged tool uid, with its seccomp filters."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Literal

from app.controller.bubblewrap_checks import BubblewrapChecks
from app.controller.context import LayerSetup, RunContext
from app.core.run_tree import ROLES, Role
from app.tools.bubblewrap.argv import (
    INPUT_MOUNT,
    INTERPRETER,
    OUTPUT_MOUNT,
    WORKER_MODULE,
    BubblewrapPolicy,
    bwrap_argv,
    per_call_args,
)
from app.tools.bubblewrap.seccomp import (
    LibseccompError,
    SeccompFilter,
    baseline_filter,
    check_available,
    program_fd,
)
from app.tools.layer import (
    TOOL_TIMEOUT_SECONDS,
    ConfinementLayer,
    LayerUnavailable,
    ToolOutcome,
    ToolRunError,
    parse_result,
)

# --disable-userns and --assert-userns-disabled first appear in 0.8.0.
MIN_BWRAP_VERSION = (0, 8, 0)
MAX_USER_NAMESPACES = Path("/proc/sys/user/max_user_namespaces")
# Distribution switches that refuse unprivileged user namespaces even when the limit allows
# them (Debian's older kernels; Ubuntu's AppArmor): (file, value that refuses, the fix).
_USERNS_SWITCHES = (
    (
        Path("/proc/sys/kernel/unprivileged_userns_clone"),
        "0",
        "sysctl -w kernel.unprivileged_userns_clone=1",
    ),
    (
        Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        "1",
        "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile "
        "for bwrap",
    ),
)
# What bwrap itself needs in its environment; the controller's own (AWS, keys) never
# reaches even bwrap, quite apart from --clearenv.
_BWRAP_ENVIRONMENT = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


@dataclass(frozen=True)
class BwrapReadings:
    """What preflight found: the program, its version and which options it offers."""

    path: str
    version: str
    version_tuple: tuple[int, ...]
    minimum_version: tuple[int, ...]
    required_options: tuple[str, ...]
    offered_options: frozenset[str]
    max_user_namespaces: int


@dataclass(frozen=True)
class ControlCall:
    """One bwrap call that differs from the role's policy vector (a control), for evidence."""

    role: Role
    purpose: str
    argv: list[str]


class BubblewrapLayer(ConfinementLayer):
    """The roles run under bwrap: one argument vector per role from one BubblewrapPolicy."""

    name: ClassVar[str] = "bubblewrap"

    def __init__(self, setup: LayerSetup, policy: BubblewrapPolicy | None = None) -> None:
        self.setup = setup
        self.policy = policy or BubblewrapPolicy()
        self._readings: BwrapReadings | None = None
        self._argument_lists: dict[Role, list[str]] = {}
        self._controls: list[ControlCall] = []

    # --- policy -------------------------------------------------------------------------------

    def role_argv(self, role: Role, policy: BubblewrapPolicy | None = None) -> list[str]:
        """The role's vector under `policy` (default: this layer's), with this run's paths."""
        workspace = self.setup.paths.workspace(role)
        return bwrap_argv(
            policy or self.policy,
            role=role,
            input_dir=PurePosixPath(workspace.input),
            output_dir=PurePosixPath(workspace.output),
            code_dir=PurePosixPath(self.setup.paths.code),
        )

    def role_dir(self, role: Role, direction: Literal["in", "out"]) -> str:
        # Every role sees its own workspace at the same two paths.
        return INPUT_MOUNT if direction == "in" else OUTPUT_MOUNT

    @property
    def readings(self) -> BwrapReadings:
        if self._readings is None:
            raise RuntimeError("BubblewrapLayer.preflight() has not run")
        return self._readings

    # --- preflight ----------------------------------------------------------------------------

    def preflight(self) -> None:
        path = shutil.which("bwrap")
        if path is None:
            raise LayerUnavailable("bwrap not found on PATH: apt-get install bubblewrap")
        version_text, version = _bwrap_version(path)
        if version < MIN_BWRAP_VERSION:
            raise LayerUnavailable(
                f"{version_text} is older than {_dotted(MIN_BWRAP_VERSION)}, the first with "
                "--disable-userns: install a newer bubblewrap (Debian 12: apt-get install "
                "bubblewrap)"
            )
        required = _required_options(self.role_argv("reader", BubblewrapPolicy()))
        help_text = _run_text([path, "--help"])
        offered = set(re.findall(r"^\s+(--[a-z0-9-]+)", help_text, re.MULTILINE))
        missing = tuple(option for option in required if option not in offered)
        if missing:
            raise LayerUnavailable(
                f"{version_text} lacks {', '.join(missing)}: install bubblewrap >= "
                f"{_dotted(MIN_BWRAP_VERSION)}"
            )
        max_userns = int(MAX_USER_NAMESPACES.read_text().strip())
        if max_userns == 0:
            raise LayerUnavailable(
                f"user namespaces are disabled ({MAX_USER_NAMESPACES} is 0): "
                "sysctl -w user.max_user_namespaces=128 (in the cluster, the pod's init container)"
            )
        for switch, refusing, fix in _USERNS_SWITCHES:
            if switch.exists() and switch.read_text().strip() == refusing:
                raise LayerUnavailable(
                    f"unprivileged user namespaces are refused ({switch} is {refusing}): {fix}"
                )
        if not os.access(INTERPRETER, os.X_OK):
            raise LayerUnavailable(f"{INTERPRETER} not found: apt-get install python3")
        try:
            check_available()
        except LibseccompError as error:
            raise LayerUnavailable(f"{error}: apt-get install libseccomp2") from error
        blocked = _blocking_directory(
            self.setup.paths.code, self.setup.tool.uid, self.setup.tool.gid
        )
        if blocked is not None:
            raise LayerUnavailable(
                f"{blocked} ({stat.filemode(blocked.stat().st_mode)}) is closed to the tool uid "
                f"{self.setup.tool.uid}, so bwrap cannot mount the run's files: use a work "
                "directory every user can traverse (the default, /var/tmp/analyst)"
            )
        self._readings = BwrapReadings(
            path=path,
            version=version_text,
            version_tuple=version,
            minimum_version=MIN_BWRAP_VERSION,
            required_options=required,
            offered_options=frozenset(offered),
            max_user_namespaces=max_userns,
        )
        try:
            self.run("reader", "proc-status", [])
        except ToolRunError as error:
            self._readings = None
            raise LayerUnavailable(_start_failure_message(error)) from error

    # --- running ------------------------------------------------------------------------------

    def run(self, role: Role, action: str, args: list[str]) -> ToolOutcome:
        return self.run_confined(role, action, args)

    def run_confined(
        self,
        role: Role,
        action: str,
        args: Sequence[str],
        *,
        disable_userns: bool | None = None,
        baseline: bool | None = None,
        extra_filters: Sequence[SeccompFilter] = (),
        purpose: str = "",
    ) -> ToolOutcome:
        """Runs one action for one role; the keyword arguments make a control call.

        ``disable_userns`` and ``baseline`` override the policy's switch (--disable-userns,
        the baseline seccomp filter) for this call only; ``extra_filters`` are stacked after
        the baseline. Such a call is recorded, with ``purpose``, apart from the role's vector.
        """
        policy = self.policy
        if disable_userns is not None:
            policy = replace(policy, disable_userns=disable_userns)
        if baseline is not None:
            policy = replace(policy, seccomp=baseline)
        base = self.role_argv(role, policy)
        filters = [baseline_filter()] if policy.seccomp else []
        filters += extra_filters
        fds = [program_fd(f) for f in filters]
        try:
            argv = base + per_call_args(fds, action, args)
            if policy == self.policy and not extra_filters:
                self._argument_lists.setdefault(role, base)
            else:
                self._controls.append(ControlCall(role, purpose or action, argv))
            return self._execute(argv, pass_fds=fds, env=_BWRAP_ENVIRONMENT)
        finally:
            for fd in fds:
                os.close(fd)

    def run_unconfined(self, action: str, args: Sequence[str]) -> ToolOutcome:
        """The same worker at the same tool uid with no bwrap at all: the control process."""
        command = [INTERPRETER, "-m", WORKER_MODULE, action, *args]
        env = {
            **_BWRAP_ENVIRONMENT,
            "PYTHONPATH": str(self.setup.paths.code),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        return self._execute(command, pass_fds=[], env=env)

    def _execute(
        self, argv: list[str], *, pass_fds: Sequence[int], env: dict[str, str]
    ) -> ToolOutcome:
        identity: dict[str, Any] = {}
        if os.geteuid() == 0:
            # Drop to the tool's uid/gid (and no supplementary groups) before exec: bwrap then
            # runs unprivileged and builds its own user namespace, so the child is never host
            # root, whatever the id map says inside.
            identity = {
                "user": self.setup.tool.uid,
                "group": self.setup.tool.gid,
                "extra_groups": [],
            }
        executable = self.readings.path if argv[0] == "bwrap" else argv[0]
        try:
            completed = subprocess.run(
                argv,
                executable=executable,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=TOOL_TIMEOUT_SECONDS,
                pass_fds=tuple(pass_fds),
                env=env,
                # The controller's own cwd may be a directory the tool's uid cannot enter.
                cwd="/",
                **identity,
            )
        except subprocess.TimeoutExpired as error:
            raise ToolRunError(f"tool process timed out after {TOOL_TIMEOUT_SECONDS}s") from error
        except OSError as error:
            raise ToolRunError(f"tool process could not start: {error}") from error
        return parse_result(completed.stdout, completed.stderr, completed.returncode, argv)

    # --- reporting ----------------------------------------------------------------------------

    def argument_lists(self) -> dict[Role, list[str]]:
        """Each role's vector as actually passed (per-call fds and command excluded)."""
        return {
            role: list(self._argument_lists[role]) for role in ROLES if role in self._argument_lists
        }

    def evidence(self) -> dict[str, Any]:
        baseline = baseline_filter()
        readings = self._readings
        return {
            "bwrap": None
            if readings is None
            else {"path": readings.path, "version": readings.version},
            "policy": {
                "unshare_net": self.policy.unshare_net,
                "disable_userns": self.policy.disable_userns,
                "input_writable": self.policy.input_writable,
                "extra_ro_binds": [list(pair) for pair in self.policy.extra_ro_binds],
                "extra_env_names": [name for name, _ in self.policy.extra_env],
                "seccomp": self.policy.seccomp,
            },
            "bwrap_argument_lists": self.argument_lists(),
            "bwrap_control_calls": [
                {"role": c.role, "purpose": c.purpose, "argv": c.argv} for c in self._controls
            ],
            "seccomp_baseline": {
                "syscalls": list(baseline.syscalls),
                "errno": baseline.errno_name,
                "bpf_bytes": len(baseline.program),
            },
        }

    def check_suite(self, ctx: RunContext) -> BubblewrapChecks:
        return BubblewrapChecks(ctx, self)


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def _run_text(argv: list[str]) -> str:
    try:
        completed = subprocess.run(
            argv, capture_output=True, timeout=10, env=_BWRAP_ENVIRONMENT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise LayerUnavailable(
            f"{' '.join(argv)} did not run ({error}): reinstall bubblewrap"
        ) from error
    return (completed.stdout + completed.stderr).decode("utf-8", "replace")


def _bwrap_version(path: str) -> tuple[str, tuple[int, ...]]:
    text = _run_text([path, "--version"]).strip()
    match = re.fullmatch(r"bubblewrap (\d+)\.(\d+)\.(\d+)", text)
    if match is None:
        raise LayerUnavailable(f"{path} --version printed {text!r}: reinstall bubblewrap")
    return text, tuple(int(part) for part in match.groups())


def _required_options(argv: Sequence[str]) -> tuple[str, ...]:
    """Every option the policy vector uses, plus the per-call seccomp option."""
    used = {token for token in argv[1:] if token.startswith("--")}
    return tuple(sorted(used | {"--add-seccomp-fd"}))


def _blocking_directory(path: Path, uid: int, gid: int) -> Path | None:
    """The first directory on the way to path that uid/gid may not enter, if any."""
    for directory in [*reversed(path.parents), path]:
        st = directory.stat()
        if st.st_uid == uid:
            search = stat.S_IXUSR
        elif st.st_gid == gid:
            search = stat.S_IXGRP
        else:
            search = stat.S_IXOTH
        if not st.st_mode & search:
            return directory
    return None


def _start_failure_message(error: ToolRunError) -> str:
    text = str(error)
    if "proc" in text and "Operation not permitted" in text:
        return (
            f"bwrap cannot mount a procfs for the tool's pid namespace ({text}): "
            "run the container privileged, or where /proc is not masked"
        )
    if "No space left on device" in text or "Creating new namespace failed" in text:
        return (
            f"bwrap cannot create the tool's namespaces ({text}): "
            "raise user.max_user_namespaces (sysctl -w user.max_user_namespaces=128)"
        )
    return f"bwrap could not start a tool process; bwrap's own words: {text}"
