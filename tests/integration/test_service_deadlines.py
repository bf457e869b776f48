"""moto and the supplier API stalled (SIGSTOP) or killed at several moments of a real run
(``python -m app.controller run``): each stops the run within its deadline with one line that
names the service, exit 1, never a traceback and never as a FAIL of a check; moto killed once
it has started is never blamed on its installation."""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller.services.local_aws import LOCAL_DEADLINE
from app.controller.supplier_client import REQUEST_DEADLINE_SECONDS
from tests.support.faults import Controller, processes_of, settle, start_controller

pytestmark = pytest.mark.integration

# What stopping the run costs beyond the deadline on a loaded machine: the services' and the
# tools' stop, the tree's removal.
STOP_SLACK_SECONDS = 15.0
BWRAP_SERVICES_UP = r"^PASS bubblewrap\.bwrap\.version$"


@pytest.fixture
def base() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="analyst-deadlines-", dir="/var/tmp"))
    os.chmod(made, 0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def _pid_of(controller: Controller, marker: str) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = [p for p in processes_of(controller.work) if marker in p]
        if found:
            return int(found[0].split(":")[0])
        time.sleep(0.005)
    raise AssertionError(f"no {marker} process:\n{controller.output()}\n{controller.errors()}")


def _when_moto_logs(controller: Controller, request_line: str) -> int:
    """moto's pid once its log shows ``request_line`` (the run is provisioning it then)."""
    pid = _pid_of(controller, "moto_listener")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        logs = list(controller.work.glob("*/aws/moto.log"))
        if logs and request_line in logs[0].read_text(errors="replace"):
            return pid
        time.sleep(0.002)
    raise AssertionError(f"moto never logged {request_line!r}")


def _one_line(controller: Controller) -> str:
    errors = controller.errors()
    assert "Traceback" not in errors, errors
    assert "ANALYST_FAILED" not in controller.output() + errors
    lines = errors.strip().splitlines()
    assert len(lines) == 1, errors
    return lines[0]


def _finished_cleanly(controller: Controller) -> None:
    assert settle(lambda: processes_of(controller.work)) == []


def test_moto_killed_while_the_run_provisions_it_is_one_line_not_an_install_hint(
    base: Path,
) -> None:
    controller = start_controller(base)
    pid = _when_moto_logs(controller, '"PUT /analyst-local HTTP/1.1"')
    os.kill(pid, signal.SIGKILL)
    assert controller.finish() == 1, controller.errors()
    line = _one_line(controller)
    assert line.startswith("error (run stopped): moto exited -9 while the run set up the local"), (
        line
    )
    assert "moto started and then died" in line
    assert "installed" not in line
    _finished_cleanly(controller)


@pytest.mark.parametrize(
    ("layer", "pause"),
    [("nono", None), ("bubblewrap", BWRAP_SERVICES_UP)],
    ids=["nono, while provisioning", "bubblewrap, mid-run"],
)
def test_a_stalled_moto_stops_the_run_within_its_deadline(
    layer: str, pause: str | None, base: Path
) -> None:
    controller = start_controller(base, layer=layer, pause_at=[pause] if pause else [])
    if pause:
        controller.wait_paused()
        pid = _pid_of(controller, "moto_listener")
    else:
        pid = _when_moto_logs(controller, '"PUT /analyst-local HTTP/1.1"')
    os.kill(pid, signal.SIGSTOP)
    stalled = time.monotonic()
    if pause:
        controller.resume()
    code = controller.finish(timeout=LOCAL_DEADLINE.most_s + 60)
    took = time.monotonic() - stalled
    assert code == 1, controller.errors()
    line = _one_line(controller)
    assert re.match(r"error \(run stopped\): .*moto \(the local S3, IAM and STS\) did not answer "
                    r"within 10s \(1 try\): it is stalled", line), line  # fmt: skip
    assert took < LOCAL_DEADLINE.most_s + STOP_SLACK_SECONDS, took
    _finished_cleanly(controller)


@pytest.mark.parametrize(
    ("layer", "pause"),
    [("bubblewrap", BWRAP_SERVICES_UP), ("nono", r"^PASS supplier\.availability$")],
    ids=["bubblewrap, before the boundary checks", "nono, between the controller's calls"],
)
def test_a_stalled_supplier_api_stops_the_run_within_its_deadline(
    layer: str, pause: str, base: Path
) -> None:
    """Stalled where the controller's own request meets it first (a tool's request through
    its proxy is the nono layer's to bound)."""
    controller = start_controller(base, layer=layer, pause_at=[pause])
    controller.wait_paused()
    os.kill(_pid_of(controller, "app.supplier_api"), signal.SIGSTOP)
    stalled = time.monotonic()
    controller.resume()
    code = controller.finish(timeout=REQUEST_DEADLINE_SECONDS + 120)
    took = time.monotonic() - stalled
    assert code == 1, controller.errors()
    line = _one_line(controller)
    assert line.startswith("error (run stopped): "), line
    assert "the supplier API did not answer within 10s: it is stalled" in line, line
    assert took < REQUEST_DEADLINE_SECONDS + STOP_SLACK_SECONDS, took
    _finished_cleanly(controller)
