"""The baseline names the syscalls newer than libseccomp by their number, for the two
architectures whose numbers it knows (x86_64 and aarch64 share them), and refuses to compile
anywhere else rather than leave a rule out; its new rules render with the argument tests and
the element name that elements.json accounts for."""

from __future__ import annotations

import ctypes

import pytest

from app.tools import seccomp
from app.tools.seccomp import (
    AUDIT_ARCH_AARCH64,
    NEWER_SYSCALLS,
    LibseccompError,
    compile_filter,
    resolve_syscall,
)
from app.tools.seccomp_policy import BASELINE, GROUP_ELEMENTS, render_groups, rules_of
from app.tools.worker.reach import METADATA_CALLS, PROCESS_CALLS, WATCH_CALLS

AUDIT_ARCH_RISCV64 = 0xC00000F3


def _unknown_to_libseccomp() -> list[str]:
    lib = ctypes.CDLL(seccomp.LIBSECCOMP)
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    return [n for n in NEWER_SYSCALLS if lib.seccomp_syscall_resolve_name(n.encode()) == -1]


def test_a_syscall_libseccomp_does_not_know_takes_its_native_number() -> None:
    unknown = _unknown_to_libseccomp()
    if not unknown:
        pytest.skip("this libseccomp knows every syscall of NEWER_SYSCALLS")
    for name in unknown:
        assert resolve_syscall(name) == NEWER_SYSCALLS[name]


def test_the_same_number_on_aarch64(monkeypatch: pytest.MonkeyPatch) -> None:
    unknown = _unknown_to_libseccomp()
    if not unknown:
        pytest.skip("this libseccomp knows every syscall of NEWER_SYSCALLS")
    monkeypatch.setattr(seccomp, "native_architecture", lambda: AUDIT_ARCH_AARCH64)
    assert resolve_syscall(unknown[0]) == NEWER_SYSCALLS[unknown[0]]


def test_on_another_architecture_the_baseline_is_not_compiled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not _unknown_to_libseccomp():
        pytest.skip("this libseccomp knows every syscall of NEWER_SYSCALLS")
    monkeypatch.setattr(seccomp, "native_architecture", lambda: AUDIT_ARCH_RISCV64)
    with pytest.raises(LibseccompError, match="architecture 0xc00000f3"):
        compile_filter("baseline", rules_of(BASELINE))


def test_the_new_groups_render_as_elements_with_their_argument_tests() -> None:
    groups = render_groups(BASELINE)["groups"]
    assert isinstance(groups, list)
    named = [group["element"] for group in groups if "element" in group]
    assert named == list(GROUP_ELEMENTS) == ["other-processes", "file-metadata", "watches"]
    (processes,) = [group for group in groups if group.get("element") == "other-processes"]
    conditional = [rule for rule in processes["rules"] if "when" in rule]
    assert conditional == [
        {"syscall": "prlimit64", "errno": "EPERM", "when": "pid != 0"},
        {"syscall": "setpriority", "errno": "EPERM", "when": "which != PRIO_PROCESS (0)"},
        {"syscall": "setpriority", "errno": "EPERM", "when": "who != 0"},
        {"syscall": "getpriority", "errno": "EPERM", "when": "which != PRIO_PROCESS (0)"},
        {"syscall": "getpriority", "errno": "EPERM", "when": "who != 0"},
    ]


def test_a_group_left_out_is_a_known_one() -> None:
    with pytest.raises(ValueError, match="no rule group"):
        seccomp.baseline_filter(frozenset({"no-such-group"}))


@pytest.mark.parametrize(
    ("element", "probed"),
    [
        ("other-processes", PROCESS_CALLS),
        ("file-metadata", METADATA_CALLS),
        ("watches", WATCH_CALLS),
    ],
)
def test_each_new_group_refuses_exactly_the_calls_the_tools_probe(
    element: str, probed: tuple[str, ...]
) -> None:
    """The policy names its calls itself (a reviewer reads them in seccomp_policy.py) and the
    worker, which imports nothing of the app, keeps its own list of what it tries: the two must
    agree, or a refused call would go unwatched, or a probe would try a call no rule names."""
    (group,) = [group for group in BASELINE if group.element == element]
    assert {rule.syscall for rule in group.rules} == set(probed), element
