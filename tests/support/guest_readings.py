"""Guest readings written for the tests from what a Nitro sandbox and its node report: the
sandbox has a kernel build of its own, an uptime as young as its pod, virtio disks and an
enclave's product name; an ordinary pod on the same node reports the node's."""

from __future__ import annotations

from app.controller.guest import GuestReadings

SANDBOX = GuestReadings(
    kernel="6.12.58 #1 SMP PREEMPT_DYNAMIC Mon Nov  9 06:12:40 UTC 2026",
    uptime_seconds=61.18,
    block_devices=("dm-0", "vda", "vdb"),
    product_name="c7i.enclave",
    read_at="2026-11-30T10:01:05+00:00",
    process_started_at="2026-11-30T10:01:03+00:00",
)
NODE = GuestReadings(
    kernel="6.12.58 #3 SMP PREEMPT_DYNAMIC Sat Nov  7 21:40:02 UTC 2026",
    uptime_seconds=5432.7,
    block_devices=("loop0", "loop1", "nvme0n1", "nvme1n1"),
    product_name="c7i.2xlarge",
    read_at="2026-11-30T10:01:40+00:00",
    process_started_at="2026-11-30T10:01:39+00:00",
)
