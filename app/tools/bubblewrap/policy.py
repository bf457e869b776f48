"""Renders the bwrap argument vector for one role: pure, it never touches the filesystem.

The vector is built as a list of named elements (an option with its operands), so that each
one can be accounted for (see accounting.py) and left out on purpose by the tests that show
the run fails without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from app.core.roles import Role
from app.core.run_tree import OUTPUT_FILES, WORKER_COMMAND
from app.core.tool_environment import tool_environment
from app.core.tool_limits import tool_limits
from app.tools.seccomp_policy import GROUP_ELEMENTS

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
SCRATCH_MODE = 0o700

# The whole environment a tool process starts with; --clearenv drops everything else: every
# layer's tool environment, with the code where the sandbox mounts it, and a HOME, its own /tmp.
_TOOL_ENVIRONMENT = tool_environment(CODE_MOUNT)
BASE_ENVIRONMENT: tuple[tuple[str, str], ...] = (
    ("PATH", _TOOL_ENVIRONMENT["PATH"]),
    ("HOME", SCRATCH_MOUNT),
    *((name, value) for name, value in _TOOL_ENVIRONMENT.items() if name != "PATH"),
)
# bwrap adds PWD itself, from --chdir.
DERIVED_ENVIRONMENT: tuple[str, ...] = ("PWD",)

# The host's /usr merge, as far as the interpreter needs it: the dynamic loader is
# /lib64/ld-linux-x86-64.so.2, a link that resolves through /lib. Nothing needs /bin or /sbin.
USR_SYMLINKS: tuple[tuple[str, str], ...] = (
    ("usr/lib", "/lib"),
    ("usr/lib64", "/lib64"),
)

# The per-call elements: the baseline filter's fd for bwrap, and the loader's limit options
# (app/tools/loader.py), which it sets in the tool's process before the worker's first import.
SECCOMP_ELEMENT = "--add-seccomp-fd"

# The options this module emits that mount something; their last operand is the destination.
_MOUNT_OPTIONS = frozenset({"--bind", "--ro-bind", "--proc", "--tmpfs"})
# How many operands each option this module emits takes, so a walk never reads an operand
# (a hostname, an environment value) as an option.
_OPERANDS: dict[str, int] = {
    "--bind": 2,
    "--ro-bind": 2,
    "--symlink": 2,
    "--setenv": 2,
    "--proc": 1,
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
class Element:
    """One option of the vector with its operands, under a name that is the same in every run
    (the option and, where it has one, the sandbox path or variable it acts on)."""

    key: str
    argv: tuple[str, ...]


@dataclass(frozen=True)
class RolePaths:
    """Where a role's workspace and the staged code are on the host."""

    input_dir: PurePosixPath
    output_dir: PurePosixPath
    code_dir: PurePosixPath


# A role's vector as named elements, in order: the shipped builder, or one a test changes on
# purpose (tests/support/policy_changes.py).
ElementsFor = Callable[[Role, RolePaths], Iterable[Element]]


def shipped_elements(role: Role, paths: RolePaths) -> Iterable[Element]:
    return elements(
        role=role, input_dir=paths.input_dir, output_dir=paths.output_dir, code_dir=paths.code_dir
    )


@dataclass(frozen=True)
class BubblewrapPolicy:
    """The vectors the layer applies: each role's elements, less those left out.

    Elements are left out by key: of every role's vector (``omit``: a control call's), or of
    one role's (``omit_for``: what ``--break`` and the removal tests take away).
    """

    elements_for: ElementsFor = shipped_elements
    omit: frozenset[str] = frozenset()
    omit_for: frozenset[tuple[Role, str]] = frozenset()

    def omits(self, role: Role, key: str) -> bool:
        return key in self.omit or (role, key) in self.omit_for

    def passes_seccomp(self, role: Role) -> bool:
        return not self.omits(role, SECCOMP_ELEMENT)

    def filter_groups_left_out(self, role: Role) -> frozenset[str]:
        """The baseline's rule groups (its GROUP_ELEMENTS) left out of ``role``'s filter."""
        return frozenset(
            group for group in GROUP_ELEMENTS if self.omits(role, filter_group_key(group))
        )

    def limits(self, role: Role) -> list[tuple[str, int]]:
        """The loader's limit options for ``role``'s calls, with their values (tool-limits.json):
        each an element of the per-call part, after the worker's module name."""
        return [
            (limit.option, limit.value)
            for limit in tool_limits().all()
            if not self.omits(role, limit.option)
        ]


def hostname_for(role: Role) -> str:
    return f"analyst-{role}"


def _element(*argv: str, key: str | None = None) -> Element:
    return Element(key or argv[0], argv)


def _mount(option: str, source: str, destination: str) -> Element:
    return Element(f"{option} {destination}", (option, source, destination))


def elements(
    *,
    role: Role,
    input_dir: PurePosixPath,
    output_dir: PurePosixPath,
    code_dir: PurePosixPath,
) -> Iterator[Element]:
    """The role's vector as named elements, in order, before any is left out."""
    # --- namespaces -------------------------------------------------------------------------
    for ns in NAMESPACES:
        yield _element(f"--unshare-{ns}")
    # The child may not create a further user namespace (bwrap sets the limit and then checks
    # that an unshare fails), and bwrap refuses to start if it could not.
    yield _element("--disable-userns")
    yield _element("--assert-userns-disabled")

    # --- identity and privilege -------------------------------------------------------------
    yield _element("--uid", str(SANDBOX_ID))
    yield _element("--gid", str(SANDBOX_ID))
    # Empties the bounding set too, so no later exec can regain a capability; bwrap also
    # sets no_new_privs for every child it starts.
    yield _element("--cap-drop", "ALL")
    # setsid(): the child is not in the controller's session, so it has no terminal of it;
    # PR_SET_PDEATHSIG: the child dies with bwrap, so a timed-out call leaves nothing behind.
    yield _element("--new-session")
    yield _element("--die-with-parent")
    yield _element("--hostname", hostname_for(role))

    # --- environment ------------------------------------------------------------------------
    # bwrap applies --clearenv and --setenv as it parses them: every --setenv must follow
    # --clearenv, or it is wiped.
    yield _element("--clearenv")
    for name, value in BASE_ENVIRONMENT:
        yield _element("--setenv", name, value, key=f"--setenv {name}")

    # --- filesystem: the child's root starts as an empty tmpfs ------------------------------
    # Mount operations run in the order given; each destination's parent must already exist
    # in the new root, so system paths come before anything nested. There is no /dev: the
    # worker needs no device, and bwrap's --dev would add a writable tmpfs and a devpts.
    yield _mount("--ro-bind", "/usr", "/usr")
    for target, link in USR_SYMLINKS:
        yield Element(f"--symlink {link}", ("--symlink", target, link))
    yield _mount("--ro-bind", str(code_dir), CODE_MOUNT)
    # A procfs for the child's own pid namespace: it sees no other process.
    yield Element("--proc /proc", ("--proc", "/proc"))
    # --perms and --size apply only to the one operation that follows them.
    yield _element("--perms", f"{SCRATCH_MODE:04o}")
    yield _element("--size", str(SCRATCH_BYTES))
    yield Element(f"--tmpfs {SCRATCH_MOUNT}", ("--tmpfs", SCRATCH_MOUNT))

    # --- the role's workspace: the only per-role part ---------------------------------------
    yield _mount("--ro-bind", str(input_dir), INPUT_MOUNT)
    # The output directory itself is read-only; each file the role may write is bound over it
    # writable, so the role can create no file of its own.
    yield _mount("--ro-bind", str(output_dir), OUTPUT_MOUNT)
    for name in OUTPUT_FILES[role]:
        yield _mount("--bind", str(output_dir / name), f"{OUTPUT_MOUNT}/{name}")

    # --- finishing ----------------------------------------------------------------------------
    # Must follow every mount above: each one may have created its mount point on the root
    # tmpfs, which is made read-only only once they all exist.
    yield _element("--remount-ro", "/", key="--remount-ro /")
    # The read-only code directory: `python -m` puts the working directory first on the
    # import path, so it must be one the role cannot write.
    yield _element("--chdir", CODE_MOUNT)


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
    for element in policy.elements_for(role, RolePaths(input_dir, output_dir, code_dir)):
        if not policy.omits(role, element.key):
            argv += element.argv
    return argv


def filter_group_key(group: str) -> str:
    """The element name of one rule group of the baseline filter: a part of the program at the
    filter's fd, which adds no token of its own to the vector."""
    return f"{SECCOMP_ELEMENT} {group}"


def per_call_elements(
    seccomp_fds: Sequence[int | str],
    limits: Sequence[tuple[str, int]],
    groups: Sequence[str] = GROUP_ELEMENTS,
) -> tuple[list[Element], list[Element]]:
    """What one call adds: bwrap's seccomp fds (before the command), each followed by the
    baseline's rule groups it holds (``groups``: elements with no token), and the loader's limit
    options (after the command's code, before the action: app/tools/loader.py)."""
    # bwrap stacks the filters in this order and loads them just before exec, after its own
    # mounts, so the filters never restrict bwrap itself.
    fds = [
        element
        for fd in seccomp_fds
        for element in (
            Element(SECCOMP_ELEMENT, (SECCOMP_ELEMENT, str(fd))),
            *(Element(filter_group_key(group), ()) for group in groups),
        )
    ]
    loader = [_element(option, str(value)) for option, value in limits]
    return fds, loader


def per_call_args(
    seccomp_fds: Sequence[int | str],
    action: str,
    args: Sequence[str],
    limits: Sequence[tuple[str, int]],
) -> list[str]:
    """What one call appends to the role's vector: its seccomp fds, then the command.

    The fds are numbers at run time; the committed policy renders them as placeholders.
    """
    fds, loader = per_call_elements(seccomp_fds, limits)
    head = [token for element in fds for token in element.argv]
    options = [token for element in loader for token in element.argv]
    return [*head, "--", *WORKER_COMMAND, *options, action, *args]


@dataclass(frozen=True)
class Mount:
    """One mount a vector makes: its option, the host path it shows (a bind's; None for a
    tmpfs or a procfs) and the sandbox path it mounts on."""

    option: str
    source: str | None
    destination: str


def mounts(argv: Sequence[str]) -> list[Mount]:
    """The mounts a vector makes, in order (symlinks and dirs excluded): the one walk of an
    argument list, which reads each option's operands by the table above, never an operand (a
    hostname, an environment value) as an option."""
    found = []
    index = 1  # argv[0] is the program
    while index < len(argv) and argv[index] != "--":
        option = argv[index]
        operands = _OPERANDS.get(option, 0)
        if option in _MOUNT_OPTIONS:
            source = argv[index + 1] if operands == 2 else None
            found.append(Mount(option, source, argv[index + operands]))
        index += 1 + operands
    return found


def mount_destinations(argv: Sequence[str]) -> list[str]:
    """The sandbox paths a vector mounts something on, in order (symlinks and dirs excluded)."""
    return [mount.destination for mount in mounts(argv)]


def expected_environment() -> list[str]:
    """The sorted variable names a child started under the shipped policy should hold."""
    names = {name for name, _ in BASE_ENVIRONMENT}
    return sorted(names | set(DERIVED_ENVIRONMENT))
