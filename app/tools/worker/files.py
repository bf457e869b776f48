"""File probes: each performs one open and reports its errno, or the file's identity."""

from __future__ import annotations

import os

from .protocol import Result, errno_name, ok, refused


def open_read(args: list[str]) -> Result:
    """Opens a path for reading; on success reports its device and inode, never its content.

    The controls open the key and credential files with this probe, so nothing derived from
    what it reads (not even a digest) may appear in its result.
    """
    (path,) = args
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as error:
        return refused(error, path=path)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return ok(path=path, device=st.st_dev, inode=st.st_ino)


def open_write(args: list[str]) -> Result:
    """Opens a path for writing without truncating or writing a byte: only the open is tested."""
    (path,) = args
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    except OSError as error:
        return refused(error, path=path)
    os.close(fd)
    return ok(path=path)


def write_file(args: list[str]) -> Result:
    """Replaces the content of an existing file (a role's outputs exist before it starts);
    reports the errno of the open, or the digest written and the owner the process sees."""
    # Here: hashlib loads OpenSSL, 11 million instructions, a quarter of the other probes' start.
    import hashlib

    path, text = args
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        return refused(error, path=path)
    try:
        os.write(fd, text.encode("utf-8"))
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return ok(
        path=path,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        owner=[st.st_uid, st.st_gid],
    )


def _attempt(operation: str, path: str) -> str:
    """One open, by kind: "read" an existing file, "write" one without changing it, "create"
    a new one (removed again at once). Returns "ok" or the errno's name."""
    flags = {
        "read": os.O_RDONLY,
        "write": os.O_WRONLY | os.O_APPEND,
        "create": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
    }[operation]
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        return errno_name(error.errno or 0)
    os.close(fd)
    if operation == "create":
        os.unlink(path)
    return "ok"


def access(args: list[str]) -> Result:
    """``OPERATION:PATH ...``: each open in turn; reports the answers in the same order."""
    answers = []
    for arg in args:
        operation, _, path = arg.partition(":")
        answers.append(_attempt(operation, path))
    return ok(answers=answers)


ACTIONS = {
    "open-read": open_read,
    "open-write": open_write,
    "write-file": write_file,
    "access": access,
}
