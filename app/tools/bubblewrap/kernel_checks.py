"""What the kernel refuses a bubblewrap tool process, each beside the control that shows which
switch refuses it: nested user namespaces, the baseline seccomp filter (and that filters
stack), and a tool outliving its killed bwrap."""

from __future__ import annotations

from typing import Any, Final

from app.core.catalogue import Claim
from app.core.results import Errno, ToolResult, listing
from app.core.run import Run
from app.tools.attacks import FILTER_SAMPLES, kernel_call_args
from app.tools.bubblewrap.policy import SECCOMP_ELEMENT
from app.tools.bubblewrap.runner import BwrapRunner
from app.tools.catalogue import bubblewrap as c
from app.tools.host_controls import host_control
from app.tools.inherited import inherited_filters, over_inherited
from app.tools.seccomp import resolve_syscall, single_syscall_filter

# The syscalls the stacking demo refuses (catalogue.STACKED_SYSCALLS): harmless on purpose (the
# point is that added filters reach the child), and each takes at most the probe's one scratch
# pointer.
STACKED_SYSCALLS: Final = c.STACKED_SYSCALLS


class KernelChecks:
    """The "process" section of a bubblewrap run."""

    def __init__(self, run: Run, layer: BwrapRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.readings: dict[str, Any] = {}

    def check(self) -> None:
        self.checks.begin(c.PROCESS)
        self.checks.at_once(self._nested_userns, self._baseline, self._stacking, self._orphans)

    def _expect(self, result: ToolResult, expected: Errno, claim: Claim) -> None:
        self.checks.require(
            claim, result.refused_with(expected), detail=f"observed {result.observed}"
        )

    def _nested_userns(self) -> None:
        control = self.layer.run_confined(
            "reader",
            "unshare-user",
            [],
            omit={"--disable-userns", "--assert-userns-disabled"},
            purpose="nested userns control",
        )
        self.checks.require(c.USERNS_CONTROL, control.ok, detail=f"the unshare {control.observed}")
        refused = self.layer.run_tool("reader", "unshare-user")
        self._expect(refused, Errno.ENOSPC, c.USERNS_REFUSED())

    def _baseline(self) -> None:
        # The same harmless calls with no filter reach the kernel, which gives its own answer;
        # with the baseline, the filter answers first.
        names = tuple(FILTER_SAMPLES)
        args = kernel_call_args(names)
        unfiltered = self.layer.run_confined(
            "reader", "kernel-calls", args, omit={SECCOMP_ELEMENT}, purpose="baseline control"
        ).named_answers
        expected_kernel = {name: errno.value for name, errno in FILTER_SAMPLES.items()}
        host_control(
            self.checks, c.BASELINE_CONTROL, unfiltered, expected_kernel, said=listing(unfiltered)
        )
        filtered = self.layer.run_tool("reader", "kernel-calls", *args).named_answers
        self.checks.expect_equal(
            c.BASELINE_REFUSES, filtered, dict.fromkeys(names, Errno.EPERM.value)
        )

    def _stacking(self) -> None:
        numbers = {name: resolve_syscall(name) for name in STACKED_SYSCALLS}
        self.readings["stacked_syscall_numbers"] = numbers
        for name, number in numbers.items():
            result = self.layer.run_tool("reader", "syscall", str(number))
            self.checks.require(
                c.UNSTACKED(syscall=name, number=number),
                result.ok,
                detail=f"observed {result.observed}",
            )
        extra = [single_syscall_filter(name) for name in STACKED_SYSCALLS]
        stacked = self.layer.run_confined(
            "reader", "proc-status", [], extra_filters=extra, purpose="stacked filters"
        ).data["status"]
        inherited = inherited_filters()
        self.checks.require(
            c.STACKED_COUNT(inherited=over_inherited(inherited)),
            stacked["Seccomp"] == "2" and stacked["Seccomp_filters"] == str(inherited + 3),
            detail=f"Seccomp {stacked['Seccomp']}, Seccomp_filters {stacked['Seccomp_filters']}",
        )
        for name, number in numbers.items():
            refused = self.layer.run_confined(
                "reader",
                "syscall",
                [str(number)],
                extra_filters=extra,
                purpose=f"stacked filters: {name}",
            )
            self._expect(refused, Errno.EPERM, c.STACKED_REFUSES(syscall=name))

    def _orphans(self) -> None:
        control = self.layer.kill_while_held(
            "reader",
            wait_for_death=False,
            omit={"--die-with-parent"},
            purpose="orphan control",
        )
        self.checks.require(
            c.ORPHAN_CONTROL,
            control.outlived and control.answered,
            detail=f"still there {control.outlived}, answered {control.answered}",
        )
        killed = self.layer.kill_while_held("reader", wait_for_death=True, purpose="")
        self.checks.require(
            c.ORPHAN_GONE,
            killed.output_closed and not killed.outlived and not killed.answered,
            detail=f"output closed {killed.output_closed}, still there {killed.outlived}, "
            f"answered {killed.answered}",
        )
