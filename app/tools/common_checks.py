"""Checks that read the same under every layer, given the exact errno the layer answers with.

Each refusal is set beside its control: the unconfined worker at the tool's uid does the same
thing and succeeds, so what refuses is the layer, not the file's mode or the uid.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from app.core.files import read_regular
from app.core.roles import ROLES, Role
from app.core.run import Run
from app.core.secret_names import MODEL_KEY_VARIABLES, credential_variables
from app.tools.layer import ToolRunner

BOUNDARY_FILE = "boundary-check.txt"
MAX_BOUNDARY_FILE_BYTES = 4096


class CommonChecks:
    """The layer-neutral part of the files and environment checks of one run."""

    def __init__(self, run: Run, layer: ToolRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks

    # --- what the reader was given --------------------------------------------------------

    def reads_staged_case(self) -> None:
        """The reader reads the case file the controller staged for it, byte for byte."""
        host = self.run.paths.workspace("reader").input / "case.json"
        staged = hashlib.sha256(host.read_bytes()).hexdigest()
        inside = self.layer.role_path("reader", "in", "case.json")
        read = self.layer.run_tool("reader", "read-case", inside)
        self.checks.require(
            read.ok
            and read.data["sha256"] == staged
            and read.data["case_id"] == self.run.case.case_id,
            f"the reader reads its assigned case at {inside}: case {self.run.case.case_id}, the "
            f"same sha256 as the controller's copy ({staged[:16]}…)",
            detail=f"read {read.observed}, sha256 {read.data.get('sha256')}",
        )

    def reads_staged_proposals(self) -> None:
        """The reader opens every proposal staged for it, each the bytes its case entry names."""
        case = self.run.case
        seen = {}
        for entry in case.suppliers:
            path = self.layer.role_path("reader", "in", f"proposals/{entry.id}.json")
            result = self.layer.run_tool("reader", "read-proposal", path)
            seen[entry.id] = (result.data.get("supplier_id"), result.data.get("sha256"))
        expected = {entry.id: (entry.id, entry.sha256) for entry in case.suppliers}
        self.checks.require(
            seen == expected,
            f"the reader reads its assigned proposals ({', '.join(expected)}), each the bytes "
            "whose sha256 the case entry names",
            detail=f"read {seen}",
        )

    # --- refusals, each beside its control ------------------------------------------------

    def input_write_refused(self) -> None:
        """Its own input case file is writable at the tool's uid, but not through the layer."""
        host = self.run.paths.workspace("reader").input / "case.json"
        before = hashlib.sha256(host.read_bytes()).hexdigest()
        st = host.stat()
        uid = self.run.tool.uid
        control = self.layer.run_unconfined("open-write", str(host))
        unchanged = hashlib.sha256(host.read_bytes()).hexdigest() == before
        self.checks.require(
            control.ok and unchanged and st.st_uid == uid,
            f"control: an unconfined process at the tool's uid {uid} opens the reader's input "
            f"case.json for writing (owner {st.st_uid}), and the file is left unchanged",
            detail=f"the open {control.observed}, unchanged {unchanged}, owner {st.st_uid}",
        )
        inside = self.layer.role_path("reader", "in", "case.json")
        refusals = self.layer.refusals
        refused = self.layer.run_tool("reader", "open-write", inside)
        self.checks.require(
            refused.refused_with(refusals.input_write),
            f"the reader cannot open it for writing at {inside}: "
            f"{refusals.input_write_reason}: {refusals.input_write}",
            detail=f"observed {refused.observed}",
        )

    def hidden_files_refused(self) -> None:
        """Another role's file, the supplier key and the AWS credential: open at the tool's
        uid without the layer, refused with the layer's exact errno to the reader and, for the
        AWS credential (the Pod Identity token in the cluster), to every role."""
        run, refusals = self.run, self.layer.refusals
        targets: Iterable[tuple[str, Path, tuple[Role, ...]]] = (
            (
                "the writer's private file",
                run.paths.workspace("writer").input / "private.json",
                ("reader",),
            ),
            ("the supplier key file", run.supplier.key_file, ("reader",)),
            (run.aws_credential.description, run.aws_credential.path, ROLES),
        )
        for label, path, roles in targets:
            control = self.layer.run_unconfined("open-read", str(path))
            self.checks.require(
                control.ok,
                f"control: an unconfined process at the tool's uid {run.tool.uid} opens "
                f"{label} ({path})",
                detail=f"the open {control.observed}",
            )
            for role in roles:
                refused = self.layer.run_tool(role, "open-read", str(path))
                self.checks.require(
                    refused.refused_with(refusals.hidden_file),
                    f"the {role} cannot open {label}: {refusals.hidden_file_reason}: "
                    f"{refusals.hidden_file}",
                    detail=f"observed {refused.observed}",
                )

    # --- what the writer may do -----------------------------------------------------------

    def writer_file_read_back(self) -> None:
        """The writer creates a file in its own output; the controller reads the same bytes."""
        text = f"written by the writer in run {self.run.run_id}\n"
        inside = self.layer.role_path("writer", "out", BOUNDARY_FILE)
        created = self.layer.run_tool("writer", "create-file", inside, text)
        host = self.run.paths.workspace("writer").output / BOUNDARY_FILE
        back = read_regular(host, MAX_BOUNDARY_FILE_BYTES) if created.ok else b""
        self.checks.require(
            created.ok
            and back == text.encode("utf-8")
            and created.data["sha256"] == hashlib.sha256(back).hexdigest(),
            f"the writer creates {inside}, and the controller reads the same {len(back)} bytes "
            + ("back" if inside == str(host) else f"back from {host}"),
            detail=f"the create {created.observed}, read back {len(back)} bytes",
        )

    # --- the environment ------------------------------------------------------------------

    def no_credential_variables(self, role: str, names: Iterable[str]) -> None:
        """No variable in the role's environment could hand it an AWS credential or a model key."""
        present = credential_variables(names)
        self.checks.require(
            not present,
            f"so the {role} holds no AWS_ variable and none of {', '.join(MODEL_KEY_VARIABLES)}",
            detail=f"present: {present}",
        )
