"""Renders the analyst's least-privilege S3 policy from the one committed template in policies/.

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


def render_permissions_policy(bucket: str, case_id: str) -> dict[str, Any]:
    """The permissions policy for one bucket and one case, as a parsed IAM document."""
    if not _BUCKET.fullmatch(bucket):
        raise ValueError(f"bucket name {bucket!r} is not a valid S3 bucket name")
    if not is_valid_id(case_id):
        raise ValueError(f"case id {case_id!r} must match {ID_PATTERN.pattern}")
    text = POLICY_TEMPLATE.read_text(encoding="utf-8")
    rendered = text.replace("<BUCKET>", bucket).replace("<CASE_ID>", case_id)
    document: dict[str, Any] = json.loads(rendered)
    return document


def pod_identity_trust_policy() -> dict[str, Any]:
    """The trust policy that lets EKS Pod Identity assume the analyst's role."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
            }
        ],
    }
