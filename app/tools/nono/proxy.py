"""Each online role's own proxy, as the controller drives it: a front the role alone can
reach, and behind it nono's proxy, which holds the real supplier key, hands the role a
placeholder, forwards only the listed method/path pairs and records every request.

How a role reaches the supplier: it sends ``X-Api-Key: $SUPPLIER_API_KEY`` to
``SUPPLIER_BASE_URL=http://127.0.0.1:<front port>/supplier`` like any API client. Its
Landlock rules let it connect to that one port. The front (front.py) accepts an origin-form
request for one of the role's listed pairs and passes it to nono, which checks the
placeholder and the endpoint rules again, swaps in the real key and forwards over TLS it
verifies against the run's CA. A tunnel (CONNECT) or an absolute-URI request, to any host
and port, is answered 403 by the front: nono-py 0.16.0 would let both through to the route's
upstream host on any other port (docs/notes/nono-proxy-upstream-host.md).

Both listeners live in one process apart from the controller's (proxy_host.py), so that no
role can grow the controller's threads, memory or descriptors. The controller sends it one
JSON command a line and reads one reply a line, each write and each read with a bound and a
deadline (proxy_pipe.py): a proxy host that misses one has failed for the rest of the run, so
the run stops at once with one line naming it, and no later call waits for it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from app.core.results import ToolRunError
from app.core.roles import ROLES, Role
from app.tools.nono.audit_events import AuditEvent
from app.tools.nono.front import FrontRecord
from app.tools.nono.policy import CREDENTIAL_ENV_VAR
from app.tools.nono.proxy_pipe import ProxyHostError, ProxyHostPipe
from app.tools.nono.proxy_profile import ProxyFront, ProxyRoute
from app.tools.nono.role_front import REQUEST_SECONDS, UPSTREAM_SECONDS

# The controller's own request to a role's front: the front's deadlines, and a margin.
FRONT_SECONDS: Final = REQUEST_SECONDS + UPSTREAM_SECONDS + 2.0


@dataclass(frozen=True)
class StartedProxy:
    front_port: int
    variables: dict[str, str]


class RoleProxies:
    """The proxies of one run, one per online role, with their records."""

    def __init__(self, key_file: str, run_id: str, log_file: Path) -> None:
        self._key_file = key_file
        self._run_id = run_id
        self._log_file = log_file
        self._host: ProxyHostPipe | None = None
        self._tickets: dict[Role, int] = {}
        self._replies: dict[int, dict[str, Any]] = {}
        self._started: dict[Role, StartedProxy] = {}
        self._records: dict[Role, list[FrontRecord]] = {role: [] for role in ROLES}
        self._dropped: dict[Role, int] = dict.fromkeys(ROLES, 0)
        self._sealed_usage: dict[str, int] | None = None
        # Roles' first starts may be made at once (CheckLog.at_once): one reply serves them.
        self._starting = threading.Lock()
        self._draining = threading.Lock()

    def launch(self) -> None:
        """Starts the proxy host process, which then loads while the run goes on.

        From the controller's main thread (the layer's preflight): the proxy host dies when
        the thread that started it ends (PR_SET_PDEATHSIG), and this one ends with the run."""
        if self._host is None:
            self._host = ProxyHostPipe(self._log_file)

    def _running(self) -> ProxyHostPipe:
        if self._host is None:
            raise ProxyHostError(
                "the roles' proxies were not launched (the layer's preflight does)"
            )
        return self._host

    def start(self, asked: Mapping[Role, tuple[ProxyRoute, ProxyFront]]) -> None:
        """Asks for these roles' proxies, started together, without waiting for them (``port``
        waits); a role whose proxy was asked for already is left out."""
        with self._starting:
            self._start(asked)

    def _start(self, asked: Mapping[Role, tuple[ProxyRoute, ProxyFront]]) -> None:
        proxies: list[dict[str, Any]] = []
        roles: list[Role] = []
        for role, (route, front) in asked.items():
            if role in self._tickets:
                continue
            roles.append(role)
            proxies.append(
                {
                    "role": role,
                    "route": route.as_json(),
                    "front": {
                        "max_connections": front.max_connections,
                        "once": [list(pair) for pair in front.once],
                    },
                }
            )
        if not proxies:
            return
        command = {"op": "start", "run_id": self._run_id, "proxies": proxies}
        ticket = self._running().send(command)
        for role in roles:
            self._tickets[role] = ticket

    def port(self, role: Role) -> int:
        """The port of the role's front: the one its Landlock rules let it connect to."""
        with self._starting:
            return self._port(role)

    def _port(self, role: Role) -> int:
        started = self._started.get(role)
        if started is None:
            ticket = self._tickets[role]
            if ticket not in self._replies:
                self._replies[ticket] = self._running().reply(ticket)["started"]
            reply = self._replies[ticket][role]
            if "error" in reply:
                raise ToolRunError(
                    f"the {role} proxy did not start ({reply['error']}); check that the "
                    f"supplier key file {self._key_file} exists and the controller can read it"
                )
            started = StartedProxy(int(reply["front_port"]), dict(reply["variables"]))
            self._started[role] = started
        return started.front_port

    @property
    def roles(self) -> list[Role]:
        """The roles whose proxies have started, in the roles' order."""
        return [role for role in ROLES if role in self._started]

    def sandbox_env(self, role: Role, env: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The role's kept variables plus what its proxy adds (none for an offline role)."""
        if role not in self._started:
            return env
        return [*env, *sorted(self._started[role].variables.items())]

    def variable_names(self, role: Role) -> list[str]:
        """The variable names the role's proxy adds (empty for an offline role)."""
        return sorted(name for name, _ in self.sandbox_env(role, []))

    def placeholder(self, role: Role) -> bytes:
        """The placeholder the role's proxy issued; held by the controller, never recorded."""
        return self._started[role].variables[CREDENTIAL_ENV_VAR].encode("utf-8")

    def base_url(self, role: Role) -> str:
        """The role's route, at its front."""
        (url,) = (
            v for name, v in self._started[role].variables.items() if name != CREDENTIAL_ENV_VAR
        )
        return url

    # --- records ------------------------------------------------------------------------------

    def drain(self, role: Role) -> None:
        if role not in self._started:
            return
        # Whole: a request's record, once drained by one call, is in the list before another
        # call made at the same time (CheckLog.at_once) looks for it there.
        with self._draining:
            self._drain(role)

    def _drain(self, role: Role) -> None:
        while True:
            reply = self._running().call({"op": "drain", "role": role})
            self._records[role].extend(FrontRecord.from_json(r) for r in reply["records"])
            self._dropped[role] = int(reply["dropped"])
            if not reply["more"]:
                return

    def mark(self, role: Role) -> int:
        self.drain(role)
        return len(self._records[role])

    def records(self, role: Role, mark: int = 0) -> list[FrontRecord]:
        """The role's records after ``mark``, as of the last drain."""
        return list(self._records[role][mark:])

    def of(self, role: Role, request_id: str) -> list[FrontRecord]:
        """The role's records of the request with ``request_id``: its front records a request
        before the role has the answer, so a drain after the tool process ended holds it."""
        self.drain(role)
        return [r for r in self.records(role) if r.request_id == request_id]

    def dropped(self, role: Role) -> int:
        """Records the role's front could not keep (beyond its bound): each one counted."""
        return self._dropped[role]

    def audit_json(self) -> dict[str, Any]:
        return {
            role: {"records": [r.as_json() for r in records], "dropped": self._dropped[role]}
            for role, records in self._records.items()
            if role in self._started
        }

    # --- what the controller asks of a role's proxy -------------------------------------------

    def arm(self, role: Role, method: str, path: str, body: bytes) -> None:
        """Lets the role's once-only write pass once, with exactly ``body``."""
        digest = hashlib.sha256(body).hexdigest()
        self._running().call(
            {"op": "arm", "role": role, "method": method, "path": path, "sha256": digest}
        )

    def behind(
        self, role: Role, method: str, path: str, request_id: str
    ) -> tuple[int | None, list[AuditEvent]]:
        """The request sent straight to the role's nono listener, past its front, with the
        role's placeholder: nono's own answer and its audit of it."""
        reply = self._running().call(
            {"op": "behind", "role": role, "method": method, "path": path, "request_id": request_id}
        )
        return reply["status"], [AuditEvent.from_nono(e) for e in reply["nono"]]

    def usage(self) -> dict[str, int]:
        """The proxy host's threads, descriptors and resident memory (KiB)."""
        reply = self._running().call({"op": "usage"})
        return {name: int(reply[name]) for name in ("threads", "descriptors", "rss_kib")}

    def seal(self) -> None:
        """No role reaches its proxy any more: the fronts stop accepting, what they recorded
        is drained, and the proxy host's use of the machine is read for the evidence."""
        if self._host is None:
            return
        self._host.call({"op": "seal"})
        for role in self.roles:
            self.drain(role)
        self._sealed_usage = self.usage()

    def host_json(self) -> dict[str, Any]:
        """The proxy host, for the evidence: its pid, and its use of the machine once sealed."""
        return {"pid": self.host_pid, "usage_when_sealed": self._sealed_usage}

    def send(
        self,
        role: Role,
        method: str,
        path: str,
        *,
        key: bytes,
        request_id: str,
        body: bytes | None = None,
    ) -> int:
        """The controller's own request to a role's front, with a chosen credential."""
        route = urlsplit(self.base_url(role))
        connection = http.client.HTTPConnection(
            route.hostname or "", route.port or 80, timeout=FRONT_SECONDS
        )
        headers = {"X-Api-Key": key.decode("latin-1"), "X-Analyst-Request-ID": request_id}
        if body is not None:
            headers["Content-Type"] = "text/plain"
        try:
            with self.answering():
                connection.request(method, route.path + path, body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                return response.status
        finally:
            connection.close()

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Around a wait on a role's front: a wait that fails (a timeout, a reset) first asks
        the proxy host a plain command, so a proxy host that stopped answering stops the run
        naming it, rather than the wait's own error."""
        try:
            yield
        except OSError:
            if self._host is not None:
                self._host.answers()
            raise

    @property
    def host_pid(self) -> int | None:
        return None if self._host is None else self._host.pid

    def close(self) -> None:
        host, self._host = self._host, None
        if host is not None:
            host.stop()
