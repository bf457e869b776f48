"""The rehearsal's network: its own network namespace, with the Services' ClusterIPs, the Pod
Identity agent's link-local address, and the cluster DNS names of the Services.

Every pod shares this one namespace (a cluster gives each pod its own, routed by the CNI); the
Services' addresses are on its loopback interface (this kernel offers no dummy interface), so
the controller reaches them while a bubblewrap tool, in a network namespace of its own, has no
route to them: ENETUNREACH, as in the cluster. Names resolve through the containers'
/etc/hosts, which the kubelet manages: the stand-in for the cluster's DNS.
"""

from __future__ import annotations

import ipaddress
import subprocess
from dataclasses import dataclass
from typing import Any, Final

from app.core import cluster_env as env

from .pod_identity import AGENT_ADDRESS

# The first addresses of a typical Service CIDR (10.96.0.0/12), as ClusterIPs are given out.
SERVICE_CIDR: Final = ipaddress.ip_network("10.96.0.0/12")
FIRST_SERVICE_HOST: Final = 10


class NetworkError(RuntimeError):
    """The rehearsal's network could not be set up; the message names the command."""


@dataclass(frozen=True)
class ServiceAddress:
    name: str
    cluster_ip: str
    port: int
    target_port: int | str
    names: tuple[str, ...]


def service_names(service: str, namespace: str) -> tuple[str, ...]:
    """How a pod may name a Service: short, with the namespace, .svc, and fully qualified."""
    return (
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        env.service_host(service, namespace),
    )


def allocate(services: list[dict[str, Any]], namespace: str) -> list[ServiceAddress]:
    addresses = []
    for index, service in enumerate(services):
        name = service["metadata"]["name"]
        (port,) = service["spec"]["ports"]
        address = SERVICE_CIDR[FIRST_SERVICE_HOST + index]
        addresses.append(
            ServiceAddress(
                name,
                str(address),
                port["port"],
                port.get("targetPort", port["port"]),
                service_names(name, namespace),
            )
        )
    return addresses


def hosts_file(
    addresses: list[ServiceAddress], hostname: str, extra: list[tuple[str, str]] | None = None
) -> str:
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    lines.append(f"127.0.1.1\t{hostname}")
    lines += [f"{a.cluster_ip}\t{' '.join(a.names)}" for a in addresses]
    lines += [f"{address}\t{name}" for address, name in extra or []]
    return "\n".join(lines) + "\n"


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def bring_up(addresses: list[ServiceAddress], others: list[str] | None = None) -> None:
    """Inside the rehearsal's own network namespace only: loopback up, then the addresses."""
    _ip("link", "set", "lo", "up")
    for address in [*(a.cluster_ip for a in addresses), AGENT_ADDRESS, *(others or [])]:
        _ip("address", "add", f"{address}/32", "dev", "lo")
