"""The sample case with the controller under the hardened container's seccomp profile.

In a hardened-container pod the runtime loads the Localhost profile into the container's first
process, so the controller, bwrap and every tool run under it. Here the controller is started
the same way (rehearsal/runtime_seccomp.py, the rehearsal's runtime step, loads the committed
profile, then execs it): the whole bubblewrap run passes, its filter counts reading the inherited
filter; under the runtime's default profile the same command stops at preflight with the one
error naming the refusal.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.tools.bubblewrap.container_seccomp import container_seccomp_profile
from app.tools.bubblewrap.render import COMMITTED_DIR, CONTAINER_SECCOMP_FILE
from tests.support.stack_run import REPO_ROOT

pytestmark = [
    pytest.mark.integration,
    # Known defect, open: this test starts a root controller under the container's profile,
    # and a root controller makes the tools' decoy view (a mount namespace: unshare(CLONE_NEWNS)),
    # which both profiles refuse (EPERM), so the run stops before its checks. The pod itself
    # runs the controller at the app uid (runAsNonRoot), where no view is made; the test must
    # start the controller the way the pod does before it can pass again. Strict: it reports
    # the day it passes.
    pytest.mark.xfail(
        strict=True,
        reason="a root controller under a container profile cannot make the decoy view (EPERM)",
    ),
]

RUNTIME_SECCOMP = REPO_ROOT / "rehearsal" / "runtime_seccomp.py"


@pytest.fixture
def base() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="hardened-run-", dir="/var/tmp"))
    os.chmod(made, 0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def _run_under(
    profile: Path, base: Path, layer: str = "bubblewrap"
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(RUNTIME_SECCOMP), "--no-new-privs", str(profile), "--"]
    command.append(sys.executable)
    command += ["-m", "app.controller", "run", "--layer", layer]
    command += ["--workdir", str(base / "work"), "--out", str(base / "out")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ANALYST_"))}
    return subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_whole_bubblewrap_case_runs_under_the_committed_profile(base: Path) -> None:
    completed = _run_under(COMMITTED_DIR / CONTAINER_SECCOMP_FILE, base)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    lines = completed.stdout.splitlines()
    assert [line for line in lines if line.startswith("FAIL ")] == []
    assert any(line.startswith("ANALYST_COMPLETE=") for line in lines)
    # The tools' filters sit on the one the controller inherited, and the run says so.
    assert (
        "PASS the reader runs under exactly one seccomp filter of its own, the baseline this "
        "controller compiled, over the 1 the controller itself runs under (its container's "
        "profile) (Seccomp 2, Seccomp_filters 2)"
    ) in lines
    assert (base / "out" / "recommendation.md").is_file()


def test_under_the_runtime_default_the_run_stops_at_preflight_naming_it(base: Path) -> None:
    profile = base / "runtime-default.json"
    profile.write_text(json.dumps(container_seccomp_profile(())))
    completed = _run_under(profile, base)
    assert completed.returncode == 3
    assert (
        completed.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "error (layer unavailable): bwrap cannot make the tool's namespaces here; its own "
            "words: bwrap: No permissions to create new namespace"
        )
    )
    assert not (base / "out").exists()


def test_the_whole_nono_case_runs_under_the_runtime_default_profile(base: Path) -> None:
    # The nono pod asks for RuntimeDefault: its controller, and so every tool, holds the
    # runtime's filter before nono and the baseline add theirs, and the counts say so.
    profile = base / "runtime-default.json"
    profile.write_text(json.dumps(container_seccomp_profile(())))
    completed = _run_under(profile, base, layer="nono")
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    lines = completed.stdout.splitlines()
    assert [line for line in lines if line.startswith("FAIL ")] == []
    assert (
        "PASS it runs under 2 seccomp filters of its own, nono's and the baseline it installed "
        "before reading its arguments, over the 1 the controller itself runs under (its "
        "container's profile) (Seccomp 2, Seccomp_filters 3)"
    ) in lines
