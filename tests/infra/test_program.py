"""The program's resources: components and parents, explicit providers, cluster and image modes,
layers, storage, and stack outputs, from runs under the recording mock engine."""

from __future__ import annotations

import json
import re

import pytest

from app.core import cluster_env as env
from app.core.case import case_key
from app.core.ids import other_case_id
from app.core.repo import CASES_DIR, REPO_ROOT
from app.supplier_api.__main__ import case_folders
from app.supplier_api.__main__ import parser as supplier_parser
from app.supplier_api.catalog import load_catalog
from tests.support.stack_run import (
    AWS_PROVIDER_TYPE,
    CREATE_MODE,
    CREATE_WORLD,
    K8S_PROVIDER_TYPE,
    PREBUILT,
    StackRun,
    run_stack,
)

COMPONENTS = {
    "analyst:cluster:ClusterAccess",
    "analyst:images:Images",
    "analyst:storage:CaseStore",
    "analyst:identity:AnalystIdentity",
    "analyst:signing:SigningKey",
    "analyst:workspace:Workspace",
    "analyst:pki:SupplierSecrets",
    "analyst:supplier:SupplierApi",
    "analyst:jobs:AnalystJobs",
}
# Every component, and its type token's shape: analyst:<area>:<Name>; a created cluster adds
# its own and pulumi-eks's (a remote component, whose children its plugin makes).
CREATE_COMPONENTS = COMPONENTS | {"analyst:cluster:AutoModeCluster"}
EKS_COMPONENT = "eks:index:Cluster"
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
JOB = "kubernetes:batch/v1:Job"
STACK_PROVIDERS = {
    AWS_PROVIDER_TYPE,
    "pulumi:providers:docker-build",
    "pulumi:providers:tls",
    "pulumi:providers:random",
}


def test_every_component_is_registered_once_and_owns_children(default_stack: StackRun) -> None:
    for component in COMPONENTS:
        registered = default_stack.one(component)
        children = [r for r in default_stack.resources if r["parent"] == registered["urn"]]
        assert children, f"component {registered['urn']} has no children"


@pytest.mark.parametrize("mode", ["existing", "create"])
def test_every_resource_but_the_stack_providers_is_parented_to_a_component(mode: str) -> None:
    stack = run_stack() if mode == "existing" else run_stack(world=CREATE_WORLD, **CREATE_MODE)
    components = {r["urn"]: r["type"] for r in stack.resources if not r["custom"]}
    own = {urn: token for urn, token in components.items() if token != EKS_COMPONENT}
    assert set(own.values()) == (COMPONENTS if mode == "existing" else CREATE_COMPONENTS)
    for token in own.values():
        assert re.fullmatch(r"analyst:[a-z]+:[A-Z][A-Za-z]+", token), token
    stack_urn = "urn:pulumi:dev::procurement-analyst::pulumi:pulumi:Stack::procurement-analyst-dev"
    for resource in stack.resources:
        if resource["parent"] == stack_urn:
            # Only the components and the providers __main__.py makes for all of them.
            assert not resource["custom"] or resource["type"] in STACK_PROVIDERS, resource["urn"]
        else:
            assert resource["parent"] in components, (
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


def test_prebuilt_mode_builds_nothing_and_runs_the_given_references() -> None:
    analyst, supplier = PREBUILT["analystImage"], PREBUILT["supplierImage"]
    stack = run_stack(**PREBUILT)
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
    names = {j["inputs"]["metadata"]["labels"]["procurement-analyst/layer"]: j for j in jobs}
    assert sorted(names) == sorted(layers)
    for layer, job in names.items():
        assert re.fullmatch(
            rf"analyst-{layer}-r7-[0-9a-f]{{10}}", job["inputs"]["metadata"]["name"]
        )
    assert stack.outputs["jobNames"] == {
        layer: job["inputs"]["metadata"]["name"] for layer, job in names.items()
    }


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


def test_a_stack_whose_case_is_the_control_template_seeds_the_control_under_the_id_read() -> None:
    # The controller reads the control case by other_case_id: for rfp-other, rfp-other-2.
    stack = run_stack(caseId="rfp-other")
    objects = {
        r["inputs"]["key"]: r["inputs"]["source"]
        for r in stack.of_type("aws:s3/bucketObjectv2:BucketObjectv2")
    }
    control = case_key(other_case_id("rfp-other"))
    assert set(objects) == {
        "cases/rfp-other/case.json",
        "proposals/rfp-other/lumen.json",
        control,
    }
    assert control == "cases/rfp-other-2/case.json"
    document = json.loads(objects[control]["__asset_text__"])
    template = json.loads((CASES_DIR / "rfp-other" / "case.json").read_text())
    assert document == {**template, "case_id": "rfp-other-2"}


def test_that_stacks_supplier_serves_both_cases_under_the_ids_the_controller_asks_for() -> None:
    deployment = run_stack(caseId="rfp-other").one("kubernetes:apps/v1:Deployment")
    command = deployment["inputs"]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[4:9] == [
        "--case-dir",
        "/opt/analyst/cases/rfp-other",
        "--case-dir-as",
        "rfp-other-2",
        "/opt/analyst/cases/rfp-other",
    ]
    # The supplier API's own parser and catalog, on this checkout's folders, serve them so.
    args = supplier_parser().parse_args(
        [part.replace(env.APP_DIR, str(REPO_ROOT)) for part in command[3:]]
    )
    assert set(load_catalog(case_folders(args))) == {"rfp-other", other_case_id("rfp-other")}


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


def test_the_supplier_command_serves_the_case_and_the_other_case_with_its_key_and_certificate(
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
        # The nono run's control reads the other case from the supplier as the controller.
        "--case-dir",
        "/opt/analyst/cases/rfp-other",
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
    jobs = outputs["jobNames"]
    assert outputs["clusterName"] == "procurement-analyst"
    assert outputs["namespace"] == "procurement-analyst"
    assert outputs["bucket"] == "procurement-analyst-20260101000000000000000001"
    assert bucket["inputs"]["bucketPrefix"] == "procurement-analyst-"
    assert outputs["reportPrefix"] == f"s3://{outputs['bucket']}/reports/rfp-001/"
    assert set(jobs) == {"bubblewrap", "nono"}
    assert {j["inputs"]["metadata"]["name"] for j in default_stack.of_type(JOB)} == set(
        jobs.values()
    )
    assert outputs["kubeconfigCommand"] == (
        "aws eks update-kubeconfig --region us-west-2 --name procurement-analyst"
    )
    assert outputs["logsCommands"] == {
        layer: f"kubectl logs -f job/{name} -n procurement-analyst" for layer, name in jobs.items()
    }
    assert outputs["reportsCommand"] == (
        f"aws s3 ls {outputs['reportPrefix']} --recursive --region us-west-2"
    )
    assert outputs["roleArn"].startswith("arn:aws:iam::123456789012:role/")
    assert set(outputs) >= {"analystImage", "supplierImage", "ecrRepositories"}


def test_the_commands_name_the_deploying_profile_and_role() -> None:
    role = "arn:aws:iam::123456789012:role/deployer"
    outputs = run_stack(awsProfile="ops", awsRoleArn=role).outputs
    assert outputs["kubeconfigCommand"] == (
        "aws --profile ops eks update-kubeconfig --region us-west-2 --name procurement-analyst"
        f" --role-arn {role}"
    )
    assert outputs["reportsCommand"].startswith("aws --profile ops s3 ls s3://")
