"""`python -m bench.nono_wait`: how long nono-py's sandboxed_exec takes to return, with a time
limit and without one, for a child that exits at once and for an interpreter start like a tool
process's (docs/notes/nono-py-timeout-polling.md).

With ``timeout_secs`` set, sandboxed_exec waits for its child by polling waitpid and sleeping
10 ms between tries; without it, one blocking waitpid returns as the child exits. The difference is
what every time-limited call pays. Needs only nono-py and a kernel with Landlock.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Final

import nono_py

COMMANDS: Final = {
    "/usr/bin/true": ["/usr/bin/true"],
    "python3 -S -c pass": ["/usr/bin/python3", "-S", "-c", "pass"],
}


def _capabilities() -> nono_py.CapabilitySet:
    caps = nono_py.CapabilitySet()
    caps.allow_path("/usr", nono_py.AccessMode.READ)
    caps.block_network()
    return caps


def _once_ms(command: list[str], timeout_secs: float | None) -> float:
    started = time.perf_counter()
    result = nono_py.sandboxed_exec(_capabilities(), command, cwd="/", timeout_secs=timeout_secs)
    elapsed = (time.perf_counter() - started) * 1000
    if result.exit_code != 0:
        raise RuntimeError(f"{command} exited {result.exit_code}: {result.stderr!r}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.nono_wait", description=__doc__)
    parser.add_argument("--repeat", type=int, default=60, help="calls of each kind (default 60)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat takes a whole number of at least 1")
    print(f"sandboxed_exec, median of {args.repeat} calls each (nono-py {nono_py.__version__})")
    for name, command in COMMANDS.items():
        _once_ms(command, None), _once_ms(command, 60.0)  # warm caches: the steady state
        without, with_limit = [], []
        for _ in range(args.repeat):  # in turn, so that a drift in speed moves both alike
            without.append(_once_ms(command, None))
            with_limit.append(_once_ms(command, 60.0))
        plain, limited = statistics.median(without), statistics.median(with_limit)
        print(f"  {name}")
        print(f"    timeout_secs=None  {plain:6.2f} ms")
        print(f"    timeout_secs=60    {limited:6.2f} ms   {limited - plain:+.2f} ms a call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
