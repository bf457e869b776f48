"""Renders the two documents of the stack's attestation signing key from their committed
templates in policies/: the key policy (the account administers the key and verifies with it,
only the analyst's role may sign, and a Deny for every other principal) and the analyst role's
permission to sign with that key alone.

The Pulumi program deploys them and the local moto check evaluates the same rendering, so the
permission IAM refuses or grants there is the one the stack deploys.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from app.core.repo import POLICIES_DIR

KEY_POLICY_TEMPLATE: Final = POLICIES_DIR / "signing-key-policy.json"
SIGNING_PERMISSIONS_TEMPLATE: Final = POLICIES_DIR / "analyst-signing-permissions.json"
# The key: an asymmetric NIST P-256 key that signs and verifies (ECDSA_SHA_256).
KEY_SPEC: Final = "ECC_NIST_P256"
KEY_USAGE: Final = "SIGN_VERIFY"


def key_alias(role_name: str) -> str:
    """The signing key's alias, named after the analyst's role: the Job already knows the role's
    name (ANALYST_ROLE_NAME), so it finds its key with no variable of its own."""
    return f"alias/{role_name}-signing"


_PARTITION = re.compile(r"^aws(-[a-z]+)*$")
_ACCOUNT = re.compile(r"^\d{12}$")
_ROLE_ARN = re.compile(r"^arn:aws(-[a-z]+)*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_KEY_ARN = re.compile(r"^arn:aws(-[a-z]+)*:kms:[a-z0-9-]+:\d{12}:key/[0-9a-f-]{36}$")


def render_key_policy(*, account_id: str, role_arn: str, partition: str = "aws") -> dict[str, Any]:
    if not _PARTITION.fullmatch(partition):
        raise ValueError(f"partition {partition!r} is not an AWS partition")
    if not _ACCOUNT.fullmatch(account_id):
        raise ValueError(f"account id {account_id!r} is not 12 digits")
    if not _ROLE_ARN.fullmatch(role_arn):
        raise ValueError(f"role ARN {role_arn!r} is not an IAM role's ARN")
    text = KEY_POLICY_TEMPLATE.read_text(encoding="utf-8")
    rendered = (
        text.replace("<PARTITION>", partition)
        .replace("<ACCOUNT_ID>", account_id)
        .replace("<ANALYST_ROLE_ARN>", role_arn)
    )
    document: dict[str, Any] = json.loads(rendered)
    return document


def render_signing_permissions(key_arn: str) -> dict[str, Any]:
    if not _KEY_ARN.fullmatch(key_arn):
        raise ValueError(f"key ARN {key_arn!r} is not a KMS key's ARN")
    text = SIGNING_PERMISSIONS_TEMPLATE.read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text.replace("<SIGNING_KEY_ARN>", key_arn))
    return document
