"""Renders the bwrap argument vector for one role: pure, it never touches the filesystem."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from app.core.roles import Role
from app.core.run_tree import INTERPRETER, WORKER_PACKAGE

# The namespaces the tool process gets, each named on its own: --unshare-all is best-effort
# (a namespace the kernel refuses is silently skipped), a named one makes bwrap fail instead.
# bwrap always makes a mount namespace, so "mnt" needs no switch.
NAMESPACES: tuple[str, ...] = ("user", "pid", "net", "ipc", "uts")

# The id the tool process has inside its user namespace, whoever starts bwrap.
SANDBOX_ID = 1000

# Where things appear inside the sandbox.
CODE_MOUNT = "/opt/analyst"
INPUT_MOUNT = "/input"
OUTPUT_MOUNT = "/output"
SCRATCH_MOUNT = "/tmp"
SCRATCH_BYTES = 16 * 1024 * 1024

# The whole environment a tool process starts with; --clearenv drops everything else.
BASE_ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("PATH", "/usr/bin:/bin"),
    ("HOME", SCRATCH_MOUNT),
    # A UTF-8 locale set explicitly, so Python does not coerce one (and add LC_CTYPE) itself.
    ("LANG", "C.UTF-8"),
    ("PYTHONPATH", CODE_MOUNT),
    # /opt/analyst is read-only; do not even try to write bytecode there.
    ("PYTHONDONTWRITEBYTECODE", "1"),
)
# bwrap adds PWD itself, from --chdir.
DERIVED_ENVIRONMENT: tuple[str, ...] = ("PWD",)

# The host's /usr merge: these are symlinks into /usr, not mounts of their own.
USR_SYMLINKS: tuple[tuple[str, str], ...] = (
    ("usr/bin", "/bin"),
    ("usr/sbin", "/sbin"),
    ("usr/lib", "/lib"),
    ("usr/lib64", "/lib64"),
)

# The options this module emits that mount something; their last operand is the destination.
_MOUNT_OPTIONS = frozenset({"--bind", "--ro-bind", "--proc", "--dev", "--tmpfs"})
# How many operands each option this module emits takes, so a walk never reads an operand
# (a hostname, an environment value) as an option.
_OPERANDS: dict[str, int] = {
    "--bind": 2,
    "--ro-bind": 2,
    "--symlink": 2,
    "--setenv": 2,
    "--proc": 1,
    "--dev": 1,
    "--tmpfs": 1,
    "--uid": 1,
    "--gid": 1,
    "--cap-drop": 1,
    "--hostname": 1,
    "--perms": 1,
    "--size": 1,
    "--remount-ro": 1,
    "--chdir": 1,
    "--add-seccomp-fd": 1,
}


@dataclass(frozen=True)
class BubblewrapPolicy:
    """The knobs of the argument vector; every default is the secure value.

    Tests turn one knob at a time to prove that the check watching it fails.
    """

    unshare_net: bool = True
    disable_userns: bool = True
    input_writable: bool = False
    # (host source, sandbox destination) pairs mounted read-only in addition to the base list.
    extra_ro_binds: tuple[tuple[str, str], ...] = ()
    # (name, value) pairs set in addition to BASE_ENVIRONMENT.
    extra_env: tuple[tuple[str, str], ...] = ()
    # Whether the baseline seccomp filter is passed; the launcher appends its fd per call.
    seccomp: bool = True


def hostname_for(role: Role) -> str:
    return f"analyst-{role}"


def bwrap_argv(
    policy: BubblewrapPolicy,
    *,
    role: Role,
    input_dir: PurePosixPath,
    output_dir: PurePosixPath,
    code_dir: PurePosixPath,
) -> list[str]:
    """The argument vector for one role, without the per-call seccomp fds and command."""
    argv = ["bwrap"]

    # --- namespaces -------------------------------------------------------------------------
    argv += [f"--unshare-{ns}" for ns in NAMESPACES if ns != "net" or policy.unshare_net]
    if policy.disable_userns:
        # The child may not create a further user namespace (its limit is set to zero), and
        # bwrap refuses to start at all if it could not make that so.
        argv += ["--disable-userns", "--assert-userns-disabled"]

    # --- identity and privilege -------------------------------------------------------------
    argv += ["--uid", str(SANDBOX_ID), "--gid", str(SANDBOX_ID)]
    # Empties the bounding set too, so no later exec can regain a capability; bwrap also
    # sets no_new_privs for every child it starts.
    argv += ["--cap-drop", "ALL"]
    # setsid(): the child cannot push input into the controller's terminal (TIOCSTI);
    # PR_SET_PDEATHSIG: the child dies with bwrap, so a timed-out call leaves nothing behind.
    argv += ["--new-session", "--die-with-parent"]
    argv += ["--hostname", hostname_for(role)]

    # --- environment ------------------------------------------------------------------------
    # bwrap applies --clearenv and --setenv as it parses them: every --setenv must follow
    # --clearenv, or it is wiped.
    argv += ["--clearenv"]
    for name, value in (*BASE_ENVIRONMENT, *policy.extra_env):
        argv += ["--setenv", name, value]

    # --- filesystem: the child's root starts as an empty tmpfs ------------------------------
    # Mount operations run in the order given; each destination's parent must already exist
    # in the new root, so system paths come before anything nested.
    argv += ["--ro-bind", "/usr", "/usr"]
    for target, link in USR_SYMLINKS:
        argv += ["--symlink", target, link]
    argv += ["--ro-bind", str(code_dir), CODE_MOUNT]
    for source, destination in policy.extra_ro_binds:
        argv += ["--ro-bind", source, destination]
    # A procfs for the child's own pid namespace (it sees no other process) and a minimal
    # /dev of a few device nodes.
    argv += ["--proc", "/proc", "--dev", "/dev"]
    # --perms and --size apply only to the one operation that follows them.
    argv += ["--perms", "0700", "--size", str(SCRATCH_BYTES), "--tmpfs", SCRATCH_MOUNT]

    # --- the role's workspace: the only per-role part ---------------------------------------
    argv += ["--bind" if policy.input_writable else "--ro-bind", str(input_dir), INPUT_MOUNT]
    argv += ["--bind", str(output_dir), OUTPUT_MOUNT]

    # --- finishing ----------------------------------------------------------------------------
    # Must follow every mount above: each one may have created its mount point on the root
    # tmpfs, which is made read-only only once they all exist.
    argv += ["--remount-ro", "/"]
    argv += ["--chdir", OUTPUT_MOUNT]
    return argv


def per_call_args(seccomp_fds: Sequence[int | str], action: str, args: Sequence[str]) -> list[str]:
    """What one call appends to the role's vector: its seccomp fds, then the command.

    The fds are numbers at run time; the committed policy renders them as placeholders.
    """
    tail: list[str] = []
    # bwrap stacks the filters in this order and loads them just before exec, after its own
    # mounts, so the filters never restrict bwrap itself.
    for fd in seccomp_fds:
        tail += ["--add-seccomp-fd", str(fd)]
    return [*tail, "--", INTERPRETER, "-m", WORKER_PACKAGE, action, *args]


def mount_destinations(argv: Sequence[str]) -> list[str]:
    """The sandbox paths a vector mounts something on, in order (symlinks and dirs excluded)."""
    destinations = []
    index = 1  # argv[0] is the program
    while index < len(argv) and argv[index] != "--":
        option = argv[index]
        operands = _OPERANDS.get(option, 0)
        if option in _MOUNT_OPTIONS:
            destinations.append(argv[index + operands])
        index += 1 + operands
    return destinations


def expected_environment(policy: BubblewrapPolicy) -> list[str]:
    """The sorted variable names a child started under this policy should hold."""
    names = {name for name, _ in (*BASE_ENVIRONMENT, *policy.extra_env)}
    return sorted(names | set(DERIVED_ENVIRONMENT))
