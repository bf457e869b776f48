"""`make bench`: each figure beside its goal. A tool process's start-up under each layer against
the same worker started plainly at the same uid; the nono proxy's cost per allowed request;
what the baseline filter's newest rule groups add to a start, beside the filter without them;
whole local cases, each alone, with the CPU of every process they start and the run's own
phase table; and many cases at once, which must all pass and share nothing. Every figure comes
from this one run on this machine.

It exits 1 when a case fails, two cases share something, or a case leaves a process behind; a
figure that misses its goal is printed as missed, since it depends on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from typing import Any, Final

from app.controller.phases.evidence import ATTESTATION_PHASE, REPORT_PAGE_PHASE
from app.core.repo import REPO_ROOT
from app.core.roles import Layer
from bench.bytecode import byte_compile
from bench.case_figures import BatchFigures, CaseFigures, concurrent_cases, median_phases, one_case
from bench.filter_cost import print_filter_cost
from bench.startup import startup_and_proxy
from bench.supplier_load import READ_SECONDS, READERS, SLOW_CLIENTS, TRICKLE_SECONDS, supplier_load
from bench.tool_use import print_tool_use

# The goals (issue 12): a plain start, what a layer adds to it, and a whole case alone.
PLAIN_START_MS: Final = 20.0
LAYER_ADDS_MS: Final = 5.0
CASE_WALL_S: Final = 2.0
# What the report page may add to a case: a small share of it, whatever the machine's speed.
REPORT_SHARE: Final = 0.05
# Signing a run's statement and verifying it (issue 36): CPU of a case, locally.
ATTESTATION_CPU_MS: Final = 20.0
CONCURRENT_CASES: Final = 32
# The supplier API under slow clients (issue 35): its valid reads' p99, and its peak RSS.
SUPPLIER_P99_MS: Final = 50.0
SUPPLIER_RSS_MIB: Final = 64.0


def _verdict(value: float, goal: float) -> str:
    return "met" if value <= goal else "MISSED"


def print_startup(repeat: int) -> None:
    print(f"==> tool start-up, median of {repeat} (one worker action: list its variable names)")
    s = startup_and_proxy(repeat)
    plain = s["plain_ms"]
    print(
        f"  plain worker, same uid      {plain:8.1f} ms"
        f"{'':22}goal <= {PLAIN_START_MS:.0f} ms: {_verdict(plain, PLAIN_START_MS)}"
    )
    for layer in Layer:
        figure = s[f"{layer}_ms"]
        added = figure - plain
        print(
            f"  under {layer:<21} {figure:8.1f} ms   adds {added:+5.1f} ms ({figure / plain:.2f}x)"
            f"   goal <= +{LAYER_ADDS_MS:.0f} ms: {_verdict(added, LAYER_ADDS_MS)}"
        )
    print(f"==> supplier request, median of {repeat * 4}")
    # Both clients open a new connection per request, as the controller and a role do: the
    # direct one pays a TLS handshake each time, the proxy keeps its upstream TLS session.
    print(f"  controller, direct over TLS {s['direct_request_ms']:8.2f} ms")
    print(
        f"  through the reader's proxy  {s['proxied_request_ms']:8.2f} ms   "
        f"difference {s['proxied_request_ms'] - s['direct_request_ms']:+.2f} ms per allowed request"
    )


def print_supplier_load() -> None:
    print(
        f"==> supplier API under load: {SLOW_CLIENTS} slow clients holding connections (a "
        f"header line every {TRICKLE_SECONDS:.0f} s), {READERS} readers for {READ_SECONDS:.0f} s "
        "(a new TLS connection per read), then a flood of silent connections"
    )
    load = supplier_load()
    print(
        f"  valid reads {load.reads_per_s:7.1f} /s, p50 {load.p50_ms:5.1f} ms, p99 "
        f"{load.p99_ms:5.1f} ms, {load.failed_reads} failed   goal p99 <= "
        f"{SUPPLIER_P99_MS:.0f} ms: {_verdict(load.p99_ms, SUPPLIER_P99_MS)}"
    )
    print(
        f"  server peak RSS {load.peak_rss_mib:5.1f} MiB, at most {load.peak_threads} threads"
        f"{'':12}goal < {SUPPLIER_RSS_MIB:.0f} MiB: "
        + ("met" if load.peak_rss_mib < SUPPLIER_RSS_MIB else "MISSED")
    )


def print_cases(count: int) -> None:
    # The layers alternate, so that a machine whose speed drifts during the run moves both alike.
    figures: dict[Layer, list[CaseFigures]] = {layer: [] for layer in Layer}
    for _ in range(count):
        for layer in Layer:
            figures[layer].append(one_case(layer))
    print(f"==> whole local case, each alone, the layers alternating, median of {count} per layer")
    for layer, cases in figures.items():
        wall = statistics.median(case.wall_s for case in cases)
        print(
            f"  {layer:<11} wall {wall:5.2f} s{'':18}goal <= {CASE_WALL_S:.1f} s: "
            f"{_verdict(wall, CASE_WALL_S)}   (runs: "
            + ", ".join(f"{case.wall_s:.2f}" for case in cases)
            + " s)"
        )
        print(f"  {'':11} CPU  {_cpu(cases)}")
        controller = max(case.run["controller_peak_kib"] for case in cases) / 1024
        tool = cases[0].run["tool_peak_kib"]
        tool_text = (
            "n/a (/proc is outside the nono profiles)" if tool is None else f"{tool / 1024:.1f} MiB"
        )
        print(f"  {'':11} peak RSS: controller {controller:.1f} MiB, largest tool {tool_text}")
    print_report_page(figures)
    print_attestation(figures)
    print("  phases (median per phase; wall ms, then CPU ms of the controller, of the processes")
    print("  it waited for, and of moto and the supplier API; tool processes started)")
    for layer, cases in figures.items():
        print(f"  -- {layer}")
        print_phases(median_phases(cases))


def print_report_page(figures: dict[Layer, list[CaseFigures]]) -> None:
    """What report.html costs a run: its modules and Jinja2 imported and its templates compiled
    in a thread beside the checks, then the render, in the run's last phase. The goal holds
    for both shares: the render's of the case's wall time, and the CPU of both parts of the
    case's CPU (the thread runs while the checks wait on tool processes, but on a busy machine
    its CPU is taken from them)."""
    print("  report.html, median per layer: made ready in a thread beside the checks (its modules")
    print("  and Jinja2 imported, the templates compiled), then rendered in the last phase")
    for layer, cases in figures.items():
        ready = [case.run["templates_ready"] for case in cases]
        rows = [case.phase(REPORT_PAGE_PHASE) for case in cases]
        wall_share = statistics.median(
            row["wall_ms"] / 1000 / case.wall_s for row, case in zip(rows, cases, strict=True)
        )
        cpu_shares = [
            (made["cpu_ms"] + row["controller_cpu_ms"]) / 1000 / case.cpu_s
            for made, row, case in zip(ready, rows, cases, strict=True)
            if case.cpu_s
        ]
        cpu_share = statistics.median(cpu_shares) if cpu_shares else None
        cpu_text = "CPU share n/a" if cpu_share is None else f"{cpu_share:4.1%} of its CPU"
        worst = max(wall_share, cpu_share or 0.0)
        print(
            f"  {layer:<11} ready {_median(ready, 'wall_ms'):4.0f} ms wall, "
            f"{_median(ready, 'cpu_ms'):3.0f} ms CPU; rendered {_median(rows, 'wall_ms'):4.0f} ms "
            f"wall, {_median(rows, 'controller_cpu_ms'):3.0f} ms CPU: {wall_share:4.1%} of the "
            f"case's wall, {cpu_text}   goal <= {REPORT_SHARE:.0%}: {_verdict(worst, REPORT_SHARE)}"
        )


def print_attestation(figures: dict[Layer, list[CaseFigures]]) -> None:
    """What the signed statement costs: the run's signing (its files hashed, the statement
    built and signed, written and stored: the attestation phase's controller CPU) and a
    verify of the run's folder afterwards."""
    print("  attestation.intoto.jsonl, median per layer: signed in the run, then verified")
    for layer, cases in figures.items():
        if not all("verify_cpu_ms" in case.run for case in cases):
            print(f"  {layer:<11} n/a (this checkout signs no statement)")
            continue
        signed = statistics.median(
            case.phase(ATTESTATION_PHASE)["controller_cpu_ms"] for case in cases
        )
        verified = statistics.median(case.run["verify_cpu_ms"] for case in cases)
        total = signed + verified
        print(
            f"  {layer:<11} signed {signed:5.1f} ms CPU, verified {verified:5.1f} ms CPU: "
            f"{total:5.1f} ms{'':12}goal <= {ATTESTATION_CPU_MS:.0f} ms: "
            f"{_verdict(total, ATTESTATION_CPU_MS)}"
        )


def _median(rows: list[dict[str, Any]], column: str) -> float:
    return statistics.median(float(row[column]) for row in rows)


def _cpu(cases: list[CaseFigures]) -> str:
    seconds = [case.cpu_s for case in cases if case.cpu_s is not None]
    if not seconds:
        return f"n/a: {cases[0].run['cpu_unavailable']}"
    return (
        f"{statistics.median(seconds):5.2f} s per case, every process it started (its own "
        "cgroup: bwrap's tool processes included, which getrusage misses)"
    )


def print_phases(rows: list[dict[str, Any]]) -> None:
    header = f"{'phase':<40} {'wall':>7} {'ctl':>6} {'waited':>6} {'svc':>6} tools"
    print(f"     {header}")
    for row in rows:
        if "controller_cpu_ms" not in row:
            print(f"     {row['phase']:<40} {row['wall_ms']:7.0f}")
            continue
        print(
            f"     {row['phase']:<40} {row['wall_ms']:7.0f} {row['controller_cpu_ms']:6.0f} "
            f"{row['child_cpu_ms']:6.0f} {row['service_cpu_ms']:6.0f} {row['tool_processes']:5.0f}"
        )


def print_batch(count: int) -> bool:
    """Runs ``count`` cases at once; True when every one passed and none shared anything."""
    cores = os.cpu_count() or 1
    print(
        f"==> {count} local cases at once, the layers alternating, one --workdir and one runs/ "
        f"folder between them ({cores} cores)"
    )
    batch = concurrent_cases(count)
    passed = len(batch.runs)
    print(
        f"  {passed} of {count} passed{'':22}goal all {count}: "
        + ("met" if passed == count and not batch.failures else "MISSED")
    )
    for failure in batch.failures:
        print(f"    {failure}")
    print(
        f"  wall {batch.wall_s:.1f} s: throughput {batch.per_minute:.1f} cases per minute, "
        f"{batch.wall_s / count:.2f} s per case"
    )
    if batch.cpu_s is not None:
        print(f"  CPU {batch.cpu_s:.1f} s in all, {batch.cpu_s / count:.2f} s per case")
    else:
        print(f"  CPU n/a: {batch.cpu_unavailable}")
    print(_nothing_shared(batch))
    for value in batch.shared:
        print(f"    shared: {value}")
    return passed == count and not batch.failures and not batch.shared


def _nothing_shared(batch: BatchFigures) -> str:
    ports = sum(2 + len(run["proxies"]) for run in batch.runs)
    verdict = "none shared" if not batch.shared else f"{len(batch.shared)} SHARED"
    return (
        f"  {verdict}: {len(batch.runs)} run ids, run trees, report folders and buckets (each in "
        f"its own moto), {ports} ports (moto, supplier API, nono's proxies)"
    )


def _count(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least`` (a median needs one sample)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least {least}")
        return value

    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make bench", description=__doc__)
    parser.add_argument(
        "--repeat", type=_count(1), default=31, help="samples per median (default 31)"
    )
    parser.add_argument(
        "--cases", type=_count(1), default=5, help="whole cases per layer (default 5)"
    )
    parser.add_argument(
        "--concurrent",
        type=_count(0),
        default=CONCURRENT_CASES,
        help=f"cases at once (default {CONCURRENT_CASES}; 0 skips them)",
    )
    args = parser.parse_args(argv)
    byte_compile(REPO_ROOT)
    print("==> this checkout byte-compiled first, as the image ships it (bench/bytecode.py)")
    print_startup(args.repeat)
    print_filter_cost(args.repeat * 4)
    print_tool_use()
    print_supplier_load()
    print_cases(args.cases)
    ok = print_batch(args.concurrent) if args.concurrent else True
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
