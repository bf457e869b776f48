"""The bubblewrap layer's part of the catalogue: its own checks and sections, each section's
checks in the order a run makes them (the sections' own order is order.py's).

The layer-neutral checks (the package's own module) stand in these sections under their shared
ids; the ids here that begin ``bubblewrap.`` are this layer's alone.
"""

from __future__ import annotations

from typing import Final

from app.core.catalogue import Check, Section, each, unless, when
from app.core.roles import ROLES
from app.tools import catalogue as common
from app.tools.attacks import FILTER_SAMPLES

STACKED_SYSCALLS: Final = ("getppid", "uname")
_SAMPLES: Final = ", ".join(FILTER_SAMPLES)

# --- layer: which bwrap, the controller, and what the reader got ------------------------------

PINNED_VERSION: Final = Check(
    "bubblewrap.bwrap.pinned-version", "bwrap reports the pinned version: {version}"
)
BUILD_RECORD: Final = Check(
    "bubblewrap.bwrap.build-record",
    "the image records the pinned source bwrap was built from: {tag}, commit {commit}",
)
BWRAP_OPTIONS: Final = Check(
    "bubblewrap.bwrap.version",
    "bwrap is at least {minimum} and offers all {count} options the argument vectors use, "
    "--disable-userns and --add-seccomp-fd among them",
)
USERNS_ALLOWED: Final = Check(
    "bubblewrap.userns.allowed",
    "the kernel lets an unprivileged process create user namespaces",
)
ROOT_CONTROLLER: Final = Check(
    "bubblewrap.controller.root",
    "the controller is root here, trusted and unconfined, so it drops every tool process to "
    "uid/gid {uid}/{gid} before it execs bwrap",
)
UNPRIVILEGED_CONTROLLER: Final = Check(
    "bubblewrap.controller.unprivileged",
    "the controller runs as uid {uid}, gid {gid} and holds no capability it could use",
)
READER_STARTS: Final = Check(
    "bubblewrap.reader.starts",
    "the reader starts under its argument vector and reports what it got, read from its own /proc",
)
READER_IDS: Final = Check(
    "bubblewrap.reader.ids",
    "the reader runs as uid/gid {id}, and its user namespace maps that one id alone",
)
HOST_IDENTITY: Final = Check(
    "bubblewrap.reader.host-identity",
    "and on the host that id is the unprivileged uid/gid {uid}/{gid}, never 0: the reader writes "
    "its own output file, which the controller made for that uid alone, and sees it as its own "
    "while holding no capability that could override its mode",
)
CAPABILITIES: Final = Check(
    "bubblewrap.reader.capabilities", "the reader holds no capability in any of the five sets"
)
NO_NEW_PRIVS: Final = Check(
    "bubblewrap.reader.no-new-privs", "no exec can raise the reader's privileges: NoNewPrivs is 1"
)
SECCOMP: Final = Check(
    "bubblewrap.reader.seccomp",
    "the reader runs under exactly one seccomp filter of its own, the baseline this controller "
    "compiled{inherited}",
)
NAMESPACE: Final = Check("bubblewrap.namespaces.{ns}", "the reader has its own {ns} namespace")
HOSTNAME: Final = Check(
    "bubblewrap.reader.hostname",
    "the reader has a hostname of its own, {hostname}, not the controller's",
)
MOUNTS: Final = Check(
    "bubblewrap.reader.mounts",
    "the reader's whole mount list is exactly the mounts its argument vector names",
)
MOUNTS_HIDE: Final = Check(
    "bubblewrap.reader.mounts-hide-secrets",
    "so no mount in it is at, above or below the directory of the supplier key, of the AWS "
    "credential, or of another role's files",
)
ENVIRONMENT: Final = Check(
    "bubblewrap.reader.environment",
    "the reader's whole environment is the variables its argument vector sets after "
    "--clearenv, and the PWD bwrap derives from --chdir; {bwrap_only}, set in bwrap's own "
    "environment for this call, is not among them",
)
ENVIRONMENT_CONTROL: Final = Check(
    "bubblewrap.environment.control",
    "control: started without --clearenv, the reader inherits {bwrap_only} from bwrap's own "
    "environment",
)
WORKING_DIRECTORY: Final = Check(
    "bubblewrap.reader.working-directory",
    "the reader's working directory is {directory}, the read-only code directory: the "
    "interpreter puts it first on the import path, and the reader cannot plant a module there",
)
SESSION: Final = Check(
    "bubblewrap.reader.session",
    "the reader is in a session of its own, led inside its sandbox, so no terminal of the "
    "controller's session is its controlling terminal",
)
SESSION_CONTROL: Final = Check(
    "bubblewrap.session.control",
    "control: started without --new-session, the reader is in the controller's session, whose "
    "leader its pid namespace cannot see: getsid(0) is 0",
)
PARENT_DEATH: Final = Check(
    "bubblewrap.reader.parent-death",
    "the reader is killed when its parent dies: PR_GET_PDEATHSIG is {signal} (SIGKILL)",
)
PARENT_DEATH_CONTROL: Final = Check(
    "bubblewrap.parent-death.control",
    "control: started without --die-with-parent, its parent's death sends it nothing: "
    "PR_GET_PDEATHSIG is 0",
)
SCRATCH_OWN: Final = Check(
    "bubblewrap.scratch.own", "the reader's /tmp is its own: mode {mode}, owner uid {uid}"
)
SCRATCH_SIZE: Final = Check(
    "bubblewrap.scratch.size",
    "the reader's /tmp is a tmpfs of {size}, so what it keeps in memory there is bounded",
)
SCRATCH_CONTROL: Final = Check(
    "bubblewrap.scratch.control",
    "control: started without --size, the reader writes {fill} bytes to /tmp, in files of at "
    "most {limit}",
)
SCRATCH_FULL: Final = Check(
    "bubblewrap.scratch.full",
    "so the same write in the reader's /tmp stops at its {size}: ENOSPC",
)
ROOT_CONTROL: Final = Check(
    "bubblewrap.root.control",
    "control: started without --remount-ro /, the reader creates {probe} on its root, a tmpfs "
    "with no size limit",
)
ROOT_READ_ONLY: Final = Check(
    "bubblewrap.root.read-only",
    "so the reader cannot create {probe} on its root, which --remount-ro / made read-only: EROFS",
)
SAME_AS_READER: Final = Check(
    "bubblewrap.{role}.same-as-reader",
    "the {role} starts under its argument vector and got what the reader got, read the same way",
)

LAYER: Final = Section(
    "layer",
    PINNED_VERSION,
    BUILD_RECORD,
    BWRAP_OPTIONS,
    USERNS_ALLOWED,
    when("root", ROOT_CONTROLLER),
    unless("root", UNPRIVILEGED_CONTROLLER),
    READER_STARTS,
    READER_IDS,
    HOST_IDENTITY,
    CAPABILITIES,
    NO_NEW_PRIVS,
    SECCOMP,
    each("ns", ("user", "pid", "net", "ipc", "uts", "mnt"), NAMESPACE),
    HOSTNAME,
    MOUNTS,
    MOUNTS_HIDE,
    ENVIRONMENT,
    ENVIRONMENT_CONTROL,
    common.NO_CREDENTIAL_VARIABLES,
    WORKING_DIRECTORY,
    SESSION,
    SESSION_CONTROL,
    PARENT_DEATH,
    PARENT_DEATH_CONTROL,
    SCRATCH_OWN,
    SCRATCH_SIZE,
    SCRATCH_CONTROL,
    SCRATCH_FULL,
    ROOT_CONTROL,
    ROOT_READ_ONLY,
    each("role", ROLES[1:], SAME_AS_READER),
)

# --- files ------------------------------------------------------------------------------------

SAME_FILE: Final = Check(
    "bubblewrap.reader.same-file",
    "the reader's own open of its input case.json reaches the controller's file: the same "
    "device and inode on both sides",
)

FILES: Final = common.files(after_case=(SAME_FILE,))

# --- process: what the kernel refuses, beside the switch that refuses it ----------------------

USERNS_CONTROL: Final = Check(
    "process.userns.control",
    "control: a child started without --disable-userns may create a further user namespace",
)
USERNS_REFUSED: Final = Check(
    "process.userns.reader",
    "so what refuses the reader a further user namespace is --disable-userns: ENOSPC",
)
BASELINE_CONTROL: Final = Check(
    "process.baseline.control",
    f"control: with no seccomp filter, the reader's {_SAMPLES} calls (numbered by libseccomp) "
    "reach the kernel, which answers them itself",
)
BASELINE_REFUSES: Final = Check(
    "process.baseline.reader", f"so the baseline filter is what refuses {_SAMPLES}: EPERM"
)
UNSTACKED: Final = Check(
    "bubblewrap.stacking.{syscall}.alone",
    "{syscall} (syscall {number}, numbered by libseccomp) succeeds in the reader under the "
    "baseline filter alone",
)
STACKED_COUNT: Final = Check(
    "bubblewrap.stacking.count",
    "with one filter for getppid and one for uname added, the reader holds three stacked "
    "seccomp filters of its own{inherited}",
)
STACKED_REFUSES: Final = Check(
    "bubblewrap.stacking.{syscall}.refused",
    "and with both added, {syscall} is refused by its filter: EPERM",
)
ORPHAN_CONTROL: Final = Check(
    "bubblewrap.orphan.control",
    "control: started without --die-with-parent, a reader whose bwrap is killed with SIGKILL "
    "(as a timeout kills it) lives on, and answers once released",
)
ORPHAN_GONE: Final = Check(
    "bubblewrap.orphan.killed",
    "so a reader whose bwrap is killed is gone with it: every process of its sandbox closed its "
    "output, and it never answered",
)

PROCESS: Final = Section(
    "process",
    USERNS_CONTROL,
    USERNS_REFUSED,
    BASELINE_CONTROL,
    BASELINE_REFUSES,
    each("syscall", STACKED_SYSCALLS, UNSTACKED),
    STACKED_COUNT,
    each("syscall", STACKED_SYSCALLS, STACKED_REFUSES),
    ORPHAN_CONTROL,
    ORPHAN_GONE,
)

# --- network: loopback alone, and no route to anything -----------------------------------------

SUPPLIER_CONTROL: Final = Check(
    "bubblewrap.network.supplier.control",
    "control: the controller itself reaches the supplier API at {address}:{port}",
)
ROUTE_CONTROL: Final = Check(
    "bubblewrap.network.route.control",
    "control: the controller's own kernel has a route to {address} (TEST-NET-1), shown by a UDP "
    "connect(), which sends no packet",
)
LOOPBACK_ONLY: Final = Check(
    "bubblewrap.network.{role}.loopback-only",
    "the {role}'s network namespace holds loopback alone: ['lo']",
)
SUPPLIER_REFUSED: Final = Check(
    "bubblewrap.network.{role}.supplier-refused",
    "so the supplier's {address}:{port}, live for the controller, is refused in the {role}'s own "
    "network namespace, whose {address} is its own loopback with nothing listening: ECONNREFUSED",
)
SUPPLIER_UNREACHABLE: Final = Check(
    "bubblewrap.network.{role}.supplier-unreachable",
    "so the {role} has no route to the supplier's {address}:{port}, which the controller "
    "reaches: ENETUNREACH",
)
NO_ROUTE: Final = Check(
    "bubblewrap.network.{role}.no-route",
    "and beyond its loopback the {role} has no route at all, not even to {address}:{port}, "
    "which the controller's kernel routes: ENETUNREACH",
)

# Locally the supplier is on loopback, which every network namespace has of its own: there
# "no route beyond loopback" is shown against an address the controller routes.
NETWORK: Final = Section(
    "network",
    SUPPLIER_CONTROL,
    when("loopback", ROUTE_CONTROL),
    each(
        "role",
        ROLES,
        LOOPBACK_ONLY,
        when("loopback", SUPPLIER_REFUSED, NO_ROUTE),
        unless("loopback", SUPPLIER_UNREACHABLE),
    ),
)

# --- business: the draft, which the controller submits itself ---------------------------------

DRAFT_SUBMITTED: Final = Check(
    "business.draft.submitted",
    "the controller submits the writer's draft itself, and the supplier API accepts it: 201",
)
SUBMISSION: Final = (*common.DRAFT_VERIFIED, DRAFT_SUBMITTED)
