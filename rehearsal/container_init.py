"""The first process of one rehearsed container: it builds the container's filesystem the way a
container runtime does, then becomes the container's command.

Started as root by `unshare --mount --pid --uts --ipc --fork` (so it is pid 1 of the
container's own pid namespace, in a mount namespace of its own), with the plan the kubelet
stand-in wrote (`rehearsal/kubelet.py`). Standard library only: it runs before anything of the
container exists. Steps, in the order runc takes them: a tmpfs root with the image's layers as
overlays (each with a writable layer in this mount namespace's own tmpfs), /dev, /proc with the
runtime's masked and read-only paths unless the container is privileged, /sys, the kubelet's
/etc/hosts, the pod's volumes, the read-only root, pivot_root, the hostname, the working
directory; then setpriv (util-linux) sets the uid, gid, groups, capability bounding set and
no_new_privs and executes the command with the container's environment.

The container's seccomp profile, when it has one, is loaded where runc loads it: with
no_new_privs, after setpriv, just before the command's execve; without, before setpriv drops
the capabilities the kernel then requires (runc's libcontainer/standard_init_linux.go). The
loader (runtime_seccomp.py, beside this file) and the profile are handed over as open files,
read through /proc/self/fd and closed before the command runs: nothing of the runtime is put in
the container's filesystem.

Exit code 128 means the container could not be created (the runtime's StartError); anything
else is the command's own.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MNT_DETACH = 0x2
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
START_ERROR = 128
LOADER = Path(__file__).with_name("runtime_seccomp.py")
# The loader runs on the image's system interpreter (the stand-in's /usr is this machine's).
LOADER_INTERPRETER = "/usr/bin/python3"
SETPRIV = "/usr/bin/setpriv"
CLEAN_PROC = "/.rehearsal/proc"
# Device nodes a runtime gives an unprivileged container (the OCI runtime spec's defaults).
DEFAULT_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")

_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(Exception):
    """The container could not be created as planned."""


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(error)}")


def mount(source: str, target: Path, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc.mount(
            source.encode(),
            str(target).encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {source} on {target}",
    )


def bind(source: Path, target: Path, *, readonly: bool, recursive: bool = True) -> None:
    mount(str(source), target, None, MS_BIND | (MS_REC if recursive else 0))
    if readonly:
        remount_readonly(target)


def remount_readonly(target: Path, extra: int = 0) -> None:
    # A bind remount keeps the mount's other flags; nosuid/nodev must be repeated when set.
    mount("none", target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | extra)


def inside(root: Path, path: str) -> Path:
    """`path` inside the root, following symlinks as the container would see them (the way
    runc's securejoin does), so no link can lead a mount out of the root."""
    current = root
    parts = [part for part in path.split("/") if part not in ("", ".")]
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            current = current.parent if current != root else root
            continue
        candidate = current / part
        if candidate.is_symlink():
            hops += 1
            if hops > 40:
                raise SetupError(f"too many symlinks in {path}")
            link = os.readlink(candidate)
            if link.startswith("/"):
                current = root
            parts = [p for p in link.split("/") if p not in ("", ".")] + parts
            continue
        current = candidate
    return current


def make_mount_point(target: Path, *, is_file: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if is_file:
        if not target.exists():
            target.touch(mode=0o644)
    else:
        target.mkdir(parents=True, exist_ok=True)


def build_skeleton(root: Path) -> None:
    """The top level of a Debian image: merged /usr links and the usual directories."""
    for name, link in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib")):
        (root / name).symlink_to(link)
    if Path("/lib64").is_symlink():
        (root / "lib64").symlink_to("usr/lib64")
    for name, mode in (
        ("usr", 0o755),
        ("etc", 0o755),
        ("opt", 0o755),
        ("var", 0o755),
        ("var/lib", 0o755),
        ("var/tmp", 0o1777),
        ("tmp", 0o1777),
        ("run", 0o755),
        ("root", 0o700),
        ("home", 0o755),
        ("proc", 0o555),
        ("sys", 0o555),
        ("dev", 0o755),
    ):
        (root / name).mkdir(mode=mode)
        os.chmod(root / name, mode)
    (root / "var" / "run").symlink_to("../run")


def mount_layers(root: Path, scratch: Path, layers: list[dict[str, Any]]) -> list[Path]:
    """Each image layer as an overlay with a writable layer in scratch, like a container's."""
    targets = []
    for index, layer in enumerate(layers):
        upper, work = scratch / f"layer{index}" / "upper", scratch / f"layer{index}" / "work"
        upper.mkdir(parents=True)
        work.mkdir()
        target = inside(root, layer["target"])
        target.mkdir(parents=True, exist_ok=True)
        lower = ":".join(layer["lower"])
        mount("overlay", target, "overlay", 0, f"lowerdir={lower},upperdir={upper},workdir={work}")
        targets.append(target)
    return targets


def mount_dev(root: Path, host_devices: bool) -> None:
    dev = root / "dev"
    if host_devices:
        # A privileged container gets the host's devices.
        bind(Path("/dev"), dev, readonly=False)
        return
    mount("tmpfs", dev, "tmpfs", MS_NOSUID, "mode=755,size=65536k")
    for name in DEFAULT_DEVICES:
        node = dev / name
        node.touch()
        bind(Path("/dev") / name, node, readonly=False, recursive=False)
    (dev / "shm").mkdir()
    mount("shm", dev / "shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=65536k")
    (dev / "pts").mkdir()
    mount("devpts", dev / "pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666")
    (dev / "ptmx").symlink_to("pts/ptmx")
    for name, link in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        (dev / name).symlink_to(link)


def mount_proc_and_sys(root: Path, plan: dict[str, Any]) -> None:
    mount("proc", root / "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | (0 if plan["privileged"] else MS_RDONLY)
    mount("sysfs", root / "sys", "sysfs", flags)
    # Read-only paths first (a bind of the path onto itself, remounted read-only), then the
    # stand-ins on top, each with its own flag, then the masked paths.
    for path in plan["proc_readonly"]:
        target = root / path.lstrip("/")
        if target.exists():
            bind(target, target, readonly=True)
    for stand_in in plan["stand_ins"]:
        target = root / stand_in["target"].lstrip("/")
        bind(Path(stand_in["source"]), target, readonly=stand_in["readonly"], recursive=False)
    for path in plan["masked"]:
        target = root / path.lstrip("/")
        if not target.exists():
            continue
        if target.is_dir():
            mount("tmpfs", target, "tmpfs", MS_RDONLY)
        else:
            bind(Path("/dev/null"), target, readonly=False, recursive=False)
    if plan["stand_ins"] and not plan["masked"]:
        # NOTE: a file mounted over a /proc entry (the stand-in) makes the kernel deem that
        # procfs "not fully visible", and refuse a new procfs in a user namespace (bwrap's)
        # with EPERM. An unmasked container's /proc has no such mount in the cluster, so one
        # clean procfs beside it restores what the kernel sees there; a masked /proc gets none.
        clean = root / CLEAN_PROC.lstrip("/")
        clean.mkdir(parents=True)
        mount("proc", clean, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def pivot_into(root: Path) -> None:
    number = PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise SetupError(f"no pivot_root syscall number known for {platform.machine()}")
    os.chdir(root)
    _check(_libc.syscall(number, b".", b"."), f"pivot_root into {root}")
    # The old root is now mounted under the new one, at the same place: detach it.
    _check(_libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")


def build(plan: dict[str, Any]) -> None:
    root, scratch = Path(plan["root"]), Path(plan["scratch"])
    mount("tmpfs", scratch, "tmpfs", 0, "mode=700")
    mount("tmpfs", root, "tmpfs", 0, "mode=755")
    build_skeleton(root)
    layers = mount_layers(root, scratch, plan["layers"])
    mount_dev(root, plan["privileged"])
    mount_proc_and_sys(root, plan)
    for file in plan["files"]:
        bind(Path(file["source"]), inside(root, file["target"]), readonly=file["readonly"])
    for volume in plan["volumes"]:
        source = Path(volume["source"])
        target = inside(root, volume["target"])
        make_mount_point(target, is_file=source.is_file())
        bind(source, target, readonly=volume["readonly"])
    workdir = inside(root, plan["workdir"])
    workdir.mkdir(parents=True, exist_ok=True)
    if plan["read_only_root"]:
        for layer in layers:
            remount_readonly(layer)
        remount_readonly(root)
    pivot_into(root)
    socket.sethostname(plan["hostname"])
    os.chdir(plan["workdir"])


def handed_over(path: Path) -> int:
    """An open, inheritable descriptor of a file the runtime hands to the container's start."""
    fd = os.open(path, os.O_RDONLY)
    os.set_inheritable(fd, True)
    return fd


def command_line(plan: dict[str, Any], loader_fd: int, profile_fd: int) -> list[str]:
    """setpriv and the command, with the seccomp loader where runc would load the profile."""
    setpriv = [SETPRIV, *plan["setpriv"], "--"]
    if plan["seccomp"] is None:
        return [*setpriv, *plan["argv"]]
    loader = [LOADER_INTERPRETER, "-I", f"/proc/self/fd/{loader_fd}"]
    loader += ["--close", str(loader_fd), "--close", str(profile_fd)]
    loader += [f"/proc/self/fd/{profile_fd}", "--"]
    if plan["seccomp"]["no_new_privs"]:
        return [*setpriv, *loader, *plan["argv"]]
    return [*loader, *setpriv, *plan["argv"]]


def main(argv: list[str]) -> int:
    plan = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    try:
        # Opened on this side of pivot_root: the container's root has neither file.
        loader_fd = profile_fd = -1
        if plan["seccomp"] is not None:
            loader_fd = handed_over(LOADER)
            profile_fd = handed_over(Path(plan["seccomp"]["profile"]))
        build(plan)
    except (SetupError, OSError) as error:
        print(f"rehearsal: the container could not be created: {error}", file=sys.stderr)
        return START_ERROR
    command = command_line(plan, loader_fd, profile_fd)
    try:
        os.execve(command[0], command, plan["env"])
    except OSError as error:
        print(f"rehearsal: cannot start {command[0]}: {error}", file=sys.stderr)
    return START_ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv))
