"""The control beside a secret's refusal, made without any process but the controller's opening
the secret itself.

A role's refusal of the supplier key or the AWS credential is the layer's doing only if a
process at the tool's uid outside the layer could open the same path. Locally the controller is
root and the real files are root's alone; the control starts in the decoy view
(app/tools/decoy_view.py), as every nono role does, where the path holds a decoy of the
secret's owner and mode: it opens that, and the check reads back that it opened the decoy's
inode, not the secret's. In the cluster the tools run at the controller's own uid and gid, and
the pod's mounts are readable there: the controller, which holds the secret anyway, opens it
itself.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path

from app.core.results import Errno, ToolResult
from app.core.run import Run
from app.tools import catalogue as c
from app.tools.layer import ToolRunner
from app.tools.unconfined import run_unconfined


def _controller_opens(path: Path) -> ToolResult:
    """The controller's own open of ``path`` (read nothing, close at once), as a probe's result."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as error:
        return ToolResult("open-read", False, Errno(errno.errorcode[error.errno or 0]))
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return ToolResult("open-read", True, None, {"device": st.st_dev, "inode": st.st_ino})


class SecretControls:
    """How this run shows a secret's path open to the tool's uid without a layer."""

    def __init__(self, run: Run, layer: ToolRunner) -> None:
        self.run = run
        self.layer = layer
        self.controller_is_the_tool = os.geteuid() == run.tool.uid and os.getegid() == run.tool.gid

    def call(self, path: Path) -> Callable[[], ToolResult]:
        view = self.run.decoy_view
        if view is not None:
            return partial(
                run_unconfined,
                self.run.paths,
                self.run.tool,
                "open-read",
                [str(path)],
                counts=self.run.tool_counts,
                decoys=view,
            )
        return partial(_controller_opens, path)

    def opener(self) -> str:
        uid = self.run.tool.uid
        if self.run.decoy_view is not None:
            return f"an unconfined process at the tool's uid {uid}, in the tools' decoy view,"
        return f"the controller itself, at the tools' own uid and gid {uid}/{self.run.tool.gid},"

    def label(self, label: str) -> str:
        if self.run.decoy_view is not None:
            return f"{label}'s decoy, at its path with its owner and mode"
        return f"{label}, which no other process opens"

    def judged(self, path: Path, outcome: ToolResult) -> tuple[bool, str]:
        """Whether the control holds, and what it saw."""
        view = self.run.decoy_view
        if view is None:
            if not self.controller_is_the_tool:
                return False, (
                    f"{path}: no decoy view, and the controller (uid {os.geteuid()}) does not run "
                    f"at the tools' uid {self.run.tool.uid}"
                )
            return outcome.ok, f"{path}: the controller's open {outcome.observed}"
        decoy = view.decoys / path.relative_to(view.secrets)
        expected = os.stat(decoy)
        opened = (outcome.data.get("device"), outcome.data.get("inode"))
        is_decoy = opened == (expected.st_dev, expected.st_ino)
        return outcome.ok and is_decoy, (
            f"{path}: the open {outcome.observed}, "
            + ("the decoy's inode" if is_decoy else f"inode {opened}, not the decoy's")
        )

    def root_only(self, paths: list[Path]) -> None:
        """Locally: a process at the tool's uid outside the decoy view is refused every real
        secret. In the cluster a SKIP: there the pod's mounts are readable at the tools' uid."""
        view = self.run.decoy_view
        check = c.SECRETS_ROOT_ONLY(uid=self.run.tool.uid)
        if view is None:
            self.run.checks.skip(
                check,
                "the tools share the controller's uid here, and its secrets are readable "
                "there: the layers alone refuse them, as each role's line above shows",
            )
            return
        answers = [
            run_unconfined(
                self.run.paths,
                self.run.tool,
                "open-read",
                [str(path)],
                counts=self.run.tool_counts,
                decoys=None,
            )
            for path in paths
        ]
        st = view.secrets.stat()
        shape = f"{view.secrets} {stat.S_IMODE(st.st_mode):04o} {st.st_uid}:{st.st_gid}"
        self.run.checks.require(
            check,
            all(answer.refused_with(Errno.EACCES) for answer in answers)
            and (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o700, 0, 0),
            detail=f"{shape}; "
            + ", ".join(f"{p.name} {a.observed}" for p, a in zip(paths, answers, strict=True)),
        )
