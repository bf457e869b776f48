"""Starts one container of a pod as the kubelet and the container runtime would: its command
and working directory, its environment, its volume mounts, its identity and privileges.

The environment, in the kubelet's order: the image's ENV, HOSTNAME, the Services' variables
(`enableServiceLinks`, on by default), then the container's `env`, each a `value`, with `$(VAR)`
references expanded in `env`, `command` and `args` (the bubblewrap pod's init command holds a
shell `$(...)` that must pass through unchanged).
https://kubernetes.io/docs/tasks/inject-data-application/define-environment-variable-container/
Whatever the rehearsal adds beyond that is returned separately, so it can be printed as such.
The stack's objects use no `valueFrom` and no `subPath`: the rehearsal resolves neither, and
refuses a container that uses one, naming the field, rather than start it with what the kubelet
would not give it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from . import container_init
from .image_stand_in import IMAGES, ImageStandIn, layers
from .network import ServiceAddress
from .seccomp_profiles import SeccompChoice
from .security import MASKED_PATHS, READONLY_PATHS, ConfigError, Privileges, privileges
from .volumes import PodVolumes

UNSHARE: Final = [
    "unshare",
    "--mount",
    "--pid",
    "--uts",
    "--ipc",
    "--fork",
    "--kill-child",
    "--propagation",
    "private",
    "--",
]
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
# The keys of a volumeMount the rehearsal applies.
MOUNT_KEYS: Final = frozenset({"name", "mountPath", "readOnly"})


@dataclass(frozen=True)
class PodContext:
    """What every container of one pod shares."""

    name: str
    namespace: str
    spec: dict[str, Any]
    where: str  # the pod spec's field path in its object
    volumes: PodVolumes
    services: list[ServiceAddress]
    hosts_file: Path
    resolv_conf: Path
    stand_ins: list[dict[str, Any]]
    directory: Path
    seccomp: dict[str, SeccompChoice]  # by the container's field path
    added_env: dict[str, str] = field(default_factory=dict)


@dataclass
class ContainerRun:
    name: str
    image: str  # the reference the container's `image` names
    where: str
    privileges: Privileges
    seccomp: SeccompChoice
    env: dict[str, str]
    log: list[str] = field(default_factory=list)
    exit_code: int | None = None


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: a defined variable is replaced, $$ escapes, else kept."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _REFERENCE.sub(one, text)


def service_links(services: list[ServiceAddress]) -> dict[str, str]:
    """The variables the kubelet sets for each Service of the namespace (docker links style)."""
    found = {}
    for service in services:
        prefix = service.name.upper().replace("-", "_")
        found[f"{prefix}_SERVICE_HOST"] = service.cluster_ip
        found[f"{prefix}_SERVICE_PORT"] = str(service.port)
        found[f"{prefix}_SERVICE_PORT_HTTPS"] = str(service.port)
        url = f"tcp://{service.cluster_ip}:{service.port}"
        found[f"{prefix}_PORT"] = url
        base = f"{prefix}_PORT_{service.port}_TCP"
        found[base] = url
        found[f"{base}_PROTO"] = "tcp"
        found[f"{base}_PORT"] = str(service.port)
        found[f"{base}_ADDR"] = service.cluster_ip
    return found


def container_env(pod: PodContext, container: dict[str, Any], where: str) -> dict[str, str]:
    image = image_of(container, where)
    env = dict(image.env)
    env["HOSTNAME"] = pod.name
    if pod.spec.get("enableServiceLinks", True):
        env.update(service_links(pod.services))
    for index, entry in enumerate(container.get("env", [])):
        if "valueFrom" in entry:
            raise ConfigError(f"{where}.env[{index}].valueFrom: not simulated by the rehearsal")
        env[entry["name"]] = expand(entry.get("value", ""), env)
    env.update(pod.added_env)
    return env


def image_of(container: dict[str, Any], where: str) -> ImageStandIn:
    image = IMAGES.get(container["image"])
    if image is None:
        raise ConfigError(
            f"{where}.image: {container['image']!r} is not an image the rehearsal has"
        )
    return image


def plan(pod: PodContext, container: dict[str, Any], where: str) -> ContainerRun:
    image = image_of(container, where)
    granted = privileges(pod.spec, container, image, where)
    env = container_env(pod, container, where)
    argv = [expand(part, env) for part in [*container["command"], *container.get("args", [])]]
    mounts = []
    for index, mount in enumerate(container.get("volumeMounts", [])):
        at = f"{where}.volumeMounts[{index}]"
        source = pod.volumes.directories.get(mount["name"])
        if source is None:
            raise ConfigError(f"{at}.name: no volume {mount['name']!r}")
        unknown = sorted(set(mount) - MOUNT_KEYS)
        if unknown:
            raise ConfigError(f"{at}.{unknown[0]}: not simulated by the rehearsal")
        mounts.append(
            {
                "source": str(source),
                "target": mount["mountPath"],
                "readonly": bool(mount.get("readOnly", False)),
            }
        )
    unmasked = granted.unmasked_proc
    seccomp = pod.seccomp[where]
    document = {
        "root": str(pod.directory / container["name"] / "root"),
        "scratch": str(pod.directory / container["name"] / "scratch"),
        "layers": layers(),
        "privileged": granted.privileged,
        "proc_readonly": [] if unmasked else list(READONLY_PATHS),
        "masked": [] if unmasked else list(MASKED_PATHS),
        "stand_ins": [{**s, "readonly": not granted.privileged} for s in pod.stand_ins],
        # Both files as the kubelet and containerd give them, writable as there.
        "files": [
            {"source": str(pod.hosts_file), "target": "/etc/hosts", "readonly": False},
            {"source": str(pod.resolv_conf), "target": "/etc/resolv.conf", "readonly": False},
        ],
        "volumes": mounts,
        "read_only_root": granted.read_only_root,
        "hostname": pod.name[:63],
        "workdir": container.get("workingDir", "/"),
        "env": env,
        "setpriv": granted.setpriv_args(),
        "seccomp": None
        if seccomp.file is None
        else {"profile": str(seccomp.file), "no_new_privs": granted.no_new_privs},
        "argv": argv,
    }
    for key in ("root", "scratch"):
        Path(str(document[key])).mkdir(parents=True)
    plan_file = pod.directory / container["name"] / "plan.json"
    plan_file.write_text(json.dumps(document), encoding="utf-8")
    return ContainerRun(container["name"], container["image"], where, granted, seccomp, env)


def start(pod: PodContext, run: ContainerRun) -> subprocess.Popen[str]:
    plan_file = pod.directory / run.name / "plan.json"
    return subprocess.Popen(
        [*UNSHARE, sys.executable, "-I", container_init.__file__, str(plan_file)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )


def follow(
    process: subprocess.Popen[str], run: ContainerRun, echo: TextIO | None
) -> threading.Thread:
    """Reads the container's output into its log (and echoes it, as `kubectl logs -f`)."""

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            run.log.append(line.rstrip("\n"))
            if echo is not None:
                print(line, end="", file=echo, flush=True)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def run_to_completion(
    pod: PodContext, run: ContainerRun, deadline_seconds: float, echo: TextIO | None
) -> int:
    process = start(pod, run)
    reader = follow(process, run, echo)
    try:
        code = process.wait(timeout=deadline_seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
        run.log.append(f"rehearsal: the container ran past its {deadline_seconds:.0f}s deadline")
    reader.join(timeout=10)
    run.exit_code = code
    return code


def wait_ready(probe: Callable[[], bool], process: subprocess.Popen[str], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        if probe():
            return True
        time.sleep(0.1)
    return False
