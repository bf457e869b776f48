"""A container's identity and privileges, from its pod's and its own securityContext, as the
kubelet and the container runtime apply them; and every field the rehearsal does not simulate.

- runAsUser/runAsGroup/runAsNonRoot: the container's value over the pod's, else the image's
  user; runAsNonRoot refuses a uid 0 before the container starts (CreateContainerConfigError).
- fsGroup: a supplementary group of the container's processes.
  https://kubernetes.io/docs/tasks/configure-pod-container/security-context/
- privileged: every capability, the host's devices, /proc and /sys unmasked and writable.
  Otherwise the runtime's default capabilities (containerd's list) with `capabilities.add` and
  `.drop` applied, and its masked and read-only /proc and /sys paths unless `procMount:
  Unmasked`. https://kubernetes.io/docs/concepts/security/linux-kernel-security-constraints/
- allowPrivilegeEscalation: false sets no_new_privs.
- readOnlyRootFilesystem: the image's filesystem read-only, the volumes as mounted.
- seccompProfile: the profile the runtime loads, chosen in rehearsal/seccomp_profiles.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from .image_stand_in import ImageStandIn

# containerd's default capability set for a container (oci/spec_opts.go, defaultUnixCaps).
DEFAULT_CAPS: Final = (
    "CHOWN",
    "DAC_OVERRIDE",
    "FSETID",
    "FOWNER",
    "MKNOD",
    "NET_RAW",
    "SETGID",
    "SETUID",
    "SETFCAP",
    "SETPCAP",
    "NET_BIND_SERVICE",
    "SYS_CHROOT",
    "KILL",
    "AUDIT_WRITE",
)
# containerd's masked and read-only paths for an unprivileged container (oci/spec.go).
MASKED_PATHS: Final = (
    "/proc/acpi",
    "/proc/asound",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
)
READONLY_PATHS: Final = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")

# Fields the rehearsal applies, by the path under a pod spec or a container.
POD_SIMULATED: Final = frozenset(
    {
        "containers",
        "initContainers",
        "volumes",
        "securityContext",
        "restartPolicy",
        "serviceAccountName",
        "automountServiceAccountToken",
        "enableServiceLinks",
    }
)
POD_SECURITY_SIMULATED: Final = frozenset(
    {"runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup", "seccompProfile"}
)
CONTAINER_SIMULATED: Final = frozenset(
    {"name", "image", "command", "args", "workingDir", "env", "volumeMounts", "securityContext"}
)
CONTAINER_SECURITY_SIMULATED: Final = frozenset(
    {
        "privileged",
        "runAsUser",
        "runAsGroup",
        "runAsNonRoot",
        "readOnlyRootFilesystem",
        "allowPrivilegeEscalation",
        "capabilities",
        "procMount",
        "seccompProfile",
    }
)
# Why a field is not simulated, where there is more to say than "not simulated".
REASONS: Final = {
    "runtimeClassName": "no Nitro VM here: every pod runs on this machine's kernel",
    "affinity": "no scheduler: every pod runs on this one machine",
    "appArmorProfile": "no AppArmor profile is loaded",
    "seLinuxOptions": "no SELinux labels",
    "hostUsers": (
        "no user namespace for the pod, so its uids are this machine's: the rehearsal does not "
        "show that root in this pod is not root on the node, the protection an unmasked /proc "
        "relies on, nor the kubelet's idmapped volume mounts; bwrap's own user namespaces "
        "inside the container are real"
    ),
    "resources": "requests and limits are not enforced",
    "ports": "informational: the Services reach the pod directly",
    "readinessProbe": "applied by the rehearsal to the supplier pod before the Jobs start",
}


class ConfigError(ValueError):
    """The kubelet would not start this container (CreateContainerConfigError)."""


@dataclass(frozen=True)
class Privileges:
    uid: int
    gid: int
    groups: tuple[int, ...]
    privileged: bool
    capabilities: tuple[str, ...]  # the bounding set
    no_new_privs: bool
    read_only_root: bool
    unmasked_proc: bool

    def setpriv_args(self) -> list[str]:
        """util-linux setpriv: bounding set, groups, gid and uid, then no_new_privs."""
        args = []
        if not self.privileged:
            caps = ",".join(f"+{cap.lower()}" for cap in self.capabilities)
            args += ["--bounding-set", "-all" + (f",{caps}" if caps else "")]
        args += ["--inh-caps", "-all"]
        if self.groups:
            args += ["--groups", ",".join(str(g) for g in self.groups)]
        else:
            args += ["--clear-groups"]
        args += ["--regid", str(self.gid), "--reuid", str(self.uid)]
        if self.no_new_privs:
            args.append("--nnp")
        return args


def privileges(
    pod: dict[str, Any], container: dict[str, Any], image: ImageStandIn, where: str
) -> Privileges:
    """`where` is the container's field path, for the message of a refusal."""
    pod_sc = pod.get("securityContext") or {}
    sc = container.get("securityContext") or {}

    def pick(key: str, default: Any) -> Any:
        return sc.get(key, pod_sc.get(key, default))

    uid, gid = pick("runAsUser", image.user), pick("runAsGroup", image.group)
    if pick("runAsNonRoot", False) and uid == 0:
        raise ConfigError(
            f"{where}.securityContext: runAsNonRoot is set and the container would run as uid 0"
        )
    privileged = bool(sc.get("privileged", False))
    fs_group = pod_sc.get("fsGroup")
    capabilities = sc.get("capabilities") or {}
    drop, add = set(capabilities.get("drop", [])), set(capabilities.get("add", []))
    caps = set() if "ALL" in drop else set(DEFAULT_CAPS) - drop
    caps |= add
    return Privileges(
        uid=uid,
        gid=gid,
        groups=() if fs_group is None else (fs_group,),
        privileged=privileged,
        capabilities=tuple(sorted(caps)),
        no_new_privs=sc.get("allowPrivilegeEscalation") is False,
        read_only_root=bool(sc.get("readOnlyRootFilesystem", False)),
        unmasked_proc=privileged or sc.get("procMount") == "Unmasked",
    )


def not_simulated(pod: dict[str, Any], where: str) -> list[str]:
    """Every field present in the pod spec that the rehearsal does not apply, with why."""
    found = []
    for key, value in pod.items():
        if key not in POD_SIMULATED:
            found.append(_line(f"{where}.{key}", key, value))
    for key, value in (pod.get("securityContext") or {}).items():
        if key not in POD_SECURITY_SIMULATED:
            found.append(_line(f"{where}.securityContext.{key}", key, value))
    for kind in ("initContainers", "containers"):
        for index, container in enumerate(pod.get(kind, [])):
            at = f"{where}.{kind}[{index}]"
            for key, value in container.items():
                if key not in CONTAINER_SIMULATED:
                    found.append(_line(f"{at}.{key}", key, value))
            for key, value in (container.get("securityContext") or {}).items():
                if key not in CONTAINER_SECURITY_SIMULATED:
                    found.append(_line(f"{at}.securityContext.{key}", key, value))
    return found


def _line(path: str, key: str, value: Any) -> str:
    shown = value if isinstance(value, str | int | bool) else _brief(value)
    return f"{path}={shown}: {REASONS.get(key, 'not simulated by the rehearsal')}"


def _brief(value: Any) -> str:
    if isinstance(value, dict):
        if "type" in value:
            return str(value["type"])
        return "{" + ", ".join(sorted(value)) + "}"
    return f"[{len(value)} entries]" if isinstance(value, list) else str(value)
