"""The bubblewrap layer's own checks: what a tool process got, and each refusal with its control."""

from __future__ import annotations

import hashlib
import os
from functools import partial
from pathlib import Path

from app.core.draft import ExpectedDraft
from app.core.run import Run
from app.tools.attack_checks import AttackChecks
from app.tools.bubblewrap.attack_answers import ANSWERS
from app.tools.bubblewrap.kernel_checks import KernelChecks
from app.tools.bubblewrap.network_checks import check_network
from app.tools.bubblewrap.policy import INPUT_MOUNT
from app.tools.bubblewrap.process_checks import ProcessChecks
from app.tools.bubblewrap.provenance import check_provenance
from app.tools.bubblewrap.runner import BwrapRunner
from app.tools.catalogue import ATTACKS_SECTION
from app.tools.catalogue import bubblewrap as c
from app.tools.catalogue.order import BUBBLEWRAP, make_in_order
from app.tools.common_checks import CommonChecks
from app.tools.draft_checks import verified_draft
from app.tools.layer import LayerChecks, LayerReadings


class BubblewrapChecks(LayerChecks):
    """process: the layer section; boundary: files, process, network, attacks (in the
    catalogue's order, order.BUBBLEWRAP); submit_draft: business."""

    submission = BUBBLEWRAP.submission
    process_sections = BUBBLEWRAP.process
    boundary_sections = BUBBLEWRAP.boundary

    def __init__(self, run: Run, layer: BwrapRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.common = CommonChecks(run, layer)
        self.processes = ProcessChecks(run, layer)
        self.kernel = KernelChecks(run, layer)
        self.attacks = AttackChecks(run, layer, ANSWERS)

    def process(self) -> None:
        make_in_order(self.checks, self.process_sections, {c.LAYER.name: self._layer})

    def boundary(self) -> None:
        make_in_order(
            self.checks,
            self.boundary_sections,
            {
                c.FILES.name: partial(
                    self.common.files, c.FILES, own={c.SAME_FILE.id: self._same_file}
                ),
                c.PROCESS.name: self.kernel.check,
                c.NETWORK.name: partial(check_network, self.run, self.layer),
                ATTACKS_SECTION.name: self.attacks.check,
            },
        )

    def _layer(self) -> None:
        self.checks.begin(c.LAYER, root=os.geteuid() == 0)
        check_provenance(self.run, self.layer.readings)
        self.processes.what_the_tool_got()

    def _same_file(self) -> None:
        """The reader's /input/case.json is the controller's file, not a copy: the same inode."""
        host = self.run.paths.workspace("reader").input / "case.json"
        inside = f"{INPUT_MOUNT}/case.json"
        seen = self.layer.run_tool("reader", "open-read", inside)
        fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            host_stat = os.fstat(fd)
        finally:
            os.close(fd)
        same = (seen.data.get("device"), seen.data.get("inode"))
        self.checks.require(
            c.SAME_FILE,
            seen.ok and same == (host_stat.st_dev, host_stat.st_ino),
            detail=f"{inside}: the open {seen.observed}, device/inode {same[0]}/{same[1]}; "
            f"the controller's {host_stat.st_dev}/{host_stat.st_ino}",
        )

    def submit_draft(self, draft_path: Path, expected: ExpectedDraft) -> None:
        body = verified_draft(self.run, draft_path, expected)
        reply = self.run.supplier_client.request(
            "POST",
            f"/cases/{self.run.case.case_id}/recommendations",
            body=body,
            content_type="text/plain; charset=utf-8",
        )
        self.processes.readings["draft_submission"] = {
            "sha256": hashlib.sha256(body).hexdigest(),
            "status": reply.status,
            "request_id": reply.request_id,
        }
        self.checks.expect_equal(c.DRAFT_SUBMITTED, reply.status, 201)

    def readings(self) -> LayerReadings:
        return LayerReadings(
            process={**self.processes.readings, **self.kernel.readings},
            attacks=self.attacks.answers_seen,
        )
