"""Entry point: `python3 -S -c "<the loader's entry>; from analyst_worker.__main__ import run;
run()" [the loader's options] <action> [args...]` (app/core/run_tree.py's WORKER_COMMAND; or
`-m analyst_worker <action>`, by hand): one action, one result line.

A tool process runs one action, so it imports that action's module alone (see the NOTE in
protocol.py); ACTION_MODULES says where each action is, and the tests hold it to each module's
own ACTIONS.
"""

from __future__ import annotations

import gc
import os
import sys

# A tool process runs one action and exits: the collector would find no garbage worth its
# passes over what an action's imports build, so it never runs (2.2 million of the 58 million
# instructions a read-case start, which imports json and hashlib, takes with it on).
gc.disable()

from .protocol import emit  # noqa: E402

ACTION_MODULES: dict[str, str] = {
    "read-case": "business",
    "read-proposal": "business",
    "evaluate": "business",
    "write-draft": "business",
    "env-names": "environment",
    "open-read": "files",
    "open-write": "files",
    "write-file": "files",
    "access": "files",
    "interfaces": "network",
    "tcp-connect": "network",
    "socket-inet": "network",
    "attack-surface": "probes",
    "kernel-calls": "probes",
    "push-terminal-input": "probes",
    "peek-process": "probes",
    "supplier-request": "proxy",
    "proxy-requests": "proxy",
    "shaped-requests": "proxy",
    "credential-digest": "credentials",
    "proc-status": "system",
    "fill-scratch": "system",
    "hold": "system",
    "unshare-user": "system",
    "syscall": "system",
}


def main(argv: list[str]) -> int:
    # The launcher's loader (analyst_loader) has set this process's limits and removed its
    # options from the command line before this module was imported.
    if not argv or argv[0] not in ACTION_MODULES:
        names = ",".join(sorted(ACTION_MODULES))
        print(f"usage: analyst_worker {{{names}}} [args...]", file=sys.stderr)
        return 2
    action, args = argv[0], argv[1:]
    # __import__ rather than importlib: the worker needs nothing else of importlib's.
    name = f"{__package__}.{ACTION_MODULES[action]}"
    __import__(name)
    module = sys.modules[name]
    result = module.ACTIONS[action](args)
    emit(action, result)
    return 0


def run() -> None:
    """What a tool process runs (app/core/run_tree.py's WORKER_COMMAND)."""
    code = main(sys.argv[1:])
    # The result line is written and flushed, and every file closed: the interpreter's own
    # exit (every module torn down, a last collection) has nothing left to do (5.0 million of
    # the 29.6 million instructions an env-names start takes with it).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
