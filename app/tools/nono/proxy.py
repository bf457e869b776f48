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
deadline (COMMAND_SECONDS and the commands' own below): a proxy host that misses one has failed
for the rest of the run, so the run stops at once with one line naming it, and no later call
waits for it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final
from urllib.parse import urlsplit

from app.core.repo import REPO_ROOT
from app.core.results import HelperLost, ToolRunError
from app.core.roles import ROLES, Role
from app.tools.nono.front import FrontRecord
from app.tools.nono.helper_state import described
from app.tools.nono.policy import CREDENTIAL_ENV_VAR
from app.tools.nono.proxy_host import NONO_AUDIT_SECONDS, REQUEST_SECONDS, UPSTREAM_SECONDS

# The proxy host's module, run with -m.
HOST_MODULE = "app.tools.nono.proxy_host"
# One reply line from the proxy host, and how long a reply may take, from when the controller
# asks for it. Measured at load averages of 7 to 9 on 2 cores: a start (both roles' nono
# proxies loading) 0.28 to 0.38 s from its send, a drain at most 0.13 s, every other command a
# few ms. A start and a plain command get some 25 times that; a request sent through nono
# ("behind") and a seal may take as long as the front's own deadlines allow first.
MAX_REPLY_BYTES: Final = 1024 * 1024
COMMAND_SECONDS: Final = 5.0
START_SECONDS: Final = 10.0
COMMAND_DEADLINES: Final[dict[str, float]] = {
    "start": START_SECONDS,
    "behind": UPSTREAM_SECONDS + NONO_AUDIT_SECONDS + COMMAND_SECONDS,
    "seal": REQUEST_SECONDS + UPSTREAM_SECONDS + COMMAND_SECONDS,
}
STOP_SECONDS: Final = 2.0
# The controller's own request to a role's front: the front's deadlines, and a margin.
FRONT_SECONDS: Final = REQUEST_SECONDS + UPSTREAM_SECONDS + 2.0
# What a front allows at most, whatever a profile asks: a role's tool process holds a few
# connections at once, and each costs the proxy host a descriptor.
MOST_CONNECTIONS: Final = 64
_WILDCARDS: Final = frozenset("*?[]{}")


@dataclass(frozen=True)
class AuditEvent:
    """One request as nono's proxy saw and decided it (nono's NetworkAuditEvent)."""

    mode: str  # "reverse" for a credential route
    decision: str  # "allow" or "deny"
    method: str | None
    path: str | None
    status: int | None  # the supplier's status, once an allowed request was answered
    denial_category: str | None

    @classmethod
    def from_nono(cls, event: Mapping[str, Any]) -> AuditEvent:
        return cls(
            mode=str(event["mode"]),
            decision=str(event["decision"]),
            method=event["method"],
            path=event["path"],
            status=event["status"],
            denial_category=event["denial_category"],
        )

    @property
    def forwarded(self) -> bool:
        """nono forwarded the request: allowed, and carrying the supplier's status."""
        return self.decision == "allow" and self.status is not None


def nono_events(record: FrontRecord) -> list[AuditEvent]:
    return [AuditEvent.from_nono(event) for event in record.nono]


def forwarded(records: list[FrontRecord]) -> bool:
    """Some request of ``records`` went on to the supplier (nono says so)."""
    return any(event.forwarded for record in records for event in nono_events(record))


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
        # The front compares paths exactly; a pattern would mean one thing to it and another
        # to nono.
        if any(_WILDCARDS & set(path) for _, path in rules):
            raise ToolRunError(f"the {role} profile's endpoint rules must name exact paths")
        return route

    def as_json(self) -> dict[str, Any]:
        return {
            "prefix": self.prefix,
            "upstream": self.upstream,
            "credential_key": self.credential_key,
            "env_var": self.env_var,
            "inject_header": self.inject_header,
            "credential_format": self.credential_format,
            "tls_ca": self.tls_ca,
            "rules": [list(rule) for rule in self.rules],
        }


@dataclass(frozen=True)
class ProxyFront:
    """What a role's profile asks of its proxy's front (network.proxy_front)."""

    max_connections: int
    once: list[tuple[str, str]]  # the writes that pass once per run, with a verified body

    @classmethod
    def from_profile(cls, role: Role, network: dict[str, Any], route: ProxyRoute) -> ProxyFront:
        """The front a profile asks for; without a connection limit it is refused, since a
        front without one lets a role flood it, and so is a once-only write its route does
        not list."""
        try:
            front = network["proxy_front"]
            limit = front["max_connections"]
            once = [(rule["method"], rule["path"]) for rule in front.get("once", [])]
        except (KeyError, TypeError) as missing:
            raise ToolRunError(
                f"the {role} profile's proxy front is incomplete: {missing}"
            ) from None
        if type(limit) is not int or not 1 <= limit <= MOST_CONNECTIONS:
            raise ToolRunError(
                f"the {role} profile's proxy front must allow 1 to {MOST_CONNECTIONS} "
                f"connections at once, not {limit!r}"
            )
        if not set(once) <= set(route.rules):
            raise ToolRunError(f"the {role} profile's once-only writes are not all in its route")
        return cls(limit, once)


@dataclass(frozen=True)
class StartedProxy:
    front_port: int
    variables: dict[str, str]


class ProxyHostError(HelperLost):
    """The proxy host did not answer as it must: the run stops, naming it."""


class _ProxyHost:
    """The proxy host process and its command pipe, one command at a time."""

    def __init__(self, log_file: Path) -> None:
        self._log_file = log_file
        with log_file.open("wb") as stderr:
            self._process = subprocess.Popen(
                # -P: the working directory, the run's own, is not on the module path.
                [sys.executable, "-P", "-m", HOST_MODULE, str(os.getpid())],
                # The run's folder, so that whoever lists processes sees whose it is.
                cwd=log_file.parent,
                env={"PATH": os.defpath, "PYTHONPATH": str(REPO_ROOT), "LC_ALL": "C.UTF-8"},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                bufsize=0,
                # A Ctrl-C at the terminal is the controller's to handle.
                start_new_session=True,
            )
        # Written with a deadline: a proxy host that reads nothing fills the pipe, and a
        # blocking write would then wait for ever.
        assert self._process.stdin is not None
        os.set_blocking(self._process.stdin.fileno(), False)
        self._buffer = b""
        # Replies come back in the order the commands went: a reply read before its caller
        # asked for it waits here, by its command's number.
        self._sent = self._read = 0
        self._ops: dict[int, str] = {}
        self._early: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()
        # Once it has missed a deadline or ended, every later call stops the run at once.
        self._failure: ProxyHostError | None = None

    @property
    def pid(self) -> int:
        return self._process.pid

    def send(self, command: dict[str, Any]) -> int:
        """Sends a command without waiting for its reply; returns its ticket for ``reply``."""
        with self._lock:
            self._raise_if_failed()
            self._write(json.dumps(command).encode("utf-8") + b"\n", str(command.get("op")))
            self._sent += 1
            self._ops[self._sent] = str(command.get("op"))
            return self._sent

    def _write(self, data: bytes, op: str) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        deadline = time.monotonic() + COMMAND_SECONDS
        while data:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [stdin], [], left)[1]:
                raise self._failed(f"did not take the command {op!r} within {COMMAND_SECONDS:g} s")
            try:
                data = data[os.write(stdin.fileno(), data) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise self._failed("it is not running") from None

    def reply(self, ticket: int) -> dict[str, Any]:
        """The reply to the command with ``ticket``, reading those before it first."""
        with self._lock:
            self._raise_if_failed()
            while self._read < ticket:
                line = self._read_line(self._ops.pop(self._read + 1, "?"))
                self._read += 1
                self._early[self._read] = line
            reply = self._early.pop(ticket)
        if not reply.get("ok"):
            raise ProxyHostError(f"the proxy host refused a command: {reply.get('error')}")
        return reply

    def call(self, command: dict[str, Any]) -> dict[str, Any]:
        return self.reply(self.send(command))

    def _read_line(self, op: str) -> dict[str, Any]:
        stdout = self._process.stdout
        assert stdout is not None
        seconds = COMMAND_DEADLINES.get(op, COMMAND_SECONDS)
        deadline = time.monotonic() + seconds
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_REPLY_BYTES:
                raise self._failed(f"a reply over {MAX_REPLY_BYTES} bytes")
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stdout], [], [], left)[0]:
                raise self._failed(f"no reply to {op!r} within {seconds:g} s")
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                raise self._failed("it ended")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply: dict[str, Any] = json.loads(line)
        except ValueError:
            raise self._failed("a reply that is not JSON") from None
        return reply

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _failed(self, what: str) -> ProxyHostError:
        tail = self._log_file.read_bytes()[-2000:].decode("utf-8", "replace").strip()
        self._failure = ProxyHostError(
            f"the roles' proxy host (pid {self.pid}) failed: {what}; {described(self.pid)}"
            + (f"; its stderr ends: {tail!r}" if tail else "")
        )
        return self._failure

    def answers(self) -> None:
        """Raises its failure when the proxy host misses the deadline of a plain command (or
        missed one before): for a caller whose wait through a role's front went unanswered."""
        self.call({"op": "usage"})

    def stop(self) -> None:
        stdin: IO[bytes] | None = self._process.stdin
        if stdin is not None and self._failure is None:
            with contextlib.suppress(OSError):
                os.write(stdin.fileno(), b'{"op": "stop"}\n')
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()
        try:
            self._process.wait(timeout=0 if self._failure is not None else STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


class RoleProxies:
    """The proxies of one run, one per online role, with their records."""

    def __init__(self, key_file: str, run_id: str, log_file: Path) -> None:
        self._key_file = key_file
        self._run_id = run_id
        self._log_file = log_file
        self._host: _ProxyHost | None = None
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
            self._host = _ProxyHost(self._log_file)

    def _running(self) -> _ProxyHost:
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
