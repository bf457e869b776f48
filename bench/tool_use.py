"""`python -m bench.tool_use`, and a part of `make bench`: what the heaviest tool processes use
of each launcher limit (policies/tool-limits.json) beside it: peak address space, CPU time,
descriptors at exit.

Each is the staged worker run plainly with no limit, on the system interpreter as every tool
process is, its figures read by the process itself as it exits (/proc/self/status VmPeak,
getrusage, /proc/self/fd), after its action: reading the case, a credential digest (PBKDF2, the
longest in CPU), and the imports of a proxied role's HTTP client (the largest in address space).
No tool process starts another or writes more than a few KiB, so those two limits have no
figure here.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Final

from app.core.repo import SAMPLE_CASE
from app.core.run_tree import INTERPRETER, WORKER_ENTRY, stage_worker
from app.core.tool_limits import tool_limits

# Run before the worker's own entry: at its os._exit, the process prints what it used.
MEASURE: Final = """
import os, resource
def _measured_exit(code, _exit=os._exit):
    peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmPeak")]
    use = resource.getrusage(resource.RUSAGE_SELF)
    fds = len(os.listdir("/proc/self/fd")) - 1  # less the listing's own
    print("USED", peak[0], use.ru_utime + use.ru_stime, fds, flush=True)
    _exit(code)
os._exit = _measured_exit
"""
# A proxied role's imports (app/tools/worker/proxy.py), then the worker's own exit.
PROXIED: Final = "import analyst_worker.proxy, urllib.request, http.client; import os; os._exit(0)"


def _used(code: Path, program: str, *argv: str, env: dict[str, str]) -> tuple[float, float, int]:
    done = subprocess.run(
        [INTERPRETER, "-S", "-c", MEASURE + program, *argv],
        cwd=code,
        env={"PYTHONPATH": str(code), "PATH": "/usr/bin", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("USED ")]
    _, peak_kib, cpu_s, fds = line.split()
    return int(peak_kib) / 1024, float(cpu_s), int(fds)


def print_tool_use() -> None:
    """The figures, one row per process, and the limits beneath them."""
    limits = tool_limits()
    with tempfile.TemporaryDirectory(prefix="analyst-tool-use-") as base:
        code = Path(base) / "code"
        stage_worker(code)
        digest = {"SUPPLIER_API_KEY": "k" * 32, "ANALYST_DIGEST_KEY": os.urandom(16).hex()}
        rows = {
            "read-case": _used(
                code, WORKER_ENTRY, "read-case", str(SAMPLE_CASE / "case.json"), env={}
            ),
            "credential-digest": _used(code, WORKER_ENTRY, "credential-digest", env=digest),
            "a proxied role's imports": _used(code, PROXIED, env={}),
        }
    print("==> what the heaviest tool processes use, beside the launcher's limits")
    print(f"  {'':26}{'address space':>14}  {'CPU time':>9}  {'descriptors':>11}")
    for name, (peak_mib, cpu_s, fds) in rows.items():
        print(f"  {name:<26}{peak_mib:>10.1f} MiB  {cpu_s:>7.3f} s  {fds:>11}")
    print(
        f"  {'limit':<26}{limits.address_space_bytes.value / 2**20:>10.0f} MiB  "
        f"{limits.cpu_seconds.value:>7} s  {limits.open_files.value:>11}"
    )


if __name__ == "__main__":
    print_tool_use()
