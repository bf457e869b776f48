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
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final, TextIO

from app.controller.attest import ATTESTATION_FILES, attest, kms_client_if_named
from app.controller.bytecode import WorkerBytecode
from app.controller.cleanup_process import CleanupProcess, remove
from app.controller.environment import RunMode, Services, mode_from_environment
from app.controller.evidence_document import (
    ControllerHolds,
    EvidenceParts,
    Recommended,
    RunFacts,
    checks_document,
)
from app.controller.guest import GuestReadings, read_guest
from app.controller.limits import check_file_size_limit
from app.controller.output import OutClaim, OutTarget, check_apart, check_parent, check_target
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
from app.controller.provenance import code_revision, policy_digests, provenance
from app.controller.report_templates import ReportTemplates
from app.controller.secret_scan import write_scanned
from app.controller.services.processes import ServiceFailed
from app.controller.shipped_layers import LayerFactory, broken_layer, shipped_layer
from app.controller.signing_key import local_key_needles
from app.controller.supplier_client import SupplierClient
from app.controller.terminal import SectionCount, guest_in_words, section_counts
from app.controller.timing import PhaseClock
from app.controller.workdir import RUN_LOCK, check_chosen, choose_work_base, claimed_run
from app.core.calls import CallLog
from app.core.case import CaseFolder, load_case_folder
from app.core.checklog import CheckFailed, CheckLog
from app.core.decoy_view import DecoyView
from app.core.errors import AnalystError, LayerUnavailable, RunStopped
from app.core.escaping import escaped
from app.core.files import json_bytes
from app.core.roles import Layer
from app.core.run import Run
from app.core.run_tree import RunPaths, ToolIdentity, new_run_id
from app.tools.layer import ConfinementLayer
from app.tools.policy_breaks import PolicyBreak

REPORT_FILES: Final = (
    "report.html",
    "recommendation.md",
    "comparison.json",
    "evidence.json",
    "checks.json",
    "calls.json",
    *ATTESTATION_FILES,
)
# What a run that stopped at a failed check keeps, with its attestation.
FAILED_FILES: Final = ("checks.json", "report.html")


@dataclass(frozen=True)
class RunOptions:
    layer: Layer
    case_dir: Path
    out_dir: Path | None = None  # exactly here; otherwise <out_parent>/<layer>/<run id>
    out_parent: Path | None = None  # default: runs/ locally, the run's volume in the cluster
    work_base: Path | None = None
    keep_workdir: bool = False
    # The layers whose tool processes will use the work directory (the demo runs both).
    workdir_layers: tuple[Layer, ...] = ()
    # One element of one role's policy left out on purpose (--break), of this layer's policy.
    policy_break: PolicyBreak | None = None
    # Print only FAIL and SKIP lines (and the summary): --quiet.
    quiet: bool = False


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


@dataclass(frozen=True)
class RunPlan:
    """The options, every one checked; nothing exists yet."""

    options: RunOptions
    folder: CaseFolder
    mode: RunMode
    work_base: Path
    run_id: str
    out: OutTarget

    @property
    def top(self) -> Path:
        return self.work_base / self.run_id


def plan_run(options: RunOptions) -> RunPlan:
    """Checks the case, the mode's settings, the process limits, --workdir and --out; raises
    BadInput (exit 2) naming the file, setting, limit or option, before anything is created."""
    folder = load_case_folder(options.case_dir)
    mode = mode_from_environment()
    check_file_size_limit()
    layers = options.workdir_layers or (options.layer,)
    base = check_chosen(choose_work_base(options.work_base, os.environ, mode.default_base), layers)
    run_id = new_run_id()
    if options.out_dir is not None:
        out = check_target(options.out_dir, create_parent=False)
        check_apart(out.path, base)
    else:
        parent = options.out_parent or mode.default_out_parent
        check_parent(parent)
        check_apart(parent if options.out_parent else parent / options.layer.value, base)
        out = check_target(parent / options.layer.value / run_id, create_parent=True)
    return RunPlan(options, folder, mode, base, run_id, out)


@dataclass(frozen=True)
class PreparedRun:
    """A run whose services are up and whose run object is built, before its layer exists."""

    run: Run
    services: Services
    client: SupplierClient
    folder: CaseFolder
    mode: RunMode
    out: OutClaim
    keeps_tree: bool = False


def _kept_elsewhere(run: Run, services: Services, keeps_tree: bool) -> str | None:
    """Where the report lasts besides --out: the cluster's store, a kept work tree; None when
    nowhere (the local store is moto's, which ends with the run)."""
    if run.in_cluster:
        return f"the report is in the store (s3://{services.bucket}/{run.report_prefix})"
    if keeps_tree:
        return f"the report's files are in the kept work tree ({run.paths.run})"
    return None


def _decoy_view(paths: RunPaths) -> DecoyView | None:
    """The view every tool process starts in, where the local secrets are (a root controller
    keeps them, root's alone); None in the cluster, whose secrets are the pod's mounts."""
    if os.geteuid() != 0 or not paths.secrets.is_dir():
        return None
    try:
        return DecoyView.create(paths.secrets, paths.decoys)
    except OSError as error:
        # A root controller under a container's seccomp profile, or in a user namespace that
        # may not mount: a piece of this machine the run needs (exit 3), not a traceback.
        raise LayerUnavailable(
            f"a root controller cannot make the tools' decoy view here ({error})",
            "run the controller at the tools' own uid, as the analyst pod does "
            "(runAsNonRoot), or where root may make a mount namespace",
        ) from error


@contextmanager
def prepared_run(
    plan: RunPlan, stream: TextIO | None = None, clock: PhaseClock | None = None
) -> Iterator[PreparedRun]:
    """Claims --out and a run tree, starts the services and builds the run object; on exit,
    however the block ends, stops the services and removes the secrets, the unfinished report
    and (unless kept) the tree. A clean-up process does the same if the controller dies."""
    options, stream = plan.options, stream or sys.stdout
    clock = clock or PhaseClock()
    clock.enter("services")
    tool = ToolIdentity.for_this_controller()
    out = OutClaim(plan.out, plan.run_id)
    tree_end = plan.top / RUN_LOCK if options.keep_workdir else plan.top
    with ExitStack() as stack:
        # The report folder is claimed first: a folder that cannot be written is bad input,
        # refused before anything else starts.
        stack.enter_context(out)
        # Whatever the controller's own clean-up leaves, however it ends, the clean-up process
        # takes.
        layout = RunPaths(plan.run_id, plan.top)
        stack.enter_context(CleanupProcess([layout.secrets, layout.decoys, out.staging, tree_end]))
        paths = stack.enter_context(
            claimed_run(
                plan.work_base,
                tool,
                plan.run_id,
                keep=options.keep_workdir,
                note=lambda line: print(f"note: {escaped(line)}", file=stream, flush=True),
            )
        )
        # Removed however the run ends, even when the tree itself is kept.
        stack.callback(remove, paths.secrets)
        stack.callback(remove, paths.decoys)
        bytecode = stack.enter_context(closing(WorkerBytecode(paths.code, paths.control_code)))
        services = plan.mode.start(stack, paths, tool, plan.folder)
        bytecode.wait()
        decoys = _decoy_view(paths)
        if decoys is not None:
            stack.callback(decoys.close)
        clock.service_pids = lambda: services.pids
        client = SupplierClient(services.supplier, services.supplier_key, CallLog(), paths.run_id)
        run = Run(
            run_id=paths.run_id,
            layer=options.layer,
            case=plan.folder.case,
            case_dir=plan.folder.path,
            paths=paths,
            tool=tool,
            supplier=services.supplier,
            supplier_client=client,
            aws_credential=services.aws_credential,
            aws_endpoint=services.aws_endpoint,
            checks=CheckLog(
                stream=stream,
                on_section=clock.enter,
                quiet=options.quiet,
                before_fail=partial(_service_at_fault, services),
            ),
            decoy_view=decoys,
            in_cluster=plan.mode.in_cluster,
            rehearsal=plan.mode.rehearsal,
        )
        clock.tool_counts = run.tool_counts
        yield PreparedRun(
            run, services, client, plan.folder, plan.mode, out, keeps_tree=options.keep_workdir
        )


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
            failed.kept = _keep_failure(prepared, layer, failed)
            raise
        except RunStopped as stopped:
            # A tool that failed or a check that stopped may have met a service that died
            # or was stopped: the fault is then the service's, and said so.
            _service_at_fault(prepared.services, stopped.message)
            raise


def _service_at_fault(services: Services, what_met_it: str) -> None:
    """Raises ServiceFailed naming the service when one the run started has died or been
    stopped; returns when every one is serving."""
    fault = services.fault()
    if fault is not None:
        raise ServiceFailed(
            f"{fault}; the run met it at: {what_met_it}",
            "nothing of this run was kept; run it again",
        )


def _keep_failure(
    prepared: PreparedRun, layer: ConfinementLayer, failed: CheckFailed
) -> Path | None:
    """A failed run's evidence, kept: its check list and a page leading with the failed check,
    each scanned for the secrets, signed into its statement, copied to --out and stored. Only
    these files: what else the run directory holds is not scanned here, so it is not kept.
    Whatever keeps them from being written, the run's own failure is what is reported."""
    run, services = prepared.run, prepared.services
    try:
        facts = _facts(run, services)
        listed = checks_document(facts, run.checks.as_json())
        secrets = _secrets(services, layer)
        from app.report.failed_page import render_failed

        page = render_failed(listed, failed.check_id)
        write_scanned(
            run.paths.run, {"checks.json": json_bytes(listed), "report.html": page}, secrets
        )
        attest(
            run.paths.run,
            facts.as_json(),
            run.checks.as_json(),
            # What can be said of a run stopped early: the policy in force beside the committed
            # one (a broken element shows here) and the code that ran.
            {
                "provenance": {
                    "policy_digests": policy_digests(layer),
                    "code_revision": asdict(code_revision(run.in_cluster)),
                }
            },
            secrets,
            kms_client=kms_client_if_named(services.session),
            stopped_at=failed.check_id,
            names=FAILED_FILES,
        )
        kept = {name: run.paths.run / name for name in (*FAILED_FILES, *ATTESTATION_FILES)}
        published = prepared.out.publish(
            kept, kept_elsewhere=_kept_elsewhere(run, services, prepared.keeps_tree)
        )
    except Exception as error:  # whatever it was, the check's failure is what the run reports
        print(
            escaped(f"note: the failed run's page and statement were not kept: {error}"),
            file=run.checks.stream,
            flush=True,
        )
        return None
    # Stored after the copy: a failure of the store itself (its check may be the one that
    # failed) leaves the copy in --out.
    try:
        for name, path in kept.items():
            services.store.put(f"{run.report_prefix}{name}", path.read_bytes())
    except (AnalystError, OSError) as error:
        print(
            escaped(f"note: the failed run's page and statement were not stored: {error}"),
            file=run.checks.stream,
            flush=True,
        )
    return published


def _facts(run: Run, services: Services) -> RunFacts:
    return RunFacts(
        run_id=run.run_id,
        layer=run.layer.value,
        case_id=run.case.case_id,
        report_uri=f"s3://{services.bucket}/{run.report_prefix}",
        in_cluster=run.in_cluster,
        rehearsal=run.rehearsal,
    )


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
    secrets = _secrets(services, layer)
    report(run, services, checked, comparison, secrets)
    correlated = correlation(run, client, layer_checks.refuses_upstream)
    # The last phase writes the evidence, so the table holds every phase before it.
    clock.enter("evidence")
    layer_evidence = layer.evidence()
    parts = EvidenceParts(
        facts=_facts(run, services),
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
        kept_elsewhere=_kept_elsewhere(run, services, prepared.keeps_tree),
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


def _secrets(services: Services, layer: ConfinementLayer) -> dict[str, bytes]:
    """What no file of the run may hold: the real key, what the layer derived from it, and this
    installation's signing key."""
    key = services.supplier_key
    return {"the supplier key": key} | layer.secrets_to_scan(key) | local_key_needles()
