"""A new EKS Auto Mode cluster in the stack's VPC, made by pulumi-eks, with the creator's admin
grant as the stack config says.

pulumi-eks's `eks.Cluster` (a multi-language component: its resources are made by the
pulumi-eks plugin, not in this process) makes the cluster, its service role and Auto Mode's node
role, with Auto Mode's built-in node pools (`general-purpose`, `system`) and the access entries
given here. Two settings are set explicitly rather than left to its defaults:

- the creator's admin grant. With an authentication mode set, pulumi-eks always creates the
  EKS cluster with `accessConfig.bootstrapClusterCreatorAdminPermissions: true` and has no
  input for it (pulumi/pulumi-eks `nodejs/eks/cluster/cluster.ts`, `createCore`, the
  `accessConfig` of its `aws.eks.Cluster`; the Python SDK's `ClusterArgs` has no such field).
  With `clusterCreatorAdmin: false` (the default) a transform on the component sets it to false
  on that child (transforms reach the children of packaged components:
  https://www.pulumi.com/docs/iac/concepts/options/transformations/), and the deploying identity
  gets a managed access entry with AmazonEKSClusterAdminPolicy instead. With `true`, EKS makes
  its own unmanaged admin entry for the creator, and no second entry is made for the same
  principal (EKS allows one access entry per principal and cluster).
- the CoreDNS add-on: pulumi-eks adds it to an Auto Mode cluster unless told not to
  (`cluster.ts`, the `corednsAddonOptions` check); Auto Mode runs DNS on the node itself, which
  is the resolver the egress policy allows by address (infra/egress.py).

Auto Mode roles and settings: https://docs.aws.amazon.com/eks/latest/userguide/create-cluster-auto.html
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks

CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
# The child of eks.Cluster that is the EKS cluster itself, and the field pulumi-eks pins.
EKS_CLUSTER_TYPE = "aws:eks/cluster:Cluster"
CREATOR_ADMIN_FIELD = "bootstrapClusterCreatorAdminPermissions"
# Auto Mode's node pools, both built in: the analyst's pods land on general-purpose nodes.
NODE_POOLS = ("general-purpose", "system")


@dataclass(frozen=True)
class AutoModeSettings:
    """What a created cluster is made from: its name, version, network and who administers it."""

    name: str
    kubernetes_version: str
    vpc_id: str
    subnet_ids: tuple[str, ...]
    # clusterCreatorAdmin: EKS's own admin entry for the identity that creates the cluster.
    creator_admin: bool = False
    # The deploying identity's AWS profile and role, for pulumi-eks's own kubeconfig.
    aws_profile: str = ""
    aws_role_arn: str = ""


def without_creator_admin(
    args: pulumi.ResourceTransformArgs,
) -> pulumi.ResourceTransformResult | None:
    """Turns EKS's implicit admin for the cluster's creator off on pulumi-eks's EKS cluster; every
    other resource is left as it is. The props arrive as the engine names them (camelCase)."""
    if args.type_ != EKS_CLUSTER_TYPE:
        return None
    access = args.props.get("accessConfig")
    if not isinstance(access, dict):
        # pulumi-eks sets it as a plain object whenever an authentication mode is set.
        raise TypeError(f"{args.name}: accessConfig is {access!r}, not the object pulumi-eks sets")
    access = {**access, CREATOR_ADMIN_FIELD: False}
    return pulumi.ResourceTransformResult(
        props={**args.props, "accessConfig": access}, opts=args.opts
    )


class AutoModeCluster(pulumi.ComponentResource):
    """The pulumi-eks cluster and what the stack reads of it."""

    cluster: eks.Cluster
    cluster_name: pulumi.Output[str]
    cluster_arn: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    ca_data: pulumi.Output[str]
    # The IAM principal given the managed admin entry; empty with the creator's own grant.
    admin_principal_arn: pulumi.Output[str]
    # The service CIDR EKS chose (none is set here), which places the cluster DNS address.
    service_cidr: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        settings: AutoModeSettings,
        aws_provider: aws.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:cluster:AutoModeCluster", name, None, opts)
        invoke = pulumi.InvokeOutputOptions(parent=self, provider=aws_provider)
        access_entries: dict[str, eks.AccessEntryArgs] = {}
        if settings.creator_admin:
            self.admin_principal_arn = pulumi.Output.from_input("")
        else:
            # The deploying identity as IAM knows it: an assumed role's session ARN names the role.
            caller = aws.get_caller_identity_output(opts=invoke)
            principal = aws.iam.get_session_context_output(arn=caller.arn, opts=invoke).issuer_arn
            partition = aws.get_partition_output(opts=invoke).partition
            admin_policy = pulumi.Output.concat(
                "arn:", partition, ":eks::aws:cluster-access-policy/", CLUSTER_ADMIN_POLICY
            )
            access_entries["deployer"] = eks.AccessEntryArgs(
                principal_arn=principal,
                access_policies={
                    "admin": eks.AccessPolicyAssociationArgs(
                        policy_arn=admin_policy,
                        access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                    )
                },
            )
            self.admin_principal_arn = principal
        self.cluster = eks.Cluster(
            f"{name}-eks",
            name=settings.name,
            version=settings.kubernetes_version,
            vpc_id=settings.vpc_id,
            subnet_ids=list(settings.subnet_ids),
            endpoint_private_access=True,
            endpoint_public_access=True,
            authentication_mode=eks.AuthenticationMode.API,
            access_entries=access_entries,
            # Auto Mode: compute, block storage and load balancing together; EKS manages the
            # node's networking, DNS and the Pod Identity agent itself.
            auto_mode=eks.AutoModeOptionsArgs(
                enabled=True,
                compute_config=eks.ClusterComputeConfigArgs(node_pools=list(NODE_POOLS)),
            ),
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
            # pulumi-eks refuses an explicit AWS provider without these: its own kubeconfig
            # (and Kubernetes provider) then acts as the same identity as the stack.
            provider_credential_opts=eks.KubeconfigOptionsArgs(
                profile_name=settings.aws_profile or None,
                role_arn=settings.aws_role_arn or None,
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                providers={"aws": aws_provider},
                transforms=[] if settings.creator_admin else [without_creator_admin],
            ),
        )
        created = self.cluster.eks_cluster
        self.cluster_name = created.apply(lambda cluster: cluster.name)
        self.cluster_arn = created.apply(lambda cluster: cluster.arn)
        self.endpoint = created.apply(lambda cluster: cluster.endpoint)
        self.ca_data = created.apply(lambda cluster: cluster.certificate_authority.data)
        # Known once EKS has made the cluster (unknown in a preview).
        self.service_cidr = created.apply(
            lambda cluster: cluster.kubernetes_network_config.apply(_service_ipv4_cidr)
        )
        self.register_outputs(
            {
                "cluster_name": self.cluster_name,
                "cluster_arn": self.cluster_arn,
                "endpoint": self.endpoint,
                "ca_data": self.ca_data,
                "admin_principal_arn": self.admin_principal_arn,
            }
        )


def _service_ipv4_cidr(network: Any) -> str:
    return str(network.service_ipv4_cidr or "") if network else ""
