"""Starting one worker process at the tool's uid and reading its one result line.

Used by the bubblewrap launcher (bwrap is the program started) and by the unconfined control
(the worker itself is). A start-up failure, a timeout, a crash or a missing result raises
ToolRunError: it is never read as a refusal.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Final

from app.core.results import ToolKilled, ToolResult, ToolRunError
from app.core.run_tree import INTERPRETER, WORKER_PACKAGE, ToolIdentity
from app.tools.worker.protocol import RESULT_PREFIX

TOOL_TIMEOUT_SECONDS: Final = 60
# The only search path a tool process (and bwrap itself) is given.
SYSTEM_PATH: Final = "/usr/bin:/bin"


def worker_command(action: str, args: Sequence[str]) -> list[str]:
    """The worker's command line for one action."""
    return [INTERPRETER, "-m", WORKER_PACKAGE, action, *args]


def signal_of(returncode: int) -> str | None:
    """The signal that ended a process, from its exit status: negative when the process started
    here was killed; 128 + the signal when bwrap reports its sandboxed child killed (the worker
    itself never exits above 128)."""
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if not 0 < number < signal.NSIG:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def parse_output(stdout: bytes, stderr: bytes, returncode: int) -> ToolResult:
    """Finds exactly one result line; anything else is a failure to run, not a refusal."""
    lines = [
        line[len(RESULT_PREFIX) :]
        for line in stdout.decode("utf-8", "replace").splitlines()
        if line.startswith(RESULT_PREFIX)
    ]
    if returncode != 0 or len(lines) != 1:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        said = f": {' | '.join(tail)}" if tail else ""
        killer = signal_of(returncode)
        if killer is not None:
            raise ToolKilled(
                f"tool process was killed by {killer} before it reported a result{said}",
                "something outside the run ended it (a kill, the OOM killer); run again",
            )
        raise ToolRunError(
            f"tool process exited {returncode} with {len(lines)} result lines" + said
        )
    return ToolResult.from_line(lines[0])


def exec_as_tool(
    argv: Sequence[str],
    *,
    tool: ToolIdentity,
    env: Mapping[str, str],
    pass_fds: Sequence[int] = (),
    executable: str | None = None,
) -> ToolResult:
    """Runs ``argv`` as the tool's uid/gid (with no supplementary groups) and parses its result.

    A root controller drops the process's identity before exec, so whatever runs (bwrap, or
    the worker itself for a control) is never host root. The working directory is ``/``: the
    controller's own may be closed to the tool's uid, and ``/`` holds no module the worker's
    ``-m`` could pick up from it.
    """
    try:
        completed = subprocess.run(
            list(argv),
            executable=executable,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TOOL_TIMEOUT_SECONDS,
            pass_fds=tuple(pass_fds),
            env=dict(env),
            cwd="/",
            check=False,
            **tool.process_identity(),
        )
    except subprocess.TimeoutExpired as error:
        raise ToolRunError(f"tool process timed out after {TOOL_TIMEOUT_SECONDS}s") from error
    except OSError as error:
        raise ToolRunError(f"tool process could not start: {error}") from error
    return parse_output(completed.stdout, completed.stderr, completed.returncode)
