"""The stack: reads the typed config and wires the components; every resource lives in them."""

from __future__ import annotations

import sys
from pathlib import Path

# The program imports the shared IAM policy renderer from app/ and its own package, infra/,
# both from the repository root, whichever directory Pulumi runs it from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pulumi
import pulumi_aws as aws

from infra.components.cluster import ClusterAccess
from infra.components.identity import AnalystIdentity
from infra.components.images import Images
from infra.components.jobs import AnalystJobs
from infra.components.pki import SupplierSecrets
from infra.components.storage import CaseStore
from infra.components.supplier import SupplierApi
from infra.components.workspace import ANALYST_SERVICE_ACCOUNT, Workspace
from infra.config import load_config

config = load_config()

# Every AWS resource and lookup uses this provider, so the Region is the stack's typed setting
# and never an ambient default.
aws_provider = aws.Provider("aws", region=config.region)

cluster = ClusterAccess("cluster", config, aws_provider)
images = Images("images", config, aws_provider)
store = CaseStore("store", config, aws_provider)
identity = AnalystIdentity(
    "identity",
    config,
    aws_provider,
    bucket_name=store.bucket_name,
    cluster_name=cluster.cluster_name,
    service_account=ANALYST_SERVICE_ACCOUNT,
)
# Workloads are created only after the RuntimeClass read succeeded.
workspace = Workspace(
    "workspace",
    config.namespace,
    cluster.provider,
    depends_on=[cluster.runtime_class],
)
secrets = SupplierSecrets("pki", workspace.namespace, cluster.provider)
supplier = SupplierApi(
    "supplier",
    namespace=workspace.namespace,
    namespace_name=config.namespace,
    image=images.supplier_image,
    case_id=config.case_id,
    provider=cluster.provider,
    depends_on=[secrets],
)
jobs = AnalystJobs(
    "analyst",
    config,
    namespace=workspace.namespace,
    service_account=workspace.service_account,
    image=images.analyst_image,
    bucket_name=store.bucket_name,
    role_name=identity.role_name,
    provider=cluster.provider,
    depends_on=[supplier, identity, secrets, cluster.runtime_class],
)

pulumi.export("namespace", workspace.namespace)
pulumi.export("bucket", store.bucket_name)
pulumi.export(
    "reportPrefix", pulumi.Output.concat("s3://", store.bucket_name, "/", store.report_prefix)
)
pulumi.export("jobNames", jobs.job_names)
pulumi.export("analystImage", images.analyst_image)
pulumi.export("supplierImage", images.supplier_image)
pulumi.export("ecrRepositories", images.repository_urls)
pulumi.export("roleArn", identity.role_arn)
pulumi.export("supplierApiUrls", supplier.urls)
