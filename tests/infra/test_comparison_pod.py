"""The ordinary comparison pod: one per layer when `comparisonPod` is on, outside the sandbox,
hardened, and placed on the node of its layer's analyst pod; and the pin the analyst image's
bubblewrap is built from."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from app.core import cluster_env
from app.core.pins import bubblewrap_build_args
from infra.pod_specs import APP_UID, POD_IDENTITY_SKIP
from policies.pack import pod_guard
from tests.support.policy_runs import resource_violations
from tests.support.stack_run import REPO_ROOT, StackRun, run_stack

JOB = "kubernetes:batch/v1:Job"
IMAGE = "docker-build:index:Image"


@pytest.fixture(scope="module")
def compared() -> StackRun:
    return run_stack(comparisonPod=True)


def _jobs(stack: StackRun, component: str) -> dict[str, dict[str, Any]]:
    jobs = {}
    for job in stack.of_type(JOB):
        labels = job["inputs"]["metadata"]["labels"]
        if labels.get(cluster_env.COMPONENT_LABEL) == component:
            jobs[labels[cluster_env.LAYER_LABEL]] = job
    return jobs


def test_it_is_off_by_default_and_on_in_the_dev_stack(default_stack: StackRun) -> None:
    assert _jobs(default_stack, cluster_env.COMPARISON_COMPONENT) == {}
    dev = (REPO_ROOT / "Pulumi.dev.yaml").read_text()
    assert "procurement-analyst:comparisonPod: true" in dev


def test_one_ordinary_hardened_pod_per_layer_on_its_analyst_pods_node(
    compared: StackRun,
) -> None:
    analysts = _jobs(compared, cluster_env.ANALYST_COMPONENT)
    comparisons = _jobs(compared, cluster_env.COMPARISON_COMPONENT)
    assert set(comparisons) == set(analysts) == {"bubblewrap", "nono"}
    for layer, job in comparisons.items():
        urn = job["urn"]
        template = job["inputs"]["spec"]["template"]
        pod = template["spec"]
        assert "runtimeClassName" not in pod, f"{urn} is in the sandbox: it would compare nothing"
        assert template["metadata"]["labels"][cluster_env.LAYER_LABEL] == layer
        ((term,),) = [
            pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ]
        assert term["topologyKey"] == "kubernetes.io/hostname", urn
        # It selects exactly the labels this layer's analyst pod carries: its template's, and
        # the one the Job controller gives the pods of that Job (the Job's name).
        analyst_labels = analysts[layer]["inputs"]["spec"]["template"]["metadata"]["labels"] | {
            "batch.kubernetes.io/job-name": analysts[layer]["inputs"]["metadata"]["name"]
        }
        assert term["labelSelector"]["matchLabels"].items() <= analyst_labels.items(), urn
        assert term["labelSelector"]["matchLabels"][cluster_env.LAYER_LABEL] == layer
        assert pod["automountServiceAccountToken"] is False
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == APP_UID
        (container,) = pod["containers"]
        assert container["command"] == ["python", "-m", "app.controller", "guest-readings"]
        context = container["securityContext"]
        assert context == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }, urn
        # Created after the analyst Job, whose pod its affinity follows.
        assert analysts[layer]["urn"] in job["dependencies"], urn
        assert job["inputs"]["metadata"]["name"].startswith(f"compare-{layer}-1-")


def test_the_policy_pack_passes_it_and_refuses_it_in_the_sandbox(compared: StackRun) -> None:
    for job in _jobs(compared, cluster_env.COMPARISON_COMPONENT).values():
        assert resource_violations(job) == []
        broken = copy.deepcopy(job)
        broken["inputs"]["spec"]["template"]["spec"]["runtimeClassName"] = "isolated-sandbox"
        assert any(
            "ordinary comparison pod runs in RuntimeClass" in v and job["name"] in v
            for v in resource_violations(broken)
        )
        privileged = copy.deepcopy(job)
        privileged["inputs"]["spec"]["template"]["spec"]["containers"][0]["securityContext"][
            "privileged"
        ] = True
        assert any("is privileged" in v for v in resource_violations(privileged))


def test_the_pack_names_the_pods_by_the_contracts_labels() -> None:
    # The pack runs without the application's packages, so it spells the labels itself.
    assert pod_guard.COMPONENT_LABEL == cluster_env.COMPONENT_LABEL
    assert pod_guard.LAYER_LABEL == cluster_env.LAYER_LABEL
    assert pod_guard.ANALYST_COMPONENT == cluster_env.ANALYST_COMPONENT
    assert pod_guard.COMPARISON_COMPONENT == cluster_env.COMPARISON_COMPONENT
    assert pod_guard.REHEARSAL_SWITCH == cluster_env.REHEARSAL
    assert pod_guard.POD_IDENTITY_SKIP == POD_IDENTITY_SKIP
    assert pod_guard.EGRESS_DENIED == cluster_env.EGRESS_DENIED


def test_the_outputs_name_each_comparison_and_the_command(compared: StackRun) -> None:
    assert set(compared.outputs["comparisonJobNames"]) == {"bubblewrap", "nono"}
    command = compared.outputs["nitroEvidenceCommands"]["bubblewrap"]
    assert command.endswith("nitro-evidence --layer bubblewrap --namespace procurement-analyst")


def test_the_analyst_image_builds_bubblewrap_from_the_one_pin(default_stack: StackRun) -> None:
    images = {image["name"]: image["inputs"] for image in default_stack.of_type(IMAGE)}
    assert images["images-analyst-build"]["buildArgs"] == bubblewrap_build_args()
    assert "buildArgs" not in images["images-supplier-api-build"]
