"""The policy pack, run through pulumi-policy's own validation entry points against the program's
resources: the program passes every policy, and a broken copy of each resource is reported
with a message that names it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.pack import analyst_guard
from tests.support.engine import SUPPLIER_KEY
from tests.support.stack_run import CREATE_MODE, CREATE_WORLD, StackRun, run_stack

Resource = dict[str, Any]
HARDENED: dict[str, Any] = {"runtimeTarget": "hardened-container"}


def _options() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def _resource_policies() -> list[ResourceValidationPolicy]:
    return [p for p in analyst_guard.policies() if isinstance(p, ResourceValidationPolicy)]


def _stack_policies() -> list[StackValidationPolicy]:
    return [p for p in analyst_guard.policies() if isinstance(p, StackValidationPolicy)]


def _resource_violations(resource: Resource) -> list[str]:
    found: list[str] = []
    args = ResourceValidationArgs(
        resource["type"], resource["inputs"], resource["urn"], resource["name"], _options(), None
    )
    for policy in _resource_policies():
        policy.validate(args, lambda message, urn=None: found.append(message))
    return found


def _stack_props(stack: StackRun, resource: Resource) -> dict[str, Any]:
    """A resource's properties as the analyzer sees them after the update (outputs)."""
    props = dict(resource["inputs"])
    if resource["type"] == analyst_guard.BUCKET:
        props["bucket"] = stack.outputs["bucket"]
    if resource["type"] == "random:index/randomPassword:RandomPassword":
        props["result"] = SUPPLIER_KEY
    return props


def _stack_violations(
    stack: StackRun,
    resources: list[Resource] | None = None,
    outputs: dict[str, Any] | None = None,
) -> list[tuple[str, str | None]]:
    records = resources if resources is not None else stack.resources
    by_urn: dict[str, PolicyResource] = {}
    for record in records:
        by_urn[record["urn"]] = PolicyResource(
            record["type"],
            _stack_props(stack, record),
            record["urn"],
            record["name"],
            _options(),
            None,
            None,
            [],
            {},
        )
    for record in records:
        by_urn[record["urn"]].property_dependencies = {
            key: [by_urn[urn] for urn in urns if urn in by_urn]
            for key, urns in record["property_dependencies"].items()
        }
    root = PolicyResource(
        analyst_guard.STACK,
        outputs if outputs is not None else stack.outputs,
        "urn:pulumi:dev::procurement-analyst::pulumi:pulumi:Stack::procurement-analyst-dev",
        "procurement-analyst-dev",
        _options(),
        None,
        None,
        [],
        {},
    )
    found: list[tuple[str, str | None]] = []
    args = StackValidationArgs([*by_urn.values(), root])
    for policy in _stack_policies():
        policy.validate(args, lambda message, urn=None: found.append((message, urn)))
    return found


def test_the_pack_has_every_policy_the_review_asks_for() -> None:
    assert {p.name for p in analyst_guard.policies()} == {
        "analyst-pods-sandboxed-or-hardened",
        "privileged-only-for-sandboxed-bubblewrap",
        "no-user-namespace-in-sandbox",
        "unmasked-proc-only-for-bubblewrap-in-own-user-namespace",
        "namespace-enforces-pod-security",
        "non-root-except-userns-init",
        "no-service-account-token",
        "no-rehearsal-switch",
        "jobs-run-once-with-deadline-and-ttl",
        "ecr-scan-on-push",
        "bucket-private-and-encrypted",
        "iam-least-privilege",
        "no-secret-in-plain-output",
    }


@pytest.mark.parametrize("mode", ["existing", "create", "hardened"])
def test_the_program_passes_every_policy(mode: str) -> None:
    if mode == "hardened":
        stack = run_stack(**HARDENED)
    else:
        stack = run_stack() if mode == "existing" else run_stack(world=CREATE_WORLD, **CREATE_MODE)
    for resource in stack.resources:
        assert _resource_violations(resource) == [], resource["urn"]
    assert _stack_violations(stack) == []


def _job(stack: StackRun, layer: str) -> Resource:
    return copy.deepcopy(
        next(
            j
            for j in stack.of_type(analyst_guard.JOB)
            if j["inputs"]["metadata"]["labels"][analyst_guard.LAYER_LABEL] == layer
        )
    )


def _pod(resource: Resource) -> dict[str, Any]:
    pod: dict[str, Any] = resource["inputs"]["spec"]["template"]["spec"]
    return pod


def _deployment(stack: StackRun) -> Resource:
    return copy.deepcopy(stack.one(analyst_guard.DEPLOYMENT))


def _set(path: list[str | int], value: Any) -> Callable[[Resource], None]:
    def apply(resource: Resource) -> None:
        target = resource["inputs"]
        for part in path[:-1]:
            target = target[part]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return apply


_DELETE = object()
POD = ["spec", "template", "spec"]

BROKEN_RESOURCES: list[tuple[str, str, Callable[[Resource], None], str]] = [
    # (resource to copy, id, how to break it, expected message part)
    ("nono", "runc", _set([*POD, "runtimeClassName"], "runc"), "RuntimeClass 'runc'"),
    (
        "bubblewrap",
        "privileged-off-the-sandbox",
        _set([*POD, "runtimeClassName"], _DELETE),
        "container 'analyst' is privileged",
    ),
    (
        "bubblewrap",
        "user-namespace-in-the-sandbox",
        _set([*POD, "hostUsers"], False),
        "hostUsers: false in isolated-sandbox, whose Nitro sandbox pods do not support user",
    ),
    (
        "nono",
        "unmasked-nono",
        _set([*POD, "containers", 0, "securityContext", "procMount"], "Unmasked"),
        "container 'analyst' has an unmasked /proc, which only bwrap needs",
    ),
    (
        "hardened-bubblewrap",
        "unmasked-without-user-namespace",
        _set([*POD, "hostUsers"], _DELETE),
        "container 'analyst' has an unmasked /proc without the pod's own user namespace",
    ),
    (
        "hardened-bubblewrap",
        "privileged-hardened",
        _set([*POD, "containers", 0, "securityContext", "privileged"], True),
        "container 'analyst' is privileged",
    ),
    (
        "hardened-bubblewrap",
        "no-seccomp-hardened",
        _set([*POD, "securityContext", "seccompProfile"], _DELETE),
        "outside isolated-sandbox, container 'analyst' runs without a seccomp profile (None)",
    ),
    (
        "hardened-bubblewrap",
        "unconfined-hardened",
        _set([*POD, "securityContext", "seccompProfile"], {"type": "Unconfined"}),
        "container 'analyst' runs without a seccomp profile ('Unconfined')",
    ),
    (
        "hardened-bubblewrap",
        "escalation-hardened",
        _set([*POD, "containers", 0, "securityContext", "allowPrivilegeEscalation"], True),
        "container 'analyst' may gain privileges (allowPrivilegeEscalation)",
    ),
    (
        "hardened-bubblewrap",
        "capabilities-hardened",
        _set([*POD, "containers", 0, "securityContext", "capabilities"], {"add": ["SYS_ADMIN"]}),
        "container 'analyst' does not drop every capability",
    ),
    (
        "hardened-bubblewrap",
        "root-init-hardened",
        _set(
            [*POD, "initContainers"],
            [
                {
                    "name": "raise-userns-limit",
                    "image": "i",
                    "securityContext": {
                        "runAsUser": 0,
                        "runAsNonRoot": False,
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }
            ],
        ),
        "container 'raise-userns-limit' may run as root",
    ),
    (
        "nono",
        "privileged-nono",
        _set([*POD, "containers", 0, "securityContext", "privileged"], True),
        "container 'analyst' is privileged",
    ),
    (
        "supplier",
        "privileged-supplier",
        _set([*POD, "containers", 0, "securityContext", "privileged"], True),
        "container 'supplier-api' is privileged",
    ),
    (
        "bubblewrap",
        "root-analyst",
        _set([*POD, "containers", 0, "securityContext", "runAsUser"], 0),
        "container 'analyst' may run as root",
    ),
    (
        "supplier",
        "root-pod",
        _set([*POD, "securityContext", "runAsNonRoot"], False),
        "the pod does not set runAsNonRoot",
    ),
    (
        "nono",
        "token",
        _set([*POD, "automountServiceAccountToken"], True),
        "automountServiceAccountToken is not false",
    ),
    (
        "supplier",
        "token-supplier",
        _set([*POD, "automountServiceAccountToken"], _DELETE),
        "automountServiceAccountToken is not false",
    ),
    (
        "service-account",
        "token-account",
        _set(["automountServiceAccountToken"], True),
        "automountServiceAccountToken is not false",
    ),
    (
        "nono",
        "rehearsal-switch",
        _set([*POD, "containers", 0, "env"], [{"name": "ANALYST_REHEARSAL", "value": "1"}]),
        "container 'analyst' sets ANALYST_REHEARSAL",
    ),
    (
        "bubblewrap",
        "rehearsal-switch-init",
        _set([*POD, "initContainers", 0, "env"], [{"name": "ANALYST_REHEARSAL", "value": "1"}]),
        "container 'raise-userns-limit' sets ANALYST_REHEARSAL",
    ),
    ("bubblewrap", "retries", _set(["spec", "backoffLimit"], 3), "backoffLimit is 3, not 0"),
    (
        "nono",
        "no-deadline",
        _set(["spec", "activeDeadlineSeconds"], _DELETE),
        "activeDeadlineSeconds is not set",
    ),
    (
        "nono",
        "no-ttl",
        _set(["spec", "ttlSecondsAfterFinished"], _DELETE),
        "ttlSecondsAfterFinished is not set",
    ),
    (
        "repository",
        "no-scan",
        _set(["imageScanningConfiguration", "scanOnPush"], False),
        "does not scan images on push",
    ),
]


def _target(stack: StackRun, which: str) -> Resource:
    if which in ("nono", "bubblewrap"):
        return _job(stack, which)
    if which == "hardened-bubblewrap":
        return _job(run_stack(**HARDENED), "bubblewrap")
    if which == "supplier":
        return _deployment(stack)
    if which == "service-account":
        return copy.deepcopy(stack.one(analyst_guard.SERVICE_ACCOUNT))
    return copy.deepcopy(stack.of_type(analyst_guard.REPOSITORY)[0])


@pytest.mark.parametrize(
    ("which", "break_it", "expected"),
    [(which, fn, expected) for which, _, fn, expected in BROKEN_RESOURCES],
    ids=[case for _, case, _, _ in BROKEN_RESOURCES],
)
def test_a_broken_resource_is_reported_by_name(
    default_stack: StackRun, which: str, break_it: Callable[[Resource], None], expected: str
) -> None:
    resource = _target(default_stack, which)
    assert _resource_violations(resource) == [], "the unbroken copy already fails"
    break_it(resource)
    violations = _resource_violations(resource)
    assert any(v.startswith(f"{resource['name']}: ") and expected in v for v in violations), (
        violations
    )


def test_the_bubblewrap_init_container_alone_may_be_root_and_privileged(
    default_stack: StackRun,
) -> None:
    # The same init container in the nono Job is a violation twice over.
    bubblewrap, nono = _job(default_stack, "bubblewrap"), _job(default_stack, "nono")
    _pod(nono)["initContainers"] = copy.deepcopy(_pod(bubblewrap)["initContainers"])
    violations = _resource_violations(nono)
    assert f"{nono['name']}: container 'raise-userns-limit' is privileged" in violations
    assert f"{nono['name']}: container 'raise-userns-limit' may run as root" in violations


def _replace(stack: StackRun, type_: str, change: Callable[[Resource], None]) -> list[Resource]:
    resources = copy.deepcopy(stack.resources)
    for resource in resources:
        if resource["type"] == type_:
            change(resource)
    return resources


def test_a_bucket_with_public_access_allowed_is_reported(default_stack: StackRun) -> None:
    broken = _replace(
        default_stack,
        analyst_guard.PUBLIC_ACCESS_BLOCK,
        _set(["restrictPublicBuckets"], False),
    )
    bucket = default_stack.one(analyst_guard.BUCKET)
    assert (f"{bucket['name']}: public access is not blocked", bucket["urn"]) in _stack_violations(
        default_stack, broken
    )


def test_an_unencrypted_bucket_is_reported(default_stack: StackRun) -> None:
    broken = [r for r in default_stack.resources if r["type"] != analyst_guard.ENCRYPTION]
    bucket = default_stack.one(analyst_guard.BUCKET)
    assert (f"{bucket['name']}: no default encryption", bucket["urn"]) in _stack_violations(
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
    broken = _replace(default_stack, analyst_guard.ROLE_POLICY, _widen(change))
    policy = default_stack.one(analyst_guard.ROLE_POLICY, "identity-s3")
    assert (expected, policy["urn"]) in _stack_violations(default_stack, broken)


def test_a_secret_in_a_plain_output_is_reported(default_stack: StackRun) -> None:
    leaked = dict(default_stack.outputs, supplierKey=f"key={SUPPLIER_KEY}")
    violations = _stack_violations(default_stack, outputs=leaked)
    assert [message for message, _ in violations] == [
        "stack output 'supplierKey' holds a secret value"
    ]


def _namespace_labels(stack: StackRun, change: Callable[[dict[str, Any]], None]) -> list[Resource]:
    def apply(resource: Resource) -> None:
        change(resource["inputs"]["metadata"]["labels"])

    return _replace(stack, analyst_guard.NAMESPACE, apply)


def test_a_namespace_without_a_pod_security_level_is_reported(default_stack: StackRun) -> None:
    broken = _namespace_labels(
        default_stack, lambda labels: labels.pop("pod-security.kubernetes.io/enforce")
    )
    namespace = default_stack.one(analyst_guard.NAMESPACE)
    assert _stack_violations(default_stack, broken) == [
        (f"{namespace['name']}: enforces no Pod Security level", namespace["urn"])
    ]


def test_privileged_enforcement_without_a_privileged_pod_is_reported() -> None:
    # The hardened stack's pods meet baseline: `privileged` there would admit more than needed.
    stack = run_stack(**HARDENED)
    broken = _namespace_labels(
        stack, lambda labels: labels.update({"pod-security.kubernetes.io/enforce": "privileged"})
    )
    namespace = stack.one(analyst_guard.NAMESPACE)
    assert _stack_violations(stack, broken) == [
        (
            f"{namespace['name']}: enforces 'privileged' though no pod of the stack is",
            namespace["urn"],
        )
    ]
