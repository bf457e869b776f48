"""The cluster's DNS resolver, stood in: a small server on the cluster DNS address that answers
the names a pod of the stack asks for, and the /etc/resolv.conf the kubelet gives each pod.

In the cluster every name a pod resolves goes to the address in its /etc/resolv.conf (the kubelet
writes it for `dnsPolicy: ClusterFirst`: the cluster DNS address, the namespace's search list,
`ndots:5`; kubernetes/kubernetes pkg/kubelet/network/dns/dns.go), and on EKS Auto Mode that
address is served on the node, so a pod's egress policy must allow it by address. Here the same
holds: the Services' names and the names the Job must fail to reach resolve only through this
server, at the address the stack's policy is rendered for, so a policy without its DNS rule
leaves every name unresolved and the run fails, as it would in the cluster.

It answers A queries for the names it holds, an empty NOERROR for their other types (AAAA), and
NXDOMAIN for anything else, over UDP and TCP (RFC 1035 4.2); it keeps every question it was
asked, for the rehearsal's verdicts.
"""

from __future__ import annotations

import ipaddress
import socket
import socketserver
import struct
import threading
from dataclasses import dataclass, field
from typing import Final

from infra.egress import cluster_dns_address

# A typical Service CIDR (kubeadm's default); the cluster DNS address is its 10th, as on EKS.
SERVICE_CIDR: Final = ipaddress.ip_network("10.96.0.0/12")
CLUSTER_DNS: Final[str] = cluster_dns_address(str(SERVICE_CIDR))
DNS_PORT: Final = 53
TYPE_A: Final = 1
CLASS_IN: Final = 1
TTL_SECONDS: Final = 5
# Header flags: a response (QR), recursion desired echoed, recursion available.
RESPONSE: Final = 0x8000
RECURSION_DESIRED: Final = 0x0100
RECURSION_AVAILABLE: Final = 0x0080
NXDOMAIN: Final = 3
FORMERR: Final = 1
MAX_MESSAGE: Final = 512
CLUSTER_DOMAIN: Final = "cluster.local"


class MalformedQuery(ValueError):
    """A message that is not one well-formed question."""


@dataclass(frozen=True)
class Question:
    ident: int
    flags: int
    name: str  # lower case, without the final dot
    qtype: int
    qclass: int
    raw: bytes  # the question section as sent


def parse_query(message: bytes) -> Question:
    """The one question of a query message (RFC 1035 4.1.1, 4.1.2); compression is refused."""
    if len(message) < 12:
        raise MalformedQuery("shorter than a DNS header")
    ident, flags, qdcount = struct.unpack("!HHH", message[:6])
    if qdcount != 1 or flags & RESPONSE:
        raise MalformedQuery("not a query with one question")
    labels = []
    offset = 12
    while True:
        if offset >= len(message):
            raise MalformedQuery("the name runs past the message")
        length = message[offset]
        offset += 1
        if length == 0:
            break
        if length > 63 or offset + length > len(message):
            raise MalformedQuery("a label is too long or compressed")
        labels.append(message[offset : offset + length].decode("ascii", "replace").lower())
        offset += length
    if offset + 4 > len(message):
        raise MalformedQuery("no type and class")
    qtype, qclass = struct.unpack("!HH", message[offset : offset + 4])
    return Question(ident, flags, ".".join(labels), qtype, qclass, message[12 : offset + 4])


def answer(question: Question, records: dict[str, str]) -> bytes:
    """The response to `question` from `records` (name -> IPv4 address)."""
    address = records.get(question.name)
    flags = RESPONSE | (question.flags & RECURSION_DESIRED) | RECURSION_AVAILABLE
    answers = b""
    if address is None:
        flags |= NXDOMAIN
    elif question.qtype == TYPE_A and question.qclass == CLASS_IN:
        # The name by a pointer to the question's (offset 12), then type, class, TTL, data.
        answers = struct.pack("!HHHIH", 0xC00C, TYPE_A, CLASS_IN, TTL_SECONDS, 4)
        answers += socket.inet_aton(address)
    count = 1 if answers else 0
    header = struct.pack("!HHHHHH", question.ident, flags, 1, count, 0, 0)
    return header + question.raw + answers


def format_error(message: bytes) -> bytes:
    ident = struct.unpack("!H", message[:2])[0] if len(message) >= 2 else 0
    return struct.pack("!HHHHHH", ident, RESPONSE | FORMERR, 0, 0, 0, 0)


def resolv_conf(resolver: str, namespace: str) -> str:
    """What the kubelet writes for a ClusterFirst pod (pkg/kubelet/network/dns/dns.go)."""
    search = f"{namespace}.svc.{CLUSTER_DOMAIN} svc.{CLUSTER_DOMAIN} {CLUSTER_DOMAIN}"
    return f"search {search}\nnameserver {resolver}\noptions ndots:5\n"


@dataclass
class Resolver:
    """The stand-in resolver on `address`; `asked` holds (transport, name, type) in order."""

    address: str
    records: dict[str, str]
    port: int = DNS_PORT
    asked: list[tuple[str, str, int]] = field(default_factory=list)
    _servers: list[socketserver.BaseServer] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, message: bytes, transport: str) -> bytes:
        try:
            question = parse_query(message)
        except MalformedQuery:
            return format_error(message)
        with self._lock:
            self.asked.append((transport, question.name, question.qtype))
        return answer(question, self.records)

    def names_asked(self) -> list[str]:
        with self._lock:
            return [name for _, name, _ in self.asked]

    def start(self) -> None:
        resolver = self

        class Udp(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data, sock = self.request
                sock.sendto(resolver.respond(data, "udp"), self.client_address)

        class Tcp(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                prefix = self.rfile.read(2)
                if len(prefix) != 2:
                    return
                (length,) = struct.unpack("!H", prefix)
                reply = resolver.respond(self.rfile.read(length), "tcp")
                self.wfile.write(struct.pack("!H", len(reply)) + reply)

        family = socket.AF_INET6 if ipaddress.ip_address(self.address).version == 6 else None
        for server_class, handler in (
            (socketserver.ThreadingUDPServer, Udp),
            (socketserver.ThreadingTCPServer, Tcp),
        ):
            server_class.allow_reuse_address = True
            server_class.daemon_threads = True
            if family is not None:
                server_class.address_family = family
            server = server_class((self.address, self.port), handler)
            self._servers.append(server)
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()


def query(
    address: str, name: str, transport: str, timeout: float = 2.0, port: int = DNS_PORT
) -> str | None:
    """Ask `address` for `name`'s A record over `transport`; the address, or None on no answer."""
    ident = 0x5151
    question = b"".join(
        bytes([len(label)]) + label.encode("ascii") for label in name.split(".")
    ) + struct.pack("!BHH", 0, TYPE_A, CLASS_IN)
    message = struct.pack("!HHHHHH", ident, RECURSION_DESIRED, 1, 0, 0, 0) + question
    try:
        if transport == "udp":
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.settimeout(timeout)
                sock.sendto(message, (address, port))
                reply = sock.recv(MAX_MESSAGE)
        else:
            with socket.create_connection((address, port), timeout=timeout) as sock:
                sock.sendall(struct.pack("!H", len(message)) + message)
                reply = sock.recv(2 + MAX_MESSAGE)[2:]
    except OSError:
        return None
    header = struct.unpack("!HHHHHH", reply[:12]) if len(reply) >= 12 else None
    if header is None or header[0] != ident or header[3] != 1:
        return None
    return socket.inet_ntoa(reply[-4:])
