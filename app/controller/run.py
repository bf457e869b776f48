"""One procurement case, end to end: the single orchestrator both confinement layers run under.

It reads as the run's phases in order: the layer's preflight, what a tool process got, identity
and storage, the boundary, the supplier, the business work, one model turn with its gates, the
report, correlation with the supplier API's own log, and the last writes with their scans. A
failed check stops the run (CheckFailed) and leaves no report behind.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TextIO

from app.controller.environment import RunMode, Services, mode_from_environment
from app.controller.layers import LayerFactory, shipped_layer
from app.controller.phases.business import business
from app.controller.phases.correlation import correlation
from app.controller.phases.evidence import finish
from app.controller.phases.identity import identity_and_storage
from app.controller.phases.model import model_turn
from app.controller.phases.report import report
from app.controller.phases.staging import stage_inputs
from app.controller.phases.supplier import supplier
from app.controller.supplier_client import SupplierClient
from app.core.calls import CallLog
from app.core.case import CaseFolder, load_case_folder
from app.core.checklog import CheckLog
from app.core.roles import Layer
from app.core.run import Evidence, Run
from app.core.run_tree import ToolIdentity, create_run
from app.tools.layer import ConfinementLayer

REPORT_FILES: Final = (
    "recommendation.md",
    "comparison.json",
    "evidence.json",
    "checks.json",
    "calls.json",
)


@dataclass(frozen=True)
class RunOptions:
    layer: Layer
    case_dir: Path
    out_dir: Path | None = None  # exactly here; otherwise <out_parent>/<layer>/<run id>
    out_parent: Path | None = None  # default: runs/ locally, the run's volume in the cluster
    work_base: Path | None = None
    keep_workdir: bool = False


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    checks_passed: int
    checks_skipped: int
    out_dir: Path
    report_uri: str
    model_description: str


@dataclass(frozen=True)
class PreparedRun:
    """A run whose services are up and whose run object is built, before its layer exists."""

    run: Run
    services: Services
    client: SupplierClient
    folder: CaseFolder
    mode: RunMode


@contextmanager
def prepared_run(options: RunOptions, stream: TextIO | None = None) -> Iterator[PreparedRun]:
    """Validates the case and the mode's settings, creates the run tree, starts the services
    and builds the run object; on exit stops the services and removes the tree."""
    folder = load_case_folder(options.case_dir)
    mode = mode_from_environment()
    tool = ToolIdentity.for_this_controller()
    with ExitStack() as stack:
        paths = create_run(options.work_base or mode.default_base, tool)
        if not options.keep_workdir:
            stack.callback(shutil.rmtree, paths.top, True)
        services = mode.start(stack, paths, tool, folder)
        client = SupplierClient(services.supplier, services.supplier_key, CallLog(), paths.run_id)
        run = Run(
            run_id=paths.run_id,
            layer=options.layer,
            case=folder.case,
            case_dir=folder.path,
            paths=paths,
            tool=tool,
            supplier=services.supplier,
            supplier_client=client,
            aws_credential=services.aws_credential,
            aws_endpoint=services.aws_endpoint,
            checks=CheckLog(stream=stream or sys.stdout),
            evidence=Evidence(),
        )
        yield PreparedRun(run, services, client, folder, mode)


def run_case(
    options: RunOptions,
    *,
    make_layer: LayerFactory | None = None,
    stream: TextIO | None = None,
) -> RunOutcome:
    """Runs one case; raises an AnalystError (CheckFailed for a failed check) and then leaves
    no report behind."""
    factory = make_layer or shipped_layer(options.layer)
    with prepared_run(options, stream) as prepared, closing(factory(prepared.run)) as layer:
        run, services, client = prepared.run, prepared.services, prepared.client
        print(f"==> {run.layer}: run {run.run_id}, case {run.case.case_id}", file=run.checks.stream)
        layer.preflight()
        layer_checks = layer.checks()

        layer_checks.process()
        stored = identity_and_storage(run, services, prepared.folder)
        stage_inputs(run, stored)
        layer_checks.boundary()
        availability = supplier(run, client, stored)
        comparison = business(run, layer, layer_checks, stored, availability)
        checked = model_turn(run, services.model, stored, comparison)
        run.evidence.record("model", checked.usage)
        secrets = _secrets(services, layer)
        report(run, services, checked, comparison, secrets)
        run.evidence.record("correlation", correlation(run, client, layer_checks.refuses_upstream))
        finish(run, services, layer.evidence(), secrets)

        copied = _copy_out(run, options, prepared.mode)
        return RunOutcome(
            run_id=run.run_id,
            checks_passed=run.checks.passed,
            checks_skipped=run.checks.skipped,
            out_dir=copied,
            report_uri=f"s3://{services.bucket}/{run.report_prefix}",
            model_description=services.model.description,
        )


def _secrets(services: Services, layer: ConfinementLayer) -> dict[str, bytes]:
    """What no file of the run may hold: the real key, and what the layer derived from it."""
    key = services.supplier_key
    return {"the supplier key": key} | layer.secrets_to_scan(key)


def _copy_out(run: Run, options: RunOptions, mode: RunMode) -> Path:
    """Copies the run's report files out, after the last scan; the target must be new."""
    parent = options.out_parent or mode.default_out_parent
    target = options.out_dir or parent / run.layer.value / run.run_id
    target.mkdir(parents=True, exist_ok=False)
    for name in REPORT_FILES:
        shutil.copy2(run.paths.run / name, target / name)
    return target
