"""bwrap's procfs for the tool's pid namespace, under a container's masked /proc and without it.

The runtime's masks are simulated in a private mount namespace (tests/support/masked_proc.py);
bwrap runs the reader's real argument vector there at the tool's uid. Masked, the kernel refuses
the new procfs (a procfs may be mounted in a user namespace only where the existing one is
fully visible), so bwrap stops with EPERM; unmasked, the same vector runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.roles import Layer
from app.tools.bubblewrap.launcher import BubblewrapLayer
from app.tools.bubblewrap.policy import per_call_args
from app.tools.bubblewrap.preflight import BWRAP_ENVIRONMENT
from app.tools.execution import parse_output
from app.tools.seccomp import baseline_filter, program_fd
from tests.support.masked_proc import in_container_proc
from tests.support.whole_runs import bare_run, bare_tree

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="masking /proc needs root in a mount namespace"),
]

MASKED_PROC_REFUSAL = "bwrap: Can't mount proc on /newroot/proc: Operation not permitted"


@pytest.fixture(scope="module")
def layer() -> Iterator[BubblewrapLayer]:
    base = Path(tempfile.mkdtemp(prefix="masked-proc-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    made = BubblewrapLayer(bare_run(bare_tree(base), Layer.BUBBLEWRAP))
    made.preflight()
    yield made
    shutil.rmtree(base)


def _reader_in_container(
    layer: BubblewrapLayer, *, masked: bool
) -> subprocess.CompletedProcess[bytes]:
    fd = program_fd(baseline_filter())
    try:
        argv = layer.role_argv("reader") + per_call_args(
            [fd], "proc-status", [], layer.policy.limits("reader")
        )
        tool = layer.run.tool
        command = in_container_proc(
            [layer.readings.path, *argv[1:]], masked=masked, drop_to=(tool.uid, tool.gid)
        )
        return subprocess.run(
            command,
            capture_output=True,
            pass_fds=[fd],
            env=BWRAP_ENVIRONMENT,
            cwd="/",
            timeout=60,
            check=False,
        )
    finally:
        os.close(fd)


def test_a_masked_proc_refuses_bwraps_procfs_with_eperm(layer: BubblewrapLayer) -> None:
    host_mounts = Path("/proc/self/mountinfo").read_text()
    completed = _reader_in_container(layer, masked=True)
    assert (completed.returncode, completed.stderr.decode().strip()) == (1, MASKED_PROC_REFUSAL)
    # The masks lived and died with the command's own mount namespace.
    assert Path("/proc/self/mountinfo").read_text() == host_mounts


def test_an_unmasked_proc_lets_the_same_vector_run(layer: BubblewrapLayer) -> None:
    completed = _reader_in_container(layer, masked=False)
    result = parse_output(
        completed.stdout + completed.stderr,
        completed.returncode,
        who="the tool process",
        action="proc-status",
        args=(),
    )
    assert result.ok and result.data["uid"] == 1000
