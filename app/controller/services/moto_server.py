"""moto's server process for a local run: a loopback port reserved for it before it starts,
its word that it listens, and why it did not start when it did not."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
from pathlib import Path

from app.controller.services.die_with_controller import dying_with_controller
from app.core.errors import RunStopped, ServiceUnavailable
from app.core.repo import REPO_ROOT

LOOPBACK = "127.0.0.1"
MOTO_LOG = "moto.log"
# How long moto may take to say it listens, and to answer the bootstrap's calls: its first
# request builds IAM's backend (0.24 to 0.39 s measured at a load average of 3; 30 s leaves
# room for 32 runs at once on two cores).
STARTUP_TIMEOUT_SECONDS = 30.0
# How long a moto whose connection closed is given to end before it is reported still running.
EXIT_WAIT_SECONDS = 1.0


class LocalAwsError(RunStopped):
    """The local AWS stand-in could not be set up; the message names the fix."""


class MotoUnavailable(ServiceUnavailable):
    """moto ended before it listened: it cannot run here (exit 3)."""


INSTALL_HINT = "check requirements-local.txt (moto and its server) is installed in this environment"


def _moto_program() -> list[str]:
    """moto's server, run from this environment's interpreter (moto_listener's docstring)."""
    return [sys.executable, "-m", "app.controller.services.moto_listener"]


def reserve_port() -> socket.socket:
    """A loopback port of this run's own until moto listens on it: a socket bound to it with
    SO_REUSEADDR and never listening. socket(7): another socket may then bind the port only if
    it too asks to reuse it and neither listens; so moto's server (which asks, as every
    werkzeug server does) binds it, nothing picking a free port is given it, and once moto
    listens nobody else can bind it at all."""
    reservation = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    reservation.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        reservation.bind((LOOPBACK, 0))
    except OSError:
        reservation.close()
        raise
    return reservation


class MotoServer:
    """moto's process on a port reserved for it, and the word that it listens there."""

    def __init__(self, state_dir: Path, no_auth_requests: int) -> None:
        """Starts moto without waiting for it: a server that serves ``no_auth_requests``
        requests without checking them and enforces IAM on every later one."""
        self.state_dir = state_dir
        self._reservation: socket.socket | None = reserve_port()
        port = int(self._reservation.getsockname()[1])
        self.endpoint_url = f"http://{LOOPBACK}:{port}"
        self._ready, ready_end = os.pipe()
        env = {
            "PATH": os.defpath,
            "LC_ALL": "C.UTF-8",
            "PYTHONPATH": str(REPO_ROOT),
            "INITIAL_NO_AUTH_ACTION_COUNT": str(no_auth_requests),
            # The port moto's replies name, as `MOTO_PORT=<port> moto_server` is told it.
            "MOTO_PORT": str(port),
        }
        try:
            with (state_dir / MOTO_LOG).open("wb") as log:
                # Tied to the controller's life, in its own session (a Ctrl-C at the terminal is
                # the controller's to handle), and working in its own state directory, which
                # names the run it belongs to.
                self.process: subprocess.Popen[bytes] | None = subprocess.Popen(
                    dying_with_controller([*_moto_program(), str(port), str(ready_end)]),
                    env=env,
                    cwd=state_dir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(ready_end,),
                    start_new_session=True,
                )
        except BaseException:
            self._release()
            raise
        finally:
            # moto holds its own copy: if it dies unready, the controller reads the pipe's end.
            os.close(ready_end)

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_SECONDS) -> None:
        """Waits for moto's word that it listens; then the port needs no reservation."""
        if self._reservation is None:
            return
        try:
            readable, _, _ = select.select([self._ready], [], [], timeout)
            said = os.read(self._ready, 64) if readable else b""
        finally:
            self._release()
        if said:
            return
        if readable:  # the pipe closed unwritten: moto ended before it listened
            raise MotoUnavailable(
                f"moto did not start: {moto_failure(self.process, self.state_dir)}", INSTALL_HINT
            )
        raise LocalAwsError(
            f"moto did not say it listens within {timeout:.0f}s: "
            f"{moto_failure(self.process, self.state_dir)}",
            "the machine may be overloaded; run again",
        )

    def _release(self) -> None:
        if self._reservation is not None:
            self._reservation.close()
            self._reservation = None
            os.close(self._ready)

    def detach(self) -> subprocess.Popen[bytes] | None:
        """Hands over moto's process for the caller to stop."""
        self._release()
        process, self.process = self.process, None
        return process


def exit_status(process: subprocess.Popen[bytes] | None) -> int | None:
    """moto's exit status, waited for a moment; None while it runs (or was never started)."""
    if process is None:
        return None
    try:
        return process.wait(timeout=EXIT_WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        return None


def moto_failure(process: subprocess.Popen[bytes] | None, state_dir: Path) -> str:
    """Why moto did not start, for an error message: its exit status and the end of its log.

    A moto that is ending closes its descriptors, and so the ready pipe, before the kernel
    gives it an exit status: it is waited for a moment before it is called running."""
    code = exit_status(process)
    try:
        output = (state_dir / MOTO_LOG).read_text(encoding="utf-8", errors="replace")[-2000:]
    except OSError:
        output = ""
    status = "still running" if code is None else f"exited {code}"
    return f"moto_listener {status} (output: {output.strip() or 'empty'})"
