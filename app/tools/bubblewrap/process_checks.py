"""What a bubblewrap tool process got, read from its own /proc: identity, capabilities,
no_new_privs, seccomp, namespaces, mounts and environment (the "layer" section; sandbox_checks
adds the rest of that section)."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any, Final

from app.core.results import ToolResult, ToolRunError
from app.core.roles import ROLES, Role
from app.core.run import Run
from app.core.run_tree import CHECK_FILE
from app.tools.bubblewrap.policy import (
    NAMESPACES,
    OUTPUT_MOUNT,
    SANDBOX_ID,
    BubblewrapPolicy,
    expected_environment,
    hostname_for,
    mount_destinations,
)
from app.tools.bubblewrap.preflight import BWRAP_ENVIRONMENT
from app.tools.bubblewrap.runner import BwrapRunner
from app.tools.bubblewrap.sandbox_checks import SandboxChecks
from app.tools.catalogue import bubblewrap as c
from app.tools.common_checks import CommonChecks
from app.tools.inherited import inherited_filters, over_inherited
from app.tools.worker.system import read_namespaces, read_status

CAPABILITY_SETS: Final = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
NO_CAPABILITIES: Final = "0000000000000000"
# bwrap always gives the child a mount namespace of its own, so it is checked beside the five
# the argument vector names.
CHECKED_NAMESPACES: Final = (*NAMESPACES, "mnt")
# A variable only bwrap's own environment holds, in the call that reads the reader's: it must
# not reach the reader.
BWRAP_ONLY: Final = "ANALYST_BWRAP_ONLY"
# The reader's own output file, which it writes to show whose it is on the host.
IDENTITY_FILE: Final = f"{OUTPUT_MOUNT}/{CHECK_FILE}"


class ProcessChecks:
    """The "layer" section of a bubblewrap run."""

    def __init__(self, run: Run, layer: BwrapRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.readings: dict[str, Any] = {}

    # --- the layer section --------------------------------------------------------------------

    def what_the_tool_got(self) -> None:
        self._check_bwrap()
        self._check_controller()
        tool = self.checks.holds(
            c.READER_STARTS, lambda: self._reading("reader"), refusals=(ToolRunError,)
        )
        self.readings["reader_proc_status"] = dict(tool.data)
        status = tool.data["status"]
        self.checks.at_once(
            partial(self._check_ids, tool, status),
            partial(self._check_privileges, status),
            partial(self._check_namespaces, tool),
            partial(self._check_mounts, tool),
            partial(self._check_environment, list(tool.data["environment"])),
            *SandboxChecks(self.run, self.layer).checks_of(tool),
            # Each check above watches one part of the reader's vector; the others' vectors
            # are held to the same, reading for reading.
            *(partial(self._same_as_the_reader, role, tool) for role in ROLES[1:]),
        )

    def _reading(self, role: Role) -> ToolResult:
        """What the role reads from its own /proc, started by a bwrap whose own environment
        holds BWRAP_ONLY, which must not reach the role."""
        bwrap_env = {**BWRAP_ENVIRONMENT, BWRAP_ONLY: "1"}
        return self.layer.run_confined(role, "proc-status", [], bwrap_env=bwrap_env)

    def _state(self, role: Role, data: Mapping[str, Any]) -> dict[str, Any]:
        """A proc-status reading with what must differ between roles put as what must hold:
        namespaces not the controller's, the role's own hostname, its own mount list."""
        own = read_namespaces()
        named = {"/", *mount_destinations(self.layer.role_argv(role, BubblewrapPolicy()))}
        state = dict(data)
        state["namespaces"] = {ns: value != own[ns] for ns, value in data["namespaces"].items()}
        state["hostname"] = data["hostname"] == hostname_for(role)
        state["mounts"] = set(data["mounts"]) == named
        return state

    def _same_as_the_reader(self, role: Role, reader: ToolResult) -> None:
        claim = c.SAME_AS_READER(role=role)
        try:
            theirs = self._reading(role)
        except ToolRunError as error:
            self.checks.fail(claim, f"ToolRunError: {error}")
            return
        expected = self._state("reader", reader.data)
        state = self._state(role, theirs.data)
        differs = sorted(key for key in expected if state.get(key) != expected[key])
        self.readings[f"{role}_proc_status"] = dict(theirs.data)
        self.checks.require(
            claim,
            not differs,
            detail=f"differs in {differs}"
            if differs
            else f"none of its {len(expected)} readings differs, its hostname {hostname_for(role)}",
        )

    def _check_bwrap(self) -> None:
        readings = self.layer.readings
        missing = [o for o in readings.required_options if o not in readings.offered_options]
        minimum = ".".join(str(part) for part in readings.minimum_version)
        self.checks.require(
            c.BWRAP_OPTIONS(minimum=minimum, count=len(readings.required_options)),
            readings.version_tuple >= readings.minimum_version and not missing,
            detail=f"{readings.version}" + (f", missing {missing}" if missing else ""),
        )
        self.checks.require(
            c.USERNS_ALLOWED,
            readings.max_user_namespaces > 0,
            detail=f"/proc/sys/user/max_user_namespaces is {readings.max_user_namespaces}",
        )

    def _check_controller(self) -> None:
        status = read_status()
        tool = self.run.tool
        caps = ", ".join(f"{name} {status[name]}" for name in CAPABILITY_SETS)
        uid, gid = os.geteuid(), os.getegid()
        self.readings["controller_status"] = status
        if uid == 0:
            # Local runs: the controller is root and holds every capability. It is trusted and
            # unconfined by design; what matters is that no tool process inherits that.
            self.checks.require(
                c.ROOT_CONTROLLER(uid=tool.uid, gid=tool.gid),
                tool.uid != 0 and tool.gid != 0,
                detail=f"the controller: uid {uid}, gid {gid}, CapEff {status['CapEff']}; the "
                f"tool identity {tool.uid}/{tool.gid}",
            )
            return
        self.checks.require(
            c.UNPRIVILEGED_CONTROLLER(uid=uid, gid=gid),
            status["CapEff"] == NO_CAPABILITIES and status["CapPrm"] == NO_CAPABILITIES,
            detail=f"{caps}; its other readings: NoNewPrivs {status['NoNewPrivs']}, "
            f"Seccomp {status['Seccomp']}",
        )

    def _check_ids(self, tool: ToolResult, status: Mapping[str, str]) -> None:
        ids = " ".join([str(SANDBOX_ID)] * 4)  # real, effective, saved, filesystem
        maps: dict[str, list[str]] = {
            "uid_map": list(tool.data["uid_map"]),
            "gid_map": list(tool.data["gid_map"]),
        }
        single = all(
            len(lines) == 1 and lines[0].split()[0::2] == [str(SANDBOX_ID), "1"]
            for lines in maps.values()
        )
        # The map's middle field is relative to the parent user namespace. Were bwrap to mount
        # a devpts (--dev, not in this vector), it would nest the child in a second namespace
        # and map 1000 to that one's root, 0; the host identity is read on the host, below.
        nested = single and any(lines[0].split()[1] == "0" for lines in maps.values())
        self.checks.require(
            c.READER_IDS(id=SANDBOX_ID),
            single and status["Uid"] == ids and status["Gid"] == ids,
            detail=f"Uid {status['Uid']}, Gid {status['Gid']}, uid_map {maps['uid_map']}, "
            f"gid_map {maps['gid_map']}"
            + (
                " (the outside 0 is root of an intermediate namespace bwrap nests the child "
                "in, not the host's)"
                if nested
                else ""
            ),
        )
        host = self.run.tool
        inside = IDENTITY_FILE
        written = self.layer.run_tool("reader", "write-file", inside, "identity check\n")
        on_host = os.lstat(self.run.paths.workspace("reader").output / CHECK_FILE)
        owner = (on_host.st_uid, on_host.st_gid)
        seen = written.data.get("owner")
        self.checks.require(
            c.HOST_IDENTITY(uid=host.uid, gid=host.gid),
            written.ok
            and owner == (host.uid, host.gid)
            and 0 not in owner
            and seen == [SANDBOX_ID] * 2,
            detail=f"the write of {inside} {written.observed}, mode "
            f"{on_host.st_mode & 0o777:04o}, owner on the host {owner[0]}:{owner[1]}, inside "
            + (":".join(str(i) for i in seen) if isinstance(seen, list) else f"{seen}"),
        )

    def _check_privileges(self, status: Mapping[str, str]) -> None:
        readings = ", ".join(f"{name} {status[name]}" for name in CAPABILITY_SETS)
        self.checks.require(
            c.CAPABILITIES,
            all(status[name] == NO_CAPABILITIES for name in CAPABILITY_SETS),
            detail=readings,
        )
        self.checks.expect_equal(c.NO_NEW_PRIVS, status["NoNewPrivs"], "1")
        inherited = inherited_filters()
        self.checks.require(
            c.SECCOMP(inherited=over_inherited(inherited)),
            status["Seccomp"] == "2" and status["Seccomp_filters"] == str(inherited + 1),
            detail=f"Seccomp {status['Seccomp']}, Seccomp_filters {status['Seccomp_filters']}",
        )

    def _check_namespaces(self, tool: ToolResult) -> None:
        own = read_namespaces()
        theirs = tool.data["namespaces"]
        self.readings["controller_namespaces"] = own
        for ns in CHECKED_NAMESPACES:
            self.checks.require(
                c.NAMESPACE(ns=ns),
                theirs[ns] != own[ns],
                detail=f"{theirs[ns]}, the controller's {own[ns]}",
            )
        expected = hostname_for("reader")
        mine = socket.gethostname()
        hostname = tool.data["hostname"]
        self.checks.require(
            c.HOSTNAME(hostname=expected),
            hostname == expected and hostname != mine,
            detail=f"observed {hostname!r}, the controller's {mine!r}",
        )

    def _forbidden_dirs(self, role: Role) -> dict[Path, list[str]]:
        """Host directories no mount of `role` may reach, each with what it holds."""
        dirs: dict[Path, list[str]] = {}
        dirs.setdefault(self.run.supplier.key_file.parent, []).append("the supplier key")
        dirs.setdefault(self.run.aws_credential.path.parent, []).append(
            self.run.aws_credential.description
        )
        for other in ROLES:
            if other != role:
                dirs.setdefault(self.run.paths.workspace(other).root, []).append(
                    f"the {other}'s files"
                )
        return dirs

    def _check_mounts(self, tool: ToolResult) -> None:
        observed: list[str] = list(tool.data["mounts"])
        # The mounts the secure policy names; a mount it does not name is a finding, even if
        # this run's own policy added it.
        named = {"/", *mount_destinations(self.layer.role_argv("reader", BubblewrapPolicy()))}
        unnamed = [m for m in observed if m not in named]
        absent = sorted(named - set(observed))
        self.checks.require(
            c.MOUNTS,
            not unnamed and not absent,
            detail=f"{observed}; not named: {unnamed}, named but absent: {absent}"
            if unnamed or absent
            else f"{observed}",
        )
        forbidden = self._forbidden_dirs("reader")
        exposed = sorted({m for m in observed for path in forbidden if _overlaps(m, path)})
        self.checks.require(
            c.MOUNTS_HIDE,
            not exposed,
            detail=f"exposed by {exposed}"
            if exposed
            else "; ".join(f"{path}: {' and '.join(what)}" for path, what in forbidden.items()),
        )

    def _check_environment(self, names: list[str]) -> None:
        expected = expected_environment()
        self.checks.expect_equal(c.ENVIRONMENT(bwrap_only=BWRAP_ONLY), names, expected)
        control = self.layer.run_confined(
            "reader",
            "env-names",
            [],
            omit={"--clearenv"},
            bwrap_env={**BWRAP_ENVIRONMENT, BWRAP_ONLY: "1"},
            purpose="environment control",
        )
        self.checks.require(
            c.ENVIRONMENT_CONTROL(bwrap_only=BWRAP_ONLY),
            BWRAP_ONLY in control.data.get("names", []),
            detail=f"names {control.data.get('names')}",
        )
        CommonChecks(self.run, self.layer).no_credential_variables(names)


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
