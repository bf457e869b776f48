"""One procurement case, end to end: the single orchestrator both confinement layers run under.

Every option is checked before anything exists (plan_run). The run then reads as its phases in
order: the layer's preflight, what a tool process got, identity and storage, the boundary, the
supplier, the business work, the secrets leaving the disk, one model turn with its gates, the
report, correlation with the supplier API's own log, and the last writes with their scans; the
report folder is filled in one step at the very end. A failed check stops the run (CheckFailed)
and leaves no report behind.
"""

from __future__ import annotations

import errno
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from app.controller.attest import ATTESTATION_FILES
from app.controller.environment import RunMode
from app.controller.evidence_document import ControllerHolds, EvidenceParts, Recommended
from app.controller.failed_run import keep_failure
from app.controller.guest import GuestReadings, read_guest
from app.controller.phases.business import business
from app.controller.phases.cluster import cluster_mounts_and_names, pod_egress_bounded
from app.controller.phases.correlation import correlation
from app.controller.phases.evidence import finish
from app.controller.phases.identity import identity_and_storage
from app.controller.phases.model import model_turn
from app.controller.phases.report import report
from app.controller.phases.secrets import retire_secrets
from app.controller.phases.staging import stage_inputs
from app.controller.phases.supplier import supplier
from app.controller.prepared_run import (
    PreparedRun,
    kept_elsewhere,
    prepared_run,
    run_facts,
    run_secrets,
    service_at_fault,
)
from app.controller.provenance import provenance
from app.controller.report_templates import ReportTemplates
from app.controller.run_plan import RunOptions, RunPlan, plan_run
from app.controller.services.processes import ServiceFailed
from app.controller.shipped_layers import broken_layer, shipped_layer
from app.controller.terminal import SectionCount, guest_in_words, section_counts
from app.controller.timing import PhaseClock
from app.core.checklog import CheckFailed
from app.core.errors import RunStopped
from app.core.escaping import escaped
from app.core.run import Run
from app.tools.catalogue.order import run_sections
from app.tools.layer import ConfinementLayer, LayerFactory

REPORT_FILES: Final = (
    "report.html",
    "recommendation.md",
    "comparison.json",
    "evidence.json",
    "checks.json",
    "calls.json",
    *ATTESTATION_FILES,
)


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    checks_passed: int
    skipped: tuple[str, ...]  # the ids of the checks skipped here
    out_dir: Path
    report_uri: str
    model_description: str
    recommended: str  # the supplier's name and id
    sections: list[SectionCount]
    # The run's whole phase table: evidence.json's, then the last phase and the report page.
    timing: list[dict[str, Any]]
    # What making the report page's templates ready cost, in a thread beside the checks.
    templates_ready: dict[str, float]
    # The key that signed attestation.intoto.jsonl, and this installation's key file when this
    # run made it (its first use).
    signed_by: str = ""
    made_key: Path | None = None
    # Every check the run made, in order (checks.json's records and the read-back scan's).
    checks: tuple[dict[str, str], ...] = ()


def run_case(
    options: RunOptions,
    *,
    make_layer: LayerFactory | None = None,
    stream: TextIO | None = None,
) -> RunOutcome:
    """Runs one case; raises an AnalystError (CheckFailed for a failed check) and then leaves
    no report behind."""
    clock = PhaseClock()
    clock.enter("case and options")
    plan = plan_run(options)
    if make_layer is not None:
        factory = make_layer
    elif options.policy_break is not None:
        factory = broken_layer(options.policy_break)
    else:
        factory = shipped_layer(options.layer)
    try:
        return _run(plan, factory, stream, clock)
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        # A copy's error names its source first and the file it could not write second.
        written = error.filename2 or error.filename or "a file of the run"
        raise RunStopped(
            f"{written}: {error.strerror}",
            "free space on that filesystem; nothing of this run was kept",
        ) from error


def _run(
    plan: RunPlan, factory: LayerFactory, stream: TextIO | None, clock: PhaseClock
) -> RunOutcome:
    with prepared_run(plan, stream, clock) as prepared, closing(factory(prepared.run)) as layer:
        clock.enter("preflight")
        try:
            return _phases(prepared, layer, clock)
        except ServiceFailed:
            raise
        except CheckFailed as failed:
            # A service that died or was stopped is named before any FAIL line is printed
            # (the check log's before_fail), so a failed check here is the check's own.
            failed.records = prepared.run.checks.as_json()
            failed.run_id = prepared.run.run_id
            failed.kept = keep_failure(prepared, layer, failed)
            raise
        except RunStopped as stopped:
            # A tool that failed or a check that stopped may have met a service that died
            # or was stopped: the fault is then the service's, and said so.
            service_at_fault(prepared.services, stopped.message)
            raise


def _phases(prepared: PreparedRun, layer: ConfinementLayer, clock: PhaseClock) -> RunOutcome:
    """Every phase in order, from the preflight to the last writes and the copy to --out."""
    run, services, client = prepared.run, prepared.services, prepared.client
    # From here the run mostly waits for one tool process at a time: the report page's
    # templates are made ready meanwhile, in a thread of their own.
    templates = ReportTemplates()
    guest = read_guest()
    _opening(run, prepared.mode, guest)
    # What this run alone used: runs at the same time share none of it (`make bench`).
    endpoints = {
        "run_tree": str(run.paths.top),
        "aws": f"{run.aws_endpoint.host}:{run.aws_endpoint.port}",
        "supplier": run.supplier.url,
        "bucket": services.bucket,
    }
    layer.preflight()
    layer_checks = layer.checks()
    # The catalogue states the order of the run's sections; the phases below are held to it.
    run.checks.follow(run_sections(type(layer_checks), in_cluster=run.in_cluster))

    layer_checks.process()
    stored = identity_and_storage(run, services, prepared.folder)
    if run.in_cluster:
        cluster_mounts_and_names(run)
    pod_egress_bounded(run, services.session)
    stage_inputs(run, stored)
    layer_checks.boundary()
    availability = supplier(run, client, stored)
    comparison = business(run, layer, layer_checks, stored, availability)
    retire_secrets(run, services)
    checked = model_turn(run, services.model, stored, comparison)
    secrets = run_secrets(services, layer)
    report(run, services, checked, comparison, secrets)
    correlated = correlation(run, client, layer_checks.refuses_upstream)
    # The last phase writes the evidence, so the table holds every phase before it.
    clock.enter("evidence")
    layer_evidence = layer.evidence()
    parts = EvidenceParts(
        facts=run_facts(run, services),
        case=run.case,
        provenance=provenance(
            layer,
            layer_evidence,
            in_cluster=run.in_cluster,
            model_description=services.model.description,
            model_id=str(checked.usage.get("model", "")),
        ),
        guest=guest,
        endpoints=endpoints,
        controller=ControllerHolds(
            supplier_key_file=str(run.supplier.key_file),
            aws_identity=services.identity.expected_caller,
            aws_credential_source=services.identity.credential_source,
        ),
        policy=layer_evidence,
        readings=layer_checks.readings(),
        recommendation=Recommended(
            supplier_id=checked.supplier_id,
            supplier_name=run.case.supplier(checked.supplier_id).name,
            analysis=checked.answer.analysis,
        ),
        model_usage=checked.usage,
        correlation=correlated,
        timing=clock.table(),
    )
    attested = finish(run, services, parts, comparison.as_json(), secrets, clock, templates)
    recommended = parts.recommendation

    copied = prepared.out.publish(
        {name: run.paths.run / name for name in REPORT_FILES},
        kept_elsewhere=kept_elsewhere(run, services, prepared.keeps_tree),
    )
    clock.stop()
    return RunOutcome(
        run_id=run.run_id,
        checks_passed=run.checks.passed,
        skipped=tuple(r.id for r in run.checks.records if r.outcome == "SKIP"),
        out_dir=copied,
        report_uri=f"s3://{services.bucket}/{run.report_prefix}",
        model_description=services.model.description,
        recommended=f"{recommended.supplier_name} ({recommended.supplier_id})",
        sections=section_counts(run.checks.records),
        timing=clock.table(),
        templates_ready={
            "wall_ms": round(templates.wall_ms, 1),
            "cpu_ms": round(templates.cpu_ms, 1),
        },
        signed_by=attested.keyid,
        made_key=attested.made_key,
        checks=tuple(run.checks.as_json()),
    )


def _opening(run: Run, mode: RunMode, guest: GuestReadings) -> None:
    """The lines before the first check: the run, the mode's notices, the guest readings."""
    stream = run.checks.stream
    # The layer's header even when quiet: a quiet demo's lines still say which run they are of.
    print(f"==> {run.layer}: run {run.run_id}, case {run.case.case_id}", file=stream)
    if not run.checks.quiet:
        for notice in mode.notices():
            print(notice, file=stream)
        # The machine's own words (its DMI product name, say): one line, escaped.
        print(escaped(guest_in_words(guest)), file=stream)
    if run.in_cluster:
        # nitro-evidence and the rehearsal read this line from the pod's log.
        print(guest.line(), file=stream)
    stream.flush()
