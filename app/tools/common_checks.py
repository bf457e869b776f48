"""Checks that read the same under every layer, given the exact errno the layer answers with.

Each refusal is set beside its control: the unconfined worker at the tool's uid does the same
thing and succeeds, so what refuses is the layer, not the file's mode or the uid.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path

from app.core.catalogue import Section
from app.core.files import read_regular
from app.core.roles import ROLES, Role
from app.core.run import Run
from app.core.run_tree import CHECK_FILE, OUTPUT_FILES, stage_file
from app.core.secret_names import credential_variables
from app.tools import catalogue as c
from app.tools.at_once import results_at_once
from app.tools.layer import ToolRunner
from app.tools.secret_controls import SecretControls

MAX_BOUNDARY_FILE_BYTES = 4096
# Staged in each role's input by the directory checks, for the role to read.
MARKER_FILE = "marker.txt"
# What each role tries to create in its output directory (and the control does create).
NEW_FILE = "new.txt"


class CommonChecks:
    """The layer-neutral part of the files and environment checks of one run."""

    def __init__(self, run: Run, layer: ToolRunner) -> None:
        self.run = run
        self.layer = layer
        self.checks = run.checks
        self.secrets = SecretControls(run, layer)

    def files(
        self, section: Section, *, own: Mapping[str, Callable[[], None]] | None = None
    ) -> None:
        """The files section (the catalogue's ``files()``), both layers': ``own`` makes the
        layer's own checks of it, each by its id, beside the others and in the catalogue's
        place."""
        self.checks.begin(section)
        self.checks.at_once_in_plan(
            {
                c.READS_CASE.id: self.reads_staged_case,
                c.READS_PROPOSALS.id: self.reads_staged_proposals,
                c.INPUT_WRITE_CONTROL.id: self.input_write_refused,
                **self.hidden_file_checks(),
                c.WRITER_WRITES.id: self.writer_file_read_back,
                **(own or {}),
            }
        )
        # After the others: its control creates a file in every role's output directory.
        self.roles_keep_to_their_directories()

    # --- what the reader was given --------------------------------------------------------

    def reads_staged_case(self) -> None:
        """The reader reads the case file the controller staged for it, byte for byte."""
        host = self.run.paths.workspace("reader").input / "case.json"
        staged = hashlib.sha256(host.read_bytes()).hexdigest()
        inside = self.layer.role_path("reader", "in", "case.json")
        read = self.layer.run_tool("reader", "read-case", inside)
        self.checks.require(
            c.READS_CASE,
            read.ok
            and read.data["sha256"] == staged
            and read.data["case_id"] == self.run.case.case_id,
            detail=f"{inside}: read {read.observed}, case {read.data.get('case_id')}, sha256 "
            + (
                f"{staged[:16]}…"
                if read.data.get("sha256") == staged
                else f"{read.data.get('sha256')}, the controller's {staged}"
            ),
        )

    def reads_staged_proposals(self) -> None:
        """The reader opens every proposal staged for it, each the bytes its case entry names."""
        reads = results_at_once(
            {
                entry.id: partial(
                    self.layer.run_tool,
                    "reader",
                    "read-proposal",
                    self.layer.role_path("reader", "in", f"proposals/{entry.id}.json"),
                )
                for entry in self.run.case.suppliers
            }
        )
        seen = {
            sid: (read.data.get("supplier_id"), read.data.get("sha256"))
            for sid, read in reads.items()
        }
        expected = {entry.id: (entry.id, entry.sha256) for entry in self.run.case.suppliers}
        self.checks.require(
            c.READS_PROPOSALS,
            seen == expected,
            detail=", ".join(
                f"{sid} {str(digest)[:16]}…" if seen == expected else f"{sid} {digest}"
                for sid, (_, digest) in seen.items()
            ),
        )

    # --- refusals, each beside its control ------------------------------------------------

    def input_write_refused(self) -> None:
        """Its own input case file is writable at the tool's uid, but not through the layer.
        Neither open writes a byte: the control's succeeds, the reader's is refused."""
        host = self.run.paths.workspace("reader").input / "case.json"
        before = hashlib.sha256(host.read_bytes()).hexdigest()
        st = host.stat()
        uid = self.run.tool.uid
        control = self.layer.run_unconfined("open-write", str(host))
        unchanged = hashlib.sha256(host.read_bytes()).hexdigest() == before
        self.checks.require(
            c.INPUT_WRITE_CONTROL(uid=uid),
            control.ok and unchanged and st.st_uid == uid,
            detail=f"{host}: the open {control.observed}, unchanged {unchanged}, owner {st.st_uid}",
        )
        refusals = self.layer.refusals
        inside = self.layer.role_path("reader", "in", "case.json")
        refused = self.layer.run_tool("reader", "open-write", inside)
        self.checks.require(
            c.INPUT_WRITE(reason=refusals.input_write_reason, errno=refusals.input_write),
            refused.refused_with(refusals.input_write),
            detail=f"{inside}: observed {refused.observed}",
        )

    def hidden_file_checks(self) -> dict[str, Callable[[], None]]:
        """Another role's file, the supplier key and the AWS credential: each open at the tool's
        uid without the layer, refused with the layer's exact errno to the reader and, for the
        AWS credential (the Pod Identity token in the cluster), to every role; then the real
        secrets root's alone. Each check by its id, for CheckLog.at_once_in_plan."""
        run = self.run
        checks: dict[str, Callable[[], None]] = {}
        for target, roles in c.HIDDEN_TARGETS:
            checks[c.HIDDEN_CONTROL.id_for(target=target)] = partial(self._hidden_control, target)
            for role in roles:
                checks[c.HIDDEN.id_for(target=target, role=role)] = partial(
                    self._hidden_refused, target, role
                )
        checks[c.SECRETS_ROOT_ONLY.id] = partial(
            self.secrets.root_only, [run.supplier.key_file, run.aws_credential.path]
        )
        return checks

    def _hidden(self, target: str) -> tuple[str, Path]:
        """A hidden target's label and path."""
        run = self.run
        hidden: dict[str, tuple[str, Path]] = {
            "writer-private": (
                "the writer's private file",
                run.paths.workspace("writer").input / "private.json",
            ),
            "supplier-key": ("the supplier key file", run.supplier.key_file),
            "aws-credential": (run.aws_credential.description, run.aws_credential.path),
        }
        return hidden[target]

    def _hidden_control(self, target: str) -> None:
        label, path = self._hidden(target)
        # A secret's control never opens the secret (app/tools/secret_controls.py).
        if target in c.SECRET_TARGETS:
            holds, seen = self.secrets.judged(path, self.secrets.call(path)())
            opener, opened = self.secrets.opener(), self.secrets.label(label)
        else:
            control = self.layer.run_unconfined("open-read", str(path))
            holds, seen = control.ok, f"{path}: the open {control.observed}"
            opener = f"an unconfined process at the tool's uid {self.run.tool.uid}"
            opened = label
        self.checks.require(
            c.HIDDEN_CONTROL(target=target, opener=opener, label=opened),
            holds,
            detail=seen,
        )

    def _hidden_refused(self, target: str, role: Role) -> None:
        refusals = self.layer.refusals
        label, path = self._hidden(target)
        refused = self.layer.run_tool(role, "open-read", str(path))
        self.checks.require(
            c.HIDDEN(
                target=target,
                role=role,
                label=label,
                reason=refusals.hidden_file_reason,
                errno=refusals.hidden_file,
            ),
            refused.refused_with(refusals.hidden_file),
            detail=f"{path}: observed {refused.observed}",
        )

    # --- what the writer may do -----------------------------------------------------------

    def writer_file_read_back(self) -> None:
        """The writer writes one of its own output files; the controller reads the same bytes."""
        text = f"written by the writer in run {self.run.run_id}\n"
        inside = self.layer.role_path("writer", "out", CHECK_FILE)
        written = self.layer.run_tool("writer", "write-file", inside, text)
        host = self.run.paths.workspace("writer").output / CHECK_FILE
        back = read_regular(host, MAX_BOUNDARY_FILE_BYTES) if written.ok else b""
        self.checks.require(
            c.WRITER_WRITES,
            written.ok
            and back == text.encode("utf-8")
            and written.data["sha256"] == hashlib.sha256(back).hexdigest(),
            detail=f"the write of {inside} {written.observed}, {len(back)} bytes read back"
            + ("" if inside == str(host) else f" from {host}"),
        )

    # --- every role in its own directories ------------------------------------------------

    def roles_keep_to_their_directories(self) -> None:
        """Each role reads its own input and writes its own outputs, creates no file, and
        reaches no other role's directories; an unconfined process at the tool's uid does all."""
        run = self.run
        for role in ROLES:
            stage_file(
                self._marker(role), f"input of the {role}\n".encode(), run.tool, tool_owned=False
            )
        everything = [
            op
            for role in ROLES
            for op in (
                f"read:{self._marker(role)}",
                *(f"write:{path}" for path in self._outputs(role)),
                f"create:{run.paths.workspace(role).output / NEW_FILE}",
            )
        ]
        control = self.layer.run_unconfined("access", *everything).data.get("answers")
        self.checks.require(
            c.DIRECTORIES_CONTROL(uid=run.tool.uid),
            control == ["ok"] * len(everything),
            detail=f"all {len(everything)} succeed"
            if control == ["ok"] * len(everything)
            else f"answers {control}",
        )
        # The control above has created and removed a file in every role's output directory;
        # now each role, touching only its own outputs (and failing to create a file there).
        self.checks.at_once(*(partial(self._own_directories, role) for role in ROLES))

    def _own_directories(self, role: Role) -> None:
        refusals = self.layer.refusals
        ops, others = self._role_access(role)
        answers = self.layer.run_tool(role, "access", *ops).data["answers"]
        own = self.layer.role_path(role, "in", MARKER_FILE)
        names = OUTPUT_FILES[role]
        mine, created, theirs = (
            answers[: len(names) + 1],
            answers[len(names) + 1],
            answers[len(names) + 2 :],
        )
        theirs_named = " or the ".join(f"{other}'s" for other in others)
        self.checks.require(
            c.OWN_DIRECTORIES(role=role, names=", ".join(names)),
            mine == ["ok"] * (len(names) + 1),
            detail=f"{own} and its output files: "
            + (f"all {len(mine)} succeed" if mine == ["ok"] * len(mine) else f"answers {mine}"),
        )
        self.checks.expect_equal(
            c.NO_NEW_FILE(
                role=role,
                reason=refusals.output_create_reason,
                errno=refusals.output_create,
            ),
            created,
            refusals.output_create.value,
        )
        foreign = len(answers) - len(names) - 2
        self.checks.require(
            c.OTHER_DIRECTORIES(role=role, others=theirs_named, errno=refusals.hidden_file),
            theirs == [refusals.hidden_file.value] * foreign,
            detail=f"answers {theirs}",
        )

    def _role_access(self, role: Role) -> tuple[list[str], list[Role]]:
        """The role's own opens (its input, each output, one new file), then the other roles'
        files it must not reach; and those other roles."""
        own = self.layer.role_path(role, "in", MARKER_FILE)
        ops = [
            f"read:{own}",
            *(f"write:{self.layer.role_path(role, 'out', name)}" for name in OUTPUT_FILES[role]),
            f"create:{self.layer.role_path(role, 'out', NEW_FILE)}",
        ]
        others = [other for other in ROLES if other != role]
        foreign = [
            op
            for other in others
            for op in (
                f"read:{self._marker(other)}",
                *(f"write:{path}" for path in self._outputs(other)),
            )
        ]
        return [*ops, *foreign], others

    def _marker(self, role: Role) -> Path:
        return self.run.paths.workspace(role).input / MARKER_FILE

    def _outputs(self, role: Role) -> list[Path]:
        output = self.run.paths.workspace(role).output
        return [output / name for name in OUTPUT_FILES[role]]

    # --- the environment ------------------------------------------------------------------

    def no_credential_variables(self, names: Iterable[str]) -> None:
        """No variable in the reader's environment could hand it an AWS credential or a model
        key."""
        names = list(names)
        present = credential_variables(names)
        self.checks.require(
            c.NO_CREDENTIAL_VARIABLES,
            not present,
            detail=f"present: {present}" if present else f"none among its {len(names)} variables",
        )
