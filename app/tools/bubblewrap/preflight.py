"""What bubblewrap needs on this machine or in this pod, as one ordered list of prerequisites.

A run's preflight stops at the first missing piece with one LayerUnavailable naming it and its
fix; `doctor` shows every piece (app/tools/prerequisites.py). The last two are probes: bwrap
itself, at the tool's uid, making the tool's namespaces and then a procfs for its pid namespace,
which is what a container's seccomp profile and masked /proc refuse.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from app.core.errors import LayerUnavailable
from app.core.results import ToolStartFailed
from app.core.run_tree import ToolIdentity
from app.core.tool_environment import LOCALE, SEARCH_PATH
from app.tools.prerequisites import (
    Finding,
    Prerequisite,
    holds,
    interpreter,
    missing,
    require,
    work_directory,
)
from app.tools.seccomp import LIBSECCOMP, LibseccompError, check_available

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
        "granting bwrap `userns`",
    ),
)
# What bwrap itself needs in its environment; the controller's own (AWS, keys) never
# reaches even bwrap, quite apart from --clearenv.
BWRAP_ENVIRONMENT: Final = {"PATH": SEARCH_PATH, "LANG": LOCALE}
PROBE_TIMEOUT_SECONDS: Final = 10

# The two probes: the tool's namespaces, then a procfs in its pid namespace. A minimal root of
# /usr and its symlinks, so /usr/bin/true can run; nothing of the run is mounted.
_PROBE_ROOT: Final = (
    "--ro-bind", "/usr", "/usr",
    "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64",
    "--symlink", "usr/bin", "/bin",
)  # fmt: skip
_NAMESPACES_PROBE: Final = (
    "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
)  # fmt: skip

BWRAP_FOUND = "bwrap is on PATH"
USERNS_ALLOWED = "the kernel lets an unprivileged process create user namespaces"
NAMESPACES_MADE = "bwrap makes the tool's user, pid, network, IPC and UTS namespaces"


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


def required_options(argv: Sequence[str]) -> tuple[str, ...]:
    """Every option the policy vector uses, plus the per-call seccomp option."""
    used = {token for token in argv[1:] if token.startswith("--")}
    return tuple(sorted(used | {"--add-seccomp-fd"}))


class BwrapPrerequisites:
    """The bubblewrap layer's prerequisites for one tool identity, policy vector and directory.

    The checks run in order and remember what they found (bwrap's path, version, options), so
    a passing preflight hands the layer its readings without asking bwrap twice.
    """

    def __init__(self, policy_argv: Sequence[str], tool: ToolIdentity, directory: Path) -> None:
        self.required = required_options(policy_argv)
        self.tool = tool
        self.directory = directory
        self._path: str | None = None
        self._version: tuple[str, tuple[int, ...]] | None = None
        self._offered: frozenset[str] = frozenset()
        self._max_userns = 0

    def items(self) -> list[Prerequisite]:
        minimum = dotted(MIN_BWRAP_VERSION)
        return [
            Prerequisite(BWRAP_FOUND, self._found),
            Prerequisite(
                f"bwrap is at least {minimum}, the first with --disable-userns",
                self._new_enough,
                after=(BWRAP_FOUND,),
            ),
            Prerequisite(
                f"bwrap offers all {len(self.required)} options the argument vectors use",
                self._offers_options,
                after=(BWRAP_FOUND,),
            ),
            Prerequisite(USERNS_ALLOWED, self._userns_allowed),
            *[
                Prerequisite(
                    f"{switch} does not refuse unprivileged user namespaces",
                    self._switch(switch, refusing, fix),
                )
                for switch, refusing, fix in USERNS_SWITCHES
            ],
            Prerequisite(f"libseccomp ({LIBSECCOMP}) loads", self._libseccomp),
            interpreter(),
            work_directory(self.directory, self.tool),
            Prerequisite(
                NAMESPACES_MADE,
                self._probe_namespaces,
                after=(BWRAP_FOUND, USERNS_ALLOWED),
            ),
            Prerequisite(
                "bwrap mounts a procfs for the tool's pid namespace",
                self._probe_procfs,
                after=(BWRAP_FOUND, USERNS_ALLOWED, NAMESPACES_MADE),
            ),
        ]

    def require(self) -> BwrapReadings:
        """Every prerequisite holds, or LayerUnavailable names the first that does not."""
        require(self.items())
        assert self._path is not None and self._version is not None
        return BwrapReadings(
            path=self._path,
            version=self._version[0],
            version_tuple=self._version[1],
            minimum_version=MIN_BWRAP_VERSION,
            required_options=self.required,
            offered_options=self._offered,
            max_user_namespaces=self._max_userns,
        )

    # --- bwrap itself ---------------------------------------------------------------------------

    def _found(self) -> Finding:
        self._path = shutil.which("bwrap")
        if self._path is None:
            return missing("bwrap not found on PATH", "apt-get install bubblewrap")
        return holds(self._path)

    def _new_enough(self) -> Finding:
        assert self._path is not None
        text = _output([self._path, "--version"]).strip()
        match = re.fullmatch(r"bubblewrap (\d+)\.(\d+)\.(\d+)", text)
        if match is None:
            return missing(f"{self._path} --version printed {text!r}", "reinstall bubblewrap")
        self._version = (text, tuple(int(part) for part in match.groups()))
        if self._version[1] < MIN_BWRAP_VERSION:
            return missing(
                f"{text} is older than {dotted(MIN_BWRAP_VERSION)}, the first with "
                "--disable-userns",
                "install a newer bubblewrap (Debian 12: apt-get install bubblewrap)",
            )
        return holds(text)

    def _offers_options(self) -> Finding:
        assert self._path is not None
        help_text = _output([self._path, "--help"])
        self._offered = frozenset(re.findall(r"^\s+(--[a-z0-9-]+)", help_text, re.MULTILINE))
        absent = [option for option in self.required if option not in self._offered]
        if absent:
            return missing(
                f"{self._path} lacks {', '.join(absent)}",
                f"install bubblewrap >= {dotted(MIN_BWRAP_VERSION)}",
            )
        return holds(
            f"{self._path} --help lists each, --disable-userns and --add-seccomp-fd among them"
        )

    # --- the kernel -----------------------------------------------------------------------------

    def _userns_allowed(self) -> Finding:
        self._max_userns = int(MAX_USER_NAMESPACES.read_text().strip())
        if self._max_userns == 0:
            return missing(
                f"user namespaces are disabled ({MAX_USER_NAMESPACES} is 0)",
                "sysctl -w user.max_user_namespaces=128 (isolated-sandbox: the pod's init "
                "container does it; hardened-container: the node's setting)",
            )
        return holds(f"{MAX_USER_NAMESPACES} is {self._max_userns}")

    @staticmethod
    def _switch(switch: Path, refusing: str, fix: str) -> Callable[[], Finding]:
        def check() -> Finding:
            if not switch.exists():
                return holds("this kernel has no such switch")
            value = switch.read_text().strip()
            if value == refusing:
                return missing(
                    f"unprivileged user namespaces are refused ({switch} is {refusing})", fix
                )
            return holds(f"it is {value}")

        return check

    @staticmethod
    def _libseccomp() -> Finding:
        try:
            check_available()
        except LibseccompError as error:
            return missing(str(error), "apt-get install libseccomp2")
        return holds(LIBSECCOMP)

    # --- the probes -----------------------------------------------------------------------------

    def _probe_namespaces(self) -> Finding:
        failure = self._probe([*_NAMESPACES_PROBE, *_PROBE_ROOT])
        if failure:
            return missing(
                f"bwrap cannot make the tool's namespaces here; its own words: {failure}",
                "in a container: a seccomp profile that allows them (runtimeTarget "
                "hardened-container's, policies/bubblewrap/container-seccomp.json); on a host: "
                "allow unprivileged user namespaces",
            )
        return holds("at the tool's uid, as a run makes them")

    def _probe_procfs(self) -> Finding:
        failure = self._probe([*_NAMESPACES_PROBE, *_PROBE_ROOT, "--proc", "/proc"])
        if failure:
            return missing(
                f"bwrap cannot mount a procfs for the tool's pid namespace; its own words: "
                f"{failure}",
                "in Kubernetes: procMount: Unmasked with hostUsers: false (runtimeTarget "
                "hardened-container), or a privileged container (isolated-sandbox)",
            )
        return holds("at the tool's uid: this /proc is not masked")

    def _probe(self, options: Sequence[str]) -> str:
        """Runs bwrap with ``options`` and /usr/bin/true at the tool's uid; '' when it works,
        else what bwrap said (or why it did not run)."""
        assert self._path is not None
        try:
            completed = subprocess.run(
                [self._path, *options, "/usr/bin/true"],
                capture_output=True,
                timeout=PROBE_TIMEOUT_SECONDS,
                env=BWRAP_ENVIRONMENT,
                cwd="/",
                check=False,
                **self.tool.process_identity(),
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"bwrap did not run ({error})"
        if completed.returncode == 0:
            return ""
        words = completed.stderr.decode("utf-8", "replace").strip()
        return words or f"exit status {completed.returncode}"


def _output(argv: list[str]) -> str:
    try:
        completed = subprocess.run(
            argv,
            capture_output=True,
            timeout=PROBE_TIMEOUT_SECONDS,
            env=BWRAP_ENVIRONMENT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"did not run: {error}"
    return (completed.stdout + completed.stderr).decode("utf-8", "replace")


def start_failure(error: ToolStartFailed) -> LayerUnavailable:
    """Every prerequisite held and still the controller could not exec bwrap for the first
    tool process."""
    return LayerUnavailable(f"bwrap could not be started: {error}", "reinstall bubblewrap")
