"""The program's resources: components and parents, explicit providers, cluster and image modes,
layers, storage, and stack outputs, from offline runs under recording mocks."""

from __future__ import annotations

import pytest
from stack_run import AWS_PROVIDER_TYPE, K8S_PROVIDER_TYPE, StackRun, run_stack

COMPONENTS = {
    "analyst:cluster:ClusterAccess",
    "analyst:images:Images",
    "analyst:storage:CaseStore",
    "analyst:identity:AnalystIdentity",
    "analyst:workspace:Workspace",
    "analyst:pki:SupplierSecrets",
    "analyst:supplier:SupplierApi",
    "analyst:analyst:AnalystJobs",
}
K8S_CREATED = {
    "kubernetes:core/v1:Namespace",
    "kubernetes:core/v1:ServiceAccount",
    "kubernetes:core/v1:Secret",
    "kubernetes:core/v1:ConfigMap",
    "kubernetes:apps/v1:Deployment",
    "kubernetes:core/v1:Service",
    "kubernetes:batch/v1:Job",
}
RUNTIME_CLASS = "kubernetes:node.k8s.io/v1:RuntimeClass"


def test_every_component_is_registered_once_and_owns_children(default_stack: StackRun) -> None:
    for component in COMPONENTS:
        registered = default_stack.one(component)
        children = [r for r in default_stack.resources if r["parent"] == registered["urn"]]
        assert children, f"component {registered['urn']} has no children"


def test_every_resource_outside_the_providers_is_parented_to_a_component(
    default_stack: StackRun,
) -> None:
    component_urns = {r["urn"] for r in default_stack.resources if r["type"] in COMPONENTS}
    for resource in default_stack.resources:
        if resource["type"] in COMPONENTS or resource["type"] == AWS_PROVIDER_TYPE:
            continue
        assert resource["parent"] in component_urns, (
            f"{resource['urn']} is not parented to a component"
        )


def test_every_kubernetes_object_uses_the_explicit_provider(default_stack: StackRun) -> None:
    provider = default_stack.one(K8S_PROVIDER_TYPE)
    k8s = [r for r in default_stack.resources if r["type"].startswith("kubernetes:")]
    assert {r["type"] for r in k8s} == K8S_CREATED | {RUNTIME_CLASS}
    for resource in k8s:
        assert default_stack.provider_urn(resource["provider"]) == provider["urn"], (
            f"{resource['urn']} does not use the explicit Kubernetes provider"
        )


def test_every_aws_resource_uses_the_explicit_aws_provider_in_the_configured_region() -> None:
    stack = run_stack(region="eu-central-1")
    provider = stack.one(AWS_PROVIDER_TYPE)
    assert provider["inputs"]["region"] == "eu-central-1"
    for resource in stack.resources:
        if resource["type"].startswith("aws:"):
            assert stack.provider_urn(resource["provider"]) == provider["urn"], (
                f"{resource['urn']} does not use the stack's AWS provider"
            )


def test_the_existing_cluster_is_read_and_never_created(default_stack: StackRun) -> None:
    assert default_stack.of_type("eks:index:Cluster") == []
    provider = default_stack.one(K8S_PROVIDER_TYPE)
    assert provider["inputs"]["clusterIdentifier"] == (
        "arn:aws:eks:us-west-2:123456789012:cluster/procurement-analyst"
    ), f"{provider['urn']} has no stable cluster identifier"


def test_the_provider_authenticates_with_an_exec_token_from_the_cluster_lookup(
    default_stack: StackRun,
) -> None:
    import json

    provider = default_stack.one(K8S_PROVIDER_TYPE)
    kubeconfig = json.loads(provider["inputs"]["kubeconfig"])
    cluster = kubeconfig["clusters"][0]["cluster"]
    assert cluster["server"].startswith("https://"), provider["urn"]
    assert cluster["certificate-authority-data"], provider["urn"]
    user = kubeconfig["users"][0]["user"]
    assert "token" not in user, f"{provider['urn']} stores a token in state"
    assert user["exec"]["command"] == "aws"
    assert user["exec"]["args"][2:6] == [
        "eks",
        "get-token",
        "--cluster-name",
        "procurement-analyst",
    ]


def test_create_mode_makes_an_auto_mode_cluster_with_api_authentication() -> None:
    stack = run_stack(clusterMode="create", clusterName="analyst-new", kubernetesVersion="1.37")
    cluster = stack.one("eks:index:Cluster")
    assert cluster["inputs"]["name"] == "analyst-new", cluster["urn"]
    assert cluster["inputs"]["version"] == "1.37", cluster["urn"]
    assert cluster["inputs"]["authenticationMode"] == "API", cluster["urn"]
    assert cluster["inputs"]["autoMode"]["enabled"] is True, cluster["urn"]
    aws_provider = stack.one(AWS_PROVIDER_TYPE)
    assert stack.provider_urn(cluster["providers"]["aws"]) == aws_provider["urn"], cluster["urn"]
    provider = stack.one(K8S_PROVIDER_TYPE)
    assert cluster["urn"] in provider["dependencies"], (
        f"{provider['urn']} connects before the cluster exists"
    )
    association = stack.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert association["inputs"]["clusterName"] == "analyst-new", association["urn"]


def test_the_runtime_class_is_read_never_created(default_stack: StackRun) -> None:
    runtime_class = default_stack.one(RUNTIME_CLASS)
    assert runtime_class["read"] is True, f"{runtime_class['urn']} is registered, not read"
    assert runtime_class["inputs"]["id"] == "isolated-sandbox"


def test_workloads_wait_for_the_runtime_class(default_stack: StackRun) -> None:
    runtime_class = default_stack.one(RUNTIME_CLASS)
    for type_ in ("kubernetes:core/v1:Namespace", "kubernetes:batch/v1:Job"):
        for resource in default_stack.of_type(type_):
            assert runtime_class["urn"] in resource["dependencies"], (
                f"{resource['urn']} does not wait for the RuntimeClass read"
            )


def test_build_mode_creates_scanned_immutable_repositories_and_builds_both_images(
    default_stack: StackRun,
) -> None:
    repositories = default_stack.of_type("aws:ecr/repository:Repository")
    assert sorted(r["inputs"]["name"] for r in repositories) == [
        "procurement-analyst/dev/analyst",
        "procurement-analyst/dev/supplier-api",
    ]
    for repository in repositories:
        assert repository["inputs"]["imageTagMutability"] == "IMMUTABLE", repository["urn"]
        assert repository["inputs"]["imageScanningConfiguration"] == {"scanOnPush": True}, (
            repository["urn"]
        )
    images = {
        r["inputs"]["dockerfile"]["location"]: r
        for r in default_stack.of_type("docker-build:index:Image")
    }
    assert set(images) == {"Dockerfile.analyst", "Dockerfile.supplier-api"}
    for image in images.values():
        assert image["inputs"]["push"] is True, image["urn"]
        assert image["inputs"]["buildOnPreview"] is False, f"{image['urn']} builds during preview"
        assert image["inputs"]["platforms"] == ["linux/amd64"], image["urn"]
        assert image["inputs"]["tags"][0].rsplit(":", 1)[1].startswith("src-"), image["urn"]
    assert default_stack.outputs["analystImage"].endswith("@sha256:" + "0" * 64)


def test_prebuilt_mode_builds_nothing_and_runs_the_given_references() -> None:
    analyst = "111122223333.dkr.ecr.us-west-2.amazonaws.com/analyst@sha256:" + "a" * 64
    supplier = "111122223333.dkr.ecr.us-west-2.amazonaws.com/supplier@sha256:" + "b" * 64
    stack = run_stack(imageMode="prebuilt", analystImage=analyst, supplierImage=supplier)
    assert stack.of_type("docker-build:index:Image") == []
    assert len(stack.of_type("aws:ecr/repository:Repository")) == 2
    for job in stack.of_type("kubernetes:batch/v1:Job"):
        pod = job["inputs"]["spec"]["template"]["spec"]
        images = {c["image"] for c in pod["containers"] + pod.get("initContainers", [])}
        assert images == {analyst}, job["urn"]
    deployment = stack.one("kubernetes:apps/v1:Deployment")
    assert deployment["inputs"]["spec"]["template"]["spec"]["containers"][0]["image"] == supplier
    assert stack.outputs["analystImage"] == analyst
    assert stack.outputs["supplierImage"] == supplier


@pytest.mark.parametrize("layers", [["bubblewrap"], ["nono"], ["bubblewrap", "nono"]])
def test_one_job_per_enabled_layer(layers: list[str]) -> None:
    stack = run_stack(layers=layers, runTrigger="r7")
    jobs = stack.of_type("kubernetes:batch/v1:Job")
    assert sorted(j["inputs"]["metadata"]["name"] for j in jobs) == sorted(
        f"analyst-{layer}-r7" for layer in layers
    )
    assert stack.outputs["jobNames"] == {layer: f"analyst-{layer}-r7" for layer in layers}


def test_the_bucket_is_locked_down(default_stack: StackRun) -> None:
    bucket = default_stack.one("aws:s3/bucket:Bucket")
    children = {
        r["type"]: r
        for r in default_stack.resources
        if r["dependencies"] and bucket["urn"] in r["dependencies"]
    }
    block = children["aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"]["inputs"]
    for flag in (
        "blockPublicAcls",
        "blockPublicPolicy",
        "ignorePublicAcls",
        "restrictPublicBuckets",
    ):
        assert block[flag] is True, f"{bucket['urn']}: public access block leaves {flag} off"
    encryption = children[
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    ]
    rule = encryption["inputs"]["rules"][0]["applyServerSideEncryptionByDefault"]
    assert rule["sseAlgorithm"] == "AES256", encryption["urn"]
    versioning = children["aws:s3/bucketVersioning:BucketVersioning"]
    assert versioning["inputs"]["versioningConfiguration"] == {"status": "Enabled"}, versioning[
        "urn"
    ]


def test_the_bucket_is_retained_by_default_and_force_destroyed_on_request(
    default_stack: StackRun,
) -> None:
    retained = default_stack.one("aws:s3/bucket:Bucket")
    assert retained["retain_on_delete"] is True, retained["urn"]
    assert retained["inputs"]["forceDestroy"] is False, retained["urn"]
    destroyed = run_stack(bucketOnDestroy="force-destroy", bucketVersioning=False).one(
        "aws:s3/bucket:Bucket"
    )
    assert destroyed["retain_on_delete"] is False, destroyed["urn"]
    assert destroyed["inputs"]["forceDestroy"] is True, destroyed["urn"]


def test_versioning_can_be_left_off() -> None:
    stack = run_stack(bucketOnDestroy="force-destroy", bucketVersioning=False)
    assert stack.of_type("aws:s3/bucketVersioning:BucketVersioning") == []


def test_the_case_its_proposals_and_one_other_case_are_uploaded(default_stack: StackRun) -> None:
    objects = {
        r["inputs"]["key"]: r for r in default_stack.of_type("aws:s3/bucketObjectv2:BucketObjectv2")
    }
    assert set(objects) == {
        "cases/rfp-001/case.json",
        "proposals/rfp-001/cedar.json",
        "proposals/rfp-001/harbor.json",
        "proposals/rfp-001/northstar.json",
        "cases/rfp-other/case.json",
    }
    assert objects["proposals/rfp-001/harbor.json"]["inputs"]["source"]["__asset__"].endswith(
        "cases/rfp-001/proposals/harbor.json"
    )
    assert objects["cases/rfp-other/case.json"]["inputs"]["source"]["__asset__"].endswith(
        "cases/rfp-other/case.json"
    )


def test_the_supplier_api_has_two_cluster_ip_services_on_one_pod(default_stack: StackRun) -> None:
    deployment = default_stack.one("kubernetes:apps/v1:Deployment")
    pod_labels = deployment["inputs"]["spec"]["template"]["metadata"]["labels"]
    services = {
        s["inputs"]["metadata"]["name"]: s
        for s in default_stack.of_type("kubernetes:core/v1:Service")
    }
    assert set(services) == {"supplier-api", "supplier-api-alias"}
    for service in services.values():
        spec = service["inputs"]["spec"]
        assert spec["type"] == "ClusterIP", service["urn"]
        assert [p["port"] for p in spec["ports"]] == [8443], service["urn"]
        assert spec["selector"].items() <= pod_labels.items(), (
            f"{service['urn']} does not select the supplier pod"
        )
    assert (
        services["supplier-api"]["inputs"]["spec"]["selector"]
        == services["supplier-api-alias"]["inputs"]["spec"]["selector"]
    )


def test_the_supplier_command_serves_the_case_with_its_key_and_certificate(
    default_stack: StackRun,
) -> None:
    container = default_stack.one("kubernetes:apps/v1:Deployment")["inputs"]["spec"]["template"][
        "spec"
    ]["containers"][0]
    assert container["command"] == [
        "python",
        "-m",
        "app.supplier_api",
        "serve",
        "--case-dir",
        "/opt/analyst/cases/rfp-001",
        "--key-file",
        "/opt/supplier-key/api-key",
        "--cert",
        "/opt/supplier-tls/tls.crt",
        "--key",
        "/opt/supplier-tls/tls.key",
        "--host",
        "0.0.0.0",
        "--port",
        "8443",
        "--log",
        "/var/lib/supplier-api/requests.jsonl",
    ]


def test_the_namespace_is_labelled_as_managed(default_stack: StackRun) -> None:
    namespace = default_stack.one("kubernetes:core/v1:Namespace")
    assert namespace["inputs"]["metadata"]["name"] == "procurement-analyst"
    assert namespace["inputs"]["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pulumi", (
        namespace["urn"]
    )
    account = default_stack.one("kubernetes:core/v1:ServiceAccount")
    assert account["inputs"]["metadata"]["name"] == "analyst", account["urn"]


def test_stack_outputs_tell_the_user_where_to_look(default_stack: StackRun) -> None:
    outputs = default_stack.outputs
    bucket = default_stack.one("aws:s3/bucket:Bucket")
    assert outputs["namespace"] == "procurement-analyst"
    assert outputs["bucket"] == "procurement-analyst-20260101000000000000000001"
    assert bucket["inputs"]["bucketPrefix"] == "procurement-analyst-"
    assert outputs["reportPrefix"] == f"s3://{outputs['bucket']}/reports/rfp-001/"
    assert outputs["jobNames"] == {"bubblewrap": "analyst-bubblewrap-1", "nono": "analyst-nono-1"}
    assert outputs["roleArn"].startswith("arn:aws:iam::123456789012:role/")
    assert set(outputs) >= {"analystImage", "supplierImage", "ecrRepositories"}
