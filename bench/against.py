"""`python -m bench.against OTHER`: this checkout's tool start-ups and whole cases beside another
checkout's (an earlier commit, say), measured in one run, the two taken in turn.

Each round runs one checkout's start-up figures (bench/startup.py, in a process of its own) and
then the other's, and one whole case of each layer from each (bench/case_figures.py, each in its own
cgroup); the order alternates from round to round, so that a machine whose speed drifts moves
both columns alike. Both use this interpreter; each imports its own code (``-m`` from its own
directory). Prints the medians side by side, and for whole cases the difference against the
goal: at most 10% over the other checkout's. Both checkouts are byte-compiled first
(bench/bytecode.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Final

from app.core.repo import REPO_ROOT
from app.core.roles import Layer
from bench.bytecode import byte_compile
from bench.case_figures import one_case

CASE_GOAL: Final = 0.10
STARTUP: Final = (
    "import json; from bench.startup import startup_and_proxy; "
    "print(json.dumps(startup_and_proxy({repeat})))"
)
START_FIGURES: Final = ("plain_ms", "bubblewrap_ms", "nono_ms")


def _startup(root: Path, repeat: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", STARTUP.format(repeat=repeat)],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def measure(roots: dict[str, Path], rounds: int, repeat: int) -> dict[str, dict[str, list[float]]]:
    """Each checkout's samples, by figure: start-up medians (ms), case wall and CPU (s)."""
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in roots}
    names = list(roots)
    for turn in range(rounds):
        for name in names if turn % 2 == 0 else reversed(names):
            root = roots[name]
            for figure, value in _startup(root, repeat).items():
                if figure in START_FIGURES:
                    samples[name].setdefault(figure, []).append(value)
            for layer in Layer:
                case = one_case(layer, root)
                samples[name].setdefault(f"{layer} case wall", []).append(case.wall_s)
                if case.cpu_s is not None:
                    samples[name].setdefault(f"{layer} case cpu", []).append(case.cpu_s)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.against", description=__doc__)
    parser.add_argument("other", type=Path, help="the other checkout (its own .venv is not used)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, each checkout once (5)")
    parser.add_argument("--repeat", type=int, default=15, help="start-ups per median (15)")
    args = parser.parse_args(argv)
    other = args.other.resolve()
    if not (other / "bench" / "startup.py").is_file():
        parser.error(f"{other}: not a checkout of this project (no bench/startup.py)")
    roots = {str(other): other, "this checkout": REPO_ROOT}
    for root in roots.values():
        byte_compile(root)
    samples = measure(roots, args.rounds, args.repeat)
    print(
        f"==> {args.rounds} rounds, the two checkouts in turn, each byte-compiled first "
        "(bench/bytecode.py); medians"
    )
    print(f"  {'':28}{str(other)[-22:]:>22}  {'this checkout':>14}  difference")
    for figure in samples["this checkout"]:
        theirs = statistics.median(samples[str(other)][figure])
        ours = statistics.median(samples["this checkout"][figure])
        unit = "ms" if figure.endswith("_ms") else "s"
        label = f"tool start, {figure.removesuffix('_ms')}" if unit == "ms" else figure
        change = ours / theirs - 1
        verdict = ""
        if figure.endswith("case wall"):
            verdict = f"   goal <= +{CASE_GOAL:.0%}: {'met' if change <= CASE_GOAL else 'MISSED'}"
        print(
            f"  {label:<28}{theirs:>19.3f} {unit:<2}  {ours:>11.3f} {unit:<2}  "
            f"{ours - theirs:+.3f} {unit} ({change:+.1%}){verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
