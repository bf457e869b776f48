"""What the baseline filter's rule groups that are elements (app/tools/seccomp_policy.py's
GROUP_ELEMENTS: other processes, file metadata, watches) cost a tool start: the launcher's loader
installing the shipped baseline, beside the same baseline without those groups, which is the
filter as it was before them, started in turn at the tool uid in one run.

Each start is the tool's first steps (the loader, then the worker's package and its result
protocol), the two filters taken in turn, the first of each pair alternating, so that a
machine whose load changes moves both alike: the figure is the difference of the medians. As a
start's time on a loaded machine varies by more than the filter costs, the filter's own cost
per system call is measured too, in one process per filter that makes getppid() in batches
(the fastest batch, which load disturbs least).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Final

from app.core.run_tree import INTERPRETER, WORKER_PACKAGE, ToolIdentity, stage_worker
from app.tools.loader import ENTRY, FILTER_OPTION
from app.tools.seccomp import nono_baseline_filter
from app.tools.seccomp_policy import GROUP_ELEMENTS

GOAL_MS: Final = 1.0
FIRST_STEPS: Final = f"{ENTRY}\nimport {WORKER_PACKAGE}.protocol"
# getppid() in batches after the filter is loaded: the fastest batch's ns per call.
PER_CALL: Final = (
    f"{ENTRY}\nimport os, time\nbest = None\nfor _ in range(9):\n"
    "    begun = time.perf_counter_ns()\n"
    "    for _ in range(100000): os.getppid()\n"
    "    took = time.perf_counter_ns() - begun\n"
    "    best = took if best is None else min(best, took)\n"
    "print(best / 100000)"
)


def _per_call_ns(code: Path, program: Path) -> float:
    done = subprocess.run(
        [INTERPRETER, "-S", "-c", PER_CALL, FILTER_OPTION, str(program)],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(code)},
        cwd=code,
        check=True,
        capture_output=True,
        text=True,
        **ToolIdentity.for_this_controller().process_identity(),
    )
    return float(done.stdout.strip())


def _start_ms(code: Path, program: Path) -> float:
    begun = time.perf_counter()
    subprocess.run(
        [INTERPRETER, "-S", "-c", FIRST_STEPS, FILTER_OPTION, str(program), "env-names"],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(code)},
        cwd=code,
        check=True,
        **ToolIdentity.for_this_controller().process_identity(),
    )
    return (time.perf_counter() - begun) * 1000


def filter_cost(repeat: int) -> dict[str, float]:
    """Medians in ms of a start under each filter and their difference, what the groups add
    to one system call in ns, and each filter's length in BPF instructions."""
    base = Path(tempfile.mkdtemp(prefix="analyst-filter-bench-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    try:
        code = base / "code"
        stage_worker(code)
        filters = {
            "before": nono_baseline_filter(frozenset(GROUP_ELEMENTS)),
            "shipped": nono_baseline_filter(),
        }
        programs = {}
        for name, compiled in filters.items():
            programs[name] = code / f"{name}.bpf"
            programs[name].write_bytes(compiled.program)
            os.chmod(programs[name], 0o644)
        for program in programs.values():
            _start_ms(code, program)  # warm caches once
        samples: dict[str, list[float]] = {name: [] for name in programs}
        for turn in range(repeat):
            names = list(programs) if turn % 2 == 0 else list(reversed(programs))
            for name in names:
                samples[name].append(_start_ms(code, programs[name]))
        before, shipped = samples["before"], samples["shipped"]
        per_call = {
            name: min(_per_call_ns(code, path) for _ in range(3)) for name, path in programs.items()
        }
        return {
            "added_per_call_ns": per_call["shipped"] - per_call["before"],
            "before_ms": statistics.median(before),
            "shipped_ms": statistics.median(shipped),
            "added_ms": statistics.median(shipped) - statistics.median(before),
            "before_instructions": len(filters["before"].program) / 8,
            "shipped_instructions": len(filters["shipped"].program) / 8,
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)


def print_filter_cost(repeat: int) -> None:
    figures = filter_cost(repeat)
    added = figures["added_ms"]
    print(
        f"==> the baseline filter's groups for other processes, file metadata and watches, "
        f"median of {repeat} starts each, in turn"
    )
    print(
        f"  without them ({figures['before_instructions']:.0f} BPF instructions) "
        f"{figures['before_ms']:7.2f} ms; with them ({figures['shipped_instructions']:.0f}) "
        f"{figures['shipped_ms']:7.2f} ms; adds {added:+.2f} ms a start "
        f"({figures['added_per_call_ns']:+.0f} ns a system call)   "
        f"goal <= +{GOAL_MS:.0f} ms: {'met' if added <= GOAL_MS else 'MISSED'}"
    )
