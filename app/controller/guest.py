"""Four readings of the machine a process runs on, as the kernel it runs on reports them.

In a Nitro sandbox each pod has a kernel of its own: its build, its uptime (it booted with the
pod), its disks (virtio) and its product name (an enclave) differ from the node's, which an
ordinary pod on the same node reports. The controller records its own readings in the run's
evidence and prints them as one line, ``GUEST_READINGS=<json>``, which the comparison pod prints
too, so that ``nitro-evidence`` can set the two side by side from the pods' logs.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

LINE_PREFIX: Final = "GUEST_READINGS="
MAX_READING_CHARS: Final = 512


@dataclass(frozen=True)
class GuestReadings:
    kernel: str  # `uname -rv`: the release and the build (number and date)
    uptime_seconds: float
    block_devices: tuple[str, ...]
    product_name: str | None  # /sys/class/dmi/id/product_name; None where there is none
    read_at: str  # when these were read, ISO 8601 UTC
    process_started_at: str  # when the reading process started, from its own /proc/self/stat

    def as_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["block_devices"] = list(self.block_devices)
        return document

    def line(self) -> str:
        return LINE_PREFIX + json.dumps(self.as_json(), sort_keys=True)

    @classmethod
    def from_json(cls, document: Any) -> GuestReadings:
        if not isinstance(document, dict):
            raise ValueError("the readings are not a JSON object")
        product = document["product_name"]
        devices = document["block_devices"]
        if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
            raise ValueError("block_devices is not a list of names")
        return cls(
            kernel=_text(document["kernel"]),
            uptime_seconds=float(document["uptime_seconds"]),
            block_devices=tuple(devices),
            product_name=None if product is None else _text(product),
            read_at=_text(document["read_at"]),
            process_started_at=_text(document["process_started_at"]),
        )


def _text(value: object) -> str:
    if not isinstance(value, str) or len(value) > MAX_READING_CHARS:
        raise ValueError(f"not a reading: {value!r:.80}")
    return value


def _first_line(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()[:MAX_READING_CHARS]
    except OSError:
        return None


def read_guest(proc: Path = Path("/proc"), sys: Path = Path("/sys")) -> GuestReadings:
    """Reads the four values, and when this process started, from procfs and sysfs."""
    now = datetime.now(UTC)
    uname = os.uname()
    uptime = float((proc / "uptime").read_text(encoding="ascii").split()[0])
    try:
        devices = tuple(sorted(entry.name for entry in (sys / "block").iterdir()))
    except OSError:
        devices = ()
    # Field 22 of /proc/<pid>/stat is the start time in clock ticks after boot; the fields
    # after the command name (which may hold spaces) are split after its closing ')'.
    stat = (proc / "self" / "stat").read_text(encoding="ascii")
    ticks = int(stat.rpartition(")")[2].split()[19])
    booted = now - timedelta(seconds=uptime)
    started = booted + timedelta(seconds=ticks / os.sysconf("SC_CLK_TCK"))
    return GuestReadings(
        kernel=f"{uname.release} {uname.version}",
        uptime_seconds=uptime,
        block_devices=devices,
        product_name=_first_line(sys / "class" / "dmi" / "id" / "product_name"),
        read_at=now.isoformat(timespec="seconds"),
        process_started_at=started.isoformat(timespec="seconds"),
    )


def readings_in_log(log: str) -> GuestReadings | None:
    """The last readings line in a pod's log; None when the log has none."""
    for line in reversed(log.splitlines()):
        if line.startswith(LINE_PREFIX):
            return GuestReadings.from_json(json.loads(line[len(LINE_PREFIX) :]))
    return None
