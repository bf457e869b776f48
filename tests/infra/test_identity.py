"""The analyst's IAM role: the Pod Identity trust policy, the S3 policy from the shared renderer,
the Bedrock statement for the configured model only, and the Pod Identity association."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from app.core.iam_policy import pod_identity_trust_policy, render_permissions_policy
from infra.bedrock_policy import bedrock_invoke_policy, is_inference_profile
from tests.support.stack_run import CREATE_MODE, CREATE_WORLD, StackRun, run_stack

BUCKET = "procurement-analyst-20260101000000000000000001"
INVOKE = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]


def _policy(stack: StackRun, name: str) -> dict[str, Any]:
    return json.loads(stack.one("aws:iam/rolePolicy:RolePolicy", name)["inputs"]["policy"])


def test_the_role_trusts_only_the_analyst_service_account_of_this_cluster(
    default_stack: StackRun,
) -> None:
    role = default_stack.one("aws:iam/role:Role")
    trust = json.loads(role["inputs"]["assumeRolePolicy"])
    cluster = "arn:aws:eks:us-west-2:123456789012:cluster/procurement-analyst"
    assert trust == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:RequestTag/eks-cluster-arn": cluster,
                        "aws:RequestTag/kubernetes-namespace": "procurement-analyst",
                        "aws:RequestTag/kubernetes-service-account": "analyst",
                    }
                },
            }
        ],
    }, f"{role['urn']} may be assumed by any Pod Identity association in the account"


def test_a_created_cluster_scopes_the_trust_to_itself() -> None:
    stack = run_stack(world=CREATE_WORLD, **CREATE_MODE)
    role = next(r for r in stack.of_type("aws:iam/role:Role") if r["name"] == "identity-role")
    conditions = json.loads(role["inputs"]["assumeRolePolicy"])["Statement"][0]["Condition"]
    assert conditions["StringEquals"]["aws:RequestTag/eks-cluster-arn"] == (
        "arn:aws:eks:us-west-2:123456789012:cluster/analyst-new"
    ), role["urn"]


@pytest.mark.parametrize(
    "scope",
    [
        {
            "cluster_arn": "arn:aws:eks:us-west-2:1:cluster/x",
            "namespace": "n",
            "service_account": "a",
        },
        {"cluster_arn": "arn:aws:eks:us-west-2:123456789012:cluster/x", "namespace": "n"},
        {
            "cluster_arn": "arn:aws:eks:us-west-2:123456789012:cluster/x",
            "namespace": "*",
            "service_account": "a",
        },
    ],
)
def test_the_trust_scope_is_refused_unless_whole_and_exact(scope: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        pod_identity_trust_policy(**scope)


def test_every_arn_takes_the_providers_partition() -> None:
    stack = run_stack(region="cn-north-1", world={"partition": "aws-cn"})
    for name in ("identity-s3", "identity-bedrock"):
        policy = stack.one("aws:iam/rolePolicy:RolePolicy", name)
        text = policy["inputs"]["policy"]
        arns = re.findall(r'"(arn:[^:"]+):', text)
        assert arns and set(arns) == {"arn:aws-cn"}, f"{policy['urn']} names {set(arns)}"


def test_the_local_run_renders_the_aws_partition_by_default() -> None:
    policy = json.dumps(render_permissions_policy(BUCKET, "rfp-001"))
    assert "arn:aws:s3:::" in policy and "<PARTITION>" not in policy
    with pytest.raises(ValueError, match="not an AWS partition"):
        render_permissions_policy(BUCKET, "rfp-001", partition="aws*")


def test_the_s3_policy_is_the_shared_rendering_for_this_bucket_and_case(
    default_stack: StackRun,
) -> None:
    policy = _policy(default_stack, "identity-s3")
    assert policy == render_permissions_policy(BUCKET, "rfp-001")
    statements = {s["Sid"]: s for s in policy["Statement"]}
    assert statements["ReadThisCase"]["Action"] == "s3:GetObject"
    assert statements["ReadThisCase"]["Resource"] == [
        f"arn:aws:s3:::{BUCKET}/cases/rfp-001/*",
        f"arn:aws:s3:::{BUCKET}/proposals/rfp-001/*",
        f"arn:aws:s3:::{BUCKET}/reports/rfp-001/*",
    ]
    assert statements["WriteThisCasesReports"]["Action"] == "s3:PutObject"
    assert (
        statements["WriteThisCasesReports"]["Resource"]
        == f"arn:aws:s3:::{BUCKET}/reports/rfp-001/*"
    )
    assert all(s["Effect"] == "Allow" for s in policy["Statement"])


def test_the_s3_policy_follows_the_configured_case() -> None:
    policy = _policy(run_stack(caseId="rfp-other"), "identity-s3")
    resources = json.dumps(policy)
    assert "/cases/rfp-other/*" in resources and "rfp-001" not in resources


def test_the_bedrock_statement_names_the_configured_profile_only(default_stack: StackRun) -> None:
    policy = _policy(default_stack, "identity-bedrock")
    profile = (
        "arn:aws:bedrock:us-west-2:123456789012:inference-profile/"
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
    )
    via_profile, model = policy["Statement"]
    assert via_profile["Action"] == INVOKE and via_profile["Resource"] == profile
    assert model["Action"] == INVOKE
    assert model["Resource"] == [
        "arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
        "arn:aws:bedrock:::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
    ]
    assert model["Condition"] == {"StringEquals": {"bedrock:InferenceProfileArn": profile}}
    for statement in policy["Statement"]:
        assert "*" not in statement["Action"] and statement["Resource"] != "*"


def test_a_foundation_model_id_is_scoped_to_this_region() -> None:
    policy = bedrock_invoke_policy(
        model_id="anthropic.claude-3-5-haiku-20241022-v1:0",
        region="eu-west-1",
        account_id="1",
        partition="aws",
    )
    (statement,) = policy["Statement"]
    assert (
        statement["Resource"]
        == "arn:aws:bedrock:eu-west-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0"
    )
    assert statement["Action"] == INVOKE


@pytest.mark.parametrize(
    ("model_id", "profile"),
    [
        ("us.amazon.nova-pro-v1:0", True),
        ("eu.anthropic.claude-x", True),
        ("amazon.nova-pro-v1:0", False),
    ],
)
def test_profile_ids_are_told_from_model_ids(model_id: str, profile: bool) -> None:
    assert is_inference_profile(model_id) is profile


def test_a_regional_profile_has_no_global_model_grant() -> None:
    policy = bedrock_invoke_policy(
        model_id="us.amazon.nova-pro-v1:0", region="us-east-1", account_id="1", partition="aws"
    )
    assert policy["Statement"][1]["Resource"] == [
        "arn:aws:bedrock:*::foundation-model/amazon.nova-pro-v1:0"
    ]


def test_the_pod_identity_association_binds_the_analyst_service_account(
    default_stack: StackRun,
) -> None:
    association = default_stack.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    role = default_stack.one("aws:iam/role:Role")
    assert association["inputs"] == {
        "clusterName": "procurement-analyst",
        "namespace": "procurement-analyst",
        "serviceAccount": "analyst",
        "roleArn": f"arn:aws:iam::123456789012:role/{role['name']}",
    }, association["urn"]


def test_the_jobs_start_after_the_association_exists(default_stack: StackRun) -> None:
    association = default_stack.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    for job in default_stack.of_type("kubernetes:batch/v1:Job"):
        assert association["urn"] in job["dependencies"], (
            f"{job['urn']} may start without AWS credentials"
        )
