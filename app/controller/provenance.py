"""Where a run's code and policy came from: the code revision, the versions of what confines the
tools, and the committed policy beside the policy in force, each as a digest a reviewer can
recompute."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import Any, Final

from app.core import cluster_env
from app.core.repo import POLICIES_DIR, REPO_ROOT
from app.core.roles import ROLES
from app.tools.layer import ConfinementLayer

GIT_TIMEOUT_SECONDS: Final = 5


@dataclass(frozen=True)
class CodeRevision:
    source: str  # "git", "image" or "unknown"
    value: str | None  # the commit or the image reference
    note: str  # what the value means, or why there is none


def code_revision(in_cluster: bool) -> CodeRevision:
    if in_cluster:
        image = os.environ.get(cluster_env.IMAGE)
        if image:
            return CodeRevision("image", image, "the analyst image this pod runs")
        return CodeRevision("unknown", None, f"the pod was not given {cluster_env.IMAGE}")
    commit = _git("rev-parse", "HEAD")
    if commit is None:
        return CodeRevision("unknown", None, f"{REPO_ROOT} is not a git checkout")
    changed = _git("status", "--porcelain", "--untracked-files=no")
    note = "the checkout's commit"
    if changed:
        note += f", with uncommitted changes to {len(changed.splitlines())} tracked files"
    return CodeRevision("git", commit, note)


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO_ROOT), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions(layer_evidence: dict[str, Any]) -> dict[str, str | None]:
    """The releases that confined this run's tools, and the kernel that enforced them."""
    bwrap = layer_evidence.get("bwrap")
    uname = os.uname()
    return {
        "python": platform.python_version(),
        "bubblewrap": bwrap.get("version") if isinstance(bwrap, dict) else None,
        "nono_py": _package_version("nono-py"),
        "kernel": f"{uname.release} {uname.version}",
    }


def canonical_digest(document: Any) -> str:
    """sha256 of a JSON value's canonical form (sorted keys, no spaces)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def policy_digests(layer: ConfinementLayer) -> dict[str, Any]:
    """Each committed policy file of the layer by its sha256, and for each role the committed
    policy with this run's values filled in beside the policy the run applied."""
    folder = POLICIES_DIR / layer.name.value
    committed_files = {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.is_file()
    }
    committed, in_force = layer.committed_policy(), layer.policy_in_force()
    roles = {}
    for role in ROLES:
        expected, applied = canonical_digest(committed[role]), canonical_digest(in_force[role])
        roles[role] = {"committed": expected, "in_force": applied, "same": expected == applied}
    return {
        "folder": f"policies/{layer.name.value}",
        "committed_files": committed_files,
        "roles": roles,
    }


def provenance(
    layer: ConfinementLayer,
    layer_evidence: dict[str, Any],
    *,
    in_cluster: bool,
    model_description: str,
    model_id: str,
) -> dict[str, Any]:
    return {
        "code_revision": asdict(code_revision(in_cluster)),
        "versions": versions(layer_evidence),
        "policy_digests": policy_digests(layer),
        "model": {"description": model_description, "id": model_id},
    }
