"""Starts each tool role under its nono profile: Landlock file rules, seccomp socket rules, and
for an online role its own credential-holding proxy, all through nono-py.

The launcher applies the profile file it wrote into the run's profiles directory, read back
from disk, so the profile the checks compare is the one the role actually ran under.

How a role reaches the supplier: nono's proxy serves a reverse-proxy route per credential,
``SUPPLIER_BASE_URL=http://127.0.0.1:<port>/supplier``, and hands the role a placeholder in
``SUPPLIER_API_KEY``. The role sends ``X-Api-Key: $SUPPLIER_API_KEY`` to that base URL like
any API client; the proxy checks the placeholder, applies the endpoint policy and, only for an
allowed request, swaps in the real key and forwards over TLS it verifies against the run's CA.
A CONNECT tunnel to the supplier (``HTTPS_PROXY``) is refused by nono for a host that has a
credential route, because a tunnel would bypass the method/path policy.
"""

from __future__ import annotations

import hashlib
import http.client
import itertools
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from app.controller.context import LayerSetup, RunContext
from app.core.run_tree import ROLES, WORKER_PACKAGE, Role
from app.tools.layer import (
    TOOL_TIMEOUT_SECONDS,
    ConfinementLayer,
    LayerUnavailable,
    ToolOutcome,
    ToolRunError,
    parse_result,
)
from app.tools.nono.profiles import (
    COMMITTED_DIR,
    CREDENTIAL_ENV_VAR,
    DIGEST_KEY_VARIABLE,
    NO_WIDENING,
    ProfileValues,
    Widening,
    generate_profile,
    to_json,
)
from app.tools.worker.proxy import DIGEST_ITERATIONS

if TYPE_CHECKING:
    import nono_py

    from app.controller.nono_checks import NonoChecks

PYTHON = "/usr/bin/python3"
# "seccomp" adds a static filter under Landlock: with network blocked, socket(AF_INET) itself
# fails (EPERM), not only connect; with proxy-only network, UDP and raw sockets fail too.
ENFORCEMENT_MODE = "seccomp"
# An allowed request's audit record gets its upstream status after the reply reaches the role.
AUDIT_SETTLE_SECONDS = 3.0

AuditEvent = dict[str, Any]


def _nono() -> Any:
    try:
        import nono_py
    except ImportError as error:
        raise LayerUnavailable(
            f"nono-py is not importable from {sys.executable} ({error}); install it there: "
            f"{sys.executable} -m pip install nono-py==0.16.0"
        ) from error
    return nono_py


def _settled(events: Sequence[AuditEvent]) -> bool:
    """A request is decided once it was denied, or allowed and answered by the supplier."""
    return any(
        e["decision"] == "deny" or (e["decision"] == "allow" and e["status"] is not None)
        for e in events
    )


class NonoLayer(ConfinementLayer):
    """The three roles under nono: one generated profile each, applied by nono-py."""

    name = "nono"

    def __init__(
        self,
        setup: LayerSetup,
        widening: Widening = NO_WIDENING,
        *,
        committed_dir: Path = COMMITTED_DIR,
    ) -> None:
        self.setup = setup
        self.widening = widening
        self.committed_dir = committed_dir
        self.values = ProfileValues(
            run_dir=str(setup.paths.run),
            code_dir=str(setup.paths.code),
            key_file=str(setup.supplier.key_file),
            ca_file=str(setup.supplier.ca_file),
            supplier_host=urlsplit(setup.supplier.url).netloc,
            case_id=setup.case_id,
        )
        # Per run, held only here and in the online roles' environments: the salt of the
        # credential comparison, so a digest from one run says nothing about another.
        self._digest_key = secrets.token_hex(32)
        self._proxies: dict[Role, nono_py.ProxyHandle] = {}
        self._audit: dict[Role, list[AuditEvent]] = {role: [] for role in ROLES}
        self._request_ids = itertools.count(1)
        self._written = False

    # profiles ----------------------------------------------------------------------------
    def profile_path(self, role: Role) -> Path:
        return self.setup.paths.profiles / f"{role}.json"

    def write_profiles(self) -> None:
        """Writes each role's live profile where no role can write (see runtime.py's layout)."""
        if self._written:
            return
        for role in ROLES:
            profile = generate_profile(role, self.values, self.widening)
            path = self.profile_path(role)
            path.write_text(to_json(profile), encoding="utf-8")
            os.chmod(path, 0o644)
        self._written = True

    def live_profile(self, role: Role) -> dict[str, Any]:
        self.write_profiles()
        profile: dict[str, Any] = json.loads(self.profile_path(role).read_text(encoding="utf-8"))
        return profile

    def role_dir(self, role: Role, direction: Literal["in", "out"]) -> str:
        """nono does not remap paths: a role names its directories as the host does."""
        workspace = self.setup.paths.workspace(role)
        return str(workspace.input if direction == "in" else workspace.output)

    # the role's capabilities, proxy and environment -----------------------------------------
    def _capabilities(self, role: Role, profile: dict[str, Any]) -> Any:
        nono = _nono()
        caps = nono.CapabilitySet()
        for mode, paths in (
            (nono.AccessMode.READ, profile["filesystem"]["read"]),
            (nono.AccessMode.READ_WRITE, profile["filesystem"]["allow"]),
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
            caps.proxy_only(self._proxy(role, network))
        elif network:
            raise ToolRunError(f"the {role} profile's network section is not understood: {network}")
        return caps

    def _proxy(self, role: Role, network: dict[str, Any]) -> Any:
        """The role's own proxy, started once: its own placeholder, its own endpoint rules."""
        if role in self._proxies:
            return self._proxies[role]
        nono = _nono()
        ((prefix, credential),) = network["custom_credentials"].items()
        policy = credential["endpoint_policy"]
        rules = [(rule["method"], rule["path"]) for rule in policy["allow"]]
        # nono's endpoint rules are an allow list with an implicit deny; a profile asking for
        # anything else, or for an empty list, cannot be expressed and is refused here.
        if policy["default"] != {"decision": "deny"} or not rules:
            raise ToolRunError(f"the {role} profile's endpoint policy must default to deny")
        route = nono.RouteConfig(
            prefix,
            credential["upstream"],
            credential_key=credential["credential_key"],
            env_var=credential["env_var"],
            inject_header=credential["inject_header"],
            credential_format=credential["credential_format"],
            endpoint_rules=rules,
            tls_ca=credential["tls_ca"],
        )
        handle = nono.start_proxy(
            nono.ProxyConfig(allowed_hosts=list(network["allow_domain"]), routes=[route])
        )
        problems = handle.diagnostics()
        if problems:
            handle.shutdown()
            codes = ", ".join(sorted({p["code"] for p in problems}))
            raise ToolRunError(
                f"the {role} proxy did not load its credential ({codes}); check that the "
                f"supplier key file {self.values.key_file} exists and the controller can read it"
            )
        self._proxies[role] = handle
        return handle

    def _controller_values(self) -> dict[str, str]:
        """The only values a role's kept variables can have: set here, never inherited."""
        return {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(self.setup.paths.code),
            "PYTHONDONTWRITEBYTECODE": "1",
            DIGEST_KEY_VARIABLE: self._digest_key,
        }

    def _environment(self, role: Role, profile: dict[str, Any]) -> list[tuple[str, str]]:
        values = self._controller_values()
        env = [(name, values[name]) for name in profile["environment"]["allow_vars"]]
        if role in self._proxies:
            env = self._proxies[role].sandbox_env(env)
        return env

    def proxy_variable_names(self, role: Role) -> list[str]:
        """The variable names the role's proxy adds (empty for an offline role)."""
        if role not in self._proxies:
            return []
        return sorted(name for name, _ in self._proxies[role].sandbox_env([]))

    # running ------------------------------------------------------------------------------
    def _command(self, action: str, args: Sequence[str]) -> list[str]:
        return [PYTHON, "-m", WORKER_PACKAGE, action, *args]

    def run(self, role: Role, action: str, args: list[str]) -> ToolOutcome:
        nono = _nono()
        profile = self.live_profile(role)
        caps = self._capabilities(role, profile)
        command = self._command(action, args)
        tool = self.setup.tool
        drop = {"uid": tool.uid, "gid": tool.gid} if os.geteuid() == 0 else {}
        try:
            result = nono.sandboxed_exec(
                caps,
                command,
                # The code directory is read-only for every role; `-m` puts the working
                # directory first on sys.path, so a writable one would let a role plant a
                # module for its next start.
                cwd=str(self.setup.paths.code),
                timeout_secs=TOOL_TIMEOUT_SECONDS,
                env=self._environment(role, profile),
                inherit_env=bool(profile["environment"].get("inherit", False)),
                enforcement_mode=ENFORCEMENT_MODE,
                **drop,
            )
        except (RuntimeError, ValueError, OSError) as error:
            raise ToolRunError(f"nono could not start the {role} ({action}): {error}") from error
        finally:
            self._drain(role)
        return parse_result(result.stdout, result.stderr, result.exit_code, command)

    def run_unconfined(self, action: str, args: Sequence[str]) -> ToolOutcome:
        """The control: the same worker at the tool's uid and gid with no nono at all."""
        command = self._command(action, args)
        tool = self.setup.tool
        drop: dict[str, Any] = {}
        if os.geteuid() == 0:
            drop = {"user": tool.uid, "group": tool.gid, "extra_groups": []}
        env = {k: v for k, v in self._controller_values().items() if k != DIGEST_KEY_VARIABLE}
        try:
            done = subprocess.run(
                command,
                cwd=self.setup.paths.code,
                env=env,
                capture_output=True,
                timeout=TOOL_TIMEOUT_SECONDS,
                check=False,
                **drop,
            )
        except subprocess.TimeoutExpired as error:
            raise ToolRunError(f"the unconfined control {action} timed out") from error
        return parse_result(done.stdout, done.stderr, done.returncode, command)

    def next_request_id(self, role: Role) -> str:
        """Carries the run id, so the supplier's own log can be matched to this run."""
        return f"{self.setup.run_id}-{role}-{next(self._request_ids)}"

    # audit --------------------------------------------------------------------------------
    def _drain(self, role: Role) -> None:
        if role in self._proxies:
            self._audit[role].extend(self._proxies[role].drain_audit_events())

    def audit_mark(self, role: Role) -> int:
        self._drain(role)
        return len(self._audit[role])

    def audit_since(self, role: Role, mark: int) -> list[AuditEvent]:
        """The role's proxy records after ``mark``, once the request they describe is decided."""
        deadline = time.monotonic() + AUDIT_SETTLE_SECONDS
        while True:
            self._drain(role)
            events = self._audit[role][mark:]
            if _settled(events) or time.monotonic() >= deadline:
                return list(events)
            time.sleep(0.02)

    # the credential comparison ------------------------------------------------------------
    def credential_digest(self, secret: bytes) -> str:
        """The same PBKDF2 the role's probe computes, under the same per-run key."""
        return hashlib.pbkdf2_hmac(
            "sha256", secret, self._digest_key.encode("utf-8"), DIGEST_ITERATIONS
        ).hex()

    def issued_placeholder(self, role: Role) -> bytes:
        """The placeholder the role's proxy issued; held by the controller, never recorded."""
        return self._proxies[role].credential_env_vars()[CREDENTIAL_ENV_VAR].encode("utf-8")

    def secrets_to_scan(self, supplier_key: bytes) -> dict[str, bytes]:
        """Each placeholder this run issued, and the digests the credential checks computed."""
        values = {"the real key's digest": self.credential_digest(supplier_key).encode("ascii")}
        for role in self._proxies:
            placeholder = self.issued_placeholder(role)
            values[f"the {role}'s placeholder"] = placeholder
            values[f"the {role}'s placeholder digest"] = self.credential_digest(placeholder).encode(
                "ascii"
            )
        return values

    def proxy_base_url(self, role: Role) -> str:
        """The role's reverse-proxy route, for the controller's cross-role placeholder check."""
        url: str = self._proxies[role].credential_env_vars()["SUPPLIER_BASE_URL"]
        return url

    def send_through_proxy(
        self, role: Role, method: str, path: str, *, key: bytes, request_id: str
    ) -> int:
        """The controller's own request to a role's proxy route with a chosen credential."""
        route = urlsplit(self.proxy_base_url(role))
        connection = http.client.HTTPConnection(
            route.hostname or "", route.port or 80, timeout=TOOL_TIMEOUT_SECONDS
        )
        try:
            connection.request(
                method,
                route.path + path,
                headers={"X-Api-Key": key.decode("latin-1"), "X-Analyst-Request-ID": request_id},
            )
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    # ConfinementLayer ---------------------------------------------------------------------
    def preflight(self) -> None:
        nono = _nono()
        info = nono.support_info()
        if not info.is_supported:
            raise LayerUnavailable(
                f"nono cannot sandbox here: {info.details}; run on a Linux kernel with Landlock "
                "enabled (CONFIG_SECURITY_LANDLOCK=y and 'landlock' in the lsm= boot parameter)"
            )
        abi = nono.detect_abi()
        if not abi.has_network:
            raise LayerUnavailable(
                f"Landlock {abi.version} cannot filter TCP, which proxy-only networking needs; "
                "run on Linux 6.7 or newer (Landlock ABI V4+)"
            )
        if not Path(PYTHON).is_file():
            raise LayerUnavailable(
                f"{PYTHON} is missing: the tool worker runs on the system interpreter; install "
                "the distribution's python3 package"
            )
        try:
            outcome = self.run("evaluator", "env-names", [])
        except ToolRunError as error:
            raise LayerUnavailable(f"nono could not start a tool process here: {error}") from error
        if outcome.result.get("ok") is not True:
            raise LayerUnavailable(f"the first nono tool process failed: {outcome.result}")

    def evidence(self) -> dict[str, Any]:
        return {
            "enforcement_mode": ENFORCEMENT_MODE,
            "interpreter": PYTHON,
            "profiles": {role: self.live_profile(role) for role in ROLES},
            "audit": {role: list(events) for role, events in self._audit.items() if events},
        }

    def check_suite(self, ctx: RunContext) -> NonoChecks:
        from app.controller.nono_checks import NonoChecks

        return NonoChecks(ctx, self)

    def close(self) -> None:
        proxies, self._proxies = self._proxies, {}
        for handle in proxies.values():
            handle.shutdown()
