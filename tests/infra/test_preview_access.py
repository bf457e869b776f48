"""The preview identity reads exactly what a preview reads: each Kubernetes object the program
looks up in a preview (run in preview mode under the mocks) has one `get` rule by name in the
ClusterRole bound to the preview role's access entry, and the ClusterRole holds no other rule
(infra/preview_access.py states the sources)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.stack_run import StackRun, run_stack

PREVIEW_ROLE = "arn:aws:iam::123456789012:role/analyst-preview"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
POLICY_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
# The resources' plural names, as RBAC rules name them.
PLURALS = {
    "RuntimeClass": "runtimeclasses",
    "ConfigMap": "configmaps",
    "NodeClass": "nodeclasses",
    "CustomResourceDefinition": "customresourcedefinitions",
}


def _reads(run: StackRun) -> list[tuple[str, str, str]]:
    """(API group, resource, name) of every Kubernetes object the program read."""
    found = []
    for resource in run.resources:
        if not (resource["read"] and resource["type"].startswith("kubernetes:")):
            continue
        group_version, kind = resource["type"].removeprefix("kubernetes:").split(":")
        group = group_version.rsplit("/", 1)[0] if "/" in group_version else ""
        group = "" if group == "core" else group
        name = resource["inputs"]["id"].rsplit("/", 1)[-1]
        found.append((group, PLURALS[kind], name))
    # And what it asked the API server itself (a ConfigMap that may not exist).
    found += [("", PLURALS[read["kind"]], read["name"]) for read in run.program_reads]
    return found


def _rules(run: StackRun) -> list[tuple[str, str, str]]:
    (role,) = run.of_type(CLUSTER_ROLE)
    rules = role["inputs"]["rules"]
    for rule in rules:
        assert rule["verbs"] == ["get"], f"{role['urn']} grants more than get: {rule}"
        assert len(rule["apiGroups"]) == len(rule["resources"]) == len(rule["resourceNames"]) == 1
    return [(r["apiGroups"][0], r["resources"][0], r["resourceNames"][0]) for r in rules]


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, {("node.k8s.io", "runtimeclasses", "isolated-sandbox")}),
        (
            {"egressPolicy": True},
            {
                ("node.k8s.io", "runtimeclasses", "isolated-sandbox"),
                ("", "configmaps", "amazon-vpc-cni"),
                ("eks.amazonaws.com", "nodeclasses", "default"),
            },
        ),
        (
            {"runtimeTarget": "hardened-container"},
            {
                (
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    "seccompprofiles.security-profiles-operator.x-k8s.io",
                )
            },
        ),
    ],
)
def test_a_preview_reads_exactly_what_the_preview_role_may_read(
    settings: dict[str, Any], expected: set[tuple[str, str, str]]
) -> None:
    run = run_stack(preview=True, previewRoleArn=PREVIEW_ROLE, **settings)
    reads = _reads(run)
    assert set(reads) == expected, "the expected reads are what the program reads"
    rules = _rules(run)
    assert sorted(rules) == sorted(set(reads)), "one get rule per object read, and no other"


def test_the_preview_roles_entry_has_no_access_policy_only_the_bound_group() -> None:
    run = run_stack(preview=True, previewRoleArn=PREVIEW_ROLE)
    (entry,) = [e for e in run.of_type(ACCESS_ENTRY) if e["inputs"]["principalArn"] == PREVIEW_ROLE]
    group = "procurement-analyst:procurement-analyst:preview"
    assert entry["inputs"]["type"] == "STANDARD"
    assert entry["inputs"]["kubernetesGroups"] == [group]
    assert not [
        a for a in run.of_type(POLICY_ASSOCIATION) if a["inputs"]["principalArn"] == PREVIEW_ROLE
    ], "AmazonEKSViewPolicy or any access policy would grant more than the reads"
    (binding,) = run.of_type(BINDING)
    (role,) = run.of_type(CLUSTER_ROLE)
    assert binding["inputs"]["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["inputs"]["metadata"]["name"],
    }
    assert binding["inputs"]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}
    ]
    assert role["inputs"]["metadata"]["name"] == "procurement-analyst-preview-reads"
    assert run.outputs["previewClusterRole"] == "procurement-analyst-preview-reads"


def test_without_a_preview_role_the_stack_grants_nothing(default_stack: StackRun) -> None:
    assert default_stack.of_type(CLUSTER_ROLE) == []
    assert default_stack.of_type(BINDING) == []
    assert all(
        e["inputs"]["principalArn"] != PREVIEW_ROLE for e in default_stack.of_type(ACCESS_ENTRY)
    )
