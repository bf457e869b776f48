"""The deploy path as the engine would walk it: image pushes, Job names, what a destroy removes,
the cluster checks, the RuntimeClass read in each mode, restarts, deadlines, names, providers,
and every combination of modes in preview."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest

from app.core.roles import Layer
from infra.cluster_checks import ClusterFacts, ClusterNotReady, require_ready_cluster
from infra.manifests import supplier_config_checksum
from infra.naming import ecr_repository_name, job_name, slug, spec_digest
from infra.pod_specs import JOB_DEADLINE_SECONDS
from infra.runtime_class_wait import NotYetReadable, RuntimeClassUnavailable, wait_until_readable
from tests.support.engine import SANDBOX_TAINT, SUPPLIER_KEY
from tests.support.stack_run import (
    CREATE_MODE,
    CREATE_WORLD,
    PREBUILT,
    SUBNETS,
    VPC,
    StackRun,
    run_failing,
    run_stack,
)

JOB = "kubernetes:batch/v1:Job"
IMAGE = "docker-build:index:Image"
RUNTIME_CLASS = "kubernetes:node.k8s.io/v1:RuntimeClass"
EKS_CLUSTER = "eks:index:Cluster"
S3_TYPES = {
    "aws:s3/bucket:Bucket",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketVersioning:BucketVersioning",
    "aws:s3/bucketObjectv2:BucketObjectv2",
}


def _name(resource: dict[str, Any]) -> str:
    return str(resource["inputs"]["metadata"]["name"])


# --- 2: images are pushed by digest, never under a tag that could collide ------------------


def test_images_are_pushed_by_digest_without_a_tag(default_stack: StackRun) -> None:
    repositories = {
        r["inputs"]["name"]: r for r in default_stack.of_type("aws:ecr/repository:Repository")
    }
    for repository in repositories.values():
        assert repository["inputs"]["imageTagMutability"] == "IMMUTABLE", repository["urn"]
        assert repository["inputs"]["imageScanningConfiguration"] == {"scanOnPush": True}
    images = default_stack.of_type(IMAGE)
    assert {i["inputs"]["dockerfile"]["location"] for i in images} == {
        "Dockerfile.analyst",
        "Dockerfile.supplier-api",
    }
    for image in images:
        inputs = image["inputs"]
        assert not inputs.get("tags"), (
            f"{image['urn']} pushes a tag that a rebuild can collide with"
        )
        (export,) = inputs["exports"]
        assert export["image"]["push"] is True and export["image"]["pushByDigest"] is True, (
            f"{image['urn']} does not push by digest"
        )
        assert inputs["buildOnPreview"] is False, f"{image['urn']} builds during preview"
        assert inputs["platforms"] == ["linux/amd64"], image["urn"]
        assert re.fullmatch(r"[0-9a-f]{64}", inputs["labels"]["procurement-analyst.source-sha256"])


def test_every_pod_runs_its_image_by_digest(default_stack: StackRun) -> None:
    digest = r"@sha256:[0-9a-f]{64}"
    repository = (
        "123456789012.dkr.ecr.us-west-2.amazonaws.com/procurement-analyst/organization/"
        f"dev-{INSTANCE}/"
    )
    assert re.fullmatch(
        re.escape(repository + "analyst") + digest, default_stack.outputs["analystImage"]
    )
    deployment = default_stack.one("kubernetes:apps/v1:Deployment")
    pods = [deployment, *default_stack.of_type(JOB)]
    for resource in pods:
        spec = resource["inputs"]["spec"]["template"]["spec"]
        for container in spec["containers"] + spec.get("initContainers", []):
            assert re.search(digest + "$", container["image"]), (
                f"{resource['urn']} runs {container['image']}, not a digest"
            )


# --- 3: Jobs are named after their spec and never replaced in place ------------------------


def test_a_job_name_is_its_layer_trigger_and_a_suffix_within_the_label_limit() -> None:
    spec = {"template": {"spec": {"containers": [{"image": "a@sha256:1"}]}}}
    digest = spec_digest("1", spec)
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert spec_digest("2", spec) != digest, "a new runTrigger must draw a new name"
    assert spec_digest("1", json.loads(json.dumps(spec))) == digest
    assert re.fullmatch(r"analyst-nono-1-[0-9a-f]{10}", job_name(Layer.NONO, "1", digest[:10]))
    assert len(job_name(Layer.BUBBLEWRAP, "a" * 32, digest[:10])) <= 63


RANDOM_ID = "random:index/randomId:RandomId"


def _jobs_by_name(stack: StackRun) -> dict[str, dict[str, Any]]:
    return {job["name"]: job for job in stack.of_type(JOB)}


@pytest.mark.parametrize("layer", ["bubblewrap", "nono"])
def test_a_jobs_name_is_drawn_anew_whenever_its_spec_changes(layer: str) -> None:
    # A name that is a function of the spec comes back when the spec does (runTrigger 1, 2,
    # then 1 again), and would meet a Job of that name still being deleted: AlreadyExists. The
    # name's suffix is a random id whose keeper is the spec's digest, which the engine draws
    # anew on every change of its keepers, a change back included.
    digests = {}
    for trigger in ("1", "2"):
        stack = run_stack(runTrigger=trigger)
        job = _jobs_by_name(stack)[f"analyst-{layer}"]
        (suffix,) = [r for r in stack.of_type(RANDOM_ID) if r["name"] == f"analyst-{layer}-name"]
        assert suffix["urn"] in job["property_dependencies"]["metadata"], (
            f"{job['urn']}'s name does not come from {suffix['urn']}"
        )
        spec = job["inputs"]["spec"]
        assert suffix["inputs"]["keepers"] == {"spec": spec_digest(trigger, spec)}, suffix["urn"]
        assert job["inputs"]["metadata"]["name"].startswith(f"analyst-{layer}-{trigger}-")
        digests[trigger] = suffix["inputs"]["keepers"]["spec"]
    assert digests["1"] != digests["2"]


def test_a_new_image_is_a_new_job_beside_the_old_one() -> None:
    before = {
        j["inputs"]["metadata"]["labels"]["procurement-analyst/layer"]: _name(j)
        for j in run_stack(**PREBUILT).of_type(JOB)
    }
    other = dict(PREBUILT, analystImage=PREBUILT["analystImage"].replace("a" * 64, "c" * 64))
    after = {
        j["inputs"]["metadata"]["labels"]["procurement-analyst/layer"]: _name(j)
        for j in run_stack(**other).of_type(JOB)
    }
    for layer in before:
        assert before[layer] != after[layer], f"{layer}: a new image kept the Job's name"


@pytest.mark.parametrize("layer", ["bubblewrap", "nono"])
def test_a_job_stays_until_the_stack_replaces_or_destroys_it(layer: str) -> None:
    # No TTL and not retained: the stack's state and the cluster hold the same Jobs, so a
    # refresh never finds a finished Job gone (which `up` would then create again), and no Job
    # outlives the stack.
    stack = run_stack(comparisonPod=True)
    jobs = [j for j in stack.of_type(JOB) if f"-{layer}-" in _name(j)]
    assert len(jobs) == 2, "the analyst Job and its comparison Job"
    for job in jobs:
        assert "ttlSecondsAfterFinished" not in job["inputs"]["spec"], job["urn"]
        assert job["delete_before_replace"] is False, f"{job['urn']} deletes before it creates"
        assert job["retain_on_delete"] is False, f"{job['urn']} would outlive the stack"
    destroyed = {r["urn"] for r in stack.destroyed_by_destroy()}
    assert {job["urn"] for job in jobs} <= destroyed


@pytest.mark.parametrize("preview", [True, False])
def test_refresh_then_up_never_runs_a_finished_case_again(preview: bool) -> None:
    # What a `pulumi refresh` then `up` sees, with nothing the case depends on changed:
    # - each Job is still in the cluster (no TTL, not deleted but by the stack), so the refresh
    #   reads it back instead of dropping it from the state, and `up` has nothing to create;
    # - pulumi-kubernetes diffs the program's inputs against the last inputs, not against the
    #   object's refreshed status, so a finished Job is no change
    #   (https://github.com/pulumi/pulumi-kubernetes/issues/1525);
    # - the name's random id keeps its value while its keeper, the spec's digest, is the same.
    # So two runs of the program with the same settings register every Job with the same inputs
    # and the same keepers, and the only thing that runs a case again is a changed input (the
    # test above and test_a_jobs_name_is_drawn_anew_whenever_its_spec_changes).
    settings = {"comparisonPod": True, "runTrigger": "7"}
    first, again = run_stack(**settings), run_stack(preview=preview, **settings)
    if preview:
        # A preview of the same settings plans the same Jobs, by the same keepers.
        first = run_stack(preview=True, **settings)
    for before, after in ((first, again),):
        names = sorted(j["name"] for j in before.of_type(JOB))
        assert names == sorted(j["name"] for j in after.of_type(JOB))
        for name in names:
            (old,) = [j for j in before.of_type(JOB) if j["name"] == name]
            (new,) = [j for j in after.of_type(JOB) if j["name"] == name]
            assert new["inputs"]["spec"] == old["inputs"]["spec"], new["urn"]
            assert "ttlSecondsAfterFinished" not in new["inputs"]["spec"], new["urn"]
        keepers = {r["name"]: r["inputs"]["keepers"] for r in before.of_type(RANDOM_ID)}
        assert keepers == {r["name"]: r["inputs"]["keepers"] for r in after.of_type(RANDOM_ID)}


# --- 4: a retained bucket keeps its protections and objects --------------------------------


def test_a_retained_bucket_keeps_everything_that_protects_it(default_stack: StackRun) -> None:
    s3 = [r for r in default_stack.resources if r["type"] in S3_TYPES]
    assert {r["type"] for r in s3} == S3_TYPES
    destroyed = [r["urn"] for r in default_stack.destroyed_by_destroy() if r["type"] in S3_TYPES]
    assert destroyed == [], f"`pulumi destroy` with bucketOnDestroy retain would delete {destroyed}"


def test_force_destroy_removes_the_bucket_and_everything_in_it() -> None:
    stack = run_stack(bucketOnDestroy="force-destroy")
    bucket = stack.one("aws:s3/bucket:Bucket")
    assert bucket["inputs"]["forceDestroy"] is True, bucket["urn"]
    destroyed = {r["type"] for r in stack.destroyed_by_destroy()}
    assert destroyed >= S3_TYPES


# --- 5: an existing cluster is checked before anything is created --------------------------


@pytest.mark.parametrize(
    ("world", "expected"),
    [
        (
            {"cluster_version": "1.35"},
            "it runs Kubernetes 1.35; the isolated-sandbox RuntimeClass needs 1.36 or later: "
            "aws eks update-cluster-version",
        ),
        (
            {"auto_mode": False},
            "aws eks create-addon --region us-west-2 --cluster-name procurement-analyst "
            "--addon-name eks-pod-identity-agent",
        ),
    ],
)
def test_an_unready_existing_cluster_stops_the_program_naming_the_fix(
    world: dict[str, Any], expected: str
) -> None:
    failure = run_failing(world=world)
    assert "ClusterNotReady: cluster procurement-analyst (us-west-2) cannot run" in failure.stderr
    assert expected in failure.stderr


def test_a_cluster_without_auto_mode_but_with_the_agent_is_accepted() -> None:
    stack = run_stack(world={"auto_mode": False, "addons": ["eks-pod-identity-agent"]})
    assert stack.of_type(JOB)


def test_one_error_names_every_problem() -> None:
    facts = ClusterFacts("c", "eu-west-1", "1.30", auto_mode=False, pod_identity_agent=False)
    with pytest.raises(ClusterNotReady) as caught:
        require_ready_cluster(facts)
    message = str(caught.value)
    assert "update-cluster-version" in message and "create-addon" in message


def test_the_checks_run_before_any_resource() -> None:
    # Only the stack's providers and the cluster component exist when the check stops it.
    failure = run_failing(world={"cluster_version": "1.35"})
    assert failure.returncode == 2
    assert "0 of them provider resources" in failure.stderr


# --- 5, 14: a created cluster runs Auto Mode in the configured, checked network ------------


def test_create_mode_needs_subnets_of_the_vpc_in_two_zones() -> None:
    wrong_vpc = {
        "subnets": {
            SUBNETS[0]: ["vpc-0000000000000000f", "us-west-2a"],
            SUBNETS[1]: [VPC, "us-west-2b"],
        }
    }
    failure = run_failing(world=wrong_vpc, **CREATE_MODE)
    assert f"subnetIds: {SUBNETS[0]} is in vpc-0000000000000000f, not vpcId {VPC}" in failure.stderr
    one_zone = {"subnets": {SUBNETS[0]: [VPC, "us-west-2a"], SUBNETS[1]: [VPC, "us-west-2a"]}}
    failure = run_failing(world=one_zone, **CREATE_MODE)
    assert "at least two Availability Zones" in failure.stderr


# --- 6: the RuntimeClass read, per mode, in preview and in up ------------------------------


def test_existing_mode_reads_the_runtime_class_in_preview_too() -> None:
    stack = run_stack(preview=True)
    read = stack.one(RUNTIME_CLASS)
    assert read["read"] is True and read["inputs"]["id"] == "isolated-sandbox"


def test_create_mode_says_in_preview_that_the_runtime_class_is_read_on_up() -> None:
    stack = run_stack(preview=True, world=CREATE_WORLD, **CREATE_MODE)
    assert stack.of_type(RUNTIME_CLASS) == [], "a preview registered a read it cannot make"
    warnings = [line["message"] for line in stack.logs if line["level"] == "warning"]
    assert any(
        "isolated-sandbox RuntimeClass" in w and "`pulumi up` waits for it" in w for w in warnings
    )
    cluster = stack.one(EKS_CLUSTER)
    for job in stack.of_type(JOB):
        assert cluster["urn"] in job["dependencies"], (
            f"{job['urn']} does not wait for the created cluster"
        )


def test_create_mode_reads_the_runtime_class_on_up_after_the_cluster_and_access() -> None:
    stack = run_stack(world=CREATE_WORLD, **CREATE_MODE)
    read = stack.one(RUNTIME_CLASS)
    provider = stack.one("pulumi:providers:kubernetes")
    assert stack.provider_urn(read["provider"]) == provider["urn"]
    # The remote component stands for all its children, the deployer's access entry included.
    assert stack.one(EKS_CLUSTER)["urn"] in provider["dependencies"]
    for job in stack.of_type(JOB) + stack.of_type("kubernetes:core/v1:Namespace"):
        assert read["urn"] in job["dependencies"], f"{job['urn']} does not wait for the read"


# --- 7: the supplier pod restarts when what it mounts changes ------------------------------


def test_the_supplier_template_carries_a_checksum_of_what_it_mounts(
    default_stack: StackRun,
) -> None:
    deployment = default_stack.one("kubernetes:apps/v1:Deployment")
    annotations = deployment["inputs"]["spec"]["template"]["metadata"]["annotations"]
    key_digest = hashlib.sha256(SUPPLIER_KEY.encode()).hexdigest()
    expected = supplier_config_checksum(
        cert_pem="mock certificate of pki-server",
        ca_pem="mock certificate of pki-ca",
        key_digest=key_digest,
    )
    assert annotations == {"procurement-analyst/supplier-config-sha256": expected}, (
        f"{deployment['urn']} does not restart when its certificate, CA or key changes"
    )
    assert SUPPLIER_KEY not in json.dumps(deployment["inputs"])


def test_the_checksum_follows_each_input() -> None:
    base = {"cert_pem": "c", "ca_pem": "a", "key_digest": "k"}
    first = supplier_config_checksum(**base)
    for field in base:
        assert supplier_config_checksum(**dict(base, **{field: "other"})) != first, field


# --- 8: a Job cannot hang unnoticed --------------------------------------------------------


@pytest.mark.parametrize("layer", ["bubblewrap", "nono"])
def test_every_job_has_a_deadline(default_stack: StackRun, layer: str) -> None:
    (job,) = [j for j in default_stack.of_type(JOB) if _name(j).startswith(f"analyst-{layer}-")]
    deadline = job["inputs"]["spec"].get("activeDeadlineSeconds")
    assert deadline == JOB_DEADLINE_SECONDS, f"{job['urn']} may hang forever"
    assert 600 <= deadline <= 3600


# --- 9: ECR names unique per organization, project, stack and stack instance ---------------

# The mock engine's draw for the stack instance id (tests/support/engine.py, World.random_seed).
INSTANCE = hashlib.sha256(b"state-1/images-stack-instance").hexdigest()[:8]
REPOSITORY = "aws:ecr/repository:Repository"


@pytest.mark.parametrize(
    ("stack", "part"),
    [("dev", "/dev-"), ("prod", "/prod-"), ("Prod", "/prod-"), ("team_A.stage", "/team-a-stage-")],
)
def test_a_stack_name_becomes_a_valid_repository_path(stack: str, part: str) -> None:
    name = ecr_repository_name("acme", "procurement-analyst", stack, "analyst", "0a1b2c3d")
    assert name.startswith("procurement-analyst/acme") and part in name, name
    assert slug("Prod") != slug("prod"), "two stacks would share repositories"


def test_the_same_stack_of_another_organization_or_project_has_its_own_repositories() -> None:
    names = {
        ecr_repository_name(organization, project, "dev", "analyst", "0a1b2c3d")
        for organization, project in [
            ("acme", "procurement-analyst"),
            ("fork", "procurement-analyst"),
            ("acme", "procurement-analyst-fork"),
        ]
    }
    assert len(names) == 3, names
    longest = ecr_repository_name("o" * 100, "p" * 100, "s" * 100, "supplier-api", "0a1b2c3d")
    assert len(longest) <= 256 and longest.endswith("/supplier-api")


def test_the_program_names_repositories_by_organization_project_and_stack() -> None:
    for organization in ("acme", "fork"):
        stack = run_stack(stack="Prod", organization=organization)
        names = sorted(r["inputs"]["name"] for r in stack.of_type(REPOSITORY))
        drawn = hashlib.sha256(b"state-1/images-stack-instance").hexdigest()[:8]
        assert names == [
            ecr_repository_name(organization, "procurement-analyst", "Prod", "analyst", drawn),
            ecr_repository_name(organization, "procurement-analyst", "Prod", "supplier-api", drawn),
        ]
        assert all(name == name.lower() for name in names)


def test_two_self_managed_backends_same_stack_name_get_their_own_repositories() -> None:
    # On an S3 or file backend every stack's organization is `organization`: two people's `dev`
    # stacks of one account differ only by what each stack's own state drew.
    runs = [run_stack(world={"random_seed": seed}) for seed in ("alice-state", "bob-state")]
    names = [sorted(r["inputs"]["name"] for r in run.of_type(REPOSITORY)) for run in runs]
    assert set(names[0]).isdisjoint(names[1]), names
    for run in runs:
        (instance,) = [r for r in run.of_type("random:index/randomId:RandomId")
                       if r["name"] == "images-stack-instance"]  # fmt: skip
        assert instance["inputs"]["keepers"] == {"stack": "dev"}
        for repository in run.of_type(REPOSITORY):
            assert instance["urn"] in repository["property_dependencies"]["name"], (
                f"{repository['urn']}'s name does not come from the stack's instance id"
            )
    buckets = [run.one("aws:s3/bucket:Bucket")["inputs"]["bucketPrefix"] for run in runs]
    assert all(prefix.endswith("-") for prefix in buckets), "the bucket gets a random suffix"


def test_a_name_cannot_be_given_an_instance_that_is_not_a_random_id() -> None:
    with pytest.raises(ValueError, match="not a short hex string"):
        ecr_repository_name("acme", "procurement-analyst", "dev", "analyst", "../x")


# --- 12: one identity, explicit providers everywhere ---------------------------------------


@pytest.mark.parametrize("mode", ["existing", "create"])
def test_nothing_uses_a_default_provider(mode: str) -> None:
    stack = run_stack() if mode == "existing" else run_stack(world=CREATE_WORLD, **CREATE_MODE)
    for resource in stack.resources:
        if resource["custom"] and not resource["type"].startswith("pulumi:providers:"):
            assert resource["provider"] and "::default" not in resource["provider"], (
                f"{resource['urn']} uses a default provider"
            )
    for invoke in stack.invokes:
        assert invoke["provider"], f"the lookup {invoke['token']} uses a default provider"


def test_the_aws_provider_and_the_cluster_token_share_one_identity() -> None:
    role = "arn:aws:iam::123456789012:role/deployer"
    stack = run_stack(awsProfile="ops", awsRoleArn=role)
    aws_provider = stack.one("pulumi:providers:aws")
    assert aws_provider["inputs"]["profile"] == "ops", aws_provider["urn"]
    assert json.loads(aws_provider["inputs"]["assumeRoles"])[0]["roleArn"] == role
    provider = stack.one("pulumi:providers:kubernetes")
    args = json.loads(provider["inputs"]["kubeconfig"])["users"][0]["user"]["exec"]["args"]
    assert args[args.index("--profile") + 1] == "ops", provider["urn"]
    assert args[args.index("--role-arn") + 1] == role, provider["urn"]


# --- preview: every mode plans every resource ----------------------------------------------


def _planned(stack: StackRun) -> set[tuple[str, str]]:
    return {(r["type"], r["name"]) for r in stack.resources if not r["read"]}


@pytest.mark.parametrize("cluster", ["existing", "create"])
@pytest.mark.parametrize("images", ["build", "prebuilt"])
def test_preview_plans_every_resource_the_update_creates(cluster: str, images: str) -> None:
    config: dict[str, Any] = dict(PREBUILT) if images == "prebuilt" else {}
    world: dict[str, Any] = {}
    if cluster == "create":
        config |= CREATE_MODE
        world = CREATE_WORLD
    preview = run_stack(preview=True, world=world, **config)
    update = run_stack(world=world, **config)
    assert _planned(preview) == _planned(update)
    for job in preview.of_type(JOB):
        # Its name waits for the spec (the new bucket's name, a built image's digest); the rest
        # of its metadata is known, so the plan shows where and what it is.
        metadata = job["inputs"]["metadata"]
        assert metadata["namespace"] == "procurement-analyst", job["urn"]
        assert metadata["annotations"] == {"pulumi.com/skipAwait": "true"}, job["urn"]


# --- the comparison pod lands beside its analyst pod, and follows every change of it --------


def _comparison(stack: StackRun, layer: str) -> dict[str, Any]:
    return _jobs_by_name(stack)[f"analyst-compare-{layer}"]


def test_the_comparison_pod_tolerates_what_the_sandbox_runtime_class_tolerates() -> None:
    # The sandbox nodes' taint is the RuntimeClass's to name: the pod copies its tolerations.
    other = {"key": "other.example/taint", "operator": "Equal", "value": "x", "effect": "NoExecute"}
    for tolerations in ([{"key": SANDBOX_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
                        [other]):  # fmt: skip
        stack = run_stack(comparisonPod=True, world={"sandbox_tolerations": tolerations})
        for layer in ("bubblewrap", "nono"):
            pod = _comparison(stack, layer)["inputs"]["spec"]["template"]["spec"]
            assert pod["tolerations"] == tolerations, _comparison(stack, layer)["urn"]


@pytest.mark.parametrize(
    "change",
    [
        {"modelId": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
        {"caseId": "rfp-other"},
        {"runTrigger": "2"},
        PREBUILT,
    ],
)
def test_every_change_of_the_analyst_job_is_a_new_comparison_job(change: dict[str, Any]) -> None:
    before, after = run_stack(comparisonPod=True), run_stack(comparisonPod=True, **change)
    for layer in ("bubblewrap", "nono"):
        analyst = [_jobs_by_name(s)[f"analyst-{layer}"]["inputs"]["metadata"]["name"]
                   for s in (before, after)]  # fmt: skip
        compared = [_comparison(s, layer)["inputs"]["metadata"]["name"] for s in (before, after)]
        assert analyst[0] != analyst[1], f"{layer}: {change} kept the analyst Job"
        assert compared[0] != compared[1], f"{layer}: {change} kept the comparison Job"
        selector = _comparison(after, layer)["inputs"]["spec"]["template"]["spec"]["affinity"]
        term = selector["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
        assert term["labelSelector"]["matchLabels"]["batch.kubernetes.io/job-name"] == analyst[1]


# --- a created cluster's RuntimeClass is waited for, within a bound ------------------------


def _reads(*answers: int) -> tuple[list[float], Any]:
    slept: list[float] = []
    queue = list(answers)

    def read() -> None:
        status = queue.pop(0)
        if status:
            raise NotYetReadable(status, "Forbidden" if status == 403 else "NotFound")

    return slept, read


def test_access_still_propagating_and_a_runtime_class_not_yet_made_are_waited_for() -> None:
    slept, read = _reads(403, 401, 404, 0)
    outcome = wait_until_readable(
        read, "isolated-sandbox", attempts=5, interval=2, sleep=slept.append
    )
    assert (outcome.attempts, slept) == (4, [2, 2, 2])


def test_the_wait_ends_with_one_error_naming_the_last_answer_and_the_fix() -> None:
    slept, read = _reads(403, 403, 404)
    with pytest.raises(RuntimeClassUnavailable) as caught:
        wait_until_readable(read, "isolated-sandbox", attempts=3, interval=5, sleep=slept.append)
    message = str(caught.value)
    assert "still not readable after 3 attempts over 10s (last answer: 404 NotFound)" in message
    assert "access entry" in message and "Kubernetes 1.36 or later" in message
    assert slept == [5, 5], "no sleep after the last attempt"


def test_any_other_answer_stops_at_once() -> None:
    slept, read = _reads(500)
    with pytest.raises(RuntimeClassUnavailable, match="500"):
        wait_until_readable(read, "isolated-sandbox", attempts=3, interval=5, sleep=slept.append)
    assert slept == []


def test_create_mode_reads_the_runtime_class_only_once_the_wait_is_over() -> None:
    stack = run_stack(world=CREATE_WORLD, **CREATE_MODE)
    (wait,) = stack.of_type("pulumi-python:dynamic:Resource")
    cluster = stack.one(EKS_CLUSTER)
    assert cluster["urn"] in wait["dependencies"], "the wait starts before the deployer's access"
    assert wait["inputs"]["name"] == "isolated-sandbox"
    kubeconfig = stack.one("pulumi:providers:kubernetes")["inputs"]["kubeconfig"]
    assert wait["inputs"]["kubeconfig"] == kubeconfig, "it reads as the provider would"
    assert wait["urn"] in stack.one(RUNTIME_CLASS)["dependencies"]
    # An explicit provider: the stack disables every default one.
    assert (
        stack.provider_urn(wait["provider"]) == stack.one("pulumi:providers:pulumi-python")["urn"]
    )
    # A preview plans it (the engine runs no create in a preview) and reads nothing.
    preview = run_stack(preview=True, world=CREATE_WORLD, **CREATE_MODE)
    assert len(preview.of_type("pulumi-python:dynamic:Resource")) == 1
    assert preview.of_type(RUNTIME_CLASS) == []
