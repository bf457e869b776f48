"""A container runtime's masked /proc, simulated in a private mount namespace.

What runc applies to a container whose `procMount` is `Default` (the OCI runtime spec's
`linux.maskedPaths` and `linux.readonlyPaths`, with the defaults containerd fills in:
pkg/oci/spec.go, v2.3.4): a masked directory gets a read-only tmpfs over it, a masked file
/dev/null bound over it, and a read-only path a read-only bind of itself. `procMount: Unmasked`
leaves both lists empty. The mounts are made by `unshare -m` in a mount namespace of the
command's own, with private propagation, so the host's /proc is never touched; paths this
kernel does not have are skipped, as runc skips them.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

MASKED_PATHS = (
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
    "/proc/scsi",
)
READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")


def _mask_script(masked: bool) -> str:
    lines = ["set -e"]
    if masked:
        for path in MASKED_PATHS:
            quoted = shlex.quote(path)
            lines.append(
                f"if [ -d {quoted} ]; then mount -t tmpfs -o ro tmpfs {quoted};"
                f" elif [ -e {quoted} ]; then mount --bind /dev/null {quoted}; fi"
            )
        for path in READONLY_PATHS:
            quoted = shlex.quote(path)
            lines.append(
                f"if [ -e {quoted} ]; then mount --bind {quoted} {quoted};"
                f" mount -o remount,bind,ro {quoted}; fi"
            )
    lines.append('exec "$@"')
    return "\n".join(lines)


def in_container_proc(
    command: Sequence[str], *, masked: bool, drop_to: tuple[int, int] | None = None
) -> list[str]:
    """``command`` in a private mount namespace whose /proc is masked (or not) like a
    container's; ``drop_to`` (uid, gid) runs it there as that identity, as the container's
    non-root process would be."""
    program = list(command)
    if drop_to is not None:
        uid, gid = drop_to
        program = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", *program]
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        _mask_script(masked),
        "sh",
        *program,
    ]
