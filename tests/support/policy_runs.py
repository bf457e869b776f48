"""The policy pack run through pulumi-policy's own validation entry points, against a stack's
resources as the mock engine recorded them, and the edits the tests make to break a copy."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

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
from tests.support.stack_run import StackRun

Resource = dict[str, Any]
HARDENED: dict[str, Any] = {"runtimeTarget": "hardened-container"}


def policy_options() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def resource_policies() -> list[ResourceValidationPolicy]:
    return [p for p in analyst_guard.policies() if isinstance(p, ResourceValidationPolicy)]


def stack_policies() -> list[StackValidationPolicy]:
    return [p for p in analyst_guard.policies() if isinstance(p, StackValidationPolicy)]


def resource_violations(resource: Resource) -> list[str]:
    found: list[str] = []
    args = ResourceValidationArgs(
        resource["type"],
        resource["inputs"],
        resource["urn"],
        resource["name"],
        policy_options(),
        None,
    )

    def report(message: str, urn: str | None = None) -> None:
        found.append(message)

    for policy in resource_policies():
        policy.validate(args, report)
    return found


def stack_props(stack: StackRun, resource: Resource) -> dict[str, Any]:
    """A resource's properties as the analyzer sees them after the update (outputs)."""
    props = dict(resource["inputs"])
    if resource["type"] == analyst_guard.BUCKET:
        props["bucket"] = stack.outputs["bucket"]
    if resource["type"] == "random:index/randomPassword:RandomPassword":
        props["result"] = SUPPLIER_KEY
    return props


def stack_violations(
    stack: StackRun,
    resources: list[Resource] | None = None,
    outputs: dict[str, Any] | None = None,
) -> list[tuple[str, str | None]]:
    records = resources if resources is not None else stack.resources
    by_urn: dict[str, PolicyResource] = {}
    for record in records:
        by_urn[record["urn"]] = PolicyResource(
            record["type"],
            stack_props(stack, record),
            record["urn"],
            record["name"],
            policy_options(),
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
        policy_options(),
        None,
        None,
        [],
        {},
    )
    found: list[tuple[str, str | None]] = []
    args = StackValidationArgs([*by_urn.values(), root])

    def report(message: str, urn: str | None = None) -> None:
        found.append((message, urn))

    for policy in stack_policies():
        policy.validate(args, report)
    return found


def set_input(path: list[str | int], value: Any) -> Callable[[Resource], None]:
    def apply(resource: Resource) -> None:
        target = resource["inputs"]
        for part in path[:-1]:
            target = target[part]
        if value is DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return apply


DELETE = object()


DELETE = object()


def replaced(stack: StackRun, type_: str, change: Callable[[Resource], None]) -> list[Resource]:
    resources = copy.deepcopy(stack.resources)
    for resource in resources:
        if resource["type"] == type_:
            change(resource)
    return resources
