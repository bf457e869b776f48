"""The non-dumpable check's judgement (app/tools/undumpable_checks.py): the control and the
refusal told apart from what a container's filter refuses to every process."""

from __future__ import annotations

from app.tools.undumpable_checks import DUMPABLE, UNDUMPABLE, judged


def test_on_an_open_kernel_both_hold() -> None:
    control, refused, seen, _ = judged(dict(DUMPABLE), dict(UNDUMPABLE))
    assert (control, refused) == (True, True)
    assert "filter" not in seen


def test_a_filter_that_refuses_pidfd_getfd_to_both_is_named_and_not_credited_to_the_flag() -> None:
    sibling = {**DUMPABLE, "pidfd_getfd": "EPERM"}
    control, refused, seen, got = judged(sibling, dict(UNDUMPABLE))
    assert (control, refused) == (True, True)
    assert seen.endswith("its filter's and not the flag's: pidfd_getfd")
    assert got.endswith("its filter's and not the flag's: pidfd_getfd")


def test_the_proc_opens_are_never_excused() -> None:
    # The /proc files are the flag's alone: a sibling whose mem is refused is a failed control.
    control, _, _, _ = judged({**DUMPABLE, "mem": "EPERM"}, dict(UNDUMPABLE))
    assert control is False


def test_a_dumpable_controller_fails_the_refusal() -> None:
    _, refused, _, _ = judged(dict(DUMPABLE), dict(DUMPABLE))
    assert refused is False


def test_a_controller_answer_missing_a_probe_fails() -> None:
    partial = {name: answer for name, answer in UNDUMPABLE.items() if name != "environ"}
    _, refused, _, _ = judged(dict(DUMPABLE), partial)
    assert refused is False


def test_an_unexpected_sibling_answer_fails_the_control() -> None:
    control, _, _, _ = judged({**DUMPABLE, "process_vm_readv": "ESRCH"}, dict(UNDUMPABLE))
    assert control is False
