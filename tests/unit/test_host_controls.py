"""A control the host answers otherwise is a SKIP with the host's answer, never a PASS."""

from __future__ import annotations

import io

from app.core.catalogue import Check, Section
from app.core.checklog import CheckLog
from app.tools.host_controls import host_control

SUCCEEDS = Check("test.call.control", "control: the call succeeds")
EFAULT = Check("test.io-uring.control", "control: io_uring_setup EFAULT")


def test_a_control_the_host_answers_as_expected_passes() -> None:
    checks = CheckLog(stream=io.StringIO())
    checks.begin(Section("test", SUCCEEDS))
    host_control(checks, SUCCEEDS, "succeeded", "succeeded")
    assert [(r.id, r.outcome, r.claim) for r in checks.records] == [
        ("test.call.control", "PASS", "control: the call succeeds")
    ]


def test_a_control_the_host_refuses_itself_is_skipped_with_its_answer() -> None:
    stream = io.StringIO()
    checks = CheckLog(stream=stream)
    checks.begin(Section("test", EFAULT))
    host_control(checks, EFAULT, {"io": "EPERM"}, {"io": "EFAULT"})
    assert checks.passed == 0 and checks.skipped == 1
    header, line = stream.getvalue().splitlines()
    assert header == "== test (1 check)"
    assert line.startswith("SKIP control: io_uring_setup EFAULT — this host answers")
    assert "'EPERM'" in line and "'EFAULT'" in line
