"""Where a run's services come from: loopback stand-ins locally, the pod's own in the cluster.

Local mode (the default, no AWS settings): a moto server with IAM enforcement for S3, IAM and
STS, the supplier API over TLS on loopback, and the offline model. Cluster mode
(``ANALYST_MODE=cluster``, set by the Job): the pod's EKS Pod Identity, the supplier Service,
the mounted key and CA, and Bedrock. Every setting a mode needs is read and checked when the
mode is chosen, before anything is created; ``start`` then yields the services, all at once.
"""

from __future__ import annotations

import gc
import importlib
import os
import socket
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import boto3
from botocore.exceptions import BotoCoreError, NoCredentialsError

from app.controller.services.local_aws import LOCAL_DEADLINE, MOTO, LocalAws
from app.controller.services.local_supplier import LocalSupplierService
from app.controller.services.processes import stop_processes
from app.controller.services.seeds import control_seed, run_seed
from app.controller.store import CaseStore
from app.controller.supplier_client import resolve
from app.core import cluster_env
from app.core.case import CaseFolder
from app.core.cluster_settings import ClusterSettings, SettingUnusable
from app.core.endpoints import AwsCredentialFile, HostPort, SupplierEndpoint
from app.core.errors import RunStopped
from app.core.run_tree import RunPaths, ToolIdentity
from app.core.setting_parsers import Endpoint, Unusable, read_key_file

if TYPE_CHECKING:
    from strands.models.model import Model

# The pod's run volume holds the work directory and the report folders side by side: never one
# inside the other (app/controller/output.py, check_apart).
CLUSTER_BASE: Final = Path(cluster_env.RUN_DIR) / "work"
CLUSTER_REPORTS: Final = Path(cluster_env.RUN_DIR) / "reports"
# The model's module imports Strands, a fifth of a second of the controller's start: it is
# imported when a run is under way (load_model_library), never for --help, doctor or bad input.
MODEL_MODULE: Final = "app.controller.agent_turn"


def load_model_library() -> None:
    """Imports the model's module (and Strands with it) now, in this thread, with the garbage
    collector off and what it loaded frozen after (as __main__ does for the first imports)."""
    gc.disable()
    try:
        importlib.import_module(MODEL_MODULE)
    finally:
        gc.freeze()
        gc.enable()


def offline_model() -> Model:
    from app.controller.agent_turn import OfflineModel

    return OfflineModel()


def bedrock_model(model_id: str, region: str) -> Model:
    from app.controller import agent_turn

    return agent_turn.bedrock_model(model_id, region)


@dataclass(frozen=True)
class AwsIdentity:
    """Who the controller must find itself to be in AWS, and how boto3 must have found it."""

    credential_method: str  # botocore's provider method name
    credential_source: str  # the same, in the words of the check line
    expected_caller: str  # local: the assumed-role session ARN; cluster: the role's name
    exact: bool  # local: the ARN is known exactly; cluster: any session of the role

    def matches(self, arn: str) -> bool:
        if self.exact:
            return arn == self.expected_caller
        return f":assumed-role/{self.expected_caller}/" in arn


@dataclass(frozen=True)
class ModelChoice:
    description: str
    bedrock: bool
    make: Callable[[], Model]
    # Why Bedrock's own checks cannot run, when the model is not Bedrock.
    no_bedrock_reason: str = "the local run uses the offline model; this runs in the cluster"


OFFLINE_MODEL = "the offline model, a deterministic Strands model"


@dataclass(frozen=True)
class Services:
    """Everything a run talks to, found or started before the run object is built."""

    bucket: str
    session: boto3.Session
    store: CaseStore
    supplier: SupplierEndpoint
    supplier_key: bytes
    aws_credential: AwsCredentialFile
    aws_endpoint: HostPort
    identity: AwsIdentity
    model: ModelChoice
    # Where the run wrote secrets of its own (locally: the AWS credentials and the supplier
    # key); None in the cluster, whose secrets are the pod's mounts.
    secrets_dir: Path | None = None
    # The processes of the services the run started itself (locally: moto and the supplier
    # API), for the run's phase table.
    pids: tuple[int, ...] = ()
    # Why a service the run started is not serving (it died or was stopped), or None: asked
    # when a check or a tool fails, so a fault of the service is never reported as theirs.
    fault: Callable[[], str | None] = lambda: None

    def credential_method(self) -> str:
        """How boto3 found the controller's credentials (botocore's provider method name)."""
        credentials = self.session.get_credentials()
        return str(getattr(credentials, "method", "none")) if credentials else "none"


class RunMode(ABC):
    """Local or cluster: where the run's files go and where its services come from."""

    name: str
    in_cluster: bool
    rehearsal: bool = False
    # The work directory when neither --workdir nor ANALYST_WORKDIR names one; None: each
    # user's own (app/controller/workdir.py, local_default).
    default_base: Path | None = None
    # Where report files are copied when --out is not given.
    default_out_parent: Path

    @abstractmethod
    def start(
        self, stack: ExitStack, paths: RunPaths, tool: ToolIdentity, folder: CaseFolder
    ) -> Services:
        """Starts or locates every service; the stack stops what was started."""

    def notices(self) -> list[str]:
        """Lines the run prints before its checks about how it runs (none by default)."""
        return []


class LocalMode(RunMode):
    name = "local"
    in_cluster = False
    default_out_parent = Path("runs")

    def start(
        self, stack: ExitStack, paths: RunPaths, tool: ToolIdentity, folder: CaseFolder
    ) -> Services:
        case, other = run_seed(folder), control_seed(folder.case.case_id)
        # The supplier API reads the controller's own copies, never the user's folder again.
        seeds = paths.top / "seeds"
        case_dirs = [case.write_folder(seeds), other.write_folder(seeds)]
        local_aws = LocalAws(paths, tool, case, other)
        local_supplier = LocalSupplierService(paths, tool, case_dirs)
        # Stopped together, however the run ends: each one's exit overlaps the other's.
        stack.callback(lambda: stop_processes([local_aws.detach(), local_supplier.detach()]))
        # Started together, moto first (its start is the longest), and each waited for only
        # when it is needed: moto answers the bootstrap once it is up, and the supplier API has
        # long been ready by the time moto is provisioned.
        local_aws.start()
        local_supplier.start()
        # moto takes longer to start than anything else here: the controller loads the model's
        # library meanwhile, on the other core, rather than before or after.
        load_model_library()
        aws = local_aws.provision()
        supplier = local_supplier.ready()
        session = aws.session()
        # Loaded now, while the credentials file exists: the run removes it once the last tool
        # process has run, and boto3 keeps what it loaded.
        session.get_credentials()
        return Services(
            bucket=aws.bucket,
            session=session,
            store=CaseStore.from_session(
                session, aws.bucket, endpoint_url=aws.endpoint_url, deadline=LOCAL_DEADLINE
            ),
            supplier=supplier,
            supplier_key=read_supplier_key(supplier.key_file),
            aws_credential=aws.credential,
            aws_endpoint=aws.endpoint,
            identity=AwsIdentity(
                credential_method="shared-credentials-file",
                credential_source=(
                    "the run's own credentials file (the analyst role, assumed from moto's IAM)"
                ),
                expected_caller=aws.expected_caller_arn,
                exact=True,
            ),
            model=ModelChoice(f"{OFFLINE_MODEL}: no Bedrock locally", False, offline_model),
            secrets_dir=paths.secrets,
            pids=tuple(pid for pid in (local_aws.pid, local_supplier.pid) if pid is not None),
            fault=lambda: local_supplier.fault("the supplier API") or local_aws.fault(MOTO),
        )


class ClusterMode(RunMode):
    name = "cluster"
    in_cluster = True
    default_base = CLUSTER_BASE
    # The image's filesystem is read-only in the nono Job; the run's volume is not, and the
    # report's lasting copy is the store's anyway.
    default_out_parent = CLUSTER_REPORTS

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.settings = ClusterSettings.from_environ(environ)
        self.rehearsal = self.settings.rehearsal

    def notices(self) -> list[str]:
        """What the run's log must say before its checks: here, that this is a rehearsal."""
        if not self.rehearsal:
            return []
        return [
            f"REHEARSAL: {cluster_env.REHEARSAL}={cluster_env.REHEARSAL_ON} is set: this pod is "
            "rehearsed on one machine; the offline model stands in for Bedrock, and what only "
            "the analyst image holds SKIPs"
        ]

    def start(
        self, stack: ExitStack, paths: RunPaths, tool: ToolIdentity, folder: CaseFolder
    ) -> Services:
        settings = self.settings
        agent = settings.credentials_agent
        session = boto3.Session(region_name=settings.region)
        pod_credentials(session, agent)
        return Services(
            bucket=settings.bucket,
            session=session,
            store=CaseStore.from_session(session, settings.bucket),
            supplier=self._supplier(),
            supplier_key=settings.supplier_key,
            aws_credential=AwsCredentialFile(settings.token_file, "the Pod Identity token file"),
            aws_endpoint=HostPort(resolve(agent.host), agent.port),
            identity=AwsIdentity(
                credential_method="container-role",
                credential_source="EKS Pod Identity (the container credential provider)",
                expected_caller=settings.role_name,
                exact=False,
            ),
            model=self._model(),
        )

    def _model(self) -> ModelChoice:
        model_id, region = self.settings.model_id, self.settings.region
        if self.rehearsal:
            return ModelChoice(
                f"{OFFLINE_MODEL}: a rehearsal ({cluster_env.REHEARSAL}) has no Bedrock",
                False,
                offline_model,
                no_bedrock_reason=f"a rehearsal ({cluster_env.REHEARSAL}) uses the offline "
                f"model; the Job runs {model_id} on Bedrock",
            )
        return ModelChoice(f"Bedrock {model_id}", True, lambda: bedrock_model(model_id, region))

    def _supplier(self) -> SupplierEndpoint:
        """The supplier Service, its host resolved once here for the network checks."""
        supplier = self.settings.supplier
        try:
            infos = socket.getaddrinfo(supplier.host, supplier.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise RunStopped(
                f"cannot resolve the supplier API host {supplier.host}: {exc}",
                "check the supplier Service exists in this namespace",
            ) from exc
        return SupplierEndpoint(
            url=supplier.url,
            alias_url=self.settings.supplier_alias.url,
            address=str(infos[0][4][0]),
            port=supplier.port,
            ca_file=self.settings.supplier_ca_file,
            key_file=self.settings.supplier_key_file,
        )


def pod_credentials(session: boto3.Session, agent: Endpoint) -> None:
    """Asks the Pod Identity agent for the role's credentials, as the session's first client
    would; RunStopped naming the agent when it gives none (`doctor` reports the same)."""
    try:
        credentials = session.get_credentials()
        if credentials is None:
            raise NoCredentialsError()
        credentials.get_frozen_credentials()
    except BotoCoreError as error:
        raise RunStopped(
            f"the Pod Identity agent at {agent.url} gave no credentials ({error})",
            "the pod's service account needs a Pod Identity association with the analyst "
            "role, and its node the eks-pod-identity-agent add-on",
        ) from None


def read_supplier_key(path: Path) -> bytes:
    """The run's own supplier key file (local mode), as the cluster's is read."""
    try:
        return read_key_file(path)
    except Unusable as error:
        raise RunStopped(f"{path}: the supplier key file {error.problem}") from None


def mode_from_environment(environ: Mapping[str, str] = os.environ) -> RunMode:
    """The local stand-ins by default; the pod's services when ANALYST_MODE=cluster."""
    mode = environ.get(cluster_env.MODE, "local")
    if mode == cluster_env.CLUSTER_MODE:
        return ClusterMode(environ)
    if mode != "local":
        raise SettingUnusable(
            cluster_env.MODE,
            f"{cluster_env.MODE}={mode!r}",
            f"use {cluster_env.CLUSTER_MODE!r} in the Job, or leave it unset to run locally",
        )
    return LocalMode()
