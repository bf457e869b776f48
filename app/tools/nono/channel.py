"""How a nono tool process's stdout and stderr become its channel back (app/tools/channel.py),
which nono-py would otherwise read for the controller, to the end and without a bound.

nono-py's sandboxed_exec (0.16, src/sandboxed_exec.rs) puts pipes of its own on the child's
stdout and stderr, reads each into memory until end of file with no limit on size or time, and
closes every descriptor above 2 before exec; there is no way to hand it others. Standard input
it leaves as its caller has it. So the launch process that makes the call (launch_process.py)
holds the call's channel as its standard input, and the launcher's command makes the tool's
stdout and stderr that channel (CHANNEL_PRELUDE), before the worker's package is imported,
before any code the tool could choose runs: nono-py's pipes, closed there, reach end of file at
once and hold nothing.
"""

from __future__ import annotations

from typing import Final

from app.core.run_tree import INTERPRETER, WORKER_ENTRY

# Run by the tool's interpreter first of all (see the module's docstring): its stdout and
# stderr become the channel it was given as its standard input.
CHANNEL_PRELUDE: Final = "import os; os.dup2(0, 1); os.dup2(0, 2); "
# How a nono tool process starts the worker: run_tree's WORKER_COMMAND, the prelude first.
NONO_WORKER_COMMAND: Final = (INTERPRETER, "-S", "-c", CHANNEL_PRELUDE + WORKER_ENTRY)
