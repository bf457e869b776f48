"""The policy pack gates a pull request: in `pulumi preview`, where the image is not built and
the bucket does not exist yet, every pod policy is evaluated (mandatory, not the advisory "can't
run policy during preview") and a broken pod is still reported. The pack runs as its own program
behind pulumi-policy's gRPC analyzer, and is asked with the properties as the engine sends them."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from policies.pack import analyst_guard
from tests.support.engine import UNKNOWN_MARKER
from tests.support.policy_server import PolicyServer, policy_server
from tests.support.stack_run import StackRun, run_stack

POD_OWNERS = {analyst_guard.JOB, analyst_guard.DEPLOYMENT}
PREVIEW_REFUSAL = "during preview"


@pytest.fixture(scope="module")
def server() -> Iterator[PolicyServer]:
    with policy_server() as running:
        yield running


@pytest.fixture(scope="module")
def preview() -> StackRun:
    # The dev stack's shape: images built on `up` (their digest unknown now), a new bucket.
    return run_stack(preview=True, comparisonPod=True)


def _pod(resource: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = resource["inputs"]["spec"]["template"]["spec"]
    return pod


def test_the_preview_really_lacks_the_image_and_the_bucket(preview: StackRun) -> None:
    # Otherwise the test below would prove nothing about a preview.
    for job in preview.of_type(analyst_guard.JOB):
        assert _pod(job)["containers"][0]["image"] == UNKNOWN_MARKER, job["urn"]
    env = {
        e["name"]: e["value"]
        for e in _pod(preview.of_type(analyst_guard.JOB)[0])["containers"][0]["env"]
    }
    assert env["ANALYST_BUCKET"] == UNKNOWN_MARKER
    # The image the report names is the container's own image Output, unknown alike.
    assert env["ANALYST_IMAGE"] == UNKNOWN_MARKER
    assert preview.outputs["bucket"] == UNKNOWN_MARKER


def test_every_policy_is_evaluated_on_every_resource_of_the_preview(
    server: PolicyServer, preview: StackRun
) -> None:
    pods = [r for r in preview.resources if r["type"] in POD_OWNERS]
    assert len(pods) == 5, [r["urn"] for r in pods]  # supplier, 2 analysts, 2 comparisons
    for resource in preview.resources:
        diagnostics = server.analyze(resource)
        assert diagnostics == [], (resource["urn"], diagnostics)
    assert server.analyze_stack(preview.resources) == []


@pytest.mark.parametrize(
    ("which", "path", "value", "policy"),
    [
        ("analyst-nono", ["containers", 0, "securityContext", "privileged"], True,
         "privileged-only-for-sandboxed-bubblewrap"),
        ("analyst-bubblewrap", ["hostUsers"], False, "no-user-namespace-in-sandbox"),
        ("analyst-compare-nono", ["automountServiceAccountToken"], True,
         "no-service-account-token"),
        ("supplier-deployment", ["securityContext", "runAsNonRoot"], False,
         "non-root-except-userns-init"),
    ],
)  # fmt: skip
def test_a_broken_pod_is_reported_as_mandatory_in_the_preview(
    server: PolicyServer, preview: StackRun, which: str, path: list[Any], value: Any, policy: str
) -> None:
    (resource,) = [copy.deepcopy(r) for r in preview.resources if r["name"] == which]
    target = _pod(resource)
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    diagnostics = server.analyze(resource)
    assert {d.policy for d in diagnostics} == {policy}, diagnostics
    for found in diagnostics:
        assert found.mandatory and PREVIEW_REFUSAL not in found.message, found
        assert which in found.message


def test_a_namespace_is_still_judged_by_the_pods_of_the_preview(
    server: PolicyServer, preview: StackRun
) -> None:
    broken = copy.deepcopy(preview.resources)
    for resource in broken:
        if resource["type"] == analyst_guard.NAMESPACE:
            resource["inputs"]["metadata"]["labels"].pop("pod-security.kubernetes.io/enforce")
    diagnostics = server.analyze_stack(broken)
    assert [(d.policy, d.mandatory) for d in diagnostics] == [
        ("namespace-enforces-pod-security", True)
    ], json.dumps([d.message for d in diagnostics])
