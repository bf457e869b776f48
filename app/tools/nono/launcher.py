"""Starts each tool role under its nono profile: Landlock file rules, seccomp socket rules, and
for an online role its own credential-holding proxy, all through nono-py.

The launcher applies the profile file it wrote into the run's profiles directory, read back
from disk, so the profile the checks compare is the one the role actually ran under.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from app.core.errors import LayerUnavailable
from app.core.results import Errno, ToolResult, ToolRunError, ToolStartFailed
from app.core.roles import ROLES, Layer, Role
from app.core.run import Run
from app.core.run_tree import CHECK_FILE, INTERPRETER
from app.core.tool_environment import tool_environment
from app.tools.at_once import AT_ONCE_WIDTH
from app.tools.execution import TOOL_TIMEOUT_SECONDS, parse_output
from app.tools.layer import ConfinementLayer, Direction, Grant, Refusals, grants_json
from app.tools.nono.checks import NonoChecks
from app.tools.nono.digests import CredentialDigests
from app.tools.nono.head_start import NonoHeadStart
from app.tools.nono.held import HeldReading, read_while_held
from app.tools.nono.launch_pool import (
    LaunchFailed,
    LaunchProcesses,
    LaunchRequest,
    capability_calls,
)
from app.tools.nono.policy import (
    COMMITTED_DIR,
    DIGEST_KEY_VARIABLE,
    NO_OMISSIONS,
    Omissions,
    ProfileSource,
    ProfileValues,
    committed_profile,
    fill,
    generate_profile,
    policy_file,
    to_json,
)
from app.tools.nono.prerequisites import NonoPrerequisites
from app.tools.nono.proxy import RoleProxies
from app.tools.nono.proxy_profile import ProxyFront, ProxyRoute
from app.tools.nono.tool_command import stage_filter, tool_command
from app.tools.nono.translate import Network, grants, pictured_grants
from app.tools.seccomp import LibseccompError, nono_baseline_filter

# nono-py's own default, which a profile without an enforcement mode gets.
DEFAULT_ENFORCEMENT_MODE: Final = "auto"
# nono-py's exit status for a child it killed at its time limit.
NONO_TIMED_OUT: Final = 124
REFUSALS = Refusals(
    hidden_file=Errno.EACCES,
    hidden_file_reason="no Landlock rule of its profile grants it",
    input_write=Errno.EACCES,
    input_write_reason="its profile grants its input for reading only",
    output_create=Errno.EACCES,
    output_create_reason="its profile grants each of its output files, not the directory",
)


class NonoLayer(ConfinementLayer):
    """The three roles under nono: one generated profile each, applied by nono-py."""

    name = Layer.NONO
    refusals = REFUSALS

    def __init__(
        self,
        run: Run,
        profiles: ProfileSource = generate_profile,
        *,
        committed_dir: Path = COMMITTED_DIR,
        omit: Omissions = NO_OMISSIONS,
    ) -> None:
        super().__init__(run)
        self.profiles = profiles
        self.omit = omit
        self.committed_dir = committed_dir
        self.values = ProfileValues(
            run_dir=str(run.paths.run),
            code_dir=str(run.paths.code),
            key_file=str(run.supplier.key_file),
            ca_file=str(run.supplier.ca_file),
            supplier_host=urlsplit(run.supplier.url).netloc,
            case_id=run.case.case_id,
        )
        self.digests = CredentialDigests()
        self.proxies = RoleProxies(self.values.key_file, run.run_id, run.paths.top / "proxies.log")
        # The pool the run started ahead for this layer as soon as its tree was claimed
        # (head_start.py), or a new one; the preflight starts what it has not.
        ahead = run.head_start.take() if isinstance(run.head_start, NonoHeadStart) else None
        self.launchers = (
            LaunchProcesses(AT_ONCE_WIDTH, run.decoy_view, run.tool_counts)
            if ahead is None
            else ahead
        )
        # The view exists now: a head start's processes are sent it, and can serve.
        self.launchers.serve_in(run.decoy_view)
        self._request_ids = itertools.count(1)
        self._written = False
        self._holds = 0
        self._controls: list[dict[str, Any]] = []
        self.time_limit_seconds: float = TOOL_TIMEOUT_SECONDS

    # --- profiles -----------------------------------------------------------------------------

    def profile_path(self, role: Role) -> Path:
        return self.run.paths.profiles / policy_file(role)

    def _write_profiles(self) -> None:
        """Writes each role's live profile where no role can write (see run_tree's layout),
        and the baseline filter the profiles name, where every role may read it."""
        if self._written:
            return
        stage_filter(self.run.paths.code)
        for role in ROLES:
            path = self.profile_path(role)
            path.write_text(to_json(self._profile(role)), "utf-8")
            os.chmod(path, 0o644)
        self._written = True

    def _profile(self, role: Role) -> dict[str, Any]:
        """The committed profile (from this layer's source, less its omissions) and run values."""
        profile: dict[str, Any] = fill(
            committed_profile(role, self.profiles, self.omit), self.values
        )
        return profile

    def shipped_profile(self, role: Role) -> dict[str, Any]:
        return generate_profile(role, self.values)

    def live_profile(self, role: Role) -> dict[str, Any]:
        self._write_profiles()
        profile: dict[str, Any] = json.loads(self.profile_path(role).read_text(encoding="utf-8"))
        return profile

    def roles_reaching_output(self, role: Role) -> tuple[Role, ...]:
        # Landlock has no right for metadata, and every role runs at the same uid, which owns
        # every role's output: each reaches all of them by path.
        return ROLES

    def helper_processes(self) -> dict[str, int]:
        """The key-holding proxy host and each launch process."""
        host = self.proxies.host_pid
        found = {} if host is None else {"the proxy host": host}
        return found | {
            f"launch process {index}": pid for index, pid in enumerate(self.launchers.pids(), 1)
        }

    def role_dir(self, role: Role, direction: Direction) -> str:
        """nono does not remap paths: a role names its directories as the host does."""
        workspace = self.run.paths.workspace(role)
        return str(workspace.input if direction == "in" else workspace.output)

    # --- the role's capabilities and environment ----------------------------------------------

    @staticmethod
    def _proxy_asked(role: Role, network: dict[str, Any]) -> tuple[ProxyRoute, ProxyFront]:
        route = ProxyRoute.from_profile(role, network)
        return route, ProxyFront.from_profile(role, network, route)

    def _start_proxy(self, role: Role, network: dict[str, Any]) -> None:
        self.proxies.start({role: self._proxy_asked(role, network)})

    def _start_proxies(self) -> None:
        """Starts the proxies' process and asks for every online role's proxy now, so that
        they load, together, while the run goes on; a profile whose route is refused is left
        for its role's first start to report."""
        self.proxies.launch()
        asked = {}
        for role in ROLES:
            network = self.live_profile(role).get("network", {})
            if "custom_credentials" in network:
                with suppress(ToolRunError):
                    asked[role] = self._proxy_asked(role, network)
        self.proxies.start(asked)

    def _controller_values(self) -> dict[str, str]:
        """The only values a role's kept variables can have: set here, never inherited."""
        return {
            **tool_environment(str(self.run.paths.code)),
            DIGEST_KEY_VARIABLE: self.digests.key,
        }

    def _environment(self, role: Role, profile: dict[str, Any]) -> list[tuple[str, str]]:
        values = self._controller_values()
        environment = profile.get("environment", {})
        kept = [(name, values[name]) for name in environment.get("allow_vars", [])]
        return self.proxies.sandbox_env(role, kept)

    # --- running ------------------------------------------------------------------------------

    def run_tool(self, role: Role, action: str, *args: str) -> ToolResult:
        return self.run_confined(role, action, args)

    def run_confined(
        self,
        role: Role,
        action: str,
        args: Sequence[str],
        *,
        baseline: bool = True,
        enforcement_mode: str | None = None,
        shipped: bool = False,
        purpose: str = "",
    ) -> ToolResult:
        """Runs one action for one role; the keyword arguments make a control call: without
        the baseline filter, under another enforcement mode, or under the shipped profile
        rather than this run's. A control is recorded, with ``purpose``, for the evidence."""
        profile = self.shipped_profile(role) if shipped else self.live_profile(role)
        if not baseline or enforcement_mode is not None or shipped:
            self._controls.append(
                {
                    "role": role,
                    "purpose": purpose or action,
                    "baseline": baseline,
                    "enforcement_mode": enforcement_mode,
                    "shipped": shipped,
                }
            )
        command = tool_command(self.run.paths.code, profile, action, args, baseline)
        output, code = self._execute(role, profile, command, enforcement_mode)
        who = f"the {role}'s tool process"
        return self._seen(parse_output(output, code, who=who, action=action, args=args))

    def _execute(
        self,
        role: Role,
        profile: dict[str, Any],
        command: list[str],
        enforcement_mode: str | None,
    ) -> tuple[bytes, int]:
        """Runs ``command`` under the role's profile, in a launch process (launch_pool.py); the
        tool's output (stdout and stderr, read on its channel: nono/channel.py) and its exit
        status."""
        process = profile.get("process", {})
        drop = self.run.tool.process_identity()
        limit = self.time_limit_seconds
        who = f"the {role}'s tool process"
        try:
            granted = grants(role, profile)
            front_port = None
            if granted.network is Network.FRONT:
                self._start_proxy(role, profile["network"])
                front_port = self.proxies.port(role)
            request = LaunchRequest(
                capabilities=capability_calls(granted, front_port),
                command=command,
                # The code directory is read-only for every role; the worker's command puts
                # the working directory first on sys.path, so a writable one would let a role
                # plant a module for its next start.
                cwd=str(self.run.paths.code),
                # nono-py holds the time limit: it waits for its child in 10 ms sleeps, which
                # costs every call some 5 ms (docs/notes/nono-py-timeout-polling.md).
                timeout_secs=limit,
                env=self._environment(role, profile),
                inherit_env=bool(profile.get("environment", {}).get("inherit", False)),
                enforcement_mode=enforcement_mode
                or process.get("enforcement_mode", DEFAULT_ENFORCEMENT_MODE),
                max_file_size_bytes=process.get("max_file_bytes"),
                uid=drop.get("user"),
                gid=drop.get("group"),
            )
            output, exit_code = self.launchers.call(
                request, who=who, on_start=self.run.tool_counts.started
            )
        except (LaunchFailed, ValueError, OSError) as error:
            raise ToolStartFailed(
                f"nono could not start the {role} ({command}): {error}"
            ) from error
        finally:
            self.proxies.drain(role)
        # The worker itself never exits 124: that is nono-py's status for its own timeout.
        if exit_code == NONO_TIMED_OUT:
            raise ToolRunError(f"the {role}'s tool process timed out after {limit}s")
        return output.data, exit_code

    def read_while_held(self, role: Role, *, baseline: bool = True) -> HeldReading:
        """The role's process as the host's /proc shows it, while it waits to be released."""
        self._holds += 1
        profile = self.live_profile(role)
        inputs = self.run.paths.workspace(role).input
        if not baseline:
            self._controls.append({"role": role, "purpose": "held, without the baseline"})
        return read_while_held(
            inputs / f"release-{self._holds}.fifo",
            who=f"the {role}'s tool process",
            pid_file=self.role_path(role, "out", CHECK_FILE),
            start=lambda fifo, pid_file: self._execute(
                role,
                profile,
                tool_command(self.run.paths.code, profile, "hold", [str(fifo), pid_file], baseline),
                None,
            ),
        )

    def next_request_id(self, role: Role) -> str:
        """Carries the run id, so the supplier's own log can be matched to this run."""
        # next() on a count is atomic: calls made at once (CheckLog.at_once) never share one.
        return f"{self.run.run_id}-{role}-{next(self._request_ids)}"

    # --- the credential comparison ------------------------------------------------------------

    def prefetch_credential_digests(self) -> None:
        """Starts computing the digests the credential checks will ask for: the real key's and
        each issued placeholder's (digests.py)."""
        secrets = [self.run.supplier.key_file.read_bytes().strip()]
        secrets += [self.proxies.placeholder(role) for role in self.proxies.roles]
        self.digests.start(secrets)
        secrets.clear()

    def secrets_to_scan(self, supplier_key: bytes) -> dict[str, bytes]:
        """Each placeholder this run issued, and the digests the credential checks computed."""
        digest = self.digests.digest
        values = {"the real key's digest": digest(supplier_key).encode("ascii")}
        for role in self.proxies.roles:
            placeholder = self.proxies.placeholder(role)
            values[f"the {role}'s placeholder"] = placeholder
            values[f"the {role}'s placeholder digest"] = digest(placeholder).encode("ascii")
        return values

    # --- ConfinementLayer ---------------------------------------------------------------------

    def prerequisites(self) -> NonoPrerequisites:
        """What this machine must offer: the same list `doctor` shows."""
        return NonoPrerequisites(self.run.tool, self.run.paths.code)

    def preflight(self) -> None:
        self.prerequisites().require()
        try:
            stage_filter(self.run.paths.code)
        except LibseccompError as error:
            raise LayerUnavailable(str(error), "apt-get install libseccomp2") from error
        self.launchers.start()
        self._start_proxies()
        # The machine's part only: one tool process under the shipped evaluator profile.
        # What this run's own profiles do is for the checks to show, each on its own line.
        try:
            self.run_confined("evaluator", "env-names", [], shipped=True, purpose="preflight")
        except ToolStartFailed as error:
            # nono-py itself raised before the tool ran: a piece of the machine (exit 3).
            raise LayerUnavailable(f"nono could not start a tool process here: {error}") from error
        # Any other end (killed, flooding, no result, a result that is not env-names' own, an
        # exit of its own) came after nono started the tool: it is the tool's, untrusted, and
        # the run stops (exit 1).

    def grants(self) -> dict[Role, tuple[Grant, ...]]:
        return {role: pictured_grants(role, self.live_profile(role)) for role in ROLES}

    def evidence(self) -> dict[str, Any]:
        return {
            "interpreter": INTERPRETER,
            "profiles": {role: self.live_profile(role) for role in ROLES},
            "grants": grants_json(self.grants()),
            "omitted": sorted(f"{role}: {element}" for role, element in self.omit),
            # Made at once with other checks' calls: in an order of their own, not the run's.
            "control_calls": sorted(self._controls, key=lambda c: (c["role"], c["purpose"])),
            "seccomp_baseline": {
                "rules": [rule.as_json() for rule in nono_baseline_filter().rules],
                "bpf_bytes": len(nono_baseline_filter().program),
            },
            "audit": self.proxies.audit_json(),
            "proxies": {role: self.proxies.base_url(role) for role in self.proxies.roles},
            "proxy_host": self.proxies.host_json(),
            "largest_tool_peak_kib": self.tool_peak_kib,
            "time_limit": {"seconds": self.time_limit_seconds, "held_by": "nono-py"},
        }

    def policy_in_force(self) -> dict[Role, Any]:
        return {role: self.live_profile(role) for role in ROLES}

    def committed_policy(self) -> dict[Role, Any]:
        return {
            role: fill(
                json.loads((self.committed_dir / policy_file(role)).read_text("utf-8")), self.values
            )
            for role in ROLES
        }

    def checks(self) -> NonoChecks:
        return NonoChecks(self.run, self)

    def close(self) -> None:
        self.launchers.close()
        self.proxies.close()
