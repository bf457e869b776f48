"""The analyst Jobs' pods as registered: sandbox, commands, security, sizing and mounts."""

from __future__ import annotations

from typing import Any

import pytest

from app.core import cluster_env
from app.core.roles import Layer
from infra.pod_specs import analyst_pod_spec
from infra.targets import RuntimeTarget
from tests.support.job_inputs import job_inputs
from tests.support.stack_run import StackRun, run_stack

CONTROLLER_ENV = {
    "ANALYST_MODE": "cluster",
    "ANALYST_BUCKET": "procurement-analyst-20260101000000000000000001",
    "AWS_REGION": "us-west-2",
    "ANALYST_MODEL_ID": "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "ANALYST_ROLE_NAME": "identity-role",
    "SUPPLIER_API_URL": "https://supplier-api.procurement-analyst.svc.cluster.local:8443",
    "SUPPLIER_API_ALIAS_URL": "https://supplier-api-alias.procurement-analyst.svc.cluster.local:8443",
    "SUPPLIER_KEY_FILE": "/opt/supplier-key/api-key",
    "SUPPLIER_CA_FILE": "/opt/supplier-ca/ca.crt",
}
IMAGE = "docker-build:index:Image"
QUANTITY = {"m": 1e-3, "": 1.0, "Mi": 2**20, "Gi": 2**30}


def _job(stack: StackRun, layer: str) -> dict[str, Any]:
    return next(
        j
        for j in stack.of_type("kubernetes:batch/v1:Job")
        if j["inputs"]["metadata"]["name"].startswith(f"analyst-{layer}-1-")
    )


def _pod(job: dict[str, Any]) -> dict[str, Any]:
    return job["inputs"]["spec"]["template"]["spec"]


def _quantity(text: str) -> float:
    for suffix in ("Mi", "Gi", "m"):
        if text.endswith(suffix):
            return float(text.removesuffix(suffix)) * QUANTITY[suffix]
    return float(text)


@pytest.mark.parametrize("layer", ["bubblewrap", "nono"])
def test_the_job_runs_once_and_stays_until_the_stack_removes_it(
    default_stack: StackRun, layer: str
) -> None:
    job = _job(default_stack, layer)
    spec = job["inputs"]["spec"]
    assert spec["backoffLimit"] == 0, job["urn"]
    # No TTL: only the stack removes a finished Job, so a refresh never finds it gone.
    assert "ttlSecondsAfterFinished" not in spec, job["urn"]
    assert _pod(job)["restartPolicy"] == "Never", job["urn"]
    assert job["inputs"]["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}, job["urn"]


@pytest.mark.parametrize("layer", ["bubblewrap", "nono"])
def test_the_pod_runs_in_the_sandbox_as_the_analyst(default_stack: StackRun, layer: str) -> None:
    job = _job(default_stack, layer)
    pod = _pod(job)
    assert pod["runtimeClassName"] == "isolated-sandbox", job["urn"]
    assert pod["serviceAccountName"] == "analyst", job["urn"]
    assert pod["automountServiceAccountToken"] is False, job["urn"]
    assert pod["securityContext"]["fsGroup"] == 1000, job["urn"]


@pytest.mark.parametrize("layer", ["bubblewrap", "nono"])
def test_the_controller_runs_the_case_with_the_cluster_settings(
    default_stack: StackRun, layer: str
) -> None:
    job = _job(default_stack, layer)
    (container,) = _pod(job)["containers"]
    assert container["command"] == [
        "python",
        "-m",
        "app.controller",
        "run",
        "--layer",
        layer,
        "--case",
        "/opt/analyst/cases/rfp-001",
        "--workdir",
        "/var/lib/analyst/runs",
    ], job["urn"]
    variables = {e["name"]: e["value"] for e in container["env"]}
    # The report's code revision: the reference the container runs, by digest.
    assert variables.pop(cluster_env.IMAGE) == container["image"], job["urn"]
    assert container["image"] == default_stack.outputs["analystImage"], job["urn"]
    assert variables == CONTROLLER_ENV, job["urn"]


@pytest.mark.parametrize("layer", ["bubblewrap", "nono"])
def test_requests_size_the_sandbox_below_the_limits(default_stack: StackRun, layer: str) -> None:
    job = _job(default_stack, layer)
    resources = _pod(job)["containers"][0]["resources"]
    for kind in ("cpu", "memory"):
        request, limit = (
            _quantity(resources["requests"][kind]),
            _quantity(resources["limits"][kind]),
        )
        assert 0 < request < limit, (
            f"{job['urn']}: {kind} request {request} is not below its limit {limit}"
        )
    assert _quantity(resources["requests"]["memory"]) >= 512 * 2**20, (
        f"{job['urn']}: sandbox too small"
    )


@pytest.mark.parametrize("layer", ["bubblewrap", "nono"])
def test_the_key_and_ca_are_mounted_read_only(default_stack: StackRun, layer: str) -> None:
    job = _job(default_stack, layer)
    pod = _pod(job)
    mounts = {m["mountPath"]: m for m in pod["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    key = mounts["/opt/supplier-key"]
    assert key["readOnly"] is True, job["urn"]
    assert volumes[key["name"]]["secret"] == {
        "secretName": "supplier-key",
        "defaultMode": 0o440,
        "items": [{"key": "api-key", "path": "api-key"}],
    }, job["urn"]
    ca = mounts["/opt/supplier-ca"]
    assert ca["readOnly"] is True, job["urn"]
    assert volumes[ca["name"]]["configMap"] == {"name": "supplier-ca"}, job["urn"]
    for path in ("/var/lib/analyst", "/tmp"):
        assert volumes[mounts[path]["name"]] == {"name": mounts[path]["name"], "emptyDir": {}}, job[
            "urn"
        ]


def test_the_bubblewrap_pod_raises_the_guest_userns_limit_as_root_first(
    default_stack: StackRun,
) -> None:
    job = _job(default_stack, "bubblewrap")
    (init,) = _pod(job)["initContainers"]
    assert init["command"] == [
        "sh",
        "-ec",
        "echo 128 > /proc/sys/user/max_user_namespaces; "
        'test "$(cat /proc/sys/user/max_user_namespaces)" = 128',
    ], job["urn"]
    assert init["securityContext"] == {
        "privileged": True,
        "runAsUser": 0,
        "runAsGroup": 0,
        "runAsNonRoot": False,
    }, job["urn"]


def test_the_root_init_container_is_left_out_of_pod_identity(default_stack: StackRun) -> None:
    # EKS Pod Identity's webhook injects into init containers too, unless the pod lists them.
    job = _job(default_stack, "bubblewrap")
    (init,) = _pod(job)["initContainers"]
    annotations = job["inputs"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"eks.amazonaws.com/skip-containers": init["name"]}, job["urn"]
    assert (
        "annotations" not in _job(default_stack, "nono")["inputs"]["spec"]["template"]["metadata"]
    ), "the nono pod has no init container to leave out"


def test_the_bubblewrap_controller_is_privileged_but_uid_1000(default_stack: StackRun) -> None:
    job = _job(default_stack, "bubblewrap")
    pod = _pod(job)
    assert pod["containers"][0]["securityContext"] == {
        "privileged": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "runAsNonRoot": True,
    }, job["urn"]
    assert pod["securityContext"]["runAsUser"] == 1000, job["urn"]


def test_the_nono_pod_is_hardened_throughout(default_stack: StackRun) -> None:
    job = _job(default_stack, "nono")
    pod = _pod(job)
    assert "initContainers" not in pod, job["urn"]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "fsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }, job["urn"]
    assert pod["containers"][0]["securityContext"] == {
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }, job["urn"]


def test_no_nono_container_is_privileged(default_stack: StackRun) -> None:
    job = _job(default_stack, "nono")
    for container in _pod(job)["containers"]:
        assert not container["securityContext"].get("privileged"), job["urn"]


def test_the_supplier_pod_is_an_ordinary_hardened_pod(default_stack: StackRun) -> None:
    deployment = default_stack.one("kubernetes:apps/v1:Deployment")
    pod = deployment["inputs"]["spec"]["template"]["spec"]
    assert "runtimeClassName" not in pod, deployment["urn"]
    assert pod["automountServiceAccountToken"] is False, deployment["urn"]
    assert pod["securityContext"]["runAsNonRoot"] is True, deployment["urn"]
    container = pod["containers"][0]["securityContext"]
    assert container["allowPrivilegeEscalation"] is False, deployment["urn"]
    assert container["readOnlyRootFilesystem"] is True, deployment["urn"]
    assert container["capabilities"] == {"drop": ["ALL"]}, deployment["urn"]


def test_the_env_contract_module_names_every_variable_the_job_sets() -> None:
    names = {
        value
        for name, value in vars(cluster_env).items()
        if name.isupper() and isinstance(value, str) and value.isupper() and "_" in value
    }
    # The Pod Identity webhook, not the Job, sets these two; only a rehearsal sets the third;
    # the fourth only a stack with egressPolicy (tests/infra/test_egress.py).
    injected = {cluster_env.POD_IDENTITY_URI, cluster_env.POD_IDENTITY_TOKEN_FILE}
    optional = {cluster_env.REHEARSAL, cluster_env.EGRESS_DENIED}
    assert names - injected - optional == {*CONTROLLER_ENV, cluster_env.IMAGE}
    assert cluster_env.REHEARSAL not in CONTROLLER_ENV


def test_every_layer_has_a_pod_spec() -> None:
    for layer in Layer:
        spec = analyst_pod_spec(job_inputs(layer))
        assert spec["runtimeClassName"] == "isolated-sandbox"


@pytest.mark.parametrize("target", list(RuntimeTarget))
@pytest.mark.parametrize("layer", list(Layer))
def test_every_analyst_container_is_told_the_image_it_runs(
    layer: Layer, target: RuntimeTarget
) -> None:
    # The controller's report names its code revision from this variable alone.
    (container,) = analyst_pod_spec(job_inputs(layer, target))["containers"]
    variables = {e["name"]: e["value"] for e in container["env"]}
    assert variables[cluster_env.IMAGE] == container["image"] == "i"


# --- the images' architecture: every pod that runs one is placed on nodes of it -------------


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
def test_every_pod_running_an_image_selects_nodes_of_the_architecture_it_is_built_for(
    preview: bool,
) -> None:
    stack = run_stack(preview=preview, comparisonPod=True)
    platforms = {p for image in stack.of_type(IMAGE) for p in image["inputs"]["platforms"]}
    assert platforms == {"linux/amd64"}, "the images are built for one architecture"
    workloads = stack.of_type("kubernetes:batch/v1:Job") + stack.of_type(
        "kubernetes:apps/v1:Deployment"
    )
    # Two analyst Jobs, two comparison Jobs and the supplier API.
    assert len(workloads) == 5
    for workload in workloads:
        pod = workload["inputs"]["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"kubernetes.io/arch": "amd64"}, workload["urn"]
