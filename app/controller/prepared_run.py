"""A run made ready: its report folder claimed, its run tree, services and tools' decoy view
made, its run object built, and all of it undone however the run ends; with what the run's
last steps ask of it (its facts, the secrets no file may hold, where its report also lasts)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TextIO

from app.controller.bytecode import WorkerBytecode
from app.controller.cleanup_process import CleanupProcess, remove
from app.controller.environment import RunMode, Services
from app.controller.evidence_document import RunFacts
from app.controller.output import OutClaim
from app.controller.run_plan import RunPlan
from app.controller.services.processes import ServiceFailed
from app.controller.signing_key import local_key_needles
from app.controller.supplier_client import SupplierClient
from app.controller.timing import PhaseClock
from app.controller.workdir import RUN_LOCK, claimed_run
from app.core.calls import CallLog
from app.core.case import CaseFolder
from app.core.checklog import CheckLog
from app.core.errors import LayerUnavailable
from app.core.escaping import escaped
from app.core.run import Run
from app.core.run_tree import RunPaths, ToolIdentity
from app.core.tool_counts import ToolCounts
from app.tools.at_once import made_at_once
from app.tools.decoy_view import DecoyView
from app.tools.layer import ConfinementLayer
from app.tools.registry import answers


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


def kept_elsewhere(run: Run, services: Services, keeps_tree: bool) -> str | None:
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
        # The layer's own processes, started now so that they load while the services start;
        # the layer takes them over, and whatever it did not take ends here.
        counts = ToolCounts()
        head_start = answers(options.layer).head_start(paths, counts)
        if head_start is not None:
            stack.callback(head_start.close)
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
                before_fail=partial(service_at_fault, services),
                make_at_once=made_at_once,
            ),
            decoy_view=decoys,
            in_cluster=plan.mode.in_cluster,
            rehearsal=plan.mode.rehearsal,
            tool_counts=counts,
            head_start=head_start,
        )
        clock.tool_counts = run.tool_counts
        yield PreparedRun(
            run, services, client, plan.folder, plan.mode, out, keeps_tree=options.keep_workdir
        )


def service_at_fault(services: Services, what_met_it: str) -> None:
    """Raises ServiceFailed naming the service when one the run started has died or been
    stopped; returns when every one is serving."""
    fault = services.fault()
    if fault is not None:
        raise ServiceFailed(
            f"{fault}; the run met it at: {what_met_it}",
            "nothing of this run was kept; run it again",
        )


def run_facts(run: Run, services: Services) -> RunFacts:
    return RunFacts(
        run_id=run.run_id,
        layer=run.layer.value,
        case_id=run.case.case_id,
        report_uri=f"s3://{services.bucket}/{run.report_prefix}",
        in_cluster=run.in_cluster,
        rehearsal=run.rehearsal,
    )


def run_secrets(services: Services, layer: ConfinementLayer) -> dict[str, bytes]:
    """What no file of the run may hold: the real key, what the layer derived from it, and this
    installation's signing key."""
    key = services.supplier_key
    return {"the supplier key": key} | layer.secrets_to_scan(key) | local_key_needles()
