"""`make bench`: tool start-up under each layer against the same worker started plainly, the
nono proxy's added latency per allowed request, and one whole local case's wall time and peak
memory. Every figure comes from this one run; ratios are what to compare across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from app.controller.aws_local import LocalAws
from app.controller.context import LayerSetup
from app.controller.supplier_client import CallLog, SupplierClient
from app.controller.supplier_service import LocalSupplierService
from app.core.ids import OTHER_CASE_ID
from app.core.run_tree import WORKER_PACKAGE, ToolIdentity, create_run
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.nono.launcher import NonoLayer

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "cases" / "rfp-001"
OTHER = ROOT / "cases" / OTHER_CASE_ID


def _median_ms(action: Callable[[], object], repeat: int) -> float:
    action()  # warm caches once; the figure is the steady state
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _plain_worker(code_dir: Path, tool: ToolIdentity) -> Callable[[], object]:
    """The same worker and action with no confinement at all, at the same uid."""
    drop = {"user": tool.uid, "group": tool.gid, "extra_groups": []} if os.geteuid() == 0 else {}
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": str(code_dir)}

    def run() -> object:
        return subprocess.run(
            ["/usr/bin/python3", "-m", WORKER_PACKAGE, "env-names"],
            env=env,
            cwd="/",
            check=True,
            capture_output=True,
            **drop,  # type: ignore[arg-type]
        )

    return run


def startup_and_proxy(repeat: int) -> dict[str, float]:
    tool = ToolIdentity.for_this_controller()
    base = Path(tempfile.mkdtemp(prefix="analyst-bench-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    try:
        with ExitStack() as stack:
            paths = create_run(base, tool)
            aws = stack.enter_context(LocalAws(paths, tool, SAMPLE, other_case_dir=OTHER))
            supplier = stack.enter_context(LocalSupplierService(paths, tool, [SAMPLE, OTHER]))
            setup = LayerSetup(
                paths.run_id,
                "rfp-001",
                OTHER_CASE_ID,
                paths,
                tool,
                supplier,
                aws.credential,
                aws.endpoint,
            )
            bubblewrap = BubblewrapLayer(setup)
            nono = NonoLayer(setup)
            stack.callback(nono.close)
            bubblewrap.preflight()
            nono.preflight()
            figures = {
                "plain_ms": _median_ms(_plain_worker(paths.code, tool), repeat),
                "bubblewrap_ms": _median_ms(
                    lambda: bubblewrap.run("evaluator", "env-names", []), repeat
                ),
                "nono_ms": _median_ms(lambda: nono.run("evaluator", "env-names", []), repeat),
            }
            key = supplier.key_file.read_bytes().strip()
            client = SupplierClient(supplier, key, CallLog(), paths.run_id)
            path = "/cases/rfp-001/suppliers"
            nono.run("reader", "env-names", [])  # starts the reader's own proxy
            placeholder = nono.issued_placeholder("reader")
            figures["direct_request_ms"] = _median_ms(
                lambda: client.request("GET", path), repeat * 4
            )
            figures["proxied_request_ms"] = _median_ms(
                lambda: nono.send_through_proxy(
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


def whole_case(layer: str) -> dict[str, float]:
    """One case in a child process, so its peak memory is its own and nothing else's."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.whole_case", layer],
        cwd=ROOT,
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
    for layer in ("bubblewrap", "nono"):
        w = whole_case(layer)
        print(f"==> whole local case under {layer}")
        print(f"  wall time                   {w['wall_s']:8.1f} s")
        print(f"  controller peak RSS         {w['controller_peak_kib'] / 1024:8.1f} MiB")
        if w["tool_peak_kib"] is None:
            # The worker reads its own VmHWM from /proc, which no nono profile grants.
            print("  largest tool process peak        n/a  (/proc is outside the nono profiles)")
        else:
            print(f"  largest tool process peak   {w['tool_peak_kib'] / 1024:8.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
