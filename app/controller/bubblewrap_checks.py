"""The bubblewrap layer's own checks: what a tool process got, and each refusal with its control."""

from __future__ import annotations

import errno
import hashlib
import ipaddress
import os
import socket
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.controller.context import MODEL_KEY_VARIABLES, LayerChecks, RunContext
from app.core.run_tree import ROLES, Role
from app.tools.bubblewrap.argv import (
    INPUT_MOUNT,
    NAMESPACES,
    OUTPUT_MOUNT,
    SANDBOX_ID,
    BubblewrapPolicy,
    expected_environment,
    hostname_for,
    mount_destinations,
)
from app.tools.bubblewrap.seccomp import resolve_syscall, single_syscall_filter
from app.tools.layer import ToolOutcome
from app.tools.worker.system import read_namespaces, read_status

if TYPE_CHECKING:
    from app.tools.bubblewrap.launcher import BubblewrapLayer

CAPABILITY_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
NO_CAPABILITIES = "0000000000000000"
# bwrap always gives the child a mount namespace of its own, so it is checked beside the five
# the argument vector names.
CHECKED_NAMESPACES = (*NAMESPACES, "mnt")
# The syscalls the stacking demo refuses: harmless on purpose (the point is that added filters
# reach the child), and each takes at most the probe's one scratch pointer.
STACKED_SYSCALLS = ("getppid", "uname")
# One syscall the baseline refuses, probed with a zero pid so that, unfiltered, the kernel
# answers harmlessly and deterministically (no process 0 to trace).
BASELINE_SAMPLE = "ptrace"
BASELINE_SAMPLE_KERNEL_ERRNO = "ESRCH"
# TEST-NET-1 (RFC 5737): never routed on the internet. Only a UDP connect(), which sends
# nothing, is made to it from the controller.
NO_ROUTE_PROBE = ("192.0.2.1", 443)
BOUNDARY_FILE = "boundary-check.txt"
IDENTITY_FILE = "identity-check.txt"
MAX_DRAFT_BYTES = 64 * 1024


class BubblewrapChecks(LayerChecks):
    """Called by the orchestrator: before_identity (layer), boundary (files, process, network)
    and submit_draft (business)."""

    def __init__(self, ctx: RunContext, layer: BubblewrapLayer) -> None:
        super().__init__(ctx)
        self.layer = layer
        self.log = ctx.checks
        self.readings: dict[str, Any] = {}

    # --- layer --------------------------------------------------------------------------------

    def before_identity(self) -> None:
        self.log.begin("layer")
        self._check_bwrap()
        self._check_controller()
        tool = self._tool_status("reader")
        self._check_ids(tool)
        self._check_privileges(tool)
        self._check_namespaces(tool)
        self._check_mounts(tool)
        self._check_environment(tool)
        self._record()

    def _check_bwrap(self) -> None:
        readings = self.layer.readings
        missing = [o for o in readings.required_options if o not in readings.offered_options]
        minimum = ".".join(str(part) for part in readings.minimum_version)
        self.log.require(
            readings.version_tuple >= readings.minimum_version and not missing,
            f"bwrap is {readings.version} (at least {minimum}) and offers all "
            f"{len(readings.required_options)} options the argument vectors use, "
            "--disable-userns and --add-seccomp-fd among them",
            detail=f"missing {missing}" if missing else f"version {readings.version}",
        )
        self.log.require(
            readings.max_user_namespaces > 0,
            "the kernel lets an unprivileged process create user namespaces: "
            f"/proc/sys/user/max_user_namespaces is {readings.max_user_namespaces}",
        )

    def _check_controller(self) -> None:
        status = read_status()
        tool = self.ctx.tool
        caps = ", ".join(f"{name} {status[name]}" for name in CAPABILITY_SETS)
        uid, gid = os.geteuid(), os.getegid()
        self.readings["controller_status"] = status
        if uid == 0:
            # Local runs: the controller is root and holds every capability. It is trusted and
            # unconfined by design; what matters is that no tool process inherits that.
            self.log.require(
                tool.uid != 0 and tool.gid != 0,
                f"the controller is root here (uid {uid}, gid {gid}; {caps}), trusted and "
                f"unconfined, so it drops every tool process to uid/gid {tool.uid}/{tool.gid} "
                "before it execs bwrap",
                detail=f"tool identity is {tool.uid}/{tool.gid}",
            )
            return
        self.log.require(
            status["CapEff"] == NO_CAPABILITIES and status["CapPrm"] == NO_CAPABILITIES,
            f"the controller runs as uid {uid}, gid {gid} and holds no capability it could use "
            f"(CapEff {status['CapEff']}, CapPrm {status['CapPrm']}); its other readings: "
            f"CapBnd {status['CapBnd']}, NoNewPrivs {status['NoNewPrivs']}, "
            f"Seccomp {status['Seccomp']}",
            detail=caps,
        )

    def _tool_status(self, role: Role) -> dict[str, Any]:
        result = self.layer.run(role, "proc-status", []).result
        self.readings[f"{role}_proc_status"] = result
        return result

    def _check_ids(self, tool: dict[str, Any]) -> None:
        ids = " ".join([str(SANDBOX_ID)] * 4)  # real, effective, saved, filesystem
        maps = {"uid_map": tool["uid_map"], "gid_map": tool["gid_map"]}
        single = all(
            len(lines) == 1 and lines[0].split()[0::2] == [str(SANDBOX_ID), "1"]
            for lines in maps.values()
        )
        # The map's middle field is relative to the parent user namespace. bwrap nests the
        # child in a second one whenever it mounts a devpts (--dev), mapping 1000 to that
        # intermediate namespace's root; the host identity is read on the host, below.
        nested = any(lines[0].split()[1] == "0" for lines in maps.values() if single and lines)
        self.log.require(
            single and tool["status"]["Uid"] == ids and tool["status"]["Gid"] == ids,
            f"the reader runs as uid/gid {SANDBOX_ID}, and its user namespace maps that one id "
            f"alone: uid_map {tool['uid_map']}, gid_map {tool['gid_map']}"
            + (
                " (the outside 0 is root of the intermediate namespace bwrap nests the child "
                "in to mount /dev/pts, not the host's)"
                if nested
                else ""
            ),
            detail=f"Uid {tool['status']['Uid']}, Gid {tool['status']['Gid']}",
        )
        host = self.ctx.tool
        inside = f"{OUTPUT_MOUNT}/{IDENTITY_FILE}"
        created = self.layer.run("reader", "create-file", [inside, "owner check\n"]).result
        owner = None
        if created["ok"]:
            st = os.lstat(self.ctx.paths.workspace("reader").output / IDENTITY_FILE)
            owner = (st.st_uid, st.st_gid)
        self.log.require(
            owner == (host.uid, host.gid) and 0 not in owner,
            f"and on the host that id is the unprivileged uid/gid {host.uid}/{host.gid}, never "
            f"0: the file the reader creates at {inside} is owned by {host.uid}:{host.gid}",
            detail=f"owner {owner}, create {created}",
        )

    def _check_privileges(self, tool: dict[str, Any]) -> None:
        status = tool["status"]
        readings = ", ".join(f"{name} {status[name]}" for name in CAPABILITY_SETS)
        self.log.require(
            all(status[name] == NO_CAPABILITIES for name in CAPABILITY_SETS),
            f"the reader holds no capability in any of the five sets: {readings}",
        )
        self.log.expect_equal(
            status["NoNewPrivs"],
            "1",
            "no exec can raise the reader's privileges: NoNewPrivs is 1",
        )
        self.log.require(
            status["Seccomp"] == "2" and status["Seccomp_filters"] == "1",
            "the reader runs under exactly one seccomp filter, the baseline this controller "
            "compiled: Seccomp mode 2, Seccomp_filters 1",
            detail=f"Seccomp {status['Seccomp']}, Seccomp_filters {status['Seccomp_filters']}",
        )

    def _check_namespaces(self, tool: dict[str, Any]) -> None:
        own = read_namespaces()
        self.readings["controller_namespaces"] = own
        for ns in CHECKED_NAMESPACES:
            theirs = tool["namespaces"][ns]
            self.log.require(
                theirs != own[ns],
                f"the reader has its own {ns} namespace: {theirs}, not the controller's {own[ns]}",
            )
        expected = hostname_for("reader")
        mine = socket.gethostname()
        self.log.require(
            tool["hostname"] == expected and tool["hostname"] != mine,
            f"the reader has a hostname of its own, {expected}, not the controller's {mine}",
            detail=f"observed {tool['hostname']!r}",
        )

    def _forbidden_dirs(self, role: Role) -> dict[Path, list[str]]:
        """Host directories no mount of `role` may reach, each with what it holds."""
        dirs: dict[Path, list[str]] = {}
        dirs.setdefault(self.ctx.supplier.key_file.parent, []).append("the supplier key")
        dirs.setdefault(self.ctx.aws_credential.path.parent, []).append(
            self.ctx.aws_credential.description
        )
        for other in ROLES:
            if other != role:
                dirs.setdefault(self.ctx.paths.workspace(other).root, []).append(
                    f"the {other}'s files"
                )
        return dirs

    def _check_mounts(self, tool: dict[str, Any]) -> None:
        observed: list[str] = tool["mounts"]
        # The mounts the secure policy names; a mount it does not name is a finding, even if
        # this run's own policy added it.
        named = {"/", *mount_destinations(self.layer.role_argv("reader", BubblewrapPolicy()))}
        # --dev makes a handful of device-node mounts under /dev; they are listed, not named.
        unnamed = [m for m in observed if m not in named and not m.startswith("/dev/")]
        absent = sorted(named - set(observed))
        self.log.require(
            not unnamed and not absent,
            f"the reader's whole mount list is {observed}: exactly the mounts its argument "
            "vector names, plus the device nodes --dev makes under /dev",
            detail=f"not named: {unnamed}, named but absent: {absent}",
        )
        forbidden = self._forbidden_dirs("reader")
        exposed = sorted({m for m in observed for path in forbidden if _overlaps(m, path)})
        self.log.require(
            not exposed,
            f"so no mount in it is at, above or below {_describe_dirs(forbidden)}",
            detail=f"exposed by {exposed}",
        )

    def _check_environment(self, tool: dict[str, Any]) -> None:
        names: list[str] = tool["environment"]
        expected = expected_environment(BubblewrapPolicy())
        self.log.expect_equal(
            names,
            expected,
            f"the reader's whole environment is {names}: the variables its argument vector "
            "sets after --clearenv, and the PWD bwrap derives from --chdir",
        )
        leaked = [n for n in names if n.startswith("AWS_") or n in MODEL_KEY_VARIABLES]
        self.log.require(
            not leaked,
            f"so the reader holds no AWS_ variable and none of {', '.join(MODEL_KEY_VARIABLES)}",
            detail=f"present: {leaked}",
        )

    # --- boundary -----------------------------------------------------------------------------

    def boundary(self) -> None:
        self.log.begin("files")
        self._check_files()
        self.log.begin("process")
        self._check_process()
        self.log.begin("network")
        self._check_network()
        self._record()

    def _check_files(self) -> None:
        case_host = self.ctx.paths.workspace("reader").input / "case.json"
        case_inside = f"{INPUT_MOUNT}/case.json"
        host_bytes = case_host.read_bytes()
        host_sha = hashlib.sha256(host_bytes).hexdigest()

        read = self.layer.run("reader", "read-case", [case_inside]).result
        self.log.require(
            read["sha256"] == host_sha and read["case_id"] == self.ctx.case.case_id,
            f"the reader reads its assigned case at {case_inside}: case {read['case_id']}, "
            f"the same sha256 as the controller's copy ({host_sha[:16]}…)",
            detail=f"reader saw sha256 {read['sha256']}",
        )
        seen = self.layer.run("reader", "open-read", [case_inside]).result
        fd = os.open(case_host, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            host_stat = os.fstat(fd)
        finally:
            os.close(fd)
        self.log.require(
            seen["ok"] is True
            and (seen["device"], seen["inode"]) == (host_stat.st_dev, host_stat.st_ino),
            f"the reader's own open of {case_inside} reaches the controller's file: device "
            f"{host_stat.st_dev}, inode {host_stat.st_ino} on both sides",
            detail=f"reader saw {seen}",
        )

        uid = self.ctx.tool.uid
        control = self.layer.run_unconfined("open-write", [str(case_host)]).result
        unchanged = hashlib.sha256(case_host.read_bytes()).hexdigest() == host_sha
        self.log.require(
            control["ok"] is True and unchanged,
            f"an unconfined process at the tool's uid {uid} may open that same file for "
            f"writing (mode {stat.filemode(host_stat.st_mode)}, owner {host_stat.st_uid}), "
            "and the file is left unchanged",
            detail=f"control {control}, unchanged {unchanged}",
        )
        self._expect_errno(
            self.layer.run("reader", "open-write", [case_inside]),
            "EROFS",
            "so what refuses the reader's write is the read-only mount, not the file's mode",
        )

        targets = [
            (
                "the writer's private file",
                self.ctx.paths.workspace("writer").input / "private.json",
            ),
            ("the supplier key file", self.ctx.supplier.key_file),
            (self.ctx.aws_credential.description, self.ctx.aws_credential.path),
        ]
        for label, path in targets:
            control = self.layer.run_unconfined("open-read", [str(path)]).result
            self.log.require(
                control["ok"] is True,
                f"an unconfined process at the tool's uid {uid} opens {label} ({path})",
                detail=f"errno {control['errno']}",
            )
            self._expect_errno(
                self.layer.run("reader", "open-read", [str(path)]),
                "ENOENT",
                f"so {label} is not in the reader's filesystem at all, not merely unreadable",
            )

        text = f"written by the writer in run {self.ctx.run_id}\n"
        inside = f"{OUTPUT_MOUNT}/{BOUNDARY_FILE}"
        created = self.layer.run("writer", "create-file", [inside, text]).result
        host_path = self.ctx.paths.workspace("writer").output / BOUNDARY_FILE
        back = _read_regular(host_path, MAX_DRAFT_BYTES) if created["ok"] else b""
        self.log.require(
            created["ok"] is True
            and back == text.encode("utf-8")
            and created["sha256"] == hashlib.sha256(back).hexdigest(),
            f"the writer creates {inside}, and the controller reads the same {len(back)} bytes "
            f"back from {host_path}",
            detail=f"read back {back!r}",
        )

    def _check_process(self) -> None:
        control = self.layer.run_confined(
            "reader", "unshare-user", [], disable_userns=False, purpose="nested userns control"
        ).result
        self.log.require(
            control["ok"] is True,
            "a child started without --disable-userns may create a further user namespace",
            detail=f"errno {control['errno']}",
        )
        self._expect_errno(
            self.layer.run("reader", "unshare-user", []),
            "ENOSPC",
            "so what refuses the reader a further user namespace is --disable-userns",
        )

        # The baseline itself: the same call with no filter at all reaches the kernel, which
        # gives its own answer; with the baseline, the filter answers first.
        number = resolve_syscall(BASELINE_SAMPLE)
        unfiltered = self.layer.run_confined(
            "reader", "syscall", [str(number)], baseline=False, purpose="baseline control"
        ).result
        self.log.require(
            unfiltered["ok"] is False and unfiltered["errno"] == BASELINE_SAMPLE_KERNEL_ERRNO,
            f"with no seccomp filter, the reader's {BASELINE_SAMPLE} call (syscall {number}, "
            f"numbered by libseccomp) reaches the kernel, which answers "
            f"{BASELINE_SAMPLE_KERNEL_ERRNO}",
            detail=f"observed {unfiltered}",
        )
        self._expect_errno(
            self.layer.run("reader", "syscall", [str(number)]),
            "EPERM",
            f"so the baseline filter is what refuses {BASELINE_SAMPLE}",
        )

        numbers = {name: resolve_syscall(name) for name in STACKED_SYSCALLS}
        self.readings["stacked_syscall_numbers"] = numbers
        for name, number in numbers.items():
            result = self.layer.run("reader", "syscall", [str(number)]).result
            self.log.require(
                result["ok"] is True,
                f"{name} (syscall {number}, numbered by libseccomp) succeeds in the reader "
                "under the baseline filter alone",
                detail=f"errno {result['errno']}",
            )
        extra = [single_syscall_filter(name) for name in STACKED_SYSCALLS]
        stacked = self.layer.run_confined(
            "reader", "proc-status", [], extra_filters=extra, purpose="stacked filters"
        ).result["status"]
        self.log.require(
            stacked["Seccomp"] == "2" and stacked["Seccomp_filters"] == "3",
            "with one filter for getppid and one for uname added, the reader holds three "
            "stacked seccomp filters: Seccomp_filters 3",
            detail=f"Seccomp {stacked['Seccomp']}, Seccomp_filters {stacked['Seccomp_filters']}",
        )
        for name, number in numbers.items():
            self._expect_errno(
                self.layer.run_confined(
                    "reader",
                    "syscall",
                    [str(number)],
                    extra_filters=extra,
                    purpose=f"stacked filters: {name}",
                ),
                "EPERM",
                f"and with both added, {name} is refused by its filter",
            )

    def _check_network(self) -> None:
        address, port = self.ctx.supplier.address, self.ctx.supplier.port
        loopback = ipaddress.ip_address(address).is_loopback
        self.log.require(
            self.ctx.supplier_client.tcp_reachable(),
            f"the controller itself reaches the supplier API at {address}:{port}",
        )
        # Locally the supplier is on loopback, which every network namespace has of its own;
        # "no route beyond loopback" is then shown against an address the controller routes.
        beyond = False
        probe_address, probe_port = NO_ROUTE_PROBE
        if loopback:
            source, route_error = _route_source(probe_address, probe_port)
            if route_error is not None:
                self.log.skip(
                    f"no role has a route to {probe_address} (TEST-NET-1)",
                    f"the controller's own kernel has no route there either ({route_error}), "
                    "so a refusal would prove nothing",
                )
            else:
                beyond = True
                self.log.require(
                    not ipaddress.ip_address(source).is_loopback,
                    f"the controller's own kernel has a route to {probe_address} (TEST-NET-1), "
                    f"from {source}: shown by a UDP connect(), which sends no packet",
                )
        for role in ROLES:
            names = self.layer.run(role, "interfaces", []).result["interfaces"]
            self.log.expect_equal(
                names, ["lo"], f"the {role}'s network namespace holds loopback alone: ['lo']"
            )
            connect = self.layer.run(role, "tcp-connect", [address, str(port)])
            if loopback:
                self._expect_errno(
                    connect,
                    "ECONNREFUSED",
                    f"so the supplier's {address}:{port}, live for the controller, is refused "
                    f"in the {role}'s own network namespace, whose {address} is its own "
                    "loopback with nothing listening",
                )
                if beyond:
                    self._expect_errno(
                        self.layer.run(role, "tcp-connect", [probe_address, str(probe_port)]),
                        "ENETUNREACH",
                        f"and beyond its loopback the {role} has no route at all, not even to "
                        f"{probe_address}:{probe_port}, which the controller's kernel routes",
                    )
            else:
                self._expect_errno(
                    connect,
                    "ENETUNREACH",
                    f"so the {role} has no route to the supplier's {address}:{port}, "
                    "which the controller reaches",
                )

    # --- business -----------------------------------------------------------------------------

    def submit_draft(self, draft_path: Path) -> None:
        # The writer owns its output directory: refuse a symlink or special file it may have
        # planted there, so the controller never sends anything but the writer's own bytes.
        body = _read_regular(draft_path, MAX_DRAFT_BYTES)
        case_id = self.ctx.case.case_id
        reply = self.ctx.supplier_client.request(
            "POST",
            f"/cases/{case_id}/recommendations",
            body=body,
            content_type="text/plain; charset=utf-8",
        )
        self.readings["draft_submission"] = {
            "sha256": hashlib.sha256(body).hexdigest(),
            "status": reply.status,
            "request_id": reply.request_id,
        }
        self.log.expect_equal(
            reply.status,
            201,
            "the controller submits the writer's draft itself, and the supplier API accepts it: "
            "201",
        )

    # --- helpers ------------------------------------------------------------------------------

    def _expect_errno(self, outcome: ToolOutcome, expected: str, claim: str) -> None:
        result = outcome.result
        observed = "succeeded" if result["ok"] else result["errno"]
        self.log.require(
            result["ok"] is False and result["errno"] == expected,
            f"{claim}: {expected}",
            detail=f"observed {observed}",
        )

    def _record(self) -> None:
        # The layer's whole evidence (policy knobs, control calls, seccomp) is added by the
        # orchestrator; these are the parts a reviewer reads first.
        self.ctx.evidence["bwrap_argument_lists"] = self.layer.argument_lists()
        self.ctx.evidence["bubblewrap_readings"] = self.readings


def _overlaps(mount_point: str, host_dir: Path) -> bool:
    """Whether a mount at this sandbox path could show any part of host_dir (the root tmpfs
    aside, which holds only what other mounts put there)."""
    if mount_point == "/":
        return False
    directory = str(host_dir)
    return (
        mount_point == directory
        or directory.startswith(mount_point + "/")
        or mount_point.startswith(directory + "/")
    )


def _join(items: Iterable[str], conjunction: str) -> str:
    parts = list(items)
    return ", ".join(parts[:-1]) + f" {conjunction} {parts[-1]}" if len(parts) > 1 else parts[0]


def _describe_dirs(dirs: dict[Path, list[str]]) -> str:
    """ "the directory of A and B (/p), ... or the directory of C (/q)"."""
    return _join(
        (f"the directory of {_join(what, 'and')} ({path})" for path, what in dirs.items()),
        "or",
    )


def _read_regular(path: Path, limit: int) -> bytes:
    """Reads a regular file without following a final symlink, refusing anything larger."""
    # O_NONBLOCK: a FIFO planted in the writer's directory must not hang the controller.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            raise ValueError(f"{path}: not a regular file of at most {limit} bytes")
        chunks = []
        while chunk := os.read(fd, limit + 1):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _route_source(address: str, port: int) -> tuple[str, str | None]:
    """The source address the controller's kernel picks for address, or the errno refusing it.

    A UDP connect() only chooses a route and a source address: no packet leaves the host.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.connect((address, port))
        return sock.getsockname()[0], None
    except OSError as error:
        return "", errno.errorcode.get(error.errno or 0, str(error))
    finally:
        sock.close()
