"""A new EKS Auto Mode cluster in the stack's VPC, with an access entry for the deploying identity.

Built from the AWS provider's own resources rather than a higher-level component so that two
settings stay explicit: the subnets (never a default VPC) and the access (EKS's implicit
cluster-creator admin is turned off; the deploying identity gets an explicit, managed access
entry instead, so another identity running `pulumi up` later is a visible change).
Auto Mode roles and settings: https://docs.aws.amazon.com/eks/latest/userguide/create-cluster-auto.html
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws


@dataclass(frozen=True)
class AutoModeSettings:
    """What a created cluster is made from: its name, version and network."""

    name: str
    kubernetes_version: str
    vpc_id: str
    subnet_ids: tuple[str, ...]


# Auto Mode's node pools, both built in: the analyst's pods land on general-purpose nodes.
NODE_POOLS = ["general-purpose", "system"]

# Managed policies the cluster role needs for Auto Mode's compute, storage, load balancing and
# networking, and the node role for joining and pulling images.
CLUSTER_POLICIES = (
    "AmazonEKSClusterPolicy",
    "AmazonEKSComputePolicy",
    "AmazonEKSBlockStoragePolicy",
    "AmazonEKSLoadBalancingPolicy",
    "AmazonEKSNetworkingPolicy",
)
NODE_POLICIES = ("AmazonEKSWorkerNodeMinimalPolicy", "AmazonEC2ContainerRegistryPullOnly")
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


def service_trust_policy(service: str, *actions: str) -> str:
    """A trust policy letting one AWS service principal assume the role."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)}
            ],
        }
    )


class AutoModeCluster(pulumi.ComponentResource):
    """The cluster, its two roles, and the deploying identity's access entry."""

    cluster_name: pulumi.Output[str]
    cluster_arn: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    ca_data: pulumi.Output[str]
    admin_principal_arn: pulumi.Output[str]
    admin_access: aws.eks.AccessPolicyAssociation
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
        self._opts = pulumi.ResourceOptions(parent=self, provider=aws_provider)
        invoke = pulumi.InvokeOutputOptions(parent=self, provider=aws_provider)
        partition = aws.get_partition_output(opts=invoke).partition
        cluster_role, cluster_policies = self._role(
            f"{name}-cluster-role",
            "eks.amazonaws.com",
            ["sts:AssumeRole", "sts:TagSession"],
            CLUSTER_POLICIES,
            partition,
        )
        node_role, node_policies = self._role(
            f"{name}-node-role", "ec2.amazonaws.com", ["sts:AssumeRole"], NODE_POLICIES, partition
        )
        cluster = aws.eks.Cluster(
            f"{name}-eks",
            name=settings.name,
            version=settings.kubernetes_version,
            role_arn=cluster_role.arn,
            vpc_config={
                "subnet_ids": list(settings.subnet_ids),
                "endpoint_private_access": True,
                "endpoint_public_access": True,
            },
            access_config={
                "authentication_mode": "API",
                # The creator gets no implicit admin entry: the explicit one below is managed,
                # and creating both for one principal would conflict.
                "bootstrap_cluster_creator_admin_permissions": False,
            },
            # Auto Mode: compute, block storage and load balancing are enabled together, and
            # EKS manages the add-ons itself, Pod Identity's agent included.
            bootstrap_self_managed_addons=False,
            compute_config={
                "enabled": True,
                "node_pools": NODE_POOLS,
                "node_role_arn": node_role.arn,
            },
            storage_config={"block_storage": {"enabled": True}},
            kubernetes_network_config={"elastic_load_balancing": {"enabled": True}},
            opts=pulumi.ResourceOptions.merge(
                # EKS checks the roles' permissions when it creates the cluster.
                self._opts,
                pulumi.ResourceOptions(depends_on=[*cluster_policies, *node_policies]),
            ),
        )
        # The deploying identity as IAM knows it: an assumed role's session ARN names the role.
        caller = aws.get_caller_identity_output(opts=invoke)
        principal = aws.iam.get_session_context_output(arn=caller.arn, opts=invoke).issuer_arn
        entry = aws.eks.AccessEntry(
            f"{name}-deployer",
            cluster_name=cluster.name,
            principal_arn=principal,
            type="STANDARD",
            opts=self._opts,
        )
        self.admin_access = aws.eks.AccessPolicyAssociation(
            f"{name}-deployer-admin",
            cluster_name=cluster.name,
            principal_arn=entry.principal_arn,
            policy_arn=pulumi.Output.concat(
                "arn:", partition, ":eks::aws:cluster-access-policy/", CLUSTER_ADMIN_POLICY
            ),
            access_scope={"type": "cluster"},
            opts=self._opts,
        )
        self.cluster_name = cluster.name
        self.cluster_arn = cluster.arn
        self.endpoint = cluster.endpoint
        self.ca_data = cluster.certificate_authority.data
        self.admin_principal_arn = entry.principal_arn
        self.service_cidr = cluster.kubernetes_network_config.apply(
            # Known once EKS has made the cluster (unknown in a preview).
            lambda network: str(network.service_ipv4_cidr or "") if network else ""
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

    def _role(
        self,
        name: str,
        service: str,
        actions: list[str],
        policies: tuple[str, ...],
        partition: pulumi.Output[str],
    ) -> tuple[aws.iam.Role, list[aws.iam.RolePolicyAttachment]]:
        role = aws.iam.Role(
            name, assume_role_policy=service_trust_policy(service, *actions), opts=self._opts
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{name}-{policy}",
                role=role.name,
                policy_arn=pulumi.Output.concat("arn:", partition, ":iam::aws:policy/", policy),
                opts=self._opts,
            )
            for policy in policies
        ]
        return role, attachments
