"""The controller's command line: run one case under one layer, or the demo under both."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from app.controller.checks import CheckFailed
from app.controller.environment import SettingMissing
from app.controller.run import RunOptions, RunOutcome, run_case
from app.core.case import CaseError
from app.tools.layer import LayerUnavailable

SAMPLE_CASE = Path(__file__).resolve().parents[2] / "cases" / "rfp-001"
LAYERS = ("bubblewrap", "nono")

# Exit codes: a user can tell bad input from a broken boundary from a machine that cannot run it.
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_LAYER_UNAVAILABLE = 3


def _fatal(message: str, code: int) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


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
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run one case under one confinement layer")
    run.add_argument("--layer", choices=LAYERS, required=True, help="the confinement layer")
    _common(run)
    run.add_argument(
        "--out",
        type=Path,
        help="copy the report files here (a new directory; default: runs/<layer>/<run id>)",
    )
    demo = commands.add_parser("demo", help="run the case under both layers, then a summary")
    _common(demo)
    demo.add_argument(
        "--out",
        dest="out_parent",
        type=Path,
        help="parent of the per-layer report folders (default: runs)",
    )
    return parser


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
        help="base of the run's private directories (default: /var/tmp/analyst locally)",
    )
    command.add_argument(
        "--keep-workdir",
        action="store_true",
        help="keep the run's private directories after the run (for inspection)",
    )


def _run_one(layer: str, args: argparse.Namespace, out: Path | None) -> RunOutcome:
    options = RunOptions(
        layer=layer,  # type: ignore[arg-type]
        case_dir=args.case,
        out_dir=out,
        out_parent=getattr(args, "out_parent", None),
        work_base=args.workdir,
        keep_workdir=args.keep_workdir,
    )
    try:
        return run_case(options)
    except (CaseError, SettingMissing) as error:
        _fatal(str(error), EXIT_BAD_INPUT)
    except LayerUnavailable as error:
        _fatal(f"the {layer} layer cannot run here: {error}", EXIT_LAYER_UNAVAILABLE)
    except CheckFailed as failed:
        print(f"ANALYST_FAILED: {failed}", file=sys.stderr)
        sys.exit(EXIT_CHECK_FAILED)
    except Exception as error:  # every other stop is a failed run with its reason, not a trace
        print(f"ANALYST_FAILED: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(EXIT_CHECK_FAILED)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        _run_one(args.layer, args, args.out)
        return 0
    outcomes = []
    for layer in LAYERS:
        outcome = _run_one(layer, args, None)
        outcomes.append((layer, outcome))
        print()
    print("==> summary")
    for layer, outcome in outcomes:
        print(
            f"  {layer:<10} ANALYST_COMPLETE={outcome.run_id}  {outcome.checks_passed} checks "
            f"passed  report: {outcome.out_dir / 'recommendation.md'}"
        )
    return 0
