"""The controller's command line as argparse declares it: every command, option and help text
(app/controller/cli.py acts on what it parses)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from app.core.repo import SAMPLE_CASE
from app.core.roles import Layer
from app.tools import policy_breaks


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


def parser() -> argparse.ArgumentParser:
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
