"""Everything one run knows, handed to the shared phases and to the layer's own checks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.controller.checks import CheckLog
from app.core.run_tree import RunPaths, ToolIdentity

if TYPE_CHECKING:
    from app.controller.supplier_client import SupplierClient
    from app.core.case import Case
    from app.tools.layer import ConfinementLayer


# A model API key would let a process call a model without the controller: none may be in the
# controller's environment or a role's. Checked by name; no value is ever printed.
MODEL_KEY_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "BEDROCK_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
)


@dataclass(frozen=True)
class SupplierEndpoint:
    """Where the supplier API is, as the controller and the roles must name it.

    ``url`` is the approved name; ``alias_url`` a second DNS name for the same server (the
    nono alias-host control). ``address``/``port`` are what ``url``'s host resolves to, for
    the network checks. ``key_file`` holds the real key and is mounted in no role.
    """

    url: str
    alias_url: str
    address: str
    port: int
    ca_file: Path
    key_file: Path


@dataclass(frozen=True)
class AwsCredentialFile:
    """The file that holds the controller's AWS credential (local: a shared credentials file;
    cluster: the Pod Identity token). It is the target of the 'cannot open' checks."""

    path: Path
    description: str  # "the AWS credential file" / "the Pod Identity token file"


@dataclass(frozen=True)
class LayerSetup:
    """What a layer is built from: the run's directories and the services it must name."""

    run_id: str
    case_id: str
    other_case_id: str
    paths: RunPaths
    tool: ToolIdentity
    supplier: SupplierEndpoint
    aws_credential: AwsCredentialFile
    # Where the controller's AWS credentials come from (moto locally, the Pod Identity agent
    # in the cluster): host and port, for the "cannot reach it directly" checks.
    aws_endpoint: tuple[str, int]


@dataclass
class RunContext:
    run_id: str
    layer_name: str
    paths: RunPaths
    tool: ToolIdentity
    case: Case
    case_dir: Path
    other_case_id: str
    checks: CheckLog
    supplier: SupplierEndpoint
    supplier_client: SupplierClient
    aws_credential: AwsCredentialFile
    # The address of the controller's own AWS credential endpoint (moto locally, the Pod
    # Identity agent in the cluster): host, port.
    aws_endpoint: tuple[str, int]
    layer: ConfinementLayer
    evidence: dict[str, Any] = field(default_factory=dict)


class LayerChecks(ABC):
    """A layer's own part of the run, called by the one orchestrator at fixed points."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def before_identity(self) -> None:  # noqa: B027 (an optional hook)
        """Checks that come first for this layer (bubblewrap: what a tool process got)."""

    @abstractmethod
    def boundary(self) -> None:
        """Files, processes and network: each refusal beside its control."""

    @abstractmethod
    def submit_draft(self, draft_path: Path) -> None:
        """Has the draft submitted to the supplier (201) the way this layer allows."""

    # A layer whose roles make supplier calls also shows one refused before the supplier; the
    # correlation check then requires the run's record to hold such a refusal.
    expects_refused_operation: bool = False
