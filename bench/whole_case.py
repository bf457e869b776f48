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

from app.controller.run import RunOptions, run_case
from app.core.repo import SAMPLE_CASE
from app.core.roles import Layer


def main(layer: Layer) -> None:
    base = Path(tempfile.mkdtemp(prefix="analyst-bench-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    try:
        options = RunOptions(
            layer=layer, case_dir=SAMPLE_CASE, out_dir=base / "out", work_base=base / "work"
        )
        outcome = run_case(options, stream=io.StringIO())
        evidence = json.loads((outcome.out_dir / "evidence.json").read_text(encoding="utf-8"))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    controller = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tool_peak = evidence["policy"]["largest_tool_peak_kib"]
    print(json.dumps({"controller_peak_kib": controller, "tool_peak_kib": tool_peak}))


if __name__ == "__main__":
    main(Layer(sys.argv[1]))
