"""Which seccomp profile the container runtime gives each container, and the node's profile files.

How a container's profile is chosen (Kubernetes passes the field to the runtime through the CRI;
containerd's `GenerateSeccompSpecOpts` in its CRI plugin decides):
- the container's `securityContext.seccompProfile`, else the pod's
  (https://kubernetes.io/docs/tutorials/security/seccomp/);
- a privileged container gets none, whatever either names: containerd's "Do not set seccomp
  profile when container is privileged";
- `RuntimeDefault`: containerd's default profile, which the hardened container's builder states
  as its base (`container_seccomp_profile(())`, app/tools/bubblewrap/container_seccomp.py);
- `Localhost`: the file `localhostProfile` names under the kubelet's seccomp root
  (/var/lib/kubelet/seccomp); without that file the runtime cannot create the container;
- `Unconfined`, or no field at all: none (the kubelet's `seccompDefault` is off by default).

The node's files: the Security Profiles Operator writes each cluster-scoped SeccompProfile
object's spec to every node as `operator/<name>.json` under that root. The rehearsal installs no
operator (nor cert-manager, which the operator's webhook needs): it writes each object's spec
there itself, in the committed file's own format, so the file a pod's container loads is the
profile its object carries, and checks that profile against the committed one, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from app.tools.bubblewrap.container_seccomp import (
    NAMESPACE_FLAGS,
    Widening,
    container_seccomp_profile,
)
from infra.security_profiles import SECCOMP_POLICY, SPO_API_VERSION

from .security import ConfigError

# Where the kubelet looks for Localhost profiles, and where the operator writes its own.
KUBELET_SECCOMP_ROOT: Final = "/var/lib/kubelet/seccomp"
OPERATOR_DIR: Final = "operator"
RUNTIME_DEFAULT_FILE: Final = "runtime-default.json"
ALLOW: Final = "SCMP_ACT_ALLOW"


def profile_text(profile: Mapping[str, Any]) -> str:
    """A profile as the project commits it (app/tools/bubblewrap/render.py's format)."""
    return json.dumps(profile, indent=2) + "\n"


@dataclass(frozen=True)
class InstalledProfile:
    """One SeccompProfile object, as the operator stand-in wrote it on the node."""

    name: str
    path: Path  # on the rehearsal's node
    text: str

    @property
    def node_path(self) -> str:
        return f"{KUBELET_SECCOMP_ROOT}/{OPERATOR_DIR}/{self.name}.json"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def committed_difference(self) -> str:
        """'' when the profile is the committed file byte for byte, else how it differs."""
        committed = SECCOMP_POLICY.read_text(encoding="utf-8")
        if self.text == committed:
            return ""
        theirs, ours = json.loads(self.text), json.loads(committed)
        rules = {name for rule in ours.get("syscalls", []) for name in rule["names"]}
        kept = {name for rule in theirs.get("syscalls", []) for name in rule["names"]}
        parts = []
        if rules - kept:
            parts.append(f"it names no {', '.join(sorted(rules - kept))}")
        if kept - rules:
            parts.append(f"it adds {', '.join(sorted(kept - rules))}")
        return "; ".join(parts) or "the two differ in their rules' actions or arguments"


@dataclass(frozen=True)
class Node:
    """The rehearsal's node: the kubelet's seccomp root and the runtime's default profile."""

    seccomp_root: Path
    runtime_default: Path
    installed: tuple[InstalledProfile, ...]

    def localhost(self, name: str) -> Path | None:
        path = (self.seccomp_root / name).resolve()
        inside = path.is_relative_to(self.seccomp_root.resolve())
        return path if inside and path.is_file() else None


def prepare_node(directory: Path, objects: Iterable[Mapping[str, Any]]) -> Node:
    """The runtime's default profile, and each SeccompProfile's spec where the operator puts it."""
    root = directory / "kubelet-seccomp"
    (root / OPERATOR_DIR).mkdir(parents=True)
    runtime_default = directory / RUNTIME_DEFAULT_FILE
    runtime_default.write_text(profile_text(container_seccomp_profile(())), encoding="utf-8")
    installed = []
    for manifest in objects:
        if manifest["kind"] == "SeccompProfile" and manifest["apiVersion"] == SPO_API_VERSION:
            name = manifest["metadata"]["name"]
            path = root / OPERATOR_DIR / f"{name}.json"
            text = profile_text(manifest["spec"])
            path.write_text(text, encoding="utf-8")
            installed.append(InstalledProfile(name, path, text))
    for path in [runtime_default, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return Node(root, runtime_default, tuple(installed))


@dataclass(frozen=True)
class SeccompChoice:
    """The profile one container gets, the field that chose it, and the file loaded (if any)."""

    kind: str  # RuntimeDefault, Localhost, Unconfined, or none
    field: str  # e.g. spec.template.spec.securityContext.seccompProfile, '' when none is set
    file: Path | None
    source: str  # where the profile comes from, or why there is none

    def describe(self) -> str:
        chosen = f" ({self.field})" if self.field else ""
        loaded = ", loaded before the command runs" if self.file is not None else ""
        return f"{self.kind}{chosen}: {self.source}{loaded}"

    def profile(self) -> dict[str, Any] | None:
        if self.file is None:
            return None
        loaded: dict[str, Any] = json.loads(self.file.read_text(encoding="utf-8"))
        return loaded


def choose(
    pod: Mapping[str, Any], container: Mapping[str, Any], *, pod_where: str, where: str, node: Node
) -> SeccompChoice:
    """The profile containerd gives this container; ConfigError when the node lacks its file."""
    privileged = bool((container.get("securityContext") or {}).get("privileged", False))
    own = (container.get("securityContext") or {}).get("seccompProfile")
    pods = (pod.get("securityContext") or {}).get("seccompProfile")
    field, chosen = (
        (f"{where}.securityContext.seccompProfile", own)
        if own
        else (f"{pod_where}.securityContext.seccompProfile", pods)
        if pods
        else ("", None)
    )
    if privileged:
        return SeccompChoice(
            "none", "", None, "a privileged container gets no profile from containerd"
        )
    kind = (chosen or {}).get("type")
    if kind == "RuntimeDefault":
        return SeccompChoice(kind, field, node.runtime_default, "containerd's default profile")
    if kind == "Localhost":
        name = str(chosen.get("localhostProfile", ""))  # type: ignore[union-attr]
        path = node.localhost(name)
        if path is None:
            raise ConfigError(
                f"{field}.localhostProfile: {name} is not on the node ({KUBELET_SECCOMP_ROOT}/"
                f"{name}: no SeccompProfile object of the stack puts it there), so the runtime "
                "cannot create the container"
            )
        return SeccompChoice(
            kind, field, path, f"{KUBELET_SECCOMP_ROOT}/{name}, {_origin(node, path)}"
        )
    if kind is None:
        return SeccompChoice("none", "", None, "no seccompProfile is set: the kubelet's default")
    return SeccompChoice(str(kind), field, None, "no profile")


def _origin(node: Node, path: Path) -> str:
    for installed in node.installed:
        if installed.path == path:
            return f"the spec of SeccompProfile {installed.name} (sha256 {installed.sha256[:12]}…)"
    return "a file no SeccompProfile object wrote"


def allows(profile: Mapping[str, Any], widening: Widening) -> bool:
    """Whether the profile lets the widening's call through: a rule allowing the syscall whose
    conditions hold for the flags it needs (index 0; a condition on another argument counts as
    not holding, so the answer errs towards 'refused')."""
    flags = sum(NAMESPACE_FLAGS[flag] for flag in widening.flags)
    for rule in profile.get("syscalls", []):
        if rule.get("action") != ALLOW or widening.syscall not in rule.get("names", []):
            continue
        if all(_holds(condition, flags) for condition in rule.get("args") or []):
            return True
    return profile.get("defaultAction") == ALLOW


def _holds(condition: Mapping[str, Any], value: int) -> bool:
    if condition.get("index") != 0:
        return False
    operand, second = int(condition.get("value", 0)), int(condition.get("valueTwo", 0))
    match condition.get("op"):
        case "SCMP_CMP_EQ":
            return value == operand
        case "SCMP_CMP_LT":
            return value < operand
        case "SCMP_CMP_GT":
            return value > operand
        case "SCMP_CMP_MASKED_EQ":
            return value & operand == second
    return False
