"""A pod's volumes, made on the rehearsal's tmpfs the way the kubelet makes them.

- Secret, ConfigMap and projected volumes: the kubelet's atomic writer lays the files out in a
  timestamped directory, points `..data` at it and links each top-level name through `..data`.
  A file's mode is its item's `mode`, else the volume's `defaultMode` (0644 when unset).
  https://kubernetes.io/docs/concepts/configuration/secret/#using-secrets-as-files-from-a-pod
- A projected service account token is written 0600 when the pod has an fsGroup or one uid for
  every container (its "fsUser", who then owns it), else with the volume's defaultMode
  (kubernetes pkg/volume/projected/projected.go, `FsUserFrom` in pkg/volume/util/util.go).
- With `securityContext.fsGroup` the kubelet then gives every file and directory the fsGroup as
  group, adds group read (read-only volumes) or read-write (emptyDir), and makes directories
  setgid (pkg/volume/volume_linux.go, SetVolumeOwnership); without it, files stay root's.
  https://kubernetes.io/docs/tasks/configure-pod-container/security-context/#set-the-security-context-for-a-pod
- emptyDir: a directory of mode 0777, on disk (here the rehearsal's tmpfs as well).
  https://kubernetes.io/docs/concepts/storage/volumes/#emptydir
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from .secret_values import ObjectData

DEFAULT_MODE: Final = 0o644
TOKEN_MODE: Final = 0o600
RW_MASK: Final = 0o660
RO_MASK: Final = 0o440
EXEC_MASK: Final = 0o110
EMPTY_DIR_MODE: Final = 0o777
# A memory-backed volume's root is a tmpfs root, world-writable and sticky.
TMPFS_ROOT_MODE: Final = 0o1777
DATA_LINK: Final = "..data"


class VolumeError(ValueError):
    """A volume the kubelet would refuse to set up (FailedMount); the message names the field."""


@dataclass(frozen=True)
class FileProjection:
    path: str
    data: bytes
    mode: int
    owner: int = 0


@dataclass
class PodVolumes:
    """Where each volume of one pod is, and which Secret or ConfigMap it projects."""

    directories: dict[str, Path] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # volume -> "Secret supplier-key"


def fs_user(pod: dict[str, Any]) -> int | None:
    """The one runAsUser every container of the pod has, if there is one (`FsUserFrom`)."""
    pod_user = (pod.get("securityContext") or {}).get("runAsUser")
    users = set()
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        user = (container.get("securityContext") or {}).get("runAsUser", pod_user)
        if user is None:
            return None
        users.add(user)
    return users.pop() if len(users) == 1 else None


def payload(
    data: dict[str, bytes], items: list[dict[str, Any]] | None, default_mode: int, where: str
) -> list[FileProjection]:
    """The files of a Secret or ConfigMap volume, as the kubelet's MakePayload chooses them."""
    if not items:
        return [FileProjection(key, value, default_mode) for key, value in sorted(data.items())]
    files = []
    for index, item in enumerate(items):
        if item["key"] not in data:
            raise VolumeError(f"{where}.items[{index}].key: no key {item['key']!r} in the object")
        files.append(
            FileProjection(item["path"], data[item["key"]], item.get("mode", default_mode))
        )
    return files


def write_atomic(directory: Path, files: Iterable[FileProjection]) -> None:
    """The atomic writer's layout: ..<timestamp>/ with the files, ..data, and top-level links."""
    stamp = datetime.now(UTC).strftime("..%Y_%m_%d_%H_%M_%S.%f")
    data_dir = directory / stamp
    data_dir.mkdir(mode=0o755)
    tops = set()
    for file in files:
        target = data_dir / file.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(file.data)
        os.chmod(target, file.mode)
        os.chown(target, file.owner, 0)
        tops.add(file.path.split("/")[0])
    (directory / DATA_LINK).symlink_to(stamp)
    for top in sorted(tops):
        (directory / top).symlink_to(f"{DATA_LINK}/{top}")


def set_ownership(directory: Path, fs_group: int, *, readonly: bool) -> None:
    """SetVolumeOwnership: group fsGroup, group access added, directories setgid; links skipped."""
    mask = RO_MASK if readonly else RW_MASK
    for path in [directory, *sorted(directory.rglob("*"))]:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            continue
        os.lchown(path, st.st_uid, fs_group)
        extra = mask | (stat.S_ISGID | EXEC_MASK if stat.S_ISDIR(st.st_mode) else 0)
        os.chmod(path, stat.S_IMODE(st.st_mode) | extra)


def make_volumes(
    pod: dict[str, Any],
    where: str,
    base: Path,
    values: dict[tuple[str, str], ObjectData],
    tokens: dict[str, bytes],
) -> PodVolumes:
    """Makes every volume of `pod` under `base`; `where` is the pod spec's field path."""
    fs_group = (pod.get("securityContext") or {}).get("fsGroup")
    owner = fs_user(pod)
    made = PodVolumes()
    for index, volume in enumerate(pod.get("volumes", [])):
        field_path = f"{where}.volumes[{index}]"
        directory = base / volume["name"]
        directory.mkdir(parents=True)
        if "emptyDir" in volume:
            os.chmod(directory, EMPTY_DIR_MODE)
            readonly = False
        elif "secret" in volume or "configMap" in volume:
            kind = "Secret" if "secret" in volume else "ConfigMap"
            source = volume["secret" if kind == "Secret" else "configMap"]
            name = source["secretName" if kind == "Secret" else "name"]
            if (kind, name) not in values:
                raise VolumeError(f"{field_path}: no {kind} named {name!r} in the stack")
            os.chmod(directory, TMPFS_ROOT_MODE)
            files = payload(
                values[(kind, name)].data,
                source.get("items"),
                source.get("defaultMode", DEFAULT_MODE),
                f"{field_path}.{'secret' if kind == 'Secret' else 'configMap'}",
            )
            write_atomic(directory, files)
            made.sources[volume["name"]] = f"{kind} {name}"
            readonly = True
        elif "projected" in volume:
            os.chmod(directory, TMPFS_ROOT_MODE)
            write_atomic(directory, _projected(volume, field_path, fs_group, owner, tokens))
            made.sources[volume["name"]] = "a projected service account token"
            readonly = True
        else:
            raise VolumeError(f"{field_path}: the rehearsal makes no {sorted(volume)} volume")
        if fs_group is not None:
            set_ownership(directory, fs_group, readonly=readonly)
        made.directories[volume["name"]] = directory
    return made


def _projected(
    volume: dict[str, Any],
    field_path: str,
    fs_group: int | None,
    owner: int | None,
    tokens: dict[str, bytes],
) -> list[FileProjection]:
    projected = volume["projected"]
    files = []
    for index, source in enumerate(projected.get("sources", [])):
        token = source.get("serviceAccountToken")
        if token is None:
            raise VolumeError(f"{field_path}.projected.sources[{index}]: only tokens are made")
        audience = token.get("audience", "")
        if audience not in tokens:
            raise VolumeError(f"{field_path}: no token issuer for audience {audience!r}")
        mode = projected.get("defaultMode", DEFAULT_MODE)
        if owner is not None or fs_group is not None:
            mode = TOKEN_MODE
        files.append(FileProjection(token["path"], tokens[audience], mode, owner or 0))
    return files
