"""The project's commands run black-box, as a user runs them: a process of their own from the
repository's root, with what the test gives them (options, environment, a shell prefix that
sets a umask or a limit, or a mount namespace), and what they leave on disk listed after."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from app.core.repo import REPO_ROOT

CONTROLLER: Final = (sys.executable, "-m", "app.controller")
# Long enough for a whole local run on a loaded machine.
TIMEOUT_SECONDS: Final = 300


def clean_env(**changes: str) -> dict[str, str]:
    """This environment without any AWS or analyst setting, with ``changes``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ANALYST_"))}
    env.update(changes)
    return env


def command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
    timeout: float = TIMEOUT_SECONDS,
) -> subprocess.CompletedProcess[str]:
    """Runs ``prefix + argv`` from the repository's root with no standard input."""
    return subprocess.run(
        [*prefix, *argv],
        cwd=REPO_ROOT,
        env=dict(env if env is not None else clean_env()),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=timeout,
        check=False,
    )


def controller(
    *args: str,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    return command([*CONTROLLER, *args], env=env, prefix=prefix)


def in_shell(script: str) -> list[str]:
    """A prefix that runs ``script`` in bash (a umask; a ulimit, in bash's 1024-byte blocks),
    then execs the command."""
    return ["bash", "-ec", script + '\nexec "$@"', "bash"]


def in_mount_namespace(script: str) -> list[str]:
    """A prefix that runs ``script`` in a private mount namespace, then execs the command."""
    return ["unshare", "--mount", "--propagation", "private", *in_shell(script)]


def listing(root: Path) -> set[str]:
    """Every path under ``root``, relative to it."""
    found = set()
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            found.add(str(Path(directory, name).relative_to(root)))
    return found


def the_one_line(completed: subprocess.CompletedProcess[str]) -> str:
    """The single line a refusal leaves on stderr (and nothing on stdout); fails otherwise."""
    lines = completed.stderr.splitlines()
    assert len(lines) == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    return lines[0]


def doctor_fail(completed: subprocess.CompletedProcess[str], claim: str) -> tuple[str, str]:
    """doctor's FAIL line for ``claim`` (what it found) and the fix printed under it; the same
    for every layer that lists the claim."""
    lines = completed.stdout.splitlines()
    prefix = f"FAIL {claim}: "
    found = {
        (line.removeprefix(prefix), lines[i + 1].removeprefix("     fix: "))
        for i, line in enumerate(lines)
        if line.startswith(prefix) and lines[i + 1].startswith("     fix: ")
    }
    assert len(found) == 1, completed.stdout
    return found.pop()
