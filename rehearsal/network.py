"""The rehearsal's network: its own network namespace, with the Services' ClusterIPs, the Pod
Identity agent's link-local address, and the cluster DNS address.

Every pod shares this one namespace (a cluster gives each pod its own, routed by the CNI); the
Services' addresses are on its loopback interface (this kernel offers no dummy interface), so
the controller reaches them while a bubblewrap tool, in a network namespace of its own, has no
route to them: ENETUNREACH, as in the cluster. Names resolve as a pod's do in the cluster:
through the resolver at the cluster DNS address (rehearsal/dns.py), never through /etc/hosts,
which the kubelet fills with the pod's own names only (pkg/kubelet/kubelet_pods.go,
managedHostsFileContent).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any, Final

from app.core import cluster_env as env

from .dns import CLUSTER_DNS, SERVICE_CIDR
from .pod_identity import AGENT_ADDRESS

# The first addresses of the Service CIDR, as ClusterIPs are given out, after the cluster DNS
# address (its 10th, as EKS places it: infra/egress.py).
FIRST_SERVICE_HOST: Final = 11


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


def hosts_file(hostname: str) -> str:
    """The kubelet's managed /etc/hosts: localhost and the pod's own name, nothing else."""
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    lines.append(f"127.0.1.1\t{hostname}")
    return "\n".join(lines) + "\n"


def service_records(addresses: list[ServiceAddress]) -> dict[str, str]:
    """What the cluster DNS answers for the Services: each fully qualified name's ClusterIP."""
    return {a.names[-1]: a.cluster_ip for a in addresses}


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def bring_up(addresses: list[ServiceAddress], others: list[str] | None = None) -> None:
    """Inside the rehearsal's own network namespace only: loopback up, then the addresses."""
    _ip("link", "set", "lo", "up")
    for address in [
        *(a.cluster_ip for a in addresses),
        CLUSTER_DNS,
        AGENT_ADDRESS,
        *(others or []),
    ]:
        _ip("address", "add", f"{address}/32", "dev", "lo")
