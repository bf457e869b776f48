"""What a nono tool process got and what its kernel refuses it: the process as the host's /proc
shows it while it waits, the filters it holds, and the baseline filter's refusals, each beside
the control that runs the same role without the baseline (nono's own rules alone)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from functools import partial
from typing import Any, Final

from app.core.results import Errno, ToolResult, ToolRunError, as_mapping, listing
from app.core.run import Run
from app.core.run_tree import WORKER_COMMAND
from app.tools.attacks import FILTER_SAMPLES, kernel_call_args
from app.tools.controls import host_control
from app.tools.inherited import inherited_filters, over_inherited
from app.tools.nono.runner import NonoRunner
from app.tools.seccomp import nono_baseline_filter
from app.tools.together import run_named
from app.tools.worker.prologue import FILTER_OPTION

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
        self.got: Mapping[str, Future[ToolResult]] = {}

    def check(self) -> None:
        self.checks.begin("process")
        self._held()
        # The rest at once: none holds a file or writes one, and the lines are decided from
        # the outcomes in their order.
        self.got = run_named(self._calls())
        self._nested_userns()
        self._filter_samples()

    def _calls(self) -> dict[str, Callable[[], ToolResult]]:
        layer, samples = self.layer, kernel_call_args(tuple(FILTER_SAMPLES))
        io_uring = kernel_call_args(["io_uring_setup"])
        return {
            "userns control": partial(
                layer.run_confined,
                "reader",
                "unshare-user",
                [],
                baseline=False,
                purpose="nested userns control",
            ),
            "userns": partial(layer.run_tool, "reader", "unshare-user"),
            "nono alone": partial(
                layer.run_confined,
                "reader",
                "kernel-calls",
                samples,
                baseline=False,
                purpose="baseline control",
            ),
            # Landlock alone cannot hold a proxy-only role to its proxy, so nono refuses that
            # mode for the reader; the offline evaluator's blocked network it can.
            "landlock alone": partial(
                layer.run_confined,
                "evaluator",
                "kernel-calls",
                io_uring,
                baseline=False,
                enforcement_mode="landlock",
                purpose="io_uring control under Landlock alone",
            ),
            "baseline alone": partial(
                layer.run_confined,
                "evaluator",
                "kernel-calls",
                io_uring,
                enforcement_mode="landlock",
                purpose="the baseline under Landlock alone",
            ),
            "refused": partial(layer.run_tool, "reader", "kernel-calls", *samples),
        }

    def _outcome(self, name: str) -> ToolResult:
        return self.got[name].result()

    def _held(self) -> None:
        checks, tool = self.checks, self.run.tool
        reading = checks.holds(
            "the controller looks at the reader from the host's /proc while it waits: the "
            "reader writes its pid to its own check.txt and blocks on a FIFO in its input",
            partial(self.layer.read_while_held, "reader"),
            refusals=(ToolRunError,),
        )
        status, command = reading.status, reading.command
        self.readings["reader_status_on_host"] = status
        ids = " ".join([str(tool.uid)] * 4)
        gids = " ".join([str(tool.gid)] * 4)
        checks.require(
            command[: len(WORKER_COMMAND)] == list(WORKER_COMMAND)
            and "hold" in command
            and status["Uid"] == ids
            and status["Gid"] == gids,
            f"the reader, as the host's /proc shows it while it waits (pid {reading.pid}, "
            f"{' '.join(command[:6])} …), runs as uid/gid {tool.uid}/{tool.gid}: real, "
            "effective, saved and filesystem ids alike, never 0",
            detail=f"Uid {status['Uid']}, Gid {status['Gid']}, command {command}",
        )
        held = ", ".join(f"{name} {status[name]}" for name in CAPABILITY_SETS)
        checks.require(
            all(status[name] == NO_CAPABILITIES for name in CAPABILITY_SETS)
            and status["NoNewPrivs"] == "1",
            f"it holds no capability it could use ({held}), and no exec can gain one: "
            f"NoNewPrivs is 1 (its bounding set, {status['CapBnd']}, is nono's default)",
            detail=f"{held}, NoNewPrivs {status['NoNewPrivs']}",
        )
        inherited = inherited_filters()
        expected = inherited + NONO_FILTERS + 1
        checks.require(
            status["Seccomp"] == "2" and status["Seccomp_filters"] == str(expected),
            f"it runs under {NONO_FILTERS + 1} seccomp filters of its own, nono's and the "
            f"baseline it installed before reading its arguments{over_inherited(inherited)}: "
            f"Seccomp mode 2, Seccomp_filters {expected}",
            detail=f"Seccomp {status['Seccomp']}, Seccomp_filters {status['Seccomp_filters']}",
        )
        digest = hashlib.sha256(nono_baseline_filter().program).hexdigest()
        installed = as_mapping(reading.result.data.get("prologue", {})).get("seccomp_filter_sha256")
        checks.require(
            installed == digest and FILTER_OPTION in command,
            f"the filter it installed is the baseline this controller compiled (sha256 "
            f"{digest[:16]}…), read from the code directory, which no role may write",
            detail=f"installed {installed}",
        )
        control = self.layer.read_while_held("reader", baseline=False).status
        checks.require(
            control["Seccomp_filters"] == str(inherited + NONO_FILTERS),
            "control: started without the baseline, the same reader holds nono's filter "
            f"alone{over_inherited(inherited)}: Seccomp_filters {inherited + NONO_FILTERS}",
            detail=f"Seccomp_filters {control['Seccomp_filters']}",
        )

    def _nested_userns(self) -> None:
        control = self._outcome("userns control")
        host_control(
            self.checks,
            "control: without the baseline, a nono tool process may create a user namespace "
            "of its own (and in it, new namespaces with every capability): unshare"
            "(CLONE_NEWUSER) succeeds",
            control.observed,
            "succeeded",
        )
        refused = self._outcome("userns")
        self.checks.require(
            refused.refused_with(Errno.EPERM),
            f"so the baseline is what refuses the reader a nested user namespace: {Errno.EPERM}",
            detail=f"observed {refused.observed}",
        )

    def _filter_samples(self) -> None:
        checks = self.checks
        names = tuple(FILTER_SAMPLES)
        nono_alone = self._outcome("nono alone").named_answers
        expected = {name: errno.value for name, errno in FILTER_SAMPLES.items()}
        expected["io_uring_setup"] = Errno.EPERM.value
        host_control(
            checks,
            "control: under nono's rules alone (no baseline), the reader's ptrace, bpf and "
            "keyctl reach the kernel, which answers ESRCH, EINVAL, EOPNOTSUPP; nono's own "
            f"seccomp mode refuses io_uring_setup: {listing(expected)}",
            nono_alone,
            expected,
        )
        landlock_alone = self._outcome("landlock alone").named_answers
        host_control(
            checks,
            "control: under Landlock alone (enforcement mode landlock, no baseline), the "
            f"evaluator's io_uring_setup reaches the kernel: {FILTER_SAMPLES['io_uring_setup']}",
            landlock_alone,
            {"io_uring_setup": FILTER_SAMPLES["io_uring_setup"].value},
        )
        baseline_alone = self._outcome("baseline alone").named_answers
        checks.expect_equal(
            baseline_alone,
            {"io_uring_setup": Errno.EPERM.value},
            "and with the baseline under Landlock alone, the baseline refuses it itself: "
            f"io_uring_setup {Errno.EPERM}",
        )
        refused = self._outcome("refused").named_answers
        checks.expect_equal(
            refused,
            dict.fromkeys(names, Errno.EPERM.value),
            f"so under the reader's profile the baseline refuses {', '.join(names)}: {Errno.EPERM}",
        )
