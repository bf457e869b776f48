"""Each online role's own nono proxy: it holds the real supplier key, hands the role a
placeholder, forwards only the listed method/path pairs, and records every request.

How a role reaches the supplier: the proxy serves a reverse-proxy route per credential,
``SUPPLIER_BASE_URL=http://127.0.0.1:<port>/supplier``, and hands the role a placeholder in
``SUPPLIER_API_KEY``. The role sends ``X-Api-Key: $SUPPLIER_API_KEY`` to that base URL like
any API client; the proxy checks the placeholder, applies the endpoint policy and, only for an
allowed request, swaps in the real key and forwards over TLS it verifies against the run's CA.
A CONNECT tunnel to the supplier (``HTTPS_PROXY``) is refused by nono for a host that has a
credential route, because a tunnel would bypass the method/path policy.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import nono_py

from app.core.results import ToolRunError
from app.core.roles import ROLES, Role
from app.tools.execution import TOOL_TIMEOUT_SECONDS
from app.tools.nono.policy import CREDENTIAL_ENV_VAR

# An allowed request's audit record gets its upstream status after the reply reaches the role.
AUDIT_SETTLE_SECONDS: Final = 3.0


@dataclass(frozen=True)
class AuditEvent:
    """One request as the role's proxy saw and decided it (nono's NetworkAuditEvent)."""

    mode: str  # "reverse" for a credential route, "connect" for a tunnel
    decision: str  # "allow" or "deny"
    target: str
    port: int | None
    method: str | None
    path: str | None
    status: int | None  # the supplier's status, once an allowed request was answered
    denial_category: str | None

    @classmethod
    def from_nono(cls, event: Any) -> AuditEvent:
        return cls(
            mode=str(event["mode"]),
            decision=str(event["decision"]),
            target=str(event["target"]),
            port=event["port"],
            method=event["method"],
            path=event["path"],
            status=event["status"],
            denial_category=event["denial_category"],
        )

    @property
    def forwarded(self) -> bool:
        """nono forwarded the request: allowed, and carrying the supplier's status."""
        return self.decision == "allow" and self.status is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "decision": self.decision,
            "target": self.target,
            "port": self.port,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "denial_category": self.denial_category,
        }


def forwarded(events: Sequence[AuditEvent]) -> bool:
    return any(event.forwarded for event in events)


def _settled(events: Sequence[AuditEvent]) -> bool:
    """A request is decided once it was denied, or allowed and answered by the supplier."""
    return any(e.decision == "deny" or e.forwarded for e in events)


@dataclass(frozen=True)
class ProxyRoute:
    """What a role's profile asks of its proxy, read from the profile's network section."""

    prefix: str
    upstream: str
    credential_key: str
    env_var: str
    inject_header: str
    credential_format: str
    tls_ca: str
    rules: tuple[tuple[str, str], ...]

    @classmethod
    def from_profile(cls, role: Role, network: dict[str, Any]) -> ProxyRoute:
        """The route a profile asks for; a profile that lacks a part of it is refused, since
        nono would fill the gap with a default of its own."""
        try:
            ((prefix, credential),) = network["custom_credentials"].items()
            policy = credential["endpoint_policy"]
            rules = tuple((rule["method"], rule["path"]) for rule in policy["allow"])
            default = policy["default"]["decision"]
            route = cls(
                prefix=prefix,
                upstream=credential["upstream"],
                credential_key=credential["credential_key"],
                env_var=credential["env_var"],
                inject_header=credential["inject_header"],
                credential_format=credential["credential_format"],
                tls_ca=credential["tls_ca"],
                rules=rules,
            )
        except (KeyError, ValueError) as missing:
            raise ToolRunError(
                f"the {role} profile's credential route is incomplete: {missing}"
            ) from None
        # nono's endpoint rules are an allow list with an implicit deny; a profile asking for
        # anything else, or for an empty list, cannot be expressed and is refused here.
        if default != "deny" or not rules:
            raise ToolRunError(f"the {role} profile's endpoint policy must default to deny")
        return route


class RoleProxies:
    """The proxies of one run, one per online role, started on first use, with their audit."""

    def __init__(self, key_file: str) -> None:
        self._key_file = key_file
        self._handles: dict[Role, nono_py.ProxyHandle] = {}
        self._audit: dict[Role, list[AuditEvent]] = {role: [] for role in ROLES}
        # Tool processes may run at once (app/tools/together.py): a role's proxy is started
        # once, and its audit records are taken one drain at a time.
        self._lock = threading.RLock()

    def handle(self, role: Role, route: ProxyRoute) -> nono_py.ProxyHandle:
        """The role's own proxy: its own placeholder, its own endpoint rules."""
        with self._lock:
            handle = self._handles.get(role)
            return handle if handle is not None else self._start(role, route)

    def _start(self, role: Role, route: ProxyRoute) -> nono_py.ProxyHandle:
        """Starts the role's proxy and checks it loaded the real key."""
        config = nono_py.RouteConfig(
            route.prefix,
            route.upstream,
            credential_key=route.credential_key,
            env_var=route.env_var,
            inject_header=route.inject_header,
            credential_format=route.credential_format,
            endpoint_rules=list(route.rules),
            tls_ca=route.tls_ca,
        )
        handle = nono_py.start_proxy(
            # No host for CONNECT tunnels: the role's one way out is the reverse route above.
            nono_py.ProxyConfig(allowed_hosts=[], routes=[config])
        )
        problems = handle.diagnostics()
        if problems:
            handle.shutdown()
            codes = ", ".join(sorted({str(p["code"]) for p in problems}))
            raise ToolRunError(
                f"the {role} proxy did not load its credential ({codes}); check that the "
                f"supplier key file {self._key_file} exists and the controller can read it"
            )
        self._handles[role] = handle
        return handle

    @property
    def roles(self) -> list[Role]:
        return list(self._handles)

    def sandbox_env(self, role: Role, env: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The role's kept variables plus what its proxy adds (none for an offline role)."""
        if role not in self._handles:
            return env
        return self._handles[role].sandbox_env(env)

    def variable_names(self, role: Role) -> list[str]:
        """The variable names the role's proxy adds (empty for an offline role)."""
        return sorted(name for name, _ in self.sandbox_env(role, []))

    def placeholder(self, role: Role) -> bytes:
        """The placeholder the role's proxy issued; held by the controller, never recorded."""
        return self._handles[role].credential_env_vars()[CREDENTIAL_ENV_VAR].encode("utf-8")

    def base_url(self, role: Role) -> str:
        """The role's reverse-proxy route."""
        return self._handles[role].credential_env_vars()["SUPPLIER_BASE_URL"]

    # --- audit --------------------------------------------------------------------------------

    def drain(self, role: Role) -> None:
        with self._lock:
            if role in self._handles:
                events = self._handles[role].drain_audit_events()
                self._audit[role].extend(AuditEvent.from_nono(e) for e in events)

    def mark(self, role: Role) -> int:
        self.drain(role)
        return len(self._audit[role])

    def since(
        self, role: Role, mark: int, names: Callable[[AuditEvent], bool] = lambda event: True
    ) -> list[AuditEvent]:
        """The role's proxy records after ``mark`` that ``names`` picks out, once the request
        they describe is decided. Requests sent through one proxy at once are told apart this
        way, by what each names (mode, method and path, or a tunnel's target)."""
        deadline = time.monotonic() + AUDIT_SETTLE_SECONDS
        while True:
            self.drain(role)
            with self._lock:
                events = [event for event in self._audit[role][mark:] if names(event)]
            if _settled(events) or time.monotonic() >= deadline:
                return events
            time.sleep(0.02)

    def audit_json(self) -> dict[str, list[dict[str, Any]]]:
        return {
            role: [e.as_json() for e in events] for role, events in self._audit.items() if events
        }

    # --- the controller's own request through a role's proxy ----------------------------------

    def send(self, role: Role, method: str, path: str, *, key: bytes, request_id: str) -> int:
        """A request to a role's proxy route with a chosen credential; returns the status."""
        route = urlsplit(self.base_url(role))
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

    def close(self) -> None:
        handles, self._handles = self._handles, {}
        for handle in handles.values():
            handle.shutdown()
