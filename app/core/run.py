"""The one object that describes a run, built once before any check and never changed.

The controller builds it after its services are up; the layer, the layer's checks and the
shared phases all read it. What a run learns as it goes lives in its check log (append-only) and
in the typed values the phases return, which the controller alone turns into evidence.json.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from app.core.calls import SupplierAccess
from app.core.case import Case, report_prefix
from app.core.checklog import CheckLog
from app.core.endpoints import AwsCredentialFile, HostPort, SupplierEndpoint
from app.core.roles import Layer
from app.core.run_tree import RunPaths, ToolIdentity
from app.core.tool_counts import ToolCounts


class HeadStart(Protocol):
    """What a run's layer started before the run object was built (app/tools/layer.py's
    LayerAnswers.head_start): the layer takes it over, and ``close`` ends whatever it did not."""

    def close(self) -> None: ...


class ToolView(Protocol):
    """The mount namespace every tool process starts in, in which the run's secrets directory
    holds decoys, as the layers and controls use it; app/tools/decoy_view.py makes it."""

    @property
    def secrets(self) -> Path: ...

    @property
    def decoys(self) -> Path: ...

    @property
    def namespace_fd(self) -> int: ...

    def start_in_view(
        self, start: Callable[[], subprocess.Popen[bytes]]
    ) -> subprocess.Popen[bytes]: ...


@dataclass(frozen=True)
class Run:
    run_id: str
    layer: Layer
    case: Case
    case_dir: Path
    paths: RunPaths
    tool: ToolIdentity
    supplier: SupplierEndpoint
    supplier_client: SupplierAccess
    aws_credential: AwsCredentialFile
    aws_endpoint: HostPort
    checks: CheckLog
    # Where every tool process starts (app/tools/decoy_view.py): locally, a view in which the
    # secrets are decoys; None in the cluster, whose controller cannot make one.
    decoy_view: ToolView | None = None
    # In the analyst Job's pod (ANALYST_MODE=cluster), not on a local machine: the checks that
    # only a cluster run can make FAIL rather than SKIP when what they read is missing.
    in_cluster: bool = False
    # A cluster-mode run rehearsed on one machine (`python -m rehearsal`): what only the real
    # image or Bedrock has SKIPs with that reason instead of failing.
    rehearsal: bool = False
    # What its tool processes have used so far: the launchers count, the phase clock reads.
    tool_counts: ToolCounts = field(default_factory=ToolCounts)
    # The processes its layer started as soon as the run tree was claimed; None when none.
    head_start: HeadStart | None = None

    @property
    def report_prefix(self) -> str:
        return report_prefix(self.case.case_id, self.run_id)
