"""What a nono tool process got and what its kernel refuses it: the process as the host's /proc
shows it while it waits, the filters it holds, and the baseline filter's refusals, each beside
the control that runs the same role without the baseline (nono's own rules alone)."""

from __future__ import annotations

import hashlib
from functools import partial
from typing import Any, Final

from app.core.results import Errno, ToolRunError, listing
from app.core.run import Run
from app.tools.attacks import FILTER_SAMPLES, kernel_call_args
from app.tools.catalogue import nono as c
from app.tools.host_controls import host_control
from app.tools.inherited import inherited_filters, over_inherited
from app.tools.loader import FILTER_OPTION
from app.tools.nono.channel import NONO_WORKER_COMMAND
from app.tools.nono.policy import SECCOMP_FILTER_FILE
from app.tools.nono.runner import NonoRunner
from app.tools.seccomp import nono_baseline_filter

CAPABILITY_SETS: Final = ("CapInh", "CapPrm", "CapEff", "CapAmb")
NO_CAPABILITIES: Final = "0000000000000000"
# nono's "seccomp" enforcement mode installs one filter of its own; the baseline adds one.
NONO_FILTERS: Final = 1


class NonoProcessChecks:
    """The "process" section of a nono run."""

    def __init__(self, run: Run, layer: NonoRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.readings: dict[str, Any] = {}

    def check(self) -> None:
        self.checks.begin(c.PROCESS)
        self.checks.at_once(
            self._held,
            self._nested_userns,
            self._baseline_control,
            self._landlock_alone_control,
            self._landlock_alone,
            self._baseline_refuses,
        )

    def _held(self) -> None:
        checks, tool = self.checks, self.run.tool
        reading = checks.holds(
            c.HELD,
            partial(self.layer.read_while_held, "reader"),
            refusals=(ToolRunError,),
            detail=lambda held: f"pid {held.pid}",
        )
        status, command = reading.status, reading.command
        self.readings["reader_status_on_host"] = status
        ids = " ".join([str(tool.uid)] * 4)
        gids = " ".join([str(tool.gid)] * 4)
        checks.require(
            c.HELD_IDENTITY(uid=tool.uid, gid=tool.gid),
            command[: len(NONO_WORKER_COMMAND)] == list(NONO_WORKER_COMMAND)
            and "hold" in command
            and status["Uid"] == ids
            and status["Gid"] == gids,
            detail=f"pid {reading.pid}: Uid {status['Uid']}, Gid {status['Gid']}, command "
            f"{' '.join(command[: len(NONO_WORKER_COMMAND) + 1])} …",
        )
        held = ", ".join(f"{name} {status[name]}" for name in CAPABILITY_SETS)
        checks.require(
            c.HELD_CAPABILITIES,
            all(status[name] == NO_CAPABILITIES for name in CAPABILITY_SETS)
            and status["NoNewPrivs"] == "1",
            detail=f"{held}, NoNewPrivs {status['NoNewPrivs']} (its bounding set, "
            f"{status['CapBnd']}, is nono's default)",
        )
        inherited = inherited_filters()
        expected = inherited + NONO_FILTERS + 1
        checks.require(
            c.HELD_SECCOMP(own=NONO_FILTERS + 1, inherited=over_inherited(inherited)),
            status["Seccomp"] == "2" and status["Seccomp_filters"] == str(expected),
            detail=f"Seccomp {status['Seccomp']}, Seccomp_filters {status['Seccomp_filters']}",
        )
        digest = hashlib.sha256(nono_baseline_filter().program).hexdigest()
        staged = self.run.paths.code / SECCOMP_FILTER_FILE
        installed = hashlib.sha256(staged.read_bytes()).hexdigest()
        checks.require(
            c.HELD_BASELINE,
            installed == digest and FILTER_OPTION in command,
            detail=f"sha256 {digest[:16]}…"
            if installed == digest
            else f"installed sha256 {installed}, compiled {digest}",
        )
        control = self.layer.read_while_held("reader", baseline=False).status
        checks.require(
            c.HELD_CONTROL(inherited=over_inherited(inherited)),
            control["Seccomp_filters"] == str(inherited + NONO_FILTERS),
            detail=f"Seccomp_filters {control['Seccomp_filters']}",
        )

    def _nested_userns(self) -> None:
        control = self.layer.run_confined(
            "reader", "unshare-user", [], baseline=False, purpose="nested userns control"
        )
        host_control(
            self.checks,
            c.USERNS_CONTROL,
            control.observed,
            "succeeded",
            said=f"the unshare {control.observed}",
        )
        refused = self.layer.run_tool("reader", "unshare-user")
        self.checks.require(
            c.USERNS_REFUSED,
            refused.refused_with(Errno.EPERM),
            detail=f"observed {refused.observed}",
        )

    def _baseline_control(self) -> None:
        names = tuple(FILTER_SAMPLES)
        nono_alone = self.layer.run_confined(
            "reader",
            "kernel-calls",
            kernel_call_args(names),
            baseline=False,
            purpose="baseline control",
        ).named_answers
        expected = {name: errno.value for name, errno in FILTER_SAMPLES.items()}
        expected["io_uring_setup"] = Errno.EPERM.value
        host_control(
            self.checks, c.BASELINE_CONTROL, nono_alone, expected, said=listing(nono_alone)
        )

    # Under Landlock alone nono adds no filter of its own: what refuses io_uring_setup there is
    # the baseline alone. Any role shows it (each role's network is Landlock's to hold); the
    # claims name the offline evaluator.

    def _landlock_alone_control(self) -> None:
        landlock_alone = self.layer.run_confined(
            "evaluator",
            "kernel-calls",
            kernel_call_args(["io_uring_setup"]),
            baseline=False,
            enforcement_mode="landlock",
            purpose="io_uring control under Landlock alone",
        ).named_answers
        host_control(
            self.checks,
            c.LANDLOCK_ALONE_CONTROL,
            landlock_alone,
            {"io_uring_setup": FILTER_SAMPLES["io_uring_setup"].value},
            said=listing(landlock_alone),
        )

    def _landlock_alone(self) -> None:
        baseline_alone = self.layer.run_confined(
            "evaluator",
            "kernel-calls",
            kernel_call_args(["io_uring_setup"]),
            enforcement_mode="landlock",
            purpose="the baseline under Landlock alone",
        ).named_answers
        self.checks.expect_equal(
            c.LANDLOCK_ALONE, baseline_alone, {"io_uring_setup": Errno.EPERM.value}
        )

    def _baseline_refuses(self) -> None:
        names = tuple(FILTER_SAMPLES)
        refused = self.layer.run_tool("reader", "kernel-calls", *kernel_call_args(names))
        self.checks.expect_equal(
            c.BASELINE_REFUSES, refused.named_answers, dict.fromkeys(names, Errno.EPERM.value)
        )
