"""The worker's dispatch table: every action where its module says it is, and a tool process
that imports only the module of the action it runs."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
from pathlib import Path

import pytest

import app.tools.worker as worker_package
from app.core.run_tree import WORKER_COMMAND, WORKER_PACKAGE, stage_worker
from app.tools.loader import FILTER_OPTION
from app.tools.seccomp import nono_baseline_filter
from app.tools.worker.__main__ import ACTION_MODULES
from app.tools.worker.protocol import RESULT_PREFIX

# What a tool process's start must not pay for unless its action needs them: hashlib
# (OpenSSL), json (with re, enum and collections), runpy (importlib.util, contextlib) and
# typing, each some milliseconds of a start.
SLOW_MODULES = (
    "hashlib",
    "_hashlib",
    "json",
    "re",
    "enum",
    "collections",
    "runpy",
    "contextlib",
    "typing",
)

# Runs the worker's own start-up code as a tool process does, then prints which of its modules
# and which of the slow ones were imported: at its os._exit, or when it raises.
SHOW_IMPORTS = f"""
import os, sys

def show():
    print("IMPORTED", sorted(m for m in sys.modules if m.startswith("{WORKER_PACKAGE}.")))
    print("SLOW", sorted(m for m in sys.modules if m in {SLOW_MODULES!r}))
    print("LOADED", sorted(sys.modules), flush=True)

def exit_after_showing(code, _exit=os._exit):
    show()
    _exit(code)

os._exit = exit_after_showing
try:
    {WORKER_COMMAND[-1]}
except BaseException:
    show()
    raise
"""


def _show_imports(code: Path, *argv: str) -> tuple[list[str], subprocess.CompletedProcess[str]]:
    done = subprocess.run(
        [*WORKER_COMMAND[:-1], SHOW_IMPORTS, *argv],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(code)},
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.splitlines(), done


def _declared() -> dict[str, str]:
    """Each action as its own module's ACTIONS declares it."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(worker_package.__path__):
        module = importlib.import_module(f"{worker_package.__name__}.{info.name}")
        for action in getattr(module, "ACTIONS", {}):
            assert action not in found, f"{action} is declared twice"
            found[action] = info.name
    return found


def test_the_table_names_every_action_where_its_module_declares_it() -> None:
    assert _declared() == ACTION_MODULES


def test_a_tool_process_imports_its_actions_module_alone(tmp_path: Path) -> None:
    stage_worker(tmp_path / "code")
    case = tmp_path / "case.json"
    case.write_text('{"case_id": "rfp-001", "suppliers": [{"id": "northstar"}]}')
    lines, done = _show_imports(tmp_path / "code", "read-case", str(case))
    imported = [line for line in lines if line.startswith("IMPORTED ")]
    assert imported == [
        "IMPORTED " + str([f"{WORKER_PACKAGE}.{m}" for m in ("__main__", "business", "protocol")])
    ], done.stderr
    (result,) = [line for line in lines if line.startswith(RESULT_PREFIX)]
    assert json.loads(result.removeprefix(RESULT_PREFIX))["supplier_ids"] == ["northstar"]


def test_a_start_loads_none_of_the_slow_modules(tmp_path: Path) -> None:
    """Nothing of an env-names start needs them, the loader's filter included: it loads the
    program with ctypes alone, and no digest of it is taken in the tool process."""
    stage_worker(tmp_path / "code")
    program = tmp_path / "baseline.bpf"
    program.write_bytes(nono_baseline_filter().program)
    lines, done = _show_imports(tmp_path / "code", FILTER_OPTION, str(program), "env-names")
    assert "SLOW []" in lines, done.stderr
    (result,) = [line for line in lines if line.startswith(RESULT_PREFIX)]
    parsed = json.loads(result.removeprefix(RESULT_PREFIX))
    assert parsed["action"] == "env-names"


@pytest.mark.parametrize(
    ("argv", "unneeded"),
    [
        (("kernel-calls",), ("json", "socket")),
        (("peek-process", "pidfd_getfd=438"), ("json", "socket")),
        (("proxy-requests",), ("urllib.request", "urllib.error", "http.client")),
    ],
    ids=["kernel-calls", "peek-process", "proxy-requests"],
)
def test_an_action_loads_none_of_what_only_its_modules_other_actions_need(
    tmp_path: Path, argv: tuple[str, ...], unneeded: tuple[str, ...]
) -> None:
    """kernel-calls and peek-process (no call, no process) use neither the JSON nor the
    sockets attack-surface does; proxy-requests (here with no request at all, which it
    refuses) sends with sockets, not with supplier-request's urllib."""
    stage_worker(tmp_path / "code")
    lines, done = _show_imports(tmp_path / "code", *argv)
    (loaded,) = [line for line in lines if line.startswith("LOADED ")]
    assert f"'{WORKER_PACKAGE}.{ACTION_MODULES[argv[0]]}'" in loaded, done.stderr
    assert [module for module in unneeded if f"'{module}'" in loaded] == []


def test_every_action_is_dispatched(tmp_path: Path) -> None:
    """An unknown action is refused with the list of all; each listed one is in the table."""
    stage_worker(tmp_path / "code")
    done = subprocess.run(
        [*WORKER_COMMAND, "no-such-action"],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "code")},
        cwd="/",
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    listed = done.stderr.split("{", 1)[1].split("}", 1)[0].split(",")
    assert listed == sorted(ACTION_MODULES)
