"""The controller's command line: run one case under one layer, or the demo under both.

Exit codes, mapped here and nowhere else: 0 complete, 1 the run stopped (a check failed, a tool
or a service broke), 2 bad input (nothing was created), 3 the layer cannot run on this machine,
and 128 plus the signal's number when a signal stopped it: 129 SIGHUP, 130 SIGINT (Ctrl-C),
143 SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn, TextIO

from app.controller.arguments import parser
from app.controller.case_command import check_case, new_case
from app.controller.ci_output import RunSummary, junit_xml, summary_json
from app.controller.doctor import DoctorOptions, doctor
from app.controller.guest import read_guest
from app.controller.guest_comparison import Verdict
from app.controller.nitro_evidence import Request, nitro_evidence
from app.controller.run import RunOutcome, run_case
from app.controller.run_plan import RunOptions
from app.controller.signals import Stopped, say, stop_on_signals
from app.controller.standard_streams import OutputLost, guarded_streams, refuse_closed_output
from app.controller.subreaper import end_orphans
from app.controller.terminal import Closing, demo_ending
from app.core.checklog import CheckFailed
from app.core.errors import AnalystError, BadInput, LayerUnavailable
from app.core.escaping import escaped
from app.core.roles import Layer
from app.tools import policy_breaks
from app.tools.execution import TOOL_PROCESSES


def _fatal(error: AnalystError) -> NoReturn:
    # The message may quote a tool's words (its stderr, a file name it chose): one line,
    # escaped, whatever they hold.
    if isinstance(error, CheckFailed):
        print(f"ANALYST_FAILED: {escaped(str(error))}", file=sys.stderr)
    else:
        print(f"error ({error.label}): {escaped(str(error))}", file=sys.stderr)
    sys.exit(error.exit_code)


def print_outcome(outcome: RunOutcome, stream: TextIO) -> None:
    """The lines that end a complete run: its id, the counts, the recommended supplier, and
    where the report is."""
    closing = Closing(
        run_id=outcome.run_id,
        passed=outcome.checks_passed,
        skipped=outcome.skipped,
        recommended=outcome.recommended,
        counts=outcome.sections,
        model=outcome.model_description,
        out_dir=outcome.out_dir,
        report_uri=outcome.report_uri,
        signed_by=outcome.signed_by,
        made_key=outcome.made_key,
    )
    print("\n".join(map(escaped, closing.lines())), file=stream, flush=True)


def _human(args: argparse.Namespace) -> TextIO:
    """Where the check lines and the closing words go: stderr when stdout is the JSON summary."""
    return sys.stderr if getattr(args, "json", False) else sys.stdout


def _ci_outputs(args: argparse.Namespace, summaries: list[RunSummary]) -> None:
    if getattr(args, "junit", None) is not None:
        try:
            args.junit.write_bytes(junit_xml(summaries))
        except OSError as error:
            _fatal(BadInput(f"{args.junit}: cannot write the JUnit XML ({error.strerror})"))
    if getattr(args, "json", False):
        print(summary_json(summaries), flush=True)


def _run_one(
    layer: Layer, args: argparse.Namespace, out: Path | None, summaries: list[RunSummary]
) -> RunOutcome:
    try:
        chosen = policy_breaks.parse(args.policy_break, layer) if args.policy_break else None
    except AnalystError as error:
        _fatal(error)
    options = RunOptions(
        layer=layer,
        case_dir=args.case,
        out_dir=out,
        out_parent=getattr(args, "out_parent", None),
        work_base=args.workdir,
        keep_workdir=args.keep_workdir,
        workdir_layers=(layer,) if args.command == "run" else tuple(Layer),
        quiet=args.quiet,
        policy_break=chosen,
    )
    try:
        outcome = run_case(options, stream=_human(args))
    except OutputLost as lost:
        _fatal(lost.in_a_run())
    except CheckFailed as failed:
        if failed.kept is not None:
            # The failure's evidence, on the run's own output: its page leads with the check.
            print(
                escaped(
                    f"the failed run's page, check list and signed statement: {failed.kept} "
                    f"(report.html; python -m app.controller verify {failed.kept})"
                ),
                file=_human(args),
                flush=True,
            )
        summaries.append(
            RunSummary(layer.value, failed.run_id, failed.records, failed.check_id, failed.kept)
        )
        _ci_outputs(args, summaries)
        _fatal(failed)
    except AnalystError as error:
        _fatal(error)
    print_outcome(outcome, _human(args))
    summaries.append(
        RunSummary(
            layer.value, outcome.run_id, outcome.checks, None, outcome.out_dir, outcome.signed_by
        )
    )
    return outcome


def _nitro_evidence(args: argparse.Namespace) -> int:
    request = Request(args.namespace, Layer(args.layer), args.kubeconfig, args.context)
    try:
        text, verdict = nitro_evidence(request)
    except AnalystError as error:
        _fatal(error)
    print(text, end="")
    return 0 if verdict is Verdict.ISOLATED else 1


def _verify(args: argparse.Namespace) -> int:
    from app.controller.verify_command import VerifyRequest, verify

    request = VerifyRequest(args.source, args.key, args.kms_key, args.policy_dir)
    try:
        return verify(request, sys.stdout)
    except AnalystError as error:
        _fatal(error)


def _case(args: argparse.Namespace) -> int:
    try:
        if args.case_command == "new":
            new_case(args.folder, sys.stdout)
        else:
            check_case(args.folder, write=args.write_digests, stream=sys.stdout)
    except AnalystError as error:
        _fatal(error)
    return 0


def _commands(args: argparse.Namespace) -> int:
    if args.command == "case":
        return _case(args)
    if args.command == "guest-readings":
        print(read_guest().line())
        return 0
    if args.command == "nitro-evidence":
        return _nitro_evidence(args)
    if args.command == "verify":
        return _verify(args)
    if args.command == "doctor":
        layers = [Layer(args.layer)] if args.layer else list(Layer)
        runnable = doctor(DoctorOptions(layers, args.workdir), sys.stdout)
        return 0 if runnable else LayerUnavailable.exit_code
    if args.policy_break == policy_breaks.LIST:
        print("\n".join(policy_breaks.listing()))
        return 0
    summaries: list[RunSummary] = []
    if args.command == "run":
        _run_one(Layer(args.layer), args, args.out, summaries)
        _ci_outputs(args, summaries)
        return 0
    if args.policy_break:
        # A break names one layer's element: the demo runs that layer's case alone.
        try:
            broken = policy_breaks.parse(args.policy_break)
        except AnalystError as error:
            _fatal(error)
        _run_one(broken.layer, args, None, summaries)
        _ci_outputs(args, summaries)
        return 0
    human = _human(args)
    outcomes = []
    for layer in Layer:
        outcomes.append((layer, _run_one(layer, args, None, summaries)))
        print(file=human)
    print("==> summary", file=human)
    for layer, outcome in outcomes:
        print(
            escaped(
                f"  {layer.value:<10} ANALYST_COMPLETE={outcome.run_id}  {outcome.checks_passed} "
                f"checks passed, {len(outcome.skipped)} skipped  recommended: "
                f"{outcome.recommended}"
            ),
            file=human,
        )
    # Imported here: a run renders its pages only at its end (the report page phase).
    from app.report.layer_comparison import write_layer_comparison

    page = write_layer_comparison([outcome.out_dir for _, outcome in outcomes])
    reports = [(layer.value, outcome.out_dir / "report.html") for layer, outcome in outcomes]
    print("\n".join(map(escaped, demo_ending(reports, page))), file=human)
    verified = _verify_each(outcomes, human)
    _ci_outputs(args, summaries)
    return verified


def _verify_each(outcomes: list[tuple[Layer, RunOutcome]], human: TextIO) -> int:
    """The demo's last step: each run's attestation verified as a reviewer would, with this
    installation's key and this checkout's committed policies."""
    from app.controller.verify_command import VerifyRequest, verify

    print("==> verify each run's signed statement", file=human)
    worst = 0
    for layer, outcome in outcomes:
        print(
            f"  {layer.value}: python -m app.controller verify {escaped(str(outcome.out_dir))}",
            file=human,
        )
        try:
            worst = max(worst, verify(VerifyRequest(str(outcome.out_dir)), human))
        except AnalystError as error:
            _fatal(error)
    return worst


def main(argv: list[str] | None = None) -> int:
    # The run's files take the modes the code gives them, never the caller's umask (one of 027
    # once left the tools unable to read their inputs): what must be private is made so by its
    # own mode (0600, 0440, 0700), and everything else is made under this conventional mask.
    os.umask(0o022)
    with guarded_streams():
        try:
            refuse_closed_output()
            try:
                args = parser().parse_args(argv)
            except SystemExit:
                # --help prints, then exits 0: a help that could not be written is no success.
                sys.stdout.flush()
                raise
            # A stop kills every tool process still running and starts no other: a check made
            # at once with others goes on in its thread while the main thread unwinds.
            with stop_on_signals(TOOL_PROCESSES.stop):
                code = _commands(args)
            # Said here, so that output a reader could not take is this command's failure.
            sys.stdout.flush()
            return code
        except Stopped as stopped:
            end_orphans()
            say(stopped.line())
            return stopped.exit_code
        except AnalystError as error:
            _fatal(error)
