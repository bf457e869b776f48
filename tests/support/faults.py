"""A controller run in its own process, for the fault suite: start it, wait for a line of its
output, hurt it, and then look for what it may have left behind.

What "left behind" means here: any file under the run's folders that holds the run's supplier
key or AWS secret key (read from the run while it was alive, so the search is for the real
bytes), any file named like one of the run's secret files, and any live process whose command
line, working directory or environment mentions the run's work directory.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.core.repo import REPO_ROOT

SECRET_FILE_NAMES = frozenset({"aws-credentials", "supplier-api-key", "supplier-tls.key"})
# How long a run may take to reach a line, and the run's remains to go, on a loaded machine.
LINE_TIMEOUT_SECONDS = 180.0
SETTLE_TIMEOUT_SECONDS = 30.0


@dataclass
class Controller:
    """One ``python -m app.controller`` process and its output files."""

    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path
    work: Path
    resume_file: Path
    secrets_seen: dict[str, bytes] = field(default_factory=dict)
    pauses: int = 0

    def output(self) -> str:
        return self.stdout.read_text(encoding="utf-8", errors="replace")

    def errors(self) -> str:
        return self.stderr.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, pattern: str, timeout: float = LINE_TIMEOUT_SECONDS) -> str:
        """Waits for a line of output matching ``pattern``; fails if the run ends first."""
        compiled = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = compiled.search(self.output())
            if found:
                return found.group(0)
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError(
            f"no line matching {pattern!r} (exit {self.process.poll()}):\n"
            f"{self.output()[-3000:]}\n{self.errors()[-3000:]}"
        )

    def wait_paused(self) -> str:
        """Waits until the run holds still at its next pause line; returns that line."""
        deadline = time.monotonic() + LINE_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            held = re.findall(r"^test-pause: (.*)$", self.output(), re.MULTILINE)
            if len(held) > self.pauses:
                self.pauses += 1
                return str(held[self.pauses - 1])
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError(f"the run did not pause:\n{self.output()[-3000:]}\n{self.errors()}")

    def resume(self) -> None:
        Path(f"{self.resume_file}.{self.pauses}").touch()

    def run_tree(self) -> Path:
        (tree,) = [p for p in self.work.iterdir() if re.fullmatch(r"[0-9a-f]{32}", p.name)]
        return tree

    def remember_secrets(self) -> None:
        """Reads the run's secret files while it is alive, to search for their bytes later."""
        secrets = self.run_tree() / "secrets"
        for path in secrets.iterdir():
            data = path.read_bytes()
            if path.name == "aws-credentials":
                (key,) = re.findall(rb"aws_secret_access_key = (\S+)", data)
                self.secrets_seen["the AWS secret key"] = key
            elif path.name == "supplier-api-key":
                self.secrets_seen["the supplier key"] = data.strip()
        assert "the supplier key" in self.secrets_seen, "the run held no supplier key yet"

    def finish(self, timeout: float = LINE_TIMEOUT_SECONDS) -> int:
        return self.process.wait(timeout=timeout)

    def kill(self, signum: int) -> int:
        self.process.send_signal(signum)
        return self.finish()

    def signal_group(self, signum: int) -> int:
        """What a terminal does on Ctrl-C (SIGINT) or hang-up (SIGHUP): signals every process
        of the foreground group, the controller and the tool it may be running."""
        os.killpg(self.process.pid, signum)
        return self.finish()


def start_controller(
    base: Path,
    *args: str,
    layer: str = "bubblewrap",
    command: Sequence[str] = (),
    work: Path | None = None,
    out: Path | None = None,
    pause_at: Sequence[str] = (),
    entry_module: str = "",
    entry_env: Mapping[str, str] | None = None,
) -> Controller:
    """Starts one run whose output goes to files under ``base``; ``command`` wraps it (for a
    private mount namespace, say). With ``pause_at`` (patterns for checks, "PASS <check id>") the
    run holds still right after printing each, in turn, until ``resume`` (see paused.py). With
    ``entry_module`` (a module of tests/, such as support.hostile) that module is the entry
    point instead of the controller's own, given ``entry_env`` besides the environment (it
    holds the run still as paused.py does, when it installs paused.py's wrapper)."""
    work = work or base / "work"
    out = out or base / "out"
    stdout, stderr = base / "stdout.log", base / "stderr.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(entry_env or {})}
    entry = ["-m", "app.controller"]
    if pause_at:
        entry_module = entry_module or "support.paused"
        env["ANALYST_TEST_PAUSE_AT"] = "\n".join(pause_at)
        env["ANALYST_TEST_RESUME_FILE"] = str(base / "resume")
    if entry_module:
        entry = ["-m", entry_module]
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "tests"), str(REPO_ROOT)])
    argv = [
        *command,
        sys.executable,
        *entry,
        "run",
        "--layer",
        layer,
        "--workdir",
        str(work),
        "--out",
        str(out),
        *args,
    ]
    with stdout.open("wb") as out_file, stderr.open("wb") as err_file:
        process = subprocess.Popen(
            argv,
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out_file,
            stderr=err_file,
            env=env,
            # Its own process group, as a shell gives a command: a terminal's Ctrl-C is a
            # signal to that whole group (see signal_group).
            start_new_session=True,
        )
    return Controller(process, stdout, stderr, work, base / "resume")


def _state(pid: str) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone"
    return stat.rpartition(")")[2].split()[0]


def _killed(pid: str) -> bool:
    """Whether SIGKILL is pending for the process: it will run no more of its own code.

    A sandbox's inner bwrap (its PID namespace's first process) is sent SIGKILL by the kernel
    when the outer bwrap the controller kills and reaps dies (--die-with-parent); on a loaded
    machine it may not have been scheduled to die yet when the controller's stop ends."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    pending = [
        line.split()[1] for line in status.splitlines() if line[:7] in ("SigPnd:", "ShdPnd:")
    ]
    return any(int(mask, 16) & (1 << (signal.SIGKILL - 1)) for mask in pending)


def processes_of(work: Path) -> list[str]:
    """Live processes that mention ``work`` in their command line, working directory or
    environment; zombies are dead, only not yet reaped, and a process with SIGKILL pending is
    dead, only not yet scheduled: neither is counted."""
    marker = str(work).encode()
    found = []
    for entry in Path("/proc").iterdir():
        pid = entry.name
        if not pid.isdigit() or int(pid) == os.getpid() or _state(pid) in ("Z", "gone"):
            continue
        if _killed(pid):
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
            cwd = os.readlink(entry / "cwd").encode()
        except OSError:
            continue
        if marker in cmdline or marker in environ or cwd.startswith(marker):
            words = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{pid}: {words}")
    return found


def secret_leftovers(roots: Iterable[Path], secrets: dict[str, bytes]) -> list[str]:
    """Every file under ``roots`` named like a secret file or holding a secret's bytes."""
    found = []
    for root in roots:
        if not root.exists():
            continue
        for directory, dirs, files in os.walk(root):
            for name in dirs + files:
                path = Path(directory, name)
                if name in SECRET_FILE_NAMES or name == "secrets":
                    found.append(f"{path} (named like a secret)")
                if name in files and path.is_file() and not path.is_symlink():
                    data = path.read_bytes()
                    found += [f"{path} holds {label}" for label, v in secrets.items() if v in data]
    return found


def settle(check: object, timeout: float = SETTLE_TIMEOUT_SECONDS) -> list[str]:
    """Polls ``check`` (returning a list of problems) until it returns none or time runs out;
    returns the last problems seen. For what a dead controller's clean-up process and the kernel
    clean up after it, which happens just after the controller's own exit."""
    assert callable(check)
    deadline = time.monotonic() + timeout
    while True:
        problems: list[str] = check()
        if not problems or time.monotonic() >= deadline:
            return problems
        time.sleep(0.05)


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name
