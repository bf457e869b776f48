"""What the kernel refuses a bubblewrap tool process, each beside the control that shows which
switch refuses it: nested user namespaces, the baseline seccomp filter (and that filters
stack), and a tool outliving its killed bwrap."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from functools import partial
from typing import Any, Final

from app.core.results import Errno, ToolResult, as_mapping, listing
from app.core.run import Run
from app.tools.attacks import FILTER_SAMPLES, kernel_call_args
from app.tools.bubblewrap.policy import SECCOMP_ELEMENT
from app.tools.bubblewrap.runner import BwrapRunner
from app.tools.controls import host_control
from app.tools.inherited import inherited_filters, over_inherited
from app.tools.seccomp import resolve_syscall, single_syscall_filter
from app.tools.together import run_named

# The syscalls the stacking demo refuses: harmless on purpose (the point is that added filters
# reach the child), and each takes at most the probe's one scratch pointer.
STACKED_SYSCALLS: Final = ("getppid", "uname")


class KernelChecks:
    """The "process" section of a bubblewrap run."""

    def __init__(self, run: Run, layer: BwrapRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.readings: dict[str, Any] = {}
        self.got: Mapping[str, Future[ToolResult]] = {}

    def check(self) -> None:
        # Every reader but the held ones at once: each is a sandbox of its own that writes
        # nothing; the lines are decided from the outcomes in their order.
        self.got = run_named({**self._nested_userns_calls(), **self._filter_calls()})
        self._nested_userns()
        self._baseline()
        self._stacking()
        self._orphans()

    def _outcome(self, name: str) -> ToolResult:
        return self.got[name].result()

    def _expect(self, result: ToolResult, expected: Errno, claim: str) -> None:
        self.checks.require(
            result.refused_with(expected),
            f"{claim}: {expected}",
            detail=f"observed {result.observed}",
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
        self.checks.require(
            control.ok,
            "control: a child started without --disable-userns may create a further user namespace",
            detail=f"the unshare {control.observed}",
        )
        self._expect(
            self._outcome("userns"),
            Errno.ENOSPC,
            "so what refuses the reader a further user namespace is --disable-userns",
        )

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
            self.checks,
            "control: with no seccomp filter, the reader's "
            f"{', '.join(names)} calls (numbered by libseccomp) reach the kernel, which answers "
            f"{listing(expected_kernel)}",
            unfiltered,
            expected_kernel,
        )
        filtered = self._outcome("filtered").named_answers
        self.checks.expect_equal(
            filtered,
            dict.fromkeys(names, Errno.EPERM.value),
            f"so the baseline filter is what refuses {', '.join(names)}: {Errno.EPERM}",
        )

    def _stacking(self) -> None:
        numbers = {name: resolve_syscall(name) for name in STACKED_SYSCALLS}
        self.readings["stacked_syscall_numbers"] = numbers
        for name, number in numbers.items():
            result = self._outcome(f"baseline {name}")
            self.checks.require(
                result.ok,
                f"{name} (syscall {number}, numbered by libseccomp) succeeds in the reader "
                "under the baseline filter alone",
                detail=f"observed {result.observed}",
            )
        stacked = as_mapping(self._outcome("stacked").data["status"])
        inherited = inherited_filters()
        self.checks.require(
            stacked["Seccomp"] == "2" and stacked["Seccomp_filters"] == str(inherited + 3),
            "with one filter for getppid and one for uname added, the reader holds three "
            f"stacked seccomp filters of its own{over_inherited(inherited)}: Seccomp_filters "
            f"{inherited + 3}",
            detail=f"Seccomp {stacked['Seccomp']}, Seccomp_filters {stacked['Seccomp_filters']}",
        )
        for name in numbers:
            self._expect(
                self._outcome(f"stacked {name}"),
                Errno.EPERM,
                f"and with both added, {name} is refused by its filter",
            )

    def _orphans(self) -> None:
        control = self.layer.kill_while_held(
            "reader",
            wait_for_death=False,
            omit={"--die-with-parent"},
            purpose="orphan control",
        )
        self.checks.require(
            control.outlived and control.answered,
            "control: started without --die-with-parent, a reader whose bwrap is killed with "
            "SIGKILL (as a timeout kills it) lives on, and answers once released",
            detail=f"still there {control.outlived}, answered {control.answered}",
        )
        killed = self.layer.kill_while_held("reader", wait_for_death=True, purpose="")
        self.checks.require(
            killed.output_closed and not killed.outlived and not killed.answered,
            "so a reader whose bwrap is killed is gone with it: every process of its sandbox "
            "closed its output, and it never answered",
            detail=f"output closed {killed.output_closed}, still there {killed.outlived}, "
            f"answered {killed.answered}",
        )
