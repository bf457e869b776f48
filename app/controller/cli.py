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

from app.controller.case_command import check_case, new_case
from app.controller.ci_output import RunSummary, junit_xml, summary_json
from app.controller.doctor import DoctorOptions, doctor
from app.controller.guest import read_guest
from app.controller.guest_comparison import Verdict
from app.controller.nitro_evidence import Request, nitro_evidence
from app.controller.orphans import end_orphans
from app.controller.run import RunOutcome, run_case
from app.controller.run_plan import RunOptions
from app.controller.signals import Stopped, say, stop_on_signals
from app.controller.standard_streams import OutputLost, guarded_streams, refuse_closed_output
from app.controller.terminal import Closing, demo_ending
from app.core.checklog import CheckFailed
from app.core.errors import AnalystError, BadInput, LayerUnavailable
from app.core.escaping import escaped
from app.core.repo import SAMPLE_CASE
from app.core.roles import Layer
from app.tools import policy_breaks
from app.tools.execution import TOOL_PROCESSES


class _Version(argparse.Action):
    """--version: the release, and the code revision a run's evidence would name (found only
    when asked, so no other command pays for it)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from app.controller.provenance import code_revision
        from app.core import cluster_env
        from app.core.version import VERSION

        revision = code_revision(os.environ.get(cluster_env.MODE) == cluster_env.CLUSTER_MODE)
        print(f"procurement-analyst {VERSION} ({revision.source} {revision.value or 'unknown'})")
        parser.exit(0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m app.controller",
        description=(
            "The trusted controller of the confined procurement analyst. It runs one case with "
            "its three tool processes confined by bubblewrap or nono, and prints one PASS, FAIL "
            "or SKIP line per check. With no AWS settings it runs locally on loopback (moto for "
            "S3/IAM, the supplier API over TLS, an offline model); the Kubernetes Job sets "
            "ANALYST_MODE=cluster."
        ),
        epilog=(
            "exit codes: 0 complete; 1 the run stopped (a check failed, or a tool or service "
            "broke); 2 bad input, nothing was created; 3 the layer cannot run on this machine; "
            "129, 130, 143 stopped by SIGHUP, SIGINT (Ctrl-C), SIGTERM, after cleaning up"
        ),
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="print this release and the code it runs (the commit, or the image), then exit",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="run one case under one confinement layer",
        description="Runs one case with its three tool processes confined by the chosen layer and "
        "prints one PASS, FAIL or SKIP line per check, then ANALYST_COMPLETE=<run id>, the count "
        "and where the report is. A FAIL stops the run with exit 1 and no recommendation; its "
        "check list, a page leading with the failed check and its signed statement are kept.",
    )
    run.add_argument(
        "--layer",
        choices=[layer.value for layer in Layer],
        required=True,
        help="the confinement layer",
    )
    _common(run)
    run.add_argument(
        "--out",
        type=Path,
        help=(
            "put the report files here, all at once when the run completes: a new folder in an "
            "existing one, or an existing empty folder (default: runs/<layer>/<run id>)"
        ),
    )
    evidence = commands.add_parser(
        "nitro-evidence",
        help="after `pulumi up`: the analyst pod's guest readings beside an ordinary pod's on the "
        "same node, and whether the analyst ran on a kernel of its own",
        description="Reads, through the Kubernetes API, the guest readings (kernel build, "
        "uptime, block devices, product name) that a layer's analyst Job pod and the ordinary "
        "comparison pod on its node printed, and the node's age; prints them side by side with "
        "a verdict. Exits 1 when the readings are the node's own or inconclusive.",
    )
    evidence.add_argument(
        "--layer",
        choices=[layer.value for layer in Layer],
        required=True,
        help="the layer whose analyst Job pod to compare",
    )
    evidence.add_argument(
        "--namespace", required=True, help="the stack's namespace: pulumi stack output namespace"
    )
    evidence.add_argument("--kubeconfig", type=Path, help="default: $KUBECONFIG or ~/.kube/config")
    evidence.add_argument("--context", help="a kubeconfig context other than the current one")
    check = commands.add_parser(
        "doctor",
        help="every prerequisite of each layer on this machine or in this pod, PASS or FAIL "
        "with its fix",
        description="Lists what each layer needs here (bwrap, its version and options, user "
        "namespaces and the distribution switches, a mountable /proc, libseccomp; Landlock and "
        "its network support; the interpreter; a work directory the tool uid can traverse) "
        "and, with ANALYST_MODE=cluster, the Job's and Pod Identity's variables, the Pod "
        "Identity agent's credentials and the supplier Service. "
        "A run's preflight stops at the first of the same list. Exits 3 when a chosen layer "
        "cannot run here.",
    )
    check.add_argument(
        "--layer",
        choices=[layer.value for layer in Layer],
        help="one layer (default: both)",
    )
    check.add_argument(
        "--workdir",
        type=Path,
        help="the base of the run's directories to check (default: $ANALYST_WORKDIR, else "
        "this user's own: $XDG_RUNTIME_DIR/analyst or /var/tmp/analyst-<uid>)",
    )
    commands.add_parser(
        "guest-readings",
        help="print this machine's guest readings as one GUEST_READINGS= line (the comparison "
        "pod's command)",
        description="Prints the kernel build (uname -rv), the uptime, the block devices and the "
        "DMI product name as one GUEST_READINGS= line, as every analyst run prints them; "
        "nitro-evidence compares the two pods' lines.",
    )
    demo = commands.add_parser(
        "demo",
        help="run the case under both layers, then a summary",
        description="What `make demo` runs: the case under bubblewrap, then under nono, each as "
        "`run` runs it, then a summary of both, and each run's signed statement verified as "
        "`verify` does (exit 1 if one does not hold). It stops at the first run that does not "
        "complete, with that run's exit code.",
    )
    _common(demo)
    demo.add_argument(
        "--out",
        dest="out_parent",
        type=Path,
        help="parent of the per-layer report folders (default: runs)",
    )
    _case_commands(commands)
    _verify_command(commands)
    return parser


def _verify_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    verify = commands.add_parser(
        "verify",
        help="check a run's signed statement: its signature, every file's sha256, that no "
        "check failed and that the policy in force is the committed one",
        description="Reads attestation.intoto.jsonl and the run's files from a run's folder or "
        "its store prefix, checks the DSSE signature against the key given, recomputes every "
        "subject's sha256, checks that no check failed and that the policy digests in force "
        "match the committed policies, then prints each difference and one line saying what "
        "was proven and what was skipped. Exits 0 only when all hold, 1 when anything differs, "
        "2 when the source, key or folder cannot be read.",
    )
    verify.add_argument(
        "source",
        metavar="RUN_DIR_OR_S3_PREFIX",
        help="a run's report folder, or its store prefix s3://BUCKET/reports/CASE/RUN/",
    )
    signer = verify.add_mutually_exclusive_group()
    signer.add_argument(
        "--key",
        type=Path,
        metavar="PUBLIC_KEY",
        help="the PEM public key that must have signed it (default: this installation's key)",
    )
    signer.add_argument(
        "--kms-key", metavar="ARN", help="the AWS KMS key that must have signed it (a cluster's)"
    )
    verify.add_argument(
        "--policy-dir",
        type=Path,
        metavar="DIR",
        help="the committed policies to compare with (default: this checkout's policies/)",
    )


def _case_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    case = commands.add_parser(
        "case",
        help="write a case folder of your own, or check one exactly as a run checks it",
        description="A case folder of your own: `case new` writes one to edit, `case check` "
        "validates it as a run does. Exits 2 when the folder is not a valid case.",
    )
    what = case.add_subparsers(dest="case_command", required=True)
    new = what.add_parser(
        "new",
        help="write a valid case folder with three example suppliers to edit",
        description="Writes DIR/case.json and DIR/proposals/<id>.json for three example "
        "suppliers, each sha256 filled in; the folder's name is the case id.",
    )
    new.add_argument("folder", type=Path, metavar="DIR", help="a new or empty folder")
    check = what.add_parser(
        "check",
        help="validate a case folder as a run does, every file and field, exit 2 if invalid",
        description="Validates DIR exactly as `run` does and prints every problem, file by file "
        "and field by field (exit 2), or that the case is valid and which supplier its "
        "comparison picks.",
    )
    check.add_argument("folder", type=Path, metavar="DIR", help="the case folder")
    check.add_argument(
        "--write-digests",
        action="store_true",
        help="first set each supplier's sha256 in case.json to its proposal file's digest, "
        "and say which changed",
    )


def _common(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--case",
        type=Path,
        default=SAMPLE_CASE,
        help="a case folder: case.json and proposals/<id>.json (default: the sample rfp-001)",
    )
    command.add_argument(
        "--workdir",
        type=Path,
        help=(
            "base of the run's private directories: an absolute path whose parent exists, "
            "outside what a tool process sees differently (/usr, /tmp, /proc, /dev, ...) "
            "(default: $ANALYST_WORKDIR, else this user's own: $XDG_RUNTIME_DIR/analyst or "
            "/var/tmp/analyst-<uid>, made 0700)"
        ),
    )
    command.add_argument(
        "--keep-workdir",
        action="store_true",
        help="keep the run's private directories after the run, without its secrets",
    )
    command.add_argument(
        "--junit",
        type=Path,
        metavar="FILE",
        help="also write JUnit XML to FILE: one testcase per check id, a SKIP as skipped with "
        "its reason, a FAIL as a failure with its claim and what was observed",
    )
    command.add_argument(
        "--json",
        action="store_true",
        help="print a JSON summary on stdout (counts, skipped and failed ids, where the files "
        "are), the check lines going to stderr",
    )
    command.add_argument(
        "--quiet",
        action="store_true",
        help="print only the layer's header, the FAIL and SKIP lines (each under its section's "
        "header) and the closing summary",
    )
    command.add_argument(
        "--break",
        dest="policy_break",
        metavar="ROLE:ELEMENT",
        help="leave one element of one role's committed policy out, named as in "
        f"policies/<layer>/elements.json (such as {policy_breaks.EXAMPLE}): the run then stops "
        "at the check that watches it (exit 1); demo runs that element's layer alone; "
        f"`--break {policy_breaks.LIST}` prints every name",
    )


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
                args = _parser().parse_args(argv)
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
