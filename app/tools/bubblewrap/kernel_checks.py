"""What the kernel refuses a bubblewrap tool process, each beside the control that shows which
switch refuses it: nested user namespaces, the baseline seccomp filter (and that filters
stack), and a tool outliving its killed bwrap."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from functools import partial
from typing import Any, Final

from app.core.catalogue import Claim
from app.core.results import Errno, ToolResult, as_mapping, listing
from app.core.run import Run
from app.tools.attacks import FILTER_SAMPLES, kernel_call_args
from app.tools.bubblewrap import catalogue as c
from app.tools.bubblewrap.policy import SECCOMP_ELEMENT
from app.tools.bubblewrap.runner import BwrapRunner
from app.tools.controls import host_control
from app.tools.inherited import inherited_filters, over_inherited
from app.tools.seccomp import resolve_syscall, single_syscall_filter
from app.tools.together import run_named

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
        self.got: Mapping[str, Future[ToolResult]] = {}

    def check(self) -> None:
        self.checks.begin(c.PROCESS)
        # Every reader but the held ones at once: each is a sandbox of its own that writes
        # nothing; the lines are decided from the outcomes in their order.
        self.got = run_named({**self._nested_userns_calls(), **self._filter_calls()})
        self._nested_userns()
        self._baseline()
        self._stacking()
        self._orphans()

    def _outcome(self, name: str) -> ToolResult:
        return self.got[name].result()

    def _expect(self, result: ToolResult, expected: Errno, claim: Claim) -> None:
        self.checks.require(
            claim, result.refused_with(expected), detail=f"observed {result.observed}"
        )

    def _nested_userns_calls(self) -> dict[str, Callable[[], ToolResult]]:
        return {
            "userns control": partial(
                self.layer.run_confined,
                "reader",
                "unshare-user",
                [],
                omit={"--disable-userns", "--assert-userns-disabled"},
                purpose="nested userns control",
            ),
            "userns": partial(self.layer.run_tool, "reader", "unshare-user"),
        }

    def _nested_userns(self) -> None:
        control = self._outcome("userns control")
        self.checks.require(c.USERNS_CONTROL, control.ok, detail=f"the unshare {control.observed}")
        self._expect(self._outcome("userns"), Errno.ENOSPC, c.USERNS_REFUSED())

    def _filter_calls(self) -> dict[str, Callable[[], ToolResult]]:
        args = kernel_call_args(tuple(FILTER_SAMPLES))
        extra = [single_syscall_filter(name) for name in STACKED_SYSCALLS]
        stacked = partial(self.layer.run_confined, "reader", extra_filters=extra)
        return {
            "unfiltered": partial(
                self.layer.run_confined,
                "reader",
                "kernel-calls",
                args,
                omit={SECCOMP_ELEMENT},
                purpose="baseline control",
            ),
            "filtered": partial(self.layer.run_tool, "reader", "kernel-calls", *args),
            **{
                f"baseline {name}": partial(
                    self.layer.run_tool, "reader", "syscall", str(resolve_syscall(name))
                )
                for name in STACKED_SYSCALLS
            },
            "stacked": partial(stacked, "proc-status", [], purpose="stacked filters"),
            **{
                f"stacked {name}": partial(
                    stacked,
                    "syscall",
                    [str(resolve_syscall(name))],
                    purpose=f"stacked filters: {name}",
                )
                for name in STACKED_SYSCALLS
            },
        }

    def _baseline(self) -> None:
        # The same harmless calls with no filter reach the kernel, which gives its own answer;
        # with the baseline, the filter answers first.
        names = tuple(FILTER_SAMPLES)
        unfiltered = self._outcome("unfiltered").named_answers
        expected_kernel = {name: errno.value for name, errno in FILTER_SAMPLES.items()}
        host_control(
            self.checks, c.BASELINE_CONTROL, unfiltered, expected_kernel, said=listing(unfiltered)
        )
        filtered = self._outcome("filtered").named_answers
        self.checks.expect_equal(
            c.BASELINE_REFUSES, filtered, dict.fromkeys(names, Errno.EPERM.value)
        )

    def _stacking(self) -> None:
        numbers = {name: resolve_syscall(name) for name in STACKED_SYSCALLS}
        self.readings["stacked_syscall_numbers"] = numbers
        for name, number in numbers.items():
            result = self._outcome(f"baseline {name}")
            self.checks.require(
                c.UNSTACKED(syscall=name, number=number),
                result.ok,
                detail=f"observed {result.observed}",
            )
        stacked = as_mapping(self._outcome("stacked").data["status"])
        inherited = inherited_filters()
        self.checks.require(
            c.STACKED_COUNT(inherited=over_inherited(inherited)),
            stacked["Seccomp"] == "2" and stacked["Seccomp_filters"] == str(inherited + 3),
            detail=f"Seccomp {stacked['Seccomp']}, Seccomp_filters {stacked['Seccomp_filters']}",
        )
        for name in numbers:
            self._expect(
                self._outcome(f"stacked {name}"), Errno.EPERM, c.STACKED_REFUSES(syscall=name)
            )

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
