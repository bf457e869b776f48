"""Renders the analyst's IAM documents: the least-privilege S3 policy from the one committed
template in policies/, and the EKS Pod Identity trust policy of its role.

The Pulumi program and the local moto run both call this, so the policy IAM evaluates
locally is byte for byte the policy the stack deploys.
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.core.ids import ID_PATTERN, is_valid_id
from app.core.repo import POLICIES_DIR

POLICY_TEMPLATE = POLICIES_DIR / "analyst-permissions.json"

# Bucket names as S3 allows them, and case ids as the case contract allows them: both are
# checked before they are spliced into an ARN, so no value can widen a resource pattern.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
# AWS partitions: aws, aws-cn, aws-us-gov, aws-iso, aws-iso-b, ...
_PARTITION = re.compile(r"^aws(-[a-z]+)*$")
_CLUSTER_ARN = re.compile(r"^arn:aws(-[a-z]+)*:eks:[a-z0-9-]+:\d{12}:cluster/[A-Za-z0-9_-]+$")
_K8S_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")

# The session tags EKS Pod Identity sets when it assumes a role for a pod, as condition keys.
# https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html and
# https://docs.aws.amazon.com/eks/latest/userguide/pod-id-abac.html#pod-id-abac-tags
CLUSTER_ARN_TAG = "aws:RequestTag/eks-cluster-arn"
NAMESPACE_TAG = "aws:RequestTag/kubernetes-namespace"
SERVICE_ACCOUNT_TAG = "aws:RequestTag/kubernetes-service-account"


def render_permissions_policy(bucket: str, case_id: str, partition: str = "aws") -> dict[str, Any]:
    """The permissions policy for one bucket and one case, as a parsed IAM document."""
    if not _BUCKET.fullmatch(bucket):
        raise ValueError(f"bucket name {bucket!r} is not a valid S3 bucket name")
    if not is_valid_id(case_id):
        raise ValueError(f"case id {case_id!r} must match {ID_PATTERN.pattern}")
    if not _PARTITION.fullmatch(partition):
        raise ValueError(f"partition {partition!r} is not an AWS partition (aws, aws-cn, ...)")
    text = POLICY_TEMPLATE.read_text(encoding="utf-8")
    rendered = (
        text.replace("<PARTITION>", partition)
        .replace("<BUCKET>", bucket)
        .replace("<CASE_ID>", case_id)
    )
    document: dict[str, Any] = json.loads(rendered)
    return document


def pod_identity_trust_policy(
    *,
    cluster_arn: str | None = None,
    namespace: str | None = None,
    service_account: str | None = None,
) -> dict[str, Any]:
    """The trust policy that lets EKS Pod Identity assume the analyst's role.

    Given the cluster, namespace and service account, only a pod of that service account in
    that namespace of that cluster can get the role (the cluster ARN names the account): without
    the conditions, any Pod Identity association in the account could name it. All three or
    none.
    """
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
    }
    scope = (cluster_arn, namespace, service_account)
    if any(part is not None for part in scope):
        if cluster_arn is None or namespace is None or service_account is None:
            raise ValueError("cluster_arn, namespace and service_account go together")
        if not _CLUSTER_ARN.fullmatch(cluster_arn):
            raise ValueError(f"cluster ARN {cluster_arn!r} is not an EKS cluster ARN")
        for label, value in (("namespace", namespace), ("service account", service_account)):
            if not _K8S_NAME.fullmatch(value):
                raise ValueError(f"{label} {value!r} is not a Kubernetes name")
        statement["Condition"] = {
            "StringEquals": {
                CLUSTER_ARN_TAG: cluster_arn,
                NAMESPACE_TAG: namespace,
                SERVICE_ACCOUNT_TAG: service_account,
            }
        }
    return {"Version": "2012-10-17", "Statement": [statement]}
