"""Identity: the analyst's IAM role, its two inline policies, and its Pod Identity association."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from app.core.iam_policy import pod_identity_trust_policy, render_permissions_policy

from ..bedrock_policy import bedrock_invoke_policy


@dataclass(frozen=True)
class IdentitySettings:
    """Whose role it is (the pod's namespace and service account) and what it may reach."""

    namespace: str
    service_account: str
    case_id: str
    model_id: str
    region: str


class AnalystIdentity(pulumi.ComponentResource):
    """The AWS identity the analyst's pod gets through EKS Pod Identity, and only that pod."""

    role_arn: pulumi.Output[str]
    role_name: pulumi.Output[str]
    association_id: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        settings: IdentitySettings,
        aws_provider: aws.Provider,
        *,
        bucket_name: pulumi.Input[str],
        cluster_name: pulumi.Input[str],
        cluster_arn: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:identity:AnalystIdentity", name, None, opts)
        self._opts = pulumi.ResourceOptions(parent=self, provider=aws_provider)
        invoke = pulumi.InvokeOutputOptions(parent=self, provider=aws_provider)
        # ARNs take the partition the provider's Region is in (aws, aws-cn, aws-us-gov, ...).
        partition = aws.get_partition_output(opts=invoke).partition
        account = aws.get_caller_identity_output(opts=invoke).account_id
        trust = pulumi.Output.from_input(cluster_arn).apply(
            lambda arn: json.dumps(
                pod_identity_trust_policy(
                    cluster_arn=arn,
                    namespace=settings.namespace,
                    service_account=settings.service_account,
                )
            )
        )
        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=trust,
            description=f"Procurement analyst ({pulumi.get_stack()}): its case, one model",
            opts=self._opts,
        )
        # The same renderer the local run evaluates against moto, so the policy tested there
        # is the policy deployed here. It needs the concrete bucket name, hence the apply.
        storage = pulumi.Output.all(bucket_name, partition).apply(
            lambda values: json.dumps(
                render_permissions_policy(values[0], settings.case_id, partition=values[1])
            )
        )
        aws.iam.RolePolicy(f"{name}-s3", role=role.id, policy=storage, opts=self._opts)
        model = pulumi.Output.all(account, partition).apply(
            lambda values: json.dumps(
                bedrock_invoke_policy(
                    model_id=settings.model_id,
                    region=settings.region,
                    account_id=values[0],
                    partition=values[1],
                )
            )
        )
        aws.iam.RolePolicy(f"{name}-bedrock", role=role.id, policy=model, opts=self._opts)
        association = aws.eks.PodIdentityAssociation(
            f"{name}-pod-identity",
            cluster_name=cluster_name,
            namespace=settings.namespace,
            service_account=settings.service_account,
            role_arn=role.arn,
            opts=self._opts,
        )
        self.role_arn = role.arn
        self.role_name = role.name
        self.association_id = association.association_id
        self.register_outputs(
            {
                "role_arn": self.role_arn,
                "role_name": self.role_name,
                "association_id": self.association_id,
            }
        )
