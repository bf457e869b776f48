"""A warm interpreter for the mock engine: it holds the Pulumi SDK and providers imported and
forks one child per run of the program, so a run costs the program, not the imports.

    python -m tests.support.engine_server

reads one request a line on stdin, ``{"argv": [...], "stdout": path, "stderr": path}``, and for
each forks a child that runs ``tests.support.engine.main(argv)`` with its standard output and
error on those files, then answers ``{"returncode": n}`` on a line of stdout. Each child starts
from this process's memory, in which no program has run: Pulumi's runtime state (config, mocks,
the root resource) is only ever set in a child, which exits after its one run.

What it holds imported is what its first child imported, in the order the child imported it
(an extension module imported before its package leaves asyncio's tasks unusable), less the
project's own packages (infra/, app/, policies/, tests/), so the program is always imported
afresh, as a new interpreter would. A fork is only sound with one thread: should an import
ever start one, each run goes to a new interpreter (``python -m tests.support.engine``).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import threading
import traceback
from typing import Any

# The project's own packages: imported afresh by every run, never held here.
OWN_PACKAGES = frozenset({"infra", "app", "policies", "tests", "__main__", "__mp_main__"})


def _single_threaded() -> bool:
    return threading.active_count() == 1 and len(os.listdir("/proc/self/task")) == 1


def _child(request: dict[str, Any], report: int | None) -> int:
    """In the forked child: the run, with its streams on the request's files."""
    from tests.support import engine

    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    try:
        code = engine.main(list(request["argv"]))
    except SystemExit as stopped:
        code = stopped.code if isinstance(stopped.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    if report is not None:
        with os.fdopen(report, "w", encoding="utf-8") as modules:
            modules.write("\n".join(sys.modules))
    return code


def _forked(request: dict[str, Any], learn: bool) -> tuple[int, list[str]]:
    """One run in a forked child; with ``learn``, the names of the modules it imported."""
    read_end, write_end = os.pipe() if learn else (None, None)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if read_end is not None:
                os.close(read_end)
            code = _child(request, write_end)
        finally:
            os._exit(code)
    names: list[str] = []
    if read_end is not None and write_end is not None:
        os.close(write_end)
        with os.fdopen(read_end, encoding="utf-8") as modules:
            names = modules.read().split()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), names


def _fresh(request: dict[str, Any]) -> int:
    """One run in a new interpreter, as ``stack_run`` made every run before this server."""
    with open(request["stdout"], "w") as out, open(request["stderr"], "w") as err:
        command = [sys.executable, "-m", "tests.support.engine", *request["argv"]]
        return subprocess.run(command, stdout=out, stderr=err, check=False).returncode


def _hold(names: list[str]) -> None:
    """Imports the third-party modules a run used, in its order, so the next children find them
    loaded."""
    for name in names:
        if name.split(".")[0] in OWN_PACKAGES:
            continue
        try:
            parent = name.rpartition(".")[0]
            if parent:
                # NOTE: pulumi_kubernetes makes its subpackages lazy modules, whose __init__
                # runs only when an attribute is read. Importing a submodule before that binds
                # the submodule over the name the __init__ binds to a class of the same name
                # (apiextensions.CustomResource). Reading any name but the introspection ones
                # (__path__, __spec__, ...) runs the __init__ first, as the program's own
                # attribute access does.
                hasattr(importlib.import_module(parent), "_held_warm")
            if name not in sys.modules:
                importlib.import_module(name)
        except Exception:
            continue  # a warm-up: a module that cannot be imported here is the child's to import


def serve() -> None:
    learned = False
    for line in sys.stdin:
        request = json.loads(line)
        if _single_threaded():
            code, names = _forked(request, learn=not learned)
            if not learned:
                _hold(names)
                learned = True
        else:
            code = _fresh(request)
        sys.stdout.write(json.dumps({"returncode": code}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
