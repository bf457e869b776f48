"""What the hardened-container target installs so the nodes hold bwrap's profiles: pure builders.

The Kubernetes Security Profiles Operator (SPO) writes each SeccompProfile object to every node
as /var/lib/kubelet/seccomp/operator/<name>.json, where a pod references it with
`seccompProfile: {type: Localhost, localhostProfile: operator/<name>.json}` (SPO v1.0.0,
installation-usage.md, "Use Seccomp profile"). The program installs SPO from its Helm chart,
and cert-manager first, which SPO's webhook certificate needs (same document, "Installation
using helm"). The profile's rules are the committed policy file, read here, never retyped.

Not delivered by SPO: the AppArmor profile. SPO's AppArmorProfile (v1.0.0, api/apparmorprofile/
v1) takes only an abstract allow list (executables, file paths, network, capabilities) from
which SPO writes a template with no pivot_root rule and no mount rules but a blanket one behind
a capability; bwrap's pivot_root and mounts cannot be expressed. Nodes that enforce AppArmor
load policies/bubblewrap/container-apparmor.profile themselves (docs/deploying.md), and
`nodeAppArmor` makes the pod reference it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
SECCOMP_POLICY: Final = REPO_ROOT / "policies" / "bubblewrap" / "container-seccomp.json"
APPARMOR_POLICY: Final = REPO_ROOT / "policies" / "bubblewrap" / "container-apparmor.profile"

SPO_API_VERSION: Final = "security-profiles-operator.x-k8s.io/v1"
# The operator's CRD for SeccompProfile objects: a cluster that has it runs the operator.
SECCOMP_PROFILE_CRD: Final = "seccompprofiles.security-profiles-operator.x-k8s.io"
SPO_VERSION: Final = "1.0.0"
SPO_NAMESPACE: Final = "security-profiles-operator"
CERT_MANAGER_VERSION: Final = "v1.17.2"
CERT_MANAGER_NAMESPACE: Final = "cert-manager"
# Makes `pulumi up` wait until SPO reports the profile written to the nodes, so no Job starts
# before its node holds the profile (pulumi-kubernetes' waitFor annotation).
WAIT_FOR_INSTALLED: Final = {"pulumi.com/waitFor": "jsonpath={.status.status}=Installed"}


@dataclass(frozen=True)
class HelmChart:
    """One Helm release the program installs: pinned chart, namespace and values."""

    release: str
    chart: str
    version: str
    namespace: str
    repository: str | None = None
    values: dict[str, Any] = field(default_factory=dict)


CERT_MANAGER: Final = HelmChart(
    release="cert-manager",
    chart="cert-manager",
    version=CERT_MANAGER_VERSION,
    namespace=CERT_MANAGER_NAMESPACE,
    repository="https://charts.jetstack.io",
    values={"crds": {"enabled": True}},
)
SECURITY_PROFILES_OPERATOR: Final = HelmChart(
    release="security-profiles-operator",
    # The chart is published as an asset of each release, not in a repository.
    chart=(
        "https://github.com/kubernetes-sigs/security-profiles-operator/releases/download/"
        f"v{SPO_VERSION}/security-profiles-operator-{SPO_VERSION}.tgz"
    ),
    version=SPO_VERSION,
    namespace=SPO_NAMESPACE,
    values={
        # The chart's own default is a staging build tagged `latest`; pin the release image.
        "spoImage": {
            "registry": "registry.k8s.io",
            "repository": "security-profiles-operator/security-profiles-operator",
            "tag": f"v{SPO_VERSION}",
        },
        # Seccomp only: its AppArmorProfile cannot carry bwrap's rules (see above).
        "enableAppArmor": False,
        "enableSelinux": False,
        "enableBpfRecorder": False,
        "enableLogEnricher": False,
    },
)


def seccomp_profile_name(namespace: str) -> str:
    """One profile per stack: SeccompProfile objects are cluster-scoped in SPO v1."""
    return f"{namespace}-bwrap"


def localhost_seccomp_profile(namespace: str) -> str:
    """What the pod's `localhostProfile` names: the file SPO writes on each node."""
    return f"operator/{seccomp_profile_name(namespace)}.json"


def committed_seccomp_profile() -> dict[str, Any]:
    profile: dict[str, Any] = json.loads(SECCOMP_POLICY.read_text(encoding="utf-8"))
    return profile


def seccomp_profile_object(namespace: str) -> dict[str, Any]:
    """The SeccompProfile object: the committed profile as its spec (SPO takes the OCI shape)."""
    return {
        "apiVersion": SPO_API_VERSION,
        "kind": "SeccompProfile",
        "metadata": {
            "name": seccomp_profile_name(namespace),
            "labels": {
                "app.kubernetes.io/name": "analyst",
                "app.kubernetes.io/part-of": "procurement-analyst",
                "app.kubernetes.io/managed-by": "pulumi",
            },
            "annotations": dict(WAIT_FOR_INSTALLED),
        },
        "spec": committed_seccomp_profile(),
    }


def apparmor_profile_name() -> str:
    """The name the committed AppArmor profile declares, which the pod references."""
    text = APPARMOR_POLICY.read_text(encoding="utf-8")
    match = re.search(r"^profile (\S+) flags=", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"{APPARMOR_POLICY} declares no profile")
    return match[1]
