"""The controller is not dumpable (app/controller/undumpable.py): a process at its uid is refused
its memory, its environment and its descriptors, beside a dumpable process at the same uid that
the same probe reaches.

The probe is the unconfined control's program (the controller's own, app/tools/unconfined.py),
at the tools' uid. It proves something only where that uid is the controller's, as in the
cluster and the rehearsal: locally the controller is root and its tools run at another uid.
Yama, where it restricts ptrace, would refuse the sibling too, and the flag could not be told
apart from it: both lines then SKIP, saying so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from app.core.run import Run
from app.tools import catalogue as c
from app.tools.layer import ToolRunner
from app.tools.seccomp import resolve_syscall

PTRACE_SCOPE: Final = Path("/proc/sys/kernel/yama/ptrace_scope")
# What the probe gets of a process at its own uid (app/tools/worker/probes.py's _peek): of a
# dumpable one, the kernel's own answers (no byte is mapped at address 0); of a process that is
# not dumpable, the refusals of a ptrace-mode access check.
DUMPABLE: Final = {"mem": "ok", "environ": "ok", "pidfd_getfd": "ok", "process_vm_readv": "EFAULT"}
UNDUMPABLE: Final = {
    "mem": "EACCES",
    "environ": "EACCES",
    "pidfd_getfd": "EPERM",
    "process_vm_readv": "EPERM",
}


def _cannot_show(run: Run) -> str | None:
    """Why the check cannot be made here, or None."""
    if os.geteuid() != run.tool.uid:
        return (
            f"the controller runs as uid {os.geteuid()} here and its tools at uid "
            f"{run.tool.uid}: a process at the controller's uid is root, whom the dumpable flag "
            "does not stop, and one at the tools' is refused by its uid alone; the cluster and "
            "the rehearsal, which run both at one uid, make this check"
        )
    try:
        scope = int(PTRACE_SCOPE.read_text(encoding="ascii"))
    except FileNotFoundError:
        return None
    if scope > 0:
        return (
            f"Yama's ptrace_scope is {scope} here: it refuses a process at the same uid the "
            "sibling's memory too, so the dumpable flag cannot be shown apart from it (Yama "
            "refuses the controller's as well)"
        )
    return None


# A container's filter may refuse a syscall to every process (RuntimeDefault refuses
# pidfd_getfd without CAP_SYS_PTRACE): the /proc files stay the flag's alone, as no filter gates
# an open of them.
FLAG_ALONE: Final = ("mem", "environ")


def judged(
    sibling: Mapping[str, object], controller: Mapping[str, object]
) -> tuple[bool, bool, str, str]:
    """Whether the control and the refusal hold, and each one's detail.

    The control holds where the dumpable sibling is reached by the /proc opens and every other
    probe gets the kernel's answer or its filter's EPERM; the refusal holds where the
    controller gets the flag's refusal of each probe the sibling got through, and EPERM of any
    its filter refused to both (named as the filter's, not the flag's).
    """
    platform = [
        name for name in DUMPABLE if name not in FLAG_ALONE and sibling.get(name) == "EPERM"
    ]
    reached = [name for name in DUMPABLE if name not in platform]
    control = set(sibling) == set(DUMPABLE) and all(
        sibling[name] == DUMPABLE[name] for name in reached
    )
    refused = set(controller) == set(UNDUMPABLE) and all(
        controller[name] == UNDUMPABLE[name] for name in DUMPABLE
    )
    by_filter = (
        f"; refused to the sibling too, so its filter's and not the flag's: {', '.join(platform)}"
        if platform
        else ""
    )
    return control, refused, _listed(sibling) + by_filter, _listed(controller) + by_filter


def check_undumpable(run: Run, layer: ToolRunner, sibling_pid: int) -> None:
    """The two lines: the dumpable sibling reached (the control), the controller refused."""
    me, uid = os.getpid(), os.geteuid()
    control, refused = c.UNDUMPABLE_CONTROL(uid=uid), c.UNDUMPABLE(uid=uid)
    reason = _cannot_show(run)
    if reason is not None:
        run.checks.skip(control, reason)
        run.checks.skip(refused, reason)
        return
    answers = layer.run_unconfined(
        "peek-process",
        f"pidfd_getfd={resolve_syscall('pidfd_getfd')}",
        str(sibling_pid),
        str(me),
    ).data["answers"]
    control_holds, refusal_holds, seen, got = judged(
        dict(answers[str(sibling_pid)]), dict(answers[str(me)])
    )
    run.checks.require(control, control_holds, detail=f"pid {sibling_pid}: {seen}")
    run.checks.require(refused, refusal_holds, detail=f"pid {me}: {got}")


def _listed(answers: Mapping[str, object]) -> str:
    return ", ".join(f"{name} {answer}" for name, answer in answers.items())
