"""The "attacks" section of a run: every path out of a tool process, tried by each role under
its own policy and once by an unconfined process at the same uid (the control).

The controller sets up what an attacker would aim at: listeners on its loopback (IPv4 and,
where the host has it, IPv6), a unix socket by path and one in the abstract namespace, and a
process at the tool's uid outside any sandbox. Each attack's control line states what the
unconfined process got; its check line, what each role got, which must be the layer's errno.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import socket
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from app.core.results import listing
from app.core.roles import ROLES, Role
from app.core.run import Run
from app.core.run_tree import CHECK_FILE, INTERPRETER
from app.core.tool_environment import SEARCH_PATH
from app.tools import catalogue as c
from app.tools.at_once import results_at_once
from app.tools.attacks import (
    ATTACKS,
    CONTROL_ANSWERS,
    HOST_FILE,
    LIFTS,
    LIMITS,
    OK,
    SYSCALL_PROBES,
    UDP4_TARGET,
    UDP6_TARGET,
    Attack,
    AttackAnswers,
    LayerAnswers,
    describe,
)
from app.tools.host_controls import host_control
from app.tools.layer import ToolRunner
from app.tools.seccomp import resolve_syscall
from app.tools.undumpable_checks import check_undumpable

NEW_OUTPUT = "attack.txt"
OTHER_PROCESSES = "other-processes"
OUTSIDE = "the process outside any sandbox"
# What a role's answers show for a probe they leave out.
MISSING = "missing"


@dataclass(frozen=True)
class Targets:
    """What the attacks aim at, set up by the controller for the section's duration."""

    tcp4_port: int
    tcp6_port: int | None  # None where the host has no IPv6 loopback
    unix_path: str
    unix_abstract: str
    victim_pid: int


def _listener(family: int, address: str, stack: ExitStack) -> int | None:
    try:
        sock = stack.enter_context(socket.socket(family, socket.SOCK_STREAM))
        sock.bind((address, 0))
    except OSError:
        return None
    sock.listen(16)
    return int(sock.getsockname()[1])


def _tcp6_listener(stack: ExitStack) -> int | None:
    """A listener on ::1 at a port no IPv4 loopback socket holds. Landlock's TCP rules name a
    port on any address, and a nono role may connect to its front's port on 127.0.0.1: a
    target that drew the same port over IPv6 would answer that role. So the port is held on
    127.0.0.1 too, which no front can then hold."""
    for _ in range(16):
        with ExitStack() as attempt:
            port = _listener(socket.AF_INET6, "::1", attempt)
            if port is None:
                return None
            guard = attempt.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                guard.bind(("127.0.0.1", port))
            except OSError:
                continue
            stack.enter_context(attempt.pop_all())
            return port
    raise OSError("no port free on both ::1 and 127.0.0.1 for the IPv6 target")


@contextmanager
def targets(run: Run) -> Iterator[Targets]:
    with ExitStack() as stack:
        tcp4 = _listener(socket.AF_INET, "127.0.0.1", stack)
        if tcp4 is None:
            raise OSError("cannot listen on 127.0.0.1")
        tcp6 = _tcp6_listener(stack)
        directory = run.paths.attacks
        directory.mkdir(mode=0o755)
        os.chmod(directory, 0o755)
        stack.callback(_remove_tree, directory)
        path = run.paths.attack_socket
        unix = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        unix.bind(str(path))
        os.chmod(path, 0o666)  # connecting needs write permission on the socket file
        unix.listen(16)
        abstract_name = f"analyst-{run.run_id}"
        abstract = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        abstract.bind("\0" + abstract_name)
        abstract.listen(16)
        victim = subprocess.Popen(
            [INTERPRETER, "-c", "import sys; sys.stdin.buffer.read()"],
            stdin=subprocess.PIPE,
            env={"PATH": SEARCH_PATH, "ANALYST_VICTIM": "a process outside any sandbox"},
            cwd="/",
            **run.tool.process_identity(),
        )
        stack.callback(_end, victim)
        yield Targets(tcp4, tcp6, str(path), abstract_name, victim.pid)


def _end(process: subprocess.Popen[bytes]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    process.wait()


def _remove_tree(directory: Path) -> None:
    for entry in directory.iterdir():
        entry.unlink()
    directory.rmdir()


def _ioprio(pid: int) -> int:
    """The process's I/O priority (ioprio_get(IOPRIO_WHO_PROCESS, pid)), which Python does not
    wrap; the probes set it again unchanged."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    value = int(libc.syscall(ctypes.c_long(resolve_syscall("ioprio_get")), 1, pid))
    if value < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"ioprio_get({pid}): {os.strerror(number)}")
    return value


def process_targets(run: Run, layer: ToolRunner, victim_pid: int) -> dict[str, dict[str, Any]]:
    """The processes the other-processes attack aims at, each with its current values: the one
    outside any sandbox at the tool's uid and, where the tools run at the controller's own uid,
    the controller and the layer's helper processes, all of which that uid alone would reach."""
    pids = {OUTSIDE: victim_pid}
    if os.geteuid() == run.tool.uid:
        pids |= {"the controller": os.getpid(), **layer.helper_processes()}
    return {
        who: {
            "pid": pid,
            "nice": os.getpriority(os.PRIO_PROCESS, pid),
            "cpus": sorted(os.sched_getaffinity(pid)),
            "policy": os.sched_getscheduler(pid),
            "priority": os.sched_getparam(pid).sched_priority,
            "ioprio": _ioprio(pid),
            # Dumpable: the calls that need ptrace access are made on this one alone.
            "dumpable": int(who == OUTSIDE),
        }
        for who, pid in pids.items()
    }


def another_roles_output(run: Run, role: Role) -> dict[str, str]:
    """The next role's output folder and file, by their paths on the host: where a role under
    nono reaches them, and where one under bubblewrap would have to."""
    other = ROLES[(ROLES.index(role) + 1) % len(ROLES)]
    folder = run.paths.workspace(other).output
    return {"folder": str(folder), "file": str(folder / CHECK_FILE)}


def attack_parameters(
    run: Run,
    aim: Targets,
    out_dir: str,
    who: str,
    *,
    processes: dict[str, dict[str, Any]],
    others: dict[str, str],
) -> str:
    """The worker's ``attack-surface`` argument for one process: ``out_dir`` is its output
    directory as it names it, ``who`` a name for the files it may leave in /dev/shm;
    ``processes`` the other-processes attack's targets, ``others`` another role's output
    folder and file as a path on the host (``folder``, ``file``), none for the control, whose
    files are all its own."""
    return json.dumps(
        {
            "processes": processes,
            "others": others,
            "syscalls": {name: resolve_syscall(name) for name in SYSCALL_PROBES},
            "host_file": HOST_FILE,
            "tcp4_port": aim.tcp4_port,
            "tcp6_port": aim.tcp6_port,
            "udp4": UDP4_TARGET,
            "udp6": UDP6_TARGET,
            "unix_path": aim.unix_path,
            "unix_abstract": aim.unix_abstract,
            "victim_pid": aim.victim_pid,
            "shm_file": f"/dev/shm/analyst-{run.run_id}-{who}",
            "output_new": f"{out_dir}/{NEW_OUTPUT}",
            "output_file": f"{out_dir}/{CHECK_FILE}",
            "output_dir": out_dir,
            "file_limit": LIMITS.file_bytes.value,
            "limits": {
                "address_space_bytes": LIMITS.address_space_bytes.value,
                "open_files": LIMITS.open_files.value,
            },
            "lifts": {
                probe: [getattr(resource, limit.rlimit), limit.value]
                for probe, limit in LIFTS.items()
            },
        },
        sort_keys=True,
    )


class AttackChecks:
    """Tries every attack as each role and as the control; one line each per attack."""

    def __init__(self, run: Run, layer: ToolRunner, answers: LayerAnswers) -> None:
        self.run = run
        self.layer = layer
        self.answers = answers
        self.checks = run.checks
        self.answers_seen = AttackAnswers(control={}, roles={})
        self.process_targets: dict[str, dict[str, Any]] = {}

    def check(self) -> None:
        with targets(self.run) as aim:
            # The attacks on the IPv6 loopback are made only where the controller has one.
            self.checks.begin(c.ATTACKS_SECTION, ipv6=aim.tcp6_port is not None)
            control_dir = str(self.run.paths.workspace("reader").output)
            processes = process_targets(self.run, self.layer, aim.victim_pid)
            self.process_targets = processes
            control = self.layer.run_unconfined(
                "attack-surface",
                attack_parameters(
                    self.run, aim, control_dir, "control", processes=processes, others={}
                ),
            ).data["answers"]
            # The control has had the reader's output directory to itself; then each role, in
            # its own directory with its own /dev/shm name, tries every attack.
            tried = results_at_once(
                {
                    role: partial(
                        self.layer.run_tool,
                        role,
                        "attack-surface",
                        attack_parameters(
                            self.run,
                            aim,
                            self.layer.role_path(role, "out", "").rstrip("/"),
                            role,
                            processes=processes,
                            others=another_roles_output(self.run, role),
                        ),
                    )
                    for role in ROLES
                }
            )
            seen = {role: dict(result.data["answers"]) for role, result in tried.items()}
            self.answers_seen = AttackAnswers(control=dict(control), roles=seen)
            for attack in ATTACKS:
                self._control_line(attack, control)
                self._attack_line(attack, control, seen)
            # Last, while the process at the tool's uid outside any sandbox still runs.
            check_undumpable(self.run, self.layer, aim.victim_pid)

    def _aimed_at(self, attack: Attack) -> str:
        """The other-processes attack's targets, by name and pid, for both lines to say."""
        if attack.key != OTHER_PROCESSES:
            return ""
        named = [f"{who} (pid {target['pid']})" for who, target in self.process_targets.items()]
        return f"; on {', '.join(named)}"

    def _control_line(self, attack: Attack, control: Any) -> None:
        tried = [probe for probe in attack.probes if probe in control]
        host_control(
            self.checks,
            c.ATTACK_CONTROL(attack=attack.key, uid=self.run.tool.uid),
            {p: control[p] for p in tried},
            {p: CONTROL_ANSWERS[p] for p in tried},
            said=", ".join(f"{probe} {_said(control[probe])}" for probe in tried)
            + self._aimed_at(attack),
        )
        for probe in attack.probes:
            if probe not in control:
                self.checks.skip(
                    c.ATTACK_NOT_TRIED(attack=attack.key, probe=probe, claim=attack.claim),
                    "the controller has no IPv6 loopback to listen on here",
                )

    def _attack_line(self, attack: Attack, control: Any, seen: dict[Role, dict[str, str]]) -> None:
        # Every probe the control tried is asked of each role: one a role's answers leave out
        # is a finding ("missing"), never a probe quietly not checked.
        probes = [probe for probe in attack.probes if probe in control]
        expected = {r: {p: self.answers.expected(p, r) for p in probes} for r in ROLES}
        observed = {r: {p: seen[r].get(p, MISSING) for p in probes} for r in ROLES}
        described = "; ".join(f"{p} {describe(self.answers.errnos[p])}" for p in probes)
        wrong = [
            f"{r} {p} {observed[r][p]}"
            for r in ROLES
            for p in probes
            if observed[r][p] != expected[r][p]
        ]
        self.checks.require(
            c.ATTACK(attack=attack.key, claim=attack.claim, why=self.answers.why[attack.key]),
            not wrong,
            detail=(
                f"observed {', '.join(wrong)}; expected {described}"
                if wrong
                else _by_role(observed)
            )
            + self._aimed_at(attack),
        )


def _by_role(observed: dict[Role, dict[str, str]]) -> str:
    """ "every role: tcp4 ECONNREFUSED", or each group of roles that answered alike."""
    groups: dict[str, list[Role]] = {}
    for role in ROLES:
        groups.setdefault(listing(observed[role]), []).append(role)
    if len(groups) == 1:
        return f"every role: {next(iter(groups))}"
    return "; ".join(f"the {' and '.join(roles)}: {said}" for said, roles in groups.items())


def _said(answer: str) -> str:
    return "succeeds" if answer == OK else answer
