"""Runs one whole local case and prints its peak memory figures as one JSON line."""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import sys
import tempfile
from pathlib import Path

from app.controller.context import LayerSetup
from app.controller.run import RunOptions, default_layer, run_case
from app.tools.layer import ConfinementLayer, ToolOutcome

SAMPLE = Path(__file__).resolve().parents[1] / "cases" / "rfp-001"


def main(layer_name: str) -> None:
    peaks: list[int] = []
    factory = default_layer(layer_name)  # type: ignore[arg-type]

    def measured(setup: LayerSetup) -> ConfinementLayer:
        layer = factory(setup)
        original = layer.run

        def run(role, action, args) -> ToolOutcome:  # type: ignore[no-untyped-def]
            outcome = original(role, action, args)
            if outcome.result.get("peak_rss_kib") is not None:
                peaks.append(int(outcome.result["peak_rss_kib"]))
            return outcome

        layer.run = run  # type: ignore[method-assign]
        return layer

    base = Path(tempfile.mkdtemp(prefix="analyst-bench-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    try:
        options = RunOptions(
            layer=layer_name,  # type: ignore[arg-type]
            case_dir=SAMPLE,
            out_dir=base / "out",
            work_base=base / "work",
        )
        run_case(options, make_layer=measured, stream=io.StringIO())
    finally:
        shutil.rmtree(base, ignore_errors=True)
    controller = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps({"controller_peak_kib": controller, "tool_peak_kib": max(peaks, default=None)})
    )


if __name__ == "__main__":
    main(sys.argv[1])
