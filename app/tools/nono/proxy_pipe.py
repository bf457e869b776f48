"""The controller's end of the proxy host's command pipe: the process started, one JSON command
a line written and one reply a line read, each with a bound and a deadline; a proxy host that
misses one has failed for the rest of the run, and every later call raises that failure at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Final

from app.core.repo import REPO_ROOT
from app.core.results import HelperLost
from app.tools.nono.helper_state import described
from app.tools.nono.role_front import NONO_AUDIT_SECONDS, REQUEST_SECONDS, UPSTREAM_SECONDS

# The proxy host's module, run with -m.
HOST_MODULE = "app.tools.nono.proxy_host"
# One reply line from the proxy host, and how long a reply may take, from when the controller
# asks for it. Measured at load averages of 7 to 9 on 2 cores: a start (both roles' nono
# proxies loading) 0.28 to 0.38 s from its send, a drain at most 0.13 s, every other command a
# few ms. A start and a plain command get some 25 times that; a request sent through nono
# ("behind") and a seal may take as long as the front's own deadlines allow first.
MAX_REPLY_BYTES: Final = 1024 * 1024
COMMAND_SECONDS: Final = 5.0
START_SECONDS: Final = 10.0
COMMAND_DEADLINES: Final[dict[str, float]] = {
    "start": START_SECONDS,
    "behind": UPSTREAM_SECONDS + NONO_AUDIT_SECONDS + COMMAND_SECONDS,
    "seal": REQUEST_SECONDS + UPSTREAM_SECONDS + COMMAND_SECONDS,
}
STOP_SECONDS: Final = 2.0


class ProxyHostError(HelperLost):
    """The proxy host did not answer as it must: the run stops, naming it."""


class ProxyHostPipe:
    """The proxy host process and its command pipe, one command at a time."""

    def __init__(self, log_file: Path) -> None:
        self._log_file = log_file
        with log_file.open("wb") as stderr:
            self._process = subprocess.Popen(
                # -P: the working directory, the run's own, is not on the module path.
                [sys.executable, "-P", "-m", HOST_MODULE, str(os.getpid())],
                # The run's folder, so that whoever lists processes sees whose it is.
                cwd=log_file.parent,
                env={"PATH": os.defpath, "PYTHONPATH": str(REPO_ROOT), "LC_ALL": "C.UTF-8"},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                bufsize=0,
                # A Ctrl-C at the terminal is the controller's to handle.
                start_new_session=True,
            )
        # Written with a deadline: a proxy host that reads nothing fills the pipe, and a
        # blocking write would then wait for ever.
        assert self._process.stdin is not None
        os.set_blocking(self._process.stdin.fileno(), False)
        self._buffer = b""
        # Replies come back in the order the commands went: a reply read before its caller
        # asked for it waits here, by its command's number.
        self._sent = self._read = 0
        self._ops: dict[int, str] = {}
        self._early: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()
        # Once it has missed a deadline or ended, every later call stops the run at once.
        self._failure: ProxyHostError | None = None

    @property
    def pid(self) -> int:
        return self._process.pid

    def send(self, command: dict[str, Any]) -> int:
        """Sends a command without waiting for its reply; returns its ticket for ``reply``."""
        with self._lock:
            self._raise_if_failed()
            self._write(json.dumps(command).encode("utf-8") + b"\n", str(command.get("op")))
            self._sent += 1
            self._ops[self._sent] = str(command.get("op"))
            return self._sent

    def _write(self, data: bytes, op: str) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        deadline = time.monotonic() + COMMAND_SECONDS
        while data:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [stdin], [], left)[1]:
                raise self._failed(f"did not take the command {op!r} within {COMMAND_SECONDS:g} s")
            try:
                data = data[os.write(stdin.fileno(), data) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise self._failed("it is not running") from None

    def reply(self, ticket: int) -> dict[str, Any]:
        """The reply to the command with ``ticket``, reading those before it first."""
        with self._lock:
            self._raise_if_failed()
            while self._read < ticket:
                line = self._read_line(self._ops.pop(self._read + 1, "?"))
                self._read += 1
                self._early[self._read] = line
            reply = self._early.pop(ticket)
        if not reply.get("ok"):
            raise ProxyHostError(f"the proxy host refused a command: {reply.get('error')}")
        return reply

    def call(self, command: dict[str, Any]) -> dict[str, Any]:
        return self.reply(self.send(command))

    def _read_line(self, op: str) -> dict[str, Any]:
        stdout = self._process.stdout
        assert stdout is not None
        seconds = COMMAND_DEADLINES.get(op, COMMAND_SECONDS)
        deadline = time.monotonic() + seconds
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_REPLY_BYTES:
                raise self._failed(f"a reply over {MAX_REPLY_BYTES} bytes")
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stdout], [], [], left)[0]:
                raise self._failed(f"no reply to {op!r} within {seconds:g} s")
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                raise self._failed("it ended")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply: dict[str, Any] = json.loads(line)
        except ValueError:
            raise self._failed("a reply that is not JSON") from None
        return reply

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _failed(self, what: str) -> ProxyHostError:
        tail = self._log_file.read_bytes()[-2000:].decode("utf-8", "replace").strip()
        self._failure = ProxyHostError(
            f"the roles' proxy host (pid {self.pid}) failed: {what}; {described(self.pid)}"
            + (f"; its stderr ends: {tail!r}" if tail else "")
        )
        return self._failure

    def answers(self) -> None:
        """Raises its failure when the proxy host misses the deadline of a plain command (or
        missed one before): for a caller whose wait through a role's front went unanswered."""
        self.call({"op": "usage"})

    def stop(self) -> None:
        stdin: IO[bytes] | None = self._process.stdin
        if stdin is not None and self._failure is None:
            with contextlib.suppress(OSError):
                os.write(stdin.fileno(), b'{"op": "stop"}\n')
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()
        try:
            self._process.wait(timeout=0 if self._failure is not None else STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
