"""Stack policies of the pack: a bucket, an IAM policy, an output or a namespace broken in a copy
of the program's resources is reported with the resource's name and URN."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from policies.pack import analyst_guard
from tests.support.engine import SUPPLIER_KEY
from tests.support.policy_runs import (
    HARDENED,
    Resource,
    replaced,
    set_input,
    stack_violations,
)
from tests.support.stack_run import StackRun, run_stack


def test_a_bucket_with_public_access_allowed_is_reported(default_stack: StackRun) -> None:
    broken = replaced(
        default_stack,
        analyst_guard.PUBLIC_ACCESS_BLOCK,
        set_input(["restrictPublicBuckets"], False),
    )
    bucket = default_stack.one(analyst_guard.BUCKET)
    assert (f"{bucket['name']}: public access is not blocked", bucket["urn"]) in stack_violations(
        default_stack, broken
    )


def test_an_unencrypted_bucket_is_reported(default_stack: StackRun) -> None:
    broken = [r for r in default_stack.resources if r["type"] != analyst_guard.ENCRYPTION]
    bucket = default_stack.one(analyst_guard.BUCKET)
    assert (f"{bucket['name']}: no default encryption", bucket["urn"]) in stack_violations(
        default_stack, broken
    )


def _widen(statement_change: Callable[[dict[str, Any]], None]) -> Callable[[Resource], None]:
    def apply(resource: Resource) -> None:
        if resource["name"] != "identity-s3":
            return
        document = json.loads(resource["inputs"]["policy"])
        statement_change(document["Statement"][0])
        resource["inputs"]["policy"] = json.dumps(document)

    return apply


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s.update(Action="s3:*"), "identity-s3: action 's3:*' has a wildcard"),
        (lambda s: s.update(Action="*"), "identity-s3: action '*' has a wildcard"),
        (
            lambda s: s.update(Resource="arn:aws:s3:::someone-elses-bucket/*"),
            "identity-s3: arn:aws:s3:::someone-elses-bucket/* is outside the stack's bucket",
        ),
    ],
)
def test_a_wide_iam_policy_is_reported(
    default_stack: StackRun, change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    broken = replaced(default_stack, analyst_guard.ROLE_POLICY, _widen(change))
    policy = default_stack.one(analyst_guard.ROLE_POLICY, "identity-s3")
    assert (expected, policy["urn"]) in stack_violations(default_stack, broken)


def test_a_secret_in_a_plain_output_is_reported(default_stack: StackRun) -> None:
    leaked = dict(default_stack.outputs, supplierKey=f"key={SUPPLIER_KEY}")
    violations = stack_violations(default_stack, outputs=leaked)
    assert [message for message, _ in violations] == [
        "stack output 'supplierKey' holds a secret value"
    ]


def _namespace_labels(stack: StackRun, change: Callable[[dict[str, Any]], None]) -> list[Resource]:
    def apply(resource: Resource) -> None:
        change(resource["inputs"]["metadata"]["labels"])

    return replaced(stack, analyst_guard.NAMESPACE, apply)


def test_a_namespace_without_a_pod_security_level_is_reported(default_stack: StackRun) -> None:
    broken = _namespace_labels(
        default_stack, lambda labels: labels.pop("pod-security.kubernetes.io/enforce")
    )
    namespace = default_stack.one(analyst_guard.NAMESPACE)
    assert stack_violations(default_stack, broken) == [
        (f"{namespace['name']}: enforces no Pod Security level", namespace["urn"])
    ]


def test_privileged_enforcement_without_a_privileged_pod_is_reported() -> None:
    # The hardened stack's pods meet baseline: `privileged` there would admit more than needed.
    stack = run_stack(**HARDENED)
    broken = _namespace_labels(
        stack, lambda labels: labels.update({"pod-security.kubernetes.io/enforce": "privileged"})
    )
    namespace = stack.one(analyst_guard.NAMESPACE)
    assert stack_violations(stack, broken) == [
        (
            f"{namespace['name']}: enforces 'privileged' though no pod of the stack is",
            namespace["urn"],
        )
    ]
