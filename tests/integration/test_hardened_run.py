"""The sample case with the controller under the hardened container's seccomp profile.

In a hardened-container pod the runtime loads the Localhost profile into the container's first
process, so the controller, bwrap and every tool run under it. Here the controller is started
the way that pod starts it (tests/support/analyst_container.py): at the pod's non-root app
uid/gid with its fsGroup, no capabilities and no_new_privs, in the image's working directory and
environment, with the profile loaded where runc loads it (rehearsal/runtime_seccomp.py, through
the rehearsal's own command line); so the tools run at the controller's uid and no decoy view is
made, as in the pod. The whole bubblewrap run passes, its filter counts reading the inherited
filter; under the runtime's default profile the same command stops at preflight with the one
error naming the refusal. A root controller there (not the pod's way) stops naming the decoy view
it cannot make.
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

from app.core.roles import Layer
from app.tools.bubblewrap.container_seccomp import container_seccomp_profile
from app.tools.bubblewrap.render import COMMITTED_DIR, CONTAINER_SECCOMP_FILE
from app.tools.catalogue.bubblewrap import UNPRIVILEGED_CONTROLLER
from infra.pod_specs import APP_UID
from infra.targets import RuntimeTarget
from rehearsal.security import Privileges
from tests.support.analyst_container import (
    StagedImage,
    analyst_privileges,
    run_as_container,
    stage_image,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        os.geteuid() != 0, reason="starting the controller at the pod's app uid needs root"
    ),
]

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNTIME_SECCOMP = REPO_ROOT / "rehearsal" / "runtime_seccomp.py"
BUBBLEWRAP_POD = analyst_privileges(Layer.BUBBLEWRAP, RuntimeTarget.HARDENED_CONTAINER)
NONO_POD = analyst_privileges(Layer.NONO, RuntimeTarget.HARDENED_CONTAINER)


@pytest.fixture(scope="module")
def image() -> Iterator[StagedImage]:
    made = Path(tempfile.mkdtemp(prefix="hardened-image-", dir="/var/tmp"))
    yield stage_image(made)
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def base() -> Iterator[Path]:
    # The container's writable run directory (an emptyDir in the pod): the app uid's own.
    made = Path(tempfile.mkdtemp(prefix="hardened-run-", dir="/var/tmp"))
    os.chmod(made, 0o755)
    os.chown(made, APP_UID, APP_UID)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def _run_under(
    image: StagedImage,
    profile: Path,
    base: Path,
    layer: str = "bubblewrap",
    pod: Privileges = BUBBLEWRAP_POD,
) -> subprocess.CompletedProcess[str]:
    args = ["-m", "app.controller", "run", "--layer", layer]
    args += ["--workdir", str(base / "work"), "--out", str(base / "out")]
    return run_as_container(image, pod, profile, args, home=base, timeout=300)


def test_the_whole_bubblewrap_case_runs_under_the_committed_profile(
    image: StagedImage, base: Path
) -> None:
    completed = _run_under(image, COMMITTED_DIR / CONTAINER_SECCOMP_FILE, base)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    lines = completed.stdout.splitlines()
    assert [line for line in lines if line.startswith("FAIL ")] == []
    assert any(line.startswith("ANALYST_COMPLETE=") for line in lines)
    # The pod's controller is not root: this line, not the root controller's (which drops the
    # tools to uid 1000 and makes their decoy view), is the one its run prints.
    controller = UNPRIVILEGED_CONTROLLER(uid=BUBBLEWRAP_POD.uid, gid=BUBBLEWRAP_POD.gid)
    assert any(line.startswith(f"PASS {controller.text} (") for line in lines)
    # The tools' filters sit on the one the controller inherited, and the run says so.
    assert (
        "PASS the reader runs under exactly one seccomp filter of its own, the baseline this "
        "controller compiled, over the 1 the controller itself runs under (its container's "
        "profile) (Seccomp 2, Seccomp_filters 2)"
    ) in lines
    assert (base / "out" / "recommendation.md").is_file()
    _reach_is_refused_on_the_controllers_own(lines, "the controller")


def _reach_is_refused_on_the_controllers_own(lines: list[str], *targets: str) -> None:
    """Where the tools share the controller's uid, the other-processes attack aims at the
    controller and the layer's helpers too: each role refused, beside the control's calls on
    the same processes."""
    said = [line for line in lines if line.startswith("PASS no role can reach another process")]
    control = [
        line
        for line in lines
        if line.startswith("PASS control: unconfined") and "(prlimit64 succeeds, " in line
    ]
    assert len(said) == len(control) == 1, lines
    for target in ("the process outside any sandbox", *targets):
        assert f"{target} (pid " in said[0], said[0]
        assert f"{target} (pid " in control[0], control[0]


def test_under_the_runtime_default_the_run_stops_at_preflight_naming_it(
    image: StagedImage, base: Path
) -> None:
    profile = base / "runtime-default.json"
    profile.write_text(json.dumps(container_seccomp_profile(())))
    completed = _run_under(image, profile, base)
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


def test_the_whole_nono_case_runs_under_the_runtime_default_profile(
    image: StagedImage, base: Path
) -> None:
    # The nono pod asks for RuntimeDefault: its controller, and so every tool, holds the
    # runtime's filter before nono and the baseline add theirs, and the counts say so.
    profile = base / "runtime-default.json"
    profile.write_text(json.dumps(container_seccomp_profile(())))
    completed = _run_under(image, profile, base, layer="nono", pod=NONO_POD)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    lines = completed.stdout.splitlines()
    assert [line for line in lines if line.startswith("FAIL ")] == []
    assert (
        "PASS it runs under 2 seccomp filters of its own, nono's and the baseline it installed "
        "before reading its arguments, over the 1 the controller itself runs under (its "
        "container's profile) (Seccomp 2, Seccomp_filters 3)"
    ) in lines
    _reach_is_refused_on_the_controllers_own(
        lines, "the controller", "the proxy host", "launch process 1"
    )


def test_a_root_controller_under_a_container_profile_stops_naming_the_decoy_view(
    base: Path,
) -> None:
    # Not how the pod runs (runAsNonRoot), but a configuration an operator may try: a root
    # controller makes the tools' decoy view (a mount namespace), which the runtime's default
    # profile refuses. One line naming it, exit 3, nothing left; never a traceback.
    profile = base / "runtime-default.json"
    profile.write_text(json.dumps(container_seccomp_profile(())))
    command = [sys.executable, str(RUNTIME_SECCOMP), "--no-new-privs", str(profile), "--"]
    command += [sys.executable, "-m", "app.controller", "run", "--layer", "nono"]
    command += ["--workdir", str(base / "work"), "--out", str(base / "out")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ANALYST_"))}
    completed = subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert completed.returncode == 3, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert "Traceback" not in completed.stderr
    assert (
        completed.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "error (layer unavailable): a root controller cannot make the tools' decoy view here "
            "([Errno 1] unshare(CLONE_NEWNS): Operation not permitted)"
        )
    ), completed.stderr
    assert not (base / "out").exists()
    work = base / "work"
    assert (list(work.iterdir()) if work.exists() else []) == []
