"""The stand-in for the two images: this machine's /usr and /etc, the checkout at /opt/analyst,
and the image's interpreter at /usr/local, built here from requirements-runtime.txt.

The images run `python` from /usr/local with requirements-runtime.txt installed (the python
slim image's layout). Here the interpreter under /usr/local is a virtual environment of Debian's
/usr/bin/python3 (3.11, as in the images) holding exactly those pinned packages, in a layer
laid over this machine's /usr: so the controller runs with what the image installs and nothing
from the development environment, and a uid that cannot read root's home still can run it.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TextIO

from app.core import cluster_env
from app.core.errors import LayerUnavailable
from app.core.repo import REPO_ROOT

IMAGE_DIR: Final = REPO_ROOT / "build" / "rehearsal" / "image"
SYSTEM_PYTHON: Final = Path("/usr/bin/python3")
REQUIREMENTS: Final = (REPO_ROOT / "requirements-runtime.txt", REPO_ROOT / "requirements.lock")
STAMP: Final = "requirements.sha256"

# What the Dockerfiles' base image and ENV lines give every container of the image.
IMAGE_PATH: Final = "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class ImageStandIn:
    """One image as the rehearsal runs it: its reference, user, environment and app layer."""

    reference: str
    user: int
    group: int
    home: str
    env: dict[str, str]


def image_env(home: str) -> dict[str, str]:
    return {
        "PATH": IMAGE_PATH,
        "LANG": "C.UTF-8",
        "HOME": home,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PIP_NO_CACHE_DIR": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


ANALYST_IMAGE: Final = ImageStandIn(
    "rehearsal/analyst:checkout", 1000, 1000, cluster_env.RUN_DIR, image_env(cluster_env.RUN_DIR)
)
SUPPLIER_IMAGE: Final = ImageStandIn(
    "rehearsal/supplier-api:checkout", 1000, 1000, "/tmp", image_env("/tmp")
)
IMAGES: Final = {image.reference: image for image in (ANALYST_IMAGE, SUPPLIER_IMAGE)}


def layers() -> list[dict[str, object]]:
    """The image's filesystem as overlay layers, lowest last (overlayfs's order)."""
    return [
        {"target": "/usr", "lower": [str(IMAGE_DIR / "usr"), "/usr"]},
        {"target": "/etc", "lower": ["/etc"]},
        {"target": cluster_env.APP_DIR, "lower": [str(REPO_ROOT)]},
    ]


def _digest() -> str:
    digest = hashlib.sha256()
    for path in REQUIREMENTS:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def ensure_image(stream: TextIO) -> Path:
    """Builds the /usr/local layer once per requirements change; returns its directory."""
    local = IMAGE_DIR / "usr" / "local"
    stamp = IMAGE_DIR / STAMP
    wanted = _digest()
    if stamp.is_file() and stamp.read_text(encoding="ascii").strip() == wanted:
        return local
    if not SYSTEM_PYTHON.exists():
        raise LayerUnavailable(f"{SYSTEM_PYTHON} not found", "apt-get install python3 python3-venv")
    print(f"==> building the image stand-in's /usr/local from {REQUIREMENTS[0].name}", file=stream)
    building = IMAGE_DIR / "usr" / "local.building"
    shutil.rmtree(building, ignore_errors=True)
    building.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        [str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(building)],
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(building / "bin" / "python"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(REQUIREMENTS[0]),
            "-c",
            str(REQUIREMENTS[1]),
        ],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise LayerUnavailable(
                f"building the image stand-in failed: {' '.join(step[:4])}: "
                f"{done.stderr.strip()[-800:]}",
                "check that PyPI (or the configured index) is reachable",
            )
    shutil.rmtree(local, ignore_errors=True)
    building.rename(local)
    stamp.write_text(wanted + "\n", encoding="ascii")
    return local
