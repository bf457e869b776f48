"""One pod at a time, as the kubelet runs it: admission (the Pod Identity webhook), volumes,
init containers first, in order, each to completion, then the containers.

A Job's pod runs once (`backoffLimit: 0`, `restartPolicy: Never`); its deadline is the Job's
`activeDeadlineSeconds`, capped for a rehearsal. The supplier Deployment's pod runs in the
background until the rehearsal ends, and counts as ready when its readiness probe's TCP port
accepts a connection, as the kubelet's tcpSocket probe does.
"""

from __future__ import annotations

import secrets
import socket
import string
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from infra.pod_specs import USERNS_SYSCTL
from infra.targets import SANDBOX_RUNTIME_CLASS

from . import kubelet
from .dns import CLUSTER_DNS, resolv_conf
from .kubelet import ContainerRun, PodContext
from .network import ServiceAddress, hosts_file
from .objects import Manifest, StackUnderRehearsal
from .pod_identity import AUDIENCE, PodIdentityAgent, mutate, skipped
from .seccomp_profiles import Node, SeccompChoice, choose
from .secret_values import ObjectData
from .security import ConfigError, not_simulated
from .volumes import VolumeError, make_volumes

POD_SPEC: Final = "spec.template.spec"
# A Nitro sandbox guest boots with user.max_user_namespaces at 0 (infra/pod_specs.py); the
# stand-in file every container of a sandboxed pod sees at that path starts there too.
GUEST_USERNS_START: Final = "0\n"
MAX_REHEARSAL_SECONDS: Final = 300.0
READY_SECONDS: Final = 30.0
_SUFFIX = string.ascii_lowercase + string.digits


def pod_name(owner: str) -> str:
    """A pod name as a Job or ReplicaSet controller makes one: the owner's and five letters."""
    return f"{owner}-{''.join(secrets.choice(_SUFFIX) for _ in range(5))}"[:63]


@dataclass
class PodResult:
    name: str
    owner: str  # "Job analyst-nono-1-…"
    context: PodContext | None = None
    admitted: list[str] = field(default_factory=list)
    not_simulated: list[str] = field(default_factory=list)
    seccomp: dict[str, SeccompChoice] = field(default_factory=dict)  # by container field path
    runs: list[ContainerRun] = field(default_factory=list)
    refusal: str = ""  # why the kubelet did not start it (the field is named)
    exit_code: int | None = None

    @property
    def succeeded(self) -> bool:
        return not self.refusal and self.exit_code == 0

    def log(self, container: str) -> list[str]:
        return next((run.log for run in self.runs if run.name == container), [])


@dataclass
class Kubelet:
    stack: StackUnderRehearsal
    state: Path
    values: dict[tuple[str, str], ObjectData]
    services: list[ServiceAddress]
    agent: PodIdentityAgent
    added_env: dict[str, str]
    node: Node
    # The cluster DNS address every pod's /etc/resolv.conf names (rehearsal/dns.py).
    resolver: str = CLUSTER_DNS
    background: list[subprocess.Popen[str]] = field(default_factory=list)

    def prepare(self, manifest: Manifest, name: str, result: PodResult) -> PodContext:
        spec: dict[str, Any] = manifest["spec"]["template"]["spec"]
        result.not_simulated = not_simulated(spec, POD_SPEC)
        result.seccomp = {
            where: choose(spec, container, pod_where=POD_SPEC, where=where, node=self.node)
            for where, container in containers(spec)
        }
        tokens: dict[str, bytes] = {}
        added_env: dict[str, str] = {}
        if spec.get("serviceAccountName") == self.stack.service_account:
            annotations = manifest["spec"]["template"].get("metadata", {}).get("annotations", {})
            spec, result.admitted = mutate(spec, self.stack.config.region, skipped(annotations))
            tokens[AUDIENCE] = self.agent.mint(name)
            added_env = self.added_env
        directory = self.state / "pods" / name
        directory.mkdir(parents=True)
        volumes = make_volumes(spec, POD_SPEC, directory / "volumes", self.values, tokens)
        hosts = directory / "hosts"
        hosts.write_text(hosts_file(name), encoding="utf-8")
        resolv = directory / "resolv.conf"
        resolv.write_text(resolv_conf(self.resolver, self.stack.namespace), encoding="ascii")
        stand_ins = []
        if spec.get("runtimeClassName") == SANDBOX_RUNTIME_CLASS:
            guest = directory / "max_user_namespaces"
            guest.write_text(GUEST_USERNS_START, encoding="ascii")
            guest.chmod(0o644)
            stand_ins.append({"source": str(guest), "target": USERNS_SYSCTL})
        return PodContext(
            name=name,
            namespace=self.stack.namespace,
            spec=spec,
            where=POD_SPEC,
            volumes=volumes,
            services=self.services,
            hosts_file=hosts,
            resolv_conf=resolv,
            stand_ins=stand_ins,
            directory=directory,
            seccomp=result.seccomp,
            added_env=added_env,
        )

    def run_job(
        self,
        job: Manifest,
        echo: TextIO | None,
        *,
        name: str | None = None,
        announce: Callable[[PodResult], None] | None = None,
    ) -> PodResult:
        owner = job["metadata"]["name"]
        result = PodResult(name or pod_name(owner), f"Job {owner}")
        deadline = min(
            float(job["spec"].get("activeDeadlineSeconds", MAX_REHEARSAL_SECONDS)),
            MAX_REHEARSAL_SECONDS,
        )
        try:
            pod = result.context = self.prepare(job, result.name, result)
            if announce is not None:
                announce(result)
            for where, container in containers(pod.spec):
                run = kubelet.plan(pod, container, where)
                result.runs.append(run)
                stream = echo if ".containers[" in where else None
                code = kubelet.run_to_completion(pod, run, deadline, stream)
                if code != 0:
                    result.exit_code = code
                    return result
            result.exit_code = 0
        except (ConfigError, VolumeError) as error:
            result.refusal = str(error)
        return result

    def start_deployment(self, deployment: Manifest) -> PodResult:
        owner = deployment["metadata"]["name"]
        result = PodResult(pod_name(f"{owner}-rehearsal"), f"Deployment {owner}")
        try:
            pod = result.context = self.prepare(deployment, result.name, result)
            (container,) = pod.spec["containers"]
            run = kubelet.plan(pod, container, f"{POD_SPEC}.containers[0]")
        except (ConfigError, VolumeError) as error:
            result.refusal = str(error)
            return result
        result.runs.append(run)
        process = kubelet.start(pod, run)
        self.background.append(process)
        kubelet.follow(process, run, None)
        port = _probe_port(container)
        if not kubelet.wait_ready(lambda: _accepts(port), process, READY_SECONDS):
            result.exit_code = process.poll()
            result.refusal = (
                f"{POD_SPEC}.containers[0].readinessProbe: the pod did not become ready "
                f"(port {port} never accepted a connection within {READY_SECONDS:.0f}s)"
            )
        return result

    def stop(self) -> None:
        for process in self.background:
            process.kill()
            process.wait()
        self.background.clear()


def containers(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every container of a pod spec with its field path, init containers first, in order."""
    return [
        (f"{POD_SPEC}.{kind}[{index}]", container)
        for kind in ("initContainers", "containers")
        for index, container in enumerate(spec.get(kind, []))
    ]


def _probe_port(container: dict[str, Any]) -> int:
    port = container["readinessProbe"]["tcpSocket"]["port"]
    if isinstance(port, int):
        return port
    named = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    return int(named[port])


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def service_reaches(address: ServiceAddress, deployment: Manifest) -> str:
    """Why a Service's address reaches the pod here, or what the rehearsal cannot route."""
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    named = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    target = address.target_port
    port = named.get(target) if isinstance(target, str) else target
    if port != address.port:
        return (
            f"Service {address.name}: port {address.port} targets container port {port}; the "
            "rehearsal routes a Service only to the same port"
        )
    return ""
