"""A nono helper stalled or killed: the proxy host (which holds the roles' proxies) and a launch
process (which makes the controller's nono-py calls), each stopped with SIGSTOP, or killed with
SIGKILL, right after it starts and mid-run. The run stops with exit 1 and one line naming the
helper (an error, never a FAIL of a check), in under 30 s from the fault, and leaves nothing
behind: no process, no secret on disk.

The run is held still at a check line (support/paused.py), the helper found among the
controller's children by its module, hurt, and the run let go.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.faults import processes_of, secret_leftovers, settle, start_controller

pytestmark = pytest.mark.integration

# The helpers are up, and nothing has asked the proxy host for a proxy yet.
JUST_STARTED = r"^PASS nono\.profiles\.committed$"
# Mid-run: the proxies are started and the boundary is being checked.
MID_RUN = r"^PASS files\.supplier-key\.control$"
HELPERS = {
    "proxy host": ("app.tools.nono.proxy_host", "the roles' proxy host (pid {pid})"),
    "launch process": ("app.tools.nono.launch_process", "the nono launch process (pid {pid})"),
}
# The fault to the run's exit, at most: the bound.
STOPS_WITHIN_SECONDS = 30.0


@pytest.fixture
def base() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="analyst-stalled-", dir="/var/tmp"))
    os.chmod(made, 0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _helpers(controller_pid: int, module: str) -> list[int]:
    """The controller's children that run ``module``."""
    pids = []
    for child in _children(controller_pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if module.encode() in cmdline:
            pids.append(child)
    return pids


@pytest.mark.parametrize("signum", [signal.SIGSTOP, signal.SIGKILL], ids=["stopped", "killed"])
@pytest.mark.parametrize("point", [JUST_STARTED, MID_RUN], ids=["just started", "mid-run"])
@pytest.mark.parametrize("helper", list(HELPERS))
def test_a_stalled_or_killed_helper_stops_the_run_in_seconds_naming_it(
    helper: str, point: str, signum: int, base: Path
) -> None:
    module, named = HELPERS[helper]
    controller = start_controller(base, layer="nono", pause_at=[point])
    controller.wait_paused()
    controller.remember_secrets()
    victims = _helpers(controller.process.pid, module)
    assert victims, f"no {helper} among the controller's children"
    # Every launch process: whichever a later call takes is the one hurt.
    hurt = victims if helper == "launch process" else victims[:1]
    for pid in hurt:
        os.kill(pid, signum)
    hurt_at = time.monotonic()
    controller.resume()
    try:
        code = controller.finish(timeout=120)
    finally:
        # What is left of a stopped helper goes on, so that it can die.
        for pid in hurt:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    elapsed = time.monotonic() - hurt_at
    output, errors = controller.output(), controller.errors()
    print(f"{helper}, {signum!r} at {point}: exit {code} after {elapsed:.1f} s")
    assert code == 1, output[-3000:] + errors
    assert "Traceback" not in output + errors
    assert not [line for line in output.splitlines() if line.startswith("FAIL ")], output[-3000:]
    stops = [line for line in errors.splitlines() if line.startswith("error (run stopped):")]
    assert len(stops) == 1, errors
    assert any(named.format(pid=pid) in stops[0] for pid in hurt), stops[0]
    assert elapsed < STOPS_WITHIN_SECONDS, (elapsed, stops[0])
    assert settle(lambda: processes_of(controller.work)) == []
    assert settle(lambda: secret_leftovers([base], controller.secrets_seen)) == []
