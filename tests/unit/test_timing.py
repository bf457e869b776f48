"""The run's phase clock: what each row counts, and which rows the table holds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from app.controller.timing import PhaseClock, service_cpu_seconds
from app.core.tool_counts import ToolCounts

SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass\n"


def test_each_phase_gets_its_own_wall_time_and_tool_processes() -> None:
    counts = ToolCounts()
    clock = PhaseClock(tool_counts=counts)
    clock.enter("first")
    time.sleep(0.05)
    clock.enter("second")
    counts.started()
    counts.started()
    clock.enter("third")
    rows = {row["phase"]: row for row in clock.table()}
    assert list(rows) == ["first", "second"]  # the current phase is not done
    assert rows["first"]["wall_ms"] >= 50
    assert (rows["first"]["tool_processes"], rows["second"]["tool_processes"]) == (0, 2)


def test_a_clock_counts_its_own_runs_tools_only() -> None:
    """Each run's counts are its own: another run's starts and unreaped CPU, taken at the
    same time in the same process, reach neither this run's rows nor its counts."""
    ours, theirs = ToolCounts(), ToolCounts()
    clock = PhaseClock(tool_counts=ours)
    clock.enter("phase")
    ours.started()
    theirs.started()
    theirs.unreaped(4321, 5.0)
    ours.unreaped(1234, 0.5)
    clock.enter("next")
    (row,) = clock.table()
    assert row["tool_processes"] == 1
    assert 500 <= row["child_cpu_ms"] < 5000
    ours.reaped(1234)
    assert (ours.starts, ours.unreaped_cpu_seconds()) == (1, 0)
    assert (theirs.starts, theirs.unreaped_cpu_seconds()) == (1, 5.0)


def test_entering_the_current_phase_again_changes_nothing_and_a_return_adds_up() -> None:
    clock = PhaseClock()
    clock.enter("a")
    clock.enter("a")
    time.sleep(0.02)
    clock.enter("b")
    clock.enter("a")
    time.sleep(0.02)
    clock.enter("c")
    rows = {row["phase"]: row for row in clock.table()}
    assert list(rows) == ["a", "b"]
    assert rows["a"]["wall_ms"] >= 40


def test_a_reaped_child_counts_as_child_cpu_and_the_controller_as_its_own() -> None:
    clock = PhaseClock()
    clock.enter("child")
    subprocess.run([sys.executable, "-c", SPIN], check=True)
    clock.enter("own")
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    clock.enter("end")
    rows = {row["phase"]: row for row in clock.table()}
    assert rows["child"]["child_cpu_ms"] >= 190
    assert rows["own"]["controller_cpu_ms"] >= 190
    assert rows["own"]["child_cpu_ms"] == 0


def _service(program: str) -> subprocess.Popen[bytes]:
    """Spins for 0.2 s of CPU, says so, then waits for its standard input to close."""
    return subprocess.Popen(
        [program, "-c", SPIN + "import sys; print('spun', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )


def test_a_service_is_read_from_its_proc_while_it_runs(tmp_path: Path) -> None:
    # A command name with a space and a closing parenthesis, as /proc/<pid>/stat shows it.
    program = tmp_path / "spin (a) b"
    program.symlink_to(sys.executable)
    pids: list[int] = []
    clock = PhaseClock(service_pids=lambda: pids)
    clock.enter("service")
    service = _service(str(program))
    pids.append(service.pid)
    try:
        assert service.stdout is not None
        assert service.stdout.readline() == b"spun\n"
        clock.enter("end")
        (row,) = clock.table()
        assert row["service_cpu_ms"] >= 150
        assert row["child_cpu_ms"] == 0  # not reaped yet
    finally:
        assert service.stdin is not None
        service.stdin.close()
        service.wait()
    assert service_cpu_seconds(service.pid) == 0.0  # gone


def test_a_step_timed_aside_gets_its_own_row_and_its_section_goes_on() -> None:
    clock = PhaseClock()
    clock.enter("evidence")
    with clock.aside("report page"):
        time.sleep(0.03)
    time.sleep(0.02)
    clock.stop()
    rows = {row["phase"]: row for row in clock.table()}
    assert list(rows) == ["evidence", "report page"]
    assert rows["report page"]["wall_ms"] >= 30
    assert rows["evidence"]["wall_ms"] >= 20
    # Stopped: every phase is in the table, and the clock no longer counts.
    assert clock.table() == list(rows.values())
