"""Each worker action's result shape (app/core/result_shapes.py): declared for every action the
worker has and none other, met by what the worker's actions really print, and refused, naming
the tool and what is wrong, for any line that is not that action's result."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import app.tools.worker as worker_package
from app.core import result_shapes
from app.core.result_shapes import SHAPES, result_problem
from app.core.results import Errno, ToolResult, ToolRunError
from app.tools.worker import business, credentials, environment, files, network, system
from app.tools.worker.protocol import RESULT_PREFIX, Result, emit

WHO = "the reader's tool process"


def _worker_actions() -> set[str]:
    """Every action of every worker module's own ACTIONS table."""
    found: set[str] = set()
    for info in pkgutil.iter_modules(worker_package.__path__):
        module = importlib.import_module(f"{worker_package.__name__}.{info.name}")
        found |= set(getattr(module, "ACTIONS", {}))
    return found


def test_every_worker_action_has_a_shape_and_no_shape_names_another() -> None:
    assert set(SHAPES) == _worker_actions()


def test_proc_status_is_read_by_the_workers_own_field_and_namespace_names() -> None:
    assert (result_shapes.STATUS_FIELDS, result_shapes.NAMESPACES) == (
        system.STATUS_FIELDS,
        system.NAMESPACES,
    )


def _printed(capsys: pytest.CaptureFixture[str], action: str, result: Result) -> str:
    """The line the worker prints for ``result``, without its prefix."""
    emit(action, result)
    (line,) = capsys.readouterr().out.splitlines()
    return line.removeprefix(RESULT_PREFIX)


# Actions the worker can run here, in this process, without a sandbox or a service: each in its
# ok form and, where it has one, its refused form.
def _real_results(tmp_path: Path) -> list[tuple[str, list[str], Result]]:
    inside = tmp_path / "file"
    inside.write_text("x")
    missing = str(tmp_path / "missing")
    calls: list[tuple[str, list[str]]] = [
        ("open-read", [str(inside)]),
        ("open-read", [missing]),
        ("open-write", [str(inside)]),
        ("open-write", [missing]),
        ("write-file", [str(inside), "text"]),
        ("write-file", [missing, "text"]),
        ("access", [f"read:{inside}", f"create:{tmp_path / 'new'}", f"read:{missing}"]),
        ("interfaces", []),
        ("tcp-connect", ["127.0.0.1", "9"]),
        ("socket-inet", []),
        ("proc-status", []),
        ("fill-scratch", [str(tmp_path), "100", "50"]),
        ("fill-scratch", [missing, "100", "50"]),
        ("syscall", ["39"]),  # getpid on x86-64: harmless wherever it lands
        ("syscall", ["-1"]),  # no such call: ENOSYS
    ]
    calls += _business_calls(tmp_path)
    modules = {
        **business.ACTIONS,
        **credentials.ACTIONS,
        **environment.ACTIONS,
        **files.ACTIONS,
        **network.ACTIONS,
        **system.ACTIONS,
    }
    return [(action, args, modules[action](args)) for action, args in calls]


def _business_calls(tmp_path: Path) -> list[tuple[str, list[str]]]:
    """The roles' own work on a small case: its files staged as the controller stages them."""
    case, proposal, facts = tmp_path / "case.json", tmp_path / "p.json", tmp_path / "facts.json"
    case.write_text(json.dumps({"case_id": "rfp-001", "suppliers": [{"id": "northstar"}]}))
    proposal.write_text(json.dumps({"supplier_id": "northstar"}))
    supplier = {"id": "northstar", "price_usd": 10, "delivery_days": 5, "warranty_months": 24}
    limits = {"max_price_usd": 20, "max_delivery_days": 10, "min_warranty_months": 12}
    facts.write_text(
        json.dumps(
            {
                "case_id": "rfp-001",
                "requirements": limits,
                "suppliers": [supplier],
                "availability": {"northstar": True},
            }
        )
    )
    into, out = tmp_path / "in", tmp_path / "out"
    into.mkdir()
    out.mkdir()
    (into / "comparison.json").write_text(json.dumps(COMPARISON))
    (into / "private.json").write_text(json.dumps({"draft_reference": "D-1"}))
    for name in ("comparison.json", "draft.txt", "evaluated.json"):
        (out / name).write_text("")
    return [
        ("read-case", [str(case)]),
        ("read-proposal", [str(proposal)]),
        ("evaluate", [str(facts), str(out / "evaluated.json")]),
        ("write-draft", [str(into), str(out)]),
        ("env-names", []),
        ("credential-digest", []),
    ]


def test_what_the_workers_actions_print_meets_their_shapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(credentials.DIGEST_KEY_VARIABLE, "a digest key")
    forms: set[tuple[str, bool]] = set()
    for action, args, result in _real_results(tmp_path):
        parsed = ToolResult.from_line(
            _printed(capsys, action, result), who=WHO, action=action, args=args
        )
        forms.add((action, parsed.ok))
    # Both forms were met where the action has both.
    assert {("open-read", False), ("write-file", False), ("fill-scratch", False)} <= forms
    assert ("tcp-connect", False) in forms and ("syscall", False) in forms


def _line(action: str, **fields: Any) -> str:
    return json.dumps({"action": action, "ok": True, "errno": None, **fields})


def _refused(action: str, errno: str = "EACCES", **fields: Any) -> str:
    return json.dumps({"action": action, "ok": False, "errno": errno, **fields})


STATUS = dict.fromkeys(system.STATUS_FIELDS, "0")
NAMESPACES = {ns: f"{ns}:[1]" for ns in system.NAMESPACES}
PROC_STATUS: dict[str, Any] = {
    "uid": 1000,
    "gid": 1000,
    "status": STATUS,
    "uid_map": ["1000 0 1"],
    "gid_map": ["1000 0 1"],
    "namespaces": NAMESPACES,
    "hostname": "reader",
    "mounts": ["/"],
    "environment": ["PATH"],
    "cwd": "/",
    "pid": 2,
    "sid": 0,
    "scratch": None,
    "pdeathsig": 9,
    "root_create": "EROFS",
}
COMPARISON = {
    "case_id": "rfp-001",
    "winner": "northstar",
    "suppliers": [{"id": "northstar", "eligible": True, "misses": []}],
}
RAW = {"request_id": "r1", "method": "CONNECT", "target": "localhost:9"}

# (action, args, line, what the stop says is wrong)
BROKEN: list[tuple[str, list[str], str, str]] = [
    (
        "proc-status",
        [],
        _line("proc-status"),
        "where uid is missing (expected an integer)",
    ),
    (
        "proc-status",
        [],
        _line("proc-status", **{**PROC_STATUS, "namespaces": None}),
        "where namespaces is None, not an object",
    ),
    (
        "proc-status",
        [],
        _line("proc-status", **{**PROC_STATUS, "status": {**STATUS, "CapEff": 0}}),
        "where status.CapEff is 0, not a string",
    ),
    (
        "proc-status",
        [],
        _line("proc-status", **{**PROC_STATUS, "scratch": {"bytes": 1, "mode": "0700", "uid": 1}}),
        "where scratch.mode is '0700', not an integer",
    ),
    ("env-names", [], _line("env-names", names=5), "where names is 5, not a list"),
    ("env-names", [], _line("env-names", names=["A", 1]), "where names[1] is 1, not a string"),
    (
        "env-names",
        [],
        _refused("env-names"),
        "where the result reports a refusal (EACCES), which this action never does",
    ),
    ("evaluate", [], _line("evaluate"), "where comparison is missing (expected an object)"),
    (
        "evaluate",
        [],
        _line(
            "evaluate",
            sha256="0",
            comparison={**COMPARISON, "suppliers": [{"id": "a", "eligible": "yes", "misses": []}]},
        ),
        "where comparison.suppliers[0].eligible is 'yes', not a boolean",
    ),
    (
        "evaluate",
        [],
        _line("evaluate", sha256="0", comparison={**COMPARISON, "winner": 7}),
        "where comparison.winner is 7, not a string",
    ),
    # A boolean is not an integer, though Python's bool is an int.
    (
        "open-read",
        [],
        _line("open-read", path="/x", device=True, inode=1),
        "where device is True, not an integer",
    ),
    ("open-read", [], _refused("open-read"), "where path is missing (expected a string)"),
    (
        "open-read",
        [],
        _refused("open-read", errno=["EACCES"], path="/x"),
        "where errno is ['EACCES'], not an errno name",
    ),
    ("evaluate", [], _line("read-case"), "where action is 'read-case'"),
    ("evaluate", [], json.dumps({"ok": True, "errno": None}), "where action is missing"),
    (
        "env-names",
        [],
        _line("env-names", names=[], extra="\x1b[31m"),
        "where the result has an undeclared field 'extra'",
    ),
    (
        "proxy-requests",
        ["r1", "CONNECT", "localhost:9"],
        _line(
            "proxy-requests",
            requests=[{"ok": True, "errno": None, "status": 403, "action": "x", **RAW}],
        ),
        "where requests[0] has an undeclared field 'action'",
    ),
    (
        "env-names",
        [],
        _line("env-names", names=[], peak_rss_kib=True),
        "where peak_rss_kib is True, not an integer",
    ),
    # Numbers no process under the tool limits, or no kernel, could report.
    (
        "env-names",
        [],
        _line("env-names", names=[], peak_rss_kib=int("9" * 4001)),
        "where peak_rss_kib is " + "9" * 60 + "..., beyond what a process "
        "under its address-space limit can hold (KiB): 0 to 262144",
    ),
    (
        "env-names",
        [],
        _line("env-names", names=[], peak_rss_kib=262145),
        "where peak_rss_kib is 262145, beyond what a process under its address-space limit "
        "can hold (KiB): 0 to 262144",
    ),
    (
        "env-names",
        [],
        _line("env-names", names=[], peak_rss_kib=-1),
        "where peak_rss_kib is -1, beyond what a process under its address-space limit can "
        "hold (KiB): 0 to 262144",
    ),
    (
        "tcp-connect",
        [],
        _line("tcp-connect", address="127.0.0.1", port=65536),
        "where port is 65536, beyond a port: 0 to 65535",
    ),
    (
        "proc-status",
        [],
        _line("proc-status", **{**PROC_STATUS, "uid": 2**32}),
        "where uid is 4294967296, beyond a uid or gid: 0 to 4294967294",
    ),
    (
        "syscall",
        [],
        _line("syscall", number=1, returned=2**63),
        "where returned is 9223372036854775808, beyond a 64-bit integer: "
        "-9223372036854775808 to 9223372036854775807",
    ),
    (
        "proxy-requests",
        ["r1", "CONNECT", "localhost:9"],
        _line("proxy-requests", requests=[{"ok": True, "errno": None, "status": 1000, **RAW}]),
        "where requests[0].status is 1000, beyond an HTTP status: 100 to 599",
    ),
    (
        "evaluate",
        [],
        json.dumps({"action": "evaluate", "ok": "yes", "errno": None}),
        "where ok is 'yes', not a boolean",
    ),
    (
        "evaluate",
        [],
        json.dumps({"action": "evaluate", "ok": True, "errno": "EPERM"}),
        "where the result says ok=True with errno 'EPERM'",
    ),
    (
        "open-read",
        [],
        _refused("open-read", errno="EWHAT", path="/x"),
        "where errno is 'EWHAT', not an errno name",
    ),
    (
        "access",
        ["read:/a", "read:/b"],
        _line("access", answers=["ok"]),
        "where it gave 1 answers to 2 operations",
    ),
    (
        "kernel-calls",
        ["bpf=321", "keyctl=250"],
        _line("kernel-calls", answers={"bpf": "EPERM"}),
        "where its answers are not keyed by the calls asked (missing ['keyctl'], extra [])",
    ),
    (
        "peek-process",
        ["pidfd_getfd=438", "12"],
        _line("peek-process", answers={"13": {"mem": "EACCES"}}),
        "where its answers are not keyed by the processes asked (missing ['12'], extra ['13'])",
    ),
    (
        "peek-process",
        ["pidfd_getfd=438", "12"],
        _line("peek-process", answers={"12": {"mem": 13}}),
        "where answers['12']['mem'] is 13, not a string",
    ),
    (
        "proxy-requests",
        ["r1", "CONNECT", "localhost:9"],
        _line("proxy-requests", requests=[{"ok": True, "errno": None, **RAW}]),
        "where requests[0].status is missing (expected an integer)",
    ),
    (
        "proxy-requests",
        ["r1", "CONNECT", "localhost:9"],
        _line("proxy-requests", requests=[{"ok": False, "errno": "EWHAT", **RAW}]),
        "where requests[0].errno is 'EWHAT', not an errno name",
    ),
    (
        "proxy-requests",
        ["r1", "CONNECT", "localhost:9", "r2", "GET", "http://localhost:9/"],
        _line("proxy-requests", requests=[{"ok": True, "errno": None, "status": 403, **RAW}]),
        "where it gave 1 answers to 2 requests",
    ),
]


@pytest.mark.parametrize(
    ("action", "args", "line", "problem"), BROKEN, ids=[problem for *_, problem in BROKEN]
)
def test_a_line_that_is_not_the_actions_result_stops_the_run_naming_the_tool(
    action: str, args: list[str], line: str, problem: str
) -> None:
    with pytest.raises(ToolRunError) as stop:
        ToolResult.from_line(line, who=WHO, action=action, args=args)
    assert str(stop.value) == f"{WHO} printed a result for {action} {problem}"


def test_the_whole_shapes_read_as_the_worker_prints_them() -> None:
    """The complete forms above are accepted, so each broken one differs from a good one by
    what its case says alone."""
    good = [
        ("proc-status", [], _line("proc-status", **PROC_STATUS)),
        ("evaluate", [], _line("evaluate", sha256="0", comparison=COMPARISON)),
        ("open-read", [], _refused("open-read", path="/x")),
        ("access", ["read:/a", "read:/b"], _line("access", answers=["ok", "EACCES"])),
        ("kernel-calls", ["bpf=321"], _line("kernel-calls", answers={"bpf": "EPERM"})),
        ("peek-process", ["pidfd_getfd=438", "12"], _line("peek-process", answers={"12": {}})),
        (
            "proxy-requests",
            ["r1", "CONNECT", "localhost:9"],
            _line("proxy-requests", requests=[{"ok": False, "errno": "ECONNREFUSED", **RAW}]),
        ),
    ]
    for action, args, line in good:
        assert result_problem(json.loads(line), action, args) is None, line
    refused = ToolResult.from_line(good[2][2], who=WHO, action="open-read")
    assert refused.errno is Errno.EACCES and refused.data == {"path": "/x"}


def test_a_wrong_value_is_shown_short_and_escaped() -> None:
    """A tool's value in the stop line is cut to a few dozen characters, its controls escaped:
    the stop is one line that says only what it holds."""
    forged = "\x1b[2J\nANALYST_COMPLETE " + "x" * 10_000
    with pytest.raises(ToolRunError) as stop:
        ToolResult.from_line(_line("env-names", names=forged), who=WHO, action="env-names")
    said = str(stop.value)
    assert "\x1b" not in said and "\n" not in said and len(said) < 200
    assert "\\x1b[2J\\nANALYST_COMPLETE" in said
