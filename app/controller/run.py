"""One procurement case, end to end: the single orchestrator both confinement layers run under.

Order: preflight, the layer's own checks, identity and storage, the boundary, the supplier,
the business work, one model turn with its gates, the report, correlation with the supplier
API's own log, and the key scans. A failed check stops the run with a non-zero exit.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

from app.controller.checks import CheckLog
from app.controller.context import LayerSetup, RunContext
from app.controller.environment import open_environment
from app.controller.phases import business, evidence, recommend, storage
from app.controller.phases.state import RunState
from app.controller.supplier_client import CallLog, SupplierClient
from app.core.case import load_case_folder
from app.core.ids import OTHER_CASE_ID
from app.core.run_tree import ToolIdentity, create_run
from app.tools.layer import ConfinementLayer

LayerName = Literal["bubblewrap", "nono"]
REPORT_FILES = (
    "recommendation.md",
    "comparison.json",
    "evidence.json",
    "checks.json",
    "calls.json",
)


@dataclass(frozen=True)
class RunOptions:
    layer: LayerName
    case_dir: Path
    out_dir: Path | None = None  # exactly here; otherwise <out_parent>/<layer>/<run id>
    out_parent: Path | None = None  # default: runs/ locally, the run's volume in the cluster
    work_base: Path | None = None
    keep_workdir: bool = False


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    checks_passed: int
    out_dir: Path
    report_uri: str


def default_layer(name: LayerName) -> Callable[[LayerSetup], ConfinementLayer]:
    """The layer as shipped; tests pass their own factory to break a policy on purpose."""
    if name == "bubblewrap":
        from app.tools.bubblewrap.launcher import BubblewrapLayer

        return BubblewrapLayer
    from app.tools.nono.launcher import NonoLayer

    return NonoLayer


def run_case(
    options: RunOptions,
    *,
    make_layer: Callable[[LayerSetup], ConfinementLayer] | None = None,
    stream: TextIO | None = None,
) -> RunOutcome:
    """Runs one case; raises CheckFailed (or a clear error) and leaves no report on failure."""
    out = stream or sys.stdout
    case, proposal_bytes = load_case_folder(options.case_dir)
    shipped = {"case.json": (options.case_dir / "case.json").read_bytes()} | {
        f"proposals/{sid}.json": data for sid, data in proposal_bytes.items()
    }
    tool = ToolIdentity.for_this_controller()
    checks = CheckLog(stream=out)
    with ExitStack() as stack:
        env = stack.enter_context(open_environment(options.case_dir, case, tool, options.work_base))
        paths = create_run(env.work_base, tool, env.run_id)
        if not options.keep_workdir:
            stack.callback(shutil.rmtree, paths.top, True)
        env.start_services(stack, paths)
        setup = LayerSetup(
            run_id=paths.run_id,
            case_id=case.case_id,
            other_case_id=OTHER_CASE_ID,
            paths=paths,
            tool=tool,
            supplier=env.supplier,
            aws_credential=env.aws_credential,
            aws_endpoint=env.aws_endpoint,
        )
        layer = (make_layer or default_layer(options.layer))(setup)
        stack.callback(layer.close)
        print(f"==> {options.layer}: run {paths.run_id}, case {case.case_id}", file=out, flush=True)
        layer.preflight()
        client = SupplierClient(env.supplier, env.supplier_key, CallLog(), paths.run_id)
        ctx = RunContext(
            run_id=paths.run_id,
            layer_name=options.layer,
            paths=paths,
            tool=tool,
            case=case,
            case_dir=options.case_dir,
            other_case_id=OTHER_CASE_ID,
            checks=checks,
            supplier=env.supplier,
            supplier_client=client,
            aws_credential=env.aws_credential,
            aws_endpoint=env.aws_endpoint,
            layer=layer,
        )
        suite = layer.check_suite(ctx)
        state = RunState(ctx, env, shipped)
        checks.begin("layer")
        suite.before_identity()
        case_bytes = storage.identity_and_storage(state)
        storage.stage_inputs(state, case_bytes)
        suite.boundary()
        availability = business.supplier(state)
        comparison = business.business(state, availability, suite.submit_draft)
        chosen, answer, usage = recommend.model(state, comparison)
        evidence.report(state, chosen, answer, comparison)
        correlation = evidence.correlation(state, suite.expects_refused_operation)
        evidence.finish(state, usage, correlation)
        out_parent = options.out_parent or env.default_out_parent
        copied = _copy_out(paths.run, options.out_dir or out_parent / options.layer / paths.run_id)
        report_uri = f"s3://{env.bucket}/{state.report_prefix}"
        print(f"ANALYST_COMPLETE={paths.run_id}", file=out)
        print(f"{checks.passed} checks passed", file=out)
        if checks.skipped:
            print(
                f"  {checks.skipped} skipped (listed above with the reason; not counted)", file=out
            )
        print(f"  model: {env.model_description}", file=out)
        print(f"  recommendation: {copied / 'recommendation.md'}", file=out)
        print(f"  evidence:       {copied / 'evidence.json'}", file=out)
        print(f"  store report:   {report_uri}", file=out, flush=True)
        return RunOutcome(paths.run_id, checks.passed, copied, report_uri)


def _copy_out(run_dir: Path, out_dir: Path) -> Path:
    """Copies the run's report files out, after the last scan; the target must be new."""
    target = out_dir
    target.mkdir(parents=True, exist_ok=False)
    for name in REPORT_FILES:
        shutil.copy2(run_dir / name, target / name)
    return target
