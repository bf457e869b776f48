"""The attestation signing key: an asymmetric AWS KMS key whose kms:Sign only the analyst's role
may call (its key policy, and a Deny for every other principal), and the role's permission to
sign with it (policies/signing-key-policy.json, policies/analyst-signing-permissions.json)."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from app.core.signing_policy import (
    KEY_SPEC,
    KEY_USAGE,
    key_alias,
    render_key_policy,
    render_signing_permissions,
)


class SigningKey(pulumi.ComponentResource):
    """Signs each run's statement in the cluster; its private half never leaves KMS."""

    key_arn: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        aws_provider: aws.Provider,
        *,
        role_arn: pulumi.Input[str],
        role_name: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:signing:SigningKey", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=aws_provider)
        invoke = pulumi.InvokeOutputOptions(parent=self, provider=aws_provider)
        partition = aws.get_partition_output(opts=invoke).partition
        account = aws.get_caller_identity_output(opts=invoke).account_id
        policy = pulumi.Output.all(account, role_arn, partition).apply(
            lambda values: json.dumps(
                render_key_policy(account_id=values[0], role_arn=values[1], partition=values[2])
            )
        )
        key = aws.kms.Key(
            f"{name}-key",
            description=f"Procurement analyst ({pulumi.get_stack()}): signs each run's statement",
            customer_master_key_spec=KEY_SPEC,
            key_usage=KEY_USAGE,
            policy=policy,
            deletion_window_in_days=30,
            opts=child,
        )
        # The Job finds its key by this alias, made from the role's name it is given.
        aws.kms.Alias(
            f"{name}-alias",
            name=pulumi.Output.from_input(role_name).apply(key_alias),
            target_key_id=key.key_id,
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-sign",
            role=role_name,
            policy=key.arn.apply(lambda arn: json.dumps(render_signing_permissions(arn))),
            opts=child,
        )
        self.key_arn = key.arn
        self.register_outputs({"key_arn": self.key_arn})
