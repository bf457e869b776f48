"""The rehearsal's command line.

Exit codes: 0 every pod ran as the Job would and every check passed; 1 a pod failed or a check
(the Job's or the rehearsal's) printed FAIL; 2 bad input (an unknown option or change); 3 this
machine cannot rehearse (not root, a missing program), with the fix.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import cast

from app.core.errors import AnalystError
from app.core.roles import Layer
from infra.config import ConfigError
from infra.targets import RuntimeTarget

from . import namespace
from .image_stand_in import ensure_image
from .objects import STACK, Tweak, render

DESCRIPTION = (
    "Rehearse the analyst Jobs' pods on this machine exactly as the kubelet would run them, "
    "from the objects the Pulumi program renders (the same ones `make manifests` writes): their "
    "commands, environments, Secret/ConfigMap/emptyDir volumes with defaultMode and fsGroup, "
    "uids, read-only roots, capabilities, seccomp profiles and init containers, in private "
    "mount, network and pid namespaces (root required; nothing on the host changes). "
    "Stand-ins: moto for S3/IAM/STS, a Pod Identity webhook and agent, the offline model for "
    "Bedrock, this machine's kernel for the Nitro VM, the rehearsal itself for the Security "
    "Profiles Operator; the output names each, and every field it does not simulate."
)
EPILOG = (
    "exit codes: 0 every pod ran and every check passed; 1 a pod failed or a check FAILed; "
    "2 bad input; 3 this machine cannot rehearse (the message names the fix)"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rehearsal", description=DESCRIPTION, epilog=EPILOG
    )
    # The third command is how the rehearsal re-enters itself inside its namespaces.
    commands = parser.add_subparsers(dest="command", required=True, metavar="{run,all}")
    run = commands.add_parser(
        "run",
        help="rehearse one layer's Job pod (with the supplier pod, and its comparison pod)",
    )
    run.add_argument(
        "--layer",
        choices=[layer.value for layer in Layer],
        required=True,
        help="the layer whose Job pod to rehearse",
    )
    every = commands.add_parser(
        "all",
        help="rehearse every layer's Job pod of the dev stack (`make rehearse` runs it once per "
        "runtime target)",
    )
    for command in (run, every):
        command.add_argument(
            "--runtime-target",
            choices=[target.value for target in RuntimeTarget],
            help=f"the pod shape, as `pulumi config set runtimeTarget` sets it (default: the "
            f"{STACK} stack's own)",
        )
        command.add_argument(
            "--case-id",
            metavar="ID",
            help=f"the case the stack runs, as `pulumi config set caseId` sets it (a folder "
            f"under cases/; default: the {STACK} stack's own)",
        )
        command.add_argument(
            "--no-comparison",
            action="store_true",
            help="skip the comparison pods (comparisonPod) and their nitro-evidence verdict",
        )
        command.add_argument(
            "--change",
            metavar="MODULE:FUNCTION",
            help="apply a Python function to the rendered objects before they run (how the "
            "tests break a pod spec on purpose)",
        )
    inside = commands.add_parser(namespace.INSIDE)
    inside.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def _tweak(reference: str | None) -> Tweak | None:
    if reference is None:
        return None
    module, _, function = reference.partition(":")
    try:
        return cast(Tweak, getattr(importlib.import_module(module), function))
    except (ImportError, AttributeError, ValueError) as error:
        print(f"error (bad input): --change {reference}: {error}", file=sys.stderr)
        sys.exit(2)


def _settings(options: argparse.Namespace) -> dict[str, str]:
    """The stack settings the options give, over the dev stack's own."""
    settings = {"runtimeTarget": options.runtime_target, "caseId": options.case_id}
    return {key: value for key, value in settings.items() if value is not None}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    options = _parser().parse_args(args)
    try:
        if options.command != namespace.INSIDE:
            _tweak(options.change)  # bad input is refused before anything starts
            try:
                render(settings=_settings(options))
            except ConfigError as error:
                print(f"error (bad input): {error}", file=sys.stderr)
                return 2
            namespace.check_machine()
            # Before the namespaces: building it needs the package index, they have no network.
            ensure_image(sys.stdout)
            namespace.enter(args)
        return _inside(_parser().parse_args(options.rest))
    except AnalystError as error:
        print(f"error ({error.label}): {error}", file=sys.stderr)
        return error.exit_code


def _inside(options: argparse.Namespace) -> int:
    from .rehearse import Options, rehearse

    layers = tuple(Layer) if options.command == "all" else (Layer(options.layer),)
    return rehearse(
        Options(
            layers=layers,
            settings=_settings(options),
            comparison=not options.no_comparison,
            stream=sys.stdout,
            tweak=_tweak(options.change),
        )
    )
