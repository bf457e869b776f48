"""Runs one whole local case and prints, as one JSON line, its peak memory, its CPU and the
run's own phase table, with the instants the run began and ended on the system's monotonic
clock (which the parent process shares), so the parent can place the start-up around it."""

from __future__ import annotations

import time

# Before any import of the app: what comes before this line is the interpreter's own start.
IMPORTS_BEGAN = time.monotonic()

import gc  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from app.controller.run import run_case  # noqa: E402
from app.controller.run_plan import RunOptions  # noqa: E402
from app.core.repo import SAMPLE_CASE  # noqa: E402
from app.core.roles import Layer  # noqa: E402


def _verify_cpu_ms(out: Path) -> float:
    """The CPU `verify` spends on the run's folder: its files read and hashed, the signature
    checked, the committed policies hashed (its modules imported first, as a run has them)."""
    from app.controller.verify_command import folder_files
    from app.core.repo import POLICIES_DIR
    from app.report.attestation import key_from_pem
    from app.report.verification import verify_run

    began = time.process_time()
    key = key_from_pem((out / "attestation.pub").read_bytes())
    verdict = verify_run(folder_files(out), [key], POLICIES_DIR)
    spent = (time.process_time() - began) * 1000
    assert verdict.holds, verdict.problems
    return round(spent, 2)


def main(layer: Layer) -> None:
    base = Path(tempfile.mkdtemp(prefix="analyst-bench-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    try:
        options = RunOptions(
            layer=layer, case_dir=SAMPLE_CASE, out_dir=base / "out", work_base=base / "work"
        )
        began = time.monotonic()
        outcome = run_case(options, stream=io.StringIO())
        ended = time.monotonic()
        evidence = json.loads((outcome.out_dir / "evidence.json").read_text(encoding="utf-8"))
        verify_cpu_ms = _verify_cpu_ms(outcome.out_dir)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    own = resource.getrusage(resource.RUSAGE_SELF)
    figures = {
        "run_id": outcome.run_id,
        "checks_passed": outcome.checks_passed,
        "imports_began": IMPORTS_BEGAN,
        "run_began": began,
        "run_ended": ended,
        "controller_peak_kib": own.ru_maxrss,
        "tool_peak_kib": evidence["policy"]["largest_tool_peak_kib"],
        # The whole table: evidence.json's ends where the last phase, which writes it, begins.
        "timing": outcome.timing,
        "templates_ready": outcome.templates_ready,
        "verify_cpu_ms": verify_cpu_ms,
    }
    print(json.dumps(figures), flush=True)
    # The controller's own exit does the same (app/controller/__main__.py).
    gc.freeze()


if __name__ == "__main__":
    main(Layer(sys.argv[1]))
