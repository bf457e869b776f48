"""Stages each role's inputs in its own directory, as the controller read them from the store."""

from __future__ import annotations

import os

from app.controller.phases.identity import StoredCase
from app.core.draft import draft_reference
from app.core.files import json_bytes
from app.core.run import Run
from app.core.run_tree import stage_file


def stage_inputs(run: Run, stored: StoredCase) -> None:
    paths, tool = run.paths, run.tool
    reader_in = paths.workspace("reader").input
    # The reader's case file belongs to the tool's uid, so a refused write through its input
    # is the layer's doing and not the file's mode.
    stage_file(reader_in / "case.json", stored.case_bytes, tool, tool_owned=True)
    proposals = reader_in / "proposals"
    proposals.mkdir(mode=0o755)
    os.chmod(proposals, 0o755)  # the tool's uid must list it, whatever mkdir's umask made of it
    for supplier_id, data in stored.proposal_bytes.items():
        stage_file(reader_in / "proposals" / f"{supplier_id}.json", data, tool, tool_owned=False)
    private = {"draft_reference": draft_reference(run.run_id), "note": "writer's private notes"}
    stage_file(
        paths.workspace("writer").input / "private.json",
        json_bytes(private),
        tool,
        tool_owned=False,
    )
