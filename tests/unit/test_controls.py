"""A control the host answers otherwise is a SKIP with the host's answer, never a PASS."""

from __future__ import annotations

import io

from app.core.checklog import CheckLog
from app.tools.controls import host_control


def test_a_control_the_host_answers_as_expected_passes() -> None:
    checks = CheckLog(stream=io.StringIO())
    host_control(checks, "control: the call succeeds", "succeeded", "succeeded")
    assert [(r.outcome, r.claim) for r in checks.records] == [
        ("PASS", "control: the call succeeds")
    ]


def test_a_control_the_host_refuses_itself_is_skipped_with_its_answer() -> None:
    stream = io.StringIO()
    checks = CheckLog(stream=stream)
    host_control(checks, "control: io_uring_setup EFAULT", {"io": "EPERM"}, {"io": "EFAULT"})
    assert checks.passed == 0 and checks.skipped == 1
    line = stream.getvalue()
    assert line.startswith("SKIP control: io_uring_setup EFAULT — this host answers")
    assert "'EPERM'" in line and "'EFAULT'" in line
