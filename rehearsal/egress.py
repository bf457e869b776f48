"""The analyst pods' ApplicationNetworkPolicy, applied to the rehearsal's network namespace with
nftables, so the Job's own egress check runs here as it does in the cluster.

In the cluster the node enforces the policy for the analyst pods alone; here every pod shares one
network namespace, so the rules apply to all of them (nothing else starts a connection but the
rehearsal's readiness probe, on loopback). Each rule becomes what it means for this namespace:
an ipBlock is its CIDR (the cluster DNS address among them: the rehearsal's resolver listens
there, so without that rule no name resolves); a podSelector is the ClusterIPs of the Services
routing to the pods it selects (a Service's address stands in for its pods'); a peer of another
namespace or a domain name (S3, STS, Bedrock) has no address here, and is printed as such: the
rehearsal's AWS is moto on the pod's loopback, which no network policy governs in a cluster
either. Everything else is dropped, as the node drops it.

The destinations the Job must fail to reach (EGRESS_DENIED) are given addresses of this namespace
and a listener each, so without the rules the same connection would be accepted: the rules, not
a missing route, are what refuse it.
"""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from app.core import cluster_env as env

from .network import NetworkError, ServiceAddress
from .objects import Manifest, StackUnderRehearsal

# Addresses for denied names (TEST-NET-2, RFC 5737: never routed anywhere).
STAND_IN_NET: Final = ipaddress.ip_network("198.51.100.0/24")
TABLE: Final = "analyst_egress"
CONNECT_SECONDS: Final = 2.0


@dataclass
class EgressStandIn:
    """What the rehearsal sets up for the policy: addresses, names, rules, what it cannot map."""

    denied: list[tuple[str, int]]
    addresses: dict[str, str]  # destination host -> the address it has here
    rules: list[str]
    notes: list[str]
    listeners: list[socket.socket] = field(default_factory=list)

    @property
    def records(self) -> dict[str, str]:
        """What the resolver answers for the denied names (an address needs no name)."""
        return {host: address for host, address in self.addresses.items() if host != address}

    def script(self) -> str:
        body = "\n".join(f"    {rule}" for rule in self.rules)
        return (
            f"table inet {TABLE} {{\n  chain output {{\n"
            "    type filter hook output priority filter; policy drop;\n"
            f"{body}\n  }}\n}}\n"
        )


def denied_destinations(jobs: Mapping[Any, Manifest]) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for job in jobs.values():
        for container in job["spec"]["template"]["spec"]["containers"]:
            for entry in container.get("env", []):
                if entry["name"] == env.EGRESS_DENIED:
                    for part in entry["value"].split():
                        host, _, port = part.rpartition(":")
                        if (host, int(port)) not in found:
                            found.append((host, int(port)))
    return found


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _selected(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def _service_ips(
    selector: Mapping[str, Any], stack: StackUnderRehearsal, services: list[ServiceAddress]
) -> list[str]:
    """The ClusterIPs of the Services whose pods the selector selects."""
    pods = stack.supplier["spec"]["template"]["metadata"]["labels"]
    if not _selected(selector, pods):
        return []
    routed = {
        s["metadata"]["name"]
        for s in stack.services
        if _selected({"matchLabels": s["spec"]["selector"]}, pods)
    }
    return [a.cluster_ip for a in services if a.name in routed]


def _by_family(targets: list[str]) -> list[tuple[str, list[str]]]:
    """The targets split into nftables' `ip` and `ip6` matches (one set cannot mix them)."""
    split: dict[str, list[str]] = {"ip": [], "ip6": []}
    for target in targets:
        version = ipaddress.ip_network(target, strict=False).version
        split["ip6" if version == 6 else "ip"].append(target)
    return [(family, selected) for family, selected in split.items() if selected]


def _ports(rule: Mapping[str, Any]) -> list[str]:
    return [f"{p['protocol'].lower()} dport {p['port']}" for p in rule.get("ports", [])]


def plan(
    policy: Manifest, stack: StackUnderRehearsal, services: list[ServiceAddress]
) -> EgressStandIn:
    """The nftables rules for `policy`, and the stand-ins of the destinations it must refuse."""
    denied = denied_destinations(stack.analyst_jobs)
    addresses = {}
    names = iter(STAND_IN_NET.hosts())
    for host, _ in denied:
        addresses[host] = host if _is_address(host) else str(next(names))
    rules = [
        "ct state established,related accept",
        # The pod's own loopback: never subject to a network policy.
        'oifname "lo" ip daddr 127.0.0.0/8 accept',
        'oifname "lo" ip6 daddr ::1 accept',
    ]
    notes = []
    for index, rule in enumerate(policy["spec"].get("egress", [])):
        at = f"spec.egress[{index}]"
        for peer in rule.get("to", []):
            if "ipBlock" in peer:
                targets = [peer["ipBlock"]["cidr"]]
            elif "domainNames" in peer:
                notes.append(
                    f"{at}: the domain names {', '.join(map(str, peer['domainNames']))} have no "
                    "address here (the rehearsal's AWS is moto on the pod's loopback; Bedrock is "
                    "not called)"
                )
                continue
            elif "namespaceSelector" in peer:
                notes.append(f"{at}: no pod of another namespace runs here")
                continue
            else:
                targets = _service_ips(peer.get("podSelector") or {}, stack, services)
            for family, selected in _by_family(targets):
                for port in _ports(rule):
                    rules.append(f"{family} daddr {{ {', '.join(selected)} }} {port} accept")
    return EgressStandIn(denied, addresses, rules, notes)


def listen(stand_in: EgressStandIn) -> None:
    """A listener on each denied destination's address here, accepting and closing."""
    for host, port in stand_in.denied:
        listener = socket.create_server((stand_in.addresses[host], port))
        stand_in.listeners.append(listener)

        def serve(server: socket.socket = listener) -> None:
            while True:
                try:
                    connection, _ = server.accept()
                except OSError:
                    return
                connection.close()

        threading.Thread(target=serve, daemon=True).start()


def accepts(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=CONNECT_SECONDS).close()
    except OSError:
        return False
    return True


def apply(stand_in: EgressStandIn) -> None:
    done = subprocess.run(
        ["nft", "-f", "-"], input=stand_in.script(), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise NetworkError(f"nft -f -: {done.stderr.strip()}")


def close(stand_in: EgressStandIn) -> None:
    for listener in stand_in.listeners:
        listener.close()
    stand_in.listeners.clear()
