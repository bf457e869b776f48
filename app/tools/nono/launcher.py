"""Starts each tool role under its nono profile: Landlock file rules, seccomp socket rules, and
for an online role its own credential-holding proxy, all through nono-py.

The launcher applies the profile file it wrote into the run's profiles directory, read back
from disk, so the profile the checks compare is the one the role actually ran under.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import nono_py

from app.core.errors import LayerUnavailable
from app.core.results import Errno, ToolResult, ToolRunError
from app.core.roles import ROLES, Layer, Role
from app.core.run import Run
from app.core.run_tree import INTERPRETER
from app.tools.execution import SYSTEM_PATH, TOOL_TIMEOUT_SECONDS, parse_output, worker_command
from app.tools.layer import ConfinementLayer, Direction, Refusals
from app.tools.nono.checks import NonoChecks
from app.tools.nono.policy import (
    COMMITTED_DIR,
    DIGEST_KEY_VARIABLE,
    NO_WIDENING,
    ProfileValues,
    Widening,
    generate_profile,
    to_json,
)
from app.tools.nono.proxy import ProxyRoute, RoleProxies
from app.tools.worker.proxy import DIGEST_ITERATIONS

# "seccomp" adds a static filter under Landlock: with network blocked, socket(AF_INET) itself
# fails (EPERM), not only connect; with proxy-only network, UDP and raw sockets fail too.
ENFORCEMENT_MODE: Final = "seccomp"

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
        widening: Widening = NO_WIDENING,
        *,
        committed_dir: Path = COMMITTED_DIR,
    ) -> None:
        super().__init__(run)
        self.widening = widening
        self.committed_dir = committed_dir
        self.values = ProfileValues(
            run_dir=str(run.paths.run),
            code_dir=str(run.paths.code),
            key_file=str(run.supplier.key_file),
            ca_file=str(run.supplier.ca_file),
            supplier_host=urlsplit(run.supplier.url).netloc,
            case_id=run.case.case_id,
        )
        # Per run, held only here and in the online roles' environments: the salt of the
        # credential comparison, so a digest from one run says nothing about another.
        self._digest_key = secrets.token_hex(32)
        self.proxies = RoleProxies(self.values.key_file)
        self._request_ids = 0
        self._written = False

    # --- profiles -----------------------------------------------------------------------------

    def profile_path(self, role: Role) -> Path:
        return self.run.paths.profiles / f"{role}.json"

    def _write_profiles(self) -> None:
        """Writes each role's live profile where no role can write (see run_tree's layout)."""
        if self._written:
            return
        for role in ROLES:
            path = self.profile_path(role)
            path.write_text(to_json(generate_profile(role, self.values, self.widening)), "utf-8")
            os.chmod(path, 0o644)
        self._written = True

    def live_profile(self, role: Role) -> dict[str, Any]:
        self._write_profiles()
        profile: dict[str, Any] = json.loads(self.profile_path(role).read_text(encoding="utf-8"))
        return profile

    def role_dir(self, role: Role, direction: Direction) -> str:
        """nono does not remap paths: a role names its directories as the host does."""
        workspace = self.run.paths.workspace(role)
        return str(workspace.input if direction == "in" else workspace.output)

    # --- the role's capabilities and environment ----------------------------------------------

    def _capabilities(self, role: Role, profile: dict[str, Any]) -> nono_py.CapabilitySet:
        caps = nono_py.CapabilitySet()
        for mode, paths in (
            (nono_py.AccessMode.READ, profile["filesystem"]["read"]),
            (nono_py.AccessMode.READ_WRITE, profile["filesystem"]["allow"]),
        ):
            for path in paths:
                if Path(path).is_dir():
                    caps.allow_path(path, mode)
                else:
                    caps.allow_file(path, mode)
        network = profile["network"]
        if network.get("block") is True:
            caps.block_network()
        elif "custom_credentials" in network:
            caps.proxy_only(self.proxies.handle(role, ProxyRoute.from_profile(role, network)))
        elif network:
            raise ToolRunError(f"the {role} profile's network section is not understood: {network}")
        return caps

    def _controller_values(self) -> dict[str, str]:
        """The only values a role's kept variables can have: set here, never inherited."""
        return {
            "PATH": SYSTEM_PATH,
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(self.run.paths.code),
            "PYTHONDONTWRITEBYTECODE": "1",
            DIGEST_KEY_VARIABLE: self._digest_key,
        }

    def _environment(self, role: Role, profile: dict[str, Any]) -> list[tuple[str, str]]:
        values = self._controller_values()
        kept = [(name, values[name]) for name in profile["environment"]["allow_vars"]]
        return self.proxies.sandbox_env(role, kept)

    # --- running ------------------------------------------------------------------------------

    def run_tool(self, role: Role, action: str, *args: str) -> ToolResult:
        profile = self.live_profile(role)
        caps = self._capabilities(role, profile)
        tool = self.run.tool
        drop = tool.process_identity()
        try:
            result = nono_py.sandboxed_exec(
                caps,
                worker_command(action, args),
                # The code directory is read-only for every role; `-m` puts the working
                # directory first on sys.path, so a writable one would let a role plant a
                # module for its next start.
                cwd=str(self.run.paths.code),
                timeout_secs=TOOL_TIMEOUT_SECONDS,
                env=self._environment(role, profile),
                inherit_env=bool(profile["environment"].get("inherit", False)),
                enforcement_mode=ENFORCEMENT_MODE,
                uid=drop.get("user"),
                gid=drop.get("group"),
            )
        except (RuntimeError, ValueError, OSError) as error:
            raise ToolRunError(f"nono could not start the {role} ({action}): {error}") from error
        finally:
            self.proxies.drain(role)
        return self._seen(parse_output(result.stdout, result.stderr, result.exit_code))

    def next_request_id(self, role: Role) -> str:
        """Carries the run id, so the supplier's own log can be matched to this run."""
        self._request_ids += 1
        return f"{self.run.run_id}-{role}-{self._request_ids}"

    # --- the credential comparison ------------------------------------------------------------

    def credential_digest(self, secret: bytes) -> str:
        """The same PBKDF2 the role's probe computes, under the same per-run key."""
        return hashlib.pbkdf2_hmac(
            "sha256", secret, self._digest_key.encode("utf-8"), DIGEST_ITERATIONS
        ).hex()

    def secrets_to_scan(self, supplier_key: bytes) -> dict[str, bytes]:
        """Each placeholder this run issued, and the digests the credential checks computed."""
        values = {"the real key's digest": self.credential_digest(supplier_key).encode("ascii")}
        for role in self.proxies.roles:
            placeholder = self.proxies.placeholder(role)
            values[f"the {role}'s placeholder"] = placeholder
            values[f"the {role}'s placeholder digest"] = self.credential_digest(placeholder).encode(
                "ascii"
            )
        return values

    # --- ConfinementLayer ---------------------------------------------------------------------

    def preflight(self) -> None:
        info = nono_py.support_info()
        if not info.is_supported:
            raise LayerUnavailable(
                f"nono cannot sandbox here: {info.details}",
                "run on a Linux kernel with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and "
                "'landlock' in the lsm= boot parameter)",
            )
        abi = nono_py.detect_abi()
        if not abi.has_network:
            raise LayerUnavailable(
                f"Landlock {abi.version} cannot filter TCP, which proxy-only networking needs",
                "run on Linux 6.7 or newer (Landlock ABI V4+)",
            )
        if not Path(INTERPRETER).is_file():
            raise LayerUnavailable(
                f"{INTERPRETER} is missing: the tool worker runs on the system interpreter",
                "install the distribution's python3 package",
            )
        try:
            outcome = self.run_tool("evaluator", "env-names")
        except ToolRunError as error:
            raise LayerUnavailable(f"nono could not start a tool process here: {error}") from error
        if not outcome.ok:
            raise LayerUnavailable(f"the first nono tool process failed: {outcome.observed}")

    def evidence(self) -> dict[str, Any]:
        return {
            "enforcement_mode": ENFORCEMENT_MODE,
            "interpreter": INTERPRETER,
            "profiles": {role: self.live_profile(role) for role in ROLES},
            "audit": self.proxies.audit_json(),
            "largest_tool_peak_kib": self.tool_peak_kib,
        }

    def checks(self) -> NonoChecks:
        return NonoChecks(self.run, self)

    def close(self) -> None:
        self.proxies.close()
