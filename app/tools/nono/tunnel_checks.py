"""What each online role's proxy answers for any server but the supplier, and how many of the
role's connections it serves at once.

nono-py's own listener would tunnel to the route's upstream host on any port (see
docs/notes/nono-proxy-upstream-host.md). So every nono run puts a canary on the supplier's
host at another port, shows the controller reaching it directly, and has each online role ask
its proxy for it, and for the AWS endpoint (locally moto, whose admin API serves keys), as a
tunnel and as an absolute URI under several names for loopback: each is answered 403 and
recorded at the front, and the canary counts no connection but the controller's. In the
cluster nothing of the controller's can listen on the supplier Service's host, so the Service
itself, at its own port, stands in for the canary.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
from functools import partial
from typing import Final
from urllib.parse import urlsplit

from app.core.calls import CallRecord
from app.core.roles import Role
from app.core.run import Run
from app.tools.at_once import results_at_once
from app.tools.catalogue import nono as c
from app.tools.nono.canary import Canary
from app.tools.nono.front import Refusal
from app.tools.nono.proxy_calls import ProxyCalls, Sent, authority, summary

ONLINE: Final[tuple[Role, ...]] = ("reader", "writer")
LOOPBACK: Final = "127.0.0.1"
CONTROL_SECONDS: Final = 10.0


class TunnelChecks:
    """The canary, each online role's requests for other servers, and its connection limit."""

    def __init__(self, calls: ProxyCalls) -> None:
        self.calls = calls
        self.run = calls.run
        self.host = calls.supplier_host
        self._canary = Canary(self.run.supplier.address) if self.canary_here(self.run) else None
        self.control: object = None

    @staticmethod
    def canary_here(run: Run) -> bool:
        """Whether the controller can listen on the supplier's host: locally, where it is on
        loopback; in the cluster it is a Service's address."""
        return ipaddress.ip_address(run.supplier.address).is_loopback

    # --- the canary, open for the ``with`` block -----------------------------------------------

    def __enter__(self) -> TunnelChecks:
        if self._canary is not None:
            self._canary.__enter__()
        self.control = self._control()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._canary is not None:
            self._canary.__exit__(*exc_info)

    @property
    def port(self) -> int:
        return self.run.supplier.port if self._canary is None else self._canary.port

    def _control(self) -> object:
        """The controller's own request to the canary, by the supplier's host name: its status;
        in the cluster, whether it connects to the Service's host at all."""
        if self._canary is None:
            with socket.create_connection((self.host, self.port), timeout=CONTROL_SECONDS):
                return "connected"
        connection = http.client.HTTPConnection(self.host, self.port, timeout=CONTROL_SECONDS)
        try:
            connection.request("GET", "/")
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    def _aws(self) -> tuple[str, str]:
        """The AWS endpoint as a role's proxy could name it, and a path there that holds keys."""
        endpoint = self.run.aws_endpoint
        host = self.host if endpoint.host == self.run.supplier.address else endpoint.host
        path = "/" if self.run.in_cluster else "/moto-api/data.json"
        return authority(host, endpoint.port), path

    def check(self) -> None:
        """Within the ``with`` block: each online role's requests for other servers, one tool
        process each, and their lines. For the reader, tunnels to the supplier's second name
        and to the supplier itself first; then the control; then, for each role, the canary
        under the supplier's host name and other names for loopback, and the AWS endpoint, as
        tunnels and as absolute URIs; last (locally) the canary's count."""
        log = self.run.checks
        alias, supplier = urlsplit(self.run.supplier.alias_url), urlsplit(self.run.supplier.url)
        canary = authority(self.host, self.port)
        aws, aws_path = self._aws()
        others = [
            ("CONNECT", canary),
            ("CONNECT", authority(self.run.supplier.address, self.port)),
            ("CONNECT", authority(f"{self.host}.", self.port)),
            ("GET", f"http://{canary}/"),
            ("CONNECT", aws),
            ("GET", f"http://{aws}{aws_path}"),
        ]
        tunnels = [
            ("CONNECT", authority(alias.hostname or "", alias.port or 443)),
            ("CONNECT", authority(self.host, supplier.port or 443)),
        ]
        # One tool process each, at once: each request is found in its records by its id.
        asked = results_at_once(
            {
                "reader": partial(self._ask, "reader", [*tunnels, *others]),
                "writer": partial(self._ask, "writer", others),
            }
        )
        to_alias, to_supplier, *reader_others = asked["reader"]
        self._tunnel_lines("alias", to_alias, "the second name for the same server")
        self._tunnel_lines(
            "supplier",
            to_supplier,
            "the supplier itself, where a tunnel would carry requests past its method and path "
            "rules",
        )
        if self._canary is None:
            log.expect_equal(c.SERVICE_CONTROL(where=canary), self.control, "connected")
        else:
            log.expect_equal(c.CANARY_CONTROL(where=canary), self.control, 200)
        self._other_servers_lines("reader", reader_others)
        self._other_servers_lines("writer", asked["writer"])
        if self._canary is not None:
            log.expect_equal(c.CANARY_UNTOUCHED, self._canary.connections, 1)

    def _ask(self, role: Role, asked: list[tuple[str, str]]) -> list[Sent]:
        """The role's request lines, sent as written by one tool process, their records kept."""
        layer = self.calls.layer
        sent = self.calls.raw_requests(
            role, [(layer.next_request_id(role), m, t) for m, t in asked]
        )
        return [self.calls.keep(s) for s in sent]

    def _other_servers_lines(self, role: Role, sent: list[Sent]) -> None:
        """Every request of the role's for another server: 403, each refused at its front."""
        log = self.run.checks
        said = ", ".join(f"{s.call.method} {s.call.path} {s.observed}" for s in sent)
        log.require(c.OTHER_SERVERS(role=role), all(s.observed == 403 for s in sent), detail=said)
        wrong = [
            s
            for s in sent
            if not (s.refused_at_front(Refusal.TUNNEL) or s.refused_at_front(Refusal.ABSOLUTE_FORM))
        ]
        log.require(
            c.OTHER_SERVERS_FRONT(role=role),
            not wrong,
            detail=str([summary(s.records) for s in wrong])
            if wrong
            else f"{len(sent)} records, each refused at the front",
        )

    def _tunnel_lines(self, name: str, sent: Sent, what: str) -> None:
        """The reader's CONNECT through its proxy: 403, and one record of the refusal."""
        where = sent.call.path
        self.calls.expect_status(c.TUNNEL(target=name, where=where, what=what), sent, 403)
        self.calls.expect_refused(c.TUNNEL_AUDIT(target=name, where=where), sent, Refusal.TUNNEL)

    # --- connection limits -----------------------------------------------------------------------

    def limit(self, role: Role) -> int:
        """The role's front's limit, as its profile sets it."""
        profile = self.calls.layer.live_profile(role)
        return int(profile["network"]["proxy_front"]["max_connections"])

    def limit_lines(self, role: Role) -> None:
        """The controller fills the role's front's connections (a connection to it is one of
        the role's, whoever opened it): with one fewer left open mid-request, the next is
        served; with all of them, one more is answered 503 at once, unread. Alone at that
        front, so that no other request counts among them; on the front's record it leaves
        ``limit`` connections without a whole request."""
        count, port = self.limit(role), self.calls.layer.proxies.port(role)
        held: list[socket.socket] = []
        # A front that does not answer in time is the proxy host's failure, not the role's.
        with self.calls.layer.proxies.answering():
            try:
                for _ in range(count - 1):
                    held.append(socket.create_connection((LOOPBACK, port), timeout=CONTROL_SECONDS))
                    held[-1].sendall(b"GET /")
                rid = self.calls.layer.next_request_id(role)
                target = authority(LOOPBACK, port)
                held.append(socket.create_connection((LOOPBACK, port), timeout=CONTROL_SECONDS))
                held[-1].sendall(
                    f"CONNECT {target} HTTP/1.1\r\nX-Analyst-Request-ID: {rid}\r\n\r\n".encode()
                )
                within = _status(held[-1])
                held.append(socket.create_connection((LOOPBACK, port), timeout=CONTROL_SECONDS))
                beyond = _status(held[-1])
            finally:
                for connection in held:
                    connection.close()
        call = CallRecord(rid, "controller", "CONNECT", target, LOOPBACK, within, False)
        self.calls.keep(Sent(within, None, [], call))
        log = self.run.checks
        log.expect_equal(c.LIMIT_CONTROL(role=role, open=count - 1), within, 403)
        log.expect_equal(c.LIMIT(role=role, limit=count), beyond, 503)


def _status(connection: socket.socket) -> int | None:
    """The status an answer starts with; None for anything else."""
    line = b""
    while len(line) < 12 and (chunk := connection.recv(12 - len(line))):
        line += chunk
    return int(line[9:12]) if line[:7] == b"HTTP/1." and line[9:12].isdigit() else None
