"""What the kernel says of a nono helper process (the proxy host, a launch process) that did not
answer in time, for the one line that stops the run: stopped, ended, or running but silent."""

from __future__ import annotations

from pathlib import Path


def process_state(pid: int) -> str:
    """The one-letter state /proc gives ``pid`` (R, S, T, Z, ...), or "gone"."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return "gone"
    fields = stat.rpartition(")")[2].split()
    return fields[0] if fields else "gone"


def is_stopped(pid: int) -> bool:
    """Stopped by a signal (SIGSTOP, SIGTSTP) or by a tracer: it answers nothing until resumed."""
    return process_state(pid) in ("T", "t")


def described(pid: int) -> str:
    """The state of ``pid`` in words."""
    state = process_state(pid)
    if state in ("T", "t"):
        return "it is stopped (by a signal or a tracer)"
    if state in ("Z", "X", "gone"):
        return "it has ended"
    return "it is running but silent"
