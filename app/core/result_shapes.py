"""The shape of each worker action's result, declared once, and the one check that holds a
result line to it.

A result line comes from a tool process, which may be any program: before a check reads a
field, the line is held to its action's shape here, so every field a check reads is there with
its JSON type (nested ones too), and a line that is not what the worker prints stops the run
naming what is wrong, rather than a KeyError or TypeError deep in a check.

``SHAPES`` holds, for every action of the worker (app/tools/worker/*.py's ACTIONS; a test holds
the two to each other), the fields of its ok form and, for an action that reports a refusal,
those of its refused form (None: the worker never reports one, so such a line is refused).
A shape names every field the worker prints, and a field it does not name is refused too:
nothing unchecked reaches a check, the evidence or a page. Every number is bounded too: by
what the kernel could report for it (a port, a uid, a pid, 64 bits) and, where the tool
limits decide it, by what a process under them could report (its peak memory under its
address-space limit, policies/tool-limits.json).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, cast

from app.core.json_shapes import (
    BOOLEAN,
    NO_FIELDS,
    STRING,
    Bounded,
    Fields,
    ListOf,
    MapOf,
    Nullable,
    Outcome,
    Shape,
    outcome_problem,
    shown_value,
    value_problem,
    within,
)
from app.core.tool_limits import tool_limits

# Any number a tool reports fits what the kernel reports in: 64 bits.
INTEGER: Final = within(-(2**63), 2**63 - 1, "a 64-bit integer")
_UNSIGNED_64: Final = within(0, 2**64 - 1, "an unsigned 64-bit integer")
_ID: Final = within(0, 2**32 - 2, "a uid or gid")
# PID_MAX_LIMIT on 64-bit Linux; a session id is 0 when its leader is outside the pid namespace.
_PID: Final = within(1, 4 * 1024 * 1024, "a pid")
_SID: Final = within(0, 4 * 1024 * 1024, "a session id")
_PORT: Final = within(0, 65535, "a port")
_HTTP_STATUS: Final = within(100, 599, "an HTTP status")
_MODE: Final = within(0, 0o7777, "a file mode's permission bits")
_SIGNAL: Final = within(0, 64, "a signal number")
# A process under the address-space limit can hold no more than it in memory, nor send more.
_PEAK_RSS_KIB: Final = Bounded(
    0,
    lambda: tool_limits().address_space_bytes.value // 1024,
    "what a process under its address-space limit can hold (KiB)",
)
_BYTES_HELD: Final = Bounded(
    0,
    lambda: tool_limits().address_space_bytes.value,
    "what a process under its address-space limit can hold",
)


@dataclass(frozen=True)
class ActionShape:
    """One action's result: its ok form, its refused form (None: never refused), and, for an
    action that answers each thing it was asked in turn, whether its ok form answers exactly
    what its arguments asked (given the fields, already of their shapes, and the arguments:
    None when it does, else what differs)."""

    ok: Fields
    refused: Fields | None = None
    answers_for: Callable[[Mapping[str, object], Sequence[str]], str | None] | None = None


def _keys_are(expected: Sequence[str], answers: object, what: str) -> str | None:
    """None when ``answers`` (an object, as its shape holds) is keyed by exactly ``expected``,
    else what differs."""
    given = set(cast(Mapping[str, object], answers))
    if given == set(expected):
        return None
    missing = sorted(set(expected) - given)
    extra = sorted(given - set(expected))
    return (
        f"its answers are not keyed by the {what} asked "
        f"(missing {missing}, extra {shown_value(extra)})"
    )


def _one_answer_each(data: Mapping[str, object], args: Sequence[str]) -> str | None:
    answers = cast(list[object], data["answers"])
    if len(answers) == len(args):
        return None
    return f"it gave {len(answers)} answers to {len(args)} operations"


def _calls_asked(data: Mapping[str, object], args: Sequence[str]) -> str | None:
    return _keys_are([arg.partition("=")[0] for arg in args], data["answers"], "calls")


def _processes_asked(data: Mapping[str, object], args: Sequence[str]) -> str | None:
    return _keys_are(list(args[1:]), data["answers"], "processes")


def _shaped_asked(data: Mapping[str, object], args: Sequence[str]) -> str | None:
    requests = cast(list[object], data["requests"])
    if len(requests) == len(args) // 4:
        return None
    return f"it gave {len(requests)} answers to {len(args) // 4} requests"


def _requests_asked(data: Mapping[str, object], args: Sequence[str]) -> str | None:
    requests = cast(list[object], data["requests"])
    if len(requests) == len(args) // 3:
        return None
    return f"it gave {len(requests)} answers to {len(args) // 3} requests"


# What proc-status reads of /proc/self/status and of /proc/self/ns, as the worker names them
# (STATUS_FIELDS and NAMESPACES of app/tools/worker/system.py): written again here, since core
# imports nothing of the tools; a unit test holds the two equal.
STATUS_FIELDS: Final = (
    "Uid",
    "Gid",
    "CapInh",
    "CapPrm",
    "CapEff",
    "CapBnd",
    "CapAmb",
    "NoNewPrivs",
    "Seccomp",
    "Seccomp_filters",
)
NAMESPACES: Final = ("user", "pid", "net", "ipc", "uts", "mnt", "cgroup")
_PATH: Final = Fields({"path": STRING})
_RAW_REQUEST: Final[dict[str, Shape]] = {"request_id": STRING, "method": STRING, "target": STRING}
_SHAPED_REQUEST: Final[dict[str, Shape]] = {**_RAW_REQUEST, "body_bytes": _BYTES_HELD}

SHAPES: Final[Mapping[str, ActionShape]] = {
    # business.py
    "read-case": ActionShape(
        Fields(
            {
                "path": STRING,
                "sha256": STRING,
                "case_id": STRING,
                "supplier_ids": ListOf(STRING),
            }
        )
    ),
    "read-proposal": ActionShape(Fields({"path": STRING, "sha256": STRING, "supplier_id": STRING})),
    "evaluate": ActionShape(
        Fields(
            {
                "comparison": Fields(
                    {
                        "case_id": STRING,
                        "winner": Nullable(STRING),
                        "suppliers": ListOf(
                            Fields({"id": STRING, "eligible": BOOLEAN, "misses": ListOf(STRING)})
                        ),
                    }
                ),
                "sha256": STRING,
            }
        )
    ),
    "write-draft": ActionShape(
        Fields({"comparison_sha256": STRING, "draft_sha256": STRING, "winner": Nullable(STRING)})
    ),
    # environment.py, credentials.py
    "env-names": ActionShape(Fields({"names": ListOf(STRING)})),
    "credential-digest": ActionShape(
        Fields({"present": BOOLEAN, "non_empty": BOOLEAN, "digest": STRING})
    ),
    # files.py
    "open-read": ActionShape(
        Fields({"path": STRING, "device": _UNSIGNED_64, "inode": _UNSIGNED_64}), refused=_PATH
    ),
    "open-write": ActionShape(_PATH, refused=_PATH),
    "write-file": ActionShape(
        Fields({"path": STRING, "sha256": STRING, "owner": ListOf(_ID)}), refused=_PATH
    ),
    "access": ActionShape(Fields({"answers": ListOf(STRING)}), answers_for=_one_answer_each),
    # network.py
    "interfaces": ActionShape(Fields({"interfaces": ListOf(STRING)})),
    "tcp-connect": ActionShape(
        Fields({"address": STRING, "port": _PORT}),
        refused=Fields({"address": STRING, "port": _PORT}),
    ),
    "socket-inet": ActionShape(NO_FIELDS, refused=NO_FIELDS),
    # probes.py
    "attack-surface": ActionShape(Fields({"answers": MapOf(STRING)})),
    "kernel-calls": ActionShape(Fields({"answers": MapOf(STRING)}), answers_for=_calls_asked),
    "push-terminal-input": ActionShape(NO_FIELDS, refused=NO_FIELDS),
    "peek-process": ActionShape(
        Fields({"answers": MapOf(MapOf(STRING))}), answers_for=_processes_asked
    ),
    # proxy.py
    "supplier-request": ActionShape(
        Fields({"method": STRING, "path": STRING, "status": _HTTP_STATUS, "request_id": STRING}),
        refused=Fields({"method": STRING, "path": STRING, "request_id": STRING}),
    ),
    "proxy-requests": ActionShape(
        Fields(
            {
                "requests": ListOf(
                    Outcome(
                        ok=Fields({"status": _HTTP_STATUS, **_RAW_REQUEST}),
                        refused=Fields(_RAW_REQUEST),
                    )
                )
            }
        ),
        answers_for=_requests_asked,
    ),
    "shaped-requests": ActionShape(
        Fields(
            {
                "requests": ListOf(
                    Outcome(
                        ok=Fields({"status": _HTTP_STATUS, **_SHAPED_REQUEST}),
                        refused=Fields(_SHAPED_REQUEST),
                    )
                )
            }
        ),
        answers_for=_shaped_asked,
    ),
    # system.py
    "proc-status": ActionShape(
        Fields(
            {
                "uid": _ID,
                "gid": _ID,
                "status": Fields(dict.fromkeys(STATUS_FIELDS, STRING)),
                "uid_map": ListOf(STRING),
                "gid_map": ListOf(STRING),
                "namespaces": Fields(dict.fromkeys(NAMESPACES, STRING)),
                "hostname": STRING,
                "mounts": ListOf(STRING),
                "environment": ListOf(STRING),
                "cwd": STRING,
                "pid": _PID,
                "sid": _SID,
                "scratch": Nullable(Fields({"bytes": _UNSIGNED_64, "mode": _MODE, "uid": _ID})),
                "pdeathsig": _SIGNAL,
                "root_create": STRING,
            }
        )
    ),
    "fill-scratch": ActionShape(
        Fields({"written": _UNSIGNED_64}), refused=Fields({"written": _UNSIGNED_64})
    ),
    "hold": ActionShape(Fields({"pid": _PID, "sid": _SID})),
    "unshare-user": ActionShape(NO_FIELDS, refused=NO_FIELDS),
    "syscall": ActionShape(
        Fields({"number": INTEGER, "returned": INTEGER}), refused=Fields({"number": INTEGER})
    ),
}


def result_problem(document: Mapping[str, object], asked: str, args: Sequence[str]) -> str | None:
    """What is wrong with a result line's object as the answer to ``asked`` with ``args``
    (the first problem found, for the run's stop), or None when it is the answer's shape."""
    if "action" not in document:
        return "action is missing"
    if document["action"] != asked:
        return f"action is {shown_value(document['action'])}"
    # Every result's own peak memory, where the worker could read it (the benchmark's figure).
    problem = value_problem(Nullable(_PEAK_RSS_KIB), document.get("peak_rss_kib"), "peak_rss_kib")
    if problem is not None:
        return problem
    shape = SHAPES[asked]
    problem = outcome_problem(document, shape.ok, shape.refused, "")
    if problem is None and document["ok"] and shape.answers_for is not None:
        problem = shape.answers_for(document, args)
    return problem
