"""The controller started the way the analyst container starts it, for a local run on this
machine: at the pod's non-root app uid/gid, with the image's environment and working directory.

The identity and privileges come from the analyst pod spec itself (infra/pod_specs.py), read
as the rehearsal reads them (rehearsal/security.py: setpriv's uid, gid, fsGroup, bounding set
and no_new_privs), and the container's seccomp profile is loaded where runc loads it, through
the rehearsal's own command line (rehearsal/container_init.py: the loader and the profile are
handed over as open descriptors). So a root test process starts a controller that is not root,
as every pod's controller is: its tools then run at its own uid and it makes no decoy view.

The app uid cannot read what sits under a 0700 home (the checkout, this environment's
interpreter), so the image is staged under /var/tmp: what Dockerfile.analyst copies to
/opt/analyst (infra/build_context.py's list), and the image's interpreter, a virtual
environment of the system's python3 (as rehearsal/image_stand_in.py builds it) holding this
environment's packages, which include what a local run adds (moto and its server).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.repo import REPO_ROOT
from app.core.roles import Layer
from infra.build_context import context_files
from infra.pod_specs import analyst_pod_spec
from infra.targets import RuntimeTarget
from rehearsal.container_init import LOADER, command_line, handed_over
from rehearsal.image_stand_in import ANALYST_IMAGE, SYSTEM_PYTHON, image_env
from rehearsal.security import Privileges, privileges
from tests.support.job_inputs import job_inputs

ANALYST_DOCKERFILE = "Dockerfile.analyst"


@dataclass(frozen=True)
class StagedImage:
    """The analyst image's files, where the app uid can read them."""

    app: Path  # the image's /opt/analyst, its working directory
    python: Path  # the image's `python`


def analyst_privileges(layer: Layer, target: RuntimeTarget) -> Privileges:
    """The analyst container's identity and privileges in that layer's Job pod."""
    pod = analyst_pod_spec(job_inputs(layer, target))
    return privileges(pod, pod["containers"][0], ANALYST_IMAGE, "spec.containers[0]")


def _link_or_copy(source: str, target: str) -> None:
    # A hard link where the filesystem allows one: staging this environment's site-packages
    # takes 3 s linked against 17 s copied (46,000 files, 843 MB, measured here).
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _readable_by_all(top: Path) -> None:
    for path in [top, *top.rglob("*")]:
        if not path.is_symlink():
            os.chmod(path, 0o755 if path.is_dir() else 0o644)


def stage_image(base: Path) -> StagedImage:
    """The image's application files and interpreter under ``base``, readable by every uid."""
    os.chmod(base, 0o755)
    app = base / "analyst"
    dockerfile = REPO_ROOT / ANALYST_DOCKERFILE
    for source in context_files(REPO_ROOT, dockerfile.name):
        if source == dockerfile:
            continue  # the build's recipe, not a file of the image
        target = app / source.relative_to(REPO_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    _readable_by_all(app)
    venv = base / "python"
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True)
    _readable_by_all(venv)
    # The packages keep their own modes (a link is the same file, a copy keeps its mode).
    shutil.copytree(
        sysconfig.get_path("purelib"),
        sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}),
        symlinks=True,
        copy_function=_link_or_copy,
        dirs_exist_ok=True,
    )
    return StagedImage(app, venv / "bin" / "python")


def run_as_container(
    image: StagedImage,
    granted: Privileges,
    profile: Path,
    args: Sequence[str],
    *,
    home: Path,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in the image's working directory and environment, at the container's
    identity, under ``profile`` loaded as the runtime loads it. ``home`` is the container's
    HOME, as its run directory is in the pod; it must be writable at the container's uid."""
    loader_fd, profile_fd = handed_over(LOADER), handed_over(profile)
    try:
        plan: dict[str, Any] = {
            "setpriv": granted.setpriv_args(),
            "seccomp": {"no_new_privs": granted.no_new_privs},
            "argv": [str(image.python), *args],
        }
        return subprocess.run(
            command_line(plan, loader_fd, profile_fd),
            cwd=image.app,
            env=image_env(str(home)),
            pass_fds=(loader_fd, profile_fd),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        os.close(loader_fd)
        os.close(profile_fd)
