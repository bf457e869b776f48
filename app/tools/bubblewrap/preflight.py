"""What bubblewrap needs on this machine, read once before the first tool process starts.

Each missing piece stops the run with one LayerUnavailable that names it and its fix.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from app.core.errors import LayerUnavailable
from app.core.results import ToolRunError
from app.core.run_tree import INTERPRETER, RunPaths, ToolIdentity, blocking_directory
from app.tools.execution import SYSTEM_PATH
from app.tools.seccomp import LibseccompError, check_available

# --disable-userns and --assert-userns-disabled first appear in 0.8.0.
MIN_BWRAP_VERSION: Final = (0, 8, 0)
MAX_USER_NAMESPACES: Final = Path("/proc/sys/user/max_user_namespaces")
# Distribution switches that refuse unprivileged user namespaces even when the limit allows
# them (Debian's older kernels; Ubuntu's AppArmor): (file, value that refuses, the fix).
USERNS_SWITCHES: Final = (
    (
        Path("/proc/sys/kernel/unprivileged_userns_clone"),
        "0",
        "sysctl -w kernel.unprivileged_userns_clone=1",
    ),
    (
        Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        "1",
        "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile "
        "for bwrap",
    ),
)
# What bwrap itself needs in its environment; the controller's own (AWS, keys) never
# reaches even bwrap, quite apart from --clearenv.
BWRAP_ENVIRONMENT: Final = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"}


@dataclass(frozen=True)
class BwrapReadings:
    """What preflight found: the program, its version and which options it offers."""

    path: str
    version: str
    version_tuple: tuple[int, ...]
    minimum_version: tuple[int, ...]
    required_options: tuple[str, ...]
    offered_options: frozenset[str]
    max_user_namespaces: int


def dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def read_bwrap(policy_argv: Sequence[str], paths: RunPaths, tool: ToolIdentity) -> BwrapReadings:
    """Finds bwrap and every other piece the policy vector needs; raises LayerUnavailable."""
    path = shutil.which("bwrap")
    if path is None:
        raise LayerUnavailable("bwrap not found on PATH", "apt-get install bubblewrap")
    version_text, version = _bwrap_version(path)
    if version < MIN_BWRAP_VERSION:
        raise LayerUnavailable(
            f"{version_text} is older than {dotted(MIN_BWRAP_VERSION)}, the first with "
            "--disable-userns",
            "install a newer bubblewrap (Debian 12: apt-get install bubblewrap)",
        )
    required = required_options(policy_argv)
    offered = set(re.findall(r"^\s+(--[a-z0-9-]+)", _run_text([path, "--help"]), re.MULTILINE))
    missing = tuple(option for option in required if option not in offered)
    if missing:
        raise LayerUnavailable(
            f"{version_text} lacks {', '.join(missing)}",
            f"install bubblewrap >= {dotted(MIN_BWRAP_VERSION)}",
        )
    max_userns = int(MAX_USER_NAMESPACES.read_text().strip())
    if max_userns == 0:
        raise LayerUnavailable(
            f"user namespaces are disabled ({MAX_USER_NAMESPACES} is 0)",
            "sysctl -w user.max_user_namespaces=128 (in the cluster, the pod's init container)",
        )
    for switch, refusing, fix in USERNS_SWITCHES:
        if switch.exists() and switch.read_text().strip() == refusing:
            raise LayerUnavailable(
                f"unprivileged user namespaces are refused ({switch} is {refusing})", fix
            )
    if not os.access(INTERPRETER, os.X_OK):
        raise LayerUnavailable(f"{INTERPRETER} not found", "apt-get install python3")
    try:
        check_available()
    except LibseccompError as error:
        raise LayerUnavailable(str(error), "apt-get install libseccomp2") from error
    blocked = blocking_directory(paths.code, tool)
    if blocked is not None:
        raise LayerUnavailable(
            f"{blocked} ({stat.filemode(blocked.stat().st_mode)}) is closed to the tool uid "
            f"{tool.uid}, so bwrap cannot mount the run's files",
            "use a work directory every user can traverse (the default, /var/tmp/analyst)",
        )
    return BwrapReadings(
        path=path,
        version=version_text,
        version_tuple=version,
        minimum_version=MIN_BWRAP_VERSION,
        required_options=required,
        offered_options=frozenset(offered),
        max_user_namespaces=max_userns,
    )


def _run_text(argv: list[str]) -> str:
    try:
        completed = subprocess.run(
            argv, capture_output=True, timeout=10, env=BWRAP_ENVIRONMENT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise LayerUnavailable(
            f"{' '.join(argv)} did not run ({error})", "reinstall bubblewrap"
        ) from error
    return (completed.stdout + completed.stderr).decode("utf-8", "replace")


def _bwrap_version(path: str) -> tuple[str, tuple[int, ...]]:
    text = _run_text([path, "--version"]).strip()
    match = re.fullmatch(r"bubblewrap (\d+)\.(\d+)\.(\d+)", text)
    if match is None:
        raise LayerUnavailable(f"{path} --version printed {text!r}", "reinstall bubblewrap")
    return text, tuple(int(part) for part in match.groups())


def required_options(argv: Sequence[str]) -> tuple[str, ...]:
    """Every option the policy vector uses, plus the per-call seccomp option."""
    used = {token for token in argv[1:] if token.startswith("--")}
    return tuple(sorted(used | {"--add-seccomp-fd"}))


def start_failure(error: ToolRunError) -> LayerUnavailable:
    """The first tool process did not start: say which prerequisite bwrap's words point at."""
    text = str(error)
    if "proc" in text and "Operation not permitted" in text:
        return LayerUnavailable(
            f"bwrap cannot mount a procfs for the tool's pid namespace ({text})",
            "run the container privileged, or where /proc is not masked",
        )
    if "No space left on device" in text or "Creating new namespace failed" in text:
        return LayerUnavailable(
            f"bwrap cannot create the tool's namespaces ({text})",
            "raise user.max_user_namespaces (sysctl -w user.max_user_namespaces=128)",
        )
    return LayerUnavailable(f"bwrap could not start a tool process; bwrap's own words: {text}")
