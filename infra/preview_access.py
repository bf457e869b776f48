"""What a `pulumi preview` of the stack reads from the cluster, as the RBAC rules of the preview
identity's ClusterRole: pure, from the stack's settings.

A preview creates nothing, but it reads the cluster-scoped objects the program looks up with
`.get` (the isolated-sandbox RuntimeClass, Auto Mode's default NodeClass, the Security Profiles
Operator's CRD, the amazon-vpc-cni ConfigMap), and Kubernetes' `view` ClusterRole, which EKS's
AmazonEKSViewPolicy mirrors, grants none of the cluster-scoped ones
(https://docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html). So the preview
identity's access entry names a Kubernetes group instead of an access policy, and the stack binds
that group to a ClusterRole of exactly these reads: `get` on each object by name, nothing else
(https://docs.aws.amazon.com/eks/latest/userguide/creating-access-entries.html: an entry's
kubernetesGroups take their permissions from the cluster's RBAC bindings).

The preview's other requests need no rule: API discovery and the server's version are granted
to every authenticated user (`system:discovery`, `system:public-info-viewer`;
https://kubernetes.io/docs/reference/access-authn-authz/rbac/#default-roles-and-role-bindings),
and where pulumi-kubernetes' server-side dry run is forbidden it falls back to a client-side
preview (https://github.com/pulumi/pulumi-kubernetes/pull/2419).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from .config import ClusterAddons, ClusterMode, StackConfig
from .egress import NODE_CLASS, VPC_CNI_CONFIGMAP
from .security_profiles import SECCOMP_PROFILE_CRD
from .targets import SANDBOX_RUNTIME_CLASS, RuntimeTarget, needs_security_profiles

READ_VERBS: Final = ("get",)


@dataclass(frozen=True)
class Read:
    """One object a preview reads: its API group, resource (plural) and name."""

    api_group: str
    resource: str
    name: str
    namespace: str = ""  # "" for a cluster-scoped object


def preview_reads(config: StackConfig) -> list[Read]:
    """Every object the program reads from the cluster in a preview, for these settings."""
    reads = []
    sandboxed = config.runtime_target is RuntimeTarget.ISOLATED_SANDBOX
    # A created cluster's RuntimeClass is read in `up` only (infra/components/cluster.py).
    if sandboxed and config.cluster_mode is ClusterMode.EXISTING:
        reads.append(Read("node.k8s.io", "runtimeclasses", SANDBOX_RUNTIME_CLASS))
    if config.egress_policy:
        namespace, name = VPC_CNI_CONFIGMAP
        reads.append(Read("", "configmaps", name, namespace))
        reads.append(Read("eks.amazonaws.com", "nodeclasses", NODE_CLASS))
    if (
        needs_security_profiles(config.runtime_target, config.layers)
        and config.cluster_addons is ClusterAddons.EXISTING
    ):
        reads.append(Read("apiextensions.k8s.io", "customresourcedefinitions", SECCOMP_PROFILE_CRD))
    return reads


def preview_rules(reads: list[Read]) -> list[dict[str, Any]]:
    """One RBAC rule per object read: `get` by name. A ClusterRole's rule on a namespaced
    resource by name grants it in every namespace; only kube-system has an amazon-vpc-cni."""
    return [
        {
            "apiGroups": [read.api_group],
            "resources": [read.resource],
            "resourceNames": [read.name],
            "verbs": list(READ_VERBS),
        }
        for read in reads
    ]


def preview_group(namespace: str) -> str:
    """The Kubernetes group the preview identity's access entry names (never `system:`)."""
    return f"procurement-analyst:{namespace}:preview"


def preview_cluster_role(namespace: str) -> str:
    """The ClusterRole's name: one per stack namespace, so two stacks of a cluster never share
    or overwrite it."""
    return f"{namespace}-preview-reads"
