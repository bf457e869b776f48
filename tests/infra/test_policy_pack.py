"""The policy pack, run through pulumi-policy's own validation entry points against the program's
resources: the program passes every policy, and a broken copy of each resource is reported
with a message that names it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from policies.pack import analyst_guard
from tests.support.policy_runs import (
    DELETE,
    HARDENED,
    Resource,
    resource_violations,
    set_input,
    stack_violations,
)
from tests.support.stack_run import CREATE_MODE, CREATE_WORLD, StackRun, run_stack


def test_the_pack_has_every_policy_the_review_asks_for() -> None:
    assert {p.name for p in analyst_guard.policies()} == {
        "analyst-pods-sandboxed-or-hardened",
        "privileged-only-for-sandboxed-bubblewrap",
        "no-user-namespace-in-sandbox",
        "unmasked-proc-only-for-bubblewrap-in-own-user-namespace",
        "namespace-enforces-pod-security",
        "analyst-egress-bounded",
        "non-root-except-userns-init",
        "no-service-account-token",
        "no-pod-identity-in-init-containers",
        "no-rehearsal-switch",
        "jobs-run-once-with-deadline-no-ttl",
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
        assert resource_violations(resource) == [], resource["urn"]
    assert stack_violations(stack) == []


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


POD = ["spec", "template", "spec"]

BROKEN_RESOURCES: list[tuple[str, str, Callable[[Resource], None], str]] = [
    # (resource to copy, id, how to break it, expected message part)
    ("nono", "runc", set_input([*POD, "runtimeClassName"], "runc"), "RuntimeClass 'runc'"),
    (
        "bubblewrap",
        "privileged-off-the-sandbox",
        set_input([*POD, "runtimeClassName"], DELETE),
        "container 'analyst' is privileged",
    ),
    (
        "bubblewrap",
        "user-namespace-in-the-sandbox",
        set_input([*POD, "hostUsers"], False),
        "hostUsers: false in isolated-sandbox, whose Nitro sandbox pods do not support user",
    ),
    (
        "nono",
        "unmasked-nono",
        set_input([*POD, "containers", 0, "securityContext", "procMount"], "Unmasked"),
        "container 'analyst' has an unmasked /proc, which only bwrap needs",
    ),
    (
        "hardened-bubblewrap",
        "unmasked-without-user-namespace",
        set_input([*POD, "hostUsers"], DELETE),
        "container 'analyst' has an unmasked /proc without the pod's own user namespace",
    ),
    (
        "hardened-bubblewrap",
        "privileged-hardened",
        set_input([*POD, "containers", 0, "securityContext", "privileged"], True),
        "container 'analyst' is privileged",
    ),
    (
        "hardened-bubblewrap",
        "no-seccomp-hardened",
        set_input([*POD, "securityContext", "seccompProfile"], DELETE),
        "outside isolated-sandbox, container 'analyst' runs without a seccomp profile (None)",
    ),
    (
        "hardened-bubblewrap",
        "unconfined-hardened",
        set_input([*POD, "securityContext", "seccompProfile"], {"type": "Unconfined"}),
        "container 'analyst' runs without a seccomp profile ('Unconfined')",
    ),
    (
        "hardened-bubblewrap",
        "escalation-hardened",
        set_input([*POD, "containers", 0, "securityContext", "allowPrivilegeEscalation"], True),
        "container 'analyst' may gain privileges (allowPrivilegeEscalation)",
    ),
    (
        "hardened-bubblewrap",
        "capabilities-hardened",
        set_input(
            [*POD, "containers", 0, "securityContext", "capabilities"], {"add": ["SYS_ADMIN"]}
        ),
        "container 'analyst' does not drop every capability",
    ),
    (
        "hardened-bubblewrap",
        "root-init-hardened",
        set_input(
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
        set_input([*POD, "containers", 0, "securityContext", "privileged"], True),
        "container 'analyst' is privileged",
    ),
    (
        "supplier",
        "privileged-supplier",
        set_input([*POD, "containers", 0, "securityContext", "privileged"], True),
        "container 'supplier-api' is privileged",
    ),
    (
        "bubblewrap",
        "root-analyst",
        set_input([*POD, "containers", 0, "securityContext", "runAsUser"], 0),
        "container 'analyst' may run as root",
    ),
    (
        "supplier",
        "root-pod",
        set_input([*POD, "securityContext", "runAsNonRoot"], False),
        "the pod does not set runAsNonRoot",
    ),
    (
        "nono",
        "token",
        set_input([*POD, "automountServiceAccountToken"], True),
        "automountServiceAccountToken is not false",
    ),
    (
        "supplier",
        "token-supplier",
        set_input([*POD, "automountServiceAccountToken"], DELETE),
        "automountServiceAccountToken is not false",
    ),
    (
        "service-account",
        "token-account",
        set_input(["automountServiceAccountToken"], True),
        "automountServiceAccountToken is not false",
    ),
    (
        "nono",
        "rehearsal-switch",
        set_input([*POD, "containers", 0, "env"], [{"name": "ANALYST_REHEARSAL", "value": "1"}]),
        "container 'analyst' sets ANALYST_REHEARSAL",
    ),
    (
        "bubblewrap",
        "rehearsal-switch-init",
        set_input(
            [*POD, "initContainers", 0, "env"], [{"name": "ANALYST_REHEARSAL", "value": "1"}]
        ),
        "container 'raise-userns-limit' sets ANALYST_REHEARSAL",
    ),
    (
        "bubblewrap",
        "credentials-in-root-init",
        set_input(["spec", "template", "metadata", "annotations"], DELETE),
        "init container 'raise-userns-limit' gets the role's credentials",
    ),
    ("bubblewrap", "retries", set_input(["spec", "backoffLimit"], 3), "backoffLimit is 3, not 0"),
    (
        "nono",
        "no-deadline",
        set_input(["spec", "activeDeadlineSeconds"], DELETE),
        "activeDeadlineSeconds is not set",
    ),
    (
        "nono",
        "a-ttl",
        set_input(["spec", "ttlSecondsAfterFinished"], 604800),
        "ttlSecondsAfterFinished is set: Kubernetes would delete the finished Job",
    ),
    (
        "repository",
        "no-scan",
        set_input(["imageScanningConfiguration", "scanOnPush"], False),
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
    assert resource_violations(resource) == [], "the unbroken copy already fails"
    break_it(resource)
    violations = resource_violations(resource)
    assert any(v.startswith(f"{resource['name']}: ") and expected in v for v in violations), (
        violations
    )


def test_the_bubblewrap_init_container_alone_may_be_root_and_privileged(
    default_stack: StackRun,
) -> None:
    # The same init container in the nono Job is a violation twice over.
    bubblewrap, nono = _job(default_stack, "bubblewrap"), _job(default_stack, "nono")
    _pod(nono)["initContainers"] = copy.deepcopy(_pod(bubblewrap)["initContainers"])
    violations = resource_violations(nono)
    assert f"{nono['name']}: container 'raise-userns-limit' is privileged" in violations
    assert f"{nono['name']}: container 'raise-userns-limit' may run as root" in violations
