"""The nono launch processes (app/tools/nono/launch_pool.py, launch_process.py): real nono-py calls
made from processes of one thread, several at once, each tool's output on its channel; a launch
process that dies or fails is a clear stop and is replaced; none outlives its controller."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.core.repo import REPO_ROOT
from app.core.tool_counts import ToolCounts
from app.tools.channel import Ending
from app.tools.nono.launch_pool import (
    VIEW_LATER,
    LaunchFailed,
    LaunchProcesses,
    LaunchProcessLost,
    LaunchRequest,
)
from app.tools.nono.launch_process import capability_set

pytestmark = pytest.mark.integration

# The channel's prelude (nono/channel.py), then the test's own code.
PRELUDE = "import os, sys; os.dup2(0, 1); os.dup2(0, 2); "


def _request(code: str, *, timeout: float = 20.0, cwd: str = "/", **granted: str) -> LaunchRequest:
    grants = [["allow_path", "/", "READ"]]
    grants += [["allow_path", path, mode] for path, mode in granted.items()]
    return LaunchRequest(
        capabilities=grants,
        command=["/usr/bin/python3", "-S", "-c", PRELUDE + code],
        cwd=cwd,
        timeout_secs=timeout,
        env=[("LC_ALL", "C.UTF-8")],
        inherit_env=False,
        enforcement_mode="auto",
    )


@pytest.fixture
def counts() -> ToolCounts:
    return ToolCounts()


@pytest.fixture
def pool(counts: ToolCounts) -> Iterator[LaunchProcesses]:
    launchers = LaunchProcesses(2, None, counts)
    yield launchers
    launchers.close()


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError(f"no Threads line for {pid}")


def test_calls_made_at_once_each_get_their_own_output(pool: LaunchProcesses) -> None:
    """Eight calls from eight threads through two processes: each tool's own line on its own
    channel, its own exit status; between calls each process has one thread, the one that
    forks."""
    results: dict[int, tuple[bytes, int]] = {}

    def call(number: int) -> None:
        output, code = pool.call(
            _request(f"print('tool', {number}); sys.exit({number})"), who=f"tool {number}"
        )
        assert output.ending is Ending.COMPLETE
        results[number] = (output.data, code)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: (f"tool {n}\n".encode(), n) for n in range(8)}
    pids = pool.pids()
    assert len(pids) == 2
    assert [_threads(pid) for pid in pids] == [1, 1]


def test_a_pool_started_ahead_serves_only_once_given_its_view(counts: ToolCounts) -> None:
    """A pool started before the tools' view exists (the layer's head start): its first
    process loads and waits; a call before the view is given is refused, naming why; once
    given, the call runs, and ``start`` starts the pool's other process."""
    ahead = LaunchProcesses(2, VIEW_LATER, counts)
    try:
        ahead.start(1)
        while not ahead.pids():
            time.sleep(0.01)
        with pytest.raises(RuntimeError, match="before it was given its view"):
            ahead.call(_request("print('early')"), who="an early call")
        ahead.serve_in(None)
        output, code = ahead.call(_request("print('served')"), who="a call")
        assert (output.data, code) == (b"served\n", 0)
        assert len(ahead.pids()) == 2  # the call's start() started the other
    finally:
        ahead.close()


def test_the_tools_cpu_counts_while_its_launch_process_runs(
    pool: LaunchProcesses, counts: ToolCounts
) -> None:
    """A tool's CPU time, reaped by a launch process, is counted in the run's counts before
    that process is; once it is reaped, RUSAGE_CHILDREN holds it and the counts no longer do."""
    pool.call(_request("n = 0\nwhile n < 3_000_000: n += 1"), who="a busy tool")
    assert counts.unreaped_cpu_seconds() > 0.05
    pool.close()
    assert counts.unreaped_cpu_seconds() == 0


def test_what_nono_py_refuses_is_a_failed_launch_and_the_process_serves_on(
    pool: LaunchProcesses,
) -> None:
    """nono-py's own error (a working directory that does not exist) comes back as such; the
    control: the next call in the same process runs."""
    with pytest.raises(LaunchFailed, match="Cannot resolve working directory '/no/such/dir'"):
        pool.call(_request("pass", cwd="/no/such/dir"), who="a tool")
    assert pool.call(_request("print('ran')"), who="a tool")[0].data == b"ran\n"


def test_a_request_can_call_nothing_but_the_four_grants() -> None:
    made: list[tuple[str, tuple[object, ...]]] = []

    class Caps:
        def __getattr__(self, name: str) -> object:
            return lambda *args: made.append((name, args))

    nono = SimpleNamespace(CapabilitySet=Caps, AccessMode=SimpleNamespace(READ="r"))
    capability_set(nono, [["allow_path", "/x", "READ"], ["allow_tcp_connect_port", 8443]])  # type: ignore[arg-type]
    assert made == [("allow_path", ("/x", "r")), ("allow_tcp_connect_port", (8443,))]
    for refused in (
        [["allow_unix_socket", "/run/x"]],
        [["allow_path", "/x", "__class__"]],
        [["allow_path", "/x", "EXECUTE"]],
    ):
        with pytest.raises(ValueError, match=r"capability call|is not a grant"):
            capability_set(nono, refused)  # type: ignore[arg-type]


def test_a_launch_process_killed_in_a_call_stops_it_and_is_replaced(
    pool: LaunchProcesses, tmp_path: Path
) -> None:
    """The call stops (the run would, exit 1), naming the tool; the control: the next call
    runs, in a new launch process."""
    os.chmod(tmp_path, 0o777)
    pid_file = tmp_path / "tool.pid"
    errors: list[BaseException] = []

    def call() -> None:
        code = f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); import time; time.sleep(30)"
        try:
            pool.call(_request(code, **{str(tmp_path): "READ_WRITE"}), who="the held tool")
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=call)
    thread.start()
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    tool_pid = int(pid_file.read_text())
    try:
        (launcher,) = [pid for pid in pool.pids() if _parent(tool_pid) == pid]
        os.kill(launcher, signal.SIGKILL)
        thread.join(10)
        assert not thread.is_alive()
        (error,) = errors
        assert isinstance(error, LaunchProcessLost)
        assert "the held tool" in str(error) and "ended with status -9" in str(error)
    finally:
        os.kill(tool_pid, signal.SIGKILL)
    assert pool.call(_request("print('ran')"), who="a tool")[0].data == b"ran\n"
    assert launcher not in pool.pids()


@pytest.mark.parametrize("moment", ["idle", "in a call"])
def test_a_launch_process_stopped_stops_the_call_in_seconds_naming_it(
    pool: LaunchProcesses, tmp_path: Path, moment: str
) -> None:
    """SIGSTOP on a launch process, idle (the next call it takes waits TAKEN_SECONDS for it) or
    while its tool runs (the reading of the call's output sees it stopped): the call stops
    naming the launch process and its state, long before the tool's own time limit."""
    os.chmod(tmp_path, 0o777)
    pid_file = tmp_path / "tool.pid"
    code = f"open({str(pid_file)!r}, 'w').write(str(os.getpid())); import time; time.sleep(30)"
    request = _request(code, timeout=60.0, **{str(tmp_path): "READ_WRITE"})
    pool.start()
    deadline = time.monotonic() + 10
    while len(pool.pids()) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            pool.call(request, who="the held tool")
        except BaseException as error:
            errors.append(error)

    stopped = pool.pids()
    if moment == "idle":
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
    started = time.monotonic()
    thread = threading.Thread(target=call)
    thread.start()
    try:
        if moment == "in a call":
            while not pid_file.exists() or not pid_file.read_text():
                assert time.monotonic() < started + 10
                time.sleep(0.01)
            stopped = [pid for pid in pool.pids() if _parent(int(pid_file.read_text())) == pid]
            os.kill(stopped[0], signal.SIGSTOP)
            started = time.monotonic()
        thread.join(20)
        elapsed = time.monotonic() - started
        assert not thread.is_alive()
    finally:
        # What is left of them goes on (a replaced one was killed), and the tool ends.
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        if pid_file.exists() and pid_file.read_text():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    (error,) = errors
    assert isinstance(error, LaunchProcessLost)
    assert "the nono launch process (pid " in str(error), error
    assert "the held tool" in str(error) and "it is stopped" in str(error), error
    bound = 11.0 if moment == "idle" else 2.0
    assert elapsed < bound, (elapsed, str(error))
    # Replaced: the next call runs in a new launch process.
    assert pool.call(_request("print('ran')"), who="a tool")[0].data == b"ran\n"


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    return int(stat.rsplit(")", 1)[1].split()[1])


def test_no_launch_process_outlives_its_controller() -> None:
    """A controller killed outright (SIGKILL: nothing of its own runs) takes its launch
    processes with it."""
    script = (
        "import os, time\n"
        "from app.core.tool_counts import ToolCounts\n"
        "from app.tools.nono.launch_pool import LaunchProcesses\n"
        "pool = LaunchProcesses(3, None, ToolCounts())\n"
        "pool.start()\n"
        "while len(pool.pids()) < 3: time.sleep(0.01)\n"
        "time.sleep(0.3)\n"  # each has asked to die with it by now
        "print(*pool.pids(), flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == -9, ran.stderr
    pids = [int(pid) for pid in ran.stdout.split()]
    assert len(pids) == 3
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, [pid for pid in pids if _alive(pid)]
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
