"""Whole local cases for `make bench`: one at a time, each measured from its process's start to
its exit, and many at once, each checked to share nothing with the others."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from app.core.repo import REPO_ROOT
from app.core.roles import Layer
from bench.cpu import CpuGroup


@dataclass(frozen=True)
class CaseFigures:
    """One case run alone: wall time from its start to its exit, the CPU of every process it
    started, and the run's own figures (bench/whole_case.py)."""

    wall_s: float
    cpu_s: float | None
    run: dict[str, Any]

    @property
    def phases(self) -> list[dict[str, Any]]:
        """The run's phase table, with what lies outside it made into rows of its own."""
        run, rows = self.run, list(self.run["timing"])
        inside = sum(row["wall_ms"] for row in rows)
        before = (run["run_began"] - run["spawned"]) * 1000
        after = (run["run_ended"] - run["run_began"]) * 1000 - inside
        leaving = (run["exited"] - run["run_ended"]) * 1000
        return [
            _outside("interpreter and imports", before),
            *rows,
            _outside("services stopped", after),
            _outside("interpreter exit", leaving),
        ]

    def phase(self, name: str) -> dict[str, Any]:
        """The run's own row of one phase."""
        rows: list[dict[str, Any]] = [row for row in self.run["timing"] if row["phase"] == name]
        (row,) = rows
        return row


def _outside(phase: str, wall_ms: float) -> dict[str, Any]:
    """A row measured only by its wall time (the run's own table does not hold it)."""
    return {"phase": phase, "wall_ms": wall_ms}


def one_case(layer: Layer, root: Path = REPO_ROOT) -> CaseFigures:
    """The sample case in a process of its own, in a cgroup of its own: this checkout's, or
    the one at ``root`` (bench/against.py)."""
    with CpuGroup(f"{layer}-{time.monotonic_ns()}") as cpu:
        spawned = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "bench.whole_case", layer],
            cwd=root,
            check=False,
            capture_output=True,
            text=True,
            preexec_fn=cpu.join,
        )
        exited = time.monotonic()
        if done.returncode != 0:
            raise RuntimeError(f"the {layer} case failed: {done.stderr.strip()[-2000:]}")
        left = cpu.left()
        if left:
            raise RuntimeError(f"the {layer} case left processes behind: {left}")
        seconds = cpu.seconds()
    run = json.loads(done.stdout.strip().splitlines()[-1])
    run |= {"spawned": spawned, "exited": exited, "cpu_unavailable": cpu.unavailable}
    return CaseFigures(exited - spawned, seconds, run)


def median_phases(cases: list[CaseFigures]) -> list[dict[str, Any]]:
    """Each phase's median over the cases, column by column, in the first case's order."""
    tables = [{row["phase"]: row for row in case.phases} for case in cases]
    rows = []
    for phase in tables[0]:
        row: dict[str, Any] = {"phase": phase}
        for column in tables[0][phase]:
            if column != "phase":
                row[column] = statistics.median(table[phase][column] for table in tables)
        rows.append(row)
    return rows


@dataclass(frozen=True)
class BatchFigures:
    """Many cases at once: how long they took, and what each one used."""

    cases: int
    wall_s: float
    cpu_s: float | None
    cpu_unavailable: str
    failures: list[str]
    shared: list[str]  # anything two runs had in common: none is the claim
    runs: list[dict[str, Any]]  # each run's "endpoints" evidence, and its layer

    @property
    def per_minute(self) -> float:
        return self.cases / self.wall_s * 60


def concurrent_cases(count: int) -> BatchFigures:
    """``count`` runs of the sample case started at once, alternating the layers, through the
    command line and its defaults: one --workdir and one runs/ folder for them all."""
    base = Path(tempfile.mkdtemp(prefix="analyst-bench-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    layers = [list(Layer)[index % len(Layer)] for index in range(count)]
    try:
        with CpuGroup(f"batch-{count}") as cpu:
            started = time.monotonic()
            processes = [
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "app.controller",
                        "run",
                        "--layer",
                        layer,
                        "--workdir",
                        str(base / "work"),
                    ],
                    cwd=base,  # each report goes to runs/<layer>/<run id> here
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    preexec_fn=cpu.join,
                )
                for layer in layers
            ]
            outputs = [process.communicate() for process in processes]
            wall = time.monotonic() - started
            left = cpu.left()
            seconds = cpu.seconds()
        failures = [
            f"run {index} ({layer}) exited {process.returncode}: "
            f"{(stderr.strip().splitlines() or ['no output'])[-1]}"
            for index, (layer, process, (_, stderr)) in enumerate(
                zip(layers, processes, outputs, strict=True)
            )
            if process.returncode != 0
        ]
        if left:
            failures.append(f"processes left behind: {left}")
        runs = [
            _endpoints(base, layer, stdout)
            for layer, process, (stdout, _) in zip(layers, processes, outputs, strict=True)
            if process.returncode == 0
        ]
        return BatchFigures(count, wall, seconds, cpu.unavailable, failures, _shared(runs), runs)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _endpoints(base: Path, layer: Layer, stdout: str) -> dict[str, Any]:
    """What one run used, from its own evidence.json."""
    (run_id,) = [
        line.split("=", 1)[1]
        for line in stdout.splitlines()
        if line.startswith("ANALYST_COMPLETE=")
    ]
    report = base / "runs" / layer / run_id
    evidence = json.loads((report / "evidence.json").read_text(encoding="utf-8"))
    proxies = evidence["policy"].get("proxies", {})
    return {
        "layer": str(layer),
        "run_id": run_id,
        "report": str(report),
        **evidence["endpoints"],
        "proxies": sorted(proxies.values()),
        "checks_passed": sum(1 for line in stdout.splitlines() if line.startswith("PASS ")),
    }


def _shared(runs: list[dict[str, Any]]) -> list[str]:
    """Every value two runs had in common, among the ones no two runs may share."""
    seen: Counter[str] = Counter()
    for run in runs:
        urls = [f"http://{run['aws']}", run["supplier"], *run["proxies"]]
        ports = {urlsplit(url).port for url in urls}
        values = {
            f"run id {run['run_id']}",
            f"run tree {run['run_tree']}",
            f"report folder {run['report']}",
            f"bucket {run['bucket']} at {run['aws']}",
            *(f"port {port}" for port in ports),
        }
        seen.update(values)
    return sorted(value for value, times in seen.items() if times > 1)
