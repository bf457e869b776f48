"""Which field of the pod spec produced a failure the run showed.

The failure comes from running the pod: a FAIL line, the controller's error, a container that
would not start. This module reads those words and the pod as the kubelet made it, and names
the field: a variable the controller wanted beside the one the spec spells, a mounted file the
container's identity cannot read and the mode, group or fsGroup that decided it, a mount path
that puts a Secret where a check found it, the guest setting no init container raised, the
seccomp profile that refused a step bwrap needs.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from pathlib import Path
from typing import Any, Final

from app.tools.bubblewrap.container_seccomp import BWRAP_WIDENINGS
from infra.pod_specs import USERNS_SYSCTL

from .pods import PodResult
from .seccomp_profiles import allows

_MISSING = re.compile(r"((?:[A-Z][A-Z0-9_]+)(?:, [A-Z][A-Z0-9_]+)*) (?:is|are) not set")
# bwrap's own words, as the controller quotes them: up to the remedy it appends after ';'.
_BWRAP_SAYS = re.compile(r"bwrap: [^;]+")
_PATH = re.compile(r"(?<![\w.])(/(?:[\w.@+-]+/?)+)")
_FAILURE_PREFIXES: Final = ("FAIL ", "error (", "ANALYST_FAILED", "rehearsal:")


def failure_lines(result: PodResult) -> list[str]:
    lines = [line for run in result.runs for line in run.log]
    return [line for line in lines if line.startswith(_FAILURE_PREFIXES)]


def explain(result: PodResult) -> list[str]:
    """One sentence per field that the failure points at; empty when none is found."""
    if result.refusal:
        return [result.refusal]
    pod, failed = result.context, next((r for r in result.runs if r.exit_code), None)
    if pod is None or failed is None:
        return []
    container = _container(pod.spec, failed.where)
    found: list[str] = []
    for line in failure_lines(result):
        found += _missing_variables(line, container, failed.where)
        found += _mounted_paths(line, pod, container, failed)
        found += _guest_setting(line, pod)
        found += _seccomp_refusal(line, failed)
    return list(dict.fromkeys(found))


def _container(spec: dict[str, Any], where: str) -> dict[str, Any]:
    kind, index = re.findall(r"\.(initContainers|containers)\[(\d+)\]$", where)[0]
    container: dict[str, Any] = spec[kind][int(index)]
    return container


def _missing_variables(line: str, container: dict[str, Any], where: str) -> list[str]:
    match = _MISSING.search(line)
    if match is None:
        return []
    entries = container.get("env", [])
    names = [entry["name"] for entry in entries]
    found = []
    for wanted in match.group(1).split(", "):
        close = difflib.get_close_matches(wanted, names, n=1, cutoff=0.75)
        if close:
            index = names.index(close[0])
            found.append(
                f"{where}.env[{index}].name is {close[0]!r}: the controller reads {wanted}, "
                "which the container's environment therefore lacks"
            )
        else:
            found.append(f"{where}.env sets no {wanted}, which the controller reads")
    return found


def _mounts(container: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(container.get("volumeMounts", [])))


def _mounted_paths(line: str, pod: Any, container: dict[str, Any], failed: Any) -> list[str]:
    found = []
    for path in (p.rstrip("/.") for p in _PATH.findall(line)):
        for index, mount in _mounts(container):
            mount_path = mount["mountPath"].rstrip("/")
            if path != mount_path and not path.startswith(mount_path + "/"):
                continue
            volume = mount["name"]
            source = pod.volumes.sources.get(volume, f"volume {volume}")
            field = f"{failed.where}.volumeMounts[{index}]"
            if line.startswith("FAIL "):
                # A failed check names paths of many kinds; what it can have found is a secret.
                if not source.startswith(("Secret ", "a projected")):
                    continue
                found.append(
                    f"{field}.mountPath puts {source} at {mount_path}, where the failed check "
                    f"found it ({path})"
                )
                continue
            found += _unreadable(pod, volume, path, mount_path, failed)
    return found


def _unreadable(pod: Any, volume: str, path: str, mount_path: str, failed: Any) -> list[str]:
    host = pod.volumes.directories[volume] / path.removeprefix(mount_path).lstrip("/")
    try:
        st = os.stat(host)
    except OSError:
        return [f"{path} does not exist in {pod.volumes.sources.get(volume, volume)}"]
    granted = failed.privileges
    if _may_read(st, granted.uid, {granted.gid, *granted.groups}):
        return []
    spec_sc = pod.spec.get("securityContext") or {}
    index = [v["name"] for v in pod.spec.get("volumes", [])].index(volume)
    describe = (
        f"{path} is {stat.filemode(st.st_mode)} ({stat.S_IMODE(st.st_mode):04o}) owned "
        f"{st.st_uid}:{st.st_gid}, and the container runs as {granted.uid}:{granted.gid} with "
        f"groups {list(granted.groups)}"
    )
    if "fsGroup" not in spec_sc:
        return [
            f"{pod.where}.securityContext.fsGroup is not set, so the kubelet left the files of "
            f"{pod.where}.volumes[{index}] ({pod.volumes.sources.get(volume)}) in group root: "
            f"{describe}"
        ]
    return [
        f"{pod.where}.volumes[{index}] gives a mode its reader's identity cannot use: {describe}"
    ]


def _may_read(st: os.stat_result, uid: int, groups: set[int]) -> bool:
    mode = st.st_mode
    if uid == 0:
        return True
    if st.st_uid == uid:
        return bool(mode & stat.S_IRUSR)
    if st.st_gid in groups:
        return bool(mode & stat.S_IRGRP)
    return bool(mode & stat.S_IROTH)


def _guest_setting(line: str, pod: Any) -> list[str]:
    if USERNS_SYSCTL not in line:
        return []
    for stand_in in pod.stand_ins:
        value = Path(stand_in["source"]).read_text(encoding="ascii").strip()
        if value == "0":
            inits = [c["name"] for c in pod.spec.get("initContainers", [])]
            return [
                f"{pod.where}.initContainers: "
                + (f"{inits} left" if inits else "no init container raised")
                + f" the sandbox guest's {USERNS_SYSCTL} at 0, where a Nitro guest starts"
            ]
    return []


def _seccomp_refusal(line: str, failed: Any) -> list[str]:
    """bwrap stopped, and the container's profile lacks a call bwrap needs: name the field."""
    said = _BWRAP_SAYS.search(line)
    profile = failed.seccomp.profile()
    if said is None or profile is None:
        return []
    found = []
    for widening in BWRAP_WIDENINGS:
        if allows(profile, widening):
            continue
        flags = f" with {', '.join(widening.flags)}" if widening.flags else ""
        found.append(
            f"{failed.seccomp.field}: the {failed.seccomp.kind} profile {failed.where} gets "
            f"({failed.seccomp.source}) does not allow {widening.syscall}{flags}, which bwrap "
            f"needs for {widening.needed_for}; bwrap stopped with '{said.group(0).strip()}'"
        )
    return found
