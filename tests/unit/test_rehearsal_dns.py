"""The rehearsal's cluster resolver: the messages it parses and answers (RFC 1035), the
resolv.conf it gives pods, and a real exchange over UDP and TCP with the system's own resolver
(glibc's getaddrinfo is not used here: the server is asked directly)."""

from __future__ import annotations

import socket
import struct

import pytest

from rehearsal import dns


def _query(name: str, qtype: int = dns.TYPE_A, flags: int = dns.RECURSION_DESIRED) -> bytes:
    labels = b"".join(bytes([len(part)]) + part.encode() for part in name.split("."))
    return struct.pack("!HHHHHH", 7, flags, 1, 0, 0, 0) + labels + struct.pack("!BHH", 0, qtype, 1)


def test_a_known_name_gets_its_address_and_an_unknown_one_nxdomain() -> None:
    records = {"supplier-api.ns.svc.cluster.local": "10.96.0.11"}
    known = dns.answer(dns.parse_query(_query("Supplier-API.ns.svc.cluster.local")), records)
    ident, flags, _, answers = struct.unpack("!HHHH", known[:8])
    assert (ident, flags & 0xF, answers) == (7, 0, 1)
    assert socket.inet_ntoa(known[-4:]) == "10.96.0.11"
    unknown = dns.answer(dns.parse_query(_query("sqs.ns.svc.cluster.local")), records)
    assert struct.unpack("!HH", unknown[:4])[1] & 0xF == dns.NXDOMAIN
    # A known name's other types: NOERROR with no answer, so glibc keeps the A record.
    aaaa = dns.answer(dns.parse_query(_query("supplier-api.ns.svc.cluster.local", 28)), records)
    assert struct.unpack("!HHHH", aaaa[:8])[1] & 0xF == 0
    assert struct.unpack("!HHHH", aaaa[:8])[3] == 0


@pytest.mark.parametrize(
    "message",
    [b"", b"\x00" * 11, _query("a.b", flags=dns.RESPONSE), _query("a.b")[:-3]],
)
def test_a_malformed_query_is_refused(message: bytes) -> None:
    with pytest.raises(dns.MalformedQuery):
        dns.parse_query(message)


def test_pods_get_the_kubelets_cluster_first_resolv_conf() -> None:
    assert dns.resolv_conf("10.96.0.10", "ns") == (
        "search ns.svc.cluster.local svc.cluster.local cluster.local\n"
        "nameserver 10.96.0.10\noptions ndots:5\n"
    )
    assert dns.CLUSTER_DNS == "10.96.0.10"


def test_the_resolver_answers_over_udp_and_tcp_and_keeps_each_question() -> None:
    resolver = dns.Resolver("127.0.0.1", {"a.ns.svc.cluster.local": "10.96.0.11"}, port=0)
    # Port 0 would bind anywhere; take a free one first.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        resolver.port = probe.getsockname()[1]
    resolver.start()
    try:
        for transport in ("udp", "tcp"):
            found = dns.query("127.0.0.1", "a.ns.svc.cluster.local", transport, port=resolver.port)
            assert found == "10.96.0.11", transport
        assert dns.query("127.0.0.1", "b.ns.svc.cluster.local", "udp", port=resolver.port) is None
        assert [(t, n) for t, n, _ in resolver.asked] == [
            ("udp", "a.ns.svc.cluster.local"),
            ("tcp", "a.ns.svc.cluster.local"),
            ("udp", "b.ns.svc.cluster.local"),
        ]
    finally:
        resolver.stop()
