"""runtimeTarget hardened-container under the mock engine: the unprivileged bubblewrap pod, what
installs its seccomp profile, the order `pulumi up` creates them in, the namespace's Pod Security
level, and the one pod shape the program refuses."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from app.core.roles import Layer
from infra import pod_specs
from infra.pod_specs import JobInputs, analyst_pod_spec
from infra.security_profiles import (
    CERT_MANAGER,
    SECCOMP_POLICY,
    SECURITY_PROFILES_OPERATOR,
    apparmor_profile_name,
)
from infra.targets import PodShapeError, RuntimeTarget, pod_security_level, require_pod_shape
from tests.support.job_inputs import job_inputs
from tests.support.stack_run import StackRun, run_failing, run_stack

HARDENED: dict[str, Any] = {"runtimeTarget": "hardened-container"}
INSTALLS: dict[str, Any] = {**HARDENED, "clusterAddons": "install"}
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
JOB = "kubernetes:batch/v1:Job"
RELEASE = "kubernetes:helm.sh/v3:Release"
SECCOMP_PROFILE = "kubernetes:security-profiles-operator.x-k8s.io/v1:SeccompProfile"
NAMESPACE = "kubernetes:core/v1:Namespace"
RUNTIME_CLASS = "kubernetes:node.k8s.io/v1:RuntimeClass"


@pytest.fixture(scope="module")
def hardened() -> StackRun:
    return run_stack(**HARDENED)


def _job(stack: StackRun, layer: str) -> dict[str, Any]:
    return next(
        j
        for j in stack.of_type(JOB)
        if j["inputs"]["metadata"]["labels"]["procurement-analyst/layer"] == layer
    )


def _pod(job: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = job["inputs"]["spec"]["template"]["spec"]
    return pod


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def test_the_bubblewrap_pod_is_unprivileged_with_its_own_user_namespace(
    hardened: StackRun,
) -> None:
    pod = _pod(_job(hardened, "bubblewrap"))
    assert "runtimeClassName" not in pod
    assert pod["hostUsers"] is False
    assert "initContainers" not in pod
    (container,) = _containers(pod)
    assert container["securityContext"] == {
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "procMount": "Unmasked",
    }
    assert pod["securityContext"]["seccompProfile"] == {
        "type": "Localhost",
        "localhostProfile": "operator/procurement-analyst-bwrap.json",
    }


def test_on_nodes_that_enforce_apparmor_the_pod_names_the_committed_profile() -> None:
    pod = _pod(_job(run_stack(**HARDENED, nodeAppArmor=True), "bubblewrap"))
    assert apparmor_profile_name() == "procurement-analyst-bwrap"
    assert pod["containers"][0]["securityContext"]["appArmorProfile"] == {
        "type": "Localhost",
        "localhostProfile": "procurement-analyst-bwrap",
    }


def test_the_nono_pod_needs_none_of_it_and_is_the_same_pod_off_the_sandbox(
    hardened: StackRun, default_stack: StackRun
) -> None:
    off_sandbox = _pod(_job(hardened, "nono"))
    in_sandbox = copy.deepcopy(_pod(_job(default_stack, "nono")))
    assert in_sandbox.pop("runtimeClassName") == "isolated-sandbox"
    assert "hostUsers" not in off_sandbox
    assert off_sandbox["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    # The same pod but for the RuntimeClass (the bucket and role names are the mocks' own).
    assert json.dumps(off_sandbox, sort_keys=True) == json.dumps(in_sandbox, sort_keys=True)


def test_no_pod_of_the_hardened_stack_is_privileged(hardened: StackRun) -> None:
    for job in hardened.of_type(JOB):
        for container in _containers(_pod(job)):
            assert not container.get("securityContext", {}).get("privileged"), job["urn"]


@pytest.fixture(scope="module")
def installs() -> StackRun:
    return run_stack(**INSTALLS)


def test_the_operator_and_cert_manager_come_from_pinned_charts(installs: StackRun) -> None:
    releases = {r["inputs"]["name"]: r["inputs"] for r in installs.of_type(RELEASE)}
    assert set(releases) == {"cert-manager", "security-profiles-operator"}
    operator = releases["security-profiles-operator"]
    assert operator["chart"] == (
        "https://github.com/kubernetes-sigs/security-profiles-operator/releases/download/"
        "v1.0.0/security-profiles-operator-1.0.0.tgz"
    )
    assert operator["version"] == "1.0.0"
    assert operator["namespace"] == "security-profiles-operator"
    assert operator["values"]["spoImage"] == {
        "registry": "registry.k8s.io",
        "repository": "security-profiles-operator/security-profiles-operator",
        "tag": "v1.0.0",
    }
    assert operator["values"] == SECURITY_PROFILES_OPERATOR.values
    manager = releases["cert-manager"]
    assert (manager["chart"], manager["version"]) == ("cert-manager", "v1.17.2")
    assert manager["repositoryOpts"] == {"repo": "https://charts.jetstack.io"}
    assert manager["values"] == CERT_MANAGER.values


def test_the_seccomp_profile_object_is_the_committed_policy(hardened: StackRun) -> None:
    profile = hardened.one(SECCOMP_PROFILE)
    assert profile["inputs"]["metadata"]["name"] == "procurement-analyst-bwrap"
    assert profile["inputs"]["metadata"]["annotations"] == {
        "pulumi.com/waitFor": "jsonpath={.status.status}=Installed"
    }
    assert profile["inputs"]["spec"] == json.loads(SECCOMP_POLICY.read_text())


def test_up_installs_cert_manager_then_the_operator_then_the_profile_then_the_job(
    installs: StackRun,
) -> None:
    releases = {r["inputs"]["name"]: r for r in installs.of_type(RELEASE)}
    manager, operator = releases["cert-manager"], releases["security-profiles-operator"]
    profile = installs.one(SECCOMP_PROFILE)
    assert manager["urn"] in operator["dependencies"]
    assert operator["urn"] in profile["dependencies"]
    assert profile["urn"] in _job(installs, "bubblewrap")["dependencies"]


def test_the_installing_stack_never_removes_the_cluster_wide_operators(installs: StackRun) -> None:
    # They serve every stack on the cluster: `pulumi destroy` of this one leaves them.
    releases = installs.of_type(RELEASE)
    assert len(releases) == 2
    for release in releases:
        assert release["retain_on_delete"] is True, release["urn"]
    assert installs.of_type(CRD) == []


def test_a_stack_sharing_the_cluster_installs_nothing_and_requires_the_operator(
    hardened: StackRun,
) -> None:
    # clusterAddons existing (the default): never a second install of the same releases.
    assert hardened.of_type(RELEASE) == []
    crd = hardened.one(CRD)
    assert crd["read"] is True
    assert crd["inputs"]["id"] == "seccompprofiles.security-profiles-operator.x-k8s.io"
    assert crd["urn"] in hardened.one(SECCOMP_PROFILE)["dependencies"]


def test_no_sandbox_runtime_class_is_needed_or_read(hardened: StackRun) -> None:
    assert hardened.of_type(RUNTIME_CLASS) == []


def test_the_isolated_sandbox_stack_installs_no_operator(default_stack: StackRun) -> None:
    assert default_stack.of_type(RELEASE) == []
    assert default_stack.of_type(SECCOMP_PROFILE) == []


def test_a_hardened_stack_without_bubblewrap_installs_no_operator() -> None:
    stack = run_stack(**HARDENED, layers=["nono"])
    assert stack.of_type(RELEASE) == [] and stack.of_type(SECCOMP_PROFILE) == []


@pytest.mark.parametrize(
    ("config", "level"),
    [
        ({}, "privileged"),
        (HARDENED, "baseline"),
        ({"layers": ["nono"]}, "restricted"),
        ({**HARDENED, "layers": ["nono"]}, "restricted"),
    ],
)
def test_the_namespace_enforces_the_strictest_level_its_pods_allow(
    config: dict[str, Any], level: str
) -> None:
    labels = run_stack(**config).one(NAMESPACE)["inputs"]["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == level
    assert labels["pod-security.kubernetes.io/enforce-version"] == "v1.36"


def test_only_the_unmasked_proc_keeps_the_hardened_pod_out_of_restricted(
    hardened: StackRun,
) -> None:
    # The fields Pod Security's restricted checks read (k8s.io/pod-security-admission, policy/
    # check_*_restricted.go, check_runAsNonRoot.go, check_allowPrivilegeEscalation.go): all meet
    # restricted but procMount, which restricted refuses whatever the pod (check_procMount_
    # restricted.go) and baseline admits in a pod with hostUsers: false from policy 1.35 on.
    pod = _pod(_job(hardened, "bubblewrap"))
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "Localhost"
    assert {kind for volume in pod["volumes"] for kind in volume if kind != "name"} <= {
        "configMap",
        "emptyDir",
        "projected",
        "secret",
    }
    assert context["procMount"] == "Unmasked" and pod["hostUsers"] is False
    assert pod_security_level(RuntimeTarget.HARDENED_CONTAINER, [Layer.BUBBLEWRAP]) == "baseline"


def test_node_apparmor_without_the_hardened_target_is_refused() -> None:
    failure = run_failing(nodeAppArmor=True)
    assert failure.returncode == 2
    assert "nodeAppArmor applies to runtimeTarget hardened-container only" in failure.stderr


def test_host_users_false_in_the_sandbox_is_refused_with_the_reason() -> None:
    with pytest.raises(PodShapeError) as caught:
        require_pod_shape({"runtimeClassName": "isolated-sandbox", "hostUsers": False})
    assert "EKS's Nitro sandbox pods do not support user namespaces" in str(caught.value)
    require_pod_shape({"hostUsers": False})
    require_pod_shape({"runtimeClassName": "isolated-sandbox"})


def test_the_pod_builder_refuses_that_shape_before_anything_is_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A builder broken on purpose: the sandbox pod given the hardened pod's user namespace.
    original = pod_specs._bubblewrap_pod

    def with_user_namespace(job: JobInputs) -> dict[str, Any]:
        return {**original(job), "hostUsers": False}

    monkeypatch.setattr(pod_specs, "_bubblewrap_pod", with_user_namespace)
    with pytest.raises(PodShapeError):
        analyst_pod_spec(job_inputs(target=RuntimeTarget.ISOLATED_SANDBOX))
    assert (
        analyst_pod_spec(job_inputs(target=RuntimeTarget.HARDENED_CONTAINER))["hostUsers"] is False
    )
