"""The rehearsal's runtime seccomp step (rehearsal/runtime_seccomp.py) on this machine's kernel:
it leaves no_new_privs to the container, as runc does, so only a process with CAP_SYS_ADMIN may
load a profile without it, which is why a container without no_new_privs gets its profile before
the capabilities go."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from app.core.repo import REPO_ROOT
from app.core.run_tree import INTERPRETER
from app.tools.bubblewrap.container_seccomp import container_seccomp_profile

pytestmark = pytest.mark.integration

TOOL_UID = 1000


def _status_under_profile(
    base: Path, *options: str, uid: int = 0
) -> subprocess.CompletedProcess[str]:
    loader = base / "runtime_seccomp.py"
    shutil.copyfile(REPO_ROOT / "rehearsal" / "runtime_seccomp.py", loader)
    profile = base / "runtime-default.json"
    profile.write_text(json.dumps(container_seccomp_profile(())), encoding="utf-8")
    for path in (loader, profile):
        os.chmod(path, 0o644)
    command = [INTERPRETER, str(loader), *options, str(profile), "--"]
    command += ["grep", "-E", "^(NoNewPrivs|Seccomp_filters):", "/proc/self/status"]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=60, check=False, user=uid, group=uid
    )


def _readings(completed: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert completed.returncode == 0, completed.stderr
    return dict(line.split(":\t") for line in completed.stdout.splitlines())


@pytest.mark.skipif(os.geteuid() != 0, reason="the runtime loads profiles as root")
def test_the_loader_leaves_no_new_privs_to_the_container_as_runc_does(work_base: Path) -> None:
    assert _readings(_status_under_profile(work_base)) == {
        "NoNewPrivs": "0",
        "Seccomp_filters": "1",
    }
    asked = _status_under_profile(work_base, "--no-new-privs")
    assert _readings(asked) == {"NoNewPrivs": "1", "Seccomp_filters": "1"}


@pytest.mark.skipif(os.geteuid() != 0, reason="it switches to the tool's uid")
def test_without_no_new_privs_an_unprivileged_process_cannot_load_a_profile(
    work_base: Path,
) -> None:
    refused = _status_under_profile(work_base, uid=TOOL_UID)
    assert refused.returncode == 128
    assert refused.stderr.strip().endswith("seccomp_load: Permission denied")
    # The control: the same process, asking for no_new_privs, loads it.
    allowed = _status_under_profile(work_base, "--no-new-privs", uid=TOOL_UID)
    assert _readings(allowed) == {"NoNewPrivs": "1", "Seccomp_filters": "1"}
