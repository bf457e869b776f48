"""The stack: reads the typed config, makes the explicit providers, and wires the components."""

from __future__ import annotations

import sys
from pathlib import Path

# NOTE: Pulumi's Python host runs `main: infra/` as a script directory (runpy), which puts
# infra/ itself, not the repository root, on sys.path. The program's modules import each other
# as the package `infra` and import the shared contracts from `app.core`, both at the root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build
import pulumi_random as random
import pulumi_tls as tls

from infra.commands import (
    AwsCli,
    kubeconfig_command,
    logs_command,
    nitro_evidence_command,
    reports_command,
)
from infra.components.auto_mode_cluster import AutoModeSettings
from infra.components.cluster import ClusterAccess, ClusterSettings
from infra.components.egress import EgressPolicies, EgressPrerequisites, EgressSettings
from infra.components.identity import AnalystIdentity, IdentitySettings
from infra.components.images import Images, ImageSettings
from infra.components.jobs import AnalystJobs, DeployedInputs
from infra.components.pki import SecretSettings, SupplierSecrets
from infra.components.preview_access import PreviewAccess, PreviewAccessSettings
from infra.components.security_profiles import ProfileSettings, SecurityProfiles
from infra.components.signing_key import SigningKey
from infra.components.storage import CaseStore, StoreSettings
from infra.components.supplier import SupplierApi, SupplierSettings
from infra.components.workspace import Workspace, WorkspaceSettings
from infra.config import load_config
from infra.manifests import ANALYST_SERVICE_ACCOUNT
from infra.preview_access import preview_reads
from infra.render_manifests import job_settings
from infra.tags import default_tags
from infra.targets import needs_security_profiles, pod_security_level

config = load_config()

# Every resource and lookup names its provider (Pulumi.yaml disables the defaults). The AWS
# provider acts as the same identity as the Kubernetes provider's token command.
aws_provider = aws.Provider(
    "aws",
    region=config.region,
    profile=config.aws_profile or None,
    assume_roles=[aws.ProviderAssumeRoleArgs(role_arn=config.aws_role_arn)]
    if config.aws_role_arn
    else None,
    default_tags=aws.ProviderDefaultTagsArgs(
        tags=default_tags(pulumi.get_project(), pulumi.get_stack(), config.owner)
    ),
)
docker_provider = docker_build.Provider("docker-build")
tls_provider = tls.Provider("tls")
random_provider = random.Provider("random")

cluster = ClusterAccess(
    "cluster",
    ClusterSettings(
        mode=config.cluster_mode,
        name=config.cluster_name,
        region=config.region,
        runtime_target=config.runtime_target,
        aws_profile=config.aws_profile,
        aws_role_arn=config.aws_role_arn,
        created=AutoModeSettings(
            name=config.cluster_name,
            kubernetes_version=config.kubernetes_version,
            vpc_id=config.vpc_id,
            subnet_ids=config.subnet_ids,
            creator_admin=config.cluster_creator_admin,
            aws_profile=config.aws_profile,
            aws_role_arn=config.aws_role_arn,
        ),
        egress_policy=config.egress_policy,
        cluster_dns_address=config.cluster_dns_address,
    ),
    aws_provider,
)
images = Images(
    "images",
    ImageSettings(config.image_mode, config.analyst_image, config.supplier_image),
    aws_provider,
    docker_provider,
    random_provider,
)
store = CaseStore(
    "store",
    StoreSettings(config.case_id, config.bucket_on_destroy, config.bucket_versioning),
    aws_provider,
)
identity = AnalystIdentity(
    "identity",
    IdentitySettings(
        namespace=config.namespace,
        service_account=ANALYST_SERVICE_ACCOUNT,
        case_id=config.case_id,
        model_id=config.model_id,
        region=config.region,
    ),
    aws_provider,
    bucket_name=store.bucket_name,
    cluster_name=cluster.cluster_name,
    cluster_arn=cluster.cluster_arn,
)
if config.preview_role_arn:
    preview = PreviewAccess(
        "preview-access",
        PreviewAccessSettings(
            config.namespace, config.preview_role_arn, tuple(preview_reads(config))
        ),
        cluster_name=cluster.cluster_name,
        aws_provider=aws_provider,
        kubernetes=cluster.provider,
    )
    pulumi.export("previewClusterRole", preview.cluster_role)
# Signs each run's statement; only the analyst's role may sign with it.
signing = SigningKey(
    "signing", aws_provider, role_arn=identity.role_arn, role_name=identity.role_name
)
egress = EgressSettings(config.namespace, config.region, config.cluster_name)
namespace_waits_for: dict[str, pulumi.Input[str]] = {}
if config.egress_policy:
    prerequisites = EgressPrerequisites(
        "egress-prerequisites",
        egress,
        cluster.provider,
        cluster.kubeconfig,
        opts=pulumi.ResourceOptions(depends_on=cluster.workload_gate),
    )
    namespace_waits_for["procurement-analyst/egress-prerequisites"] = prerequisites.checked
# Workloads are created only after the RuntimeClass read succeeded.
workspace = Workspace(
    "workspace",
    WorkspaceSettings(
        config.namespace,
        pod_security_level(config.runtime_target, config.layers),
        waits_for=namespace_waits_for,
    ),
    cluster.provider,
    opts=pulumi.ResourceOptions(depends_on=cluster.workload_gate),
)
egress_gate: list[pulumi.Resource] = []
if config.egress_policy:
    egress_gate = EgressPolicies(
        "egress",
        egress,
        bucket_name=store.bucket_name,
        resolver=cluster.dns_address,
        provider=cluster.provider,
        opts=pulumi.ResourceOptions(depends_on=[workspace]),
    ).gate
# hardened-container: the bubblewrap pod's seccomp profile is on every node before a Job starts.
profiles_gate: list[pulumi.Resource] = []
if needs_security_profiles(config.runtime_target, config.layers):
    profiles = SecurityProfiles(
        "security-profiles",
        ProfileSettings(config.namespace, config.cluster_addons),
        cluster.provider,
        opts=pulumi.ResourceOptions(depends_on=cluster.workload_gate),
    )
    profiles_gate = profiles.gate
secrets = SupplierSecrets(
    "pki",
    SecretSettings(config.namespace),
    kubernetes=cluster.provider,
    tls_provider=tls_provider,
    random_provider=random_provider,
    opts=pulumi.ResourceOptions(depends_on=[workspace]),
)
supplier = SupplierApi(
    "supplier",
    SupplierSettings(config.namespace, config.case_id),
    image=images.supplier_image,
    config_checksum=secrets.config_checksum,
    provider=cluster.provider,
    opts=pulumi.ResourceOptions(depends_on=[workspace, secrets]),
)
# The supplier API must be serving, and the Pod Identity association must exist before the pod
# is admitted, or the pod starts without AWS credentials.
jobs = AnalystJobs(
    "analyst",
    job_settings(config),
    DeployedInputs(
        image=images.analyst_image,
        bucket_name=store.bucket_name,
        role_name=identity.role_name,
        tolerations=cluster.sandbox_tolerations,
    ),
    provider=cluster.provider,
    random_provider=random_provider,
    opts=pulumi.ResourceOptions(
        depends_on=[
            workspace,
            secrets,
            supplier,
            identity,
            signing,
            *cluster.workload_gate,
            *profiles_gate,
            *egress_gate,
        ]
    ),
)

pulumi.export("clusterName", cluster.cluster_name)
if config.egress_policy:
    pulumi.export("clusterDnsAddress", cluster.dns_address)
pulumi.export("namespace", workspace.namespace)
pulumi.export("bucket", store.bucket_name)
pulumi.export(
    "reportPrefix", pulumi.Output.concat("s3://", store.bucket_name, "/", store.report_prefix)
)
pulumi.export("jobNames", jobs.job_names)
aws_cli = AwsCli(config.region, config.cluster_name, config.aws_profile, config.aws_role_arn)
pulumi.export("kubeconfigCommand", kubeconfig_command(aws_cli))
pulumi.export(
    "logsCommands",
    {
        layer: job_name.apply(lambda job: logs_command(job, config.namespace))
        for layer, job_name in jobs.job_names.items()
    },
)
if config.comparison_pod:
    pulumi.export("comparisonJobNames", jobs.comparison_job_names)
    pulumi.export(
        "nitroEvidenceCommands",
        {
            layer.value: nitro_evidence_command(layer.value, config.namespace)
            for layer in config.layers
        },
    )
pulumi.export(
    "reportsCommand",
    store.bucket_name.apply(lambda bucket: reports_command(aws_cli, bucket, store.report_prefix)),
)
pulumi.export("analystImage", images.analyst_image)
pulumi.export("supplierImage", images.supplier_image)
pulumi.export("ecrRepositories", images.repository_urls)
pulumi.export("roleArn", identity.role_arn)
pulumi.export("signingKeyArn", signing.key_arn)
pulumi.export("supplierApiUrls", supplier.urls)
