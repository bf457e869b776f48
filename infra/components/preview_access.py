"""The preview identity's access to the cluster: an EKS access entry naming a Kubernetes group,
and a ClusterRole of exactly the reads a preview makes (infra/preview_access.py) bound to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ..pod_specs import labels
from ..preview_access import Read, preview_cluster_role, preview_group, preview_rules


@dataclass(frozen=True)
class PreviewAccessSettings:
    namespace: str
    # The IAM role pull-request previews run as (previewRoleArn).
    principal_arn: str
    reads: tuple[Read, ...]


class PreviewAccess(pulumi.ComponentResource):
    """A STANDARD access entry for the preview role with the group `preview_group`, and no EKS
    access policy: its permissions are the ClusterRole `preview_cluster_role` alone."""

    cluster_role: pulumi.Output[str]
    group: str

    def __init__(
        self,
        name: str,
        settings: PreviewAccessSettings,
        *,
        cluster_name: pulumi.Input[str],
        aws_provider: aws.Provider,
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:cluster:PreviewAccess", name, None, opts)
        self.group = preview_group(settings.namespace)
        role_name = preview_cluster_role(settings.namespace)
        metadata = {"name": role_name, "labels": labels("preview")}
        k8s_opts = pulumi.ResourceOptions(
            parent=self, provider=kubernetes, depends_on=opts.depends_on if opts else None
        )
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-reads",
            metadata=cast("k8s.meta.v1.ObjectMetaArgsDict", metadata),
            rules=cast("list[k8s.rbac.v1.PolicyRuleArgsDict]", preview_rules(list(settings.reads))),
            opts=k8s_opts,
        )
        binding: dict[str, Any] = {
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role_name,
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": self.group}
            ],
        }
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata=cast("k8s.meta.v1.ObjectMetaArgsDict", metadata),
            role_ref=cast("k8s.rbac.v1.RoleRefArgsDict", binding["roleRef"]),
            subjects=cast("list[k8s.rbac.v1.SubjectArgsDict]", binding["subjects"]),
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[role])),
        )
        aws.eks.AccessEntry(
            f"{name}-entry",
            cluster_name=cluster_name,
            principal_arn=settings.principal_arn,
            type="STANDARD",
            kubernetes_groups=[self.group],
            opts=pulumi.ResourceOptions(parent=self, provider=aws_provider),
        )
        self.cluster_role = role.metadata.name
        self.register_outputs({"cluster_role": self.cluster_role})
