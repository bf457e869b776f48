"""A tool process's start-up under each layer against the same worker started plainly at the
same uid, and the nono proxy's cost per allowed request, all in one prepared run."""

from __future__ import annotations

import io
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack, closing
from pathlib import Path

from app.controller.prepared_run import prepared_run
from app.controller.run_plan import RunOptions, plan_run
from app.core.repo import SAMPLE_CASE
from app.core.roles import Layer
from app.core.run_tree import ToolIdentity
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.nono.launcher import NonoLayer
from app.tools.unconfined import run_unconfined

# The action every start-up is measured with: it lists the process's variable names.
ACTION = "env-names"


def _median_ms(action: Callable[[], object], repeat: int) -> float:
    return _interleaved_medians_ms({"one": action}, repeat)["one"]


def _interleaved_medians_ms(
    actions: dict[str, Callable[[], object]], repeat: int
) -> dict[str, float]:
    """Each action's median in ms, the actions taken in turn within each round, so that a
    machine that slows down or speeds up during the run moves every figure alike."""
    for action in actions.values():
        action()  # warm caches once; the figure is the steady state
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(repeat):
        for name, action in actions.items():
            start = time.perf_counter()
            action()
            samples[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def startup_and_proxy(repeat: int) -> dict[str, float]:
    """Medians in ms: plain, bubblewrap and nono start-ups (one worker action each, the
    evaluator's policy), then a supplier request made directly and through a role's proxy."""
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
            figures = _interleaved_medians_ms(
                {
                    # The same worker and action with no confinement at all, at the same uid.
                    "plain_ms": lambda: run_unconfined(
                        run.paths, tool, ACTION, (), counts=run.tool_counts, decoys=None
                    ),
                    "bubblewrap_ms": lambda: bubblewrap.run_tool("evaluator", ACTION),
                    "nono_ms": lambda: nono.run_tool("evaluator", ACTION),
                },
                repeat,
            )
            path = "/cases/rfp-001/suppliers"
            nono.run_tool("reader", ACTION)  # starts the reader's own proxy
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
