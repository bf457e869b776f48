"""Where a run's services come from: loopback stand-ins locally, the pod's own in the cluster.

Local mode (the default, no AWS settings): a moto server with IAM enforcement for S3, IAM and
STS, the supplier API over TLS on loopback, and the offline model. Cluster mode
(``ANALYST_MODE=cluster``, set by the Job): the pod's EKS Pod Identity, the supplier Service,
the mounted key and CA, and Bedrock.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import boto3
from strands.models.model import Model

from app.controller.aws_local import LocalAws
from app.controller.context import AwsCredentialFile, SupplierEndpoint
from app.controller.model import OfflineModel, bedrock_model
from app.controller.store import CaseStore
from app.controller.supplier_client import resolve
from app.controller.supplier_service import LocalSupplierService, supplier_endpoint_from_env
from app.core.case import Case
from app.core.ids import OTHER_CASE_ID
from app.core.run_tree import DEFAULT_LOCAL_BASE, RunPaths, ToolIdentity, new_run_id

REPO_CASES = Path(__file__).resolve().parents[2] / "cases"
CLUSTER_BASE = Path("/var/lib/analyst")
POD_IDENTITY_TOKEN = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
POD_IDENTITY_URI = "AWS_CONTAINER_CREDENTIALS_FULL_URI"


class SettingMissing(RuntimeError):
    """A setting the chosen mode needs is missing; the message names it."""


class RunEnvironment(ABC):
    """The services one run talks to, and how to tell that they are the expected ones."""

    run_id: str
    work_base: Path
    bucket: str
    session: boto3.Session
    store: CaseStore
    supplier: SupplierEndpoint
    supplier_key: bytes
    aws_credential: AwsCredentialFile
    aws_endpoint: tuple[str, int]
    expected_credential_method: str
    credential_source: str
    expected_caller: str
    bedrock: bool
    model_description: str
    # Where report files are copied when --out is not given.
    default_out_parent: Path

    @abstractmethod
    def start_services(self, stack: ExitStack, paths: RunPaths) -> None:
        """Starts or locates every service; after this every attribute above is set."""

    @abstractmethod
    def model(self) -> Model: ...

    @abstractmethod
    def caller_matches(self, arn: str) -> bool: ...

    def credential_method(self) -> str:
        """How boto3 found the controller's credentials (botocore's provider method name)."""
        credentials = self.session.get_credentials()
        return getattr(credentials, "method", "none") if credentials else "none"

    def _read_key(self) -> None:
        key = self.supplier.key_file.read_bytes().strip()
        if not key:
            raise SettingMissing(f"{self.supplier.key_file}: the supplier key file is empty")
        self.supplier_key = key


class LocalEnvironment(RunEnvironment):
    expected_credential_method = "shared-credentials-file"
    credential_source = "the run's own credentials file (the analyst role, assumed from moto's IAM)"
    bedrock = False
    model_description = "the offline model, a deterministic Strands model: no Bedrock locally"

    def __init__(self, case_dir: Path, case: Case, tool: ToolIdentity, base: Path) -> None:
        self.case_dir, self.case, self.tool = case_dir, case, tool
        self.run_id = new_run_id()
        self.work_base = base
        self.default_out_parent = Path("runs")

    def start_services(self, stack: ExitStack, paths: RunPaths) -> None:
        other = REPO_CASES / OTHER_CASE_ID
        aws = stack.enter_context(LocalAws(paths, self.tool, self.case_dir, other_case_dir=other))
        self.bucket = aws.bucket
        self.session = aws.session()
        self.store = aws.store()
        self.aws_credential = aws.credential
        self.aws_endpoint = aws.endpoint
        self.expected_caller = aws.expected_caller_arn
        self.supplier = stack.enter_context(
            LocalSupplierService(paths, self.tool, [self.case_dir, other])
        )
        self._read_key()

    def model(self) -> Model:
        return OfflineModel()

    def caller_matches(self, arn: str) -> bool:
        # moto reports the assumed-role session ARN that the run's own AssumeRole created.
        return arn == self.expected_caller


class ClusterEnvironment(RunEnvironment):
    expected_credential_method = "container-role"
    credential_source = "EKS Pod Identity (the container credential provider)"
    bedrock = True

    def __init__(self, base: Path) -> None:
        self.run_id = new_run_id()
        self.work_base = base
        # The image's filesystem is read-only in the nono Job; the run's volume is not, and the
        # report's lasting copy is the store's anyway.
        self.default_out_parent = base / "reports"
        self.bucket = _require("ANALYST_BUCKET")
        self.region = _require("AWS_REGION")
        self.model_id = _require("ANALYST_MODEL_ID")
        self.expected_caller = _require("ANALYST_ROLE_NAME")
        self.model_description = f"Bedrock {self.model_id}"

    def start_services(self, stack: ExitStack, paths: RunPaths) -> None:
        self.session = boto3.Session(region_name=self.region)
        self.store = CaseStore.from_session(self.session, self.bucket)
        self.aws_credential = AwsCredentialFile(
            Path(_require(POD_IDENTITY_TOKEN)), "the Pod Identity token file"
        )
        agent = urlsplit(_require(POD_IDENTITY_URI))
        self.aws_endpoint = (resolve(agent.hostname or ""), agent.port or 80)
        self.supplier = supplier_endpoint_from_env()
        self._read_key()

    def model(self) -> Model:
        return bedrock_model(self.model_id, self.region)

    def caller_matches(self, arn: str) -> bool:
        return f":assumed-role/{self.expected_caller}/" in arn


def _require(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise SettingMissing(f"{name} is not set; the analyst Job sets it (ANALYST_MODE=cluster)")
    return value


@contextmanager
def open_environment(
    case_dir: Path, case: Case, tool: ToolIdentity, base: Path | None
) -> Iterator[LocalEnvironment | ClusterEnvironment]:
    """The local stand-ins by default; the pod's services when ANALYST_MODE=cluster."""
    if os.environ.get("ANALYST_MODE", "local") == "cluster":
        yield ClusterEnvironment(base or CLUSTER_BASE)
    else:
        yield LocalEnvironment(case_dir, case, tool, base or DEFAULT_LOCAL_BASE)
