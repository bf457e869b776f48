"""`make bench`: tool start-up under each layer against the same worker started plainly, the
nono proxy's added latency per allowed request, and one whole local case's wall time and peak
memory. Every figure comes from this one run; ratios are what to compare across machines.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

from app.controller.run import RunOptions, plan_run, prepared_run
from app.core.repo import REPO_ROOT, SAMPLE_CASE
from app.core.roles import Layer
from app.core.run_tree import ToolIdentity
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.control import run_unconfined
from app.tools.nono.launcher import NonoLayer


def _median_ms(action: Callable[[], object], repeat: int) -> float:
    action()  # warm caches once; the figure is the steady state
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def startup_and_proxy(repeat: int) -> dict[str, float]:
    base = Path(tempfile.mkdtemp(prefix="analyst-bench-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    options = RunOptions(layer=Layer.NONO, case_dir=SAMPLE_CASE, work_base=base)
    try:
        with prepared_run(plan_run(options), io.StringIO()) as prepared, ExitStack() as stack:
            run = prepared.run
            bubblewrap = BubblewrapLayer(run)
            nono = stack.enter_context(closing(NonoLayer(run)))
            bubblewrap.preflight()
            nono.preflight()
            tool = ToolIdentity.for_this_controller()
            figures = {
                # The same worker and action with no confinement at all, at the same uid.
                "plain_ms": _median_ms(
                    lambda: run_unconfined(run.paths, tool, "env-names", ()), repeat
                ),
                "bubblewrap_ms": _median_ms(
                    lambda: bubblewrap.run_tool("evaluator", "env-names"), repeat
                ),
                "nono_ms": _median_ms(lambda: nono.run_tool("evaluator", "env-names"), repeat),
            }
            path = "/cases/rfp-001/suppliers"
            nono.run_tool("reader", "env-names")  # starts the reader's own proxy
            placeholder = nono.proxies.placeholder("reader")
            figures["direct_request_ms"] = _median_ms(
                lambda: prepared.client.request("GET", path), repeat * 4
            )
            figures["proxied_request_ms"] = _median_ms(
                lambda: nono.proxies.send(
                    "reader",
                    "GET",
                    path,
                    key=placeholder,
                    request_id=nono.next_request_id("reader"),
                ),
                repeat * 4,
            )
            return figures
    finally:
        shutil.rmtree(base, ignore_errors=True)


def whole_case(layer: Layer) -> dict[str, Any]:
    """One case in a child process, so its peak memory is its own and nothing else's."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.whole_case", layer],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall_s": wall, **figures}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make bench", description=__doc__)
    parser.add_argument("--repeat", type=int, default=15, help="samples per median (default 15)")
    args = parser.parse_args(argv)
    print(
        f"==> tool start-up, median of {args.repeat} (one worker action: list its variable names)"
    )
    s = startup_and_proxy(args.repeat)
    print(f"  plain worker, same uid      {s['plain_ms']:8.1f} ms")
    print(
        f"  under bubblewrap            {s['bubblewrap_ms']:8.1f} ms   "
        f"ratio {s['bubblewrap_ms'] / s['plain_ms']:.2f}x"
    )
    print(
        f"  under nono                  {s['nono_ms']:8.1f} ms   "
        f"ratio {s['nono_ms'] / s['plain_ms']:.2f}x"
    )
    print(f"==> supplier request, median of {args.repeat * 4}")
    # Both clients open a new connection per request, as the controller and a role do: the
    # direct one pays a TLS handshake each time, the proxy keeps its upstream TLS session.
    print(f"  controller, direct over TLS {s['direct_request_ms']:8.2f} ms")
    print(
        f"  through the reader's proxy  {s['proxied_request_ms']:8.2f} ms   "
        f"difference {s['proxied_request_ms'] - s['direct_request_ms']:+.2f} ms per allowed request"
    )
    for layer in Layer:
        w = whole_case(layer)
        print(f"==> whole local case under {layer}")
        print(f"  wall time                   {w['wall_s'] or 0:8.1f} s")
        controller_kib, tool_kib = w["controller_peak_kib"], w["tool_peak_kib"]
        print(f"  controller peak RSS         {(controller_kib or 0) / 1024:8.1f} MiB")
        if tool_kib is None:
            # The worker reads its own VmHWM from /proc, which no nono profile grants.
            print("  largest tool process peak        n/a  (/proc is outside the nono profiles)")
        else:
            print(f"  largest tool process peak   {tool_kib / 1024:8.1f} MiB")
        print_phases(w["timing"])
    return 0


def print_phases(rows: list[dict[str, Any]]) -> None:
    """The run's own phase table (evidence.json's "timing")."""
    header = f"{'phase':<20} {'wall ms':>8} {'controller':>10} {'children':>9} {'services':>9}"
    print(f"  {header} tools")
    for row in rows:
        print(
            f"  {row['phase']:<20} {row['wall_ms']:8.1f} {row['controller_cpu_ms']:10.1f} "
            f"{row['child_cpu_ms']:9.1f} {row['service_cpu_ms']:9.1f} {row['tool_processes']:5d}"
        )


if __name__ == "__main__":
    sys.exit(main())
